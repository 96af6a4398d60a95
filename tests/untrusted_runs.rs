//! Runs that must not end in files perennial itself refuses, traces eval must not score as
//! whole when they are not, resumes that must follow the world file they are told to, and
//! messages that must name what is wrong. Each test is named after the cause of issue 34
//! it covers (9, 10, 12, 16, 20).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{Scratch, fails_with, path, perennial, read_rows, run, shifting_cartpole_run, text};

use common::SHIFTING_CARTPOLE as CARTPOLE;

#[test]
fn cause_9_an_agent_whose_weights_diverge_stops_at_a_checkpoint_instead_of_writing_one_that_cannot_resume()
 {
    let s = Scratch::new("cause9");
    let (trace, ckpt) = (s.join("t.jsonl"), s.join("t.ckpt.json"));
    // Allowed options: any positive finite step size, and gradient clipping off.
    let stderr = fails_with(
        &[
            "run",
            "worlds/cartpole.toml",
            "--agent",
            "ppo",
            "--agent-opt",
            "lr=1e30",
            "--agent-opt",
            "max_grad_norm=0",
            "--steps",
            "2048",
            "--window-steps",
            "256",
            "--checkpoint-every",
            "512",
            "--trace",
            path(&trace),
            "--checkpoint",
            path(&ckpt),
        ],
        2,
        "step 512",
    );
    for fragment in ["agent `ppo`", "NaN or infinite", "lower `lr`"] {
        assert!(stderr.contains(fragment), "`{fragment}` missing: {stderr}");
    }
    // No checkpoint was written that the resume would refuse: there is none at all, since
    // the first one was due when the weights had already diverged.
    assert!(
        !ckpt.exists(),
        "a checkpoint of a diverged agent was written"
    );
    // Every row before the failing step is in the trace, and the trace reads.
    assert_eq!(read_rows(&[&trace]).len(), 512);
}

/// A path in `s` whose file name holds the byte 0xff, which is not UTF-8.
fn not_utf8(s: &Scratch, stem: &[u8], ext: &str) -> PathBuf {
    let mut name = stem.to_vec();
    name.push(0xff);
    name.extend_from_slice(ext.as_bytes());
    s.path().join(OsStr::from_bytes(&name))
}

/// Runs `command`, which must exit with code 2; its stderr.
fn refused(command: &mut Command) -> String {
    let out = command.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

#[test]
fn cause_10_non_utf8_paths_are_refused_before_anything_is_written() {
    let s = Scratch::new("cause10");
    let trace = not_utf8(&s, b"t", ".jsonl");
    let stderr = refused(
        perennial()
            .args(["run", "worlds/cartpole.toml", "--steps", "20", "--trace"])
            .arg(&trace),
    );
    assert!(stderr.contains("--trace"), "{stderr}");
    assert!(stderr.contains("is not UTF-8"), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(s.path()).unwrap().count(),
        0,
        "run left files behind"
    );

    let ckpt = not_utf8(&s, b"c", ".ckpt.json");
    let stderr = refused(
        perennial()
            .args(["run", "worlds/cartpole.toml", "--steps", "20", "--trace"])
            .arg(s.join("t.jsonl"))
            .args(["--checkpoint-every", "10", "--checkpoint"])
            .arg(&ckpt),
    );
    assert!(stderr.contains("--checkpoint"), "{stderr}");
    assert_eq!(std::fs::read_dir(s.path()).unwrap().count(), 0);

    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/cartpole.toml");
    let sweep = s.write(
        "s.toml",
        &format!(
            "[sweep]\nname = \"s\"\nworlds = [\"{}\"]\nagents = [\"random\"]\nseeds = [0]\nsteps = 10\n",
            world.display()
        ),
    );
    let out_dir = not_utf8(&s, b"out", "");
    let stderr = refused(
        perennial()
            .args(["sweep", path(&sweep), "--out"])
            .arg(&out_dir),
    );
    assert!(stderr.contains("sweep --out"), "{stderr}");
    assert!(stderr.contains("is not UTF-8"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!out_dir.exists(), "the sweep made its folder");
}

/// A CartPole run of 100 steps into a Parquet trace `name.parquet` in `s`, a part per
/// 10-step window: parts 0 to 9.
fn parquet_run(s: &Scratch, name: &str, seed: &str) -> PathBuf {
    let trace = s.join(&format!("{name}.parquet"));
    shifting_cartpole_run(
        s,
        seed,
        "parquet",
        &trace,
        &["--part-seconds", "0", "--run-id", name],
    );
    assert!(trace.join("part-00009.parquet").exists());
    trace
}

fn part(trace: &Path, n: usize) -> PathBuf {
    trace.join(format!("part-{n:05}.parquet"))
}

#[test]
fn cause_12_eval_refuses_a_parquet_trace_missing_a_part_or_holding_another_runs() {
    let s = Scratch::new("cause12");
    let whole = parquet_run(&s, "whole", "1");
    run(&["eval", path(&whole)]);

    for (n, what) in [(0, "first"), (4, "middle"), (9, "last")] {
        let trace = parquet_run(&s, &format!("no-{what}"), "1");
        std::fs::remove_file(part(&trace, n)).unwrap();
        let missing = part(&trace, n);
        let stderr = fails_with(&["eval", path(&trace)], 2, path(&missing));
        assert!(stderr.contains("this part is missing"), "{what}: {stderr}");
    }

    // A part of another run (another seed and run id) copied over one of this run's.
    let mine = parquet_run(&s, "mine", "1");
    let other = parquet_run(&s, "other", "2");
    std::fs::copy(part(&other, 3), part(&mine, 3)).unwrap();
    let stderr = fails_with(&["eval", path(&mine)], 2, path(&part(&mine, 3)));
    assert!(stderr.contains("is of run `other`"), "{stderr}");
    assert!(stderr.contains("a part of another trace"), "{stderr}");
}

#[test]
fn cause_12_eval_warns_when_a_line_trace_holds_only_part_of_the_run_its_manifest_describes() {
    let s = Scratch::new("cause12-lines");
    let world = s.write("w.toml", CARTPOLE);
    let trace = s.join("t.jsonl");
    run(&[
        "run",
        path(&world),
        "--steps",
        "100",
        "--run-id",
        "r",
        "--trace",
        path(&trace),
    ]);
    let lines: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    // Its head cut: the run starts at step 10.
    std::fs::write(&trace, lines[10..].concat()).unwrap();
    let out = run(&["eval", path(&trace)]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("starts at step 10, not 0"), "{all}");
    // Its tail cut: the manifest says the run completed 100 steps.
    std::fs::write(&trace, lines[..90].concat()).unwrap();
    let out = run(&["eval", path(&trace)]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains("the trace ends at step 89 but its manifest says run `r` completed 100 steps"),
        "{all}"
    );
}

#[test]
fn cause_16_resume_with_allow_world_change_follows_the_edited_worlds_parameters_and_schedule() {
    let s = Scratch::new("cause16");
    let world = s.write("w.toml", CARTPOLE);
    let (trace, ckpt) = (s.join("t.jsonl"), s.join("t.ckpt.json"));
    let args = [
        "run",
        path(&world),
        "--steps",
        "100",
        "--window-steps",
        "10",
        "--trace",
        path(&trace),
        "--checkpoint-every",
        "40",
        "--checkpoint",
        path(&ckpt),
    ];
    run(&args);
    // Back to the checkpoint at step 80, as a run killed there would be.
    let rows = read_rows(&[&trace]);
    let text80: String = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .take(80)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&trace, text80).unwrap();
    // The edit: regime `b` now ends every episode after 3 steps, and the cycle turns
    // every 25 steps instead of 30 (so steps 75 to 99 are `b`, where they were `a` up to
    // step 89).
    let edited = CARTPOLE
        .replace(
            "conditions = { gravity = 12.0 }",
            "conditions = { gravity = 12.0, max_episode_steps = 3 }",
        )
        .replace("every = 30", "every = 25");
    std::fs::write(&world, &edited).unwrap();
    fails_with(&["run", "--resume", path(&ckpt)], 2, "--allow-world-change");
    run(&["run", "--resume", path(&ckpt), "--allow-world-change"]);
    let resumed = read_rows(&[&trace]);
    assert_eq!(resumed.len(), 100);
    assert_eq!(
        resumed[..80],
        rows[..80],
        "the rows before the checkpoint stay"
    );
    // The episode under way at step 80 began under the old parameter; every later one
    // runs under the edited one.
    let under_way = resumed[79].episode;
    for r in &resumed[80..] {
        assert_eq!(r.regime, "b", "step {}: the edited schedule", r.step);
        assert!(
            r.episode == under_way || r.episode_step < 3,
            "step {}: episode step {} under the edited `max_episode_steps = 3`",
            r.step,
            r.episode_step
        );
    }
    assert!(
        resumed[80..].iter().any(|r| r.truncated),
        "the edited parameter ends episodes"
    );
    // The run now records the edited file: its manifest holds the edited text.
    let found = std::fs::read_dir(s.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".manifest.json"))
        .expect("a run manifest beside the trace");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(found).unwrap()).unwrap();
    assert_eq!(manifest["world_file"]["text"], edited.as_str());
}

#[test]
fn cause_20_errors_name_the_field_within_its_table() {
    let s = Scratch::new("cause20-fields");
    let notify = s.write(
        "notify.toml",
        &format!("{CARTPOLE}\n[notify]\nlevel = \"flag\"\nextra = 1\n"),
    );
    fails_with(&["check", path(&notify)], 2, "field `notify.extra`");
    let seed = s.write(
        "seed.toml",
        &CARTPOLE.replace("auto_reset = true", "auto_reset = true\nseed = -1"),
    );
    let stderr = fails_with(&["check", path(&seed)], 2, "field `harness.seed`");
    assert!(stderr.contains(":18:"), "{stderr}");
    let hidden = s.write(
        "hidden.toml",
        &format!("{CARTPOLE}\n[agent.ppo]\nhidden = [64, -1]\n"),
    );
    fails_with(
        &[
            "run",
            path(&hidden),
            "--agent",
            "ppo",
            "--no-trace",
            "--steps",
            "1",
        ],
        2,
        "hidden",
    );
}

#[test]
fn cause_20_a_run_of_no_steps_does_not_print_a_command_that_fails() {
    let s = Scratch::new("cause20-steps0");
    let trace = s.join("t.jsonl");
    let out = run(&[
        "run",
        "worlds/cartpole.toml",
        "--steps",
        "0",
        "--trace",
        path(&trace),
    ]);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("perennial eval"), "{stdout}");
    assert!(stdout.contains("nothing to score"), "{stdout}");
}

#[test]
fn cause_20_a_full_disk_names_the_trace_and_leaves_whole_rows() {
    let s = Scratch::new("cause20-full");
    let trace = s.join("t.jsonl");
    // A file-size limit stands in for a full disk: a write past it fails with EFBIG (the
    // signal it would raise is ignored, and stays ignored across the exec).
    let script = format!(
        "trap '' XFSZ; ulimit -f 200; exec {} run worlds/cartpole.toml --steps 100000 --trace {}",
        env!("CARGO_BIN_EXE_perennial"),
        path(&trace)
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{}:", path(&trace))), "{stderr}");
    assert!(!stderr.contains(".tmp"), "{stderr}");
    let bytes = std::fs::read(&trace).unwrap();
    assert!(!bytes.is_empty());
    assert_eq!(bytes.last(), Some(&b'\n'), "the trace ends with a torn row");
    let rows = read_rows(&[&trace]);
    assert!(!rows.is_empty());
    let out = run(&["eval", path(&trace)]);
    assert!(!text(&out.stderr).contains("torn"), "{}", text(&out.stderr));
}
