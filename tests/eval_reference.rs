//! Reference and floor runs: regret, normalized regret and state-adjusted forgetting worked
//! out by hand, the pairing rules, and the CLI against a reference run of the same world.

use std::path::Path;

use perennial::eval::{
    ConfigurationAgainst, EvalOptions, IntervalAgainst, IntervalReport, Report, RunReport, evaluate,
};
use serde_json::{Value, json};

mod common;
use common::{TempPath, cli, each_f64, run};

/// One run from step 0: consecutive intervals, each a label and its rewards.
fn trace(run: &str, algorithm: &str, seed: u64, intervals: &[(&str, &[f64])]) -> TempPath {
    let path = TempPath::new(&format!("{run}.jsonl"));
    let mut text = String::new();
    let mut step = 0u64;
    for (label, rewards) in intervals {
        for &r in *rewards {
            let row = json!({
                "run_id": run, "seed": seed, "algorithm_id": algorithm, "task": "toy",
                "step": step, "episode": 0, "episode_step": step, "reward": r,
                "components": {}, "payout": {}, "regime": label,
                "regime_origin": if step == 0 { "initial" } else { "scheduled" },
                "terminated": false, "truncated": false, "ceiling": null
            });
            text.push_str(&format!("{row}\n"));
            step += 1;
        }
    }
    std::fs::write(&*path, text).unwrap();
    path
}

fn options(references: &[&TempPath], floors: &[&TempPath]) -> EvalOptions {
    EvalOptions {
        window: 2,
        references: references.iter().map(|p| p.to_path_buf()).collect(),
        floors: floors.iter().map(|p| p.to_path_buf()).collect(),
        bootstrap_resamples: 200,
        ..EvalOptions::default()
    }
}

fn against(i: &IntervalReport) -> IntervalAgainst {
    i.against.expect("references were given")
}

fn label(run: &RunReport, label: &str) -> ConfigurationAgainst {
    run.configurations[label]
        .against
        .expect("references were given")
}

fn eval(agent: &TempPath, references: &[&TempPath], floors: &[&TempPath]) -> Report {
    evaluate(&[agent.to_path_buf()], &options(references, floors)).unwrap()
}

/// W = 2. The agent: calm [1 1 1 1], storm [0 0 2 2], calm [0 0 3 3]. Its second calm has
/// head 0 against the first calm's tail 1: F = 1.
fn agent() -> TempPath {
    trace(
        "agent",
        "learner",
        1,
        &[
            ("calm", &[1.0, 1.0, 1.0, 1.0]),
            ("storm", &[0.0, 0.0, 2.0, 2.0]),
            ("calm", &[0.0, 0.0, 3.0, 3.0]),
        ],
    )
}

/// The reference: calm [2 2 2 2], storm [1 1 3 3], calm [1 2 2 2] (head 1.5, F = 0.5).
fn reference(seed: u64) -> TempPath {
    trace(
        "oracle",
        "oracle",
        seed,
        &[
            ("calm", &[2.0, 2.0, 2.0, 2.0]),
            ("storm", &[1.0, 1.0, 3.0, 3.0]),
            ("calm", &[1.0, 2.0, 2.0, 2.0]),
        ],
    )
}

/// The floor: 0 throughout.
fn floor() -> TempPath {
    trace(
        "random",
        "random",
        1,
        &[
            ("calm", &[0.0; 4]),
            ("storm", &[0.0; 4]),
            ("calm", &[0.0; 4]),
        ],
    )
}

#[test]
fn regret_and_normalized_regret_match_the_hand_computation() {
    let (a, r, f) = (agent(), reference(1), floor());
    let report = eval(&a, &[&r], &[&f]);
    let run = &report.runs[0];
    let paired = run.paired.as_ref().unwrap();
    assert_eq!(paired.reference_run_id.as_deref(), Some("oracle"));
    assert_eq!(paired.floor_run_id.as_deref(), Some("random"));
    let i: Vec<IntervalAgainst> = run.intervals.iter().map(against).collect();
    // Interval means: agent 1, 1, 1.5; reference 2, 2, 1.75; floor 0.
    assert_eq!(i[0].means.reference_mean_r, Some(2.0));
    assert_eq!(i[0].means.floor_mean_r, Some(0.0));
    assert_eq!(i[0].means.regret, Some(1.0));
    assert_eq!(i[0].means.normalized_regret, Some(0.5));
    assert_eq!(i[1].means.regret, Some(1.0));
    assert_eq!(i[1].means.normalized_regret, Some(0.5));
    assert_eq!(i[2].means.regret, Some(0.25));
    assert_eq!(i[2].means.normalized_regret, Some(0.25 / 1.75));
    // Per label calm: agent (4 + 6) / 8 = 1.25, reference (8 + 7) / 8 = 1.875.
    let calm = label(run, "calm");
    assert_eq!(calm.means.reference_mean_r, Some(1.875));
    assert_eq!(calm.means.regret, Some(0.625));
    assert_eq!(calm.means.normalized_regret, Some(1.0 / 3.0));
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    // The group of one run carries the same numbers, shown in the comparison table.
    let group = &report.groups[0].configurations["calm"];
    assert_eq!(group.regret.map(|e| e.mean), Some(0.625));
    assert_eq!(group.normalized_regret.map(|e| e.mean), Some(1.0 / 3.0));
    let text = perennial::eval::comparison_text(&report.groups);
    assert!(text.contains("\n    regret "), "{text}");
    assert!(text.contains("\n    normalized_regret "), "{text}");
}

#[test]
fn group_regret_is_the_mean_over_seeds_of_each_runs_regret() {
    let agents = [
        trace("a1", "learner", 1, &[("calm", &[1.0, 1.0])]),
        trace("a2", "learner", 2, &[("calm", &[0.0, 0.0])]),
    ];
    let refs = [
        trace("r1", "oracle", 1, &[("calm", &[2.0, 2.0])]),
        trace("r2", "oracle", 2, &[("calm", &[4.0, 4.0])]),
    ];
    let paths: Vec<_> = agents.iter().map(|a| a.to_path_buf()).collect();
    let report = evaluate(&paths, &options(&[&refs[0], &refs[1]], &[])).unwrap();
    let calm = &report.groups[0].configurations["calm"];
    // Regrets 1 and 4: mean 2.5, a CI within them; no floor, no normalized regret.
    let regret = calm.regret.unwrap();
    assert_eq!((regret.mean, regret.n), (2.5, 2));
    assert!(regret.ci_low >= 1.0 && regret.ci_high <= 4.0);
    assert_eq!(calm.normalized_regret, None);
    let text = perennial::eval::comparison_text(&report.groups);
    assert!(!text.contains("normalized_regret"), "{text}");
}

#[test]
fn state_adjusted_forgetting_subtracts_the_references_forgetting() {
    let (a, r) = (agent(), reference(1));
    let report = eval(&a, &[&r], &[]);
    let run = &report.runs[0];
    // Agent F = 1 - 0 = 1; reference F = 2 - 1.5 = 0.5.
    assert_eq!(run.intervals[2].forgetting, Some(1.0));
    assert_eq!(against(&run.intervals[2]).adjusted_forgetting, Some(0.5));
    assert_eq!(against(&run.intervals[0]).adjusted_forgetting, None);
    assert_eq!(label(run, "calm").mean_adjusted_forgetting, Some(0.5));
    assert_eq!(label(run, "storm").mean_adjusted_forgetting, None);
    // Without a floor there is no normalization.
    assert_eq!(against(&run.intervals[0]).means.normalized_regret, None);
}

#[test]
fn a_run_against_itself_has_zero_regret_and_zero_adjusted_forgetting() {
    let a = agent();
    let report = eval(&a, &[&a], &[]);
    let run = &report.runs[0];
    for i in &run.intervals {
        assert_eq!(against(i).means.regret, Some(0.0));
    }
    assert_eq!(against(&run.intervals[2]).adjusted_forgetting, Some(0.0));
}

#[test]
fn normalized_scores_are_aggregated_when_every_run_has_a_reference_and_a_floor() {
    let (a, r, f) = (agent(), reference(1), floor());
    let report = eval(&a, &[&r], &[&f]);
    assert_eq!(report.aggregate.score, "normalized_score");
    // calm 1.25 / 1.875 = 2/3, storm 1 / 2: four scores of two tasks, mean of the two.
    let learner = &report.aggregate.algorithms[0];
    assert_eq!(learner.mean.unwrap().estimate, (2.0 / 3.0 + 0.5) / 2.0);
    let without = eval(&a, &[&r], &[]);
    assert_eq!(without.aggregate.score, "mean_reward");
}

#[test]
fn without_references_the_design_keys_are_unchanged() {
    let a = agent();
    let report = eval(&a, &[], &[]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["runs"][0].as_object().unwrap().len(), 8);
    assert_eq!(
        json["runs"][0]["intervals"][0].as_object().unwrap().len(),
        17
    );
    assert_eq!(
        json["runs"][0]["configurations"]["calm"]
            .as_object()
            .unwrap()
            .len(),
        7
    );
    assert_eq!(
        json["groups"][0]["configurations"]["calm"]
            .as_object()
            .unwrap()
            .len(),
        10
    );
    let text = perennial::eval::comparison_text(&report.groups);
    assert!(!text.contains("regret"), "{text}");
    let with = serde_json::to_value(eval(&a, &[&a], &[])).unwrap();
    assert_eq!(
        with["groups"][0]["configurations"]["calm"]["regret"]["mean"],
        0.0
    );
    assert_eq!(with["runs"][0]["reference_run_id"], "agent");
    assert_eq!(with["runs"][0]["floor_run_id"], Value::Null);
    assert_eq!(with["runs"][0]["intervals"][0]["regret"], 0.0);
    assert_eq!(with["runs"][0]["configurations"]["calm"]["regret"], 0.0);
}

#[test]
fn l2metrics_recovery_and_maintenance_are_measured_against_the_labels_previous_tail() {
    // W = 2. calm [2 2 2 2] (tail 2), storm [0 0 0 0], calm [0 0 1 3 3 3]: rolling means
    // 0, 0.5, 2, 3, 3 from its second step; it first reaches 2 on its 4th step. Maintenance:
    // mean 10/6 minus 2.
    let a = trace(
        "l2",
        "learner",
        1,
        &[
            ("calm", &[2.0; 4]),
            ("storm", &[0.0; 4]),
            ("calm", &[0.0, 0.0, 1.0, 3.0, 3.0, 3.0]),
            ("storm", &[0.0; 4]),
            ("calm", &[1.0, 3.0, 3.0, 3.0]),
        ],
    );
    let report = eval(&a, &[], &[]);
    let l2 = &report.l2metrics[0];
    assert_eq!(l2.intervals[0].l2_recovery_steps, None);
    assert_eq!(l2.intervals[2].l2_recovery_steps, Some(4));
    assert_eq!(l2.intervals[2].l2_maintenance, Some(10.0 / 6.0 - 2.0));
    // The third calm starts from the second's tail 3: rolling means 2, 3, 3 reach 3 on its
    // 3rd step. Recovery times 4 then 3: Theil–Sen slope -1, performance recovery +1.
    assert_eq!(l2.intervals[4].l2_recovery_steps, Some(3));
    assert_eq!(l2.configurations["calm"].performance_recovery, Some(1.0));
    // The storm's rolling mean 0 reaches its previous tail 0 at once.
    assert_eq!(l2.intervals[3].l2_recovery_steps, Some(2));
    assert_eq!(l2.configurations["storm"].performance_recovery, None);
}

#[test]
fn a_run_without_a_reference_of_its_seed_is_left_null_with_a_warning() {
    let (a, r) = (agent(), reference(2));
    let report = eval(&a, &[&r], &[]);
    assert_eq!(against(&report.runs[0].intervals[0]).means.regret, None);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("no reference run")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn a_reference_with_another_schedule_is_matched_only_where_intervals_agree() {
    let a = agent();
    let r = trace(
        "shifted",
        "oracle",
        1,
        &[
            ("calm", &[2.0; 4]),
            ("storm", &[1.0; 5]),
            ("calm", &[2.0; 3]),
        ],
    );
    let report = eval(&a, &[&r], &[]);
    let run = &report.runs[0];
    assert_eq!(against(&run.intervals[0]).means.regret, Some(1.0));
    assert_eq!(against(&run.intervals[1]).means.regret, None);
    assert_eq!(label(run, "calm").means.regret, None);
    assert!(report.warnings.iter().any(|w| w.contains("interval 1")));
}

#[test]
fn two_reference_runs_of_one_task_and_seed_are_an_error() {
    let (a, r1) = (agent(), reference(1));
    let r2 = trace("oracle2", "oracle", 1, &[("calm", &[2.0; 4])]);
    let err = evaluate(&[a.to_path_buf()], &options(&[&r1, &r2], &[])).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("oracle") && message.contains("oracle2") && message.contains("seed 1"),
        "{message}"
    );
}

fn run_warehouse(agent: &str, trace: &Path) {
    run(&[
        "run",
        "worlds/warehouse.toml",
        "--agent",
        agent,
        "--steps",
        "3000",
        "--seed",
        "5",
        "--trace",
        trace.to_str().unwrap(),
    ]);
}

fn eval_json(args: &[&str]) -> Value {
    let mut all = vec!["eval", "--json", "--window", "50"];
    all.extend(args);
    let out = cli(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn base_stock_against_itself_has_regret_zero_and_against_random_differs() {
    let base = TempPath::new("base-stock.jsonl");
    let random = TempPath::new("random.jsonl");
    run_warehouse("base-stock", &base);
    run_warehouse("random", &random);
    let b = base.to_str().unwrap();
    let json = eval_json(&[b, "--reference", b]);
    let intervals = json["runs"][0]["intervals"].as_array().unwrap();
    assert!(intervals.len() > 1);
    for i in intervals {
        assert_eq!(i["regret"], json!(0.0));
        if !i["forgetting"].is_null() {
            assert_eq!(i["adjusted_forgetting"], json!(0.0));
        }
    }
    // Random measured against base-stock on the same seed: the two policies earn
    // different rewards, so the regret is not zero.
    let json = eval_json(&[random.to_str().unwrap(), "--reference", b]);
    let regrets: Vec<f64> = each_f64(&json["runs"][0]["intervals"], "regret");
    assert!(regrets.iter().any(|&r| r != 0.0), "{regrets:?}");
}

#[test]
fn a_missing_reference_file_exits_2_naming_it_and_profiles_draw_as_svg() {
    let a = agent();
    let missing = TempPath::new("missing.jsonl");
    let out = cli(&[
        "eval",
        a.to_str().unwrap(),
        "--reference",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");

    let (r, f) = (reference(1), floor());
    let svg = TempPath::new("profile.svg");
    run(&[
        "eval",
        a.to_str().unwrap(),
        "--reference",
        r.to_str().unwrap(),
        "--floor",
        f.to_str().unwrap(),
        "--window",
        "2",
        "--profile-plot",
        svg.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&*svg).unwrap();
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    assert!(text.contains("normalized_score") && text.contains("learner"));
}
