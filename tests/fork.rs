//! `perennial fork` as a user runs it: K rollouts from a checkpoint, the same world in
//! each, the saved agent's rollout equal to the source run's own continuation, groups of
//! forks in `perennial episodes`, and the inputs it refuses.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{Scratch, fails_with, path, run};
use perennial::trace::{EventReader, EventRow, FORK};

/// Runs the warehouse with `agent` for 700 steps with a checkpoint at step 500, recording
/// transitions; returns the trace and the checkpoint.
fn source(dir: &Scratch, agent: &str) -> (PathBuf, PathBuf) {
    let (trace, ckpt) = (dir.join("source.jsonl"), dir.join("source.ckpt.json"));
    run(&[
        "run",
        "worlds/warehouse.toml",
        "--agent",
        agent,
        "--seed",
        "3",
        "--steps",
        "700",
        "--checkpoint-every",
        "500",
        "--record-transitions",
        "--run-id",
        "src",
        "--trace",
        path(&trace),
        "--checkpoint",
        path(&ckpt),
    ]);
    (trace, ckpt)
}

fn fork(ckpt: &Path, out: &Path, extra: &[&str]) {
    let args = [
        &[
            "fork",
            path(ckpt),
            "--steps",
            "200",
            "--record-transitions",
            "--out",
            path(out),
        ][..],
        extra,
    ]
    .concat();
    run(&args);
}

/// The data lines of a JSON Lines file with `"run_id"` values blanked.
fn lines(path: &Path, run_id: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.replace(&format!("\"{run_id}\""), "\"RUN\""))
        .collect()
}

/// The rows of rollout `k`'s trace, run id blanked.
fn rollout(out: &Path, k: u64) -> Vec<String> {
    lines(
        &out.join(format!("rollout-{k}.jsonl")),
        &format!("src-s500-r{k}"),
    )
}

/// The events of rollout `k`, without the fork event and with the run id blanked.
fn world_events(out: &Path, k: u64) -> Vec<EventRow> {
    EventReader::open(out.join(format!("rollout-{k}.events.jsonl")))
        .filter(|e| e.event != FORK)
        .map(|e| EventRow {
            run_id: String::new(),
            ..e
        })
        .collect()
}

fn field(line: &str, name: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    v[name].clone()
}

#[test]
fn random_rollouts_meet_the_same_world_and_the_saved_one_continues_the_source() {
    let dir = Scratch::new("fork-random");
    let (trace, ckpt) = source(&dir, "random");
    let out = dir.join("fork");
    fork(&ckpt, &out, &["--rollouts", "8", "--jobs", "2"]);

    // Rollout 0 (the saved agent, the saved seed) is the source's own continuation.
    let continuation: Vec<String> = lines(&trace, "src")
        .into_iter()
        .filter(|l| l.starts_with('{') && field(l, "step").as_u64().unwrap() >= 500)
        .collect();
    let first = rollout(&out, 0);
    let header = first.iter().filter(|l| !l.starts_with('{')).count();
    assert_eq!(continuation.len(), 200);
    assert_eq!(&first[header..], &continuation[..]);

    let events0 = world_events(&out, 0);
    assert!(
        events0.iter().any(|e| e.event == "failure"),
        "no failure in 200 hours: the test shows nothing"
    );
    let rows0 = rollout(&out, 0);
    let mut actions = std::collections::HashSet::new();
    let mut rewards = std::collections::HashSet::new();
    for k in 0..8 {
        assert_eq!(
            world_events(&out, k),
            events0,
            "rollout {k} met other events"
        );
        let rows = rollout(&out, k);
        assert_eq!(rows.len(), rows0.len());
        let data: Vec<&String> = rows.iter().filter(|l| l.starts_with('{')).collect();
        actions.insert(
            data.iter()
                .map(|l| field(l, "action").to_string())
                .collect::<Vec<_>>(),
        );
        rewards.insert(
            data.iter()
                .map(|l| field(l, "reward").to_string())
                .collect::<Vec<_>>(),
        );
        let fork_event = EventReader::open(out.join(format!("rollout-{k}.events.jsonl")))
            .find(|e| e.event == FORK)
            .expect("every rollout records where it came from");
        assert_eq!(
            (
                fork_event.step,
                fork_event.kind.as_deref(),
                fork_event.target
            ),
            (500, Some("src"), Some(k))
        );
    }
    assert_eq!(
        actions.len(),
        8,
        "the random rollouts should act differently"
    );
    assert_eq!(
        rewards.len(),
        8,
        "the random rollouts should earn differently"
    );

    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fork.json")).unwrap()).unwrap();
    assert_eq!(record["step"], 500);
    assert_eq!(record["rollouts"], 8);
    assert_eq!(record["runs"][3]["run_id"], "src-s500-r3");
    assert_eq!(record["runs"][0]["agent_seed"], 3);
}

#[test]
fn base_stock_rollouts_are_identical_and_group_into_one_fork() {
    let dir = Scratch::new("fork-base-stock");
    let (_, ckpt) = source(&dir, "base-stock");
    let out = dir.join("fork");
    fork(&ckpt, &out, &["--rollouts", "4"]);
    let first = rollout(&out, 0);
    for k in 1..4 {
        assert_eq!(
            rollout(&out, k),
            first,
            "rollout {k} of a deterministic agent differs"
        );
    }

    let episodes = dir.join("episodes.jsonl");
    let traces: Vec<PathBuf> = (0..4)
        .map(|k| out.join(format!("rollout-{k}.jsonl")))
        .collect();
    let mut args = vec!["episodes".to_string()];
    args.extend(traces.iter().map(|t| path(t).to_string()));
    args.extend(["--out", path(&episodes), "--advantage", "grpo"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args);
    // rLLM's rule: the task id is the id up to its first `:`.
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(&episodes).unwrap().lines() {
        let id = field(line, "id").as_str().unwrap().to_string();
        let (task, idx) = id.split_once(':').unwrap();
        groups
            .entry(task.to_string())
            .or_default()
            .push(idx.to_string());
    }
    let task = "warehouse@s500";
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[task], ["0", "1", "2", "3"]);
}

#[test]
fn a_fork_with_a_fresh_agent_runs_that_agent() {
    let dir = Scratch::new("fork-fresh");
    let (_, ckpt) = source(&dir, "base-stock");
    let out = dir.join("fork");
    fork(
        &ckpt,
        &out,
        &["--rollouts", "2", "--agent", "random", "--seed", "9"],
    );
    let rows = rollout(&out, 1);
    let data: Vec<&String> = rows.iter().filter(|l| l.starts_with('{')).collect();
    assert_eq!(data.len(), 200);
    assert_eq!(field(data[0], "algorithm_id"), "random");
    assert_eq!(field(data[0], "step"), 500);
    assert_ne!(rollout(&out, 0), rows);
}

#[test]
fn a_fork_refuses_what_it_cannot_do() {
    let dir = Scratch::new("fork-hostile");
    let (trace, ckpt) = source(&dir, "base-stock");
    let out = dir.join("fork");
    let fork_args = |k: &str, h: &str, out: &Path| -> Vec<String> {
        [
            "fork",
            path(&ckpt),
            "--rollouts",
            k,
            "--steps",
            h,
            "--out",
            path(out),
        ]
        .map(String::from)
        .to_vec()
    };
    let fails = |args: Vec<String>, message: &str| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&args, 2, message);
    };
    fails(fork_args("0", "10", &out), "--rollouts must be at least 1");
    fails(fork_args("100000000", "10", &out), "use at most 10000");
    fails(fork_args("2", "0", &out), "--steps must be at least 1");
    assert!(!out.exists(), "a refused fork wrote its folder");
    fails(
        ["fork", path(&trace), "--rollouts", "2", "--steps", "5"]
            .map(String::from)
            .to_vec(),
        "this is a trace",
    );
    let tampered = dir.join("tampered.ckpt.json");
    let text = std::fs::read_to_string(&ckpt).unwrap();
    std::fs::write(
        &tampered,
        text.replacen("\"step\":500", "\"step\":5000000", 1),
    )
    .unwrap();
    fails(
        ["fork", path(&tampered), "--rollouts", "2", "--steps", "5"]
            .map(String::from)
            .to_vec(),
        "it was edited or damaged since it was written",
    );
    run(&fork_args("2", "10", &out)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    // The same fork again writes over itself; another one is refused, nothing touched.
    run(&fork_args("2", "10", &out)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    let before = common::files_in(&out);
    fails(fork_args("3", "10", &out), "holds another fork");
    assert_eq!(common::files_in(&out), before);
    // A folder of someone else's files is not written into either.
    let foreign = dir.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    fails(
        fork_args("2", "10", &foreign),
        "is not empty and holds no fork.json",
    );
    assert_eq!(common::files_in(&foreign).len(), 1);
}
