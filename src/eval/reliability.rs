//! Reliability statistics after Chan et al. (2020), "Measuring the Reliability of
//! Reinforcement Learning Algorithms": dispersion and risk across time and across runs.
//!
//! The curve they are computed on is the run's **block curve**: x_t cut into consecutive
//! blocks of W steps from the run's first step (the remainder dropped), b_i the block
//! means. It is the continual analogue of a training curve evaluated every W steps.
//!
//! Per run:
//! - `dispersion_across_time`: detrend by first differences d_i = b_i − b_{i−1}, cut d into
//!   consecutive windows of [`WINDOW`] differences (the last window takes the remainder when
//!   it has at least 2), take each window's IQR (75th − 25th percentile, linear
//!   interpolation), and average them. Null with fewer than 2 differences.
//! - `short_term_risk`: CVaR of the differences at α = 0.05, the mean of the lowest
//!   ceil(α n) of the n differences (negative: the typical worst drop from one block to the
//!   next). Null without a difference.
//! - `long_term_risk`: CVaR of the drawdown at α = 0.05, with drawdown D_i = max_{j ≤ i} b_j
//!   − b_i ≥ 0: the mean of the highest ceil(α n) of the n drawdowns (the typical worst
//!   loss from the best level reached so far). Null without a block.
//!
//! Across the runs of one `(task, algorithm_id)`:
//! - `dispersion_across_runs`: at every block index all the runs reached, the IQR of the
//!   runs' b_i; averaged over those indices. Null with fewer than 2 runs.
//! - `risk_across_runs`: CVaR at α = 0.05 of the runs' final performance (the mean of their
//!   last ceil(n / 10) blocks, at least one): the mean of the lowest ceil(α runs) of them.
//!
//! The block curve costs 8 bytes per W rows of a run.

use serde::Serialize;

use super::group::RunGroup;
use super::order::{percentile, sorted};
use super::sum::Sum;

/// Differences per window of `dispersion_across_time`.
pub const WINDOW: usize = 10;
/// The α of every CVaR here.
pub const ALPHA: f64 = 0.05;

fn mean(v: &[f64]) -> f64 {
    v.iter().copied().collect::<Sum>().value() / v.len() as f64
}

/// The interquartile range (75th − 25th percentile, linear interpolation); `None` when
/// empty.
///
/// # Examples
///
/// ```
/// assert_eq!(perennial::eval::iqr(&[1.0, 2.0, 3.0, 4.0, 5.0]), Some(2.0));
/// ```
pub fn iqr(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let v = sorted(values.iter().copied());
    Some(percentile(&v, 75.0) - percentile(&v, 25.0))
}

/// The mean of the lowest ceil(α n) values (α = 0.05); `None` when empty.
///
/// # Examples
///
/// ```
/// let v: Vec<f64> = (1..=40).map(f64::from).collect();
/// // ceil(0.05 * 40) = 2 lowest: 1 and 2.
/// assert_eq!(perennial::eval::cvar_lower(&v), Some(1.5));
/// ```
pub fn cvar_lower(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let v = sorted(values.iter().copied());
    let k = ((ALPHA * v.len() as f64).ceil() as usize).max(1);
    Some(mean(&v[..k]))
}

/// D_i = max_{j ≤ i} b_j − b_i.
pub fn drawdowns(curve: &[f64]) -> Vec<f64> {
    let mut peak = f64::NEG_INFINITY;
    curve
        .iter()
        .map(|&b| {
            peak = peak.max(b);
            peak - b
        })
        .collect()
}

/// One run's reliability statistics (the statistics are defined in [`crate::eval`]'s
/// "Reliability" section).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RunReliability {
    /// Blocks of W steps in the run's curve.
    pub blocks: usize,
    /// Mean within-window IQR of the first differences.
    pub dispersion_across_time: Option<f64>,
    /// CVaR (α = 0.05) of the first differences.
    pub short_term_risk: Option<f64>,
    /// CVaR (α = 0.05, upper tail) of the drawdown.
    pub long_term_risk: Option<f64>,
}

/// The reliability statistics of one block curve.
///
/// # Examples
///
/// ```
/// use perennial::eval::run_reliability;
///
/// // A steady climb: no dispersion, every difference +1, never below its peak.
/// let r = run_reliability(&[0.0, 1.0, 2.0, 3.0]);
/// assert_eq!(r.dispersion_across_time, Some(0.0));
/// assert_eq!(r.short_term_risk, Some(1.0));
/// assert_eq!(r.long_term_risk, Some(0.0));
/// ```
pub fn run_reliability(curve: &[f64]) -> RunReliability {
    let d: Vec<f64> = curve.windows(2).map(|w| w[1] - w[0]).collect();
    let iqrs: Vec<f64> = d
        .chunks(WINDOW)
        .filter(|c| c.len() >= 2)
        .filter_map(iqr)
        .collect();
    let down = drawdowns(curve);
    RunReliability {
        blocks: curve.len(),
        dispersion_across_time: (!iqrs.is_empty()).then(|| mean(&iqrs)),
        short_term_risk: cvar_lower(&d),
        long_term_risk: cvar_lower(&down.iter().map(|x| -x).collect::<Vec<_>>()).map(|x| -x),
    }
}

/// The reliability statistics across the runs of one `(task, algorithm_id, notify)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupReliability {
    /// The task, algorithm, notify level and runs.
    #[serde(flatten)]
    pub group: RunGroup,
    /// Mean over block indices of the IQR across runs.
    pub dispersion_across_runs: Option<f64>,
    /// CVaR (α = 0.05) of the runs' final performance.
    pub risk_across_runs: Option<f64>,
}

/// The across-run statistics of curves that start at the same step with the same W.
///
/// # Examples
///
/// ```
/// use perennial::eval::across_runs;
///
/// let (dispersion, risk) = across_runs(&[vec![0.0, 1.0], vec![2.0, 3.0], vec![4.0, 9.0]]);
/// // IQR of (0, 2, 4) and of (1, 3, 9) is 2 and 4; final blocks 1, 3, 9, lowest 1.
/// assert_eq!(dispersion, Some(3.0));
/// assert_eq!(risk, Some(1.0));
/// ```
pub fn across_runs(curves: &[Vec<f64>]) -> (Option<f64>, Option<f64>) {
    let shortest = curves.iter().map(Vec::len).min().unwrap_or(0);
    let dispersion = (curves.len() >= 2 && shortest > 0).then(|| {
        let per_index: Vec<f64> = (0..shortest)
            .filter_map(|i| iqr(&curves.iter().map(|c| c[i]).collect::<Vec<_>>()))
            .collect();
        mean(&per_index)
    });
    let finals: Vec<f64> = curves
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| mean(&c[c.len() - c.len().div_ceil(10)..]))
        .collect();
    (dispersion, cvar_lower(&finals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_crash_is_the_short_term_risk_and_the_long_term_risk() {
        // Up by 1 for 20 blocks, one drop of 10, then flat: of 29 differences the
        // ceil(1.45) = 2 lowest are -10 and 0; of 30 drawdowns (0 until the drop, then 10)
        // the 2 highest are 10.
        let mut curve: Vec<f64> = (0..=20).map(f64::from).collect();
        curve.push(10.0);
        curve.extend([10.0; 8]);
        let r = run_reliability(&curve);
        assert_eq!(r.short_term_risk, Some(-5.0));
        assert_eq!(r.long_term_risk, Some(10.0));
        assert_eq!(r.blocks, 30);
    }

    #[test]
    fn alternating_differences_have_an_iqr_of_their_spread() {
        // Differences alternate +2, -2: within each window of 10 the IQR is 4.
        let curve: Vec<f64> = (0..21)
            .map(|i| if i % 2 == 0 { 0.0 } else { 2.0 })
            .collect();
        assert_eq!(run_reliability(&curve).dispersion_across_time, Some(4.0));
    }

    #[test]
    fn one_block_has_no_difference_and_no_drawdown() {
        let r = run_reliability(&[3.0]);
        assert_eq!(r.dispersion_across_time, None);
        assert_eq!(r.short_term_risk, None);
        assert_eq!(r.long_term_risk, Some(0.0));
    }

    #[test]
    fn one_run_has_no_dispersion_across_runs() {
        assert_eq!(across_runs(&[vec![1.0, 2.0]]), (None, Some(2.0)));
    }
}
