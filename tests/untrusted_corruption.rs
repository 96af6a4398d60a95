//! Bytes perennial wrote, then damaged: random overwrites of a Parquet trace's parts and of
//! its events table. Each test is named after the cause of issue 34 it covers (13:
//! corruption goes unnoticed); a damaged file is an error (exit 2) naming the part, or it
//! leaves the metrics exactly as they were.

use std::path::{Path, PathBuf};

mod common;
use common::{Scratch, cli, path, text};

const CARTPOLE: &str = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"b\"]\nevery = 70\n\n[harness]\nauto_reset = true\n";

/// A seeded xorshift: the byte positions and values of the overwrites, the same on every
/// run of the test.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A Parquet trace of 600 CartPole steps in six parts (one per window flush), with its
/// events table, in `s`.
fn parquet_trace(s: &Scratch) -> PathBuf {
    let world = s.join("w.toml");
    std::fs::write(&world, CARTPOLE).unwrap();
    let trace = s.join("t.parquet");
    let out = cli(&[
        "run",
        path(&world),
        "--steps",
        "600",
        "--seed",
        "3",
        "--window-steps",
        "100",
        "--format",
        "parquet",
        "--part-seconds",
        "0",
        "--trace",
        path(&trace),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    trace
}

/// The part files of a Parquet folder, in name order.
fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    parts.sort();
    parts
}

/// `eval --json` of `trace` (with `--events` when asked): its exit code, its report
/// without the events and warnings, and its stderr.
fn metrics(trace: &Path, events: bool) -> (Option<i32>, serde_json::Value, String) {
    let mut args = vec!["eval", path(trace), "--json"];
    if events {
        args.push("--events");
    }
    let out = cli(&args);
    let mut report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    if let Some(map) = report.as_object_mut() {
        map.remove("events");
        map.remove("warnings");
    }
    (out.status.code(), report, text(&out.stderr))
}

/// Overwrites eight random bytes of a random part of `dir`, `rounds` times (each on a
/// fresh copy of the trace), and checks every eval of the damaged trace.
fn fuzz(s: &Scratch, trace: &Path, dir: &Path, events: bool, rounds: usize, seed: u64) {
    let (code, clean, err) = metrics(trace, events);
    assert_eq!(code, Some(0), "{err}");
    let mut rng = Xorshift(seed);
    let (mut refused, mut unchanged) = (0, 0);
    for round in 0..rounds {
        let backup = s.join(&format!("backup-{round}"));
        copy_dir(dir, &backup);
        let all = parts(dir);
        let part = &all[rng.below(all.len())];
        let mut bytes = std::fs::read(part).unwrap();
        let at = rng.below(bytes.len().saturating_sub(8).max(1));
        for b in bytes.iter_mut().skip(at).take(8) {
            *b = rng.next() as u8;
        }
        std::fs::write(part, &bytes).unwrap();
        let (code, report, err) = metrics(trace, events);
        let name = part.file_name().unwrap().to_string_lossy().into_owned();
        match code {
            Some(2) => {
                assert!(
                    err.contains(&name),
                    "round {round}: byte {at} of {name} damaged; the error does not name the part: {err}"
                );
                refused += 1;
            }
            Some(0) => {
                assert_eq!(
                    report, clean,
                    "round {round}: byte {at} of {name} damaged and the metrics changed with exit 0"
                );
                unchanged += 1;
            }
            other => panic!("round {round}: byte {at} of {name}: exit {other:?}: {err}"),
        }
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::rename(&backup, dir).unwrap();
    }
    assert_eq!(refused + unchanged, rounds);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn corruption_goes_unnoticed_no_more_random_overwrites_of_parquet_parts() {
    let s = Scratch::new("corrupt-parts");
    let trace = parquet_trace(&s);
    assert!(parts(&trace).len() >= 3, "the trace has several parts");
    fuzz(&s, &trace, &trace, false, 48, 0x9E37_79B9_7F4A_7C15);
}

#[test]
fn corruption_goes_unnoticed_no_more_random_overwrites_of_an_events_table() {
    let s = Scratch::new("corrupt-events");
    let trace = parquet_trace(&s);
    let events = s.join("t.events.parquet");
    assert!(events.is_dir(), "the run wrote its events table");
    fuzz(&s, &trace, &events, true, 24, 0xD1B5_4A32_D192_ED03);
}

#[test]
fn corruption_goes_unnoticed_no_more_a_reward_beyond_the_range_is_refused() {
    let s = Scratch::new("corrupt-range");
    let trace = s.join("t.jsonl");
    let row = |step: u64, reward: &str| {
        format!(
            "{{\"run_id\":\"r\",\"seed\":1,\"algorithm_id\":\"x\",\"task\":\"t\",\"step\":{step},\"episode\":0,\"episode_step\":{step},\"reward\":{reward},\"components\":{{}},\"payout\":{{}},\"regime\":\"a\",\"regime_origin\":\"initial\",\"terminated\":false,\"truncated\":false,\"ceiling\":1.0}}\n"
        )
    };
    std::fs::write(&trace, row(0, "1.0") + &row(1, "2e300")).unwrap();
    let out = cli(&["eval", path(&trace)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("t.jsonl:2") && err.contains("1e30"), "{err}");
}
