//! The records of one run: per interval, per configuration, against references, and
//! l2metrics' definitions beside perennial's.

use std::collections::BTreeMap;

use serde::Serialize;

use super::group::{RunGroup, arm};
use super::reliability::RunReliability;
use crate::regime::{NotifyLevel, Origin};

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

/// `runs` grouped by `(task, algorithm_id, notify)`, each group's runs in run order, the
/// groups sorted by task, algorithm, then notify level (`none` first): the groups the
/// cross-run comparison and the reliability across runs share.
pub(crate) fn by_group(runs: &[RunReport]) -> Vec<(RunGroup, Vec<&RunReport>)> {
    let mut groups: BTreeMap<(&str, &str, NotifyLevel), Vec<&RunReport>> = BTreeMap::new();
    for run in runs {
        groups
            .entry((run.task.as_str(), run.algorithm_id.as_str(), run.notify))
            .or_default()
            .push(run);
    }
    groups
        .into_iter()
        .map(|((task, algorithm_id, notify), members)| {
            let group = RunGroup {
                task: task.to_string(),
                algorithm_id: algorithm_id.to_string(),
                notify,
                runs: members.len(),
            };
            (group, members)
        })
        .collect()
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
    /// The paired intervals' mean rewards (null when not matched) and the regret against
    /// them; read through `Deref` as `reference_mean_r`, `floor_mean_r`, `regret` and
    /// `normalized_regret`.
    #[serde(flatten)]
    pub means: Regret,
    /// F_k minus the reference's F_k at the same interval; null unless both have one.
    pub adjusted_forgetting: Option<f64>,
}

/// One label against the reference and floor runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ConfigurationAgainst {
    /// The reference and floor runs' `mean_reward` under the label (each null unless every
    /// interval of the label was matched) and the regret against them, read as on
    /// [`IntervalAgainst`].
    #[serde(flatten)]
    pub means: Regret,
    /// Mean of the label's `adjusted_forgetting`.
    pub mean_adjusted_forgetting: Option<f64>,
}

/// The regret of a mean reward against a reference and a floor.
///
/// `regret` = reference − mean; `normalized_regret` = regret / |reference − floor|, null
/// without a floor or when the reference and the floor are equal.
///
/// # Examples
///
/// ```
/// use perennial::eval::Regret;
///
/// let r = Regret::new(3.0, Some(5.0), Some(1.0));
/// assert_eq!(r.regret, Some(2.0));
/// assert_eq!(r.normalized_regret, Some(0.5));
/// assert_eq!(Regret::new(3.0, None, Some(1.0)).regret, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Regret {
    /// The reference's mean reward.
    pub reference_mean_r: Option<f64>,
    /// The floor's mean reward.
    pub floor_mean_r: Option<f64>,
    /// reference − mean.
    pub regret: Option<f64>,
    /// regret / |reference − floor|.
    pub normalized_regret: Option<f64>,
}

impl Regret {
    /// The regret of `mean_r` against `reference` and `floor` (either may be missing).
    pub fn new(mean_r: f64, reference: Option<f64>, floor: Option<f64>) -> Self {
        let regret = reference.map(|r| r - mean_r);
        let normalized_regret = match (regret, reference, floor) {
            (Some(g), Some(r), Some(f)) if r != f => Some(g / (r - f).abs()),
            _ => None,
        };
        Regret {
            reference_mean_r: reference,
            floor_mean_r: floor,
            regret,
            normalized_regret,
        }
    }
}

impl std::ops::Deref for IntervalAgainst {
    type Target = Regret;

    fn deref(&self) -> &Regret {
        &self.means
    }
}

impl std::ops::Deref for ConfigurationAgainst {
    type Target = Regret;

    fn deref(&self) -> &Regret {
        &self.means
    }
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
