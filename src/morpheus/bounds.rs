//! Per-signal bounds under the conditions in force, from which the reward ceiling follows.
//!
//! Every bound is a worst case over all action sequences, derived from capacities and
//! prices (the derivation is in the module docs of `morpheus`). Two bounds grow with the
//! clock, because stock and cash can: `holding_cost` (stock on hand can be at most the
//! opening stock plus one largest reorder per step so far) and `ledger_balance`.

use serde::{Deserialize, Serialize};

use super::SIGNAL_NAMES;
use super::conditions::MorpheusConditions;
use super::config::MorpheusConfig;

/// The most tool calls of either kind one hour's signals count; more are counted as this
/// many, so the signals keep a finite bound.
pub const MAX_NOTED_CALLS: u64 = u32::MAX as u64;

/// What the ceiling must remember about the run so far: the highest price multiplier in
/// force at any step (revenue already earned was earned at most at that price) and the
/// sum of the per-step cost bounds (cash lost so far is at most that).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tracker {
    /// Highest `price` multiplier in force at any step since reset.
    pub peak_price: f64,
    /// Sum over the steps since reset of each step's cost bound.
    pub cost_bound_sum: f64,
}

impl Tracker {
    /// Notes a step taken at `hour` under `k`.
    pub fn record(&mut self, cfg: &MorpheusConfig, k: &MorpheusConditions, hour: u64) {
        self.peak_price = self.peak_price.max(k.price);
        self.cost_bound_sum += Envelope::new(cfg, k, hour, self.cost_bound_sum).cost;
    }
}

/// Worst cases of one step at clock `hour` (at most `hour + 1` steps taken by its end).
struct Envelope {
    ship_cap: f64,
    deliveries: f64,
    p_max: f64,
    revenue: f64,
    holding: f64,
    purchase: f64,
    shipping: f64,
    late: f64,
    lost: f64,
    lost_units: f64,
    detention: f64,
    interest: f64,
    cost: f64,
}

impl Envelope {
    /// `prior_costs` bounds what the steps before this one cost in all (the tracker's
    /// sum), which bounds how far below zero cash can be when interest is charged.
    fn new(cfg: &MorpheusConfig, k: &MorpheusConditions, hour: u64, prior_costs: f64) -> Self {
        let steps = hour as f64 + 1.0;
        let cm = k.cost_multiplier;
        let ship_cap = cfg.pick_capacity.min(cfg.carrier_capacity) as f64;
        let transits = (0..cfg.carriers).map(|c| cfg.carrier_transit(c));
        let t_min = transits.clone().min().unwrap_or(1);
        let t_max = transits.max().unwrap_or(1) + cfg.carrier_delay_max_hours;
        let deliveries = ship_cap * (t_max - t_min + 1) as f64;
        let p_max = (0..cfg.skus.min(4))
            .map(|i| cfg.sku_price(i))
            .fold(0.0, f64::max);
        let c_max = p_max * cfg.unit_cost_ratio;
        let ship_cost = (0..cfg.carriers)
            .map(|c| cfg.carrier_cost(c))
            .fold(0.0, f64::max);
        let q_max = cfg.reorder_quantities.iter().copied().max().unwrap_or(0) as f64;
        let stock = cfg.skus as f64 * cfg.initial_stock as f64 + q_max * steps;
        let holding = stock * c_max * cfg.holding_rate * k.holding_cost * cm;
        let detention = steps * cfg.detention_rate * cm;
        let shipping = ship_cap * ship_cost * cm;
        let purchase = q_max * c_max * cm;
        let action = (q_max * c_max).max(cfg.expedite_fee).max(cfg.repair_cost) * cm;
        let late = deliveries * cfg.late_penalty * k.late_penalty * cm;
        let lost_units = 2.0 * cfg.skus as f64 * cfg.max_units_per_sku_hour as f64;
        let lost = lost_units * cfg.lost_sale_penalty * cm;
        let before_interest = holding + detention + shipping + action + late + lost;
        let debt = (prior_costs + before_interest - cfg.opening_cash).max(0.0);
        let interest = debt.min(cfg.credit_limit) * cfg.interest_rate;
        Envelope {
            ship_cap,
            deliveries,
            p_max,
            revenue: deliveries * p_max * k.price,
            holding,
            purchase,
            shipping,
            late,
            lost,
            lost_units,
            detention,
            interest,
            cost: before_interest + interest,
        }
    }
}

/// `(low, high)` for every signal, in [`SIGNAL_NAMES`] order, valid both for the step
/// that ended at clock `hour` and for the next one, under conditions `k`.
pub fn signal_bounds(
    cfg: &MorpheusConfig,
    k: &MorpheusConditions,
    hour: u64,
    tracker: &Tracker,
) -> [(f64, f64); SIGNAL_NAMES.len()] {
    let e = Envelope::new(cfg, k, hour, tracker.cost_bound_sum);
    let steps = hour as f64 + 1.0;
    let s = cfg.skus as f64;
    let slots = (cfg.docks + cfg.carriers + cfg.suppliers + 1 + cfg.skus) as f64;
    let peak = tracker.peak_price.max(k.price);
    let cash_high = cfg.opening_cash + e.ship_cap * steps * e.p_max * peak;
    let cash_low = cfg.opening_cash - tracker.cost_bound_sum - e.cost;
    [
        (0.0, e.ship_cap),
        (0.0, e.deliveries),
        (0.0, e.deliveries),
        (0.0, e.lost_units),
        (0.0, slots),
        (0.0, 1.0),
        (0.0, e.revenue),
        (0.0, e.holding),
        (-e.cost, e.revenue),
        (cash_low, cash_high),
        (0.0, s * cfg.max_open_orders_per_sku as f64),
        (-e.cost, e.revenue),
        (0.0, e.purchase),
        (0.0, e.shipping),
        (0.0, e.late),
        (0.0, e.lost),
        (0.0, cfg.repair_cost * k.cost_multiplier),
        (0.0, cfg.expedite_fee * k.cost_multiplier),
        (0.0, e.detention),
        (0.0, e.interest),
        (0.0, MAX_NOTED_CALLS as f64),
        (0.0, MAX_NOTED_CALLS as f64),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cash_bounds_widen_with_the_clock_and_the_price_peak() {
        let (cfg, k) = (MorpheusConfig::default(), MorpheusConditions::default());
        let mut tracker = Tracker::default();
        let early = signal_bounds(&cfg, &k, 0, &tracker)[9];
        for hour in 0..100 {
            tracker.record(&cfg, &k, hour);
        }
        let late = signal_bounds(&cfg, &k, 100, &tracker)[9];
        assert!(late.0 < early.0 && late.1 > early.1);
        let mut dear = k.clone();
        dear.price = 3.0;
        tracker.record(&cfg, &dear, 100);
        let after = signal_bounds(&cfg, &k, 101, &tracker)[9];
        assert!(
            after.1 > 2.0 * late.1,
            "revenue earned at the peak price still counts"
        );
    }

    #[test]
    fn every_bound_is_finite_and_ordered() {
        let cfg = MorpheusConfig::default().scaled(10);
        let bounds = signal_bounds(
            &cfg,
            &MorpheusConditions::default(),
            1_000_000,
            &Tracker::default(),
        );
        assert!(
            bounds
                .iter()
                .all(|(lo, hi)| lo.is_finite() && hi.is_finite() && lo <= hi)
        );
    }
}
