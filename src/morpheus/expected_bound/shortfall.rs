//! Step 7 of the derivation: an hour's stock is set before the hour's order is drawn.

use super::demand::poisson_masses;
use super::market::Market;

/// Step 7: the least expected cost per hour that SKU `i`'s stock forces on any policy, in
/// holding and in the orders it cannot serve the hour they are placed (a newsvendor over
/// each hour of the day and each spike state; see the module docs). `spiked` is the share
/// of spiked hours. At least 0.
pub(super) fn stock_shortfall(market: &Market<'_>, i: usize, spiked: f64) -> f64 {
    let cfg = market.cfg;
    let hold = market.holding(i);
    let unit = market.unit(i);
    let cap = cfg.max_units_per_sku_hour;
    // missed[u - 1] = ĝ(u) = min(g(u, 1), f(u) − f(u − 1) + h): what an order of u units
    // loses by waiting an hour, no more than keeps the relaxed value nondecreasing in u.
    let mut missed: Vec<f64> = Vec::new();
    let mut total = 0.0;
    for hour in 0..24 {
        let rate = market.rate(i, hour);
        for (share, factor) in [(1.0 - spiked, 1.0), (spiked, cfg.demand_spike_factor)] {
            let masses = poisson_masses(rate * factor, cap);
            let Some(&(top, _)) = masses.last() else {
                continue;
            };
            if share <= 0.0 {
                continue;
            }
            while missed.len() < top as usize {
                let u = (missed.len() + 1) as f64;
                let f = market.order(unit, u, 0.0);
                let below = market.order(unit, u - 1.0, 0.0);
                let waited = (f - market.order(unit, u, 1.0)).max(0.0);
                missed.push(waited.min(f - below + hold));
            }
            total += share * least_cost(&masses, &missed, hold) / 24.0;
        }
    }
    total.max(0.0)
}

/// `min_A N(A)` over the whole units `A` on hand after the hour's receipts, with `N(A) =
/// h·(A − E U) + Σ_{u > A} P(u)·ĝ(u)`: `A` held the hour, less the units of the
/// orders not served (held an hour less when they ship later), plus what those orders
/// lose. `masses` are `(u, P(U = u))` for `u >= 1`, increasing.
fn least_cost(masses: &[(f64, f64)], missed: &[f64], hold: f64) -> f64 {
    let rate: f64 = masses.iter().map(|&(u, p)| u * p).sum();
    let mut tail: f64 = masses
        .iter()
        .map(|&(u, p)| p * missed[u as usize - 1])
        .sum();
    let mut best = tail - hold * rate;
    for &(u, p) in masses {
        // A = u: the orders of u units are served too.
        tail -= p * missed[u as usize - 1];
        best = best.min(hold * (u - rate) + tail);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::morpheus::{MorpheusConditions, MorpheusConfig};

    /// `N(A)` straight from its definition: `A` held less the order if served, or `A` held,
    /// the order's wait and its units held an hour less later if not.
    fn cost(masses: &[(f64, f64)], missed: &[f64], hold: f64, a: f64) -> f64 {
        let none = 1.0 - masses.iter().map(|&(_, p)| p).sum::<f64>();
        let served = |u: f64| u <= a;
        none * hold * a
            + masses
                .iter()
                .map(|&(u, p)| {
                    p * if served(u) {
                        hold * (a - u)
                    } else {
                        hold * a + missed[u as usize - 1] - hold * u
                    }
                })
                .sum::<f64>()
    }

    #[test]
    fn the_least_cost_is_the_newsvendor_minimum_over_whole_units() {
        let masses = poisson_masses(2.5, 30);
        let missed: Vec<f64> = (1..=30).map(|u| 0.4 + 0.01 * u as f64).collect();
        for hold in [0.0, 0.02, 0.3, 5.0] {
            let brute = (0..=30)
                .map(|a| cost(&masses, &missed, hold, a as f64))
                .fold(f64::INFINITY, f64::min);
            let got = least_cost(&masses, &missed, hold);
            assert!((got - brute).abs() < 1e-12, "{hold}: {got} vs {brute}");
        }
    }

    #[test]
    fn free_holding_or_free_waiting_costs_nothing_and_a_dearer_wait_costs_more() {
        let cfg = MorpheusConfig::default();
        let k = MorpheusConditions {
            promise: 0.5,
            late_penalty: 6.0,
            ..MorpheusConditions::default()
        };
        let of = |k: &MorpheusConditions| stock_shortfall(&Market::new(&cfg, k, 1.0), 1, 0.02);
        let free = MorpheusConditions {
            holding_cost: 0.0,
            ..k.clone()
        };
        assert_eq!(of(&free), 0.0);
        let lax = MorpheusConditions {
            promise: 4.0,
            ..k.clone()
        };
        let dear = MorpheusConditions {
            late_penalty: 12.0,
            ..k.clone()
        };
        let (base, lax, dear) = (of(&k), of(&lax), of(&dear));
        assert!(
            base > 0.0 && lax < base && dear > base,
            "{lax} {base} {dear}"
        );
    }
}
