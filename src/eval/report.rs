//! The report: per run, one record per interval and one per configuration; text and JSON.

use std::fmt::Write as _;

use serde::Serialize;

use super::aggregate::Aggregate;
use super::compare::Comparison;
use super::reliability::{GroupReliability, RunReliability, across_runs};
use crate::regime::NotifyLevel;

use super::record::by_group;
pub use super::record::{
    ConfigurationAgainst, ConfigurationReport, IntervalAgainst, IntervalReport, L2Interval,
    L2Label, L2Run, Paired, Regret, RunReport,
};
pub(crate) use super::table::{Table, num, opt};

/// Everything `perennial eval` reports. Serializes to the DESIGN JSON plus `groups` and
/// `warnings` (see the [module docs](super)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// With `--role R`: the role whose own reward (its `role_rewards` entry) the metrics
    /// measure, in place of the team reward; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// One record per run, in the order runs first appear in the files.
    pub runs: Vec<RunReport>,
    /// Runs grouped by `(task, algorithm_id)`: mean over seeds with a bootstrap CI.
    pub groups: Vec<Comparison>,
    /// rliable's aggregate statistics across runs and tasks, per algorithm.
    pub aggregate: Aggregate,
    /// l2metrics' definitions per run, beside perennial's.
    pub l2metrics: Vec<L2Run>,
    /// Chan et al.'s dispersion and risk, per run and across the runs of each
    /// `(task, algorithm_id)`.
    pub reliability: Reliability,
    /// Torn tails met while reading (complete rows before them were used).
    pub warnings: Vec<String>,
    /// The smoothing window W used (not serialized).
    #[serde(skip)]
    pub window: usize,
    /// Whether x_t included payouts (not serialized).
    #[serde(skip)]
    pub include_payout: bool,
}

/// One run's reliability statistics, named.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReliabilityEntry {
    /// The run.
    pub run_id: String,
    /// Its statistics.
    #[serde(flatten)]
    pub statistics: RunReliability,
}

/// The reliability section of a report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reliability {
    /// Per run, across time.
    pub runs: Vec<RunReliabilityEntry>,
    /// Per `(task, algorithm_id)`, across runs.
    pub groups: Vec<GroupReliability>,
}

/// Groups `runs` by `(task, algorithm_id, notify)` and computes [`across_runs`] on their
/// curves.
pub(crate) fn reliability_groups(runs: &[RunReport]) -> Vec<GroupReliability> {
    by_group(runs)
        .into_iter()
        .map(|(group, members)| {
            let curves: Vec<Vec<f64>> = members.iter().map(|r| r.blocks.clone()).collect();
            let (dispersion_across_runs, risk_across_runs) = across_runs(&curves);
            GroupReliability {
                group,
                dispersion_across_runs,
                risk_across_runs,
            }
        })
        .collect()
}

impl Report {
    /// A readable report: per run, one line per interval then one per configuration; then
    /// the cross-run groups with their confidence intervals; then any warnings.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(role) = &self.role {
            let _ = writeln!(
                out,
                "role {role}: the metrics measure its own reward (role_rewards.{role}), not the team's"
            );
        }
        let payout = if self.include_payout {
            "payouts included"
        } else {
            "payouts excluded"
        };
        for run in &self.runs {
            let _ = writeln!(
                out,
                "run {}  seed {}  algorithm {}  task {}{}  steps {}  episodes {}",
                run.run_id,
                run.seed,
                run.algorithm_id,
                run.task,
                notify_text(run.notify),
                run.steps,
                run.episodes
            );
            let _ = writeln!(out, "  intervals (W = {}, {payout})", self.window);
            let _ = writeln!(out, "  {}", gap_reference_text(run));
            let mut t = Table::new(
                &[
                    "#", "regime", "origin", "start", "end", "steps", "mean_r", "head", "tail",
                    "adapt", "recov", "forget", "std", "cvar05", "gap", "norm_gap",
                ],
                &[false, true, true],
            );
            for i in &run.intervals {
                t.row(vec![
                    i.index.to_string(),
                    i.regime.clone(),
                    i.origin.to_string(),
                    i.start.to_string(),
                    i.end.to_string(),
                    i.steps.to_string(),
                    num(i.mean_reward),
                    num(i.head),
                    num(i.tail),
                    i.adaptation_steps.to_string(),
                    match (i.recovery_steps, i.recovered) {
                        (Some(r), _) => r.to_string(),
                        (None, Some(false)) => "never".to_string(),
                        (None, _) => "-".to_string(),
                    },
                    opt(i.forgetting),
                    num(i.stability_std),
                    num(i.cvar05),
                    opt(i.gap),
                    opt(i.normalized_gap),
                ]);
            }
            t.render(&mut out, "    ");
            let _ = writeln!(out, "  configurations");
            let mut t = Table::new(
                &[
                    "regime",
                    "steps",
                    "intervals",
                    "mean_r",
                    "gap",
                    "norm_gap",
                    "forgetting",
                    "components",
                ],
                &[true, false, false, false, false, false, false, true],
            );
            for (label, c) in &run.configurations {
                let components: Vec<String> = c
                    .components
                    .iter()
                    .map(|(k, v)| format!("{k}={}", num(*v)))
                    .collect();
                t.row(vec![
                    label.clone(),
                    c.steps.to_string(),
                    c.intervals.to_string(),
                    num(c.mean_reward),
                    opt(c.gap),
                    opt(c.normalized_gap),
                    opt(c.mean_forgetting),
                    components.join(" "),
                ]);
            }
            t.render(&mut out, "    ");
            run_extras(&mut out, run);
            out.push('\n');
        }
        out.push_str(&super::compare::comparison_text(&self.groups));
        out.push_str(&self.aggregate.to_text());
        reliability_text(&mut out, &self.reliability.groups);
        for w in &self.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        out
    }
}

/// The reference, l2metrics and reliability lines of one run.
fn run_extras(out: &mut String, run: &RunReport) {
    if let Some(paired) = &run.paired {
        let _ = writeln!(
            out,
            "  against reference {}  floor {}",
            paired.reference_run_id.as_deref().unwrap_or("-"),
            paired.floor_run_id.as_deref().unwrap_or("-")
        );
        let mut t = Table::new(
            &[
                "#",
                "regime",
                "mean_r",
                "ref_r",
                "floor_r",
                "regret",
                "norm_regret",
                "forget",
                "adj_forget",
            ],
            &[false, true],
        );
        for i in &run.intervals {
            let a = i.against.unwrap_or_default();
            t.row(vec![
                i.index.to_string(),
                i.regime.clone(),
                num(i.mean_reward),
                opt(a.reference_mean_r),
                opt(a.floor_mean_r),
                opt(a.regret),
                opt(a.normalized_regret),
                opt(i.forgetting),
                opt(a.adjusted_forgetting),
            ]);
        }
        t.render(out, "    ");
        let mut t = Table::new(
            &["regime", "ref_r", "regret", "norm_regret", "adj_forgetting"],
            &[true],
        );
        for (label, c) in &run.configurations {
            let a = c.against.unwrap_or_default();
            t.row(vec![
                label.clone(),
                opt(a.reference_mean_r),
                opt(a.regret),
                opt(a.normalized_regret),
                opt(a.mean_adjusted_forgetting),
            ]);
        }
        t.render(out, "    ");
    }
    let _ = writeln!(out, "  l2metrics (against the label's previous tail)");
    let mut t = Table::new(&["regime", "perf_recovery", "perf_maintenance"], &[true]);
    for (label, c) in &run.configurations {
        t.row(vec![
            label.clone(),
            opt(c.performance_recovery),
            opt(c.performance_maintenance),
        ]);
    }
    t.render(out, "    ");
    let r = &run.reliability;
    let _ = writeln!(
        out,
        "  reliability over {} blocks of W: dispersion_across_time {}  short_term_risk {}  long_term_risk {}",
        r.blocks,
        opt(r.dispersion_across_time),
        opt(r.short_term_risk),
        opt(r.long_term_risk)
    );
}

/// `"  notify LEVEL"` for a level other than `none`, else nothing.
/// Which upper bound the run's gaps were measured against, for the text report.
fn gap_reference_text(run: &RunReport) -> String {
    let floored = run
        .intervals
        .iter()
        .any(|i| i.bound.is_some() && i.against.is_some_and(|a| a.floor_mean_r.is_some()));
    match (run.intervals.iter().any(|i| i.bound.is_some()), floored) {
        (true, true) => {
            "gap to the expected-reward bound; norm_gap = gap / (bound - floor_mean_r)".into()
        }
        (true, false) => "gap to the expected-reward bound; norm_gap = gap / bound".into(),
        (false, _) => "gap to the ceiling; norm_gap = sum(ceiling - r) / sum(ceiling)".into(),
    }
}

pub(crate) fn notify_text(level: NotifyLevel) -> String {
    if level.is_none() {
        String::new()
    } else {
        format!("  notify {level}")
    }
}

/// Chan et al.'s across-run statistics, one line per group.
fn reliability_text(out: &mut String, groups: &[GroupReliability]) {
    let _ = writeln!(out, "reliability across runs (Chan et al. 2020)");
    let mut t = Table::new(
        &[
            "task",
            "algorithm",
            "runs",
            "dispersion_across_runs",
            "risk_across_runs",
        ],
        &[true, true],
    );
    for g in groups {
        t.row(vec![
            g.task.clone(),
            g.arm(),
            g.runs.to_string(),
            opt(g.dispersion_across_runs),
            opt(g.risk_across_runs),
        ]);
    }
    t.render(out, "    ");
}
