//! Parquet traces as a user meets them: `perennial run --format parquet`, then `eval`,
//! `episodes` and `--resume` on the directory of part files, and bad Parquet input.

use std::path::{Path, PathBuf};

use perennial::trace::{Manifest, TraceReader, TraceRow};

mod common;
use common::{
    TempPath, cartpole_args, each_str, fails_with, jsonl_and_parquet, listing, path, read_rows,
    run, run_args, run_parquet_with_checkpoints, spawn_to_checkpoint, temp,
};

/// The same run (seed 3) traced as JSON Lines and as Parquet.
fn both(world: &str, steps: &str, extra: &[&str], name: &str) -> (TempPath, TempPath) {
    jsonl_and_parquet(world, steps, "3", extra, name)
}

fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut p = listing(dir);
    p.retain(|p| p.extension().is_some_and(|x| x == "parquet"));
    p
}

#[test]
fn parquet_and_jsonl_traces_of_one_run_hold_the_same_rows() {
    let (jsonl, parquet) = both(
        "worlds/warehouse.toml",
        "3000",
        &["--agent", "base-stock"],
        "warehouse",
    );
    assert!(parquet.is_dir());
    assert!(!parts(&parquet).is_empty());
    let (a, b) = (read_rows(&[&jsonl]), read_rows(&[&parquet]));
    assert_eq!(a.len(), 3000);
    assert_eq!(a, b);
    assert!(a.iter().any(|r| !r.components.is_empty()));
}

#[test]
fn transitions_read_back_from_parquet_list_columns() {
    let (jsonl, parquet) = both(
        "worlds/cartpole.toml",
        "400",
        &["--record-transitions", "--auto-reset"],
        "cartpole-transitions",
    );
    let (a, b) = (read_rows(&[&jsonl]), read_rows(&[&parquet]));
    assert_eq!(a.len(), b.len());
    assert!(matches!(&b[0].obs, Some(perennial::trace::RecordedObs::Flat(o)) if o.len() == 4));
    assert_eq!(a, b);
    let episodes = |trace: &Path| {
        let out = temp(&format!(
            "{}.episodes.jsonl",
            trace.file_name().unwrap().to_string_lossy()
        ));
        run(&["episodes", path(trace), "--out", path(&out)]);
        std::fs::read_to_string(out).unwrap().lines().count()
    };
    assert_eq!(episodes(&jsonl), episodes(&parquet));
}

#[test]
fn eval_json_is_identical_for_parquet_and_jsonl() {
    let (jsonl, parquet) = both("worlds/cartpole-drift.toml", "5000", &[], "drift");
    let eval = |trace: &Path| run(&["eval", path(trace), "--json"]).stdout;
    let (a, b) = (eval(&jsonl), eval(&parquet));
    assert!(!a.is_empty());
    assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
}

#[test]
fn one_eval_call_reads_parquet_and_jsonl_together() {
    let [(jsonl, _), (_, parquet)] =
        ["mixed-a", "mixed-b"].map(|n| both("worlds/cartpole.toml", "300", &["--run-id", n], n));
    let out = run(&["eval", path(&jsonl), path(&parquet), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = each_str(&report["runs"], "run_id");
    assert_eq!(ids, ["mixed-a", "mixed-b"]);
}

#[test]
fn a_manifest_records_what_produced_the_run() {
    let trace = temp("manifest.parquet");
    run(&run_args(
        "worlds/cartpole.toml",
        "200",
        &[
            "--seed",
            "11",
            "--run-id",
            "manifested",
            "--agent",
            "ppo",
            "--agent-opt",
            "lr=0.001",
            "--format",
            "parquet",
            "--trace",
            path(&trace),
        ],
    ));
    let beside = Manifest::read(&Manifest::path_for(&trace)).unwrap();
    assert_eq!(beside.seed, 11);
    assert_eq!(beside.agent, "ppo");
    assert_eq!(beside.agent_options, serde_json::json!({"lr": 0.001}));
    assert_eq!(beside.exit_status, "completed");
    assert!(beside.ended_at.is_some());
    let world = beside.world_file.as_ref().unwrap();
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/cartpole.toml"))
            .unwrap();
    assert_eq!(world.text, text);
    assert_eq!(world.hash, perennial::trace::content_hash(&text));
    assert_eq!(beside.options["format"], "parquet");
    let inside =
        Manifest::parse(&perennial::trace::parquet_manifest(&trace).unwrap().unwrap()).unwrap();
    assert_eq!(inside.run_id, "manifested");
    assert_eq!(inside.world_file, beside.world_file);
    let text = String::from_utf8(run(&["eval", path(&trace)]).stdout).unwrap();
    assert!(text.contains("manifested: perennial"), "{text}");
}

#[test]
fn eval_warns_when_grouped_runs_came_from_different_world_files() {
    let world = temp("edited.toml");
    let original =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/cartpole.toml"))
            .unwrap();
    let mut traces = Vec::new();
    for (i, text) in [original.clone(), format!("{original}\n# edited\n")]
        .iter()
        .enumerate()
    {
        std::fs::write(&world, text).unwrap();
        let trace = temp(&format!("edited-{i}.jsonl"));
        run(&[
            "run",
            path(&world),
            "--steps",
            "150",
            "--seed",
            &i.to_string(),
            "--trace",
            path(&trace),
        ]);
        traces.push(trace);
    }
    let out = run(&["eval", path(&traces[0]), path(&traces[1]), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("different world-file"), "{warnings}");
}

#[test]
fn sigkill_then_resume_gives_the_rows_of_an_uninterrupted_run() {
    let (whole, cut, ckpt) = (
        temp("whole.parquet"),
        temp("cut.parquet"),
        temp("cut.ckpt.json"),
    );
    let common = [
        "run",
        "worlds/warehouse.toml",
        "--agent",
        "adaptive-base-stock",
        "--steps",
        "150000",
        "--seed",
        "5",
        "--format",
        "parquet",
    ];
    run(&[&common[..], &["--trace", path(&whole)]].concat());
    let mut child = spawn_to_checkpoint(&common, &cut, 10_000, &ckpt);
    child.kill().unwrap();
    child.wait().unwrap();
    let cut_rows = read_rows(&[&cut]).len();
    assert!(
        cut_rows < 150_000,
        "the run was killed mid-way ({cut_rows} rows)"
    );
    run(&["run", "--resume", path(&ckpt)]);
    assert_eq!(read_rows(&[&whole]), read_rows(&[&cut]));
}

#[test]
fn with_part_seconds_0_a_sigkill_keeps_every_window_flushed_before_it() {
    let (cut, whole) = (temp("every-window.parquet"), temp("every-window.jsonl"));
    let window = 100;
    let mut child = common::perennial()
        .args(run_args(
            "worlds/warehouse.toml",
            "10000000",
            &["--seed", "4", "--format", "parquet", "--part-seconds", "0"],
        ))
        .args(["--window-steps", "100", "--trace", path(&cut)])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts");
    // Five windows flushed means five part files on disk (each renamed into place whole).
    let started = std::time::Instant::now();
    while !cut.exists() || parts(&cut).len() < 5 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "no five parts appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Every part is one whole window: nothing flushed was lost, nothing torn was kept.
    let kept = read_rows(&[&cut]);
    let n = kept.len();
    assert!(n >= 5 * window, "{n} rows in {} parts", parts(&cut).len());
    assert!(n < 10_000_000, "the run was killed mid-way");
    assert_eq!(n % window, 0, "{n} rows are not whole windows");
    assert_eq!(parts(&cut).len(), n / window);
    // ... and they are the rows an uninterrupted run writes first, as JSON Lines too.
    let steps = n.to_string();
    let extra = [
        "--seed",
        "4",
        "--window-steps",
        "100",
        "--trace",
        path(&whole),
    ];
    run(&run_args("worlds/warehouse.toml", &steps, &extra));
    assert_eq!(kept, read_rows(&[&whole]));
}

#[test]
fn part_seconds_must_be_a_number_of_seconds() {
    let trace = temp("bad-part-seconds.parquet");
    for bad in ["-1", "NaN", "inf", "soon"] {
        let mut args = cartpole_args("10", "parquet", &trace);
        args.extend(["--part-seconds", bad]);
        fails_with(&args, 2, "--part-seconds");
    }
    let mut args = cartpole_args("10", "parquet", &trace);
    args.extend(["--part-seconds", "0.5"]);
    run(&args);
    assert_eq!(read_rows(&[&trace]).len(), 10);
}

#[test]
fn a_torn_part_is_reported_and_the_complete_parts_are_read() {
    let trace = temp("torn.parquet");
    let ckpt = temp("torn.ckpt.json");
    run_parquet_with_checkpoints("3000", &trace, &ckpt);
    let p = parts(&trace);
    assert_eq!(p.len(), 3, "one part per checkpoint");
    let last = p.last().unwrap();
    let bytes = std::fs::read(last).unwrap();
    std::fs::write(last, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(trace.join(".part-00003.parquet.tmp"), b"PAR1 half").unwrap();
    // A half-written part is what a killed run leaves: its manifest never says `completed`
    // (eval refuses a completed run's trace that lacks rows).
    let manifest = trace.with_file_name("torn.manifest.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    doc["exit_status"] = serde_json::Value::from("interrupted");
    std::fs::write(&manifest, doc.to_string()).unwrap();
    let mut reader = TraceReader::open(&[&trace]);
    let read: Vec<TraceRow> = (&mut reader).collect::<Result<_, _>>().unwrap();
    assert_eq!(read.len(), 2000);
    let torn: Vec<String> = reader
        .torn_tails()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(torn.len(), 2, "{torn:?}");
    assert!(
        torn.iter().any(|t| t.contains("part-00002.parquet")),
        "{torn:?}"
    );
    let out = run(&["eval", path(&trace), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["runs"][0]["steps"], 2000);
    assert!(report["warnings"].to_string().contains("half-written"));
}

#[test]
fn hostile_parquet_input_is_exit_2_with_a_clear_message() {
    let fake = temp("fake.parquet");
    std::fs::write(&fake, b"run_id,step\nr,0\n").unwrap();
    fails_with(&["eval", path(&fake)], 2, "not a readable Parquet file");

    let empty = temp("empty.parquet");
    std::fs::create_dir_all(&empty).unwrap();
    fails_with(&["eval", path(&empty)], 2, "holds no part files");

    // A real Parquet file with other columns.
    let other = temp("other.parquet");
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "price",
        arrow_schema::DataType::Float64,
        false,
    )]));
    let batch = arrow_array::RecordBatch::try_new(
        schema.clone(),
        vec![std::sync::Arc::new(arrow_array::Float64Array::from(vec![
            1.0, 2.0,
        ]))],
    )
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&other).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    fails_with(&["eval", path(&other)], 2, "has no column `run_id`");
    let out = temp("other.episodes.jsonl");
    fails_with(
        &["episodes", path(&other), "--out", path(&out)],
        2,
        "not a perennial trace",
    );

    let file = temp("a-file.parquet");
    std::fs::write(&file, b"x").unwrap();
    fails_with(&cartpole_args("10", "parquet", &file), 2, "is a file");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");

    let folder = temp("someone-elses-folder");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("notes.parquet"), b"mine").unwrap();
    fails_with(
        &cartpole_args("10", "parquet", &folder),
        2,
        "not a part file",
    );
    assert_eq!(
        std::fs::read(folder.join("notes.parquet")).unwrap(),
        b"mine"
    );
}
