//! The `perennial` binary as a user meets it: runs, checks, bad input, a killed run.

use std::process::Command;
use std::time::{Duration, Instant};

use perennial::trace::TraceReader;

mod common;
use common::{cli, read_rows, run, run_args, temp, text};

#[test]
fn run_on_a_shipped_world_prints_a_summary_and_writes_a_readable_trace() {
    let trace = temp("run.jsonl");
    let out = run(&run_args(
        "worlds/cartpole-drift.toml",
        "5000",
        &["--trace", trace.to_str().unwrap()],
    ));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("steps      5000"), "{stdout}");
    assert!(
        stdout.contains("earth") && stdout.contains("heavy_gravity"),
        "{stdout}"
    );
    let rows = read_rows(&[&trace]);
    assert_eq!(rows.len(), 5000);
    assert_eq!(
        (rows[3999].regime.as_str(), rows[4000].regime.as_str()),
        ("heavy_gravity", "earth")
    );
}

#[test]
fn csv_traces_read_back_like_jsonl() {
    let (j, c) = (temp("same.jsonl"), temp("same.csv"));
    for (path, format) in [(&j, "jsonl"), (&c, "csv")] {
        run(&run_args(
            "worlds/cartpole.toml",
            "600",
            &[
                "--format",
                format,
                "--record-transitions",
                "--trace",
                path.to_str().unwrap(),
            ],
        ));
    }
    assert_eq!(read_rows(&[&j]), read_rows(&[&c]));
}

#[test]
fn check_accepts_every_shipped_world_and_worlds_lists_them() {
    let out = cli(&["worlds"]);
    assert!(out.status.success());
    let listing = text(&out.stdout);
    assert!(!listing.contains("invalid"), "{listing}");
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/worlds")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // worlds/sweeps/ holds sweep files, not worlds.
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(listing.contains(&name), "{name} missing from {listing}");
        run(&["check", path.to_str().unwrap()]);
    }
}

#[test]
fn a_malformed_world_file_gets_exit_code_2_naming_file_and_line() {
    let bad = temp("bad.toml");
    std::fs::write(&bad, "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\nconditions = { gravity = 1e9 }\n").unwrap();
    for cmd in ["check", "run"] {
        let out = cli(&[cmd, bad.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(err.contains(&format!("{}:6:", bad.display())), "{err}");
        assert!(
            err.contains("gravity") && err.contains("out of range"),
            "{err}"
        );
    }
    std::fs::write(&bad, "[world\nkind = 1\n").unwrap();
    let out = cli(&["check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!("{}:1", bad.display())),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_flags_get_exit_code_2() {
    let out = cli(&["run", "worlds/cartpole.toml", "--agent", "oracle"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown agent `oracle`"));
    let out = cli(&["run", "worlds/nope.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("worlds/nope.toml"));
}

#[test]
fn a_run_killed_with_sigkill_leaves_a_readable_trace_of_complete_rows() {
    let trace = temp("killed.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args([
            "run",
            "worlds/cartpole-drift.toml",
            "--steps",
            "1000000000",
            "--window-steps",
            "7",
        ])
        .args(["--trace", trace.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0) < 2_000_000 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run wrote too little"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let mut reader = TraceReader::open(&[&trace]);
    let mut n = 0u64;
    for row in &mut reader {
        let row = row.expect("every complete row parses");
        assert_eq!(row.step, n);
        n += 1;
    }
    assert!(n > 5000, "{n} rows");
    assert!(reader.torn_tails().len() <= 1);
}

#[test]
fn run_without_a_world_file_runs_the_warehouse_and_eval_scores_it() {
    let trace = temp("default.jsonl");
    let out = run(&["run", "--steps", "3000", "--trace", trace.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("(warehouse)") && stdout.contains("peak_season"),
        "{stdout}"
    );
    let out = run(&["eval", trace.to_str().unwrap()]);
    let table = text(&out.stdout);
    assert!(
        table.contains("baseline") && table.contains("norm_gap"),
        "{table}"
    );
}

#[test]
fn a_warehouse_run_exports_one_unknown_episode() {
    let trace = temp("episodes.jsonl");
    let episodes = temp("episodes-out.jsonl");
    run(&run_args(
        "worlds/warehouse.toml",
        "500",
        &["--record-transitions", "--trace", trace.to_str().unwrap()],
    ));
    run(&[
        "episodes",
        trace.to_str().unwrap(),
        "--out",
        episodes.to_str().unwrap(),
    ]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&episodes)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["termination_reason"], "unknown");
    assert_eq!(lines[0]["id"], "warehouse:0");
}

#[test]
fn no_command_runs_the_default_world_from_any_folder() {
    let dir = temp("no-command");
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_perennial"))
        .current_dir(&dir)
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("(warehouse)") && stdout.contains("adaptive-base-stock"),
        "{stdout}"
    );
    assert!(
        dir.join("runs/warehouse-adaptive-base-stock-seed0.jsonl")
            .exists()
    );
}

/// A reader that stops early (`perennial run ... | head`) closes the pipe: every command's
/// report then ends quietly with the command's own exit code, not a panic.
#[test]
fn a_closed_stdout_ends_the_report_quietly() {
    let dir = common::Scratch::new("closed-pipe");
    let trace = dir.join("t.jsonl");
    let commands: [&[&str]; 4] = [
        &["run", "worlds/cartpole.toml", "--steps", "50", "--no-trace"],
        &[
            "run",
            "worlds/cartpole.toml",
            "--steps",
            "50",
            "--trace",
            common::path(&trace),
        ],
        &["check", "worlds/warehouse.toml"],
        &["worlds"],
    ];
    for args in commands {
        let mut child = common::perennial()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end before the command writes its report.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("panicked"), "perennial {args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "perennial {args:?}: {stderr}");
    }
}
