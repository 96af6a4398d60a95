//! Forks of the default warehouse (`worlds/warehouse.toml`) after 1,000 hours of
//! base-stock: the cost of one fork in the process (a snapshot of the running harness, and
//! a restore of it into a freshly built world and agent: `restore` continues the saved
//! agent with its window, `restore_without_agent` is what each rollout of `run_rollouts`
//! with a fresh agent does), the cost of a snapshot written as JSON and read back (as a
//! file, a pickle or a server would), and the wall time of K = 64 rollouts of 24 hours with
//! a random agent on the default jobs (the cores), JSON Lines traces and events tables
//! written.

use criterion::{Criterion, criterion_group, criterion_main};
use perennial::agents::{BaseStockAgent, BaseStockParams};
use perennial::fork::{ForkPlan, run_rollouts};
use perennial::harness::{Harness, HarnessConfig, Snapshot};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::registry::Registry;
use perennial::seed::{self, Stream};
use perennial::trace::TraceFormat;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;
use std::hint::black_box;

mod support;

const SOURCE_HOURS: u64 = 1_000;

fn bench(c: &mut Criterion) {
    let registry = Registry::builtin();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/warehouse.toml");
    let world = WorldFile::load_with(&path, &registry).expect("the shipped warehouse loads");
    let kind = registry.kind(world.kind()).expect("a built-in kind");
    let layout = world
        .params::<MorpheusConfig>()
        .expect("an enterprise world");
    let reward = world.reward_spec().unwrap_or_else(default_reward_spec);
    let env = Morpheus::new(layout.clone(), reward).expect("the warehouse builds");
    let agent = BaseStockAgent::new(env.config(), BaseStockParams::default());
    let mut harness = Harness::new(env, agent, 0)
        .scheduler(
            world
                .scheduler(seed::derive(0, Stream::Scheduler, 0))
                .expect("the shipped plan is valid"),
        )
        .config(HarnessConfig {
            steps: SOURCE_HOURS,
            ..HarnessConfig::default()
        });
    harness.advance(SOURCE_HOURS).expect("base-stock runs");
    let snapshot = harness
        .snapshot()
        .expect("the warehouse supports snapshots");

    let options = world.agent_options("random");
    let dir = std::env::temp_dir().join(format!("perennial-bench-fork-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    let jobs = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let plan = |rollouts: u64| ForkPlan {
        snapshot: &snapshot,
        world: &world,
        agent: "random",
        agent_options: &options,
        saved_agent: false,
        seed: 0,
        rollouts,
        steps: 24,
        format: TraceFormat::Jsonl,
        record_transitions: false,
        dir: &dir,
        jobs,
    };

    let mut group = c.benchmark_group("fork_warehouse");
    group.bench_function("snapshot", |b| {
        b.iter(|| black_box(harness.snapshot().expect("snapshots")))
    });
    let one = plan(1);
    let base_stock = world.agent_options("base-stock");
    let saved = ForkPlan {
        agent: "base-stock",
        agent_options: &base_stock,
        saved_agent: true,
        ..one.clone()
    };
    // What every rollout of `run_rollouts` with a fresh agent restores: the snapshot
    // without the saved agent's window.
    let stripped = snapshot.without_agent();
    let light = ForkPlan {
        snapshot: &stripped,
        ..one.clone()
    };
    for (name, plan) in [("restore", &saved), ("restore_without_agent", &light)] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(plan.restore(kind, 0).expect("restores")))
        });
    }
    for (name, base, without_agent) in [
        ("snapshot_and_restore", &saved, false),
        ("snapshot_and_restore_without_agent", &one, true),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let snapshot = harness.snapshot().expect("snapshots");
                let snapshot = if without_agent {
                    snapshot.without_agent()
                } else {
                    snapshot
                };
                let plan = ForkPlan {
                    snapshot: &snapshot,
                    ..base.clone()
                };
                black_box(plan.restore(kind, 0).expect("restores"))
            })
        });
    }
    // Out of the process: the snapshot written, then read back and checked in full.
    group.bench_function("to_json_and_from_json", |b| {
        b.iter(|| {
            let text = snapshot.to_json().expect("writes");
            black_box(Snapshot::from_json(&text).expect("reads"))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("fork_warehouse_rollouts");
    group.sample_size(10);
    let many = plan(64);
    group.bench_function(format!("k64_x_24h_jobs{jobs}"), |b| {
        b.iter(|| black_box(run_rollouts(kind, &many).expect("rollouts run").len()))
    });
    group.finish();
    support::remove_outputs(&format!("perennial-bench-fork-{}", std::process::id()));
}

criterion_group!(benches, bench);
criterion_main!(benches);
