//! The enterprise world's money: the default reward is the ledger's change, a firm that
//! goes broke climbs out on its credit line, exogenous events are common to every agent,
//! and a cost shock leaves no lasting scar on a fixed policy.

use perennial::agents::{BaseStockAgent, BaseStockParams, RandomAgent};
use perennial::harness::Agent;
use perennial::morpheus::{FailureEvent, Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;

fn world(config: MorpheusConfig) -> Morpheus {
    Morpheus::new(config, default_reward_spec()).expect("valid world")
}

/// The default world with `cash` to open with and a credit line of `credit`.
fn firm_with(cash: f64, credit: f64) -> Morpheus {
    world(MorpheusConfig {
        opening_cash: cash,
        credit_limit: credit,
        ..MorpheusConfig::default()
    })
}

fn base_stock(env: &Morpheus) -> BaseStockAgent {
    BaseStockAgent::new(env.config(), BaseStockParams::default())
}

#[test]
fn the_sum_of_default_rewards_is_the_ledgers_change() {
    let mut env = world(MorpheusConfig::default());
    env.set("failure_rate", 5.0).unwrap();
    let mut agent = base_stock(&env);
    let mut obs = env.reset(3);
    let mut sum = 0.0;
    for _ in 0..5_000 {
        let t = env.step(&agent.act(&obs)).unwrap();
        let parts: f64 = t
            .breakdown
            .as_ref()
            .map_or(0.0, |b| b.components.iter().sum());
        assert!((parts - t.reward).abs() <= 1e-9 * t.reward.abs().max(1.0));
        sum += t.reward;
        obs = t.observation;
    }
    let c = env.counters().unwrap();
    let change = c.cash - c.opening_cash;
    assert!(
        c.revenue > 10_000.0,
        "the run sold something: {}",
        c.revenue
    );
    assert!(
        (sum - change).abs() <= 1e-6 * change.abs().max(1.0),
        "rewards {sum} vs ledger change {change}"
    );
    let by_kind = c.costs.total();
    assert!((c.revenue - by_kind - change).abs() <= 1e-6 * c.revenue);
}

#[test]
fn a_broke_firm_climbs_out_on_its_credit_line() {
    let mut env = firm_with(1_000.0, 20_000.0);
    let mut agent = base_stock(&env);
    let mut obs = env.reset(11);
    // Selling below cost: every unit sold loses money, so cash goes below zero.
    env.set("price", 0.4).unwrap();
    for _ in 0..300 {
        obs = env.step(&agent.act(&obs)).unwrap().observation;
    }
    let broke = env.counters().unwrap();
    assert!(
        broke.cash < -5_000.0 && broke.cash > -20_000.0,
        "cash {} should be deep in the credit line",
        broke.cash
    );
    assert!(
        broke.costs.interest > 0.0,
        "a negative balance pays interest"
    );
    env.set("price", 1.0).unwrap();
    let rejected_before = broke.totals.rejected_actions;
    for _ in 0..4_000 {
        obs = env.step(&agent.act(&obs)).unwrap().observation;
    }
    let after = env.counters().unwrap();
    eprintln!("cash {} when broke, {} after", broke.cash, after.cash);
    assert!(
        after.cash > 0.0,
        "cash went from {} to only {}",
        broke.cash,
        after.cash
    );
    assert!(
        after.totals.units_ordered > broke.totals.units_ordered,
        "reorders are accepted again"
    );
    assert!(after.totals.rejected_actions - rejected_before < 100);
}

#[test]
fn reorders_beyond_the_credit_line_are_refused() {
    let mut env = firm_with(100.0, 1_000.0);
    env.reset(1);
    // 20 units of SKU 0 cost 20 × 10 × 0.6 = 120.
    let (cost, reorder) = (120.0, 1);
    let (mut on_credit, mut refused) = (0, 0);
    for _ in 0..30 {
        let cash = env.counters().unwrap().cash;
        env.step(&reorder).unwrap();
        if env.signals()[5] == 0.0 {
            assert!(cash - cost >= -1_000.0, "accepted at cash {cash}");
            on_credit += usize::from(cash - cost < 0.0);
        } else {
            assert!(cash - cost < -1_000.0, "refused at cash {cash}");
            refused += 1;
        }
    }
    assert!(
        on_credit >= 5 && refused >= 1,
        "{on_credit} on credit, {refused} refused"
    );
}

/// Every exogenous event of a run: the failure log and the market's demand each hour.
fn exogenous_log(agent: &mut dyn Agent<Morpheus>, seed: u64) -> (Vec<FailureEvent>, Vec<u64>) {
    let mut env = world(MorpheusConfig::default());
    env.set("failure_rate", 10.0).unwrap();
    let mut obs = env.reset(seed);
    let mut demand = Vec::new();
    for _ in 0..3_000 {
        obs = env.step(&agent.act(&obs)).unwrap().observation;
        demand.push(env.counters().unwrap().totals.demand_offered);
    }
    (env.failure_log(), demand)
}

#[test]
fn two_agents_on_one_seed_meet_the_same_exogenous_events() {
    let env = world(MorpheusConfig::default());
    let mut random = RandomAgent::new(env.spec().action_space.clone(), 9);
    let mut fixed = base_stock(&env);
    let a = exogenous_log(&mut random, 21);
    let b = exogenous_log(&mut fixed, 21);
    assert!(a.0.len() > 20, "failures were injected");
    assert_eq!(a, b);
    let other = exogenous_log(&mut fixed, 22);
    assert_ne!(a.1, other.1, "another seed, another market");
}

/// Mean reward per hour of base-stock over `[from, to)` of a run through `plan`.
fn interval_means(plan: &[(&[(&str, f64)], u64)], seed: u64, skip: u64) -> Vec<f64> {
    let mut env = world(MorpheusConfig::default());
    let mut agent = base_stock(&env);
    let mut obs = env.reset(seed);
    let mut means = Vec::new();
    for (conditions, hours) in plan {
        for p in perennial::morpheus::PARAMETERS {
            let base = perennial::morpheus::MorpheusConditions::default();
            env.set(p.name, base.get(p.name).unwrap()).unwrap();
        }
        for (name, v) in *conditions {
            env.set(name, *v).unwrap();
        }
        let mut sum = 0.0;
        for h in 0..*hours {
            let t = env.step(&agent.act(&obs)).unwrap();
            if h >= skip {
                sum += t.reward;
            }
            obs = t.observation;
        }
        means.push(sum / (hours - skip) as f64);
    }
    means
}

#[test]
fn base_stock_earns_as_before_once_a_cost_shock_is_over() {
    let shock: &[(&str, f64)] = &[
        ("cost_multiplier", 1.5),
        ("holding_cost", 2.0),
        ("price", 0.9),
    ];
    let plan = [(&[][..], 3_000), (shock, 2_000), (&[][..], 3_000)];
    let mut before = 0.0;
    let mut after = 0.0;
    for seed in 0..2 {
        let m = interval_means(&plan, seed, 500);
        before += m[0];
        after += m[2];
        assert!(m[1] < m[0], "the shock hurts: {m:?}");
    }
    assert!(before > 0.0);
    assert!(
        (after - before).abs() <= 0.10 * before,
        "baseline profit {before} before the shock, {after} after"
    );
}
