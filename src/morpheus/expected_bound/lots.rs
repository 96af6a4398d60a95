//! Step 6 of the derivation: the detention that lot sizes force at slow doors, as a second bound.

use super::demand::{knapsack, units_to_earn};
use crate::morpheus::{MorpheusConditions, MorpheusConfig};

/// Step 6, a second bound: the most that selling `S` units an hour (at most `most`) can
/// earn, `min(value, K(S))`, less the detention `D(S)` their lots force. The first is
/// concave in `S` and the second convex, so the maximum is at a corner of one or the
/// other: where a SKU's units run out, where `K(S)` reaches `value`, or where the best
/// mix of lot sizes changes.
pub(super) fn lot_bound(skus: &[(f64, f64)], value: f64, most: f64, lots: &Lots) -> f64 {
    let mut corners = vec![0.0, most, units_to_earn(skus, value)];
    corners.extend(skus.iter().scan(0.0, |sum, &(_, units)| {
        *sum += units;
        Some(*sum)
    }));
    corners.extend(lots.points.iter().map(|&(q, _)| q * lots.orders));
    corners
        .into_iter()
        .filter(|&s| s <= most)
        .map(|s| value.min(knapsack(skus, s)) - lots.detention(s))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// Step 6: what the lot sizes force in detention. Every reorder is one trailer, at most
/// `orders` reorders an hour on average, and a trailer of `q` units pays detention for
/// at least `max(0, ⌈q / C⌉ − 1 − F)` hours, `C` the doors' full capacity and `F` the
/// free hours.
pub(super) struct Lots {
    /// Reorders an hour at most: `min(op_budget, 24) / 24`.
    orders: f64,
    /// `(0, 0)` and `(q, δ(q))` for each reorder size: its units and least detention.
    points: Vec<(f64, f64)>,
}

impl Lots {
    pub(super) fn new(cfg: &MorpheusConfig, k: &MorpheusConditions) -> Self {
        let full = cfg.docks as f64 * (cfg.dock_unload_rate * k.dock_capacity).floor();
        let rate = cfg.detention_rate * k.cost_multiplier;
        let free = cfg.detention_free_hours as f64;
        let mut points = vec![(0.0, 0.0)];
        for &q in &cfg.reorder_quantities {
            let hours = if full > 0.0 {
                (q as f64 / full).ceil()
            } else {
                f64::INFINITY
            };
            if hours.is_finite() {
                points.push((q as f64, rate * (hours - 1.0 - free).max(0.0)));
            }
        }
        Lots {
            orders: k.op_budget.min(24.0) / 24.0,
            points,
        }
    }

    /// `D(S)`: the least detention per hour of lots that bring `units` units an hour, at
    /// most `orders` of them: `orders × h(units / orders)`, `h` the lower convex envelope
    /// of the points (a mix of two sizes does best; fewer lots than allowed never helps,
    /// since `(0, 0)` is a point). 0 where no mix brings that many (the buying capacity
    /// of step 4 rules those out).
    fn detention(&self, units: f64) -> f64 {
        if units <= 0.0 || self.orders <= 0.0 {
            return 0.0;
        }
        let y = units / self.orders;
        let mut least = f64::INFINITY;
        for &(a, da) in &self.points {
            for &(b, db) in &self.points {
                if a <= y && y <= b {
                    let cost = if b > a {
                        da + (db - da) * (y - a) / (b - a)
                    } else {
                        da
                    };
                    least = least.min(cost);
                }
            }
        }
        if least.is_finite() {
            self.orders * least
        } else {
            0.0
        }
    }
}
