//! Across runs: group by (task, algorithm), mean over seeds with a bootstrap confidence interval.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::aggregate::stream;
use super::group::RunGroup;
use super::record::{RunReport, by_group};
use super::sum::Sum;
use super::table::{Table, ci};

/// A mean over runs with its 95% percentile-bootstrap confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Mean of the per-run values.
    pub mean: f64,
    /// 2.5th percentile of the bootstrap means.
    pub ci_low: f64,
    /// 97.5th percentile of the bootstrap means.
    pub ci_high: f64,
    /// Runs that had a value (a metric that does not apply to a run is left out).
    pub n: usize,
}

/// Declares [`LabelComparison`] with one `Option<Estimate>` field per metric, [`METRICS`]
/// with their names in field order, and the ways between the two, from one list: a
/// metric's name is written once.
macro_rules! label_metrics {
    ($($(#[$attr:meta])* $name:ident,)+) => {
        /// One label's metrics in a group: per run a single number, then an [`Estimate`]
        /// over runs.
        ///
        /// Per run, interval metrics are averaged over the label's intervals that have
        /// them; a field is null when no run of the group has a value.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        pub struct LabelComparison {
            /// Runs of the group with at least one interval of the label.
            pub runs: usize,
            $($(#[$attr])* pub $name: Option<Estimate>,)+
        }

        /// The metric names of [`LabelComparison`], in field order.
        pub const METRICS: [&str; [$(stringify!($name)),+].len()] = [$(stringify!($name)),+];

        impl LabelComparison {
            /// `(name, estimate)` for each metric, in [`METRICS`] order.
            pub fn metrics(&self) -> [(&'static str, Option<Estimate>); METRICS.len()] {
                [$((stringify!($name), self.$name)),+]
            }

            /// The comparison of `runs` runs from each metric's estimate, in [`METRICS`]
            /// order.
            fn from_estimates(runs: usize, estimates: [Option<Estimate>; METRICS.len()]) -> Self {
                let [$($name),+] = estimates;
                LabelComparison { runs, $($name),+ }
            }
        }
    };
}

label_metrics! {
    /// The configuration's `mean_reward`.
    mean_reward,
    /// Mean A_k over the label's intervals.
    adaptation_steps,
    /// Mean R_k over the label's recovered intervals.
    recovery_steps,
    /// Fraction of the label's intervals with k >= 1 that recovered.
    recovered_fraction,
    /// The configuration's `mean_forgetting`.
    forgetting,
    /// Mean `stability_std` over the label's intervals.
    stability_std,
    /// Mean `cvar05` over the label's intervals.
    cvar05,
    /// The configuration's `gap`.
    gap,
    /// The configuration's `normalized_gap`.
    normalized_gap,
    /// The configuration's `regret` against the paired reference run (`--reference`);
    /// absent (not serialized) without references.
    #[serde(skip_serializing_if = "Option::is_none")]
    regret,
    /// The configuration's `normalized_regret` (`--reference` and `--floor`); absent
    /// without both.
    #[serde(skip_serializing_if = "Option::is_none")]
    normalized_regret,
}

/// The runs of one `(task, algorithm_id, notify)`, compared label by label.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The group (its fields read through `Deref`).
    #[serde(flatten)]
    pub group: RunGroup,
    /// Their seeds, in run order.
    pub seeds: Vec<u64>,
    /// Their run ids, in run order.
    pub run_ids: Vec<String>,
    /// Per label.
    pub configurations: BTreeMap<String, LabelComparison>,
}

impl std::ops::Deref for Comparison {
    type Target = RunGroup;

    fn deref(&self) -> &RunGroup {
        &self.group
    }
}

fn mean(values: &[f64]) -> f64 {
    values
        .iter()
        .copied()
        .collect::<Sum>()
        .mean(values.len() as f64)
}

fn mean_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.collect();
    (!v.is_empty()).then(|| mean(&v))
}

/// The mean of `values` with a 95% percentile-bootstrap CI from `resamples` resamples
/// drawn with ChaCha8 seeded by `seed`. One value, or no resamples, gives CI = [mean, mean].
///
/// The CI bounds are the order statistics at 0-based ranks floor(0.025 R) and
/// ceil(0.975 R) - 1 of the R sorted resample means.
///
/// # Examples
///
/// ```
/// use perennial::eval::bootstrap;
///
/// let e = bootstrap(&[1.0, 2.0, 3.0, 4.0], 2000, 0).unwrap();
/// assert_eq!(e.mean, 2.5);
/// assert!(e.ci_low >= 1.0 && e.ci_low < 2.5 && e.ci_high > 2.5 && e.ci_high <= 4.0);
/// assert_eq!(bootstrap(&[7.0], 2000, 0).map(|e| (e.ci_low, e.ci_high)), Some((7.0, 7.0)));
/// assert!(bootstrap(&[], 2000, 0).is_none());
/// ```
pub fn bootstrap(values: &[f64], resamples: usize, seed: u64) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let m = mean(values);
    let n = values.len();
    if n == 1 || resamples == 0 {
        return Some(Estimate {
            mean: m,
            ci_low: m,
            ci_high: m,
            n,
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            (0..n)
                .map(|_| values[rng.random_range(0..n)])
                .collect::<Sum>()
                .mean(n as f64)
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let lo = (resamples as f64 * 0.025).floor() as usize;
    let hi = ((resamples as f64 * 0.975).ceil() as usize).clamp(1, resamples) - 1;
    Some(Estimate {
        mean: m,
        ci_low: means[lo.min(resamples - 1)],
        ci_high: means[hi],
        n,
    })
}

/// One run's value of each metric under `label`, in [`METRICS`] order.
fn run_values(run: &RunReport, label: &str) -> [Option<f64>; METRICS.len()] {
    let config = run.configurations.get(label);
    let of_label = || run.intervals.iter().filter(|i| i.regime == label);
    let after_first = || of_label().filter(|i| i.recovered.is_some());
    let recovered = after_first().filter(|i| i.recovered == Some(true)).count();
    let followers = after_first().count();
    [
        config.map(|c| c.mean_reward),
        mean_of(of_label().map(|i| i.adaptation_steps as f64)),
        mean_of(of_label().filter_map(|i| i.recovery_steps.map(|r| r as f64))),
        (followers > 0).then(|| recovered as f64 / followers as f64),
        config.and_then(|c| c.mean_forgetting),
        mean_of(of_label().map(|i| i.stability_std)),
        mean_of(of_label().map(|i| i.cvar05)),
        config.and_then(|c| c.gap),
        config.and_then(|c| c.normalized_gap),
        config.and_then(|c| c.against?.regret),
        config.and_then(|c| c.against?.normalized_regret),
    ]
}

/// Groups `runs` by `(task, algorithm_id, notify)` and gives, per label and metric, the mean over
/// the group's runs with a 95% bootstrap CI (`resamples` resamples, seeded from `seed` and
/// the estimate's name, so results do not depend on which other runs are present).
/// Groups come sorted by task, algorithm, then notify level (`none` first), so the notify
/// settings of one agent sit side by side.
///
/// # Examples
///
/// ```no_run
/// use perennial::eval::{compare, comparison_text, evaluate, EvalOptions};
///
/// let report = evaluate(&["a.jsonl".into(), "b.jsonl".into()], &EvalOptions::default())?;
/// let groups = compare(&report.runs, 2000, 0);
/// print!("{}", comparison_text(&groups));
/// # Ok::<(), perennial::eval::EvalError>(())
/// ```
pub fn compare(runs: &[RunReport], resamples: usize, seed: u64) -> Vec<Comparison> {
    by_group(runs)
        .into_iter()
        .map(|(group, members)| {
            // The algorithm's name alone at level `none`, so those streams are unchanged.
            let name = group.arm();
            let labels: std::collections::BTreeSet<&str> = members
                .iter()
                .flat_map(|r| r.configurations.keys().map(String::as_str))
                .collect();
            let configurations = labels
                .into_iter()
                .map(|label| {
                    let per_run: Vec<[Option<f64>; METRICS.len()]> =
                        members.iter().map(|r| run_values(r, label)).collect();
                    let est: [Option<Estimate>; METRICS.len()] = std::array::from_fn(|m| {
                        let values: Vec<f64> = per_run.iter().filter_map(|v| v[m]).collect();
                        let names = [group.task.as_str(), name.as_str(), label, METRICS[m]];
                        bootstrap(&values, resamples, stream(seed, &names))
                    });
                    let runs = members
                        .iter()
                        .filter(|r| r.configurations.contains_key(label))
                        .count();
                    let comparison = LabelComparison::from_estimates(runs, est);
                    (label.to_string(), comparison)
                })
                .collect();
            Comparison {
                group,
                seeds: members.iter().map(|r| r.seed).collect(),
                run_ids: members.iter().map(|r| r.run_id.clone()).collect(),
                configurations,
            }
        })
        .collect()
}

/// A readable table per group: one line per metric, one column per label, each cell
/// `mean [ci_low, ci_high]` (`-` where the metric does not apply). The regret lines are
/// shown only when some run of the group was paired with a reference.
pub fn comparison_text(groups: &[Comparison]) -> String {
    let mut out = String::new();
    for g in groups {
        let seeds: Vec<String> = g.seeds.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "group task {}  algorithm {}  runs {}  seeds {}  (mean over runs [95% bootstrap CI])",
            g.task,
            g.arm(),
            g.runs,
            seeds.join(",")
        );
        let mut header = vec!["metric"];
        header.extend(g.configurations.keys().map(String::as_str));
        let mut t = Table::new(&header, &[true]);
        let cell = |e: Option<Estimate>| ci(e.map(|e| (e.mean, e.ci_low, e.ci_high)));
        let mut runs = vec!["runs".to_string()];
        runs.extend(g.configurations.values().map(|c| c.runs.to_string()));
        t.row(runs);
        for (m, name) in METRICS.iter().enumerate() {
            let values: Vec<Option<Estimate>> = g
                .configurations
                .values()
                .map(|c| c.metrics()[m].1)
                .collect();
            if name.ends_with("regret") && values.iter().all(Option::is_none) {
                continue;
            }
            let mut row = vec![name.to_string()];
            row.extend(values.into_iter().map(cell));
            t.row(row);
        }
        t.render(&mut out, "    ");
        out.push('\n');
    }
    out
}
