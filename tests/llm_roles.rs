//! LLM roles: a role's desk offers only its own tools, and a call to another role's tool
//! is refused with a 403 naming the role and the tool, and counted.

use perennial::morpheus::api::{Desk, DeskOptions, Stepper};
use perennial::morpheus::roles::{EnterpriseEnv, RoleTable};
use perennial::morpheus::{MorpheusConfig, default_reward_spec};
use perennial::prelude::*;

fn started(seed: u64) -> EnterpriseEnv {
    let config = MorpheusConfig::default();
    let mut env = EnterpriseEnv::new(config, default_reward_spec(), RoleTable::default()).unwrap();
    env.reset(seed);
    env
}

fn desk(env: &EnterpriseEnv, role: &str) -> Desk {
    let r = env.roles().position(role).unwrap();
    let ops = &env.roles().roles[r].ops;
    Desk::for_role(env.world().config(), DeskOptions::default(), role, ops)
}

fn names(desk: &Desk) -> Vec<String> {
    desk.catalogue()
        .openai()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_role_s_catalogue_holds_only_its_own_operations() {
    let env = started(1);
    let queries = [
        "query_inventory",
        "query_orders",
        "query_ledger",
        "query_carriers",
    ];
    let mut warehouse = vec!["reorder", "expedite", "repair_dock", "wait"];
    warehouse.extend(queries);
    let mut logistics = vec!["choose_carrier", "wait"];
    logistics.extend(queries);
    assert_eq!(names(&desk(&env, "warehouse")), warehouse);
    assert_eq!(names(&desk(&env, "logistics")), logistics);
    assert_eq!(desk(&env, "logistics").catalogue().mcp().len(), 6);
}

#[test]
fn another_role_s_tool_is_refused_with_403_counted_and_no_hour_passes() {
    let mut env = started(2);
    let mut logistics = desk(&env, "logistics");
    let r = logistics
        .call(&mut env, "reorder", r#"{"sku": 1, "quantity": 200}"#)
        .unwrap();
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(
        r.error.as_deref(),
        Some(
            "role `logistics` has no tool `reorder`: it belongs to another role; this role's tools are: choose_carrier, wait, query_inventory, query_orders, query_ledger, query_carriers"
        )
    );
    let r = logistics
        .call(&mut env, "repair_dock", r#"{"dock": 0}"#)
        .unwrap();
    assert_eq!(r.status, 403, "{r:?}");
    let counts = logistics.counts();
    assert_eq!((counts.forbidden, counts.calls, counts.hours), (2, 2, 0));
    assert_eq!((counts.invalid_calls, counts.refused), (0, 0));
    assert_eq!(env.world().counters().unwrap().hour, 0);
}

#[test]
fn a_role_s_own_operation_steps_the_world_with_the_others_waiting() {
    let mut env = started(3);
    let mut warehouse = desk(&env, "warehouse");
    let r = warehouse
        .call(&mut env, "reorder", r#"{"sku": 1, "quantity": 200}"#)
        .unwrap();
    assert_eq!(
        (r.status, r.data["hour"].clone()),
        (200, serde_json::json!(1)),
        "{r:?}"
    );
    let po = warehouse
        .call(
            &mut env,
            "query_orders",
            r#"{"kind": "purchase", "sku": 1, "limit": 5}"#,
        )
        .unwrap();
    assert_eq!(po.data["orders"][0]["units"], 200);
    // The hour's joint action: the warehouse's reorder, logistics' no-op.
    let mut logistics = desk(&env, "logistics");
    let r = logistics
        .call(&mut env, "choose_carrier", r#"{"carrier": 2}"#)
        .unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(Stepper::world(&env).counters().unwrap().hour, 2);
    assert_eq!(
        warehouse.counts().forbidden + logistics.counts().forbidden,
        0
    );
}
