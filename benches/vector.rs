//! Vectorized CartPole throughput in env-steps/s: `CartPoleVec` at 1, 64 and 4096 copies,
//! beside the generic `VecEnv<CartPole>` at 4096.
//!
//! Every iteration steps the vector `BATCHES` times with random actions drawn from a seeded
//! ChaCha8 inside the timed loop (64 actions per `u64`), as the peer workloads in
//! `benches/peers/` sample theirs; ended copies reset under `NextStep`, Gymnasium's default.
//! Each benchmark covers about 131,000 env-steps, so the medians compare directly.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use perennial::prelude::*;
use perennial::vector::{AutoresetMode, CartPoleVec, VecEnv};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

const ENV_STEPS: usize = 131_072;

/// Fills `actions` with uniform random 0/1 actions, one random bit each.
fn sample(rng: &mut ChaCha8Rng, actions: &mut [usize]) {
    for chunk in actions.chunks_mut(64) {
        let bits = rng.next_u64();
        for (k, a) in chunk.iter_mut().enumerate() {
            *a = ((bits >> k) & 1) as usize;
        }
    }
}

/// Benchmarks `envs` under `name`: `ENV_STEPS / num_envs` batches per iteration.
fn bench_vector(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    mut envs: impl VectorEnv<Action = usize>,
) {
    let num_envs = envs.num_envs();
    let batches = ENV_STEPS / num_envs;
    group.throughput(Throughput::Elements((num_envs * batches) as u64));
    envs.reset(1).expect("no regimes");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut actions = vec![0; num_envs];
    group.bench_function(name, |b| {
        b.iter(|| {
            let mut total = 0.0;
            for _ in 0..batches {
                sample(&mut rng, &mut actions);
                let step = envs.step(&actions).expect("0/1 actions, NextStep");
                total += step.rewards()[0];
            }
            black_box(total)
        })
    });
}

fn cartpole_vec(c: &mut Criterion) {
    let mut group = c.benchmark_group("cartpole_vec_random_actions");
    for num_envs in [1, 64, 4096] {
        let envs = CartPoleVec::new(num_envs, CartPoleParams::default(), AutoresetMode::NextStep);
        bench_vector(&mut group, &format!("{num_envs}_envs_1_thread"), envs);
    }
    group.finish();
}

fn vec_env(c: &mut Criterion) {
    let mut group = c.benchmark_group("vec_env_cartpole_random_actions");
    let copies = (0..4096)
        .map(|_| CartPole::new(CartPoleParams::default()))
        .collect();
    let envs = VecEnv::new(copies, AutoresetMode::NextStep).expect("4096 cartpoles");
    bench_vector(&mut group, "4096_envs", envs);
    group.finish();
}

criterion_group!(benches, cartpole_vec, vec_env);
criterion_main!(benches);
