//! Files perennial wrote itself, then edited, swapped, forged or damaged: checkpoints and
//! the traces and events tables they resume onto. Each test is named after the cause it
//! covers; every refusal exits 2 and leaves every file as it was, and every accepted
//! resume ends byte-identical to a run that was never interrupted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;
use common::{
    Scratch, cli, each_str, fails_with, leaves, mutate, path, run, shifting_cartpole_run, text,
};
use perennial::harness::seal_of;

use common::SHIFTING_CARTPOLE as CARTPOLE;

/// Every file under `dir` (recursively), with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Runs the CartPole world for 100 steps with a checkpoint every 40 (so the last one is
/// at step 80 and a resume rewrites 20 rows) into `name.<ext>` in `s`.
fn checkpointed(s: &Scratch, name: &str, format: &str, seed: &str) -> (PathBuf, PathBuf) {
    let (trace, ckpt) = (
        s.join(&format!("{name}.{format}")),
        s.join(&format!("{name}.ckpt.json")),
    );
    shifting_cartpole_run(
        s,
        seed,
        format,
        &trace,
        &["--checkpoint-every", "40", "--checkpoint", path(&ckpt)],
    );
    (trace, ckpt)
}

/// Edits the checkpoint as a deliberate forger would: the fields changed by `f`, and the
/// seal recomputed ([`seal_of`]), so only the checks of what the fields claim stand in the
/// way.
fn edit(ckpt: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(ckpt).unwrap()).unwrap();
    f(&mut v);
    v["seal"] = seal_of(&v).unwrap().into();
    std::fs::write(ckpt, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn an_edited_checkpoint_that_is_not_resealed_is_refused() {
    let s = Scratch::new("untrusted-seal");
    let (_, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&ckpt).unwrap()).unwrap();
    v["step"] = 79.into();
    v["summary"]["steps"] = 79.into();
    std::fs::write(&ckpt, serde_json::to_vec(&v).unwrap()).unwrap();
    refused(
        s.path(),
        &ckpt,
        "it was edited or damaged since it was written",
    );
}

/// `perennial run --resume ckpt` exits 2 naming `fragment`, and no file in `dir` changed.
fn refused(dir: &Path, ckpt: &Path, fragment: &str) -> String {
    let before = files(dir);
    let out = cli(&["run", "--resume", path(ckpt)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(fragment), "`{fragment}` missing: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        files(dir) == before,
        "a refused resume changed a file: {stderr}"
    );
    stderr
}

#[test]
fn a_checkpoint_naming_a_file_that_is_not_its_trace_is_refused_and_the_file_kept() {
    let s = Scratch::new("untrusted-forged");
    let (_, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    let precious = s.write("notes.jsonl", "keep me\nand me\n");
    edit(&ckpt, |v| {
        v["meta"]["trace"] = path(&precious).into();
        // What a forger would write: an empty prefix, whose hashes anyone can compute.
        v["trace_bytes"] = 0.into();
        v["trace_tail"] = "cbf29ce484222325".into();
        v["trace_digest"] = "ef46db3751d8e999".into();
    });
    refused(s.path(), &ckpt, "not the trace this checkpoint belongs to");
    assert_eq!(
        std::fs::read_to_string(&precious).unwrap(),
        "keep me\nand me\n"
    );
}

#[test]
fn a_checkpoint_whose_run_id_is_a_path_is_refused() {
    let s = Scratch::new("untrusted-run-id");
    let (_, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    edit(&ckpt, |v| {
        v["identity"]["run_id"] = "../x".into();
        v["meta"]["run_id"] = "../x".into();
    });
    refused(s.path(), &ckpt, "field `identity.run_id`");
    let parent = s.path().parent().unwrap();
    assert!(!parent.join("x.manifest.json").exists());
}

#[test]
fn a_checkpoint_whose_plan_and_identity_name_different_runs_is_refused() {
    let s = Scratch::new("untrusted-two-ids");
    let (_, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    edit(&ckpt, |v| v["meta"]["run_id"] = "other".into());
    refused(s.path(), &ckpt, "its plan names run `other`");
}

#[test]
fn a_checkpoint_naming_another_checkpoint_path_writes_only_the_file_resumed() {
    let s = Scratch::new("untrusted-ckpt-path");
    let (trace, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    let whole = std::fs::read(&trace).unwrap();
    let other = s.write("other.ckpt.json", "someone else's");
    edit(&ckpt, |v| v["meta"]["checkpoint"] = path(&other).into());
    run(&["run", "--resume", path(&ckpt)]);
    assert_eq!(std::fs::read(&trace).unwrap(), whole);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "someone else's");
}

#[test]
fn a_line_trace_swapped_for_another_runs_or_edited_in_the_middle_is_refused() {
    for format in ["jsonl", "csv"] {
        let s = Scratch::new(&format!("untrusted-swap-{format}"));
        let (trace, ckpt) = checkpointed(&s, "t", format, "1");
        let (other, _) = checkpointed(&s, "u", format, "2");
        let mine = std::fs::read(&trace).unwrap();
        std::fs::copy(&other, &trace).unwrap();
        refused(s.path(), &ckpt, "its first row is of run");

        // Same length, same first and last rows: one digit changed in row 30.
        let mut edited = mine.clone();
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(
                mine.iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        let row = &mine[line_starts[30]..line_starts[31]];
        let at = line_starts[30] + row.iter().position(|b| *b == b'1').unwrap();
        edited[at] = b'7';
        std::fs::write(&trace, &edited).unwrap();
        refused(s.path(), &ckpt, "not the trace this checkpoint belongs to");

        std::fs::write(&trace, &mine).unwrap();
        let out = cli(&["run", "--resume", path(&ckpt)]);
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert_eq!(std::fs::read(&trace).unwrap(), mine, "{format}");
    }
}

#[test]
fn resume_checks_a_parquet_trace_and_events_table_by_more_than_their_row_counts() {
    let s = Scratch::new("untrusted-parquet");
    let (trace, ckpt) = checkpointed(&s, "t", "parquet", "1");
    let (other, _) = checkpointed(&s, "u", "parquet", "2");
    let events = s.join("t.events.parquet");
    let whole = files(s.path());
    let restore = || {
        for (p, bytes) in &whole {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
    };

    // Another run's trace, with as many rows.
    std::fs::remove_dir_all(&trace).unwrap();
    std::fs::create_dir_all(&trace).unwrap();
    for (p, bytes) in files(&other) {
        std::fs::write(trace.join(p.file_name().unwrap()), bytes).unwrap();
    }
    refused(s.path(), &ckpt, "its first row is of run");
    std::fs::remove_dir_all(&trace).unwrap();
    restore();

    // An earlier part deleted: the rows left still outnumber the checkpoint's.
    let first = trace.join("part-00000.parquet");
    std::fs::remove_file(&first).unwrap();
    refused(s.path(), &ckpt, "t.parquet");
    restore();

    // The events table's second part (before the checkpoint) replaced by its first.
    let parts: Vec<PathBuf> = files(&events).into_keys().collect();
    assert!(parts.len() >= 3, "{parts:?}");
    std::fs::copy(&parts[0], &parts[1]).unwrap();
    refused(s.path(), &ckpt, "events table");
    restore();

    run(&["run", "--resume", path(&ckpt)]);
}

/// A sweep of CartPole in `format`, `seeds` seeds of `steps` steps, a checkpoint every
/// `every`, written in `s` as `name.toml`.
fn sweep_file(
    s: &Scratch,
    name: &str,
    format: &str,
    seeds: u64,
    steps: u64,
    every: u64,
) -> PathBuf {
    s.write(
        &format!("{name}.toml"),
        &format!(
            "[sweep]\nname = \"{name}\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\n\
             seeds = {{ from = 0, count = {seeds} }}\nsteps = {steps}\ncheckpoint_every = {every}\nformat = \"{format}\"\n"
        ),
    )
}

fn manifest(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn a_parquet_sweep_killed_before_its_first_checkpoint_can_be_finished() {
    let s = Scratch::new("untrusted-sweep-parquet");
    let file = sweep_file(&s, "pq", "parquet", 1, 300, 100);
    let out = s.join("out");
    let done = cli(&["sweep", path(&file), "--out", path(&out)]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    // Parquet parts carry the run manifest (with wall-clock times): compare the rows.
    let rows = |dir: &Path| -> Vec<String> {
        let mut traces: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() && !perennial::trace::is_events_table(p))
            .collect();
        traces.sort();
        perennial::trace::TraceReader::open(&traces)
            .map(|r| format!("{:?}", r.unwrap()))
            .collect()
    };
    let traces = rows(&out.join("traces"));
    assert_eq!(traces.len(), 300);
    // What a sweep killed before the run's first checkpoint leaves: the trace folder with
    // its parts, no checkpoint, the run recorded as running.
    for entry in std::fs::read_dir(out.join("checkpoints")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    let mut m = manifest(&out);
    m["runs"][0]["status"] = "running".into();
    std::fs::write(out.join("manifest.json"), serde_json::to_vec(&m).unwrap()).unwrap();

    let again = cli(&["sweep", path(&file), "--out", path(&out)]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(manifest(&out)["runs"][0]["status"], "done");
    assert!(rows(&out.join("traces")) == traces);
}

#[test]
fn files_inside_the_sweep_folder_that_are_symlinks_are_refused_and_left_alone() {
    let s = Scratch::new("untrusted-sweep-links");
    let file = sweep_file(&s, "links", "jsonl", 1, 50, 10);
    let precious = s.write("precious.txt", "keep me");
    for (k, log) in [false, true].into_iter().enumerate() {
        let out = s.join(&format!("out-{k}"));
        let plan = cli(&["sweep", path(&file), "--out", path(&out), "--plan-json"]);
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        let inside = if log {
            PathBuf::from(plan["runs"][0]["log"].as_str().unwrap())
        } else {
            out.join("sweep.lock")
        };
        std::fs::create_dir_all(out.join("logs")).unwrap();
        std::os::unix::fs::symlink(&precious, &inside).unwrap();
        let inside = inside.display();
        let res = cli(&["sweep", path(&file), "--out", path(&out)]);
        let stderr = text(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{inside}: {stderr}");
        assert!(stderr.contains("a symlink"), "{inside}: {stderr}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    }

    // A Parquet trace that is a symlink to a folder.
    let world = s.write("w.toml", CARTPOLE);
    let real = s.join("real");
    std::fs::create_dir_all(&real).unwrap();
    s.write("real/mine.txt", "mine");
    let link = s.join("t.parquet");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    fails_with(
        &[
            "run",
            path(&world),
            "--steps",
            "20",
            "--format",
            "parquet",
            "--trace",
            path(&link),
        ],
        2,
        "a symlink",
    );
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 1);
}

#[test]
fn sweep_out_refuses_an_existing_folder_that_is_not_a_sweeps() {
    let s = Scratch::new("untrusted-sweep-out");
    let file = sweep_file(&s, "mine", "jsonl", 1, 50, 10);
    let out = s.join("results");
    std::fs::create_dir_all(&out).unwrap();
    let eval = s.write("results/eval.json", "{\"mine\": true}");
    let res = cli(&["sweep", path(&file), "--out", path(&out)]);
    let stderr = text(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("holds `eval.json` but no sweep manifest"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&eval).unwrap(), "{\"mine\": true}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[test]
fn sweep_results_are_trusted_only_when_the_trace_holds_the_whole_run() {
    let s = Scratch::new("untrusted-sweep-results");
    let file = s.write(
        "res.toml",
        "[sweep]\nname = \"res\"\nworlds = [\"worlds/cartpole-drift.toml\"]\nagents = [\"random\"]\n\
         seeds = { from = 0, count = 2 }\nsteps = 300\ncheckpoint_every = 100\n",
    );
    let out = s.join("out");
    let done = cli(&["sweep", path(&file), "--out", path(&out)]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let runs = manifest(&out)["runs"].as_array().unwrap().clone();
    let (first, second) = (&runs[0], &runs[1]);
    // The second run's trace cut to its first 100 rows; the first's replaced by the second's.
    let second_trace = PathBuf::from(second["trace"].as_str().unwrap());
    let first_trace = PathBuf::from(first["trace"].as_str().unwrap());
    let rows = std::fs::read_to_string(&second_trace).unwrap();
    let short: String = rows.lines().take(100).map(|l| format!("{l}\n")).collect();
    std::fs::copy(&second_trace, &first_trace).unwrap();
    std::fs::write(&second_trace, short).unwrap();

    let results = s.write(
        "results.json",
        &format!(
            "{{\"{}\": {{\"exit_code\": 0, \"attempts\": 4294967295}}}}",
            first["run_id"].as_str().unwrap()
        ),
    );
    let stderr = fails_with(
        &[
            "sweep",
            path(&file),
            "--out",
            path(&out),
            "--collect",
            path(&results),
        ],
        1,
        "the trace is not this run's",
    );
    assert!(
        stderr.contains("holds 100 of the run's 300 steps"),
        "{stderr}"
    );
    let m = manifest(&out);
    assert_eq!(m["runs"][0]["status"], "failed");
    assert_eq!(m["runs"][1]["status"], "failed");
    assert_eq!(m["runs"][0]["attempts"], u64::from(u32::MAX));
}

#[test]
fn outputs_are_checked_against_the_traces_companions_too() {
    let s = Scratch::new("untrusted-companions");
    let (trace, _) = checkpointed(&s, "t", "jsonl", "1");
    let (pq, _) = checkpointed(&s, "p", "parquet", "1");
    let before = files(s.path());
    let events = s.join("t.events.jsonl");
    let manifest = s.join("t.manifest.json");
    let inside = pq.join("plot.svg");
    for (args, fragment) in [
        (
            vec!["eval", path(&trace), "--plot", path(&events)],
            "events table",
        ),
        (
            vec!["eval", path(&trace), "--profile-plot", path(&manifest)],
            "run manifest",
        ),
        (
            vec!["episodes", path(&trace), "--out", path(&manifest)],
            "run manifest",
        ),
        (
            vec!["eval", path(&pq), "--plot", path(&inside)],
            "inside the Parquet trace",
        ),
    ] {
        let out = cli(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(fragment), "{args:?}: {stderr}");
        assert!(files(s.path()) == before, "{args:?} wrote a file");
    }
}

/// Runs `perennial args...`, failing the test if it has not ended within 60 s (it would
/// block on a FIFO); returns its exit code and stderr.
fn bounded(args: &[&str]) -> (Option<i32>, String) {
    let mut child = common::perennial()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("perennial {args:?} blocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), text(&out.stderr))
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn secondary_inputs_that_are_fifos_or_devices_are_refused_without_blocking() {
    let s = Scratch::new("untrusted-fifos");
    let (trace, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    let events = s.join("t.events.jsonl");
    std::fs::remove_file(&events).unwrap();
    mkfifo(&events);
    let manifest = s.join("t.manifest.json");
    std::fs::remove_file(&manifest).unwrap();
    mkfifo(&manifest);
    let (code, stderr) = bounded(&["eval", path(&trace), "--events"]);
    assert_eq!(code, Some(0), "{stderr}");

    std::fs::remove_file(&ckpt).unwrap();
    mkfifo(&ckpt);
    let (code, stderr) = bounded(&["run", "--resume", path(&ckpt)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is not a regular file"), "{stderr}");

    let file = sweep_file(&s, "fifo", "jsonl", 1, 50, 10);
    let out = s.join("out");
    let (code, stderr) = bounded(&[
        "sweep",
        path(&file),
        "--out",
        path(&out),
        "--collect",
        "/dev/zero",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is not a regular file"), "{stderr}");
}

#[test]
fn ids_that_would_name_files_too_long_and_traces_named_as_events_tables_are_refused() {
    let s = Scratch::new("untrusted-ids");
    let world = s.write("w.toml", CARTPOLE);
    let long = "r".repeat(201);
    let trace = s.join("t.jsonl");
    fails_with(
        &[
            "run",
            path(&world),
            "--steps",
            "5",
            "--run-id",
            &long,
            "--trace",
            path(&trace),
        ],
        2,
        "use at most 200",
    );
    let ok = "r".repeat(200);
    run(&[
        "run",
        path(&world),
        "--steps",
        "5",
        "--run-id",
        &ok,
        "--trace",
        path(&trace),
    ]);

    let events_named = s.join("foo.events.jsonl");
    fails_with(
        &[
            "run",
            path(&world),
            "--steps",
            "5",
            "--trace",
            path(&events_named),
        ],
        2,
        "an events table's",
    );
    assert!(!events_named.exists());

    let name = "n".repeat(300);
    let file = s.write(
        "long.toml",
        &format!("[sweep]\nname = \"{name}\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\nseeds = [0]\nsteps = 10\n"),
    );
    fails_with(&["sweep", path(&file), "--plan-json"], 2, "sweep.name");
}

#[test]
fn temp_files_of_killed_checkpoint_writers_are_removed_by_the_next_holder() {
    let s = Scratch::new("untrusted-temps");
    let (trace, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    let whole = std::fs::read(&trace).unwrap();
    // What a writer with pid 4194000 killed mid-checkpoint leaves.
    std::fs::write(s.join("t.ckpt.json.lock"), "4194000").unwrap();
    let stale = s.join("t.ckpt.json.4194000.tmp");
    std::fs::write(&stale, vec![b'x'; 1 << 20]).unwrap();
    run(&["run", "--resume", path(&ckpt)]);
    assert!(!stale.exists());
    assert_eq!(std::fs::read(&trace).unwrap(), whole);
}

#[test]
fn random_edits_of_any_checkpoint_field_are_refused_or_resume_byte_identically() {
    use proptest::prelude::*;
    let s = Scratch::new("untrusted-property");
    let (trace, ckpt) = checkpointed(&s, "t", "jsonl", "1");
    let whole = files(s.path());
    let mut paths = Vec::new();
    let original: serde_json::Value = serde_json::from_slice(&whole[&ckpt]).unwrap();
    leaves(&original, &mut Vec::new(), &mut paths);
    let restore = || {
        for p in files(s.path()).keys() {
            if !whole.contains_key(p) {
                std::fs::remove_file(p).unwrap();
            }
        }
        for (p, bytes) in &whole {
            std::fs::write(p, bytes).unwrap();
        }
    };
    let config = ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(pick in 0..paths.len(), kind in 0u8..3)| {
        restore();
        let mut edited = original.clone();
        mutate(&mut edited, &paths[pick], kind);
        std::fs::write(&ckpt, serde_json::to_vec(&edited).unwrap()).unwrap();
        let before = files(s.path());
        let out = cli(&["run", "--resume", path(&ckpt)]);
        let stderr = text(&out.stderr);
        prop_assert!(!stderr.contains("panicked"), "{}", stderr);
        if out.status.success() {
            prop_assert_eq!(&std::fs::read(&trace).unwrap(), &whole[&trace]);
            let events = s.join("t.events.jsonl");
            prop_assert_eq!(&std::fs::read(&events).unwrap(), &whole[&events]);
        } else {
            prop_assert_eq!(out.status.code(), Some(2), "{:?}: {}", &paths[pick], stderr);
            prop_assert!(files(s.path()) == before, "{:?}: a file changed", &paths[pick]);
        }
    });
}

/// Pids of processes other than this test whose command line names `needle`.
fn processes_naming(needle: &str) -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

#[test]
fn a_sweep_stopped_by_sigterm_stops_its_runs_and_the_next_invocation_finishes_them() {
    let s = Scratch::new("untrusted-sweep-sigterm");
    let file = s.write(
        "long.toml",
        "[sweep]\nname = \"long\"\nworlds = [\"worlds/warehouse.toml\"]\nagents = [\"random\"]\n\
         seeds = { from = 0, count = 2 }\nsteps = 400000\ncheckpoint_every = 20000\nformat = \"parquet\"\n",
    );
    let out = s.join("out");
    let mut sweep = common::perennial()
        .args(["sweep", path(&file), "--out", path(&out), "--jobs", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::fs::read_dir(out.join("checkpoints")).map_or(0, |d| d.count()) == 0 {
        assert!(started.elapsed().as_secs() < 120, "no run checkpointed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SIGTERM to the sweep alone, not to its process group.
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe {
        libc::kill(sweep.id() as libc::pid_t, libc::SIGTERM);
    }
    let waited = std::time::Instant::now();
    let status = loop {
        if let Some(status) = sweep.try_wait().unwrap() {
            break status;
        }
        if waited.elapsed().as_secs() > 120 {
            let _ = sweep.kill();
            panic!("the sweep did not stop");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stderr = {
        let mut e = String::new();
        std::io::Read::read_to_string(&mut sweep.stderr.take().unwrap(), &mut e).unwrap();
        e
    };
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by a signal"), "{stderr}");
    assert!(
        processes_naming(path(&out)).is_empty(),
        "a run was left going"
    );
    let m = manifest(&out);
    for run in m["runs"].as_array().unwrap() {
        assert_ne!(run["status"], "failed", "{run}");
    }
    let again = cli(&["sweep", path(&file), "--out", path(&out), "--jobs", "2"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    for run in manifest(&out)["runs"].as_array().unwrap() {
        assert_eq!(run["status"], "done", "{run}");
    }
}

/// The run manifest of the trace at `trace`, as JSON.
fn run_manifest(trace: &Path) -> serde_json::Value {
    let p = perennial::trace::Manifest::path_for(trace);
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

#[test]
fn the_run_manifest_is_named_after_the_trace_locked_and_records_a_failed_runs_rows() {
    let s = Scratch::new("untrusted-run-manifest");
    let world = s.write("w.toml", CARTPOLE);
    let traced = |trace: &Path, seed: &str| {
        vec![
            "run".to_string(),
            path(&world).into(),
            "--steps".into(),
            if seed == "3" { "5000" } else { "300" }.into(),
            "--seed".into(),
            seed.into(),
            "--run-id".into(),
            "same".into(),
            "--trace".into(),
            path(trace).into(),
        ]
    };
    let call = |v: &[String]| cli(&v.iter().map(String::as_str).collect::<Vec<_>>());

    // Two traces of one run id each keep their own manifest, and eval shows each its own.
    let (a, b) = (s.join("a.jsonl"), s.join("b.jsonl"));
    for (trace, seed) in [(&a, "1"), (&b, "2")] {
        let out = call(&traced(trace, seed));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert_eq!(run_manifest(&a)["seed"], 1);
    assert_eq!(run_manifest(&b)["seed"], 2);
    let shown = cli(&["eval", path(&b)]);
    let stdout = text(&shown.stdout);
    assert!(
        stdout.contains("same: perennial") && stdout.contains("seed 2,"),
        "{stdout}"
    );
    assert!(!stdout.contains("seed 1,"), "{stdout}");

    // A manifest of an older version, named after the run id, is still read for its trace,
    // and not for another trace of that run id.
    std::fs::rename(
        perennial::trace::Manifest::path_for(&a),
        s.join("same.manifest.json"),
    )
    .unwrap();
    assert!(text(&cli(&["eval", path(&a)]).stdout).contains("seed 1,"));
    std::fs::remove_file(perennial::trace::Manifest::path_for(&b)).unwrap();
    assert!(!text(&cli(&["eval", path(&b)]).stdout).contains("same: perennial"));

    // While a run holds the manifest, a second run onto that trace is refused and
    // changes nothing.
    let lock_path = s.join("b.manifest.json.lock");
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap();
    held.try_lock().unwrap();
    let before = files(s.path());
    let refused = call(&traced(&b, "2"));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("b.manifest.json"),
        "{}",
        text(&refused.stderr)
    );
    assert!(files(s.path()) == before, "a refused run changed a file");
    drop(held);

    // A run that fails part-way (here its trace may not grow past 64 KiB) records the rows
    // it did write, not 0.
    let c = s.join("c.jsonl");
    let mut cmd = common::perennial();
    cmd.args(traced(&c, "3"));
    // SAFETY: only async-signal-safe calls between fork and exec: setrlimit(2), and
    // signal(2) so that a write past the limit fails with EFBIG instead of killing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let limit = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let failed = cmd.output().unwrap();
    assert!(!failed.status.success(), "{}", text(&failed.stderr));
    let m = run_manifest(&c);
    assert!(
        m["exit_status"].as_str().unwrap().starts_with("failed: "),
        "{m}"
    );
    let complete = std::fs::read(&c)
        .unwrap()
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64;
    assert!(complete > 0);
    assert_eq!(m["steps_done"].as_u64(), Some(complete), "{m}");
}

#[test]
fn quadratic_work_no_more_each_runs_record_is_journaled_and_read_back() {
    let s = Scratch::new("untrusted-sweep-journal");
    let file = sweep_file(&s, "jr", "jsonl", 3, 50, 25);
    let out = s.join("out");
    let done = cli(&["sweep", path(&file), "--out", path(&out), "--jobs", "2"]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    // A finished sweep leaves the manifest whole and no journal.
    assert!(!out.join("manifest.journal").exists());
    // What a sweep killed between two rewrites of the manifest leaves: the records since
    // in the journal, its last line torn by the kill.
    let m = manifest(&out);
    let mut rec = m["runs"][1].clone();
    rec["status"] = "failed".into();
    rec["error"] = "recorded in the journal".into();
    let mut journal = serde_json::to_vec(&rec).unwrap();
    journal.extend_from_slice(b"\n{\"run_id\": \"torn");
    std::fs::write(out.join("manifest.journal"), journal).unwrap();
    let plan = cli(&["sweep", path(&file), "--out", path(&out), "--plan-json"]);
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let statuses: Vec<&str> = each_str(&plan["runs"], "status");
    assert_eq!(statuses, ["done", "failed", "done"]);
    // The next sweep applies it: it runs the failed run again and compacts the journal.
    let again = cli(&["sweep", path(&file), "--out", path(&out), "--jobs", "2"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let m = manifest(&out);
    assert_eq!(m["runs"][1]["status"], "done");
    assert_eq!(m["runs"][1]["attempts"], 2);
    assert!(!out.join("manifest.journal").exists());
}

#[test]
fn sizes_the_limits_allow_run_and_sizes_beyond_them_are_refused_at_load() {
    let s = Scratch::new("untrusted-sizes");
    let warehouse = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/warehouse.toml"),
    )
    .unwrap();
    // Every site count at its limit runs, with the agent whose policy grows fastest with
    // them.
    let at_limit = s.write(
        "sites.toml",
        &warehouse
            .replace("suppliers = 3", "suppliers = 1000")
            .replace("docks = 4", "docks = 1000")
            .replace("carriers = 3", "carriers = 1000"),
    );
    run(&[
        "run",
        path(&at_limit),
        "--agent",
        "actor-critic",
        "--steps",
        "20",
        "--no-trace",
    ]);
    for (name, text_in, text_out, field) in [
        ("skus.toml", "skus = 8", "skus = 10001", "world.params.skus"),
        (
            "docks.toml",
            "docks = 4",
            "docks = 1001",
            "world.params.docks",
        ),
    ] {
        let file = s.write(name, &warehouse.replace(text_in, text_out));
        let out = cli(&["check", path(&file)]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains(field) && err.contains("use at most"), "{err}");
    }
    for (opt, fragment) in [
        (
            "hidden=[4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096]",
            "use at most 4194304",
        ),
        ("epochs=1000000", "use at most 1000 passes"),
    ] {
        let out = cli(&[
            "run",
            "worlds/cartpole.toml",
            "--agent",
            "ppo",
            "--agent-opt",
            opt,
            "--steps",
            "10",
            "--no-trace",
        ]);
        assert_eq!(out.status.code(), Some(2), "{opt}");
        assert!(
            text(&out.stderr).contains(fragment),
            "{}",
            text(&out.stderr)
        );
    }
}
