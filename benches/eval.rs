//! Evaluation throughput: JSON Lines rows per second through `evaluate`, on seeded
//! generated traces of 100k and 1M rows, and the peak RSS of evaluating each (it should stay
//! flat as the trace grows 10x).

use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use perennial::eval::{EvalOptions, evaluate};
use perennial::regime::Origin;
use perennial::trace::{RowRecord, RunIdentity, TraceFormat};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SIZES: [u64; 2] = [100_000, 1_000_000];
const LABELS: [&str; 3] = ["calm", "storm", "drought"];

fn trace_path(rows: u64) -> PathBuf {
    std::env::temp_dir().join(format!(
        "perennial-bench-eval-{}-{rows}.jsonl",
        std::process::id()
    ))
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
            obs: None,
            action_json: None,
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
    let mut group = c.benchmark_group("eval_jsonl");
    group.sample_size(10);
    for rows in SIZES {
        let path = trace_path(rows);
        if !path.exists() {
            write_trace(&path, rows);
        }
        group.throughput(Throughput::Elements(rows));
        group.bench_with_input(BenchmarkId::from_parameter(rows), &path, |b, path| {
            b.iter(|| {
                let report = evaluate(std::slice::from_ref(path), &EvalOptions::default())
                    .expect("evaluate the bench trace");
                assert_eq!(report.runs[0].steps, rows);
                report
            })
        });
        let _ = std::fs::remove_file(&path);
    }
    group.finish();
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
    for rows in SIZES {
        let path = trace_path(rows);
        if !path.exists() {
            write_trace(&path, rows);
        }
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let before = peak_kib();
        let report = evaluate(std::slice::from_ref(&path), &EvalOptions::default())
            .expect("evaluate the bench trace");
        let intervals = report.runs[0].intervals.len();
        drop(report);
        match (reset, before, peak_kib()) {
            (true, Some(before), Some(after)) => println!(
                "eval_peak_rss/{rows}: {after} KiB peak ({before} KiB before; {intervals} intervals)"
            ),
            _ => println!("eval_peak_rss/{rows}: not measurable here (needs Linux /proc)"),
        }
    }
}

criterion_group!(benches, peak_memory, throughput);
criterion_main!(benches);
