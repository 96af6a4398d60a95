//! Property tests over hostile input: world files, trace files and action sequences.
//!
//! Each property runs a bounded number of cases (`PROPTEST_CASES` overrides it), so CI
//! stays fast; a longer search is `PROPTEST_CASES=5000 cargo test --release --test properties`.

use std::path::{Path, PathBuf};

use perennial::env::{Env, EnvError};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::regime::Shiftable;
use perennial::registry::Registry;
use perennial::trace::TraceReader;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;
use proptest::prelude::*;

mod common;
use common::{Scratch, temp};

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn shipped(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("worlds")
            .join(name),
    )
    .unwrap()
}

/// A small edit of a text: delete, insert or replace a short span.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    Replace(usize, String),
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for e in edits {
        let len = bytes.len().max(1);
        match e {
            Edit::Delete(at, n) => {
                let at = at % len;
                let end = (at + n).min(bytes.len());
                bytes.drain(at.min(bytes.len())..end);
            }
            Edit::Insert(at, s) => {
                let at = (at % len).min(bytes.len());
                bytes.splice(at..at, s.bytes());
            }
            Edit::Replace(at, s) => {
                let at = (at % len).min(bytes.len());
                let end = (at + s.len()).min(bytes.len());
                bytes.splice(at..end, s.bytes());
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn edit() -> impl Strategy<Value = Edit> {
    let snippet = prop_oneof![
        "[a-z_]{1,12}",
        "-?[0-9]{1,6}(\\.[0-9]{1,3})?",
        Just("=".to_string()),
        Just("\n".to_string()),
        Just("[[regimes]]\nlabel = \"x\"\n".to_string()),
        Just("\"".to_string()),
        Just("[".to_string()),
        Just("nan".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1e308".to_string()),
    ];
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), snippet.clone()).prop_map(|(a, s)| Edit::Insert(a, s)),
        (any::<usize>(), snippet).prop_map(|(a, s)| Edit::Replace(a, s)),
    ]
}

proptest! {
    #![proptest_config(cases(96))]

    /// A mangled world file loads or gets an error naming the file; it never panics.
    #[test]
    fn world_file_loader_never_panics(
        base in prop_oneof![Just("warehouse.toml"), Just("logistics.toml"), Just("cartpole-drift.toml")],
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let text = apply(&shipped(base), &edits);
        match WorldFile::parse(&text, Path::new("mangled.toml")) {
            Ok(world) => {
                // A file that loads is one that runs: its plan makes a scheduler, and its
                // parameters and reward build the world.
                prop_assert!(world.scheduler(0).is_ok(), "{:?}", world.scheduler(0).err());
                let registry = Registry::builtin();
                let kind = registry.kind(world.kind());
                prop_assert!(kind.is_some(), "kind {}", world.kind());
                if let Err(e) = kind.unwrap().build_env(&world) {
                    prop_assert!(false, "loaded, but the world does not build: {}", e);
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("mangled.toml"), "{}", msg);
                if let Some(line) = e.line {
                    prop_assert!(line >= 1 && line <= text.lines().count() + 1, "line {} in {}", line, msg);
                }
            }
        }
    }

    /// Arbitrary bytes in a trace file give rows or an error naming the file; never a panic.
    #[test]
    fn trace_reader_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2000), csv in any::<bool>()) {
        let path = temp(if csv { "junk.csv" } else { "junk.jsonl" });
        std::fs::write(&path, &bytes).unwrap();
        for row in TraceReader::open(&[&path]) {
            if let Err(e) = row {
                prop_assert!(e.to_string().contains("junk."), "{}", e);
            }
        }
    }

    /// Any action sequence, in range or not: no panic, invalid actions change nothing,
    /// rewards stay under their ceilings, cash and units are conserved.
    #[test]
    fn enterprise_world_survives_any_action_sequence(
        seed in any::<u64>(),
        actions in prop::collection::vec(prop_oneof![8 => 0usize..48, 1 => any::<usize>()], 1..400),
        demand in 0.0f64..10.0,
        failures in 0.0f64..100.0,
    ) {
        let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
        env.set("demand_rate", demand).unwrap();
        env.set("failure_rate", failures).unwrap();
        let mut obs = env.reset(seed);
        let n = MorpheusConfig::default().action_count();
        for (i, &a) in actions.iter().enumerate() {
            let before = env.counters().unwrap();
            let ceiling = env.ceiling().expect("the enterprise world knows its ceiling");
            match env.step(&a) {
                Ok(t) => {
                    prop_assert!(a < n);
                    prop_assert!(t.reward.is_finite());
                    prop_assert!(t.reward <= ceiling.applicable(t.done()) + 1e-9,
                        "step {}: reward {} above ceiling {:?}", i, t.reward, ceiling);
                    prop_assert!(!t.terminated && !t.truncated);
                    obs = t.observation;
                }
                Err(EnvError::InvalidAction { .. }) => {
                    prop_assert!(a >= n);
                    prop_assert_eq!(env.counters().unwrap(), before);
                }
                Err(e) => prop_assert!(false, "unexpected error {}", e),
            }
            let c = env.counters().unwrap();
            let t = &c.totals;
            let expected = c.opening_cash + c.ledger_entries_sum;
            prop_assert!((c.cash - expected).abs() <= 1e-6 * c.cash.abs().max(expected.abs()).max(1.0));
            prop_assert_eq!(t.initial_stock + t.units_received - t.units_shipped, c.stock_on_hand);
            prop_assert_eq!(t.units_ordered, t.units_received + c.units_in_pipeline);
        }
        prop_assert_eq!(obs.len(), MorpheusConfig::default().observation_len());
    }
}

#[test]
fn a_truncated_trace_keeps_every_complete_row() {
    let path = temp("cut.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args([
            "run",
            "worlds/warehouse.toml",
            "--steps",
            "300",
            "--trace",
            path.to_str().unwrap(),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let full = std::fs::read(&path).unwrap();
    let line_ends: Vec<usize> = full
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i)
        .collect();
    for cut in [1, 17, full.len() / 3, full.len() / 2 + 5, full.len() - 1] {
        std::fs::write(&path, &full[..cut]).unwrap();
        let mut reader = TraceReader::open(&[&path]);
        let rows = (&mut reader).collect::<Result<Vec<_>, _>>().unwrap();
        // A last line cut just before its newline is still a whole row.
        let whole_last = line_ends.contains(&cut);
        let complete = line_ends.iter().filter(|&&e| e < cut).count() + usize::from(whole_last);
        assert_eq!(rows.len(), complete, "cut at byte {cut}");
        let torn = !line_ends.contains(&(cut - 1)) && !whole_last;
        assert_eq!(
            reader.torn_tails().len(),
            usize::from(torn),
            "cut at byte {cut}"
        );
    }
}

/// A valid checkpoint of a short CartPole run, the trace it belongs to, and that trace's
/// bytes; made once for every case, in a folder removed with it.
struct Resumable {
    dir: Scratch,
    checkpoint: serde_json::Value,
    trace: PathBuf,
    trace_bytes: Vec<u8>,
    /// The events table beside the trace, and its bytes.
    events: PathBuf,
    events_bytes: Vec<u8>,
}

fn resumable() -> Resumable {
    let dir = Scratch::new("ckpt-props");
    let world = dir.join("w.toml");
    std::fs::write(
        &world,
        "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"b\"]\nevery = 40\n\n[harness]\nauto_reset = true\n",
    )
    .unwrap();
    let (trace, ckpt) = (dir.join("t.jsonl"), dir.join("c.ckpt.json"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args(["run", world.to_str().unwrap(), "--steps", "250", "--trace"])
        .arg(&trace)
        .args(["--checkpoint-every", "100", "--checkpoint"])
        .arg(&ckpt)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    Resumable {
        checkpoint: serde_json::from_slice(&std::fs::read(&ckpt).unwrap()).unwrap(),
        trace_bytes: std::fs::read(&trace).unwrap(),
        events_bytes: std::fs::read(dir.join("t.events.jsonl")).unwrap(),
        events: dir.join("t.events.jsonl"),
        trace,
        dir,
    }
}

/// Every leaf of `v`, as JSON pointers.
fn leaves(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                leaves(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        serde_json::Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, format!("{at}/{i}"), out);
            }
        }
        _ => out.push(at),
    }
}

fn replacement(kind: u8, old: &serde_json::Value) -> serde_json::Value {
    use serde_json::json;
    match kind % 10 {
        0 => json!(0),
        1 => json!(-1),
        2 => json!(1e300),
        3 => json!(u64::MAX),
        4 => json!("x"),
        5 => serde_json::Value::Null,
        6 => json!(true),
        7 => json!([]),
        8 => match old.as_u64() {
            Some(n) => json!(n.saturating_add(1)),
            None => json!(old.as_f64().map_or(2.5, |f| f * 2.0 + 1.0)),
        },
        _ => json!(1_000_000_000u64),
    }
}

/// A checkpoint with one field replaced at random either resumes (and every row
/// before the checkpoint is still in the trace) or is refused with exit 2 and the
/// trace untouched; never a panic or another exit code. The cases share one checkpoint,
/// made (and removed) by the test.
#[test]
fn a_mutated_checkpoint_resumes_or_is_refused_with_the_trace_untouched() {
    let r = resumable();
    let mut runner = proptest::test_runner::TestRunner::new(cases(48));
    let outcome = runner.run(&(any::<u32>(), any::<u8>()), |(pick, kind)| {
        let mut paths = Vec::new();
        leaves(&r.checkpoint, String::new(), &mut paths);
        // A larger step budget is a valid checkpoint of a longer run, not a fault: left
        // out so every case ends in a moment.
        paths.retain(|p| !p.ends_with("/config/steps"));
        let pointer = &paths[pick as usize % paths.len()];
        let mut mutated = r.checkpoint.clone();
        let slot = mutated.pointer_mut(pointer).unwrap();
        *slot = replacement(kind, slot);
        let ckpt = r.dir.join("mutated.ckpt.json");
        std::fs::write(&ckpt, serde_json::to_vec(&mutated).unwrap()).unwrap();
        std::fs::write(&r.trace, &r.trace_bytes).unwrap();
        std::fs::write(&r.events, &r.events_bytes).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_perennial"))
            .args(["run", "--resume"])
            .arg(&ckpt)
            .current_dir(r.dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        prop_assert!(!stderr.contains("panicked"), "{pointer}: {stderr}");
        let after = std::fs::read(&r.trace).unwrap_or_default();
        match out.status.code() {
            Some(0) => {
                let kept = r.checkpoint["trace_bytes"].as_u64().unwrap() as usize;
                prop_assert!(
                    after.len() >= kept,
                    "{pointer}: rows before the checkpoint were lost"
                );
                prop_assert_eq!(&after[..kept], &r.trace_bytes[..kept], "{}", pointer);
            }
            Some(2) => prop_assert!(
                after == r.trace_bytes,
                "{pointer}: refused but the trace changed: {stderr}"
            ),
            other => prop_assert!(false, "{pointer}: exit {other:?}: {stderr}"),
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
