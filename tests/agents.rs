//! The baseline agents do what they claim: the learners beat random, the controllers
//! balance the pole and keep the warehouse profitable.

use perennial::agents::{
    ActorCritic, ActorCriticParams, AdaptiveBaseStock, AdaptiveParams, BalanceAgent,
    BaseStockAgent, BaseStockParams, RandomAgent,
};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;

/// Mean return per ended episode over the whole run (`auto_reset` on): total reward
/// divided by the number of episodes that ended.
fn mean_episode_return<A: Agent<CartPole>>(agent: A, seed: u64, steps: u64) -> f64 {
    let config = HarnessConfig {
        steps,
        auto_reset: true,
        window_steps: 128,
        ..HarnessConfig::default()
    };
    let env = CartPole::new(CartPoleParams::default());
    let summary = Harness::new(env, agent, seed).config(config).run().unwrap();
    summary.total_reward / summary.episodes_ended.max(1) as f64
}

#[test]
fn actor_critic_beats_random_on_cartpole_on_several_seeds() {
    for seed in [1, 2, 3] {
        let space = Space::Discrete { n: 2 };
        let random = mean_episode_return(RandomAgent::new(space, seed), seed, 40_000);
        let learner = mean_episode_return(
            ActorCritic::new(4, 2, ActorCriticParams::default(), seed),
            seed,
            40_000,
        );
        eprintln!("seed {seed}: random {random:.1} learner {learner:.1}");
        assert!(
            learner > 2.0 * random,
            "seed {seed}: learner {learner:.1} vs random {random:.1}"
        );
    }
}

#[test]
fn balance_controller_keeps_the_pole_up() {
    let mean = mean_episode_return(BalanceAgent::default(), 0, 20_000);
    assert!(mean > 150.0, "{mean}");
}

fn warehouse_mean_reward<A: Agent<Morpheus>>(agent: A, seed: u64, steps: u64) -> f64 {
    let env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
    let config = HarnessConfig {
        steps,
        ..HarnessConfig::default()
    };
    let summary = Harness::new(env, agent, seed).config(config).run().unwrap();
    summary.total_reward / summary.steps as f64
}

#[test]
fn adaptive_base_stock_learns_and_beats_random_on_the_warehouse_on_several_seeds() {
    let cfg = MorpheusConfig::default();
    let space = Space::Discrete {
        n: cfg.action_count(),
    };
    for seed in [1, 2, 3] {
        let random = warehouse_mean_reward(RandomAgent::new(space.clone(), seed), seed, 30_000);
        let env = Morpheus::new(cfg.clone(), default_reward_spec()).unwrap();
        let agent = AdaptiveBaseStock::new(&cfg, AdaptiveParams::default(), seed);
        let config = HarnessConfig {
            steps: 30_000,
            ..HarnessConfig::default()
        };
        let mut h = Harness::new(env, agent, seed).config(config);
        h.advance(10_000).unwrap();
        let first = h.summary().total_reward / 10_000.0;
        h.advance(u64::MAX).unwrap();
        let learned = h.agent().learned();
        let summary = h.finish().unwrap();
        let last = (summary.total_reward - first * 10_000.0) / 20_000.0;
        eprintln!(
            "seed {seed}: random {random:.3}, learner first 10k {first:.3}, last 20k {last:.3}, learned {learned:?}"
        );
        assert!(
            last > first,
            "seed {seed}: it improves ({first:.3} -> {last:.3})"
        );
        assert!(
            last > random + 2.0,
            "seed {seed}: learner {last:.3} vs random {random:.3}"
        );
        assert!(learned.reorder_hours > AdaptiveParams::default().start.reorder_hours);
    }
}

#[test]
fn base_stock_beats_random_on_the_warehouse() {
    let cfg = MorpheusConfig::default();
    let space = Space::Discrete {
        n: cfg.action_count(),
    };
    let random = warehouse_mean_reward(RandomAgent::new(space, 4), 4, 20_000);
    let base = warehouse_mean_reward(
        BaseStockAgent::new(&cfg, BaseStockParams::default()),
        4,
        20_000,
    );
    assert!(
        base > random + 2.0,
        "base-stock {base:.3} vs random {random:.3}"
    );
}
