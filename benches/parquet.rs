//! Tracing cost by format: the CartPole harness with a random agent writing no trace, JSON
//! Lines and Parquet in one run so their medians compare, and `eval`'s row source reading
//! each back. The Parquet writer encodes and writes its parts on a thread of its own, so
//! its figure is wall time with that thread running beside the stepping one. A 1M-step run
//! pays the writer's fixed costs (its threads, its first and last parts, the final sync)
//! over few rows; the 10M-step group shows the rate of a long run, which is what the trace
//! is for.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perennial::agents::RandomAgent;
use perennial::harness::{Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::trace::{TraceFormat, TraceReader};
use std::hint::black_box;
use std::path::PathBuf;

mod support;

const STEPS: u64 = 1_000_000;

fn path(format: TraceFormat) -> PathBuf {
    std::env::temp_dir().join(format!(
        "perennial-bench-parquet-{}.{}",
        std::process::id(),
        format.extension()
    ))
}

fn harness(format: Option<TraceFormat>, steps: u64) -> u64 {
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), 1);
    let config = HarnessConfig {
        steps,
        auto_reset: true,
        ..HarnessConfig::default()
    };
    let mut h = Harness::new(env, agent, 1).config(config);
    if let Some(format) = format {
        h = h.trace(path(format), format);
    }
    h.run().expect("random actions are valid").steps
}

fn read_all(format: TraceFormat) -> f64 {
    let mut reader = TraceReader::open(&[path(format)]);
    let mut total = 0.0;
    while let Some(at) = reader.next_ref() {
        total += at.expect("the bench wrote this trace").row.reward;
    }
    total
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("trace_cartpole_random_1m_steps");
    group.throughput(Throughput::Elements(STEPS));
    group.sample_size(10);
    group.bench_function("harness_no_trace", |b| {
        b.iter(|| black_box(harness(None, STEPS)))
    });
    for format in [TraceFormat::Jsonl, TraceFormat::Parquet] {
        group.bench_function(format!("harness_{}", format.extension()), |b| {
            b.iter(|| black_box(harness(Some(format), STEPS)))
        });
    }
    for format in [TraceFormat::Jsonl, TraceFormat::Parquet] {
        group.bench_function(format!("read_{}", format.extension()), |b| {
            b.iter(|| black_box(read_all(format)))
        });
    }
    group.finish();

    let long = 10 * STEPS;
    let mut group = c.benchmark_group("trace_cartpole_random_10m_steps");
    group.throughput(Throughput::Elements(long));
    group.sample_size(10);
    group.bench_function("harness_no_trace", |b| {
        b.iter(|| black_box(harness(None, long)))
    });
    group.bench_function("harness_parquet", |b| {
        b.iter(|| black_box(harness(Some(TraceFormat::Parquet), long)))
    });
    group.finish();
    support::remove_outputs(&format!("perennial-bench-parquet-{}.", std::process::id()));
}

criterion_group!(benches, bench);
criterion_main!(benches);
