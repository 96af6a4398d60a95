//! Stage `Demand`: the market's demand per SKU becomes customer orders.

use std::f64::consts::TAU;

use bevy_ecs::prelude::{Commands, Local, Query, ResMut};
use rand::RngExt;

use super::Hour;
use crate::morpheus::components::{CustomerOrder, Sku};
use crate::morpheus::resources::{CostKind, Goodwill, Ids, Ledger, OrderBook, Stats, WorldRng};

/// The smallest `k <= cap` with `P(X <= k) > u` for `X ~ Poisson(lambda)`: one uniform
/// draw gives one truncated Poisson count, and the count never decreases as `lambda`
/// grows, so one draw serves the market's demand and the goodwill-thinned demand alike.
///
/// Inversion keeps that coupling, which a rejection sampler would break. Below
/// `lambda = 600` the CDF is summed up from `exp(-lambda)`; above, `exp(-lambda)` would
/// underflow, so the sum starts at the mode (its mass from Stirling's series) and walks
/// down or up. Mass more than 40 standard deviations from the mean is below `1e-300` and
/// is skipped, so the cost is `O(sqrt(lambda))` at most and the walk ends for every
/// `lambda` and `cap`.
pub fn poisson_quantile(u: f64, lambda: f64, cap: u64) -> u64 {
    if lambda.is_nan() || lambda <= 0.0 || cap == 0 {
        return 0;
    }
    if lambda.is_infinite() {
        return cap;
    }
    let reach = 40.0 * lambda.sqrt() + 40.0;
    if lambda < 600.0 {
        let last = (lambda + reach) as u64;
        let mut p = (-lambda).exp();
        let mut cdf = p;
        let mut k = 0;
        while u >= cdf && k < cap && k < last {
            k += 1;
            p *= lambda / k as f64;
            cdf += p;
        }
        return k;
    }
    let mode = lambda.floor();
    if (cap as f64) < mode - reach {
        return cap;
    }
    let p_mode = (mode * lambda.ln() - lambda - ln_factorial(mode)).exp();
    let negligible = p_mode * 1e-20;
    let mut below = 0.0;
    let (mut p, mut j) = (p_mode, mode);
    while j > 0.0 && p > negligible {
        p *= j / lambda;
        j -= 1.0;
        below += p;
    }
    let mut k = mode;
    let mut p = p_mode;
    let mut cdf = below + p_mode;
    if u < cdf {
        while k > 0.0 && cdf - p > u {
            cdf -= p;
            p *= k / lambda;
            k -= 1.0;
        }
    } else {
        while u >= cdf && k < cap as f64 && (k <= mode || p > negligible) {
            k += 1.0;
            p *= lambda / k;
            cdf += p;
        }
    }
    (k as u64).min(cap)
}

/// `ln(n!)` for a whole `n >= 600` by Stirling's series (error below `1e-20` there).
fn ln_factorial(n: f64) -> f64 {
    let inv = 1.0 / n;
    let inv2 = inv * inv;
    n * n.ln() - n
        + 0.5 * (std::f64::consts::TAU * n).ln()
        + inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 / 1260.0))
}

/// Per-SKU scratch space, kept between steps to avoid allocating.
#[derive(Default)]
pub struct DemandScratch {
    rate: Vec<f64>,
    open: Vec<usize>,
}

/// Draws one uniform per SKU (in SKU order, whatever the agent did) and places the
/// resulting demand as one customer order per SKU, or loses it when the SKU's open
/// orders are at their cap.
pub fn generate_demand(
    hour: Hour,
    mut goodwill: ResMut<Goodwill>,
    mut ledger: ResMut<Ledger>,
    mut rng: ResMut<WorldRng>,
    mut stats: ResMut<Stats>,
    mut ids: ResMut<Ids>,
    mut book: ResMut<OrderBook>,
    skus: Query<&Sku>,
    orders: Query<&CustomerOrder>,
    mut commands: Commands,
    mut scratch: Local<DemandScratch>,
) {
    let (cfg, k, now) = hour.parts();
    let n = cfg.skus;
    let daily = 1.0 + cfg.daily_amplitude * (TAU * (hour.of_day() as f64 - 6.0) / 24.0).sin();
    let DemandScratch { rate, open } = &mut *scratch;
    rate.clear();
    rate.resize(n, 0.0);
    open.clear();
    open.resize(n, 0);
    for s in &skus {
        if let Some(r) = rate.get_mut(s.id as usize) {
            let spike = if s.spike_until > now {
                cfg.demand_spike_factor
            } else {
                1.0
            };
            *r = s.base_demand * k.demand_rate * daily * spike;
        }
    }
    for o in &orders {
        if let Some(c) = open.get_mut(o.sku as usize) {
            *c += 1;
        }
    }
    for (id, (&lambda, &open)) in rate.iter().zip(open.iter()).enumerate() {
        let u: f64 = rng.demand.random();
        let offered = poisson_quantile(u, lambda, cfg.max_units_per_sku_hour);
        let placed = poisson_quantile(u, lambda * goodwill.0, cfg.max_units_per_sku_hour);
        stats.total.demand_offered += offered;
        stats.total.demand_realised += placed;
        if placed == 0 {
            continue;
        }
        if open >= cfg.max_open_orders_per_sku {
            stats.hour.lost_units += placed;
            stats.total.lost_units += placed;
            ledger.pay(
                CostKind::LostSales,
                placed as f64 * cfg.lost_sale_penalty * k.cost_multiplier,
            );
            goodwill.0 = (goodwill.0 - cfg.goodwill_lost_hit).max(cfg.goodwill_floor);
            continue;
        }
        let order = CustomerOrder {
            id: ids.next_order,
            sku: id as u32,
            units: placed,
            placed: now,
            due: now + (cfg.promise_hours as f64 * k.promise).round() as u64,
            allocated: false,
        };
        let entity = commands.spawn(order.clone()).id();
        book.0.push((order, entity));
        ids.next_order += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_quantile_matches_the_distribution_and_its_cap() {
        assert_eq!(poisson_quantile(0.0, 2.0, 30), 0);
        assert_eq!(poisson_quantile(0.5, 0.0, 30), 0);
        assert_eq!(poisson_quantile(0.999_999, 1e4, 30), 30);
        let n = 20_000;
        let mean: f64 = (0..n)
            .map(|i| poisson_quantile((i as f64 + 0.5) / n as f64, 3.0, 100) as f64)
            .sum::<f64>()
            / n as f64;
        assert!((mean - 3.0).abs() < 0.01, "{mean}");
    }

    #[test]
    fn a_smaller_rate_never_gives_a_larger_count() {
        for i in 0..1000 {
            let u = i as f64 / 1000.0;
            assert!(poisson_quantile(u, 1.2, 30) <= poisson_quantile(u, 2.0, 30));
        }
    }

    #[test]
    fn poisson_quantile_is_right_where_exp_of_minus_lambda_underflows() {
        let median = poisson_quantile(0.5, 1000.0, u64::MAX);
        assert!((999..=1001).contains(&median), "{median}");
        let n = 2_000;
        let mean: f64 = (0..n)
            .map(|i| poisson_quantile((i as f64 + 0.5) / n as f64, 5000.0, u64::MAX) as f64)
            .sum::<f64>()
            / n as f64;
        assert!((mean - 5000.0).abs() < 2.0, "{mean}");
        let sd = (0..n)
            .map(|i| {
                let k = poisson_quantile((i as f64 + 0.5) / n as f64, 5000.0, u64::MAX) as f64;
                (k - mean).powi(2)
            })
            .sum::<f64>()
            / n as f64;
        assert!((sd.sqrt() - 5000f64.sqrt()).abs() < 2.0, "{}", sd.sqrt());
        assert_eq!(poisson_quantile(0.01, 1e6, 30), 30);
    }

    #[test]
    fn poisson_quantile_ends_for_huge_lambda_and_cap() {
        assert_eq!(poisson_quantile(0.3, 1e300, u64::MAX), u64::MAX);
        assert_eq!(poisson_quantile(0.3, f64::INFINITY, 7), 7);
        assert!(poisson_quantile(1.0 - 1e-17, 2.0, u64::MAX) < 100);
        let q = poisson_quantile(0.5, 1e12, u64::MAX) as f64;
        assert!((q - 1e12).abs() < 1e4, "{q}");
    }
}
