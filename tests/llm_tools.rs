//! The tool surface as a language model meets it: every reply status, the numeric agent's
//! trace reproduced through tool calls, nothing of the regime leaking into what the tools
//! show, short text renderings, and hostile calls that never stop a run.

mod common;

use common::temp;
use common::traced::Traced;

use perennial::agents::{BaseStockAgent, BaseStockParams};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::morpheus::api::{
    Desk, DeskOptions, Hour, Reply, Stepper, TEXT_SKUS, ToolCall, render_json, render_text,
};
use perennial::morpheus::{Morpheus, MorpheusConfig, MorpheusSnapshot, Op, default_reward_spec};
use perennial::prelude::*;
use perennial::trace::TraceFormat;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

fn world(config: MorpheusConfig) -> Morpheus {
    Morpheus::new(config, default_reward_spec()).unwrap()
}

fn started(seed: u64) -> Morpheus {
    let mut env = world(MorpheusConfig::default());
    env.reset(seed);
    env
}

fn desk(env: &Morpheus) -> Desk {
    Desk::new(env.config(), DeskOptions::default())
}

#[test]
fn a_query_answers_without_time_passing() {
    let mut env = started(1);
    let mut d = desk(&env);
    let r = d
        .call(&mut env, "query_inventory", r#"{"sku": null}"#)
        .unwrap();
    assert_eq!((r.status, r.success, r.error.as_deref()), (200, true, None));
    assert_eq!(r.data["skus"].as_array().unwrap().len(), 8);
    assert_eq!(r.data["skus"][3]["on_hand"], env.config().initial_stock);
    assert_eq!(r.data["cash_available"], 30_000.0);
    let r = d
        .call(&mut env, "query_inventory", r#"{"sku": 5}"#)
        .unwrap();
    assert_eq!(r.data["skus"].as_array().unwrap().len(), 1);
    assert_eq!(r.data["skus"][0]["sku"], 5);
    for (name, args) in [
        ("query_ledger", "{}"),
        ("query_carriers", "{}"),
        (
            "query_orders",
            r#"{"kind": "customer", "sku": null, "limit": 3}"#,
        ),
    ] {
        assert_eq!(d.call(&mut env, name, args).unwrap().status, 200, "{name}");
    }
    assert_eq!(env.counters().unwrap().hour, 0);
    assert_eq!(d.counts().hours, 0);
}

#[test]
fn an_operation_takes_one_hour_and_wait_takes_its_hours() {
    let mut env = started(2);
    let mut d = desk(&env);
    let r = d
        .call(&mut env, "reorder", r#"{"sku": 1, "quantity": 200}"#)
        .unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.data["hours_passed"], 1);
    assert_eq!(r.data["hour"], 1);
    let po = d
        .call(
            &mut env,
            "query_orders",
            r#"{"kind": "purchase", "sku": 1, "limit": 5}"#,
        )
        .unwrap();
    assert_eq!(po.data["total"], 1);
    assert_eq!(po.data["orders"][0]["units"], 200);
    let r = d.call(&mut env, "wait", r#"{"hours": 5}"#).unwrap();
    assert_eq!((r.status, r.data["hours_passed"].clone()), (200, json!(5)));
    assert_eq!(env.counters().unwrap().hour, 6);
}

#[test]
fn the_world_refuses_with_409_and_says_why() {
    let mut env = started(3);
    let mut d = desk(&env);
    let r = d.call(&mut env, "repair_dock", r#"{"dock": 2}"#).unwrap();
    assert_eq!(r.status, 409);
    assert!(r.error.unwrap().contains("dock 2 works"));
    assert_eq!(
        r.data["hours_passed"], 1,
        "a refused operation takes its hour"
    );
    let r = d.call(&mut env, "expedite", r#"{"sku": 4}"#).unwrap();
    assert_eq!(r.status, 409);
    assert!(r.error.unwrap().contains("no purchase order in transit"));
    let mut broke = world(MorpheusConfig {
        opening_cash: 100.0,
        credit_limit: 0.0,
        ..Default::default()
    });
    broke.reset(3);
    let mut d = desk(&broke);
    let r = d
        .call(&mut broke, "reorder", r#"{"sku": 0, "quantity": 200}"#)
        .unwrap();
    assert_eq!(r.status, 409);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("below the credit line"),
        "{r:?}"
    );
    assert_eq!(d.counts().refused, 1);
    assert_eq!(d.counts().invalid_calls, 0);
}

#[test]
fn an_outage_refuses_operations_with_503_and_queries_still_answer() {
    let mut env = started(4);
    env.set("outage_rate", 1.0).unwrap();
    let mut d = desk(&env);
    d.call(&mut env, "wait", r#"{"hours": 1}"#).unwrap();
    let r = d
        .call(&mut env, "choose_carrier", r#"{"carrier": 0}"#)
        .unwrap();
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.error.unwrap().contains("outage"));
    assert_eq!(d.call(&mut env, "query_ledger", "{}").unwrap().status, 200);
}

#[test]
fn the_day_budget_refuses_with_409() {
    let mut env = started(5);
    env.set("op_budget", 1.0).unwrap();
    let mut d = desk(&env);
    let call = r#"{"carrier": 1}"#;
    assert_eq!(
        d.call(&mut env, "choose_carrier", call).unwrap().status,
        200
    );
    let r = d.call(&mut env, "choose_carrier", call).unwrap();
    assert_eq!(r.status, 409);
    assert!(r.error.unwrap().contains("budget"));
}

#[test]
fn bad_calls_get_400_404_422_change_nothing_and_are_counted() {
    let mut env = started(6);
    let before = env.snapshot().unwrap();
    let mut d = desk(&env);
    let r = d.call(&mut env, "reorder", "{\"sku\": 1,").unwrap();
    assert_eq!(
        (r.status, r.success, r.data.clone()),
        (400, false, Value::Null)
    );
    let r = d.call(&mut env, "sell", "{}").unwrap();
    assert_eq!(r.status, 404);
    let e = r.error.unwrap();
    assert!(e.contains("reorder") && e.contains("query_carriers"), "{e}");
    let r = d.call(&mut env, "repair_dock", r#"{"dock": 4}"#).unwrap();
    assert_eq!(r.status, 422);
    assert!(
        r.error
            .unwrap()
            .contains("`dock` is 4; use an integer from 0 to 3")
    );
    let r = d
        .request(&mut env, &json!({"path": "/nowhere", "method": "GET"}))
        .unwrap();
    assert_eq!(r.status, 404);
    assert!(r.error.unwrap().contains("GET /inventory"));
    assert_eq!(env.snapshot().unwrap(), before);
    let c = d.counts();
    assert_eq!(
        (c.calls, c.malformed_calls, c.invalid_calls, c.hours),
        (4, 1, 3, 0)
    );
}

#[test]
fn calls_beyond_the_hour_budget_let_the_hour_pass() {
    let mut env = started(7);
    let mut d = Desk::new(
        env.config(),
        DeskOptions {
            max_calls_per_hour: 3,
        },
    );
    for _ in 0..3 {
        assert_eq!(d.call(&mut env, "query_ledger", "{}").unwrap().status, 200);
    }
    let r = d.call(&mut env, "query_ledger", "{}").unwrap();
    assert_eq!(r.status, 409);
    assert_eq!(r.data["hours_passed"], 1);
    assert_eq!(env.counters().unwrap().hour, 1);
    assert_eq!(d.call(&mut env, "query_ledger", "{}").unwrap().status, 200);
}

#[test]
fn the_horizon_ends_the_hours_and_queries_still_answer() {
    let mut env = world(MorpheusConfig {
        horizon: Some(3),
        ..Default::default()
    });
    env.reset(8);
    let mut d = desk(&env);
    let r = d.call(&mut env, "wait", r#"{"hours": 10}"#).unwrap();
    assert_eq!(r.data["hours_passed"], 3);
    let r = d.call(&mut env, "expedite", r#"{"sku": 0}"#).unwrap();
    assert_eq!(r.status, 409);
    assert!(r.error.unwrap().contains("ended"));
    assert_eq!(
        d.call(&mut env, "query_carriers", "{}").unwrap().status,
        200
    );
}

#[test]
fn base_stock_sent_as_tool_calls_leaves_base_stocks_trace() {
    let cfg = MorpheusConfig::default();
    let steps = 2_000;
    let config = HarnessConfig {
        steps,
        window_steps: 256,
        auto_reset: false,
        record_transitions: true,
    };
    let agent = || BaseStockAgent::new(&cfg, BaseStockParams::default());
    let (own, calls) = (temp("own.jsonl"), temp("calls.jsonl"));
    Harness::new(world(cfg.clone()), agent(), 11)
        .config(config.clone())
        .run_id("same")
        .trace(&own, TraceFormat::Jsonl)
        .run()
        .unwrap();

    let harness = Harness::new(world(cfg.clone()), agent(), 11)
        .config(config)
        .run_id("same")
        .trace(&calls, TraceFormat::Jsonl);
    let mut traced = Traced(harness);
    let mut chooser = agent();
    let mut d = Desk::new(&cfg, DeskOptions::default());
    let mut ops = 0;
    // Starts the run, so the reset's observation is there to act on.
    traced.0.advance(0).unwrap();
    for _ in 0..steps {
        let action = chooser.act(traced.0.observation().unwrap());
        let reply: Reply = match ToolCall::from_op(Op::decode(action, &cfg).unwrap(), &cfg) {
            None => d.call(&mut traced, "wait", r#"{"hours": 1}"#).unwrap(),
            Some(call) => {
                ops += 1;
                d.call_value(&mut traced, call.tool().as_str(), &call.arguments())
                    .unwrap()
            }
        };
        assert!(reply.status == 200 || reply.status == 409, "{reply:?}");
    }
    assert!(ops > 100, "{ops} operations");
    drop(traced);
    let (a, b) = (std::fs::read(&own).unwrap(), std::fs::read(&calls).unwrap());
    assert_eq!(a.len(), b.len());
    assert!(a == b, "the traces differ");
}

/// `hours` hours of base-stock.
fn played(env: &mut Morpheus, hours: usize) {
    let mut agent = BaseStockAgent::new(env.config(), BaseStockParams::default());
    let mut obs = env.reset(env.counters().map_or(0, |c| c.hour));
    for _ in 0..hours {
        obs = env.step(&agent.act(&obs)).unwrap().observation;
    }
}

fn restored(snapshot: &MorpheusSnapshot, conditions: &[(&str, f64)]) -> Morpheus {
    let mut snap = snapshot.clone();
    for (k, v) in conditions {
        snap.conditions.set(k, *v).unwrap();
    }
    Morpheus::restore(MorpheusConfig::default(), default_reward_spec(), snap).unwrap()
}

fn everything_shown(env: &mut Morpheus) -> Vec<String> {
    let mut d = desk(env);
    let mut out = vec![render_text(env), render_json(env).to_string()];
    let mut calls = vec![
        ("query_inventory", json!({"sku": null})),
        ("query_inventory", json!({"sku": 2})),
        ("query_ledger", json!({})),
        ("query_carriers", json!({})),
    ];
    for kind in ["customer", "purchase", "shipment"] {
        calls.push((
            "query_orders",
            json!({"kind": kind, "sku": null, "limit": 50}),
        ));
    }
    for (name, args) in calls {
        let r = d.call_value(env, name, &args).unwrap();
        assert_eq!(r.status, 200);
        out.push(r.to_json());
    }
    out
}

#[test]
fn one_state_shows_the_same_bytes_under_two_regimes() {
    let mut env = started(12);
    played(&mut env, 300);
    let snap = env.snapshot().unwrap();
    assert!(!snap.orders.is_empty() && !snap.shipments.is_empty());
    let calm = restored(&snap, &[]);
    let storm = restored(
        &snap,
        &[
            ("demand_rate", 2.5),
            ("lead_time", 3.0),
            ("failure_rate", 4.0),
            ("dock_breakdown_rate", 0.2),
            ("carrier_no_show_rate", 0.3),
            ("outage_rate", 0.1),
            ("carrier_reliability", 0.4),
            ("holding_cost", 3.0),
            ("cost_multiplier", 2.0),
            ("price", 0.5),
            ("dock_capacity", 0.3),
            ("late_penalty", 4.0),
            ("promise", 0.5),
            ("op_budget", 2.0),
        ],
    );
    assert_ne!(calm.conditions(), storm.conditions());
    let (mut calm, mut storm) = (calm, storm);
    let (a, b) = (everything_shown(&mut calm), everything_shown(&mut storm));
    assert_eq!(a, b);
    // And the renderings do show the state: an hour later they differ.
    calm.step(&0).unwrap();
    assert_ne!(everything_shown(&mut calm), a);
}

#[test]
fn the_text_of_the_default_layout_stays_under_600_characters() {
    let mut env = started(13);
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let n = env.config().action_count();
    let mut longest = 0;
    for _ in 0..3_000 {
        longest = longest.max(render_text(&env).len());
        let a = if rng.random_bool(0.2) {
            rng.random_range(0..n)
        } else {
            0
        };
        env.step(&a).unwrap();
    }
    assert!(longest < 600, "{longest} characters");
    let text = render_text(&env);
    assert!(text.contains("SKU on/res/pipe/backlog: 0 "), "{text}");
    assert!(text.contains("Last hour: shipped"), "{text}");
}

#[test]
fn the_text_of_the_10x_layout_lists_only_skus_needing_attention() {
    let mut env = world(MorpheusConfig::default().scaled(10));
    env.reset(14);
    played(&mut env, 300);
    // Without reorders, the fast-selling SKUs come to need attention first.
    let mut need: Vec<u64> = Vec::new();
    for _ in 0..200 {
        let skus = render_json(&env)["skus"].as_array().unwrap().clone();
        assert_eq!(skus.len(), 80);
        need = skus
            .iter()
            .filter(|s| s["needs_attention"] == true)
            .map(|s| s["sku"].as_u64().unwrap())
            .collect();
        if !need.is_empty() {
            break;
        }
        env.step(&0).unwrap();
    }
    assert!(!need.is_empty() && need.len() < 80, "{need:?}");
    let text = render_text(&env);
    let line = text.lines().nth(1).unwrap();
    // Each SKU shows `on/res/pipe/backlog`, as the header does.
    let listed = line.matches('/').count() / 3 - 1;
    assert_eq!(listed, need.len().min(TEXT_SKUS), "{line}");
    assert!(line.contains(&format!(
        "{} of 80 SKUs need attention; query_inventory for all",
        need.len()
    )));
    assert!(line.contains(&format!(": {} ", need[0])), "{line}");
}

fn junk(rng: &mut ChaCha8Rng, depth: u32) -> Value {
    match rng.random_range(0..10) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => json!(rng.random_range(-5i64..12)),
        3 => json!(rng.random::<f64>() * 300.0 - 50.0),
        4 => json!(u64::MAX),
        5 => json!("x".repeat(rng.random_range(0..20_000))),
        6 => json!(["customer", "purchase", "shipment", "", "CUSTOMER"][rng.random_range(0..5)]),
        7 if depth < 3 => Value::Array((0..3).map(|_| junk(rng, depth + 1)).collect()),
        8 if depth < 3 => json!({"a": junk(rng, depth + 1), "sku": junk(rng, depth + 1)}),
        _ => json!(rng.random_range(0u64..250)),
    }
}

#[test]
fn five_thousand_hostile_calls_get_documented_replies_and_are_counted() {
    let mut env = started(15);
    let mut d = desk(&env);
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let names = d.catalogue().names();
    let fields = [
        "sku", "quantity", "carrier", "dock", "hours", "kind", "limit", "extra",
    ];
    let (mut malformed, mut invalid) = (0, 0);
    for i in 0..5_000 {
        let name = match rng.random_range(0..6) {
            0 => "x".repeat(rng.random_range(0..50_000)),
            1 => ["", "REORDER", "reorder ", "query", "wait\0"][rng.random_range(0..5)].into(),
            _ => names[rng.random_range(0..names.len())].to_string(),
        };
        let mut obj = serde_json::Map::new();
        for _ in 0..rng.random_range(0..4) {
            let f = fields[rng.random_range(0..fields.len())];
            obj.insert(f.into(), junk(&mut rng, 0));
        }
        let args = match rng.random_range(0..8) {
            0 => "{\"sku\": NaN}".to_string(),
            1 => "{".repeat(rng.random_range(1..200)),
            2 => junk(&mut rng, 0).to_string(),
            3 => String::new(),
            _ => Value::Object(obj).to_string(),
        };
        let reply = if i % 7 == 0 {
            let path = ["/inventory", "/orders", "/x", ""][i % 4];
            let req = json!({"path": path, "method": "GET", "body": junk(&mut rng, 0)});
            d.request(&mut env, &req).unwrap()
        } else {
            d.call(&mut env, &name, &args).unwrap()
        };
        assert!(
            [200, 400, 404, 409, 422, 503].contains(&reply.status),
            "{reply:?}"
        );
        assert_eq!(reply.success, reply.status == 200);
        assert_eq!(reply.error.is_none(), reply.success);
        assert!(reply.error.as_ref().is_none_or(|e| e.len() < 1_000));
        malformed += u64::from(reply.status == 400);
        invalid += u64::from(reply.status == 404 || reply.status == 422);
    }
    let c = d.counts();
    assert_eq!(
        (c.calls, c.malformed_calls, c.invalid_calls),
        (5_000, malformed, invalid)
    );
    assert!(malformed > 300 && invalid > 1_000, "{c:?}");
    assert!(c.hours > 0, "valid operations among them took hours");
    assert_eq!(env.counters().unwrap().hour, c.hours);
    let r = d.call(
        &mut env,
        "query_orders",
        r#"{"kind": "customer", "sku": null, "limit": 1}"#,
    );
    assert_eq!(r.unwrap().status, 200, "the run goes on");
}

fn signal(env: &Morpheus, name: &str) -> f64 {
    let i = perennial::morpheus::signal_names()
        .iter()
        .position(|s| *s == name)
        .unwrap();
    env.signals()[i]
}

/// The world as a [`Stepper`] that keeps every hour's signals.
struct Recording(Morpheus, Vec<Vec<f64>>);

impl Stepper for Recording {
    type Error = EnvError;

    fn world(&self) -> &Morpheus {
        &self.0
    }

    fn step_hour(&mut self, action: usize) -> Result<Hour, EnvError> {
        let hour = self.0.step_hour(action)?;
        self.1.push(self.0.signals().to_vec());
        Ok(hour)
    }
}

#[test]
fn bad_calls_show_in_the_signals_of_the_hour_that_follows_them() {
    let at = |name: &str| {
        perennial::morpheus::signal_names()
            .iter()
            .position(|s| *s == name)
            .unwrap()
    };
    let (invalid, malformed) = (at("invalid_calls"), at("malformed_calls"));
    let mut rec = Recording(started(4), Vec::new());
    let mut d = desk(&rec.0);
    for (name, args) in [
        ("teleport", "{}"),
        ("reorder", r#"{"sku": 99, "quantity": 50}"#),
        ("wait", "not json"),
        ("query_ledger", "{}"),
    ] {
        d.call(&mut rec, name, args).unwrap();
    }
    assert!(rec.1.is_empty(), "bad calls take no time");
    d.call(&mut rec, "reorder", r#"{"sku": 1, "quantity": 50}"#)
        .unwrap();
    d.call(&mut rec, "wait", "[1]").unwrap();
    d.call(&mut rec, "wait", r#"{"hours": 3}"#).unwrap();
    let rows: Vec<(f64, f64)> = rec.1.iter().map(|s| (s[invalid], s[malformed])).collect();
    assert_eq!(rows, [(2.0, 1.0), (0.0, 1.0), (0.0, 0.0), (0.0, 0.0)]);
    let c = d.counts();
    assert_eq!((c.invalid_calls, c.malformed_calls), (2, 2));
}

#[test]
fn a_numeric_run_leaves_the_call_signals_at_zero() {
    let mut env = started(9);
    let mut agent = BaseStockAgent::new(env.config(), BaseStockParams::default());
    let mut obs = env.reset(9);
    for _ in 0..500 {
        obs = env.step(&agent.act(&obs)).unwrap().observation;
        assert_eq!(signal(&env, "invalid_calls"), 0.0);
        assert_eq!(signal(&env, "malformed_calls"), 0.0);
    }
}

#[test]
fn a_reward_spec_may_charge_invalid_calls_and_the_default_does_not() {
    let mut spec = default_reward_spec();
    spec.terms.push(perennial::reward::Term {
        name: "invalid".into(),
        signal: "invalid_calls".into(),
        weight: -5.0,
        when: perennial::reward::When::Step,
    });
    let mut charged = Morpheus::new(MorpheusConfig::default(), spec).unwrap();
    let mut plain = started(2);
    charged.reset(2);
    let (mut d1, mut d2) = (desk(&charged), desk(&plain));
    d1.call(&mut charged, "nope", "{}").unwrap();
    d2.call(&mut plain, "nope", "{}").unwrap();
    let a = d1.call(&mut charged, "wait", r#"{"hours": 1}"#).unwrap();
    let b = d2.call(&mut plain, "wait", r#"{"hours": 1}"#).unwrap();
    let (a, b) = (
        a.data["reward"].as_f64().unwrap(),
        b.data["reward"].as_f64().unwrap(),
    );
    assert!((b - a - 5.0).abs() < 1e-9, "{a} {b}");
    assert!(charged.ceiling().unwrap().step.is_finite());
}

#[test]
fn a_snapshot_from_before_the_call_signals_still_restores() {
    let mut env = started(3);
    env.step(&0).unwrap();
    let mut snap = env.snapshot().unwrap();
    snap.signals.truncate(20);
    let back = Morpheus::restore(MorpheusConfig::default(), default_reward_spec(), snap).unwrap();
    assert_eq!(back.signals().len(), 22);
    assert_eq!(signal(&back, "invalid_calls"), 0.0);
    let mut bad = env.snapshot().unwrap();
    bad.signals.truncate(7);
    assert!(Morpheus::restore(MorpheusConfig::default(), default_reward_spec(), bad).is_err());
}
