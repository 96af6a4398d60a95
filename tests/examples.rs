//! The examples as a user runs them: each exits 0 and prints what its docs promise.
//!
//! Cargo does not build examples for `cargo test --test examples`, and gives integration
//! tests no path to them (`CARGO_BIN_EXE_*` covers binaries only). So the first test to need
//! one runs `cargo build --example NAME` for all of them (with `--release` when this test was
//! built in release, so the examples share the library already built for it) and takes each
//! executable's path from cargo's JSON messages, which also finds a custom target directory.
//! That nested cargo does not wait on the outer one: `cargo test` releases the
//! build-directory lock once the test binaries are built, before it runs them. The examples
//! then run directly, in parallel, each with a small `PERENNIAL_EXAMPLE_STEPS` and its own
//! `TMPDIR`, so their traces land in a directory no other run shares.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

mod common;
use common::text;

const EXAMPLES: [&str; 8] = [
    "cartpole_regimes",
    "warehouse_shift",
    "custom_world",
    "throughput",
    "peer_workload",
    "continual_baselines",
    "soak",
    "fork_groups",
];

fn executables() -> &'static HashMap<String, PathBuf> {
    static BUILT: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "--quiet", "--message-format=json"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        for name in EXAMPLES {
            cargo.args(["--example", name]);
        }
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let out = cargo.output().expect("cargo runs");
        assert!(
            out.status.success(),
            "building the examples failed:\n{}",
            text(&out.stderr)
        );
        text(&out.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|m| m["reason"] == "compiler-artifact")
            .filter_map(|m| {
                let name = m["target"]["name"].as_str()?.to_string();
                let exe = m["executable"].as_str()?;
                Some((name, PathBuf::from(exe)))
            })
            .collect()
    })
}

/// Runs example `name` with a step budget of `steps` and a temp dir of its own.
fn example(name: &str, steps: &str) -> Output {
    let exe = executables()
        .get(name)
        .unwrap_or_else(|| panic!("cargo built no executable for example `{name}`"));
    let tmp = fresh_tmp(&format!("example-{name}-{steps}"));
    Command::new(exe)
        .env("PERENNIAL_EXAMPLE_STEPS", steps)
        .env("TMPDIR", &tmp)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the example runs")
}

/// The example's stdout, after checking that it succeeded.
fn succeeded(name: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{name} exited with {}:\n{}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Runs example `name` as [`example`] does and returns its stdout, after checking that it
/// succeeded.
fn ran(name: &str, steps: &str) -> String {
    succeeded(name, &example(name, steps))
}

/// Checks that `stdout` holds each of `expected`.
fn prints(stdout: &str, expected: &[&str]) {
    for e in expected {
        assert!(stdout.contains(e), "missing {e:?} in:\n{stdout}");
    }
}

/// The paths printed after `trace: ` (to the end of the line).
fn trace_paths(stdout: &str) -> Vec<PathBuf> {
    stdout
        .lines()
        .filter_map(|l| l.split_once("trace: "))
        .map(|(_, p)| PathBuf::from(p.trim()))
        .collect()
}

fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .count()
}

/// Checks that the example printed `runs` trace paths, each of a trace of `rows` rows.
fn traced(stdout: &str, runs: usize, rows: usize) {
    let traces = trace_paths(stdout);
    assert_eq!(traces.len(), runs, "{stdout}");
    for trace in &traces {
        assert_eq!(lines_in(trace), rows, "{}", trace.display());
    }
}

/// A fresh folder `name` in cargo's temp dir for the test targets.
fn fresh_tmp(name: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("the target tmp dir is writable");
    tmp
}

#[test]
fn cartpole_regimes_traces_the_learner_and_prints_its_intervals() {
    let stdout = ran("cartpole_regimes", "6500");
    prints(
        &stdout,
        &[
            "run cartpole-actor-critic-seed0",
            "steps 6500",
            "intervals (W = 100, payouts excluded)",
            "configurations",
            "group task cartpole  algorithm actor-critic",
        ],
    );
    let header = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|words| words.first() == Some(&"#"))
        .unwrap_or_else(|| panic!("no interval table in:\n{stdout}"));
    for column in ["mean_r", "adapt", "recov", "forget", "cvar05", "gap"] {
        assert!(header.contains(&column), "no {column} column in {header:?}");
    }
    // The cycle's first four intervals: earth, heavy_gravity, earth again, long_pole.
    let intervals: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" initial ") || l.contains(" scheduled "))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(
        intervals,
        ["earth", "heavy_gravity", "earth", "long_pole"],
        "{stdout}"
    );
    traced(&stdout, 1, 6500);
}

#[test]
fn fork_groups_compares_fork_groups_with_chunk_groups() {
    let stdout = ran("fork_groups", "300");
    prints(
        &stdout,
        &["source     warehouse, base-stock, seed 0, 300 hours; forks of 16 x 24 hours"],
    );
    for agent in ["random", "base-stock", "oracle"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(agent) && l.contains(" fork ")),
            "no fork group for {agent} in:\n{stdout}"
        );
    }
    // A deterministic agent's fork has no spread; its chunks do, all of it the world's.
    let base_stock = stdout
        .lines()
        .skip_while(|l| !l.starts_with("base-stock"))
        .take(3)
        .collect::<Vec<_>>();
    assert!(base_stock[0].contains(" 0.000  +0.00"), "{stdout}");
    assert!(base_stock[1].trim_start().starts_with("chunks"), "{stdout}");
    assert!(base_stock[2].contains("world share 100.0%"), "{stdout}");
}

#[test]
fn warehouse_shift_compares_every_agent_over_the_same_seeds() {
    let stdout = ran("warehouse_shift", "600");
    let agents = [
        "random",
        "base-stock",
        "adaptive-base-stock",
        "actor-critic",
    ];
    for agent in agents {
        let summary = format!("{agent:<20} mean reward per step over 3 seeds:");
        let group = format!(
            "group task warehouse  algorithm {agent}  runs 3  seeds 0,1,2  (mean over runs [95% bootstrap CI])"
        );
        prints(&stdout, &[&summary, &group]);
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("metric") && l.contains("baseline")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("mean_reward") && l.contains(" [")),
        "{stdout}"
    );
    // The aggregate table: IQM with its CI per agent, then P(X > Y) for every pair.
    assert!(stdout.contains("aggregate over runs and tasks"), "{stdout}");
    for agent in agents {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(agent) && l.matches(" [").count() == 4),
            "no aggregate row for {agent} in:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("probability of improvement P(X > Y)")
            && stdout
                .lines()
                .any(|l| l.trim_start().starts_with("random") && l.contains("base-stock")),
        "{stdout}"
    );
    traced(&stdout, agents.len() * 3, 600);
}

#[test]
fn custom_world_runs_and_scores_like_a_built_in_one() {
    let stdout = ran("custom_world", "2000");
    prints(
        &stdout,
        &[
            "checkpoint: the restored world repeats the saved one step for step",
            "action 3: invalid action 3",
            "run thermostat-random-seed0",
            "run thermostat-bang-bang-seed0",
            "comfort=",
            "energy=",
            "group task thermostat  algorithm bang-bang",
        ],
    );
    for label in ["mild", "cold_snap", "draughty"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(label) && l.contains("comfort=")),
            "no configuration line for {label} in:\n{stdout}"
        );
    }
    traced(&stdout, 2, 2000);
}

/// The example hands its registry to `perennial::cli::main_with`, so a world file of its
/// own kind runs, checks and scores through the whole command line; the stock binary does
/// not know the kind and says so.
#[test]
fn custom_world_gets_the_command_line_for_its_world_files() {
    let exe = &executables()["custom_world"];
    let tmp = fresh_tmp("example-custom_world-cli");
    let trace = tmp.join("thermostat.jsonl");
    let cli = |args: &[&str]| {
        Command::new(exe)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("the example runs")
    };
    let trace_arg = trace.to_str().expect("a UTF-8 temp path");
    let run = cli(&[
        "run",
        "examples/thermostat.toml",
        "--steps",
        "16000",
        "--trace",
        trace_arg,
    ]);
    let stdout = succeeded("custom_world run", &run);
    assert!(stdout.contains("thermostat-bang-bang-seed0"), "{stdout}");
    assert_eq!(lines_in(&trace), 16000);
    let check = succeeded(
        "custom_world check",
        &cli(&["check", "examples/thermostat.toml"]),
    );
    assert!(
        check.contains("thermostat world") && check.contains("bang-bang"),
        "{check}"
    );
    let eval = succeeded("custom_world eval", &cli(&["eval", trace_arg]));
    for label in ["mild", "cold_snap", "draughty"] {
        assert!(eval.contains(label), "no {label} interval in:\n{eval}");
    }
    let stock = Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args(["check", "examples/thermostat.toml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("perennial runs");
    assert_eq!(stock.status.code(), Some(2));
    let stderr = text(&stock.stderr);
    assert!(
        stderr.contains("unknown world kind `thermostat`"),
        "{stderr}"
    );
}

#[test]
fn throughput_prints_a_rate_for_every_workload() {
    let stdout = ran("throughput", "20000");
    assert!(
        stdout.lines().any(|l| l
            .split_whitespace()
            .eq(["workload", "steps", "seconds", "steps/s"])),
        "{stdout}"
    );
    for (workload, steps) in [
        ("cartpole env", 20_000),
        ("cartpole harness, no trace", 20_000),
        ("cartpole harness, jsonl trace", 2_000),
        ("cartpole vector, 64 envs", 20_032),
        ("cartpole vector, 4096 envs", 20_480),
        ("enterprise env, default layout", 200),
        ("enterprise env, layout x10", 20),
    ] {
        let row = stdout
            .lines()
            .find_map(|l| {
                l.strip_prefix(workload)
                    .filter(|rest| rest.starts_with(' '))
            })
            .unwrap_or_else(|| panic!("no row for {workload:?} in:\n{stdout}"));
        let cells: Vec<f64> = row
            .split_whitespace()
            .map(|c| c.parse().expect("numeric cells"))
            .collect();
        assert_eq!(cells.len(), 3, "{row}");
        assert_eq!(cells[0], steps as f64, "{row}");
        assert!(cells[2] > 0.0, "{row}");
    }
}

#[test]
fn an_unusable_step_budget_fails_with_a_message() {
    let out = example("custom_world", "lots");
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("PERENNIAL_EXAMPLE_STEPS"), "{stderr}");
}

#[test]
fn peer_workload_prints_one_timed_line_per_workload() {
    let exe = &executables()["peer_workload"];
    let out = Command::new(exe)
        .args(["8192", "1"])
        .output()
        .expect("the example runs");
    let stdout = succeeded("peer_workload", &out);
    for workload in [
        "perennial_single",
        "perennial_vec_64",
        "perennial_vec_4096",
        "perennial_vecenv_4096",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(workload))
            .unwrap_or_else(|| panic!("no line for {workload} in:\n{stdout}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            (cells.len(), cells[2], cells[4]),
            (5, "steps", "s"),
            "{line}"
        );
        assert!(cells[1].parse::<u64>().unwrap() >= 8192, "{line}");
        assert!(cells[3].parse::<f64>().unwrap() > 0.0, "{line}");
    }
}

#[test]
fn continual_baselines_compares_every_family_on_both_worlds() {
    let stdout = ran("continual_baselines", "600");
    let families = ["ppo", "ppo-replay", "ppo-ewc", "ppo-context", "ppo-plastic"];
    let references: [(&str, &[&str]); 2] = [
        ("cartpole", &["balance"]),
        ("warehouse", &["base-stock", "oracle"]),
    ];
    for (task, references) in references {
        for agent in families.iter().chain(&["random"]).chain(references) {
            let group = format!(
                "group task {task}  algorithm {agent}  runs 3  seeds 0,1,2  (mean over runs [95% bootstrap CI])"
            );
            prints(&stdout, &[&group]);
        }
    }
    assert!(
        stdout.contains("separated pairs (family vs family, disjoint 95% intervals): "),
        "{stdout}"
    );
    // Seven agents on CartPole and eight on the warehouse, three seeds each.
    traced(&stdout, (7 + 8) * 3, 600);
}

#[test]
fn soak_resumes_after_every_signal_to_the_same_bytes() {
    let exe = &executables()["soak"];
    let tmp = fresh_tmp("example-soak");
    let out = Command::new(exe)
        .args(["20000", "3"])
        .env("TMPDIR", &tmp)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the example runs");
    // A signal that lands after a short run ended is not made; the count is not asserted,
    // only that every campaign ends with the uninterrupted run's bytes.
    let stdout = succeeded("soak", &out);
    for campaign in ["SIGKILL: ", "SIGTERM: "] {
        assert!(stdout.contains(campaign), "{stdout}");
    }
    assert_eq!(stdout.matches("byte-identical").count(), 2, "{stdout}");
    // The Parquet sweep, stopped by SIGKILL to its group or SIGTERM to it alone and rerun.
    assert!(
        stdout.contains("0 processes left; final traces equal (4 traces"),
        "{stdout}"
    );
}
