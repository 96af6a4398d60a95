//! The information layer's failures: stale and missing stock readings, rate-limited
//! operations. The observation keeps its length, and a snapshot carries the layer.

use perennial::morpheus::{Morpheus, MorpheusConfig, Op, default_reward_spec};
use perennial::prelude::*;

fn world() -> Morpheus {
    Morpheus::new(MorpheusConfig::default(), default_reward_spec()).expect("valid world")
}

const BLOCK: usize = 4 * 8;
const VALID: usize = 4 * 8 + 4 + 3 + 7;

fn index(env: &Morpheus, op: Op) -> usize {
    (0..env.config().action_count())
        .find(|&i| env.decode(i) == Some(op))
        .expect("the op is in the table")
}

#[test]
fn missing_readings_are_zeros_with_the_validity_flag_down() {
    let mut env = world();
    let obs = env.reset(4);
    assert_eq!(obs[VALID], 1.0);
    assert!(obs[..BLOCK].iter().any(|&v| v > 0.0));
    env.set("missing_rate", 1.0).unwrap();
    for _ in 0..30 {
        let t = env.step(&0).unwrap();
        assert_eq!(t.observation.len(), env.config().observation_len());
        assert!(t.observation[..BLOCK].iter().all(|&v| v == 0.0));
        assert_eq!(t.observation[VALID], 0.0);
        assert!(t.observation[VALID - 5] > 0.0, "cash is still read");
    }
    assert_eq!(env.counters().unwrap().totals.missing_readings, 30);
}

#[test]
fn stale_readings_show_the_stock_of_stale_hours_before() {
    let mut fresh = world();
    let mut stale = world();
    stale.set("stale_rate", 1.0).unwrap();
    let (mut a, mut b) = (vec![fresh.reset(9)], vec![stale.reset(9)]);
    for h in 0..60 {
        let action = if h % 5 == 0 { 1 + (h % 32) } else { 0 };
        a.push(fresh.step(&action).unwrap().observation);
        b.push(stale.step(&action).unwrap().observation);
    }
    let lag = fresh.config().stale_hours as usize;
    for t in lag..a.len() {
        assert_eq!(b[t][..BLOCK], a[t - lag][..BLOCK], "hour {t}");
        assert_eq!(
            b[t][BLOCK..],
            a[t][BLOCK..],
            "only the stock block is stale"
        );
    }
    assert_ne!(
        a[30][..BLOCK],
        a[30 - lag][..BLOCK],
        "stock moved meanwhile"
    );
    assert_eq!(
        fresh.counters().unwrap().cash,
        stale.counters().unwrap().cash
    );
}

#[test]
fn operations_beyond_the_daily_budget_are_rejected_and_counted() {
    let mut env = world();
    env.set("op_budget", 2.0).unwrap();
    env.reset(2);
    let reorder = index(&env, Op::Reorder { sku: 0, bucket: 0 });
    let rejected = |env: &Morpheus| env.signals()[5] == 1.0;
    env.step(&reorder).unwrap();
    env.step(&0).unwrap();
    env.step(&reorder).unwrap();
    assert!(!rejected(&env), "the no-op uses no budget");
    env.step(&reorder).unwrap();
    assert!(rejected(&env));
    for _ in 4..24 {
        env.step(&0).unwrap();
    }
    env.step(&reorder).unwrap();
    assert!(!rejected(&env), "a new day, a new budget");
    let c = env.counters().unwrap();
    assert_eq!((c.totals.rate_limited, c.totals.units_ordered), (1, 60));
}

#[test]
fn a_restored_world_keeps_its_information_layer() {
    let mut env = world();
    env.set("stale_rate", 0.4).unwrap();
    env.set("missing_rate", 0.2).unwrap();
    env.set("op_budget", 5.0).unwrap();
    env.reset(6);
    for h in 0..100 {
        env.step(&(h % 48)).unwrap();
    }
    let mut copy = Morpheus::restore(
        env.config().clone(),
        default_reward_spec(),
        env.snapshot().unwrap(),
    )
    .unwrap();
    for h in 0..200 {
        let x = env.step(&(h * 7 % 48)).unwrap();
        let y = copy.step(&(h * 7 % 48)).unwrap();
        assert_eq!(x.observation, y.observation, "hour {h}");
        assert_eq!(x.reward, y.reward);
    }
    assert_eq!(env.counters(), copy.counters());
}
