//! `eval` reads a Parquet trace column by column: its report must be the JSON Lines
//! trace's, byte for byte, across components, payouts, ceilings, shifts inside a batch,
//! runs longer than one batch and than one part, several runs, a run given twice and the
//! options that change x_t.

use std::path::Path;

mod common;
use common::{TempPath, jsonl_and_parquet, path, perennial, run};

/// The same run (seed 5, run id `name`) traced as JSON Lines and as Parquet, with `extra`
/// arguments.
fn both(world: &str, steps: &str, name: &str, extra: &[&str]) -> (TempPath, TempPath) {
    let extra = [&["--run-id", name], extra].concat();
    jsonl_and_parquet(world, steps, "5", &extra, name)
}

/// Checks that `eval --json` gives the same report for both traces under each set of options.
fn same_reports(jsonl: &Path, parquet: &Path, option_sets: &[&[&str]]) {
    for options in option_sets {
        same_report(jsonl, parquet, options);
    }
}

fn same_report(jsonl: &Path, parquet: &Path, options: &[&str]) {
    let eval = |trace: &Path| {
        let mut args = vec!["eval", path(trace), "--json"];
        args.extend(options);
        String::from_utf8(run(&args).stdout).unwrap()
    };
    let (a, b) = (eval(jsonl), eval(parquet));
    assert!(a.contains("\"intervals\""), "{a}");
    assert_eq!(a, b, "{options:?}");
}

#[test]
fn warehouse_components_payouts_and_ceilings_score_the_same_from_parquet() {
    let (jsonl, parquet) = both(
        "worlds/warehouse.toml",
        "100000",
        "warehouse",
        &["--agent", "random"],
    );
    let parts = std::fs::read_dir(&parquet).unwrap().count();
    assert!(parts > 1, "{parts} part(s)");
    same_reports(
        &jsonl,
        &parquet,
        &[&[], &["--include-payout"], &["--window", "7"]],
    );
}

#[test]
fn a_run_over_many_batches_scores_the_same_from_parquet() {
    // Batches are 65,536 rows: a shift lands in the middle of several of them.
    let (jsonl, parquet) = both("worlds/cartpole-drift.toml", "300000", "long", &[]);
    same_reports(&jsonl, &parquet, &[&[], &["--window", "1000"]]);
}

#[test]
fn two_parquet_runs_in_one_call_score_as_they_do_alone() {
    let (_, a) = both("worlds/cartpole-drift.toml", "3000", "a", &[]);
    let (_, b) = both("worlds/cartpole-drift.toml", "4000", "b", &[]);
    let together = run(&["eval", path(&a), path(&b), "--json"]).stdout;
    let together: serde_json::Value = serde_json::from_slice(&together).unwrap();
    for (i, trace) in [&a, &b].into_iter().enumerate() {
        let alone = run(&["eval", path(trace), "--json"]).stdout;
        let alone: serde_json::Value = serde_json::from_slice(&alone).unwrap();
        assert_eq!(together["runs"][i], alone["runs"][0]);
    }
}

#[test]
fn a_parquet_run_given_twice_is_refused_at_its_first_row_again() {
    let (_, trace) = both("worlds/cartpole-drift.toml", "2000", "twice", &[]);
    let eval = |second: &Path| {
        let out = perennial()
            .args(["eval", path(&trace), path(second)])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        stderr
    };
    // The same directory twice is named as such before anything is read.
    assert!(eval(&trace).contains("is given twice"));
    // A copy elsewhere holds the same run: refused at its first part.
    let copy = trace.with_file_name("twice-copy.parquet");
    std::fs::create_dir_all(&copy).unwrap();
    for part in std::fs::read_dir(&trace).unwrap() {
        let part = part.unwrap().path();
        std::fs::copy(&part, copy.join(part.file_name().unwrap())).unwrap();
    }
    let stderr = eval(&copy);
    std::fs::remove_dir_all(&copy).unwrap();
    assert!(stderr.contains("part-"), "{stderr}");
}
