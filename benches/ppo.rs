//! PPO's training throughput through the harness, updates included and the trace off: on
//! CartPole (4 inputs, 2 actions) and on the warehouse (46 inputs, 48 actions), with the
//! default 2×64 networks and 10 epochs, with 1 epoch (to show what the update costs), and
//! the random agent on the same loop for scale.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perennial::agents::{Ppo, PpoParams, RandomAgent};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::morpheus::MorpheusConfig;
use perennial::morpheus::{Morpheus, default_reward_spec};
use perennial::prelude::*;
use perennial::world_file::WorldFile;
use std::hint::black_box;

const STEPS: u64 = 5_120;

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

fn ppo<E: Env<Action = usize>>(env: &E, epochs: usize) -> Box<dyn Agent<E>> {
    let spec = env.spec();
    let Space::Discrete { n } = spec.action_space else {
        panic!("the benchmark worlds have Discrete actions");
    };
    let params = PpoParams {
        epochs,
        ..PpoParams::default()
    };
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

fn bench(c: &mut Criterion) {
    let cartpole = || CartPole::new(CartPoleParams::default());
    let mut group = c.benchmark_group("ppo_cartpole_5k_steps");
    group.throughput(Throughput::Elements(STEPS));
    group.sample_size(10);
    group.bench_function("ppo_10_epochs", |b| {
        b.iter(|| black_box(run(cartpole(), ppo(&cartpole(), 10))))
    });
    group.bench_function("ppo_1_epoch", |b| {
        b.iter(|| black_box(run(cartpole(), ppo(&cartpole(), 1))))
    });
    group.bench_function("random", |b| {
        b.iter(|| {
            let env = cartpole();
            let agent = Box::new(RandomAgent::new(env.spec().action_space.clone(), 1));
            black_box(run(env, agent))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("ppo_warehouse_5k_steps");
    group.throughput(Throughput::Elements(STEPS));
    group.sample_size(10);
    group.bench_function("ppo_10_epochs", |b| {
        b.iter(|| {
            let env = warehouse();
            let agent = ppo(&env, 10);
            black_box(run(env, agent))
        })
    });
    group.bench_function("ppo_1_epoch", |b| {
        b.iter(|| {
            let env = warehouse();
            let agent = ppo(&env, 1);
            black_box(run(env, agent))
        })
    });
    group.bench_function("random", |b| {
        b.iter(|| {
            let env = warehouse();
            let agent = Box::new(RandomAgent::new(env.spec().action_space.clone(), 1));
            black_box(run(env, agent))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
