//! Evaluation throughput: rows per second through `evaluate`, one group per format.
//!
//! - `eval_jsonl`: seeded generated JSON Lines traces of 100k and 1M rows;
//! - `eval_parquet`: CartPole runs of 1M and 10M steps (random agent, auto-reset, physics
//!   cycling every 100,000 steps) traced to Parquet by the harness.
//!
//! Before the groups, in a small process, `eval_peak_rss/<format>/<rows>` prints the peak
//! RSS of one evaluation of each trace (it should stay flat as the trace grows 10x) and
//! `eval_cpu/<format>/<rows>` the wall and CPU time (user + system) of three evaluations,
//! for a machine too loaded for wall-clock medians to mean much.

use std::path::{Path, PathBuf};
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use perennial::agents::RandomAgent;
use perennial::eval::{EvalOptions, evaluate};
use perennial::harness::{Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::trace::{RowRecord, RunIdentity, TraceFormat, events_path};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SIZES: [u64; 2] = [100_000, 1_000_000];
const PARQUET_SIZES: [u64; 2] = [1_000_000, 10_000_000];
const LABELS: [&str; 3] = ["calm", "storm", "drought"];

fn trace_path(format: TraceFormat, rows: u64) -> PathBuf {
    std::env::temp_dir().join(format!(
        "perennial-bench-eval-{}-{rows}.{}",
        std::process::id(),
        format.extension()
    ))
}

/// Set in a child process of the bench: write the trace `<rows> <path>` and exit.
const WRITE_VAR: &str = "PERENNIAL_BENCH_EVAL_WRITE";

/// Every bench trace, in the order the figures are printed.
fn every_trace() -> impl Iterator<Item = (TraceFormat, u64)> {
    SIZES
        .map(|rows| (TraceFormat::Jsonl, rows))
        .into_iter()
        .chain(PARQUET_SIZES.map(|rows| (TraceFormat::Parquet, rows)))
}

/// The bench trace of `format` and `rows`, written if it is not there yet, by a child
/// process: the memory writing takes (the Parquet writer's buffers, which the allocator
/// keeps once freed) then stays out of this process's peak RSS.
fn trace(format: TraceFormat, rows: u64) -> PathBuf {
    let path = trace_path(format, rows);
    if !path.exists() {
        let status = std::process::Command::new(std::env::current_exe().expect("the bench exe"))
            .env(WRITE_VAR, format!("{rows} {}", path.display()))
            .status()
            .expect("start the process writing the bench trace");
        assert!(status.success(), "writing the bench trace failed");
    }
    path
}

/// In the child process [`trace`] starts: writes the trace and returns true.
fn write_asked() -> bool {
    let Ok(task) = std::env::var(WRITE_VAR) else {
        return false;
    };
    let (rows, path) = task.split_once(' ').expect("`<rows> <path>`");
    let (rows, path): (u64, &Path) = (rows.parse().expect("a row count"), Path::new(path));
    match TraceFormat::from_path(path) {
        TraceFormat::Parquet => write_cartpole(path, rows),
        _ => write_trace(path, rows),
    }
    true
}

/// Removes a bench trace and the events table the harness wrote beside it.
fn remove(path: &Path) {
    let format = TraceFormat::from_path(path);
    for p in [path.to_path_buf(), events_path(path, format)] {
        let _ = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
    }
}

/// CartPole with a random agent and auto-reset, gravity and pole length cycling every
/// 100,000 steps, traced to Parquet.
fn write_cartpole(path: &Path, rows: u64) {
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), 1);
    let regimes = vec![
        Regime::new("earth", &[]),
        Regime::new("heavy_gravity", &[("gravity", 15.0)]),
        Regime::new("long_pole", &[("length", 1.0)]),
    ];
    let plan = Plan::cycle(&["earth", "heavy_gravity", "earth", "long_pole"], 100_000);
    let config = HarnessConfig {
        steps: rows,
        auto_reset: true,
        ..HarnessConfig::default()
    };
    Harness::new(env, agent, 1)
        .scheduler(Scheduler::new(regimes, plan, 1).expect("a valid cycle"))
        .config(config)
        .trace(path, TraceFormat::Parquet)
        .run()
        .expect("random actions are valid");
}

/// A learning-looking run: three labels cycling every 5000 steps, reward rising within each
/// interval plus noise, two components, a payout and a ceiling, episodes of random length.
fn write_trace(path: &Path, rows: u64) {
    let identity = RunIdentity {
        run_id: format!("bench-{rows}"),
        seed: 1,
        algorithm_id: "bench".into(),
        task: "synthetic".into(),
        notify: Default::default(),
    };
    let components = ["progress".to_string(), "cost".to_string()];
    let payouts = ["bonus".to_string()];
    let columns = perennial::trace::TraceColumns {
        components: components.to_vec(),
        payouts: payouts.to_vec(),
        record_transitions: false,
        bound: false,
        roles: Vec::new(),
    };
    let mut w = perennial::trace::create(path, TraceFormat::Jsonl, &identity, &columns)
        .expect("create the bench trace");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (mut episode, mut episode_step) = (0u64, 0u64);
    let mut episode_len = rng.random_range(50..400u64);
    for step in 0..rows {
        let k = (step / 5000) as usize;
        let progress_in = (step % 5000) as f64 / 5000.0;
        let base = [1.0, 0.2, 0.6][k % 3];
        let c = [
            base + progress_in + rng.random::<f64>() * 0.5,
            0.1 * rng.random::<f64>(),
        ];
        let done = episode_step + 1 == episode_len;
        let bonus = [10.0];
        let payout: &[f64] = if done { &bonus } else { &[] };
        let reward = c[0] - c[1] + payout.iter().sum::<f64>();
        w.write_row(&RowRecord {
            step,
            episode,
            episode_step,
            reward,
            components: &c,
            payouts: payout,
            regime: LABELS[k % 3],
            origin: if step == 0 {
                Origin::Initial
            } else {
                Origin::Scheduled
            },
            terminated: done,
            truncated: false,
            ceiling: Some(if done { 13.0 } else { 3.0 }),
            bound: None,
            role_rewards: &[],
            obs: None,
            action_json: None,
            role_obs: &[],
            role_actions: &[],
        })
        .expect("write a bench row");
        episode_step += 1;
        if done {
            episode += 1;
            episode_step = 0;
            episode_len = rng.random_range(50..400u64);
        }
    }
    w.flush().expect("flush the bench trace");
}

fn throughput(c: &mut Criterion) {
    for (format, sizes) in [
        (TraceFormat::Jsonl, SIZES),
        (TraceFormat::Parquet, PARQUET_SIZES),
    ] {
        let mut group = c.benchmark_group(format!("eval_{}", format.extension()));
        group.sample_size(10);
        for rows in sizes {
            let path = trace(format, rows);
            group.throughput(Throughput::Elements(rows));
            group.bench_with_input(BenchmarkId::from_parameter(rows), &path, |b, path| {
                b.iter(|| {
                    let report = evaluate(std::slice::from_ref(path), &EvalOptions::default())
                        .expect("evaluate the bench trace");
                    assert_eq!(report.runs[0].steps, rows);
                    report
                })
            });
            remove(&path);
        }
        group.finish();
    }
}

/// User plus system CPU time of this process, in seconds (Linux `/proc/self/stat`, clock
/// ticks of 10 ms).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let field = |n: usize| rest.split_whitespace().nth(n)?.parse::<f64>().ok();
    Some((field(11)? + field(12)?) / 100.0)
}

/// VmHWM from /proc/self/status, in KiB.
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Peak RSS of one evaluation of each trace, measured first, while the process is small:
/// the high-water mark is reset (Linux `clear_refs` 5) before each, so the figures compare
/// directly.
fn peak_memory(_c: &mut Criterion) {
    for (format, rows) in every_trace() {
        let path = trace(format, rows);
        let name = format!("{}/{rows}", format.extension());
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let before = peak_kib();
        let report = evaluate(std::slice::from_ref(&path), &EvalOptions::default())
            .expect("evaluate the bench trace");
        let intervals = report.runs[0].intervals.len();
        drop(report);
        match (reset, before, peak_kib()) {
            (true, Some(before), Some(after)) => println!(
                "eval_peak_rss/{name}: {after} KiB peak ({before} KiB before; {intervals} intervals)"
            ),
            _ => println!("eval_peak_rss/{name}: not measurable here (needs Linux /proc)"),
        }
    }
}

/// Wall and CPU time of three evaluations of each trace, and their medians.
fn cpu_time(_c: &mut Criterion) {
    for (format, rows) in every_trace() {
        let path = trace(format, rows);
        let mut times = Vec::new();
        for _ in 0..3 {
            let (cpu, wall) = (cpu_seconds(), Instant::now());
            let report = evaluate(std::slice::from_ref(&path), &EvalOptions::default())
                .expect("evaluate the bench trace");
            assert_eq!(report.runs[0].steps, rows);
            let wall = wall.elapsed().as_secs_f64();
            times.push((wall, cpu_seconds().zip(cpu).map(|(b, a)| b - a)));
        }
        let runs: Vec<String> = times
            .iter()
            .map(|(wall, cpu)| match cpu {
                Some(cpu) => format!("{wall:.3} s wall / {cpu:.2} s CPU"),
                None => format!("{wall:.3} s wall"),
            })
            .collect();
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let rate = rows as f64 / times[1].0 / 1e6;
        let mut cpus: Vec<f64> = times.iter().filter_map(|t| t.1).collect();
        cpus.sort_by(f64::total_cmp);
        let cpu_rate = cpus
            .get(1)
            .map(|c| format!(", {:.2} M rows per CPU second", rows as f64 / c / 1e6))
            .unwrap_or_default();
        println!(
            "eval_cpu/{}/{rows}: {} (median {rate:.2} M rows/s wall{cpu_rate})",
            format.extension(),
            runs.join(", ")
        );
    }
}

criterion_group!(benches, peak_memory, cpu_time, throughput);

fn main() {
    if write_asked() {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
