//! Notification as an experimental variable: what an agent is told at a regime shift, at
//! each level, exactly at the shift step; the level in the trace's identity (and nowhere
//! at `none`), through checkpoints, and as a grouping key of eval.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use perennial::eval::{EvalOptions, evaluate};
use perennial::harness::{Agent, Checkpoint, CheckpointPlan, Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::regime::{Change, Notification, NotifyLevel};
use perennial::trace::TraceFormat;
use serde::{Deserialize, Serialize};

mod common;
use common::{TempPath, cli, path, read_rows, run_args, temp};

/// Balances the pole and records every notification with the number of actions it had
/// taken when the notification came.
#[derive(Default, Serialize, Deserialize)]
struct Recorder {
    acts: u64,
    heard: Vec<(u64, Notification)>,
}

impl Agent<CartPole> for Recorder {
    fn algorithm_id(&self) -> &str {
        "recorder"
    }

    fn act(&mut self, obs: &[f32; 4]) -> usize {
        self.acts += 1;
        usize::from(obs[2] + 0.5 * obs[3] > 0.0)
    }

    fn notify(&mut self, n: &Notification) {
        self.heard.push((self.acts, n.clone()));
    }

    perennial::serde_agent_state!();
}

/// earth (initial) -> heavy at 100 -> earth at 200 -> heavy at 300, over 400 steps.
fn cycle() -> Scheduler {
    let regimes = vec![
        Regime::new("earth", &[]),
        Regime::new("heavy", &[("gravity", 20.0), ("length", 0.8)]),
    ];
    let plan = Plan::cycle(&["earth", "heavy"], 100);
    Scheduler::new(regimes, plan, 0).unwrap()
}

fn config() -> HarnessConfig {
    HarnessConfig {
        steps: 400,
        auto_reset: true,
        window_steps: 64,
        ..HarnessConfig::default()
    }
}

fn harness(level: Option<NotifyLevel>) -> Harness<CartPole, Recorder> {
    let h = Harness::new(
        CartPole::new(CartPoleParams::default()),
        Recorder::default(),
        3,
    )
    .scheduler(cycle())
    .config(config());
    match level {
        Some(level) => h.notify(level),
        None => h,
    }
}

/// Runs at `level` into a JSONL trace; returns what the agent heard and the trace bytes.
fn run(level: Option<NotifyLevel>, name: &str) -> (Vec<(u64, Notification)>, Vec<u8>) {
    let path = temp(name);
    let mut h = harness(level).trace(&path, TraceFormat::Jsonl);
    h.advance(u64::MAX).unwrap();
    let heard = h.agent().heard.clone();
    h.finish().unwrap();
    (heard, std::fs::read(&path).unwrap())
}

fn heavy_delta() -> BTreeMap<String, Change> {
    [
        (
            "gravity".to_string(),
            Change {
                from: 9.8,
                to: 20.0,
            },
        ),
        ("length".to_string(), Change { from: 0.5, to: 0.8 }),
    ]
    .into()
}

fn earth_delta() -> BTreeMap<String, Change> {
    heavy_delta()
        .into_iter()
        .map(|(k, c)| {
            (
                k,
                Change {
                    from: c.to,
                    to: c.from,
                },
            )
        })
        .collect()
}

#[test]
fn each_level_tells_exactly_its_notification_at_exactly_the_shift_steps() {
    let shifts = [(100, "heavy"), (200, "earth"), (300, "heavy")];
    for level in [NotifyLevel::Flag, NotifyLevel::Delta, NotifyLevel::Label] {
        let (heard, _) = run(Some(level), &format!("{level}.jsonl"));
        let expected: Vec<(u64, Notification)> = shifts
            .iter()
            .map(|&(step, label)| {
                let n = Notification {
                    step,
                    level,
                    label: (level == NotifyLevel::Label).then(|| label.to_string()),
                    delta: (level == NotifyLevel::Delta).then(|| {
                        if label == "heavy" {
                            heavy_delta()
                        } else {
                            earth_delta()
                        }
                    }),
                };
                // Told before acting on the shift step: `step` actions were taken.
                (step, n)
            })
            .collect();
        assert_eq!(heard, expected, "level {level}");
    }
}

#[test]
fn level_none_never_notifies_and_writes_the_bytes_of_a_run_that_never_heard_of_notify() {
    let (heard, explicit) = run(Some(NotifyLevel::None), "none.jsonl");
    assert!(heard.is_empty());
    let (heard, default) = run(None, "default.jsonl");
    assert!(heard.is_empty());
    assert_eq!(explicit, default);
    let text = String::from_utf8(default).unwrap();
    assert!(!text.contains("notify"));
    assert!(text.starts_with(r#"{"run_id":"cartpole-recorder-seed3","seed":3,"algorithm_id":"recorder","task":"cartpole","step":0,"#));
}

#[test]
fn the_level_is_an_identity_column_after_task_in_every_format_and_reads_back() {
    for format in [TraceFormat::Jsonl, TraceFormat::Csv, TraceFormat::Parquet] {
        let path = temp(&format!("identity.{}", format.extension()));
        harness(Some(NotifyLevel::Delta))
            .trace(&path, format)
            .run()
            .unwrap();
        let rows = read_rows(&[&path]);
        assert_eq!(rows.len(), 400);
        assert!(
            rows.iter().all(|r| r.notify == NotifyLevel::Delta),
            "{format:?}"
        );
        match format {
            TraceFormat::Jsonl => {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.starts_with(r#"{"run_id":"cartpole-recorder-seed3","seed":3,"algorithm_id":"recorder","task":"cartpole","notify":"delta","step":0,"#));
            }
            TraceFormat::Csv => {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.starts_with("run_id,seed,algorithm_id,task,notify,step,"));
            }
            TraceFormat::Parquet => {}
        }
    }
}

#[test]
fn a_resumed_run_keeps_its_level_and_its_trace_bytes() {
    let level = Some(NotifyLevel::Label);
    let (whole_heard, whole) = run(level, "whole.jsonl");

    let cut_path = temp("cut.jsonl");
    let ckpt_path = temp("cut.ckpt.json");
    let mut cut = harness(level)
        .trace(&cut_path, TraceFormat::Jsonl)
        .checkpoint(CheckpointPlan {
            path: ckpt_path.clone(),
            every: 150,
            meta: serde_json::Value::Null,
        });
    cut.advance(170).unwrap();
    drop(cut);
    let ckpt = Checkpoint::read(&ckpt_path).unwrap();
    assert_eq!(ckpt.step, 150);
    assert_eq!(ckpt.identity.notify, NotifyLevel::Label);
    let (bytes, tail) = (ckpt.trace_bytes.unwrap(), ckpt.trace_tail.clone());
    let mut resumed = Harness::resume(
        CartPole::new(CartPoleParams::default()),
        Recorder::default(),
        ckpt,
        None,
    )
    .unwrap();
    resumed
        .open_trace(
            &cut_path,
            TraceFormat::Jsonl,
            Some((bytes, tail.as_deref())),
        )
        .unwrap();
    resumed.advance(u64::MAX).unwrap();
    // The agent's own record came back with its state: the shift at 100 before the cut,
    // the ones at 200 and 300 after it.
    assert_eq!(resumed.agent().heard, whole_heard);
    resumed.finish().unwrap();
    assert!(std::fs::read(&cut_path).unwrap() == whole);
}

#[test]
fn eval_groups_the_notify_settings_of_one_agent_side_by_side() {
    let mut paths = Vec::new();
    for level in [NotifyLevel::None, NotifyLevel::Flag, NotifyLevel::Label] {
        for seed in [1, 2] {
            let path = temp(&format!("eval-{level}-{seed}.jsonl"));
            Harness::new(
                CartPole::new(CartPoleParams::default()),
                Recorder::default(),
                seed,
            )
            .scheduler(cycle())
            .config(config())
            .notify(level)
            .run_id(format!("r-{level}-{seed}"))
            .trace(&path, TraceFormat::Jsonl)
            .run()
            .unwrap();
            paths.push(path);
        }
    }
    let files: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let report = evaluate(&files, &EvalOptions::default()).unwrap();
    let groups: Vec<(&str, NotifyLevel, usize)> = report
        .groups
        .iter()
        .map(|g| (g.group.algorithm_id.as_str(), g.group.notify, g.group.runs))
        .collect();
    assert_eq!(
        groups,
        [
            ("recorder", NotifyLevel::None, 2),
            ("recorder", NotifyLevel::Flag, 2),
            ("recorder", NotifyLevel::Label, 2),
        ]
    );
    let algorithms: Vec<&str> = report
        .aggregate
        .algorithms
        .iter()
        .map(|a| a.algorithm.as_str())
        .collect();
    assert_eq!(
        algorithms,
        ["recorder", "recorder+notify=flag", "recorder+notify=label"]
    );
    assert_eq!(report.aggregate.improvement.len(), 6);
    assert_eq!(report.reliability.groups.len(), 3);

    let json = serde_json::to_value(&report).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert!(runs[0].get("notify").is_none(), "`none` is not serialized");
    assert_eq!(runs[2]["notify"], "flag");
    assert_eq!(json["groups"][2]["notify"], "label");
}

fn world_with_notify(level: &str) -> TempPath {
    let path = temp(&format!("world-{level}.toml"));
    std::fs::write(
        &path,
        format!(
            "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = {{ gravity = 12.0 }}\n\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"b\"]\nevery = 50\n\n[notify]\nlevel = \"{level}\"\n"
        ),
    )
    .unwrap();
    path
}

fn first_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn the_world_file_sets_the_level_and_the_command_line_overrides_it() {
    let world = world_with_notify("flag");
    let world = world.to_str().unwrap();
    let from_file = temp("cli-file.jsonl");
    let traced = |trace: &Path, extra: &[&str]| {
        let trace_args = ["--auto-reset", "--trace", path(trace)];
        common::run(&run_args(world, "120", &[&trace_args[..], extra].concat()));
    };
    traced(&from_file, &[]);
    assert!(first_line(&from_file).contains(r#""task":"cartpole","notify":"flag","step":0"#));

    let overridden = temp("cli-override.jsonl");
    traced(&overridden, &["--notify", "none"]);
    assert!(!first_line(&overridden).contains("notify"));

    let bad = world_with_notify("loud");
    let out = cli(&["check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(
        msg.contains(&format!("{}:17: field `notify.level`: unknown notify level `loud`; use one of: none, flag, delta, label", bad.display())),
        "{msg}"
    );
}
