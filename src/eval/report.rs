//! The report: per run, one record per interval and one per configuration; text and JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::aggregate::Aggregate;
use super::compare::Comparison;
use super::reliability::{GroupReliability, RunReliability};
use crate::regime::{NotifyLevel, Origin};

/// Everything `perennial eval` reports. Serializes to the DESIGN JSON plus `groups` and
/// `warnings` (see the [module docs](super)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
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

/// The metrics of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// The run's id.
    pub run_id: String,
    /// Its seed.
    pub seed: u64,
    /// The agent's id.
    pub algorithm_id: String,
    /// The task.
    pub task: String,
    /// What the agent was told about shifts (the trace's `notify` column); serialized only
    /// when it is not `none`, so a report on traces without the column is unchanged.
    #[serde(skip_serializing_if = "NotifyLevel::is_none")]
    pub notify: NotifyLevel,
    /// Rows (steps) in the run.
    pub steps: u64,
    /// Distinct `episode` values met.
    pub episodes: u64,
    /// Configuration intervals in step order.
    pub intervals: Vec<IntervalReport>,
    /// Per label.
    pub configurations: BTreeMap<String, ConfigurationReport>,
    /// The paired reference and floor runs; `None` (and not serialized) unless references
    /// or floors were given.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
    /// Chan et al.'s dispersion and risk across time. Serialized in `reliability`.
    #[serde(skip)]
    pub reliability: RunReliability,
    /// Means of x over consecutive blocks of W steps from the run's first step (the
    /// remainder dropped). Not serialized.
    #[serde(skip)]
    pub blocks: Vec<f64>,
    /// The plotted curve: `(step, run-wide rolling mean of x)` at no more than about 2000
    /// steps. Not serialized.
    #[serde(skip)]
    pub curve: Vec<(u64, f64)>,
}

impl RunReport {
    /// The name the run's algorithm goes by across runs: `algorithm_id`, with
    /// `+notify=LEVEL` appended when the agent was told about shifts, so the notify
    /// settings of one agent aggregate and compare as separate algorithms.
    pub fn arm(&self) -> String {
        arm(&self.algorithm_id, self.notify)
    }
}

/// `algorithm_id`, or `algorithm_id+notify=LEVEL` for a level other than `none`.
pub(crate) fn arm(algorithm_id: &str, notify: NotifyLevel) -> String {
    if notify.is_none() {
        algorithm_id.to_string()
    } else {
        format!("{algorithm_id}+notify={notify}")
    }
}

/// The metrics of one configuration interval k.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IntervalReport {
    /// k, from 0 within the run.
    pub index: usize,
    /// The label c_k.
    pub regime: String,
    /// The origin of its first row.
    pub origin: Origin,
    /// s_k, the first step.
    pub start: u64,
    /// e_k, the last step.
    pub end: u64,
    /// n_k.
    pub steps: u64,
    /// Mean of r over the interval.
    pub mean_reward: f64,
    /// H_k.
    pub head: f64,
    /// P_k.
    pub tail: f64,
    /// A_k, in [w_k, n_k].
    pub adaptation_steps: u64,
    /// R_k; null for k = 0 or when never reached.
    pub recovery_steps: Option<u64>,
    /// Whether m_k reached B_k; null for k = 0.
    pub recovered: Option<bool>,
    /// F_k; null on a label's first interval.
    pub forgetting: Option<f64>,
    /// The values against the paired reference and floor intervals; `None` (and not
    /// serialized) unless references or floors were given.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub against: Option<IntervalAgainst>,
    /// l2metrics' recovery time: steps until m_k reaches the tail of the label's previous
    /// interval; null on a label's first interval or when never reached. Serialized in the
    /// report's `l2metrics` section.
    #[serde(skip)]
    pub l2_recovery_steps: Option<u64>,
    /// l2metrics' maintenance: mean of x over the interval minus the tail of the label's
    /// previous interval; null on a label's first interval. Serialized in `l2metrics`.
    #[serde(skip)]
    pub l2_maintenance: Option<f64>,
    /// Population std of the block means.
    pub stability_std: f64,
    /// Mean of the lowest ceil(0.05 B) block means.
    pub cvar05: f64,
    /// Mean of (u - r) over rows with a gap reference u: the row's `bound`, else its
    /// `ceiling`; null without.
    pub gap: Option<f64>,
    /// sum(u - r) / sum(u), or with a floor and a bound (bound − mean_r) / (bound −
    /// floor_mean_r); null without references (or when the denominator is 0).
    pub normalized_gap: Option<f64>,
    /// The mean expected-reward bound the gap was measured against; absent (not
    /// serialized) when no row has a bound, and the gap is then to the ceiling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
}

/// The metrics of one label over all its intervals in a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigurationReport {
    /// Steps under the label.
    pub steps: u64,
    /// Intervals of the label.
    pub intervals: u64,
    /// Sum of r under the label / steps.
    pub mean_reward: f64,
    /// Per component: its sum under the label / steps.
    pub components: BTreeMap<String, f64>,
    /// Mean of (u - r) over the label's rows with a gap reference u (bound, else
    /// ceiling); null without.
    pub gap: Option<f64>,
    /// sum(u - r) / sum(u) over those rows, or (bound − mean_r) / (bound − floor_mean_r)
    /// with a floor; null without.
    pub normalized_gap: Option<f64>,
    /// The mean expected-reward bound the gap was measured against; absent (not
    /// serialized) when no row has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    /// Mean of F_k over the label's recurrences; null if it never recurred.
    pub mean_forgetting: Option<f64>,
    /// The values against the reference and floor runs; `None` (and not serialized) unless
    /// references or floors were given.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub against: Option<ConfigurationAgainst>,
    /// l2metrics' performance recovery: −Theil–Sen slope of the label's `l2_recovery_steps`.
    /// Serialized in `l2metrics`.
    #[serde(skip)]
    pub performance_recovery: Option<f64>,
    /// l2metrics' performance maintenance: mean of the label's `l2_maintenance`. Serialized
    /// in `l2metrics`.
    #[serde(skip)]
    pub performance_maintenance: Option<f64>,
}

/// A run's paired reference and floor runs (same task and seed).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Paired {
    /// The reference run; null when none has the run's task and seed.
    pub reference_run_id: Option<String>,
    /// The floor run; likewise.
    pub floor_run_id: Option<String>,
}

/// One interval against its paired reference and floor intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct IntervalAgainst {
    /// The reference interval's mean reward; null when not matched.
    pub reference_mean_r: Option<f64>,
    /// The floor interval's mean reward; null when not matched.
    pub floor_mean_r: Option<f64>,
    /// reference_mean_r − mean_reward.
    pub regret: Option<f64>,
    /// regret / |reference_mean_r − floor_mean_r|; null without both or when they are equal.
    pub normalized_regret: Option<f64>,
    /// F_k minus the reference's F_k at the same interval; null unless both have one.
    pub adjusted_forgetting: Option<f64>,
}

/// One label against the reference and floor runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ConfigurationAgainst {
    /// The reference run's `mean_reward` under the label, when every interval of the label
    /// was matched; null otherwise.
    pub reference_mean_r: Option<f64>,
    /// The floor run's, likewise.
    pub floor_mean_r: Option<f64>,
    /// reference_mean_r − mean_reward.
    pub regret: Option<f64>,
    /// regret / |reference_mean_r − floor_mean_r|.
    pub normalized_regret: Option<f64>,
    /// Mean of the label's `adjusted_forgetting`.
    pub mean_adjusted_forgetting: Option<f64>,
}

/// l2metrics' values of one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct L2Interval {
    /// k.
    pub index: usize,
    /// The label.
    pub regime: String,
    /// See [`IntervalReport::l2_recovery_steps`].
    pub l2_recovery_steps: Option<u64>,
    /// See [`IntervalReport::l2_maintenance`].
    pub l2_maintenance: Option<f64>,
}

/// l2metrics' values of one label.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct L2Label {
    /// See [`ConfigurationReport::performance_recovery`].
    pub performance_recovery: Option<f64>,
    /// See [`ConfigurationReport::performance_maintenance`].
    pub performance_maintenance: Option<f64>,
}

/// l2metrics' values of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct L2Run {
    /// The run.
    pub run_id: String,
    /// Per interval.
    pub intervals: Vec<L2Interval>,
    /// Per label.
    pub configurations: BTreeMap<String, L2Label>,
}

impl L2Run {
    pub(crate) fn of(run: &RunReport) -> Self {
        L2Run {
            run_id: run.run_id.clone(),
            intervals: run
                .intervals
                .iter()
                .map(|i| L2Interval {
                    index: i.index,
                    regime: i.regime.clone(),
                    l2_recovery_steps: i.l2_recovery_steps,
                    l2_maintenance: i.l2_maintenance,
                })
                .collect(),
            configurations: run
                .configurations
                .iter()
                .map(|(l, c)| {
                    (
                        l.clone(),
                        L2Label {
                            performance_recovery: c.performance_recovery,
                            performance_maintenance: c.performance_maintenance,
                        },
                    )
                })
                .collect(),
        }
    }
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

/// A number for a table: four decimals, or scientific for tiny magnitudes.
pub(crate) fn num(v: f64) -> String {
    if v == 0.0 || v.abs() >= 1e-3 {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

pub(crate) fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), num)
}

/// Aligned columns: text columns to the left, number columns to the right.
pub(crate) struct Table {
    header: Vec<String>,
    left: Vec<bool>,
    rows: Vec<Vec<String>>,
}

/// Longest cell of a text table, in characters; longer ones end in `…`.
const MAX_CELL_CHARS: usize = 80;

/// A cell as the table shows it: control characters (a newline in a label would break the
/// table's lines) as `\u{..}` escapes, and at most [`MAX_CELL_CHARS`] characters.
fn cell_text(c: &str) -> String {
    let mut out = String::new();
    for (n, ch) in c.chars().enumerate() {
        if n + 1 >= MAX_CELL_CHARS && c.chars().count() > MAX_CELL_CHARS {
            out.push('…');
            break;
        }
        if ch.is_control() {
            out.extend(ch.escape_unicode());
        } else {
            out.push(ch);
        }
    }
    out
}

impl Table {
    /// A table with these column names; `left` marks the text columns.
    pub(crate) fn new(header: &[&str], left: &[bool]) -> Self {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            left: left.to_vec(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells.iter().map(|c| cell_text(c)).collect());
    }

    pub(crate) fn render(&self, out: &mut String, indent: &str) {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::from(indent);
            for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                // Padded by hand: `format!`'s width argument panics above 65,535.
                let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                if self.left.get(i).copied().unwrap_or(false) {
                    line.push_str(c);
                    line.push_str(&pad);
                } else {
                    line.push_str(&pad);
                    line.push_str(c);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

impl Report {
    /// A readable report: per run, one line per interval then one per configuration; then
    /// the cross-run groups with their confidence intervals; then any warnings.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
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
            arm(&g.algorithm_id, g.notify),
            g.runs.to_string(),
            opt(g.dispersion_across_runs),
            opt(g.risk_across_runs),
        ]);
    }
    t.render(out, "    ");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cells_and_control_characters_keep_the_table_whole() {
        let mut t = Table::new(&["regime", "steps"], &[true, false]);
        t.row(vec!["x".repeat(70_000), "1".into()]);
        t.row(vec!["a\nb\u{7}".into(), "2".into()]);
        let mut out = String::new();
        t.render(&mut out, "");
        assert_eq!(out.lines().count(), 3, "{out}");
        assert!(out.contains("a\\u{a}b\\u{7}"), "{out}");
        assert!(out.lines().all(|l| l.chars().count() < 100), "{out}");
    }
}
