//! Steps 1 and 2 of the derivation: what a unit earns, and what shipping and the late risk of an order cost.

use std::f64::consts::TAU;

use crate::morpheus::{MorpheusConditions, MorpheusConfig};

/// A carrier as an order meets it: shipping cost per unit, transit hours and on-time
/// probability under the conditions in force.
pub(super) struct Carrier {
    pub(super) ship: f64,
    transit: f64,
    on_time: f64,
}

/// What the market pays and what delivering costs under one configuration: the terms of
/// steps 1 and 2 of the derivation.
pub(super) struct Market<'a> {
    pub(super) cfg: &'a MorpheusConfig,
    pub(super) k: &'a MorpheusConditions,
    pub(super) carriers: Vec<Carrier>,
    /// `s`: hours from an order's placement to its due time.
    pub(super) slack: f64,
    /// `D` (at least 1): the longest carrier delay.
    spread: f64,
    /// `L`: the penalty per late order.
    pub(super) late_fee: f64,
}

impl<'a> Market<'a> {
    /// `ship_scale` multiplies every carrier's cost per unit: 1, or the consolidation
    /// discount where a wave may be held (see [`super::expected_bound_consolidating`]).
    pub(super) fn new(cfg: &'a MorpheusConfig, k: &'a MorpheusConditions, ship_scale: f64) -> Self {
        let carriers = (0..cfg.carriers)
            .map(|c| Carrier {
                ship: cfg.carrier_cost(c) * k.cost_multiplier * ship_scale,
                transit: cfg.carrier_transit(c) as f64,
                on_time: (cfg.carrier_on_time(c) * k.carrier_reliability).min(1.0),
            })
            .collect();
        Market {
            cfg,
            k,
            carriers,
            slack: (cfg.promise_hours as f64 * k.promise).round(),
            spread: cfg.carrier_delay_max_hours.max(1) as f64,
            late_fee: cfg.late_penalty * k.late_penalty * k.cost_multiplier,
        }
    }

    /// `p_i − c_i`: what a unit of SKU `i` sells for less what it costs to buy.
    pub(super) fn unit(&self, i: usize) -> f64 {
        let list = self.cfg.sku_price(i);
        list * self.k.price - list * self.cfg.unit_cost_ratio * self.k.cost_multiplier
    }

    /// `h_i`: the holding cost of a unit of SKU `i` on hand for an hour.
    pub(super) fn holding(&self, i: usize) -> f64 {
        let k = self.k;
        self.cfg.sku_price(i)
            * self.cfg.unit_cost_ratio
            * self.cfg.holding_rate
            * k.holding_cost
            * k.cost_multiplier
    }

    /// The mean order size of SKU `i` at `hour` of the day, outside spikes, goodwill 1.
    pub(super) fn rate(&self, i: usize, hour: u64) -> f64 {
        let daily = 1.0 + self.cfg.daily_amplitude * (TAU * (hour as f64 - 6.0) / 24.0).sin();
        self.cfg.sku_demand(i) * self.k.demand_rate * daily
    }

    /// The probability that an order shipped on `c` `wait` hours after it was placed is
    /// late.
    pub(super) fn late(&self, c: &Carrier, wait: f64) -> f64 {
        let room = self.slack - wait - c.transit;
        if room < 0.0 {
            1.0
        } else {
            (1.0 - c.on_time) * (self.spread - room.min(self.spread)) / self.spread
        }
    }

    /// `v(u, w)`: the most an order of `u` units earning `unit` per unit can make when it
    /// ships `wait` hours after it was placed (0 once it would have been cancelled, or
    /// when shipping it loses money). `v(u, 0)` is step 2's `f(u)`.
    pub(super) fn order(&self, unit: f64, u: f64, wait: f64) -> f64 {
        if wait >= self.slack + self.cfg.cancel_after_hours as f64 {
            return 0.0;
        }
        self.carriers
            .iter()
            .map(|c| u * (unit - c.ship) - self.late(c, wait) * self.late_fee)
            .fold(0.0, f64::max)
    }
}
