//! The harness on CartPole with a random agent: with a JSONL trace, with tracing off, and
//! the bare env loop with the same agent, in one run so their medians compare.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perennial::agents::RandomAgent;
use perennial::harness::{Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::trace::TraceFormat;
use std::hint::black_box;

mod support;

const STEPS: u64 = 200_000;

fn config() -> HarnessConfig {
    HarnessConfig {
        steps: STEPS,
        auto_reset: true,
        ..HarnessConfig::default()
    }
}

fn harness(traced: bool) -> u64 {
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), 1);
    let mut h = Harness::new(env, agent, 1).config(config());
    if traced {
        let path =
            std::env::temp_dir().join(format!("perennial-bench-{}.jsonl", std::process::id()));
        h = h.trace(path, TraceFormat::Jsonl);
    }
    h.run().expect("random actions are valid").steps
}

fn bare_loop() -> f64 {
    let mut env = CartPole::new(CartPoleParams::default());
    perennial::example::random_loop(&mut env, STEPS, 1).expect("random actions are valid")
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("harness_cartpole_random_200k_steps");
    group.throughput(Throughput::Elements(STEPS));
    group.bench_function("bare_env_loop", |b| b.iter(|| black_box(bare_loop())));
    group.bench_function("harness_no_trace", |b| b.iter(|| black_box(harness(false))));
    group.bench_function("harness_jsonl_trace", |b| {
        b.iter(|| black_box(harness(true)))
    });
    group.finish();
    support::remove_outputs(&format!("perennial-bench-{}.", std::process::id()));
}

criterion_group!(benches, bench);
criterion_main!(benches);
