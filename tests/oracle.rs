//! The enterprise world's oracle reference agent through the command line: it runs on the
//! shipped worlds, is deterministic, refuses bad `[agent.oracle.<label>]` tables at load,
//! and, as the reference of `perennial eval`, shows base-stock's regret.

use std::path::Path;
use std::process::Output;

use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;
use serde_json::Value;

mod common;
use common::{TempPath, cli, path, temp};

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn shipped(world: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(world)).unwrap()
}

/// Runs `agent` on `world` for `steps` steps with `seed` and returns the trace's path.
fn run(world: &str, agent: &str, steps: u64, seed: u64, name: &str) -> TempPath {
    let trace = temp(name);
    ok(&cli(&[
        "run",
        world,
        "--agent",
        agent,
        "--steps",
        &steps.to_string(),
        "--seed",
        &seed.to_string(),
        "--trace",
        path(&trace),
    ]));
    trace
}

fn rows(trace: &Path) -> Vec<Value> {
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_oracle_runs_on_both_shipped_worlds_and_every_shipped_world_checks() {
    for world in [
        "worlds/warehouse.toml",
        "worlds/logistics.toml",
        "worlds/warehouse-async.toml",
        "worlds/logistics-async.toml",
    ] {
        let loaded = WorldFile::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(world)).unwrap();
        let tables = &loaded.agents["oracle"];
        for regime in &loaded.regimes {
            assert!(
                tables.contains_key(&regime.label),
                "{world}: no oracle table for {}",
                regime.label
            );
        }
        ok(&cli(&["check", world]));
    }
    for world in ["worlds/warehouse.toml", "worlds/logistics.toml"] {
        let name = world.trim_start_matches("worlds/");
        let trace = run(world, "oracle", 4_500, 2, &format!("{name}.jsonl"));
        let rows = rows(&trace);
        assert_eq!(rows.len(), 4_500);
        assert_eq!(rows[0]["algorithm_id"], "oracle");
        let labels: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r["regime"].as_str().unwrap()).collect();
        assert_eq!(labels.len(), 3, "{world}: {labels:?}");
    }
}

#[test]
fn the_same_seed_gives_the_same_trace_bytes() {
    let a = run("worlds/warehouse.toml", "oracle", 5_000, 9, "same-a.jsonl");
    let b = run("worlds/warehouse.toml", "oracle", 5_000, 9, "same-b.jsonl");
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap());
    let other = run("worlds/warehouse.toml", "oracle", 5_000, 10, "same-c.jsonl");
    assert!(std::fs::read(&a).unwrap() != std::fs::read(&other).unwrap());
}

/// Loads `text` as a world file and returns the error's line, field and message.
fn load_error(name: &str, text: &str) -> (Option<usize>, Option<String>, String) {
    let file = temp(name);
    std::fs::write(&file, text).unwrap();
    let err = WorldFile::load(&file).unwrap_err();
    (err.line, err.field, err.message)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_bad_oracle_table_is_a_load_error_naming_the_line_and_field() {
    let warehouse = shipped("worlds/warehouse.toml");

    let text = warehouse.replace("[agent.oracle.lean_market]", "[agent.oracle.lean_markt]");
    let (line, field, message) = load_error("label.toml", &text);
    assert_eq!(line, Some(line_of(&text, "[agent.oracle.lean_markt]")));
    assert_eq!(field.as_deref(), Some("agent.oracle.lean_markt"));
    assert!(message.contains("no regime `lean_markt`") && message.contains("lean_market"));

    let text = warehouse.replace(
        "[agent.oracle.peak_season]\nreorder_hours",
        "[agent.oracle.peak_season]\nreorder_hourz",
    );
    let (line, field, message) = load_error("field.toml", &text);
    assert_eq!(line, Some(line_of(&text, "reorder_hourz")));
    assert_eq!(
        field.as_deref(),
        Some("agent.oracle.peak_season.reorder_hourz")
    );
    assert!(
        message.contains("unknown field `reorder_hourz`"),
        "{message}"
    );

    let text = warehouse.replace(
        "[agent.oracle.dock_meltdown]\nreorder_hours = 30.0\ntarget_hours = 48.0\ncarrier = 2",
        "[agent.oracle.dock_meltdown]\nreorder_hours = 30.0\ntarget_hours = 48.0\ncarrier = 3",
    );
    let (line, field, message) = load_error("carrier.toml", &text);
    let expected = text
        .lines()
        .enumerate()
        .skip_while(|(_, l)| !l.contains("[agent.oracle.dock_meltdown]"))
        .find(|(_, l)| l.starts_with("carrier"))
        .unwrap()
        .0
        + 1;
    assert_eq!(line, Some(expected));
    assert_eq!(field.as_deref(), Some("agent.oracle.dock_meltdown.carrier"));
    assert!(message.contains("3 carriers"), "{message}");

    let text = warehouse.replace("reorder_hours = 12.0", "reorder_hours = -10.0");
    let (line, field, _) = load_error("negative.toml", &text);
    assert_eq!(line, Some(line_of(&text, "reorder_hours = -10.0")));
    assert_eq!(
        field.as_deref(),
        Some("agent.oracle.lean_market.reorder_hours")
    );

    // The command line says the same, with exit code 2.
    let file = temp("cli.toml");
    std::fs::write(&file, &text).unwrap();
    let out = cli(&["check", path(&file)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:{}: field `agent.oracle.lean_market.reorder_hours`",
            path(&file),
            line_of(&text, "reorder_hours = -10.0")
        )),
        "{stderr}"
    );
}

#[test]
fn a_regime_without_a_table_plays_the_base_stock_defaults() {
    // Without its peak_season table the oracle plays base-stock's defaults there, so its
    // rows under that label are base-stock's as long as the state carried in is the same:
    // here the run starts in peak_season.
    let warehouse = shipped("worlds/warehouse.toml");
    let start = warehouse.find("[agent.oracle.peak_season]").unwrap();
    let end = start + warehouse[start..].find("\n\n").unwrap() + 2;
    let text = format!("{}{}", &warehouse[..start], &warehouse[end..]).replace(
        "labels = [\"baseline\", \"peak_season\",",
        "labels = [\"peak_season\", \"baseline\",",
    );
    let file = temp("no-peak.toml");
    std::fs::write(&file, &text).unwrap();
    let oracle = run(path(&file), "oracle", 1_500, 4, "no-peak-oracle.jsonl");
    let base = run(path(&file), "base-stock", 1_500, 4, "no-peak-base.jsonl");
    let rewards = |p: &Path| -> Vec<f64> {
        rows(p)
            .iter()
            .map(|r| r["reward"].as_f64().unwrap())
            .collect()
    };
    assert!(rows(&oracle).iter().all(|r| r["regime"] == "peak_season"));
    assert_eq!(rewards(&oracle), rewards(&base));
}

fn eval_json(args: &[&str]) -> Value {
    let mut all = vec!["eval", "--json", "--window", "100"];
    all.extend(args);
    let out = cli(&all);
    ok(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Issue 16's acceptance: base-stock measured against the oracle on the warehouse, same
/// seed, over one cycle of the shipped schedule (six regimes of 2,000 steps). The oracle's
/// settings differ from base-stock's defaults (36 / 96 hours, the world's carrier, repairs
/// at the first broken door) in every regime, and where that changes what the policy earns
/// base-stock's regret is positive: in five regimes by 8 to 53 per hour. In
/// `peak_season` the tuned settings (48 / 72 hours, carrier 2, no repairs) and the
/// defaults earn within 2% of each other (a high target pays there either way; on 100,000
/// steps and seeds 1-3 base-stock is 1% behind or ahead), so only its size is bounded.
#[test]
fn base_stock_against_the_oracle_shows_positive_regret_where_the_policies_differ() {
    let base = run(
        "worlds/warehouse.toml",
        "base-stock",
        12_000,
        5,
        "regret-base.jsonl",
    );
    let oracle = run(
        "worlds/warehouse.toml",
        "oracle",
        12_000,
        5,
        "regret-oracle.jsonl",
    );
    let json = eval_json(&[path(&base), "--reference", path(&oracle)]);
    let run = &json["runs"][0];
    assert_eq!(run["reference_run_id"], "warehouse-oracle-seed5");
    let intervals = run["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 6);
    for i in intervals {
        let regret = i["regret"].as_f64().unwrap();
        let reference = i["reference_mean_r"].as_f64().unwrap();
        assert_eq!(regret, reference - i["mean_reward"].as_f64().unwrap());
        if i["regime"] == "peak_season" {
            assert!(
                regret.abs() < 0.03 * reference,
                "peak_season: regret {regret}"
            );
        } else {
            assert!(regret > 5.0, "{}: regret {regret}", i["regime"]);
        }
    }
    let labels = run["configurations"].as_object().unwrap();
    assert_eq!(labels.len(), 6);
    let positive = labels
        .values()
        .filter(|c| c["regret"].as_f64().unwrap() > 0.0)
        .count();
    assert_eq!(positive, 5, "{labels:?}");
}
