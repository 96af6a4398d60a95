//! Steps 3 and 4 of the derivation: the Poisson demand, its spikes, and the capacities as a knapsack.

use super::EXACT_RATE;

/// The stationary share of hours with a spike in force, for a per-hour probability `q` and
/// durations uniform on `1..=hours`.
pub(super) fn spiked_share(q: f64, hours: u64) -> f64 {
    let h = hours as f64;
    let calm: f64 = (0..hours).map(|j| 1.0 - q * (h - j as f64) / h).product();
    (1.0 - calm).clamp(0.0, 1.0)
}

/// `(u, P(min(X, cap) = u))` for `u >= 1` and `X ~ Poisson(rate)`, leaving out mass more
/// than 40 standard deviations above the mean (below `1e-300`); nothing above
/// [`EXACT_RATE`].
pub(super) fn poisson_masses(rate: f64, cap: u64) -> Vec<(f64, f64)> {
    if rate <= 0.0 || rate > EXACT_RATE || cap == 0 {
        return Vec::new();
    }
    let last = (rate + 40.0 * rate.sqrt() + 40.0) as u64;
    let ln_rate = rate.ln();
    let (mut ln_p, mut below) = (-rate, (-rate).exp());
    let mut out = Vec::new();
    for u in 1..cap.min(last + 1) {
        ln_p += ln_rate - (u as f64).ln();
        let p = ln_p.exp();
        below += p;
        out.push((u as f64, p));
    }
    if cap <= last {
        out.push((cap as f64, (1.0 - below).max(0.0)));
    }
    out
}

/// `(E f(min(X, cap)), E[min(X, cap)·1{f > 0}])` for `X ~ Poisson(rate)` and the
/// nondecreasing order value `f`. Above [`EXACT_RATE`] both are bounded by their linear
/// upper bounds, `margin·min(rate, cap)` and `min(rate, cap)`.
pub(super) fn order_value(rate: f64, cap: u64, margin: f64, f: &impl Fn(f64) -> f64) -> (f64, f64) {
    if rate <= 0.0 {
        return (0.0, 0.0);
    }
    if rate > EXACT_RATE {
        let mean = rate.min(cap as f64);
        return (margin * mean, mean);
    }
    let last = (rate + 40.0 * rate.sqrt() + 40.0) as u64;
    let top = cap.min(last);
    let ln_rate = rate.ln();
    let (mut ln_p, mut below, mut value, mut units) = (-rate, (-rate).exp(), 0.0, 0.0);
    for u in 1..top {
        ln_p += ln_rate - (u as f64).ln();
        let p = ln_p.exp();
        below += p;
        let v = f(u as f64);
        if v > 0.0 {
            value += p * v;
            units += p * u as f64;
        }
    }
    // The rest of the mass sits at `top` or beyond, where `f` is largest at `cap`.
    let rest = (1.0 - below).max(0.0);
    let v = f(cap as f64);
    if v > 0.0 {
        value += rest * v;
        units += rest * cap as f64;
    }
    (value, units)
}

/// The most `margin × units` that `capacity` units per hour can earn, taking each SKU's
/// `(margin, units)` in the order given, decreasing margin.
pub(super) fn knapsack(skus: &[(f64, f64)], capacity: f64) -> f64 {
    let mut left = capacity;
    let mut total = 0.0;
    for &(margin, units) in skus.iter() {
        let take = units.min(left).max(0.0);
        total += margin * take;
        left -= take;
    }
    total
}

/// The fewest units, taken in decreasing order of margin, whose margins add up to
/// `target` (all of them when they fall short): where `K(S)` reaches `target`.
pub(super) fn units_to_earn(skus: &[(f64, f64)], target: f64) -> f64 {
    let (mut units, mut earned) = (0.0, 0.0);
    for &(margin, n) in skus {
        if earned + margin * n >= target && margin > 0.0 {
            return units + (target - earned).max(0.0) / margin;
        }
        units += n;
        earned += margin * n;
    }
    units
}
