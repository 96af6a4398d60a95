//! `MorpheusConditions`: the regime parameters of the enterprise world, with their ranges.

use serde::{Deserialize, Serialize};

use crate::regime::ParamInfo;

/// The conditions a regime can shift. `Default` is the baseline every regime is measured
/// against. Conditions are configuration: `reset` keeps them, and changing them ends nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MorpheusConditions {
    /// Multiplier on every SKU's demand rate (1.0).
    pub demand_rate: f64,
    /// Multiplier on every supplier's lead time (1.0).
    pub lead_time: f64,
    /// Multiplier on every failure kind's rate (1.0).
    pub failure_rate: f64,
    /// Probability per dock door per hour of a breakdown (0.002).
    pub dock_breakdown_rate: f64,
    /// Probability per carrier per hour of a no-show (0.004).
    pub carrier_no_show_rate: f64,
    /// Probability per supplier per hour of a delay (0.002).
    pub supplier_delay_rate: f64,
    /// Probability per hour of a system outage (0.001).
    pub outage_rate: f64,
    /// Probability per SKU per hour of a demand spike (0.002).
    pub demand_spike_rate: f64,
    /// Multiplier on every carrier's on-time probability, capped at 1 (1.0).
    pub carrier_reliability: f64,
    /// Multiplier on holding cost, on top of `cost_multiplier` (1.0).
    pub holding_cost: f64,
    /// Multiplier on every cost: purchases, holding, detention, shipping, fees, penalties (1.0).
    pub cost_multiplier: f64,
    /// Multiplier on every selling price (1.0).
    pub price: f64,
    /// Multiplier on every dock door's unloading rate (1.0).
    pub dock_capacity: f64,
    /// Multiplier on the late-delivery penalty, on top of `cost_multiplier` (1.0).
    pub late_penalty: f64,
    /// Multiplier on `promise_hours`, the time customers give an order (1.0).
    pub promise: f64,
    /// Probability per hour that the stock readings are `stale_hours` old (0.0).
    pub stale_rate: f64,
    /// Probability per hour that the stock readings are missing: zeroed, with the
    /// observation's validity flag at 0 (0.0).
    pub missing_rate: f64,
    /// Operations (anything but the no-op) the warehouse system accepts per calendar day;
    /// more are rejected as rate-limited (24: no limit, one operation an hour).
    pub op_budget: f64,
}

impl Default for MorpheusConditions {
    fn default() -> Self {
        MorpheusConditions {
            demand_rate: 1.0,
            lead_time: 1.0,
            failure_rate: 1.0,
            dock_breakdown_rate: 0.002,
            carrier_no_show_rate: 0.004,
            supplier_delay_rate: 0.002,
            outage_rate: 0.001,
            demand_spike_rate: 0.002,
            carrier_reliability: 1.0,
            holding_cost: 1.0,
            cost_multiplier: 1.0,
            price: 1.0,
            dock_capacity: 1.0,
            late_penalty: 1.0,
            promise: 1.0,
            stale_rate: 0.0,
            missing_rate: 0.0,
            op_budget: 24.0,
        }
    }
}

crate::param_table! {
    impl MorpheusConditions {
        demand_rate: f64 = [0.0, 10.0], "multiplier on every SKU's demand rate";
        lead_time: f64 = [0.1, 10.0], "multiplier on supplier lead times";
        failure_rate: f64 = [0.0, 100.0], "multiplier on every failure kind's rate";
        dock_breakdown_rate: f64 = [0.0, 1.0], "dock breakdown probability per dock per hour";
        carrier_no_show_rate: f64 = [0.0, 1.0], "carrier no-show probability per carrier per hour";
        supplier_delay_rate: f64 = [0.0, 1.0], "supplier delay probability per supplier per hour";
        outage_rate: f64 = [0.0, 1.0], "system outage probability per hour";
        demand_spike_rate: f64 = [0.0, 1.0], "demand spike probability per SKU per hour";
        carrier_reliability: f64 = [0.0, 2.0], "multiplier on carriers' on-time probability (capped at 1)";
        holding_cost: f64 = [0.0, 10.0], "multiplier on holding cost";
        cost_multiplier: f64 = [0.0, 10.0], "multiplier on every cost";
        price: f64 = [0.0, 10.0], "multiplier on selling prices";
        dock_capacity: f64 = [0.0, 10.0], "multiplier on dock unloading rates";
        late_penalty: f64 = [0.0, 100.0], "multiplier on the late-delivery penalty";
        promise: f64 = [0.1, 10.0], "multiplier on the hours customers give an order";
        stale_rate: f64 = [0.0, 1.0], "probability per hour that stock readings are stale_hours old";
        missing_rate: f64 = [0.0, 1.0], "probability per hour that stock readings are missing (validity flag 0)";
        #[integer] op_budget: f64 = [1.0, 24.0], "operations accepted per calendar day; more are rejected as rate-limited";
    }
}

/// The shiftable parameters, with inclusive ranges.
pub const PARAMETERS: &[ParamInfo] = MorpheusConditions::PARAMETERS;

impl MorpheusConditions {
    /// Probability per slot per hour of a failure of `rate`, after the global multiplier.
    pub(crate) fn probability(&self, rate: f64) -> f64 {
        (rate * self.failure_rate).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_round_trips_through_set_and_get() {
        let mut c = MorpheusConditions::default();
        for p in PARAMETERS {
            c.set(p.name, p.max).unwrap();
            assert_eq!(c.get(p.name), Some(p.max));
        }
        assert!(c.set("gravity", 1.0).is_err());
        assert!(c.set("price", -1.0).is_err());
    }
}
