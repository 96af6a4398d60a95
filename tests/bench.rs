//! `perennial bench` run as a user would: the same seeds give the same results and table
//! bit for bit; an edited suite, a tampered results file, smoke results mixed with full
//! ones, a suite with no seeds and an unknown reference are refused (exit 2) with nothing
//! already written lost.

use std::path::{Path, PathBuf};

mod common;
use common::{Scratch, each_f64, each_str, fails_with, path, run};

/// A copy of the shipped CartPole suite in `dir/suite/`, with `steps` and `seeds` (a TOML
/// list) in place of its budget: a full run of it is cheap.
fn cartpole_suite(dir: &Scratch, steps: u64, seeds: &str) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/v1/cartpole-drift");
    let suite = dir.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::copy(
        shipped.join("cartpole-drift.toml"),
        suite.join("cartpole-drift.toml"),
    )
    .unwrap();
    let text = std::fs::read_to_string(shipped.join("suite.toml"))
        .unwrap()
        .replace("steps = 200000", &format!("steps = {steps}"))
        .replace(
            "seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]",
            &format!("seeds = {seeds}"),
        );
    std::fs::write(suite.join("suite.toml"), text).unwrap();
    suite
}

fn bench_run<'a>(suite: &'a str, agent: &'a str, out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    [
        &[
            "bench",
            "run",
            suite,
            "--agent",
            agent,
            "--jobs",
            "2",
            "--out",
            path(out),
        ][..],
        extra,
    ]
    .concat()
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn same_seeds_give_the_same_results_and_table_bit_for_bit() {
    let dir = Scratch::new("bench-determinism");
    let mut tables = Vec::new();
    for k in ["a", "b"] {
        let out = dir.join(k);
        for agent in ["ppo", "base-stock"] {
            let args = bench_run(
                "warehouse",
                agent,
                &out,
                &["--seeds", "2", "--steps", "2000"],
            );
            run(&args);
        }
        let report = dir.join(&format!("{k}-report"));
        let printed = run(&["bench", "report", path(&out), "--out", path(&report)]);
        assert!(common::text(&printed.stdout).contains("SMOKE"));
        tables.push((files(&out.join("results")), files(&report)));
    }
    assert_eq!(tables[0].0.len(), 2);
    assert_eq!(tables[0].1.len(), 4);
    // The rows' commands name their --out folder: the second run's is b/.
    let (a_out, b_out) = (
        path(&dir.join("a")).to_string(),
        path(&dir.join("b")).to_string(),
    );
    for (a, b) in [(&tables[0].0, &tables[1].0), (&tables[0].1, &tables[1].1)] {
        for ((name, x), (_, y)) in a.iter().zip(b) {
            let y = String::from_utf8_lossy(y).replace(&b_out, &a_out);
            assert!(*x == y.into_bytes(), "{name} differs between the two runs");
        }
    }
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("a/results/warehouse.none.ppo.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["smoke"], true);
    assert_eq!(json["seeds"], serde_json::json!([0, 1]));
    let kinds: Vec<&str> = each_str(&json["references"], "kind");
    assert_eq!(kinds, ["random", "best-fixed", "oracle"]);
    check_plasticity_columns(&dir);
    // Each fixed policy ran with its own options: their means differ.
    let means: Vec<f64> = each_f64(&json["references"][1]["candidates"], "mean");
    assert_eq!(means.len(), 7);
    assert!(means.windows(2).any(|w| w[0] != w[1]), "{means:?}");
}

/// The report's plasticity columns, as `a/` of [`same_seeds_give_the_same_results_and_table_bit_for_bit`]
/// leaves them: ppo has a network, base-stock none.
fn check_plasticity_columns(dir: &Scratch) {
    let out = dir.join("a");
    for (agent, neural) in [("ppo", true), ("base-stock", false)] {
        let file = out.join(format!("results/warehouse.none.{agent}.json"));
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        for run in json["runs"].as_array().unwrap() {
            let p = &run["plasticity"];
            if neural {
                let dormant = p["dormant_fraction"].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&dormant), "{p}");
                assert!(p["effective_rank"].as_f64().unwrap() >= 1.0, "{p}");
            } else {
                assert!(p.is_null(), "{agent} has no network: {run}");
            }
        }
    }
    let report = dir.join("plasticity-report");
    let json = run(&[
        "bench",
        "report",
        path(&out),
        "--json",
        "--out",
        path(&report),
    ]);
    let table: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let rows = table["sections"][0]["rows"].as_array().unwrap();
    let row = |agent: &str| rows.iter().find(|r| r["agent"] == agent).unwrap();
    assert!(row("ppo")["medians"]["dormant_fraction"].is_f64());
    assert!(row("ppo")["medians"]["effective_rank"].is_f64());
    assert!(row("base-stock")["medians"]["dormant_fraction"].is_null());
    assert!(row("base-stock")["medians"]["effective_rank"].is_null());
    assert_eq!(
        row("ppo")["command"],
        format!(
            "perennial bench run warehouse --agent ppo --out {} --seeds 2 --steps 2000",
            out.display()
        )
    );
    // Text and Markdown: the last two columns are dormant and eff_rank, `–` without a network.
    let text = common::text(&run(&["bench", "report", path(&out), "--out", path(&report)]).stdout);
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("agent"))
        .unwrap();
    assert!(header.trim_end().ends_with("dormant  eff_rank"), "{header}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("base-stock"))
        .unwrap();
    assert!(line.trim_end().ends_with("–         –"), "{line}");
    let markdown = common::text(
        &run(&[
            "bench",
            "report",
            path(&out),
            "--markdown",
            "--out",
            path(&report),
        ])
        .stdout,
    );
    assert!(
        markdown.contains("| dormant | eff_rank | command |"),
        "{markdown}"
    );
    let line = markdown
        .lines()
        .find(|l| l.starts_with("| base-stock |"))
        .unwrap();
    assert!(
        line.contains(" | – | – | `perennial bench run warehouse --agent base-stock"),
        "{line}"
    );
    assert_eq!(
        std::fs::read_to_string(report.join("table.md")).unwrap(),
        markdown
    );
}

#[test]
fn every_notify_track_is_a_row_of_its_own() {
    let dir = Scratch::new("bench-tracks");
    let suite = cartpole_suite(&dir, 300, "[0]");
    let file = suite.join("suite.toml");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("tracks = [\"none\"]", "tracks = [\"none\", \"label\"]");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    run(&bench_run(path(&suite), "ppo", &out, &[]));
    let report = run(&[
        "bench",
        "report",
        path(&out),
        "--json",
        "--out",
        path(&dir.join("r")),
    ]);
    let table: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let tracks: Vec<&str> = each_str(&table["sections"], "track");
    assert_eq!(tracks, ["none", "label"]);
    assert!(out.join("results/cartpole-drift.label.ppo.json").is_file());
}

#[test]
fn an_edited_suite_a_tampered_file_and_mixed_budgets_are_refused_and_nothing_written_is_lost() {
    let dir = Scratch::new("bench-hostile");
    let suite = cartpole_suite(&dir, 400, "[0, 1]");
    let out = dir.join("out");
    run(&bench_run(path(&suite), "balance", &out, &[]));
    let report = dir.join("report");
    run(&["bench", "report", path(&out), "--out", path(&report)]);
    let written = files(&report);
    let results = out.join("results/cartpole-drift.none.balance.json");
    let original = std::fs::read_to_string(&results).unwrap();
    let report_args = ["bench", "report", path(&out), "--out", path(&report)];

    // A tampered results file: its digest no longer matches.
    let mut tampered: serde_json::Value = serde_json::from_str(&original).unwrap();
    tampered["runs"][0]["mean_reward"] = serde_json::json!(12.5);
    std::fs::write(&results, serde_json::to_string_pretty(&tampered).unwrap()).unwrap();
    fails_with(&report_args, 2, "changed after it was written");
    std::fs::write(&results, &original).unwrap();

    // An unknown reference, the digest made to match.
    let mut r: perennial::bench::Results = serde_json::from_str(&original).unwrap();
    r.references[0].kind = "median".into();
    std::fs::write(&results, r.to_json()).unwrap();
    fails_with(&report_args, 2, "unknown reference `median`");
    std::fs::write(&results, &original).unwrap();

    // Smoke results beside full ones.
    let smoke = dir.join("smoke");
    run(&bench_run(
        path(&suite),
        "random",
        &smoke,
        &["--seeds", "1"],
    ));
    let both = [
        "bench",
        "report",
        path(&out),
        path(&smoke),
        "--out",
        path(&report),
    ];
    fails_with(&both, 2, "smoke results");
    // A smoke run into a folder of full results would replace them.
    fails_with(
        &bench_run(path(&suite), "balance", &out, &["--seeds", "1"]),
        2,
        "holds full results",
    );

    // Results of another version of the suite: its world file was edited since.
    let world = suite.join("cartpole-drift.toml");
    let mut text = std::fs::read_to_string(&world).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&world, text).unwrap();
    let err = fails_with(&report_args, 2, "another version of suite `cartpole-drift`");
    let recorded = serde_json::from_str::<serde_json::Value>(&original).unwrap()["suite_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let now = perennial::bench::suite_hash(&suite).unwrap();
    assert!(err.contains(&recorded) && err.contains(&now), "{err}");

    // Every refusal left the results and the report as they were.
    assert_eq!(std::fs::read_to_string(&results).unwrap(), original);
    assert_eq!(files(&report), written);
}

#[test]
fn a_suite_with_no_seeds_or_an_unknown_reference_is_refused_with_its_line() {
    let dir = Scratch::new("bench-suite");
    let suite = cartpole_suite(&dir, 400, "[]");
    let out = dir.join("out");
    let err = fails_with(
        &bench_run(path(&suite), "random", &out, &[]),
        2,
        "lists no seeds",
    );
    assert!(err.contains("suite.toml:9: field `suite.seeds`"), "{err}");
    let file = suite.join("suite.toml");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("seeds = []", "seeds = [0]")
        .replace("\"ceiling\"]", "\"ceiling\", \"median\"]");
    std::fs::write(&file, text).unwrap();
    fails_with(
        &bench_run(path(&suite), "random", &out, &[]),
        2,
        "unknown reference `median`",
    );
    fails_with(
        &bench_run("no-such-suite", "random", &out, &[]),
        2,
        "no suite `no-such-suite`",
    );
    assert!(!out.exists(), "nothing is run for a bad suite");
}
