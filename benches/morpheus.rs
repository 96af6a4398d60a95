//! Steps per second of the MORPHEUS world: the default layout and one ten times larger.
//!
//! Each scenario steps a seeded world with a seeded random policy (10% random actions,
//! otherwise no-op) for a batch of steps (10,000 on the default layout, 1,000 on the large one); criterion reports the time per batch and, through
//! `Throughput::Elements`, steps per second.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn scenario(c: &mut Criterion, name: &str, config: MorpheusConfig, steps: u64) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(steps));
    group.bench_function("step", |b| {
        let mut env = Morpheus::new(config.clone(), default_reward_spec())
            .expect("the bench layouts are valid");
        let n = config.action_count();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        env.reset(7);
        b.iter(|| {
            for _ in 0..steps {
                let a = if rng.random_bool(0.1) {
                    rng.random_range(0..n)
                } else {
                    0
                };
                let t = env.step(&a).expect("no horizon, valid action");
                std::hint::black_box(t.reward);
            }
        });
    });
    group.finish();
}

fn default_layout(c: &mut Criterion) {
    scenario(c, "morpheus_default", MorpheusConfig::default(), 10_000);
}

fn large_layout(c: &mut Criterion) {
    scenario(
        c,
        "morpheus_10x",
        MorpheusConfig::default().scaled(10),
        1_000,
    );
}

criterion_group!(benches, default_layout, large_layout);
criterion_main!(benches);
