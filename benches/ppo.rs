//! PPO's training throughput through the harness, updates included and the trace off: on
//! CartPole (4 inputs, 2 actions) and on the warehouse (46 inputs, 48 actions), with the
//! default parameters (2×64 networks, 4 epochs of minibatches of 64 over 256-step windows),
//! with 1 epoch (to show what an epoch costs), and the random agent on the same loop for
//! scale. Each iteration builds a fresh agent and world and runs 10,240 steps (40 updates).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perennial::agents::{Ppo, PpoParams, RandomAgent};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::morpheus::MorpheusConfig;
use perennial::morpheus::{Morpheus, default_reward_spec};
use perennial::prelude::*;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;
use std::hint::black_box;

const STEPS: u64 = 10_240;

fn config() -> HarnessConfig {
    HarnessConfig {
        steps: STEPS,
        window_steps: 256,
        auto_reset: true,
        ..HarnessConfig::default()
    }
}

fn run<E: Env<Action = usize> + Shiftable>(env: E, agent: Box<dyn Agent<E>>) -> u64 {
    Harness::new(env, agent, 1)
        .config(config())
        .run()
        .expect("the agents' actions are valid")
        .steps
}

/// PPO with the default parameters, or with `epochs` epochs.
fn ppo<E: Env<Action = usize>>(env: &E, epochs: Option<usize>) -> Box<dyn Agent<E>> {
    let spec = env.spec();
    let Space::Discrete { n } = spec.action_space else {
        panic!("the benchmark worlds have Discrete actions");
    };
    let mut params = PpoParams::default();
    if let Some(epochs) = epochs {
        params.epochs = epochs;
    }
    Box::new(Ppo::new(spec.observation_space.len(), n, params, 1).expect("valid parameters"))
}

fn warehouse() -> Morpheus {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/warehouse.toml");
    let world = WorldFile::load(&path).expect("the shipped world loads");
    let reward = world.reward_spec().unwrap_or_else(default_reward_spec);
    let layout = world
        .params::<MorpheusConfig>()
        .cloned()
        .expect("warehouse.toml is an enterprise world");
    Morpheus::new(layout, reward).expect("the shipped world builds")
}

/// The three lines of one world's group: PPO with defaults, with 1 epoch, and random.
fn group<E: Env<Action = usize> + Shiftable>(c: &mut Criterion, name: &str, world: fn() -> E) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(STEPS));
    group.sample_size(10);
    for (line, epochs) in [("ppo_defaults", None), ("ppo_1_epoch", Some(1))] {
        group.bench_function(line, |b| {
            b.iter(|| {
                let env = world();
                let agent = ppo(&env, epochs);
                black_box(run(env, agent))
            })
        });
    }
    group.bench_function("random", |b| {
        b.iter(|| {
            let env = world();
            let agent = Box::new(RandomAgent::new(env.spec().action_space.clone(), 1));
            black_box(run(env, agent))
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    group(c, "ppo_cartpole_10k_steps", || {
        CartPole::new(CartPoleParams::default())
    });
    group(c, "ppo_warehouse_10k_steps", warehouse);
}

criterion_group!(benches, bench);
criterion_main!(benches);
