//! Order statistics: floats sorted by `total_cmp`, and numpy's linear-interpolation
//! percentile.

/// `values` in ascending order (`total_cmp`).
pub(crate) fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of `v`, the two middle values averaged for an even count; `None` when `v`
/// is empty.
pub(crate) fn median_of(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The `p`-th percentile (0..=100) of sorted `v` with linear interpolation between order
/// statistics (numpy's default). `v` must not be empty.
pub(crate) fn percentile(v: &[f64], p: f64) -> f64 {
    let pos = p / 100.0 * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (pos - lo as f64) * (v[hi] - v[lo])
}
