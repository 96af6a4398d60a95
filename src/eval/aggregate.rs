//! The published aggregate statistics (Agarwal et al. 2021, rliable): IQM, mean, median and
//! optimality gap with stratified bootstrap CIs, probability of improvement, performance
//! profiles.
//!
//! A score matrix holds, per task column, one score per run. Columns may hold different
//! numbers of runs; with equal numbers every function here equals rliable's on the
//! `(runs × tasks)` matrix:
//!
//! - [`iqm`]: the 25% trimmed mean of all scores pooled (scipy's `trim_mean(·, 0.25)`: sort
//!   the N scores, drop the lowest and highest floor(N / 4), average the rest);
//! - [`mean`]: the mean over tasks of each task's mean over runs;
//! - [`median`]: the median over tasks of those task means;
//! - [`optimality_gap`]: γ − mean over all scores of min(score, γ);
//! - [`probability_of_improvement`]: per task shared by X and Y, P(X > Y) + ½ P(X = Y) over
//!   all pairs of their runs (the Mann–Whitney U over n_x n_y; 0.5 when the two columns are
//!   identical), averaged over the shared tasks;
//! - [`profile`]: the score distribution, the fraction of all scores strictly above τ.
//!
//! CIs are rliable's stratified percentile bootstrap: each resample draws, within every task
//! column independently, as many runs as the column has, with replacement; the CI is the
//! 2.5th and 97.5th percentile (linear interpolation, numpy's default) of the statistic over
//! the resamples. For probability of improvement the two algorithms' matrices are resampled
//! independently. Resamples come from ChaCha8 seeded from the options' seed and the
//! statistic's name, so a report is reproducible but does not reproduce rliable's
//! (numpy-drawn) bounds exactly, only within bootstrap noise.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::order::{percentile, sorted};
use super::record::RunReport;
use super::sum::Sum;
use super::table::{Table, ci, num};

/// Score columns: one `Vec` of per-run scores per task.
pub type Scores = [Vec<f64>];

fn sum(values: impl Iterator<Item = f64>) -> f64 {
    values.collect::<Sum>().value()
}

/// The interquartile mean of all scores pooled; `None` when there is none.
///
/// # Examples
///
/// ```
/// use perennial::eval::iqm;
///
/// // Eight scores: the lowest two and the highest two are dropped.
/// let scores = vec![vec![0.0, 1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0, 100.0]];
/// assert_eq!(iqm(&scores), Some(3.5));
/// ```
pub fn iqm(scores: &Scores) -> Option<f64> {
    let v = sorted(scores.iter().flatten().copied());
    let cut = v.len() / 4;
    let kept = &v[cut..v.len() - cut];
    (!kept.is_empty()).then(|| sum(kept.iter().copied()) / kept.len() as f64)
}

fn task_means(scores: &Scores) -> Vec<f64> {
    scores
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| sum(c.iter().copied()) / c.len() as f64)
        .collect()
}

/// The mean over tasks of the per-task mean score; `None` without scores.
pub fn mean(scores: &Scores) -> Option<f64> {
    let m = task_means(scores);
    (!m.is_empty()).then(|| sum(m.iter().copied()) / m.len() as f64)
}

/// The median over tasks of the per-task mean score; `None` without scores.
pub fn median(scores: &Scores) -> Option<f64> {
    let m = sorted(task_means(scores).into_iter());
    (!m.is_empty()).then(|| percentile(&m, 50.0))
}

/// γ − the mean over all scores of min(score, γ); `None` without scores.
pub fn optimality_gap(scores: &Scores, gamma: f64) -> Option<f64> {
    let n: usize = scores.iter().map(Vec::len).sum();
    (n > 0).then(|| gamma - sum(scores.iter().flatten().map(|&s| s.min(gamma))) / n as f64)
}

/// P(X > Y) averaged over the tasks where both have runs (ties count one half); `None` when
/// they share none. `x[m]` and `y[m]` are the same task.
///
/// # Examples
///
/// ```
/// use perennial::eval::probability_of_improvement;
///
/// // X beats Y in 3 of 4 pairs on the first task and ties the second exactly.
/// let x = vec![vec![2.0, 4.0], vec![1.0]];
/// let y = vec![vec![1.0, 3.0], vec![1.0]];
/// assert_eq!(probability_of_improvement(&x, &y), Some((0.75 + 0.5) / 2.0));
/// ```
pub fn probability_of_improvement(x: &Scores, y: &Scores) -> Option<f64> {
    let per_task: Vec<f64> = x
        .iter()
        .zip(y)
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .map(|(a, b)| {
            if a == b {
                return 0.5;
            }
            let mut u = 0.0;
            for &p in a {
                for &q in b {
                    u += if p > q {
                        1.0
                    } else if p == q {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
            u / (a.len() * b.len()) as f64
        })
        .collect();
    (!per_task.is_empty()).then(|| sum(per_task.iter().copied()) / per_task.len() as f64)
}

/// The fraction of all scores strictly above each τ in `taus`.
pub fn profile(scores: &Scores, taus: &[f64]) -> Vec<f64> {
    let n: usize = scores.iter().map(Vec::len).sum();
    taus.iter()
        .map(|&t| {
            if n == 0 {
                0.0
            } else {
                scores.iter().flatten().filter(|&&s| s > t).count() as f64 / n as f64
            }
        })
        .collect()
}

/// One stratified resample of `scores`: per column, as many draws with replacement.
fn resample(scores: &Scores, rng: &mut ChaCha8Rng) -> Vec<Vec<f64>> {
    scores
        .iter()
        .map(|c| {
            (0..c.len())
                .map(|_| c[rng.random_range(0..c.len())])
                .collect()
        })
        .collect()
}

/// A point estimate with its 95% stratified-bootstrap percentile CI.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// The statistic on the scores as given.
    pub estimate: f64,
    /// 2.5th percentile over the resamples.
    pub ci_low: f64,
    /// 97.5th percentile over the resamples.
    pub ci_high: f64,
}

/// The statistic `f` on `scores` with its CI from `resamples` stratified resamples.
fn interval(
    resamples: usize,
    seed: u64,
    estimate: Option<f64>,
    mut draw: impl FnMut(&mut ChaCha8Rng) -> Option<f64>,
) -> Option<Interval> {
    let estimate = estimate?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let v = sorted((0..resamples).filter_map(|_| draw(&mut rng)));
    if v.is_empty() {
        return Some(Interval {
            estimate,
            ci_low: estimate,
            ci_high: estimate,
        });
    }
    Some(Interval {
        estimate,
        ci_low: percentile(&v, 2.5),
        ci_high: percentile(&v, 97.5),
    })
}

/// `statistic` of `scores` with its 95% stratified-bootstrap CI (`resamples` resamples,
/// each drawing within every column as many runs as it has), the resampling stream seeded
/// from `seed` and `name`: the statistics of [`aggregate`](fn@aggregate) for a caller's own
/// score matrix.
///
/// # Examples
///
/// ```
/// use perennial::eval::{iqm, stratified_interval};
///
/// let scores = vec![vec![0.1, 0.2, 0.3, 0.4], vec![0.5, 0.6]];
/// let i = stratified_interval(&scores, 200, 0, &["demo"], iqm).unwrap();
/// assert!(i.ci_low <= i.estimate && i.estimate <= i.ci_high);
/// ```
pub fn stratified_interval(
    scores: &Scores,
    resamples: usize,
    seed: u64,
    name: &[&str],
    statistic: impl Fn(&Scores) -> Option<f64>,
) -> Option<Interval> {
    interval(resamples, stream(seed, name), statistic(scores), |rng| {
        statistic(&resample(scores, rng))
    })
}

/// [`probability_of_improvement`] of `x` over `y` with its 95% CI, the two matrices
/// resampled independently as [`aggregate`](fn@aggregate) does.
pub fn improvement_interval(
    x: &Scores,
    y: &Scores,
    resamples: usize,
    seed: u64,
    name: &[&str],
) -> Option<Interval> {
    interval(
        resamples,
        stream(seed, name),
        probability_of_improvement(x, y),
        |rng| probability_of_improvement(&resample(x, rng), &resample(y, rng)),
    )
}

/// A point of a performance profile.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ProfilePoint {
    /// The threshold τ.
    pub tau: f64,
    /// Fraction of scores above τ.
    pub fraction: f64,
    /// 2.5th percentile over the resamples.
    pub ci_low: f64,
    /// 97.5th percentile over the resamples.
    pub ci_high: f64,
}

/// One algorithm's aggregates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlgorithmAggregate {
    /// The algorithm: its `algorithm_id`, with `+notify=LEVEL` when its agents were told
    /// about shifts ([`RunReport::arm`]).
    pub algorithm: String,
    /// Runs of the algorithm.
    pub runs: usize,
    /// Scores (runs × tasks, counted over all columns).
    pub scores: usize,
    /// Interquartile mean.
    pub iqm: Option<Interval>,
    /// Mean of task means.
    pub mean: Option<Interval>,
    /// Median of task means.
    pub median: Option<Interval>,
    /// Optimality gap at γ.
    pub optimality_gap: Option<Interval>,
    /// The performance profile over the shared τ grid.
    pub profile: Vec<ProfilePoint>,
}

/// P(X > Y) for one ordered pair of algorithms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Improvement {
    /// X.
    pub x: String,
    /// Y.
    pub y: String,
    /// Tasks both have runs on.
    pub tasks: usize,
    /// The probability with its CI.
    pub probability: Option<Interval>,
}

/// The aggregate section of a report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Aggregate {
    /// Which score is aggregated: `"mean_reward"` (per run and label) or
    /// `"normalized_score"` ((mean_r − floor) / (reference − floor), when every run has both).
    pub score: String,
    /// The γ of the optimality gap.
    pub gamma: f64,
    /// Bootstrap resamples behind every CI.
    pub resamples: usize,
    /// The task columns, `"task/label"`, in order.
    pub tasks: Vec<String>,
    /// Per algorithm, sorted by name.
    pub algorithms: Vec<AlgorithmAggregate>,
    /// Every ordered pair of distinct algorithms.
    pub improvement: Vec<Improvement>,
}

/// Number of τ points in a profile.
pub const PROFILE_POINTS: usize = 51;

/// The performance profile of `scores` at each τ of `taus` ([`profile`]) with its 95%
/// stratified-bootstrap band, the resampling stream seeded from `seed` and `name`.
pub fn profile_interval(
    scores: &Scores,
    taus: &[f64],
    resamples: usize,
    seed: u64,
    name: &[&str],
) -> Vec<ProfilePoint> {
    let mut rng = ChaCha8Rng::seed_from_u64(stream(seed, name));
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); taus.len()];
    for _ in 0..resamples {
        for (d, p) in draws
            .iter_mut()
            .zip(profile(&resample(scores, &mut rng), taus))
        {
            d.push(p);
        }
    }
    taus.iter()
        .zip(profile(scores, taus))
        .zip(draws)
        .map(|((&tau, fraction), d)| {
            let d = sorted(d.into_iter());
            let (ci_low, ci_high) = if d.is_empty() {
                (fraction, fraction)
            } else {
                (percentile(&d, 2.5), percentile(&d, 97.5))
            };
            ProfilePoint {
                tau,
                fraction,
                ci_low,
                ci_high,
            }
        })
        .collect()
}

/// `seed` mixed with FNV-1a of the parts, so each statistic's resampling stream depends on
/// its name only, not on how many other statistics were drawn before it.
pub(crate) fn stream(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    seed ^ h
}

/// The run's score on `label`: its mean reward, or normalized between floor and reference.
fn score(run: &RunReport, label: &str, normalized: bool) -> Option<f64> {
    let c = run.configurations.get(label)?;
    if !normalized {
        return Some(c.mean_reward);
    }
    let a = c.against?;
    match (a.reference_mean_r, a.floor_mean_r) {
        (Some(r), Some(f)) if r != f => Some((c.mean_reward - f) / (r - f)),
        _ => None,
    }
}

/// The aggregate statistics of `runs`, grouped by algorithm ([`RunReport::arm`]: the
/// `algorithm_id`, and its notify level when not `none`), with one task column per
/// `(task, label)`. Scores are normalized when every run's every label has a reference and
/// a floor that differ; otherwise they are the per-label mean reward.
pub fn aggregate(runs: &[RunReport], gamma: f64, resamples: usize, seed: u64) -> Aggregate {
    let normalized = !runs.is_empty()
        && runs
            .iter()
            .all(|r| r.configurations.keys().all(|l| score(r, l, true).is_some()));
    let tasks: Vec<(String, String)> = runs
        .iter()
        .flat_map(|r| r.configurations.keys().map(|l| (r.task.clone(), l.clone())))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut matrices: BTreeMap<String, (usize, Vec<Vec<f64>>)> = BTreeMap::new();
    for run in runs {
        let entry = matrices
            .entry(run.arm())
            .or_insert_with(|| (0, vec![Vec::new(); tasks.len()]));
        entry.0 += 1;
        for (m, (task, label)) in tasks.iter().enumerate() {
            if *task == run.task
                && let Some(s) = score(run, label, normalized)
            {
                entry.1[m].push(s);
            }
        }
    }
    let all = sorted(
        matrices
            .values()
            .flat_map(|(_, m)| m.iter().flatten().copied()),
    );
    let taus: Vec<f64> = match (all.first(), all.last()) {
        (Some(&lo), Some(&hi)) if hi > lo => (0..PROFILE_POINTS)
            .map(|i| lo + (hi - lo) * i as f64 / (PROFILE_POINTS - 1) as f64)
            .collect(),
        (Some(&lo), _) => vec![lo],
        _ => Vec::new(),
    };
    let algorithms = matrices
        .iter()
        .map(|(name, (runs, m))| {
            let stat = |what: &str, f: &dyn Fn(&Scores) -> Option<f64>| {
                interval(
                    resamples,
                    stream(seed, &[name.as_str(), what]),
                    f(m),
                    |rng| f(&resample(m, rng)),
                )
            };
            let profile = profile_interval(m, &taus, resamples, seed, &[name.as_str(), "profile"]);
            AlgorithmAggregate {
                algorithm: name.to_string(),
                runs: *runs,
                scores: m.iter().map(Vec::len).sum(),
                iqm: stat("iqm", &iqm),
                mean: stat("mean", &mean),
                median: stat("median", &median),
                optimality_gap: stat("optimality_gap", &|s| optimality_gap(s, gamma)),
                profile,
            }
        })
        .collect();
    let mut improvement = Vec::new();
    for (x, (_, mx)) in &matrices {
        for (y, (_, my)) in &matrices {
            if x == y {
                continue;
            }
            let shared = mx
                .iter()
                .zip(my)
                .filter(|(a, b)| !a.is_empty() && !b.is_empty())
                .count();
            let probability = interval(
                resamples,
                stream(
                    seed,
                    &[x.as_str(), y.as_str(), "probability_of_improvement"],
                ),
                probability_of_improvement(mx, my),
                |rng| probability_of_improvement(&resample(mx, rng), &resample(my, rng)),
            );
            improvement.push(Improvement {
                x: x.to_string(),
                y: y.to_string(),
                tasks: shared,
                probability,
            });
        }
    }
    Aggregate {
        score: if normalized {
            "normalized_score"
        } else {
            "mean_reward"
        }
        .to_string(),
        gamma,
        resamples,
        tasks: tasks.iter().map(|(t, l)| format!("{t}/{l}")).collect(),
        algorithms,
        improvement,
    }
}

impl Aggregate {
    /// The aggregate table: per algorithm IQM, mean, median and optimality gap with CIs,
    /// then P(X > Y) for every ordered pair.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "aggregate over runs and tasks (score {}, {} task columns, 95% stratified bootstrap CI, {} resamples)",
            self.score,
            self.tasks.len(),
            self.resamples
        );
        let cell = |e: Option<Interval>| ci(e.map(|e| (e.estimate, e.ci_low, e.ci_high)));
        let gap = format!("optimality_gap (γ = {})", num(self.gamma));
        let mut t = Table::new(
            &["algorithm", "runs", "iqm", "mean", "median", &gap],
            &[true],
        );
        for a in &self.algorithms {
            t.row(vec![
                a.algorithm.clone(),
                a.runs.to_string(),
                cell(a.iqm),
                cell(a.mean),
                cell(a.median),
                cell(a.optimality_gap),
            ]);
        }
        t.render(&mut out, "    ");
        if !self.improvement.is_empty() {
            let _ = writeln!(out, "  probability of improvement P(X > Y)");
            let mut t = Table::new(&["X", "Y", "tasks", "P(X > Y)"], &[true, true]);
            for i in &self.improvement {
                t.row(vec![
                    i.x.clone(),
                    i.y.clone(),
                    i.tasks.to_string(),
                    cell(i.probability),
                ]);
            }
            t.render(&mut out, "    ");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iqm_of_eight_drops_two_at_each_end() {
        let s = vec![vec![8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0]];
        assert_eq!(iqm(&s), Some(4.5));
    }

    #[test]
    fn iqm_of_a_count_not_divisible_by_four_follows_scipy() {
        // N = 6: floor(6 / 4) = 1 dropped at each end, as scipy's trim_mean does.
        let s = vec![vec![0.0, 1.0, 2.0], vec![3.0, 4.0, 50.0]];
        assert_eq!(iqm(&s), Some(2.5));
    }

    #[test]
    fn median_of_an_even_number_of_tasks_averages_the_middle_two() {
        let s = vec![vec![1.0], vec![2.0], vec![4.0], vec![10.0]];
        assert_eq!(median(&s), Some(3.0));
        assert_eq!(mean(&s), Some(4.25));
    }

    #[test]
    fn optimality_gap_clips_at_gamma() {
        let s = vec![vec![0.5, 2.0], vec![1.0, 0.0]];
        assert_eq!(optimality_gap(&s, 1.0), Some(1.0 - 2.5 / 4.0));
    }

    #[test]
    fn profile_counts_scores_strictly_above_tau() {
        let s = vec![vec![0.0, 1.0], vec![2.0, 3.0]];
        assert_eq!(profile(&s, &[-1.0, 1.0, 3.0]), vec![1.0, 0.5, 0.0]);
    }

    #[test]
    fn bootstrap_ci_brackets_the_estimate_and_is_reproducible() {
        let s = vec![vec![1.0, 2.0, 3.0, 4.0, 5.0], vec![2.0, 4.0, 6.0, 8.0, 9.0]];
        let run = |seed| interval(500, seed, iqm(&s), |rng| iqm(&resample(&s, rng)));
        let a = run(7).unwrap();
        assert!(a.ci_low <= a.estimate && a.estimate <= a.ci_high);
        assert!(a.ci_low < a.ci_high);
        assert_eq!(run(7), Some(a));
    }

    #[test]
    fn percentile_interpolates_linearly() {
        assert_eq!(percentile(&[0.0, 10.0], 25.0), 2.5);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 97.5), 4.9);
    }
}
