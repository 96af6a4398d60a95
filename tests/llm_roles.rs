//! LLM roles: a role's desk offers only its own tools, a call to another role's tool is
//! refused with a 403 naming the role and the tool, and counted; the hour passes once
//! every role has acted, as one joint action of the roles env.

use perennial::morpheus::api::{DeskOptions, RoleDesks};
use perennial::morpheus::roles::{EnterpriseEnv, RoleTable};
use perennial::morpheus::{MorpheusConfig, Op, default_reward_spec};
use perennial::prelude::*;

fn started(seed: u64) -> (EnterpriseEnv, RoleDesks) {
    let (config, roles) = (MorpheusConfig::default(), RoleTable::default());
    let mut env = EnterpriseEnv::new(config.clone(), default_reward_spec(), roles.clone()).unwrap();
    env.reset(seed);
    (env, RoleDesks::new(&config, DeskOptions::default(), &roles))
}

fn names(desks: &RoleDesks, role: &str) -> Vec<String> {
    let r = desks.position(role).unwrap();
    desks
        .catalogue(r)
        .unwrap()
        .openai()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

const QUERIES: [&str; 4] = [
    "query_inventory",
    "query_orders",
    "query_ledger",
    "query_carriers",
];

#[test]
fn each_role_s_catalogue_holds_only_its_own_operations() {
    let (_, desks) = started(1);
    let mut warehouse = vec!["reorder", "expedite", "repair_dock", "wait"];
    warehouse.extend(QUERIES);
    let mut logistics = vec!["choose_carrier", "prioritize_sku", "hold_wave", "wait"];
    logistics.extend(QUERIES);
    assert_eq!(names(&desks, "warehouse"), warehouse);
    assert_eq!(names(&desks, "logistics"), logistics);
    assert_eq!(desks.catalogue(1).unwrap().mcp().len(), 8);
    let e = desks.position("purchasing").unwrap_err();
    assert_eq!(
        e,
        "no role `purchasing` in this world; its roles are: warehouse, logistics"
    );
}

#[test]
fn another_role_s_tool_is_refused_with_403_counted_and_no_hour_passes() {
    let (mut env, mut desks) = started(2);
    let r = desks
        .call(&mut env, 1, "reorder", r#"{"sku": 1, "quantity": 200}"#)
        .unwrap();
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(
        r.error.as_deref(),
        Some(
            "role `logistics` has no tool `reorder`: it belongs to another role; this role's tools are: choose_carrier, prioritize_sku, hold_wave, wait, query_inventory, query_orders, query_ledger, query_carriers"
        )
    );
    let r = desks
        .call(&mut env, 1, "repair_dock", r#"{"dock": 0}"#)
        .unwrap();
    assert_eq!(r.status, 403, "{r:?}");
    let r = desks.call(&mut env, 0, "hold_wave", "{}").unwrap();
    assert_eq!(r.status, 403, "{r:?}");
    let logistics = desks.role_counts(1).unwrap();
    assert_eq!(
        (logistics.forbidden, logistics.calls, logistics.hours),
        (2, 2, 0)
    );
    let all = desks.counts();
    assert_eq!((all.forbidden, all.calls, all.hours), (3, 3, 0));
    assert_eq!((all.invalid_calls, all.refused), (0, 0));
    assert_eq!(env.world().counters().unwrap().hour, 0);
}

#[test]
fn the_hour_passes_once_every_role_has_acted_with_their_joint_action() {
    let (mut env, mut desks) = started(3);
    let r = desks
        .call(&mut env, 0, "reorder", r#"{"sku": 1, "quantity": 200}"#)
        .unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.data["hours_passed"], 0);
    assert_eq!(r.data["waiting_for"], serde_json::json!(["logistics"]));
    let again = desks
        .call(&mut env, 0, "expedite", r#"{"sku": 1}"#)
        .unwrap();
    assert_eq!(again.status, 409, "{again:?}");
    assert!(
        again.error.as_deref().unwrap().contains(
            "role `warehouse` has already acted this hour; the hour passes once logistics act"
        ),
        "{again:?}"
    );
    assert_eq!(env.world().counters().unwrap().hour, 0);
    let r = desks
        .call(&mut env, 1, "prioritize_sku", r#"{"sku": 4}"#)
        .unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.data["hours_passed"], 1);
    assert_eq!(
        r.data["waiting_for"],
        serde_json::json!(["warehouse", "logistics"])
    );
    assert_eq!(env.world().counters().unwrap().hour, 1);

    // The same hour as the roles env's joint action of the same two operations.
    let (mut twin, _) = started(3);
    let cfg = MorpheusConfig::default();
    let per_role = [
        env.layouts()[0]
            .encode(Op::Reorder { sku: 1, bucket: 3 })
            .unwrap(),
        env.layouts()[1]
            .encode(Op::PrioritizeSku { sku: 4 })
            .unwrap(),
    ];
    let joint = twin.joint(&per_role).unwrap();
    twin.step(&joint).unwrap();
    assert_eq!(twin.state(), env.state());
    assert_eq!(cfg.reorder_quantities[3], 200);
}

#[test]
fn a_wait_passes_the_role_s_hours_and_the_others_act_alone() {
    let (mut env, mut desks) = started(4);
    let r = desks.call(&mut env, 1, "wait", r#"{"hours": 3}"#).unwrap();
    assert_eq!(r.data["hours_passed"], 0, "{r:?}");
    for hour in 1..=3u64 {
        let r = desks.call(&mut env, 0, "wait", r#"{"hours": 1}"#).unwrap();
        assert_eq!(r.data["hours_passed"], 1, "{r:?}");
        assert_eq!(r.data["hour"], hour);
    }
    let r = desks.call(&mut env, 0, "wait", r#"{"hours": 1}"#).unwrap();
    assert_eq!(r.data["hours_passed"], 0, "logistics' wait is over: {r:?}");
    let r = desks.call(&mut env, 1, "wait", r#"{"hours": 24}"#).unwrap();
    assert_eq!(r.data["hours_passed"], 1, "{r:?}");
    let r = desks.call(&mut env, 0, "wait", r#"{"hours": 5}"#).unwrap();
    assert_eq!(r.data["hours_passed"], 5, "both wait: {r:?}");
    assert_eq!(env.world().counters().unwrap().hour, 9);
}
