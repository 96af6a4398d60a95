//! A long random run of the MORPHEUS world under every shipped regime plus two extreme ones:
//! no step's reward exceeds its ceiling, no episode ends, cash and units are conserved.
//!
//! The run is 200,000 steps in an optimized build (`cargo test --release --test
//! morpheus_invariants`, a few seconds) and 50,000 in a debug build, where 200,000 would
//! take over a minute. `PERENNIAL_LONG_STEPS=N` sets the count explicitly.

use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;
use perennial::regime::{Conditions, apply_conditions};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

#[derive(Deserialize)]
struct RegimesOnly {
    regimes: Vec<Regime>,
}

fn shipped_regimes() -> Vec<Regime> {
    let mut all = Vec::new();
    for path in ["worlds/warehouse.toml", "worlds/logistics.toml"] {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let file: RegimesOnly = toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        all.extend(file.regimes);
    }
    all.push(Regime::new(
        "chaos",
        &[
            ("failure_rate", 100.0),
            ("dock_breakdown_rate", 0.5),
            ("carrier_no_show_rate", 0.5),
            ("supplier_delay_rate", 0.5),
            ("outage_rate", 0.2),
            ("demand_spike_rate", 0.5),
            ("carrier_reliability", 0.0),
        ],
    ));
    all.push(Regime::new(
        "boom",
        &[
            ("demand_rate", 10.0),
            ("price", 10.0),
            ("cost_multiplier", 0.0),
            ("lead_time", 0.1),
            ("dock_capacity", 10.0),
            ("carrier_reliability", 2.0),
        ],
    ));
    all
}

fn long_steps() -> u64 {
    match std::env::var("PERENNIAL_LONG_STEPS") {
        Ok(v) => v.parse().expect("PERENNIAL_LONG_STEPS is a step count"),
        Err(_) if cfg!(debug_assertions) => 50_000,
        Err(_) => 200_000,
    }
}

fn check_conservation(env: &Morpheus, step: u64) {
    let c = env.counters().expect("reset was called");
    let t = &c.totals;
    let expected = c.opening_cash + c.ledger_entries_sum;
    assert!(
        (c.cash - expected).abs() <= 1e-6 * c.cash.abs().max(expected.abs()).max(1.0),
        "step {step}: cash {} != opening + entries {expected}",
        c.cash
    );
    assert_eq!(
        t.initial_stock + t.units_received - t.units_shipped,
        c.stock_on_hand,
        "step {step}: received - shipped == stock change"
    );
    assert_eq!(
        t.units_ordered,
        t.units_received + c.units_in_pipeline,
        "step {step}: ordered == received + pipeline"
    );
    assert!(c.stock_reserved <= c.stock_on_hand);
    assert!(t.demand_realised <= t.demand_offered);
}

#[test]
fn long_random_run_keeps_ceiling_and_conservation_under_every_regime() {
    let regimes = shipped_regimes();
    let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
    let baseline: Conditions = Shiftable::snapshot(&env);
    let n = env.config().action_count();
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    env.reset(99);
    let steps = long_steps();
    let every = (steps / (3 * regimes.len() as u64)).clamp(1, 2_000);
    let mut worst_gap = f64::INFINITY;
    for step in 0..steps {
        if step % every == 0 {
            let regime = &regimes[(step / every) as usize % regimes.len()];
            apply_conditions(&mut env, &baseline).unwrap();
            apply_conditions(&mut env, &regime.conditions).unwrap();
        }
        let a = if rng.random_bool(0.3) {
            rng.random_range(0..n)
        } else {
            0
        };
        let t = env.step(&a).unwrap();
        assert!(
            !t.terminated && !t.truncated,
            "step {step}: no horizon, no end"
        );
        let ceiling = env.ceiling().unwrap().applicable(t.done());
        assert!(
            t.reward <= ceiling,
            "step {step}: reward {} above ceiling {ceiling}",
            t.reward
        );
        worst_gap = worst_gap.min(ceiling - t.reward);
        if step % 1_000 == 0 {
            check_conservation(&env, step);
        }
    }
    check_conservation(&env, steps);
    assert!(worst_gap >= 0.0);
}
