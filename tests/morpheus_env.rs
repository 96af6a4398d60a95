//! The MORPHEUS world keeps the `Env` contract: destructive reset, determinism, errors,
//! horizon and payouts, regime shifts that end nothing, and snapshots that resume exactly.

use perennial::morpheus::{
    FailureKind, Morpheus, MorpheusConfig, MorpheusError, Op, default_reward_spec, signal_names,
};
use perennial::prelude::*;
use perennial::reward::{Term, When};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Bits = (u64, Vec<u32>, Vec<u64>, Vec<u64>, bool, bool);

fn bits(t: &Transition<Vec<f32>>) -> Bits {
    let b = t
        .breakdown
        .as_ref()
        .expect("morpheus always has a breakdown");
    (
        t.reward.to_bits(),
        t.observation.iter().map(|v| v.to_bits()).collect(),
        b.components.iter().map(|v| v.to_bits()).collect(),
        b.payouts.iter().map(|v| v.to_bits()).collect(),
        t.terminated,
        t.truncated,
    )
}

fn env_with(config: MorpheusConfig) -> Morpheus {
    Morpheus::new(config, default_reward_spec()).expect("valid config")
}

fn env() -> Morpheus {
    env_with(MorpheusConfig::default())
}

/// A busy random policy: an action every other step.
fn actions(seed: u64, n: usize, len: usize) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len)
        .map(|_| {
            if rng.random_bool(0.5) {
                rng.random_range(0..n)
            } else {
                0
            }
        })
        .collect()
}

fn run(env: &mut Morpheus, actions: &[usize]) -> Vec<Bits> {
    actions
        .iter()
        .map(|a| bits(&env.step(a).expect("valid step")))
        .collect()
}

#[test]
fn reset_after_ten_thousand_steps_builds_a_fresh_world() {
    let mut used = env();
    used.reset(5);
    let n = used.config().action_count();
    run(&mut used, &actions(1, n, 10_000));
    let mut fresh = env();
    let a = used.reset(11);
    let b = fresh.reset(11);
    assert_eq!(
        a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!(used.snapshot(), fresh.snapshot(), "nothing survives reset");
    let next = actions(2, n, 300);
    assert_eq!(run(&mut used, &next), run(&mut fresh, &next));
}

#[test]
fn same_seed_and_actions_give_bit_identical_transitions() {
    let (mut a, mut b) = (env(), env());
    a.reset(3);
    b.reset(3);
    let acts = actions(4, a.config().action_count(), 2_000);
    let (ta, tb) = (run(&mut a, &acts), run(&mut b, &acts));
    assert_eq!(ta, tb);
    let Space::Box { low, high, .. } = &a.spec().observation_space else {
        panic!("a box observation");
    };
    for (_, obs, ..) in &ta {
        assert_eq!(obs.len(), low.len());
        for ((v, lo), hi) in obs
            .iter()
            .map(|b| f32::from_bits(*b) as f64)
            .zip(low)
            .zip(high)
        {
            assert!(*lo <= v && v <= *hi, "{lo} <= {v} <= {hi}");
        }
    }
    let mut c = env();
    c.reset(4);
    assert_ne!(run(&mut c, &acts[..200]), run(&mut a, &acts[..200]));
}

#[test]
fn different_actions_meet_the_same_demand_and_failures() {
    let (mut idle, mut busy) = (env(), env());
    for e in [&mut idle, &mut busy] {
        e.set("failure_rate", 10.0).unwrap();
        e.reset(21);
    }
    let n = busy.config().action_count();
    let acts = actions(9, n, 3_000);
    let mut offered = Vec::new();
    for a in &acts {
        idle.step(&0).unwrap();
        busy.step(a).unwrap();
        let (ci, cb) = (idle.counters().unwrap(), busy.counters().unwrap());
        offered.push((ci.totals.demand_offered, cb.totals.demand_offered));
        assert_eq!(
            idle.signals()[4],
            busy.signals()[4],
            "failure events per step"
        );
    }
    assert!(offered.iter().all(|(i, b)| i == b));
    let (ci, cb) = (idle.counters().unwrap(), busy.counters().unwrap());
    assert_eq!(ci.failure_counts, cb.failure_counts);
    assert!(
        ci.failure_counts.iter().all(|&c| c > 0),
        "{:?}",
        ci.failure_counts
    );
    assert_eq!(idle.failure_log(), busy.failure_log());
    assert_ne!(
        ci.totals.units_shipped, cb.totals.units_shipped,
        "the agents differ"
    );
}

#[test]
fn invalid_action_is_an_error_and_leaves_the_world_unchanged() {
    let mut e = env();
    e.reset(1);
    e.step(&3).unwrap();
    let before = e.snapshot();
    let n = e.config().action_count();
    for bad in [n, n + 1, usize::MAX] {
        let err = e.step(&bad).unwrap_err();
        assert!(matches!(err, EnvError::InvalidAction { .. }), "{err}");
        assert!(err.to_string().contains(&format!("Discrete({n})")));
    }
    assert_eq!(e.snapshot(), before);
}

#[test]
fn step_before_reset_is_an_error() {
    assert_eq!(env().step(&0).unwrap_err(), EnvError::NotReset);
}

fn rejected(e: &mut Morpheus, op: Op) -> bool {
    let n = e.config().action_count();
    let a = (0..n)
        .find(|&a| e.decode(a) == Some(op))
        .expect("op in table");
    e.step(&a).unwrap();
    e.signals()[5] == 1.0
}

#[test]
fn infeasible_operations_are_counted_as_rejected() {
    let mut e = env();
    e.reset(1);
    assert!(rejected(&mut e, Op::RepairDock { dock: 0 }), "dock works");
    assert!(
        rejected(&mut e, Op::Expedite { sku: 2 }),
        "nothing in transit"
    );
    assert!(!rejected(&mut e, Op::Reorder { sku: 2, bucket: 0 }));
    assert!(!rejected(&mut e, Op::Expedite { sku: 2 }));
    assert!(
        rejected(&mut e, Op::Expedite { sku: 2 }),
        "already expedited"
    );
    assert!(!rejected(&mut e, Op::Noop));
    assert_eq!(e.counters().unwrap().totals.rejected_actions, 3);

    let mut poor = env_with(MorpheusConfig {
        opening_cash: 50.0,
        credit_limit: 0.0,
        ..MorpheusConfig::default()
    });
    poor.reset(1);
    let before = poor.counters().unwrap();
    assert!(
        rejected(&mut poor, Op::Reorder { sku: 0, bucket: 3 }),
        "no cash"
    );
    assert_eq!(
        poor.counters().unwrap().totals.units_ordered,
        before.totals.units_ordered
    );

    let mut down = env();
    down.set("outage_rate", 1.0).unwrap();
    down.reset(1);
    down.step(&0).unwrap();
    assert!(
        rejected(&mut down, Op::ChooseCarrier { carrier: 0 }),
        "outage"
    );
    assert!(!rejected(&mut down, Op::Noop));
}

#[test]
fn horizon_truncates_and_pays_the_settlement_on_the_last_step() {
    let mut spec = default_reward_spec();
    spec.terms.push(Term {
        name: "settlement".into(),
        signal: "ledger_balance".into(),
        weight: 0.001,
        when: When::EpisodeEnd,
    });
    let config = MorpheusConfig {
        horizon: Some(50),
        ..MorpheusConfig::default()
    };
    let mut e = Morpheus::new(config, spec).expect("valid world");
    assert_eq!(e.spec().payouts, vec!["settlement".to_string()]);
    e.reset(8);
    for i in 1..=50u64 {
        let t = e.step(&((i as usize * 7) % 48)).unwrap();
        let b = t.breakdown.clone().unwrap();
        let sum: f64 = b.components.iter().sum::<f64>() + b.payouts.iter().sum::<f64>();
        assert!((t.reward - sum).abs() <= 1e-9 * (1.0 + sum.abs()));
        let ceiling = e.ceiling().unwrap();
        assert!(t.reward <= ceiling.applicable(t.done()));
        assert!(!t.terminated);
        if i < 50 {
            assert!(!t.truncated && b.payouts == vec![0.0]);
        } else {
            assert!(t.truncated);
            assert_eq!(b.payouts, vec![0.001 * e.signals()[9]]);
            assert_ne!(b.payouts[0], 0.0);
            assert!(t.reward <= ceiling.final_step);
        }
    }
    assert_eq!(e.step(&0).unwrap_err(), EnvError::EpisodeEnded);
    e.reset(8);
    assert!(e.step(&0).is_ok());
}

#[test]
fn regime_shift_changes_measured_rates_without_ending_the_episode() {
    let mut e = env();
    e.reset(13);
    let measure = |e: &mut Morpheus, steps: u64| {
        let before = e.counters().unwrap();
        for _ in 0..steps {
            let t = e.step(&0).unwrap();
            assert!(!t.done(), "a shift ends nothing");
        }
        let after = e.counters().unwrap();
        let demand = (after.totals.demand_offered - before.totals.demand_offered) as f64;
        let fails: u64 = (0..5)
            .map(|k| after.failure_counts[k] - before.failure_counts[k])
            .sum();
        (demand / steps as f64, fails as f64 / steps as f64)
    };
    let (d0, f0) = measure(&mut e, 2_400);
    e.set("demand_rate", 3.0).unwrap();
    e.set("failure_rate", 8.0).unwrap();
    let (d1, f1) = measure(&mut e, 2_400);
    assert!(d1 > 2.5 * d0, "demand per hour {d0} -> {d1}");
    assert!(f1 > 4.0 * f0 && f0 > 0.0, "failures per hour {f0} -> {f1}");
    assert_eq!(e.counters().unwrap().hour, 4_800);
}

#[test]
fn snapshot_restores_a_world_that_continues_bit_identically() {
    let mut original = env();
    original.set("failure_rate", 5.0).unwrap();
    original.reset(17);
    let n = original.config().action_count();
    run(&mut original, &actions(3, n, 1_000));
    let snap = original.snapshot().expect("reset was called");
    let json = serde_json::to_string(&snap).unwrap();
    let back = serde_json::from_str(&json).unwrap();
    assert_eq!(snap, back);
    let mut restored = Morpheus::restore(MorpheusConfig::default(), default_reward_spec(), back)
        .expect("same layout");
    assert_eq!(restored.get("failure_rate"), Some(5.0));
    let next = actions(4, n, 1_000);
    assert_eq!(run(&mut original, &next), run(&mut restored, &next));
    assert_eq!(original.snapshot(), restored.snapshot());

    let wrong = MorpheusConfig {
        skus: 3,
        ..MorpheusConfig::default()
    };
    let err = Morpheus::restore(wrong, default_reward_spec(), snap)
        .err()
        .unwrap();
    assert!(matches!(err, MorpheusError::Snapshot(_)), "{err}");
}

#[test]
fn construction_errors_say_what_to_fix() {
    let spec = RewardSpec {
        terms: vec![Term {
            name: "margin".into(),
            signal: "margin".into(),
            weight: 1.0,
            when: When::Step,
        }],
    };
    let err = Morpheus::new(MorpheusConfig::default(), spec)
        .err()
        .unwrap();
    assert!(matches!(err, MorpheusError::Reward(_)));
    assert!(err.to_string().contains("`margin`") && err.to_string().contains("ledger_balance"));
    let bad = MorpheusConfig {
        carriers: 0,
        ..MorpheusConfig::default()
    };
    let err = Morpheus::new(bad, default_reward_spec()).err().unwrap();
    assert!(err.to_string().contains("carriers"), "{err}");
}

#[test]
fn spec_describes_a_persistent_world() {
    let e = env();
    let spec = e.spec();
    assert!(spec.persistent);
    assert_eq!(spec.id, "warehouse");
    assert_eq!(spec.action_space, Space::Discrete { n: 48 });
    assert_eq!(spec.observation_space.len(), 47);
    assert_eq!(
        spec.components,
        [
            "revenue",
            "purchases",
            "holding",
            "shipping",
            "late",
            "lost",
            "repair",
            "expedite",
            "detention",
            "interest"
        ]
    );
    assert_eq!(signal_names().len(), 22);
    assert_eq!(FailureKind::ALL.len(), 5);
    assert!(e.parameters().iter().all(|p| p.min <= p.max));
}
