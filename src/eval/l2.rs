//! l2metrics' performance recovery and performance maintenance, computed beside perennial's
//! own recovery and forgetting.
//!
//! l2metrics (DARPA Lifelong Learning Machines) scores a task's recurrences against the same
//! task's earlier terminal performance. Translated to configuration intervals, with j the
//! most recent earlier interval of label c_k:
//!
//! - per interval, `l2_recovery_steps` = (first t with m_k(t) ≥ P_j) − s_k + 1, null on a
//!   label's first interval and when never reached (for n_k < W: n_k when the interval's
//!   mean reaches P_j);
//! - per interval, `l2_maintenance` = (mean of x over interval k) − P_j;
//! - per label, `performance_recovery` = −(Theil–Sen slope of the label's non-null
//!   `l2_recovery_steps` against their occurrence order 0, 1, 2, …): positive when the agent
//!   recovers faster each time; null with fewer than two;
//! - per label, `performance_maintenance` = the mean of its `l2_maintenance` (negative =
//!   performance lost); null if the label never recurred.

use super::order::median_of;
use super::report::IntervalReport;
use super::sum::mean_of;

/// The Theil–Sen slope of `y` against 0, 1, 2, …: the median of (y_j − y_i) / (j − i) over
/// all i < j (the two middle values averaged for an even count), as scipy's `theilslopes`.
/// `None` with fewer than two values.
///
/// # Examples
///
/// ```
/// use perennial::eval::theil_sen_slope;
///
/// // One outlier does not move the slope of an otherwise straight line.
/// assert_eq!(theil_sen_slope(&[0.0, 2.0, 4.0, 100.0, 8.0]), Some(2.0));
/// ```
pub fn theil_sen_slope(y: &[f64]) -> Option<f64> {
    let mut slopes = Vec::with_capacity(y.len() * y.len().saturating_sub(1) / 2);
    for i in 0..y.len() {
        for j in i + 1..y.len() {
            slopes.push((y[j] - y[i]) / (j - i) as f64);
        }
    }
    median_of(slopes)
}

/// −Theil–Sen slope of the non-null `l2_recovery_steps` of `intervals` (one label's, in
/// step order).
pub(crate) fn performance_recovery<'a>(
    intervals: impl Iterator<Item = &'a IntervalReport>,
) -> Option<f64> {
    let y: Vec<f64> = intervals
        .filter_map(|i| i.l2_recovery_steps.map(|r| r as f64))
        .collect();
    theil_sen_slope(&y).map(|s| -s)
}

/// The mean `l2_maintenance` of `intervals` (one label's).
pub(crate) fn performance_maintenance<'a>(
    intervals: impl Iterator<Item = &'a IntervalReport>,
) -> Option<f64> {
    let v: Vec<f64> = intervals.filter_map(|i| i.l2_maintenance).collect();
    mean_of(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theil_sen_of_an_even_number_of_slopes_averages_the_middle_two() {
        // Four points give six pairwise slopes: 1, 0.5, 4/3, 0, 1.5, 3; sorted, the middle
        // two are 1 and 4/3.
        let y = [0.0, 1.0, 1.0, 4.0];
        assert_eq!(theil_sen_slope(&y), Some((1.0 + 4.0 / 3.0) / 2.0));
        assert_eq!(theil_sen_slope(&[5.0]), None);
    }
}
