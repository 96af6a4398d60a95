//! Stage `Demand`: the market's demand per SKU becomes customer orders.

use std::f64::consts::TAU;

use bevy_ecs::prelude::{Commands, Local, Query, Res, ResMut};
use rand::RngExt;

use crate::morpheus::components::{CustomerOrder, Sku};
use crate::morpheus::resources::{
    Clock, CostKind, CurrentConditions, Goodwill, Ids, Ledger, OrderBook, Settings, Stats, WorldRng,
};

/// The smallest `k <= cap` with `P(X <= k) > u` for `X ~ Poisson(lambda)`: one uniform
/// draw gives one truncated Poisson count, and the count never decreases as `lambda`
/// grows, so one draw serves the market's demand and the goodwill-thinned demand alike.
pub fn poisson_quantile(u: f64, lambda: f64, cap: u64) -> u64 {
    if lambda <= 0.0 {
        return 0;
    }
    let mut p = (-lambda).exp();
    let mut cdf = p;
    let mut k = 0;
    while u >= cdf && k < cap {
        k += 1;
        p *= lambda / k as f64;
        cdf += p;
    }
    k
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
#[expect(
    clippy::too_many_arguments,
    reason = "a system declares every resource it touches"
)]
pub fn generate_demand(
    settings: Res<Settings>,
    conditions: Res<CurrentConditions>,
    clock: Res<Clock>,
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
    let (cfg, k, now) = (&settings.0, &conditions.0, clock.hour);
    let n = cfg.skus;
    let daily = 1.0 + cfg.daily_amplitude * (TAU * (clock.hour_of_day() as f64 - 6.0) / 24.0).sin();
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
        let entity = commands.spawn(CustomerOrder {
            id: ids.next_order,
            sku: id as u32,
            units: placed,
            placed: now,
            due: now + (cfg.promise_hours as f64 * k.promise).round() as u64,
            allocated: false,
        });
        book.0.push((ids.next_order, entity.id()));
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
}
