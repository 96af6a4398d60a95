//! The events table as a user meets it: `perennial run` writes `<trace-stem>.events.<format>`
//! beside the trace, with the shifts the scheduler made, the failures the world injected
//! and the episode ends; it survives SIGKILL and `--resume`; `eval --events` prints it and
//! reports a damaged table without failing; sweeps write Parquet.

use std::path::Path;
use std::time::Duration;

use perennial::trace::{EventReader, EventRow, events_path};
use perennial::trace::{TraceFormat, is_events_table};

mod common;
use common::{
    cartpole_args, files_in, listing, path, perennial, read_rows, run, run_args,
    run_parquet_with_checkpoints, spawn_to_checkpoint, temp,
};

fn events(trace: &Path) -> Vec<EventRow> {
    let table = events_path(trace, TraceFormat::from_path(trace));
    let mut reader = EventReader::open(&table);
    let out: Vec<EventRow> = (&mut reader).collect();
    assert!(reader.problems().is_empty(), "{:?}", reader.problems());
    out
}

/// A warehouse run with failures and a fixed shift at step 2000, with the run id `wh`.
fn warehouse(trace: &Path, format: &str) {
    run(&run_args(
        "worlds/warehouse.toml",
        "5000",
        &[
            "--seed",
            "4",
            "--trace",
            path(trace),
            "--format",
            format,
            "--run-id",
            "wh",
        ],
    ));
}

#[test]
fn the_events_are_what_the_scheduler_and_the_world_did() {
    let trace = temp("wh.jsonl");
    warehouse(&trace, "jsonl");
    let (rows, events) = (read_rows(&[&trace]), events(&trace));
    let changes: Vec<(u64, &str, &str)> = rows
        .windows(2)
        .filter(|w| w[0].regime != w[1].regime)
        .map(|w| (w[1].step, w[0].regime.as_str(), w[1].regime.as_str()))
        .collect();
    let shifts: Vec<(u64, &str, &str)> = events
        .iter()
        .filter(|e| e.event == "regime_shift")
        .map(|e| {
            (
                e.step,
                e.from_regime.as_deref().unwrap(),
                e.to_regime.as_deref().unwrap(),
            )
        })
        .collect();
    assert!(!changes.is_empty(), "the warehouse world shifts");
    assert_eq!(shifts, changes);
    for e in events.iter().filter(|e| e.event == "regime_shift") {
        let row = &rows[e.step as usize];
        assert_eq!(e.origin.as_deref(), Some(row.regime_origin.as_str()));
        assert_eq!(e.to_regime.as_deref(), Some(row.regime.as_str()));
    }
    let failures: Vec<&EventRow> = events.iter().filter(|e| e.event == "failure").collect();
    assert!(failures.len() > 10, "{} failures", failures.len());
    let kinds = [
        "dock_breakdown",
        "carrier_no_show",
        "supplier_delay",
        "system_outage",
        "demand_spike",
    ];
    for f in &failures {
        assert!(kinds.contains(&f.kind.as_deref().unwrap()), "{f:?}");
        // One step is one hour of the world, from hour 0.
        assert_eq!(f.start, Some(f.step));
        assert!(f.duration.unwrap() >= 1);
        assert_eq!(
            f.target.is_none(),
            f.kind.as_deref() == Some("system_outage")
        );
    }
    assert!(events.windows(2).all(|w| w[0].step <= w[1].step));
    assert!(events.iter().all(|e| e.run_id == rows[0].run_id));
}

#[test]
fn episode_ends_are_the_rows_the_env_ended() {
    let trace = temp("cp.jsonl");
    run(&cartpole_args("3000", "jsonl", &trace));
    let ends: Vec<(u64, u64, bool, bool)> = read_rows(&[&trace])
        .iter()
        .filter(|r| r.terminated || r.truncated)
        .map(|r| (r.step, r.episode, r.terminated, r.truncated))
        .collect();
    let events: Vec<(u64, u64, bool, bool)> = events(&trace)
        .iter()
        .map(|e| {
            assert_eq!(e.event, "episode_end");
            (
                e.step,
                e.episode.unwrap(),
                e.terminated.unwrap(),
                e.truncated.unwrap(),
            )
        })
        .collect();
    assert!(ends.len() > 10);
    assert_eq!(events, ends);
}

#[test]
fn jsonl_csv_and_parquet_events_are_equal() {
    let jsonl = temp("eq.jsonl");
    warehouse(&jsonl, "jsonl");
    let expected = events(&jsonl);
    for (name, format) in [("eq.csv", "csv"), ("eq.parquet", "parquet")] {
        let trace = temp(name);
        warehouse(&trace, format);
        assert_eq!(events(&trace), expected, "{format}");
        if format == "parquet" {
            let table = events_path(&trace, TraceFormat::Parquet);
            assert!(table.is_dir() && is_events_table(&table));
        }
    }
}

/// The warehouse run the kill tests cut: 150,000 steps, seed 5, traced in `format`.
fn long_run(format: &str) -> Vec<&str> {
    run_args(
        "worlds/warehouse.toml",
        "150000",
        &["--seed", "5", "--format", format],
    )
}

/// Kills a checkpointed run once its first checkpoint exists, then resumes it.
fn kill_and_resume(trace: &Path, format: &str) {
    let ckpt = trace.with_extension("ckpt.json");
    let args = long_run(format);
    let mut child = spawn_to_checkpoint(&args, trace, 10_000, &ckpt);
    // Past the checkpoint, so the events file holds events the resume must cut.
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let cut = read_rows(&[trace]).len();
    assert!(cut < 150_000, "the run was killed mid-way ({cut} rows)");
    run(&["run", "--resume", path(&ckpt)]);
}

#[test]
fn a_shortened_parquet_events_table_refuses_the_resume_before_the_trace_is_cut() {
    let trace = temp("short-events.parquet");
    let ckpt = temp("short-events.ckpt.json");
    // 3500 rows, a checkpoint at 3000: a resume would cut the last 500 rows.
    run_parquet_with_checkpoints("3500", &trace, &ckpt);
    let table = events_path(&trace, TraceFormat::Parquet);
    let parts = listing(&table);
    assert!(
        parts.len() >= 3,
        "one events part per checkpoint: {parts:?}"
    );
    // Only the events up to the first checkpoint are left.
    for part in &parts[1..] {
        std::fs::remove_file(part).unwrap();
    }
    let (trace_before, table_before) = (files_in(&trace), files_in(&table));
    let out = perennial()
        .args(["run", "--resume", path(&ckpt)])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(path(&table)), "{err}");
    assert!(err.contains("the events table"), "{err}");
    assert!(err.contains("it is not this checkpoint's"), "{err}");
    assert!(files_in(&trace) == trace_before, "the trace was touched");
    assert!(
        files_in(&table) == table_before,
        "the events table was touched"
    );
}

#[test]
fn sigkill_then_resume_gives_the_events_of_an_uninterrupted_run() {
    for (name, format) in [("kill", "jsonl"), ("killpq", "parquet")] {
        let ext = if format == "jsonl" {
            "jsonl"
        } else {
            "parquet"
        };
        let whole = temp(&format!("{name}-whole.{ext}"));
        run(&[&long_run(format)[..], &["--trace", path(&whole)]].concat());
        let cut = temp(&format!("{name}-cut.{ext}"));
        kill_and_resume(&cut, format);
        let (a, b) = (events(&whole), events(&cut));
        assert!(a.len() > 1000, "{} events", a.len());
        assert_eq!(a, b, "{format}");
        if format == "jsonl" {
            let bytes = |t: &Path| std::fs::read(events_path(t, TraceFormat::Jsonl)).unwrap();
            assert_eq!(bytes(&whole), bytes(&cut), "the same events bytes");
        }
    }
}

#[test]
fn eval_prints_the_events_and_puts_them_in_the_json() {
    let trace = temp("ev.jsonl");
    warehouse(&trace, "jsonl");
    let expected = events(&trace);
    let text = String::from_utf8(run(&["eval", path(&trace), "--events"]).stdout).unwrap();
    assert!(
        text.contains(&format!("events ({})", expected.len())),
        "{text}"
    );
    assert!(text.contains("regime_shift") && text.contains("failure"));
    let out = run(&["eval", path(&trace), "--events", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let got: Vec<EventRow> = serde_json::from_value(report["events"].clone()).unwrap();
    assert_eq!(got, expected);
    let plain: serde_json::Value =
        serde_json::from_slice(&run(&["eval", path(&trace), "--json"]).stdout).unwrap();
    assert!(plain.get("events").is_none());
}

#[test]
fn an_events_table_given_as_a_trace_is_skipped_with_a_warning() {
    let trace = temp("glob.jsonl");
    warehouse(&trace, "jsonl");
    let table = events_path(&trace, TraceFormat::Jsonl);
    let out = run(&["eval", path(&trace), path(&table), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["runs"].as_array().unwrap().len(), 1);
    assert!(
        report["warnings"]
            .to_string()
            .contains("an events table, not a trace")
    );
}

#[test]
fn a_torn_or_hostile_events_table_is_reported_not_fatal() {
    let trace = temp("torn.jsonl");
    warehouse(&trace, "jsonl");
    let table = events_path(&trace, TraceFormat::Jsonl);
    let all = events(&trace);
    let bytes = std::fs::read(&table).unwrap();
    std::fs::write(&table, &bytes[..bytes.len() - 20]).unwrap();
    let out = run(&["eval", path(&trace), "--events", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["events"].as_array().unwrap().len(),
        all.len() - 1,
        "every complete event"
    );
    assert!(report["warnings"].to_string().contains("is torn"));

    // Not an events table at all, and a missing one: warnings, and the metrics still print.
    std::fs::write(&table, b"\x00\xffnot json\n{\"step\": \"x\"}\n").unwrap();
    let out = run(&["eval", path(&trace), "--events"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("events (0)"), "{text}");
    assert!(text.contains("is not an event"), "{text}");
    std::fs::remove_file(&table).unwrap();
    let text = String::from_utf8(run(&["eval", path(&trace), "--events"]).stdout).unwrap();
    assert!(text.contains("no events table beside this trace"), "{text}");

    // A Parquet table with a half-written part: the other parts are read.
    let pq = temp("torn.parquet");
    let ckpt = temp("torn-pq.ckpt.json");
    run(&run_args(
        "worlds/warehouse.toml",
        "3000",
        &[
            "--format",
            "parquet",
            "--trace",
            path(&pq),
            "--checkpoint-every",
            "1000",
            "--checkpoint",
            path(&ckpt),
        ],
    ));
    let table = events_path(&pq, TraceFormat::Parquet);
    let parts = listing(&table);
    assert_eq!(parts.len(), 3, "one part per checkpoint: {parts:?}");
    let last = parts.last().unwrap();
    let bytes = std::fs::read(last).unwrap();
    std::fs::write(last, &bytes[..bytes.len() / 2]).unwrap();
    let out = run(&["eval", path(&pq), "--events", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let got = report["events"].as_array().unwrap();
    assert!(!got.is_empty());
    assert!(got.iter().all(|e| e["step"].as_u64().unwrap() < 2000));
    assert!(
        report["warnings"]
            .to_string()
            .contains("part-00002.parquet")
    );
}

#[test]
fn a_sweep_writes_parquet_traces_and_events() {
    let dir = temp("sweep-pq");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pq.toml");
    std::fs::write(
        &file,
        "[sweep]\nname = \"pq\"\nworlds = [\"worlds/warehouse.toml\"]\nagents = [\"random\"]\n\
         seeds = [0, 1]\nsteps = 2500\ncheckpoint_every = 1000\nformat = \"parquet\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    run(&["sweep", path(&file), "--jobs", "1", "--out", path(&out_dir)]);
    for seed in [0, 1] {
        let trace = out_dir.join(format!("traces/warehouse-random-seed{seed}.parquet"));
        assert!(trace.is_dir(), "{}", trace.display());
        assert_eq!(read_rows(&[&trace]).len(), 2500);
        let table = events_path(&trace, TraceFormat::Parquet);
        assert!(table.ends_with(format!("warehouse-random-seed{seed}.events.parquet")));
        assert!(!events(&trace).is_empty());
    }
    let eval: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("eval.json")).unwrap()).unwrap();
    assert_eq!(eval["runs"].as_array().unwrap().len(), 2);
    // Rerunning finds the Parquet traces (directories) done and runs nothing again.
    let again = run(&["sweep", path(&file), "--jobs", "1", "--out", path(&out_dir)]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("done")
            || String::from_utf8_lossy(&again.stderr).contains("done"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert!(
        m["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["attempts"] == 1),
        "{m}"
    );
}

#[test]
fn a_ppo_run_writes_its_plasticity_after_every_window_and_eval_shows_the_path() {
    let trace = temp("plasticity.jsonl");
    let mut args = cartpole_args("1100", "jsonl", &trace);
    args.extend(["--agent", "ppo", "--window-steps", "256", "--run-id", "pl"]);
    run(&args);
    let diagnostics: Vec<(u64, perennial::trace::Plasticity)> = events(&trace)
        .iter()
        .filter(|e| e.event == "plasticity")
        .map(|e| (e.step, e.plasticity_values().expect("four numbers")))
        .collect();
    let steps: Vec<u64> = diagnostics.iter().map(|(s, _)| *s).collect();
    // Four full windows, then the last, partial one at the run's end.
    assert_eq!(steps, [255, 511, 767, 1023, 1099]);
    for (_, p) in &diagnostics {
        assert!((0.0..=1.0).contains(&p.dormant_fraction), "{p:?}");
        assert!((1.0..=64.0).contains(&p.effective_rank), "{p:?}");
        assert!(p.weight_norm > 0.0 && p.grad_norm > 0.0, "{p:?}");
    }

    let text = String::from_utf8(run(&["eval", path(&trace)]).stdout).unwrap();
    assert!(text.contains("plasticity of the policy network"), "{text}");
    let out = run(&["eval", path(&trace), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let path_of_run = &report["plasticity"][0];
    assert_eq!(path_of_run["run_id"], "pl");
    let end = diagnostics.last().unwrap().1;
    assert_eq!(path_of_run["end"]["effective_rank"], end.effective_rank);
    assert_eq!(path_of_run["end"]["weight_norm"], end.weight_norm);
    let windows: u64 = path_of_run["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["windows"].as_u64().unwrap())
        .sum();
    assert_eq!(windows, 5);
}

#[test]
fn an_agent_without_a_network_writes_no_plasticity_and_eval_shows_none() {
    let trace = temp("no-plasticity.jsonl");
    let mut args = cartpole_args("600", "jsonl", &trace);
    args.extend(["--agent", "random"]);
    run(&args);
    assert!(events(&trace).iter().all(|e| e.event != "plasticity"));
    let report: serde_json::Value =
        serde_json::from_slice(&run(&["eval", path(&trace), "--json"]).stdout).unwrap();
    assert!(report.get("plasticity").is_none());
    let text = String::from_utf8(run(&["eval", path(&trace)]).stdout).unwrap();
    assert!(!text.contains("plasticity"), "{text}");
}
