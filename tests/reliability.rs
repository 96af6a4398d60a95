//! What a hostile tester broke, through the command line: outputs that would replace
//! inputs or non-files, resumes that cut the trace before knowing the checkpoint fits,
//! concurrent writers, and misleading summaries. Every case must leave what was already
//! written untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{Scratch, cli, fails_with, run_args};

/// A folder for one test, removed when the test passes.
fn dir(name: &str) -> Scratch {
    Scratch::new(&format!("reliability-{name}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const CARTPOLE: &str = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"b\"]\nevery = 50\n\n[harness]\nauto_reset = true\n";

/// Writes the CartPole world and runs it with a checkpoint every `every` of `steps` steps.
fn checkpointed_run(d: &Path, steps: u64, every: u64) -> (PathBuf, PathBuf, PathBuf) {
    let (world, trace, ckpt) = (d.join("w.toml"), d.join("t.jsonl"), d.join("c.ckpt.json"));
    std::fs::write(&world, CARTPOLE).unwrap();
    let out = cli(&[
        "run",
        s(&world),
        "--steps",
        &steps.to_string(),
        "--trace",
        s(&trace),
        "--checkpoint-every",
        &every.to_string(),
        "--checkpoint",
        s(&ckpt),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    (world, trace, ckpt)
}

#[test]
fn a_trace_equal_to_the_world_file_is_refused_and_the_world_file_kept() {
    let d = dir("same");
    let world = d.join("w.toml");
    std::fs::write(&world, CARTPOLE).unwrap();
    let aliased = d.join(".").join("w.toml");
    fails_with(
        &["run", s(&world), "--steps", "5", "--trace", s(&aliased)],
        2,
        "same file as the world file",
    );
    assert_eq!(std::fs::read_to_string(&world).unwrap(), CARTPOLE);
}

#[test]
fn outputs_that_are_symlinks_or_devices_are_refused_and_left_alone() {
    let d = dir("links");
    let target = d.join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    let link = d.join("t.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    fails_with(
        &run_args("worlds/cartpole.toml", "5", &["--trace", s(&link)]),
        2,
        "a symlink",
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");

    let checkpoint_refused = |every: &str, checkpoint: &str, message: &str| {
        let extra = [
            "--no-trace",
            "--checkpoint-every",
            every,
            "--checkpoint",
            checkpoint,
        ];
        fails_with(&run_args("worlds/cartpole.toml", "5", &extra), 2, message);
    };
    checkpoint_refused("2", "/dev/null", "a device");
    let dir_ckpt = d.join("a-folder");
    std::fs::create_dir(&dir_ckpt).unwrap();
    checkpoint_refused("1000", s(&dir_ckpt), "a directory");
}

#[test]
fn resuming_against_an_edited_world_file_is_refused_and_the_trace_kept() {
    let d = dir("edited");
    let (world, trace, ckpt) = checkpointed_run(&d, 300, 100);
    let before = std::fs::read(&trace).unwrap();
    std::fs::write(&world, CARTPOLE.replace("12.0", "13.0")).unwrap();
    fails_with(&["run", "--resume", s(&ckpt)], 2, "--allow-world-change");
    assert_eq!(std::fs::read(&trace).unwrap(), before);
    let out = cli(&["run", "--resume", s(&ckpt), "--allow-world-change"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn resuming_into_a_replaced_trace_is_refused_and_the_trace_kept() {
    let d = dir("replaced");
    let (_, trace, ckpt) = checkpointed_run(&d, 300, 100);
    let other = cli(&run_args(
        "worlds/cartpole.toml",
        "300",
        &["--seed", "9", "--auto-reset", "--trace", s(&trace)],
    ));
    assert!(other.status.success(), "{}", stderr(&other));
    let before = std::fs::read(&trace).unwrap();
    let out = cli(&["run", "--resume", s(&ckpt)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // The other run replaced the trace and the events table beside it; either is named.
    let err = stderr(&out);
    assert!(
        err.contains("not the trace this checkpoint belongs to")
            || err.contains("it is not this checkpoint's"),
        "{err}"
    );
    assert_eq!(std::fs::read(&trace).unwrap(), before);
}

#[test]
fn tampered_checkpoint_fields_are_refused_and_no_row_is_deleted() {
    let d = dir("tampered");
    let (_, trace, ckpt) = checkpointed_run(&d, 250, 100);
    let before = std::fs::read(&trace).unwrap();
    let valid: serde_json::Value = serde_json::from_slice(&std::fs::read(&ckpt).unwrap()).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let tamper: [(&str, Edit); 4] = [
        ("scheduler", |v| v["scheduler"]["current"] = 99.into()),
        ("scheduler", |v| v["scheduler"]["plan"]["every"] = 0.into()),
        ("step", |v| v["step"] = 1_000_000.into()),
        ("window_steps", |v| v["config"]["window_steps"] = 0.into()),
    ];
    for (field, edit) in tamper {
        let mut v = valid.clone();
        edit(&mut v);
        std::fs::write(&ckpt, serde_json::to_vec(&v).unwrap()).unwrap();
        fails_with(
            &["run", "--resume", s(&ckpt)],
            2,
            "it was edited or damaged",
        );
        assert_eq!(std::fs::read(&trace).unwrap(), before, "{field}");
        // Resealed, as a deliberate editor would: the field itself is refused.
        v["seal"] = perennial::harness::seal_of(&v).unwrap().into();
        std::fs::write(&ckpt, serde_json::to_vec(&v).unwrap()).unwrap();
        let err = fails_with(&["run", "--resume", s(&ckpt)], 2, field);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(std::fs::read(&trace).unwrap(), before, "{field}");
    }
}

#[test]
fn a_locked_trace_is_refused_with_the_holder_pid() {
    let d = dir("locked");
    let trace = d.join("t.jsonl");
    std::fs::write(&trace, "keep\n").unwrap();
    let held = perennial::output::open_locked(&trace).unwrap();
    fails_with(
        &run_args("worlds/cartpole.toml", "5", &["--trace", s(&trace)]),
        2,
        &format!("pid {}", std::process::id()),
    );
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), "keep\n");
    drop(held);
}

#[test]
fn two_world_files_of_one_task_get_distinct_default_run_ids() {
    let d = dir("ids");
    let (a, b) = (d.join("calm.toml"), d.join("stormy.toml"));
    std::fs::write(&a, CARTPOLE).unwrap();
    std::fs::write(&b, CARTPOLE.replace("12.0", "15.0")).unwrap();
    let id = |w: &Path| {
        let out = cli(&["run", s(w), "--steps", "3", "--no-trace"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix("run").map(|r| r.trim().to_string()))
            .unwrap()
    };
    let (ia, ib) = (id(&a), id(&b));
    assert_ne!(ia, ib);
    assert!(ia.contains("calm") && ib.contains("stormy"), "{ia} {ib}");
    assert_eq!(
        id(Path::new("worlds/cartpole.toml")),
        "cartpole-random-seed0"
    );
}

#[test]
fn the_summary_announces_no_checkpoint_that_was_never_written() {
    let d = dir("announce");
    let ckpt = d.join("c.json");
    let out = cli(&run_args(
        "worlds/cartpole.toml",
        "5",
        &[
            "--no-trace",
            "--auto-reset",
            "--checkpoint-every",
            "100",
            "--checkpoint",
            s(&ckpt),
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ckpt.exists());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("checkpoint "));
}

#[test]
fn run_ids_that_escape_or_hide_are_refused() {
    for id in ["../../x", "", ".hidden", "a\nb"] {
        fails_with(
            &run_args("worlds/cartpole.toml", "3", &["--run-id", id]),
            2,
            "--run-id",
        );
    }
}

/// Starts `perennial ARGS` in the repository (stderr piped) and waits, up to a minute, until
/// `ready` holds.
fn spawn_until(args: &[&str], ready: impl Fn() -> bool) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !ready() {
        if started.elapsed().as_secs() >= 60 {
            // A failed test leaves no run behind.
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run did not get going: {args:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child
}

/// SIGTERM ends a run cleanly: the step under way finishes, a checkpoint is written at the
/// step reached, the exit code is 143 and the message says how to continue; resuming from
/// that checkpoint gives the same trace, byte for byte, as a run never interrupted.
#[test]
fn sigterm_writes_a_checkpoint_and_the_resumed_trace_is_byte_identical() {
    let d = dir("sigterm");
    let steps = "400000";
    let (trace, ckpt) = (d.join("t.jsonl"), d.join("c.ckpt.json"));
    // Wait until rows are being written, then ask the run to stop.
    let child = spawn_until(
        &[
            "run",
            "worlds/warehouse.toml",
            "--steps",
            steps,
            "--trace",
            s(&trace),
            "--checkpoint-every",
            "100000",
            "--checkpoint",
            s(&ckpt),
        ],
        || std::fs::metadata(&trace).map_or(0, |m| m.len()) > 0,
    );
    // SAFETY: sends a signal to the child this test spawned and still owns.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(143),
        "the run must stop on SIGTERM before its {steps} steps end: {err}"
    );
    assert!(
        err.contains("perennial run --resume") && err.contains(s(&ckpt)),
        "{err}"
    );
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&ckpt).expect("a checkpoint at the signal")).unwrap();
    let rows = std::fs::read(&trace).unwrap();
    let stopped_at = saved["step"].as_u64().unwrap();
    assert!(stopped_at > 0 && stopped_at < 400_000, "step {stopped_at}");
    assert_eq!(
        rows.iter().filter(|&&b| b == b'\n').count() as u64,
        stopped_at,
        "the checkpoint is at the last row written"
    );

    let resumed = cli(&["run", "--resume", s(&ckpt)]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let whole = d.join("whole.jsonl");
    let straight = cli(&[
        "run",
        "worlds/warehouse.toml",
        "--steps",
        steps,
        "--trace",
        s(&whole),
    ]);
    assert!(straight.status.success(), "{}", stderr(&straight));
    assert!(
        std::fs::read(&trace).unwrap() == std::fs::read(&whole).unwrap(),
        "the resumed trace differs from the uninterrupted one"
    );
}

/// A step can be long (here an agent update of a billion epochs): a second SIGTERM ends
/// the process at once, with the same exit code, and says so.
#[test]
fn a_second_sigterm_stops_a_run_stuck_in_a_long_step() {
    let d = dir("second-sigterm");
    let trace = d.join("t.jsonl");
    // The manifest is written when the run starts, just before the handler is installed.
    let child = spawn_until(
        &[
            "run",
            "worlds/cartpole.toml",
            "--agent",
            "ppo",
            "--agent-opt",
            "epochs=1000",
            "--agent-opt",
            "hidden=[2048, 2048]",
            "--steps",
            "100000",
            "--window-steps",
            "64",
            "--run-id",
            "stuck",
            "--trace",
            s(&trace),
        ],
        || d.join("t.manifest.json").exists(),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = child.id() as libc::pid_t;
    // SAFETY: signals to the child this test spawned and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut child = child;
    let waited = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if waited.elapsed().as_secs() >= 60 {
            let _ = child.kill();
            panic!("the run went on after a second SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.contains("stopping after the step under way") && err.contains("second signal"),
        "{err}"
    );
}
