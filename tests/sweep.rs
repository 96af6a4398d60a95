//! `perennial sweep` run as a user would: traces identical to lone runs, one eval group per
//! (task, agent), resumption after SIGKILL, the directory lock, failures and retries, and
//! the `--plan-json` / `--collect` protocol other backends use.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{Scratch, cli, fails_with, files_in, path, run};

/// `sweep FILE --out OUT` and `extra`, as arguments.
fn sweep<'a>(file: &'a Path, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    [&["sweep", path(file), "--out", path(out)][..], extra].concat()
}

/// A JSON file the sweep wrote.
fn json(file: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// 2 worlds × 2 agents × 2 seeds.
fn sweep_file(dir: &Path, steps: u64, every: u64, agents: &str) -> PathBuf {
    let path = dir.join("small.toml");
    std::fs::write(
        &path,
        format!(
            "[sweep]\nname = \"small\"\nworlds = [\"worlds/cartpole-drift.toml\", \"worlds/warehouse.toml\"]\n\
             agents = [{agents}]\nseeds = {{ from = 0, count = 2 }}\nsteps = {steps}\n\
             checkpoint_every = {every}\n"
        ),
    )
    .unwrap();
    path
}

fn manifest(dir: &Path) -> serde_json::Value {
    json(&dir.join("manifest.json"))
}

fn statuses(dir: &Path) -> Vec<String> {
    manifest(dir)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

/// The sweep's trace files (not the run manifests beside them, which hold wall-clock times,
/// nor their locks, which hold pids).
fn traces(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = files_in(&dir.join("traces"));
    files.retain(|(name, _)| !name.ends_with(".manifest.json") && !name.ends_with(".lock"));
    files
}

/// Runs the sweep of `file` into `out` with two jobs, and checks that its eight runs are done.
fn sweep_to_the_end(file: &Path, out: &Path) {
    run(&sweep(file, out, &["--jobs", "2"]));
    assert_eq!(statuses(out), vec!["done"; 8]);
}

/// Writes the sweep file of `random` and `actor-critic` over both worlds and two seeds
/// (eight runs of `steps` steps, a checkpoint every `every`) in `dir` and sweeps it to the
/// end into `dir/out`; returns the file and `dir/out`.
fn two_agents_swept(dir: &Path, steps: u64, every: u64, out: &str) -> (PathBuf, PathBuf) {
    let file = sweep_file(dir, steps, every, "\"random\", \"actor-critic\"");
    let out = dir.join(out);
    sweep_to_the_end(&file, &out);
    (file, out)
}

#[test]
fn sweep_traces_match_lone_runs_and_eval_has_one_group_per_task_and_agent() {
    let dir = Scratch::new("lone");
    let (file, out_dir) = two_agents_swept(dir.path(), 1500, 400, "out");

    let m = manifest(&out_dir);
    for run in m["runs"].as_array().unwrap() {
        assert_eq!(run["exit_code"], 0);
        assert_eq!(run["steps_done"], 1500);
        let id = run["run_id"].as_str().unwrap();
        let (world, rest) = if let Some(rest) = id.strip_prefix("cartpole-") {
            ("worlds/cartpole-drift.toml", rest)
        } else {
            (
                "worlds/warehouse.toml",
                id.strip_prefix("warehouse-").unwrap(),
            )
        };
        let (agent, seed) = rest.rsplit_once("-seed").unwrap();
        let lone = dir.join(&format!("{id}.jsonl"));
        common::run(&[
            "run",
            world,
            "--agent",
            agent,
            "--seed",
            seed,
            "--steps",
            "1500",
            "--run-id",
            id,
            "--trace",
            lone.to_str().unwrap(),
        ]);
        let swept = std::fs::read(run["trace"].as_str().unwrap()).unwrap();
        assert!(
            swept == std::fs::read(&lone).unwrap(),
            "{id}: the sweep's trace differs from a lone run's"
        );
    }

    let eval = json(&out_dir.join("eval.json"));
    let groups = eval["groups"].as_array().unwrap();
    let mut keys: Vec<(String, String)> = groups
        .iter()
        .map(|g| {
            (
                g["task"].as_str().unwrap().into(),
                g["algorithm_id"].as_str().unwrap().into(),
            )
        })
        .collect();
    keys.sort();
    let expected: Vec<(String, String)> = [
        ("cartpole", "actor-critic"),
        ("cartpole", "random"),
        ("warehouse", "actor-critic"),
        ("warehouse", "random"),
    ]
    .iter()
    .map(|(t, a)| (t.to_string(), a.to_string()))
    .collect();
    assert_eq!(keys, expected);
    for g in groups {
        assert_eq!(g["runs"], 2);
        let (_, label) = g["configurations"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let mean = &label["mean_reward"];
        assert!(mean["ci_low"].as_f64().unwrap() <= mean["mean"].as_f64().unwrap());
        assert!(mean["mean"].as_f64().unwrap() <= mean["ci_high"].as_f64().unwrap());
        assert_eq!(mean["n"], 2);
    }
    assert!(
        std::fs::read_to_string(out_dir.join("plot.svg"))
            .unwrap()
            .starts_with("<svg")
    );
    assert!(
        !std::fs::read_to_string(out_dir.join("eval.txt"))
            .unwrap()
            .is_empty()
    );

    // Rerunning a finished sweep runs nothing and changes no trace.
    let before = traces(&out_dir);
    let again = cli(&sweep(&file, &out_dir, &[]));
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("8 already done"));
    assert!(before == traces(&out_dir));
    assert!(
        manifest(&out_dir)["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["attempts"] == 1)
    );
}

#[test]
fn a_sigkilled_sweep_rerun_finishes_with_the_traces_of_an_uninterrupted_one() {
    let dir = Scratch::new("kill");
    // Runs long next to their checkpoint period, so a run seen running with a checkpoint
    // is still running when the kill lands a poll later.
    let (file, whole) = two_agents_swept(dir.path(), 60_000, 500, "whole");

    // The kill must land while a run is under way; a run can end between the manifest read
    // and the kill on a quick machine, so try again (each try in a fresh directory) until
    // a run was interrupted and resumed. Whatever happens, the traces must match.
    let mut resumed_somewhere = false;
    for attempt in 0..4 {
        let cut = dir.join(&format!("cut{attempt}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_perennial"))
            .args(sweep(&file, &cut, &["--jobs", "2"]))
            .env_remove("PERENNIAL_BIN")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // Part-way: a run has finished and another has checkpointed but not finished.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "the sweep never got part-way");
            if let Ok(text) = std::fs::read_to_string(cut.join("manifest.json"))
                && let Ok(m) = serde_json::from_str::<serde_json::Value>(&text)
            {
                let runs = m["runs"].as_array().unwrap();
                let done = runs.iter().any(|r| r["status"] == "done");
                let checkpointed = runs.iter().any(|r| {
                    r["status"] == "running"
                        && Path::new(r["checkpoint"].as_str().unwrap()).is_file()
                });
                if done && checkpointed {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: signals the process group of the sweep this test spawned.
        assert_eq!(
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) },
            0
        );
        child.wait().unwrap();
        let after_kill = statuses(&cut);
        if after_kill.iter().all(|s| s == "done") {
            continue;
        }

        // The kernel dropped the dead sweep's lock: the rerun takes the directory.
        sweep_to_the_end(&file, &cut);
        // Every run's trace and the events table beside it.
        let (a, b) = (traces(&whole), traces(&cut));
        let events = a
            .iter()
            .filter(|(name, _)| name.contains(".events."))
            .count();
        assert_eq!((a.len() - events, events), (8, 8));
        assert_eq!(a.len(), b.len());
        for ((name, x), (_, y)) in a.iter().zip(&b) {
            assert!(
                x == y,
                "{name}: the resumed sweep's trace differs from the uninterrupted one"
            );
        }
        let resumed = manifest(&cut)["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["attempts"].as_u64().unwrap() > 1)
            .count();
        if resumed >= 1 {
            resumed_somewhere = true;
            break;
        }
    }
    assert!(
        resumed_somewhere,
        "no run was interrupted and resumed in four tries"
    );
}

#[test]
fn a_second_sweep_on_a_held_directory_is_refused_naming_the_holder() {
    let dir = Scratch::new("lock");
    let file = sweep_file(dir.path(), 100, 50, "\"random\"");
    let out_dir = dir.join("out");
    let held = perennial::sweep::DirLock::acquire(&out_dir).unwrap();
    let out = cli(&sweep(&file, &out_dir, &[]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    assert!(!out_dir.join("manifest.json").exists());
    drop(held);
}

#[test]
fn a_failed_run_is_retried_once_then_reported_without_stopping_the_others() {
    let dir = Scratch::new("fail");
    let file = sweep_file(dir.path(), 300, 100, "\"random\"");
    // A stand-in executable: one run always crashes, another crashes on its first attempt.
    let marker = dir.join("crashed-once");
    let flaky = dir.join("flaky.sh");
    std::fs::write(
        &flaky,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n*warehouse-random-seed0*) echo 'error: simulated crash' >&2; exit 1;;\n\
             *warehouse-random-seed1*) if [ ! -e '{m}' ]; then touch '{m}'; exit 1; fi;;\nesac\n\
             exec '{bin}' \"$@\"\n",
            m = marker.display(),
            bin = env!("CARGO_BIN_EXE_perennial")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&flaky, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out_dir = dir.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args(sweep(&file, &out_dir, &["--jobs", "2"]))
        .env("PERENNIAL_BIN", &flaky)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 run(s) failed") && err.contains("warehouse-random-seed0: simulated crash"),
        "{err}"
    );
    let m = manifest(&out_dir);
    for run in m["runs"].as_array().unwrap() {
        let id = run["run_id"].as_str().unwrap();
        let (status, attempts) = match id {
            "warehouse-random-seed0" => ("failed", 2),
            "warehouse-random-seed1" => ("done", 2),
            _ => ("done", 1),
        };
        assert_eq!(run["status"], status, "{id}");
        assert_eq!(run["attempts"], attempts, "{id}");
    }
    let eval = json(&out_dir.join("eval.json"));
    assert_eq!(eval["groups"].as_array().unwrap().len(), 2);
}

#[test]
fn an_agent_a_world_cannot_run_is_refused_at_load() {
    let err = refused("agent", 100, 50, "\"random\", \"base-stock\"");
    assert!(
        err.contains("small.toml:4: field `sweep.agents[1]`")
            && err.contains("cartpole-drift.toml"),
        "{err}"
    );
}

/// Runs `sweep` on a sweep file made by [`sweep_file`] that must be refused: exit code 2
/// and no output folder. Returns the stderr.
fn refused(name: &str, steps: u64, every: u64, agents: &str) -> String {
    let dir = Scratch::new(name);
    let file = sweep_file(dir.path(), steps, every, agents);
    let err = fails_with(&sweep(&file, &dir.join("out"), &[]), 2, "");
    assert!(!dir.join("out").exists());
    err
}

#[test]
fn a_bad_sweep_file_is_refused_with_its_line_and_field() {
    let err = refused("bad", 0, 50, "\"random\"");
    assert!(err.contains("small.toml:6: field `sweep.steps`"), "{err}");
}

#[test]
fn runs_made_from_the_plan_are_collected_into_the_manifest_and_eval() {
    let dir = Scratch::new("collect");
    let file = sweep_file(dir.path(), 200, 100, "\"random\"");
    let out_dir = dir.join("out");
    let plan = cli(&sweep(&file, &out_dir, &["--plan-json"]));
    assert!(plan.status.success());
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let runs = plan["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let mut results = serde_json::Map::new();
    for run in runs {
        assert_eq!(run["status"], "pending");
        let argv: Vec<&str> = run["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        for p in ["trace", "checkpoint"] {
            std::fs::create_dir_all(Path::new(run[p].as_str().unwrap()).parent().unwrap()).unwrap();
        }
        let code = cli(&argv).status.code();
        results.insert(
            run["run_id"].as_str().unwrap().into(),
            serde_json::json!({"exit_code": code, "attempts": 1}),
        );
    }
    let results_path = dir.join("results.json");
    std::fs::write(&results_path, serde_json::to_string(&results).unwrap()).unwrap();
    run(&sweep(&file, &out_dir, &["--collect", path(&results_path)]));
    assert_eq!(statuses(&out_dir), vec!["done"; 4]);
    assert!(out_dir.join("eval.json").is_file());
}
