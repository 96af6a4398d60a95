//! The six metrics on small hand-built traces, each value worked out by hand in the test.

use perennial::eval::{EvalError, EvalOptions, IntervalReport, Report, RunReport, evaluate};
use serde_json::{Value, json};

mod common;
use common::TempPath;

fn write(name: &str, text: &str) -> TempPath {
    let path = TempPath::new(name);
    std::fs::write(&*path, text).unwrap();
    path
}

fn jsonl(rows: &[Value]) -> String {
    rows.iter().map(|r| format!("{r}\n")).collect()
}

/// One row with reward `r` under `regime`; everything else at a plain default.
fn row(run: &str, step: u64, regime: &str, r: f64) -> Value {
    json!({
        "run_id": run, "seed": 1, "algorithm_id": "hand", "task": "toy",
        "step": step, "episode": 0, "episode_step": step, "reward": r,
        "components": {}, "payout": {}, "regime": regime,
        "regime_origin": if step == 0 { "initial" } else { "scheduled" },
        "terminated": false, "truncated": false, "ceiling": null
    })
}

/// Consecutive intervals, each a label and its rewards, as one run from step 0.
fn run_rows(run: &str, intervals: &[(&str, &[f64])]) -> Vec<Value> {
    let mut rows = Vec::new();
    for (label, xs) in intervals {
        for &x in *xs {
            rows.push(row(run, rows.len() as u64, label, x));
        }
    }
    rows
}

fn options(window: usize) -> EvalOptions {
    EvalOptions {
        window,
        ..EvalOptions::default()
    }
}

fn eval_rows(rows: &[Value], window: usize) -> Report {
    let path = write("trace.jsonl", &jsonl(rows));
    evaluate(std::slice::from_ref(&path), &options(window)).unwrap()
}

fn only_run(report: &Report) -> &RunReport {
    assert_eq!(report.runs.len(), 1);
    &report.runs[0]
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

#[test]
fn adaptation_counts_steps_to_ninety_percent_of_the_gain() {
    // W = 4.
    // a: x = 0 0 0 0 0 0 4 4 4 4 4 4 (steps 0..=11). H = 0, P = 4, target = 0 + 0.9 * 4 = 3.6.
    //    m(3..=5) = 0, m(6) = 1, m(7) = 2, m(8) = 3, m(9) = 4 >= 3.6 -> A = 9 - 0 + 1 = 10.
    // b: x = 4 4 4 4 0 0 0 0 (steps 12..=19). H = 4, P = 0 <= H -> A = w = 4.
    // c: x = 1 2 3 (steps 20..=22). n = 3 < W: w = 3, H = P = 2, A = n = 3.
    let a = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0];
    let b = [4.0, 4.0, 4.0, 4.0, 0.0, 0.0, 0.0, 0.0];
    let c = [1.0, 2.0, 3.0];
    let report = eval_rows(&run_rows("r", &[("a", &a), ("b", &b), ("c", &c)]), 4);
    let i = &only_run(&report).intervals;
    assert_eq!(i.len(), 3);
    assert_eq!((i[0].start, i[0].end, i[0].steps), (0, 11, 12));
    assert_eq!(
        (i[0].head, i[0].tail, i[0].adaptation_steps),
        (0.0, 4.0, 10)
    );
    assert_eq!((i[1].head, i[1].tail, i[1].adaptation_steps), (4.0, 0.0, 4));
    assert_eq!((i[2].head, i[2].tail, i[2].adaptation_steps), (2.0, 2.0, 3));
    // Mean reward: a = 24 / 12 = 2, b = 16 / 8 = 2, c = 6 / 3 = 2.
    assert_eq!(i[0].mean_reward, 2.0);
    assert_eq!(i[2].mean_reward, 2.0);
}

#[test]
fn recovery_is_reached_or_censored() {
    // W = 4.
    // a: x = 2 x 8 (steps 0..=7): P_a = 2. k = 0: recovery does not apply (null, null).
    // b: x = 0 0 0 0 1 2 3 3 3 3 (steps 8..=17), B = P_a = 2.
    //    m(11) = 0, m(12) = 0.25, m(13) = 0.75, m(14) = 1.5, m(15) = (1+2+3+3)/4 = 2.25 >= 2
    //    -> R = 15 - 8 + 1 = 8, recovered.
    //    H = 0, P = 3, target = 2.7: m(16) = (2+3+3+3)/4 = 2.75 >= 2.7 -> A = 16 - 8 + 1 = 9.
    // c: x = 0 0 0 0 0 1 (steps 18..=23), B = P_b = 3.
    //    m(21) = 0, m(22) = 0, m(23) = 0.25: never >= 3 -> censored: null, recovered = false.
    //    H = 0, P = 0.25, target = 0.225: first at m(23) -> A = 6.
    // d: x = 5 (step 24), n = 1 < W: m(24) = 5 >= B = 0.25 -> R = n = 1.
    let a = [2.0; 8];
    let b = [0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0];
    let c = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    let d = [5.0];
    let report = eval_rows(
        &run_rows("r", &[("a", &a), ("b", &b), ("c", &c), ("d", &d)]),
        4,
    );
    let i = &only_run(&report).intervals;
    assert_eq!((i[0].recovery_steps, i[0].recovered), (None, None));
    assert_eq!((i[1].recovery_steps, i[1].recovered), (Some(8), Some(true)));
    assert_eq!(i[1].adaptation_steps, 9);
    assert_eq!((i[2].recovery_steps, i[2].recovered), (None, Some(false)));
    assert_eq!((i[2].tail, i[2].adaptation_steps), (0.25, 6));
    assert_eq!((i[3].recovery_steps, i[3].recovered), (Some(1), Some(true)));
}

#[test]
fn forgetting_is_measured_on_every_recurrence() {
    // W = 2, labels a b a b a, four steps each.
    // a1: 1 1 3 3 -> H = 1, P = 3.            first a: F = null
    // b1: 0 0 0 0 -> H = P = 0.               first b: F = null
    // a2: 2 2 4 4 -> H = 2, P = 4.            F = P_a1 - H_a2 = 3 - 2 = 1
    // b2: 0 0 0 0 -> H = 0.                   F = P_b1 - H_b2 = 0 - 0 = 0
    // a3: 1 1 1 1 -> H = 1.                   F = P_a2 - H_a3 = 4 - 1 = 3
    // mean_forgetting: a = (1 + 3) / 2 = 2, b = 0.
    let report = eval_rows(
        &run_rows(
            "r",
            &[
                ("a", &[1.0, 1.0, 3.0, 3.0]),
                ("b", &[0.0; 4]),
                ("a", &[2.0, 2.0, 4.0, 4.0]),
                ("b", &[0.0; 4]),
                ("a", &[1.0; 4]),
            ],
        ),
        2,
    );
    let run = only_run(&report);
    let f: Vec<Option<f64>> = run.intervals.iter().map(|i| i.forgetting).collect();
    assert_eq!(f, [None, None, Some(1.0), Some(0.0), Some(3.0)]);
    assert_eq!(run.configurations["a"].mean_forgetting, Some(2.0));
    assert_eq!(run.configurations["b"].mean_forgetting, Some(0.0));
    assert_eq!(run.configurations["a"].intervals, 3);
    assert_eq!(run.configurations["a"].steps, 12);
    // a's rewards: 8 + 12 + 4 = 24 over 12 steps.
    assert_eq!(run.configurations["a"].mean_reward, 2.0);
}

#[test]
fn stability_with_one_block() {
    // W = 4, n = 5: B = floor(5 / 4) = 1 block (steps 0..=3, mean (1+2+3+6)/4 = 3); the fifth
    // step is dropped. std = 0, cvar05 = mean of the lowest ceil(0.05) = 1 block = 3.
    let report = eval_rows(&run_rows("r", &[("a", &[1.0, 2.0, 3.0, 6.0, 100.0])]), 4);
    let i = &only_run(&report).intervals[0];
    assert_eq!((i.stability_std, i.cvar05), (0.0, 3.0));
    // n < W: the interval itself is the one block: x = 1 3 -> std 0, cvar05 = 2.
    let report = eval_rows(&run_rows("r", &[("a", &[1.0, 3.0])]), 4);
    let i = &only_run(&report).intervals[0];
    assert_eq!((i.stability_std, i.cvar05), (0.0, 2.0));
}

#[test]
fn stability_with_a_few_blocks() {
    // W = 2, x = 0 2 | 3 3 | 2 2 -> block means 1, 3, 2 (B = 3).
    // mean 2, deviations -1 1 0 -> population var = 2/3, std = sqrt(2/3).
    // cvar05: ceil(0.05 * 3) = 1 lowest block -> 1.
    let report = eval_rows(&run_rows("r", &[("a", &[0.0, 2.0, 3.0, 3.0, 2.0, 2.0])]), 2);
    let i = &only_run(&report).intervals[0];
    close(i.stability_std, (2.0f64 / 3.0).sqrt());
    assert_eq!(i.cvar05, 1.0);
}

#[test]
fn stability_with_many_blocks_uses_the_lowest_five_percent() {
    // W = 2, 21 blocks: block 10 is -1 -1 (mean -1), the other 20 are 0 2 (mean 1), then one
    // remainder step of 100 that belongs to no block.
    // cvar05: ceil(0.05 * 21) = 2 lowest block means: (-1 + 1) / 2 = 0.
    // mean of b = (20 - 1) / 21 = 19/21; E[b^2] = 21/21 = 1;
    // var = 1 - (19/21)^2 = 80/441 -> std = sqrt(80) / 21.
    let mut xs = Vec::new();
    for block in 0..21 {
        xs.extend(if block == 10 {
            [-1.0, -1.0]
        } else {
            [0.0, 2.0]
        });
    }
    xs.push(100.0);
    let report = eval_rows(&run_rows("r", &[("a", &xs)]), 2);
    let i = &only_run(&report).intervals[0];
    assert_eq!(i.steps, 43);
    assert_eq!(i.cvar05, 0.0);
    close(i.stability_std, 80f64.sqrt() / 21.0);
    // 41 blocks: ceil(0.05 * 41) = 3 lowest: -1, -1, 1 -> 1/3 (blocks 10 and 30 are low).
    let mut xs = Vec::new();
    for block in 0..41 {
        xs.extend(if block % 20 == 10 {
            [-1.0, -1.0]
        } else {
            [0.0, 2.0]
        });
    }
    let report = eval_rows(&run_rows("r", &[("a", &xs)]), 2);
    close(only_run(&report).intervals[0].cvar05, -1.0 / 3.0);
}

fn with_ceiling(mut row: Value, ceiling: Option<f64>) -> Value {
    row["ceiling"] = json!(ceiling);
    row
}

#[test]
fn gap_to_the_ceiling_and_null_without_one() {
    // a: r = 1 2 0 1, ceiling 2 on every row: ceiling - r = 1 0 2 1.
    //    gap = 4 / 4 = 1, normalized_gap = 4 / (2 * 4) = 0.5.
    // b: no ceilings: both null.
    // c: r = 1 1, ceiling 3 only on the first row: gap = 2 / 1 = 2, normalized = 2 / 3.
    let rows = run_rows(
        "r",
        &[
            ("a", &[1.0, 2.0, 0.0, 1.0]),
            ("b", &[1.0, 1.0]),
            ("c", &[1.0, 1.0]),
        ],
    );
    let rows: Vec<Value> = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| match i {
            0..=3 => with_ceiling(r, Some(2.0)),
            6 => with_ceiling(r, Some(3.0)),
            _ => r,
        })
        .collect();
    let report = eval_rows(&rows, 2);
    let run = only_run(&report);
    let i = &run.intervals;
    assert_eq!((i[0].gap, i[0].normalized_gap), (Some(1.0), Some(0.5)));
    assert_eq!((i[1].gap, i[1].normalized_gap), (None, None));
    assert_eq!(
        (i[2].gap, i[2].normalized_gap),
        (Some(2.0), Some(2.0 / 3.0))
    );
    assert_eq!(run.configurations["a"].gap, Some(1.0));
    assert_eq!(run.configurations["b"].normalized_gap, None);
}

fn payout_rows() -> Vec<Value> {
    // r = 1 1 1 11; the last step ends the episode with a payout of 10 (and component
    // `alive` = 1 every step).
    let mut rows = run_rows("r", &[("a", &[1.0, 1.0, 1.0, 11.0])]);
    for r in &mut rows {
        r["components"] = json!({"alive": 1.0});
    }
    rows[3]["payout"] = json!({"bonus": 10.0});
    rows[3]["terminated"] = json!(true);
    rows
}

#[test]
fn payout_is_excluded_from_x_by_default() {
    // W = 2. x = r - payout = 1 1 1 1: H = P = 1, A = w = 2.
    // mean_reward uses r: 14 / 4 = 3.5; components: alive = 4 / 4 = 1.
    let report = eval_rows(&payout_rows(), 2);
    let run = only_run(&report);
    let i = &run.intervals[0];
    assert_eq!((i.head, i.tail, i.adaptation_steps), (1.0, 1.0, 2));
    assert_eq!(i.mean_reward, 3.5);
    assert_eq!(run.configurations["a"].components["alive"], 1.0);
    assert_eq!(run.episodes, 1);
}

#[test]
fn payout_is_included_on_request() {
    // W = 2. x = r = 1 1 1 11: H = 1, P = (1 + 11) / 2 = 6, target = 1 + 0.9 * 5 = 5.5;
    // m(1) = 1, m(2) = 1, m(3) = 6 >= 5.5 -> A = 4.
    let path = write("payout.jsonl", &jsonl(&payout_rows()));
    let options = EvalOptions {
        window: 2,
        include_payout: true,
        ..EvalOptions::default()
    };
    let report = evaluate(std::slice::from_ref(&path), &options).unwrap();
    let i = &only_run(&report).intervals[0];
    assert_eq!((i.head, i.tail, i.adaptation_steps), (1.0, 6.0, 4));
    assert_eq!(i.mean_reward, 3.5);
}

/// A run with shifts, rewrites of its episode columns, and the metric output that must not
/// change.
#[test]
fn episode_boundaries_change_no_metric() {
    let xs: Vec<f64> = (0..120).map(|i| ((i * 37) % 11) as f64 * 0.1).collect();
    let mut rows = run_rows(
        "r",
        &[
            ("calm", &xs[..30]),
            ("storm", &xs[30..70]),
            ("calm", &xs[70..100]),
            ("storm", &xs[100..]),
        ],
    );
    for r in &mut rows {
        r["ceiling"] = json!(1.5);
    }
    // Version 1: one episode the whole run. Version 2: an episode ends every 7 steps
    // (terminated), with a truncation every 3rd episode.
    let mut rewritten = rows.clone();
    for r in &mut rewritten {
        let step = r["step"].as_u64().unwrap();
        let ends = step % 7 == 6;
        r["episode"] = json!(step / 7);
        r["episode_step"] = json!(step % 7);
        r["terminated"] = json!(ends && (step / 7) % 3 != 2);
        r["truncated"] = json!(ends && (step / 7) % 3 == 2);
    }
    let metrics = |report: &Report| {
        let run = only_run(report);
        serde_json::to_string(&(&run.intervals, &run.configurations)).unwrap()
    };
    for window in [1, 5, 10, 100] {
        let a = eval_rows(&rows, window);
        let b = eval_rows(&rewritten, window);
        assert_eq!(metrics(&a), metrics(&b), "window {window}");
        assert_eq!(only_run(&a).episodes, 1);
        assert_eq!(only_run(&b).episodes, 18);
    }
}

#[test]
fn groups_average_over_seeds_with_a_bootstrap_interval() {
    // Three seeds of one algorithm with mean rewards 1, 2, 3 under `a`; one seed of another.
    let mut text = String::new();
    for (seed, r) in [(1u64, 1.0), (2, 2.0), (3, 3.0)] {
        let mut rows = run_rows(&format!("s{seed}"), &[("a", &[r; 4])]);
        for row in &mut rows {
            row["seed"] = json!(seed);
        }
        text.push_str(&jsonl(&rows));
    }
    let mut other = run_rows("solo", &[("a", &[5.0; 4])]);
    for row in &mut other {
        row["algorithm_id"] = json!("other");
    }
    text.push_str(&jsonl(&other));
    let path = write("groups.jsonl", &text);
    let report = evaluate(std::slice::from_ref(&path), &options(2)).unwrap();
    assert_eq!(report.runs.len(), 4);
    let g: Vec<_> = report
        .groups
        .iter()
        .map(|g| g.group.algorithm_id.as_str())
        .collect();
    assert_eq!(g, ["hand", "other"]);
    let hand = &report.groups[0];
    assert_eq!((hand.group.runs, hand.seeds.clone()), (3, vec![1, 2, 3]));
    let e = hand.configurations["a"].mean_reward.unwrap();
    assert_eq!((e.mean, e.n), (2.0, 3));
    assert!(e.ci_low >= 1.0 && e.ci_low <= 2.0 && e.ci_high >= 2.0 && e.ci_high <= 3.0);
    assert!(e.ci_low < e.ci_high);
    let solo = report.groups[1].configurations["a"].mean_reward.unwrap();
    assert_eq!((solo.mean, solo.ci_low, solo.ci_high), (5.0, 5.0, 5.0));
    // Recovery does not apply to a single interval: no run has a value.
    assert_eq!(hand.configurations["a"].recovery_steps, None);
    assert!(report.to_text().contains("2.0000 ["));
}

#[test]
fn a_run_may_span_files_in_step_order() {
    let rows = run_rows("r", &[("a", &[1.0; 6]), ("b", &[2.0; 6])]);
    let first = write("part1.jsonl", &jsonl(&rows[..5]));
    let second = write("part2.jsonl", &jsonl(&rows[5..]));
    let split = evaluate(&[first.to_path_buf(), second.to_path_buf()], &options(3)).unwrap();
    let whole = eval_rows(&rows, 3);
    let intervals = |r: &Report| -> Vec<IntervalReport> { only_run(r).intervals.clone() };
    assert_eq!(intervals(&split), intervals(&whole));
}

/// The error of evaluating `text` written as `name`, which must name that file at `line`.
fn error_at(name: &str, text: &str, line: usize) -> String {
    let path = write(name, text);
    let err: EvalError = evaluate(std::slice::from_ref(&path), &options(2)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("{}:{line}:", path.display())),
        "{msg}"
    );
    msg
}

#[test]
fn a_missing_column_names_file_and_line() {
    let mut rows = run_rows("r", &[("a", &[1.0; 4])]);
    rows[2].as_object_mut().unwrap().remove("regime");
    let msg = error_at("missing.jsonl", &jsonl(&rows), 3);
    assert!(msg.contains("regime"), "{msg}");
}

#[test]
fn a_bad_value_names_file_and_line() {
    let mut rows = run_rows("r", &[("a", &[1.0; 4])]);
    rows[1]["reward"] = json!("lots");
    error_at("bad.jsonl", &jsonl(&rows), 2);
}

#[test]
fn nan_names_file_and_line() {
    // JSON cannot spell NaN (writers write null); CSV can.
    let mut rows = run_rows("r", &[("a", &[1.0; 4])]);
    rows[3]["reward"] = Value::Null;
    error_at("null.jsonl", &jsonl(&rows), 4);
    let csv = "run_id,seed,algorithm_id,task,step,episode,episode_step,reward,regime,regime_origin,terminated,truncated,ceiling\n\
               r,1,hand,toy,0,0,0,1.0,a,initial,false,false,\n\
               r,1,hand,toy,1,0,1,NaN,a,initial,false,false,\n";
    let msg = error_at("nan.csv", csv, 3);
    assert!(msg.contains("finite"), "{msg}");
}

#[test]
fn non_contiguous_steps_name_file_line_and_steps() {
    let mut rows = run_rows("r", &[("a", &[1.0; 4])]);
    rows[2]["step"] = json!(3);
    let msg = error_at("gap.jsonl", &jsonl(&rows), 3);
    assert!(msg.contains("expected step 2 but found step 3"), "{msg}");
}

#[test]
fn interleaved_runs_name_file_and_line() {
    let a = run_rows("a", &[("x", &[1.0; 3])]);
    let b = run_rows("b", &[("x", &[1.0; 2])]);
    let rows = [&a[..2], &b[..], &a[2..]].concat();
    let msg = error_at("interleaved.jsonl", &jsonl(&rows), 5);
    assert!(msg.contains("`a` resume after rows of run `b`"), "{msg}");
}

#[test]
fn a_torn_tail_is_a_warning_and_complete_rows_count() {
    let rows = run_rows("r", &[("a", &[1.0; 5])]);
    let mut text = jsonl(&rows);
    text.push_str(r#"{"run_id":"r","seed":1,"algorithm_id":"hand","task":"to"#);
    let path = write("torn.jsonl", &text);
    let report = evaluate(std::slice::from_ref(&path), &options(2)).unwrap();
    assert_eq!(only_run(&report).steps, 5);
    assert_eq!(report.warnings.len(), 1);
    assert!(report.warnings[0].contains(&format!("{}: line 6", path.display())));
    let json: Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["warnings"].as_array().unwrap().len(), 1);
    assert!(report.to_text().contains("warning: "));
}

#[test]
fn no_rows_and_a_zero_window_are_errors() {
    let path = write("empty.jsonl", "");
    let err = evaluate(std::slice::from_ref(&path), &options(2)).unwrap_err();
    assert!(err.to_string().contains("no complete trace row"), "{err}");
    let path = write("one.jsonl", &jsonl(&run_rows("r", &[("a", &[1.0])])));
    assert!(matches!(
        evaluate(std::slice::from_ref(&path), &options(0)),
        Err(EvalError::InvalidOptions(_))
    ));
}
