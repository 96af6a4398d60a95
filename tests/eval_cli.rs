//! `perennial eval` as a user runs it, on traces the harness writes: table, JSON, SVG.

use std::path::{Path, PathBuf};

use perennial::agents::RandomAgent;
use perennial::eval::{EvalArgs, run_cli};
use perennial::harness::{Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::trace::TraceFormat;
use serde_json::Value;

mod common;
use common::TempPath;

const LABELS: [&str; 3] = ["calm", "heavy", "light"];

/// A CartPole run with a random agent, auto-reset on, cycling through three gravity regimes
/// every 300 steps, traced to `path` (CSV if it ends in `.csv`).
fn cartpole_trace(path: &Path, seed: u64) {
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), seed);
    let regimes = vec![
        Regime::new("calm", &[]),
        Regime::new("heavy", &[("gravity", 15.0)]),
        Regime::new("light", &[("gravity", 5.0)]),
    ];
    let plan = Plan::cycle(&LABELS, 300);
    let harness = Harness::new(env, agent, seed)
        .scheduler(Scheduler::new(regimes, plan, seed).unwrap())
        .config(HarnessConfig {
            steps: 2_000,
            auto_reset: true,
            ..HarnessConfig::default()
        });
    let format = TraceFormat::from_path(path);
    let summary = harness.trace(path, format).run().unwrap();
    assert_eq!(summary.steps, 2_000);
}

fn args(traces: Vec<PathBuf>) -> EvalArgs {
    EvalArgs {
        traces,
        json: false,
        plot: None,
        window: 50,
        include_payout: false,
        references: Vec::new(),
        floors: Vec::new(),
        profile_plot: None,
        gamma: 1.0,
        events: false,
        role: None,
    }
}

/// Tags open and close in order (self-closing ones aside), and all are closed.
fn assert_balanced(svg: &str) {
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("an unclosed `<`") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap());
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed tags: {stack:?}");
}

/// Checks that the JSON object holds exactly the space-separated `keys`.
fn has_exactly(object: &Value, keys: &str) {
    let mut got: Vec<&str> = object
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut want: Vec<&str> = keys.split_whitespace().collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn eval_prints_a_table_json_with_every_design_key_and_an_svg() {
    let trace = TempPath::new("cartpole.jsonl");
    cartpole_trace(&trace, 7);

    let table = run_cli(&args(vec![trace.to_path_buf()])).unwrap();
    assert!(table.contains("run cartpole-random-seed7"), "{table}");
    for label in LABELS {
        assert!(table.contains(label), "{table}");
    }
    assert!(table.contains("configurations") && table.contains("group task"));

    let mut json_args = args(vec![trace.to_path_buf()]);
    json_args.json = true;
    let json: Value = serde_json::from_str(&run_cli(&json_args).unwrap()).unwrap();
    let run = &json["runs"][0];
    let run_keys = "run_id seed algorithm_id task steps episodes intervals configurations";
    has_exactly(run, run_keys);
    assert_eq!(run["steps"], 2000);
    assert!(run["episodes"].as_u64().unwrap() > 20);
    let intervals = run["intervals"].as_array().unwrap();
    // 2000 steps in 300-step intervals: 6 full ones and 200 steps of a seventh.
    assert_eq!(intervals.len(), 7);
    for interval in intervals {
        has_exactly(
            interval,
            "index regime origin start end steps mean_reward head tail adaptation_steps \
             recovery_steps recovered forgetting stability_std cvar05 gap normalized_gap",
        );
        // CartPole pays 1.0 per step, its ceiling.
        assert_eq!(interval["mean_reward"], 1.0);
        assert_eq!(
            (&interval["gap"], &interval["normalized_gap"]),
            (&0.0.into(), &0.0.into())
        );
    }
    assert_eq!(intervals[0]["origin"], "initial");
    assert_eq!(intervals[1]["origin"], "scheduled");
    assert_eq!(intervals[0]["recovered"], Value::Null);
    assert_eq!(intervals[3]["regime"], "calm");
    assert_eq!(intervals[3]["forgetting"], 0.0);
    let configurations = run["configurations"].as_object().unwrap();
    assert_eq!(configurations.len(), 3);
    for label in LABELS {
        let c = &configurations[label];
        for key in [
            "steps",
            "intervals",
            "mean_reward",
            "components",
            "gap",
            "normalized_gap",
            "mean_forgetting",
        ] {
            assert!(c.get(key).is_some(), "configuration key {key}");
        }
        assert_eq!(c.as_object().unwrap().len(), 7);
    }
    assert_eq!(json["groups"][0]["algorithm_id"], "random");
    assert_eq!(json["groups"][0]["runs"], 1);
    assert_eq!(json["warnings"], serde_json::json!([]));

    let plot = TempPath::new("cartpole.svg");
    let mut plot_args = args(vec![trace.to_path_buf()]);
    plot_args.plot = Some(plot.to_path_buf());
    run_cli(&plot_args).unwrap();
    let svg = std::fs::read_to_string(&*plot).unwrap();
    assert!(svg.starts_with("<svg"));
    assert_balanced(&svg);
    for label in LABELS {
        assert!(
            svg.contains(&format!(">{label}<")),
            "label {label} in the plot"
        );
    }
    assert!(svg.contains("cartpole-random-seed7") && svg.contains("<polyline"));
}

#[test]
fn several_runs_share_a_plot_and_a_group_and_csv_reads_like_jsonl() {
    let (a, b, c) = (
        TempPath::new("seed1.jsonl"),
        TempPath::new("seed2.jsonl"),
        TempPath::new("seed2.csv"),
    );
    cartpole_trace(&a, 1);
    cartpole_trace(&b, 2);
    cartpole_trace(&c, 2);

    let mut json_args = args(vec![a.to_path_buf(), b.to_path_buf()]);
    json_args.json = true;
    let json: Value = serde_json::from_str(&run_cli(&json_args).unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    assert_eq!(json["groups"][0]["runs"], 2);
    assert_eq!(json["groups"][0]["seeds"], serde_json::json!([1, 2]));
    let calm = &json["groups"][0]["configurations"]["calm"]["mean_reward"];
    assert_eq!(
        (calm["mean"].as_f64(), calm["n"].as_u64()),
        (Some(1.0), Some(2))
    );

    json_args.traces = vec![c.to_path_buf()];
    let from_csv: Value = serde_json::from_str(&run_cli(&json_args).unwrap()).unwrap();
    assert_eq!(from_csv["runs"][0], json["runs"][1]);

    let plot = TempPath::new("two.svg");
    let mut plot_args = args(vec![a.to_path_buf(), b.to_path_buf()]);
    plot_args.plot = Some(plot.to_path_buf());
    run_cli(&plot_args).unwrap();
    let svg = std::fs::read_to_string(&*plot).unwrap();
    assert_balanced(&svg);
    assert_eq!(svg.matches("<polyline").count(), 2);
    assert!(svg.contains("cartpole-random-seed1") && svg.contains("cartpole-random-seed2"));
}

#[test]
fn a_missing_trace_is_an_error_naming_the_file() {
    let missing = TempPath::new("nowhere.jsonl");
    let err = run_cli(&args(vec![missing.to_path_buf()])).unwrap_err();
    assert!(err.to_string().contains(&missing.display().to_string()));
}

#[test]
fn eval_args_parse_like_the_command_line() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        eval: EvalArgs,
    }
    let cli =
        Cli::try_parse_from(["eval", "a.jsonl", "b.csv", "--json", "--window", "20"]).unwrap();
    assert_eq!(cli.eval.traces.len(), 2);
    assert!(cli.eval.json && !cli.eval.include_payout);
    assert_eq!((cli.eval.window, cli.eval.plot), (20, None));
    assert!(Cli::try_parse_from(["eval"]).is_err());
    assert!(Cli::try_parse_from(["eval", "a.jsonl", "--window", "0"]).is_err());
}

/// Plots (and `perennial episodes --out`) may name a folder not made yet, as `--trace` may.
#[test]
fn outputs_may_name_folders_not_made_yet() {
    let scratch = common::Scratch::new("eval-new-folders");
    let trace = scratch.join("run.jsonl");
    let config = HarnessConfig {
        steps: 300,
        auto_reset: true,
        record_transitions: true,
        ..HarnessConfig::default()
    };
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), 1);
    Harness::new(env, agent, 1)
        .trace(&trace, TraceFormat::Jsonl)
        .config(config)
        .run()
        .unwrap();
    let mut plots = args(vec![trace.clone()]);
    plots.plot = Some(scratch.join("a/b/plot.svg"));
    plots.profile_plot = Some(scratch.join("c/profile.svg"));
    run_cli(&plots).unwrap();
    for svg in ["a/b/plot.svg", "c/profile.svg"] {
        assert!(
            std::fs::read_to_string(scratch.join(svg))
                .unwrap()
                .starts_with("<svg")
        );
    }
    let out = scratch.join("d/e/episodes.jsonl");
    let options = perennial::episodes::ExportOptions::default();
    let summary = perennial::episodes::export(&[&trace], &out, &options).unwrap();
    assert_eq!(summary.steps, 300);
    assert!(out.is_file());
}
