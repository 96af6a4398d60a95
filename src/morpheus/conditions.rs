//! `MorpheusConditions`: the regime parameters of the enterprise world, with their ranges.

use serde::{Deserialize, Serialize};

use crate::regime::{ParamInfo, RegimeError, check_parameter};

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

/// The shiftable parameters, with inclusive ranges.
pub const PARAMETERS: [ParamInfo; 18] = [
    ParamInfo {
        name: "demand_rate",
        min: 0.0,
        max: 10.0,
        doc: "multiplier on every SKU's demand rate",
        integer: false,
    },
    ParamInfo {
        name: "lead_time",
        min: 0.1,
        max: 10.0,
        doc: "multiplier on supplier lead times",
        integer: false,
    },
    ParamInfo {
        name: "failure_rate",
        min: 0.0,
        max: 100.0,
        doc: "multiplier on every failure kind's rate",
        integer: false,
    },
    ParamInfo {
        name: "dock_breakdown_rate",
        min: 0.0,
        max: 1.0,
        doc: "dock breakdown probability per dock per hour",
        integer: false,
    },
    ParamInfo {
        name: "carrier_no_show_rate",
        min: 0.0,
        max: 1.0,
        doc: "carrier no-show probability per carrier per hour",
        integer: false,
    },
    ParamInfo {
        name: "supplier_delay_rate",
        min: 0.0,
        max: 1.0,
        doc: "supplier delay probability per supplier per hour",
        integer: false,
    },
    ParamInfo {
        name: "outage_rate",
        min: 0.0,
        max: 1.0,
        doc: "system outage probability per hour",
        integer: false,
    },
    ParamInfo {
        name: "demand_spike_rate",
        min: 0.0,
        max: 1.0,
        doc: "demand spike probability per SKU per hour",
        integer: false,
    },
    ParamInfo {
        name: "carrier_reliability",
        min: 0.0,
        max: 2.0,
        doc: "multiplier on carriers' on-time probability (capped at 1)",
        integer: false,
    },
    ParamInfo {
        name: "holding_cost",
        min: 0.0,
        max: 10.0,
        doc: "multiplier on holding cost",
        integer: false,
    },
    ParamInfo {
        name: "cost_multiplier",
        min: 0.0,
        max: 10.0,
        doc: "multiplier on every cost",
        integer: false,
    },
    ParamInfo {
        name: "price",
        min: 0.0,
        max: 10.0,
        doc: "multiplier on selling prices",
        integer: false,
    },
    ParamInfo {
        name: "dock_capacity",
        min: 0.0,
        max: 10.0,
        doc: "multiplier on dock unloading rates",
        integer: false,
    },
    ParamInfo {
        name: "late_penalty",
        min: 0.0,
        max: 100.0,
        doc: "multiplier on the late-delivery penalty",
        integer: false,
    },
    ParamInfo {
        name: "promise",
        min: 0.1,
        max: 10.0,
        doc: "multiplier on the hours customers give an order",
        integer: false,
    },
    ParamInfo {
        name: "stale_rate",
        min: 0.0,
        max: 1.0,
        doc: "probability per hour that stock readings are stale_hours old",
        integer: false,
    },
    ParamInfo {
        name: "missing_rate",
        min: 0.0,
        max: 1.0,
        doc: "probability per hour that stock readings are missing (validity flag 0)",
        integer: false,
    },
    ParamInfo {
        name: "op_budget",
        min: 1.0,
        max: 24.0,
        doc: "operations accepted per calendar day; more are rejected as rate-limited",
        integer: true,
    },
];

impl MorpheusConditions {
    /// The value of a parameter, or `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "demand_rate" => self.demand_rate,
            "lead_time" => self.lead_time,
            "failure_rate" => self.failure_rate,
            "dock_breakdown_rate" => self.dock_breakdown_rate,
            "carrier_no_show_rate" => self.carrier_no_show_rate,
            "supplier_delay_rate" => self.supplier_delay_rate,
            "outage_rate" => self.outage_rate,
            "demand_spike_rate" => self.demand_spike_rate,
            "carrier_reliability" => self.carrier_reliability,
            "holding_cost" => self.holding_cost,
            "cost_multiplier" => self.cost_multiplier,
            "price" => self.price,
            "dock_capacity" => self.dock_capacity,
            "late_penalty" => self.late_penalty,
            "promise" => self.promise,
            "stale_rate" => self.stale_rate,
            "missing_rate" => self.missing_rate,
            "op_budget" => self.op_budget,
            _ => return None,
        })
    }

    /// Sets a parameter after checking its name and range.
    ///
    /// # Errors
    ///
    /// [`RegimeError::UnknownParameter`] or [`RegimeError::OutOfRange`]; nothing changes.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        check_parameter(&PARAMETERS, name, value)?;
        let slot = match name {
            "demand_rate" => &mut self.demand_rate,
            "lead_time" => &mut self.lead_time,
            "failure_rate" => &mut self.failure_rate,
            "dock_breakdown_rate" => &mut self.dock_breakdown_rate,
            "carrier_no_show_rate" => &mut self.carrier_no_show_rate,
            "supplier_delay_rate" => &mut self.supplier_delay_rate,
            "outage_rate" => &mut self.outage_rate,
            "demand_spike_rate" => &mut self.demand_spike_rate,
            "carrier_reliability" => &mut self.carrier_reliability,
            "holding_cost" => &mut self.holding_cost,
            "cost_multiplier" => &mut self.cost_multiplier,
            "price" => &mut self.price,
            "dock_capacity" => &mut self.dock_capacity,
            "late_penalty" => &mut self.late_penalty,
            "promise" => &mut self.promise,
            "stale_rate" => &mut self.stale_rate,
            "missing_rate" => &mut self.missing_rate,
            _ => &mut self.op_budget,
        };
        *slot = value;
        Ok(())
    }

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
        for p in &PARAMETERS {
            c.set(p.name, p.max).unwrap();
            assert_eq!(c.get(p.name), Some(p.max));
        }
        assert!(c.set("gravity", 1.0).is_err());
        assert!(c.set("price", -1.0).is_err());
    }
}
