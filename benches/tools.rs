//! Tool calls per second through the `Desk`, and the cost and size of `render_text`, on the
//! default enterprise world.
//!
//! `tools_calls` answers a seeded mix of 1,000 calls (three in four queries of every kind,
//! the rest operations and one-hour waits, so about 250 hours pass) in process, arguments as
//! JSON text as a model sends them; `Throughput::Elements` gives calls per second.
//! `tools_render_text` renders 1,000 hours of a base-stock run (the hour stepped outside
//! the timing is not counted: only the rendering); elements are renderings. Before the
//! groups run, the bench prints to stderr the mean characters per hour of `render_text`
//! over 2,000 base-stock hours (about a quarter of that in tokens for an English BPE).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perennial::agents::{BaseStockAgent, BaseStockParams};
use perennial::harness::Agent;
use perennial::morpheus::api::{Desk, DeskOptions, render_text};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CALLS: u64 = 1_000;
const RENDERS: u64 = 1_000;

fn world() -> Morpheus {
    let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec())
        .expect("the default layout is valid");
    env.reset(7);
    env
}

/// A seeded mix of calls: (name, arguments as JSON text).
fn mix(n: u64) -> Vec<(&'static str, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    (0..n)
        .map(|_| match rng.random_range(0..8u32) {
            0 => ("query_inventory", r#"{"sku": null}"#.to_string()),
            1 => (
                "query_inventory",
                format!(r#"{{"sku": {}}}"#, rng.random_range(0..8u32)),
            ),
            2 => (
                "query_orders",
                r#"{"kind": "customer", "sku": null, "limit": 10}"#.to_string(),
            ),
            3 => ("query_ledger", "{}".to_string()),
            4 => ("query_carriers", "{}".to_string()),
            5 => (
                "query_orders",
                r#"{"kind": "purchase", "sku": null, "limit": 10}"#.to_string(),
            ),
            6 => (
                "reorder",
                format!(
                    r#"{{"sku": {}, "quantity": 50}}"#,
                    rng.random_range(0..8u32)
                ),
            ),
            _ => ("wait", r#"{"hours": 1}"#.to_string()),
        })
        .collect()
}

fn calls(c: &mut Criterion) {
    let mut group = c.benchmark_group("tools_calls");
    group.throughput(Throughput::Elements(CALLS));
    let calls = mix(CALLS);
    group.bench_function("desk_mix", |b| {
        let mut env = world();
        let mut desk = Desk::new(env.config(), DeskOptions::default());
        b.iter(|| {
            for (name, args) in &calls {
                let reply = desk.call(&mut env, name, args).expect("no horizon");
                std::hint::black_box(reply.status);
            }
        });
    });
    group.finish();
}

fn renders(c: &mut Criterion) {
    let mut group = c.benchmark_group("tools_render_text");
    group.throughput(Throughput::Elements(RENDERS));
    group.bench_function("hour", |b| {
        let mut env = world();
        let mut agent = BaseStockAgent::new(env.config(), BaseStockParams::default());
        let mut obs = env.reset(7);
        // The states of 1,000 hours, saved, so the timing holds only the rendering.
        let mut states = Vec::new();
        for _ in 0..RENDERS {
            obs = env.step(&agent.act(&obs)).expect("no horizon").observation;
            states.push(env.snapshot().expect("reset"));
        }
        let worlds: Vec<Morpheus> = states
            .into_iter()
            .map(|s| {
                Morpheus::restore(MorpheusConfig::default(), default_reward_spec(), s)
                    .expect("a snapshot of this layout")
            })
            .collect();
        b.iter(|| {
            for w in &worlds {
                std::hint::black_box(render_text(w).len());
            }
        });
    });
    group.finish();
}

/// Mean characters per hour of `render_text` over 2,000 base-stock hours, on stderr.
fn characters_per_hour(_: &mut Criterion) {
    let mut env = world();
    let mut agent = BaseStockAgent::new(env.config(), BaseStockParams::default());
    let mut obs = env.reset(7);
    let (mut chars, mut longest) = (0usize, 0usize);
    let hours = 2_000;
    for _ in 0..hours {
        let n = render_text(&env).chars().count();
        chars += n;
        longest = longest.max(n);
        obs = env.step(&agent.act(&obs)).expect("no horizon").observation;
    }
    eprintln!(
        "render_text over {hours} base-stock hours: mean {:.1} characters per hour, longest {longest}",
        chars as f64 / hours as f64
    );
}

criterion_group!(benches, characters_per_hour, calls, renders);
criterion_main!(benches);
