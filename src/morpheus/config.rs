//! `MorpheusConfig`: the layout, capacities, prices and costs of one enterprise world.

use serde::{Deserialize, Serialize};

use crate::regime::Shown;

/// The layout and economics of a MORPHEUS world: what exists, how fast it works, what it
/// costs. Everything here is fixed for a run; what shifts between regimes lives in
/// [`MorpheusConditions`](super::MorpheusConditions).
///
/// `Default` is the `warehouse` layout: 8 SKUs, 3 suppliers, 4 dock doors, 3 carriers.
/// [`MorpheusConfig::scaled`] builds a layout `k` times larger (SKUs, suppliers, docks and
/// every throughput capacity multiplied by `k`).
///
/// Derived per-entity values (so a layout needs only these numbers):
///
/// - SKU `i` sells at `unit_price × (1 + 0.25 × (i mod 4))`, costs `unit_cost_ratio` of
///   that, sees demand `base_demand × (0.5 + 0.5 × (i mod 3))` units per hour, and is
///   bought from supplier `i mod suppliers`.
/// - Supplier `j` has lead time `lead_time_hours × (0.75 + 0.5 × j / max(suppliers − 1, 1))`.
/// - Carrier `c` (with `f = c / max(carriers − 1, 1)`, so `f` runs from 0 to 1) has transit
///   `max(1, round(carrier_transit_hours × (0.5 + f)))` hours, cost
///   `carrier_cost_per_unit × (1.5 − f)` per unit, on-time probability
///   `carrier_reliability + 0.08 × (0.5 − f)` (clamped to `[0, 1]`) and capacity
///   `carrier_capacity`: carrier 0 is fast, dear and reliable, the last slow, cheap and not.
///
/// # Examples
///
/// ```
/// use perennial::morpheus::MorpheusConfig;
///
/// let big = MorpheusConfig::default().scaled(10);
/// assert_eq!(big.skus, 80);
/// assert!(big.validate().is_ok());
/// let bad = MorpheusConfig { docks: 0, ..MorpheusConfig::default() };
/// assert!(bad.validate().unwrap_err().to_string().contains("docks"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MorpheusConfig {
    /// Task id written in the trace's `task` column (`"warehouse"`).
    pub task: String,
    /// Number of SKUs (8).
    pub skus: usize,
    /// Number of suppliers (3).
    pub suppliers: usize,
    /// Number of inbound dock doors (4).
    pub docks: usize,
    /// Number of outbound carriers (3).
    pub carriers: usize,
    /// Units of each SKU on hand at reset (60).
    pub initial_stock: u64,
    /// Units per observation unit for stock, pipeline and backlog (100.0).
    pub stock_scale: f64,
    /// Mean demand of a middle SKU, units per hour, before multipliers (1.5).
    pub base_demand: f64,
    /// Amplitude of the daily demand pattern `1 + a·sin(2π(h − 6)/24)`, in `[0, 1]` (0.5).
    pub daily_amplitude: f64,
    /// Cap on one SKU's demand in one hour, units; demand is a Poisson draw truncated
    /// here (30).
    pub max_units_per_sku_hour: u64,
    /// Demand multiplier while a demand spike is in force (3.0).
    pub demand_spike_factor: f64,
    /// Hours between an order being placed and being due (24).
    pub promise_hours: u64,
    /// Hours past due after which an unshipped order is cancelled as a lost sale (48).
    pub cancel_after_hours: u64,
    /// Open orders per SKU beyond which new demand is lost (48).
    pub max_open_orders_per_sku: usize,
    /// Reorder quantity buckets, units (`[20, 50, 100, 200]`).
    pub reorder_quantities: Vec<u64>,
    /// Selling price of SKU 0, currency per unit (10.0).
    pub unit_price: f64,
    /// Purchase cost as a fraction of the selling price (0.6).
    pub unit_cost_ratio: f64,
    /// Holding cost per unit on hand per hour, as a fraction of unit cost (0.0005).
    pub holding_rate: f64,
    /// Mean supplier lead time, hours (24.0).
    pub lead_time_hours: f64,
    /// Units one working dock door unloads per hour (10.0).
    pub dock_unload_rate: f64,
    /// Hours a trailer may wait in the yard before detention is charged (2).
    pub detention_free_hours: u64,
    /// Detention charge per waiting trailer per hour, currency (5.0).
    pub detention_rate: f64,
    /// Units the warehouse can pick and load per hour (30).
    pub pick_capacity: u64,
    /// Units one carrier collects per hourly wave (40).
    pub carrier_capacity: u64,
    /// Shipping cost of the middle carrier, currency per unit (0.5).
    pub carrier_cost_per_unit: f64,
    /// Transit time of the middle carrier, hours (8).
    pub carrier_transit_hours: u64,
    /// On-time probability of the middle carrier, in `[0, 1]` (0.9).
    pub carrier_reliability: f64,
    /// Largest extra delay of a late shipment, hours; a late shipment is delayed by 1 to
    /// this many hours (12).
    pub carrier_delay_max_hours: u64,
    /// Penalty per order delivered after its due time, currency (5.0).
    pub late_penalty: f64,
    /// Fee to expedite a purchase order (halves its remaining lead time), currency (50.0).
    pub expedite_fee: f64,
    /// Cost of repairing a broken dock door, currency (100.0).
    pub repair_cost: f64,
    /// Cash at reset, currency (10000.0).
    pub opening_cash: f64,
    /// How far cash may go below zero, currency: a reorder is refused only when it would
    /// take cash below `−credit_limit` (20000.0). Other costs are always booked.
    pub credit_limit: f64,
    /// Interest charged per hour on a negative balance, as a fraction of it, on at most
    /// `credit_limit` of it (0.00005).
    pub interest_rate: f64,
    /// Charge per unit of lost sales (an overflowed or cancelled order): the goodwill a
    /// lost sale costs, booked in the ledger so that profit counts it, currency (2.0).
    pub lost_sale_penalty: f64,
    /// Lowest goodwill; demand is multiplied by goodwill, which starts at 1 (0.3).
    pub goodwill_floor: f64,
    /// Goodwill lost per late delivery (0.005).
    pub goodwill_late_hit: f64,
    /// Goodwill lost per lost sale (an overflowed or cancelled order) (0.01).
    pub goodwill_lost_hit: f64,
    /// Goodwill regained per on-time delivery (0.001).
    pub goodwill_recovery: f64,
    /// Longest dock breakdown, hours (8).
    pub dock_breakdown_hours: u64,
    /// Longest carrier no-show, hours (6).
    pub carrier_no_show_hours: u64,
    /// Longest supplier delay, hours (48).
    pub supplier_delay_hours: u64,
    /// Longest system outage, hours (3).
    pub outage_hours: u64,
    /// Longest demand spike, hours (12).
    pub demand_spike_hours: u64,
    /// Age of a stale stock reading, hours (6).
    pub stale_hours: u64,
    /// Failure events kept in the engine's log (the counts per kind are never dropped) (256).
    pub failure_log_len: usize,
    /// Steps after which the env itself truncates the episode; `None` (the default) never.
    pub horizon: Option<u64>,
}

impl Default for MorpheusConfig {
    fn default() -> Self {
        MorpheusConfig {
            task: "warehouse".into(),
            skus: 8,
            suppliers: 3,
            docks: 4,
            carriers: 3,
            initial_stock: 60,
            stock_scale: 100.0,
            base_demand: 1.5,
            daily_amplitude: 0.5,
            max_units_per_sku_hour: 30,
            demand_spike_factor: 3.0,
            promise_hours: 24,
            cancel_after_hours: 48,
            max_open_orders_per_sku: 48,
            reorder_quantities: vec![20, 50, 100, 200],
            unit_price: 10.0,
            unit_cost_ratio: 0.6,
            holding_rate: 0.0005,
            lead_time_hours: 24.0,
            dock_unload_rate: 10.0,
            detention_free_hours: 2,
            detention_rate: 5.0,
            pick_capacity: 30,
            carrier_capacity: 40,
            carrier_cost_per_unit: 0.5,
            carrier_transit_hours: 8,
            carrier_reliability: 0.9,
            carrier_delay_max_hours: 12,
            late_penalty: 5.0,
            expedite_fee: 50.0,
            repair_cost: 100.0,
            opening_cash: 10_000.0,
            credit_limit: 20_000.0,
            interest_rate: 0.000_05,
            lost_sale_penalty: 2.0,
            goodwill_floor: 0.3,
            goodwill_late_hit: 0.005,
            goodwill_lost_hit: 0.01,
            goodwill_recovery: 0.001,
            dock_breakdown_hours: 8,
            carrier_no_show_hours: 6,
            supplier_delay_hours: 48,
            outage_hours: 3,
            demand_spike_hours: 12,
            stale_hours: 6,
            failure_log_len: 256,
            horizon: None,
        }
    }
}

/// A configuration value that cannot build a world.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// The offending field, as written in world files.
    pub field: &'static str,
    /// What is wrong and what to use instead.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "config field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn positive_count(field: &'static str, v: u64) -> Result<(), ConfigError> {
    if v == 0 {
        return Err(ConfigError {
            field,
            message: "must be at least 1".into(),
        });
    }
    Ok(())
}

fn positive(field: &'static str, v: f64) -> Result<(), ConfigError> {
    if !(v.is_finite() && v > 0.0) {
        return Err(ConfigError {
            field,
            message: format!("is {}; use a finite number greater than 0", Shown(v)),
        });
    }
    Ok(())
}

fn non_negative(field: &'static str, v: f64) -> Result<(), ConfigError> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(ConfigError {
            field,
            message: format!("is {}; use a finite number of at least 0", Shown(v)),
        });
    }
    Ok(())
}

fn unit_interval(field: &'static str, v: f64) -> Result<(), ConfigError> {
    if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
        return Err(ConfigError {
            field,
            message: format!("is {}; use a number in [0, 1]", Shown(v)),
        });
    }
    Ok(())
}

impl MorpheusConfig {
    /// This layout made `k` times larger: SKUs, suppliers, dock doors, pick and carrier
    /// capacity, opening cash and credit limit multiplied by `k` (carriers stay as they are). `k = 0` is
    /// treated as 1.
    pub fn scaled(mut self, k: usize) -> Self {
        let k = k.max(1);
        self.skus *= k;
        self.suppliers *= k;
        self.docks *= k;
        self.pick_capacity *= k as u64;
        self.carrier_capacity *= k as u64;
        self.opening_cash *= k as f64;
        self.credit_limit *= k as f64;
        self
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// The first field that is zero where a count or capacity is needed, negative, outside
    /// its documented interval, or not finite.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.task.is_empty() {
            return Err(ConfigError {
                field: "task",
                message: "is empty; name the task, e.g. \"warehouse\"".into(),
            });
        }
        if let Err(message) = crate::limits::check_id("task", &self.task) {
            return Err(ConfigError {
                field: "task",
                message,
            });
        }
        positive_count("skus", self.skus as u64)?;
        positive_count("suppliers", self.suppliers as u64)?;
        positive_count("docks", self.docks as u64)?;
        positive_count("carriers", self.carriers as u64)?;
        self.check_limits()?;
        positive("stock_scale", self.stock_scale)?;
        non_negative("base_demand", self.base_demand)?;
        unit_interval("daily_amplitude", self.daily_amplitude)?;
        positive_count("max_units_per_sku_hour", self.max_units_per_sku_hour)?;
        non_negative("demand_spike_factor", self.demand_spike_factor)?;
        positive_count(
            "max_open_orders_per_sku",
            self.max_open_orders_per_sku as u64,
        )?;
        if self.reorder_quantities.is_empty() {
            return Err(ConfigError {
                field: "reorder_quantities",
                message: "is empty; give at least one quantity, e.g. [20, 50, 100]".into(),
            });
        }
        for &q in &self.reorder_quantities {
            positive_count("reorder_quantities", q)?;
        }
        non_negative("unit_price", self.unit_price)?;
        non_negative("unit_cost_ratio", self.unit_cost_ratio)?;
        non_negative("holding_rate", self.holding_rate)?;
        non_negative("lead_time_hours", self.lead_time_hours)?;
        positive("dock_unload_rate", self.dock_unload_rate)?;
        non_negative("detention_rate", self.detention_rate)?;
        positive_count("pick_capacity", self.pick_capacity)?;
        positive_count("carrier_capacity", self.carrier_capacity)?;
        non_negative("carrier_cost_per_unit", self.carrier_cost_per_unit)?;
        positive_count("carrier_transit_hours", self.carrier_transit_hours)?;
        unit_interval("carrier_reliability", self.carrier_reliability)?;
        positive_count("carrier_delay_max_hours", self.carrier_delay_max_hours)?;
        non_negative("late_penalty", self.late_penalty)?;
        non_negative("expedite_fee", self.expedite_fee)?;
        non_negative("repair_cost", self.repair_cost)?;
        positive("opening_cash", self.opening_cash)?;
        non_negative("credit_limit", self.credit_limit)?;
        unit_interval("interest_rate", self.interest_rate)?;
        non_negative("lost_sale_penalty", self.lost_sale_penalty)?;
        if !(self.goodwill_floor.is_finite()
            && self.goodwill_floor > 0.0
            && self.goodwill_floor <= 1.0)
        {
            return Err(ConfigError {
                field: "goodwill_floor",
                message: format!("is {}; use a number in (0, 1]", Shown(self.goodwill_floor)),
            });
        }
        unit_interval("goodwill_late_hit", self.goodwill_late_hit)?;
        unit_interval("goodwill_lost_hit", self.goodwill_lost_hit)?;
        unit_interval("goodwill_recovery", self.goodwill_recovery)?;
        positive_count("dock_breakdown_hours", self.dock_breakdown_hours)?;
        positive_count("carrier_no_show_hours", self.carrier_no_show_hours)?;
        positive_count("supplier_delay_hours", self.supplier_delay_hours)?;
        positive_count("outage_hours", self.outage_hours)?;
        positive_count("demand_spike_hours", self.demand_spike_hours)?;
        positive_count("stale_hours", self.stale_hours)?;
        if self.stale_hours > 168 {
            return Err(ConfigError {
                field: "stale_hours",
                message: format!("is {}; use at most 168 (a week)", self.stale_hours),
            });
        }
        positive_count("failure_log_len", self.failure_log_len as u64)?;
        if self.horizon == Some(0) {
            return Err(ConfigError {
                field: "horizon",
                message: "is 0; use a positive number of steps, or omit it for no horizon".into(),
            });
        }
        Ok(())
    }

    /// The size limits ([`crate::limits`]) and the magnitude bounds that keep every
    /// observation, signal and reward finite: counts and capacities at most
    /// [`MAX_SITES`](crate::limits::MAX_SITES) (SKUs [`MAX_SKUS`](crate::limits::MAX_SKUS)),
    /// quantities at most [`MAX_QUANTITY`](crate::limits::MAX_QUANTITY), money and rates at
    /// most [`MAX_MAGNITUDE`](crate::limits::MAX_MAGNITUDE), and `stock_scale` at least
    /// [`MIN_STOCK_SCALE`](crate::limits::MIN_STOCK_SCALE). Within them a step's largest
    /// value stays below about 1e40, so sums over any run length stay finite.
    fn check_limits(&self) -> Result<(), ConfigError> {
        use crate::limits::{MAX_MAGNITUDE, MAX_QUANTITY, MAX_SITES, MAX_SKUS, MIN_STOCK_SCALE};
        let over = |field: &'static str, value: f64, max: f64| {
            if value > max {
                Err(ConfigError {
                    field,
                    message: format!("is {}; use at most {}", Shown(value), Shown(max)),
                })
            } else {
                Ok(())
            }
        };
        over("skus", self.skus as f64, MAX_SKUS as f64)?;
        over("suppliers", self.suppliers as f64, MAX_SITES as f64)?;
        over("docks", self.docks as f64, MAX_SITES as f64)?;
        over("carriers", self.carriers as f64, MAX_SITES as f64)?;
        over(
            "max_open_orders_per_sku",
            self.max_open_orders_per_sku as f64,
            MAX_QUANTITY,
        )?;
        over("failure_log_len", self.failure_log_len as f64, MAX_QUANTITY)?;
        let quantities = [
            ("initial_stock", self.initial_stock),
            ("max_units_per_sku_hour", self.max_units_per_sku_hour),
            ("promise_hours", self.promise_hours),
            ("cancel_after_hours", self.cancel_after_hours),
            ("detention_free_hours", self.detention_free_hours),
            ("pick_capacity", self.pick_capacity),
            ("carrier_capacity", self.carrier_capacity),
            ("carrier_transit_hours", self.carrier_transit_hours),
            ("carrier_delay_max_hours", self.carrier_delay_max_hours),
            ("dock_breakdown_hours", self.dock_breakdown_hours),
            ("carrier_no_show_hours", self.carrier_no_show_hours),
            ("supplier_delay_hours", self.supplier_delay_hours),
            ("outage_hours", self.outage_hours),
            ("demand_spike_hours", self.demand_spike_hours),
        ];
        for (field, v) in quantities {
            over(field, v as f64, MAX_QUANTITY)?;
        }
        for &q in &self.reorder_quantities {
            over("reorder_quantities", q as f64, MAX_QUANTITY)?;
        }
        let magnitudes = [
            ("stock_scale", self.stock_scale),
            ("base_demand", self.base_demand),
            ("demand_spike_factor", self.demand_spike_factor),
            ("unit_price", self.unit_price),
            ("unit_cost_ratio", self.unit_cost_ratio),
            ("holding_rate", self.holding_rate),
            ("lead_time_hours", self.lead_time_hours),
            ("dock_unload_rate", self.dock_unload_rate),
            ("detention_rate", self.detention_rate),
            ("carrier_cost_per_unit", self.carrier_cost_per_unit),
            ("late_penalty", self.late_penalty),
            ("expedite_fee", self.expedite_fee),
            ("repair_cost", self.repair_cost),
            ("opening_cash", self.opening_cash),
        ];
        for (field, v) in magnitudes {
            over(field, v, MAX_MAGNITUDE)?;
        }
        if self.stock_scale < MIN_STOCK_SCALE {
            return Err(ConfigError {
                field: "stock_scale",
                message: format!(
                    "is {:e}; use at least {MIN_STOCK_SCALE}, or observations overflow to infinity",
                    self.stock_scale
                ),
            });
        }
        Ok(())
    }

    /// Selling price of SKU `i`, currency per unit.
    pub fn sku_price(&self, i: usize) -> f64 {
        self.unit_price * (1.0 + 0.25 * (i % 4) as f64)
    }

    /// Mean demand of SKU `i` before multipliers, units per hour.
    pub fn sku_demand(&self, i: usize) -> f64 {
        self.base_demand * (0.5 + 0.5 * (i % 3) as f64)
    }

    /// Lead time of supplier `j`, hours, before the regime's multiplier.
    pub fn supplier_lead_time(&self, j: usize) -> f64 {
        let spread = j as f64 / (self.suppliers.saturating_sub(1).max(1)) as f64;
        self.lead_time_hours * (0.75 + 0.5 * spread)
    }

    fn carrier_position(&self, c: usize) -> f64 {
        c as f64 / (self.carriers.saturating_sub(1).max(1)) as f64
    }

    /// Transit time of carrier `c`, hours (at least 1).
    pub fn carrier_transit(&self, c: usize) -> u64 {
        let f = self.carrier_position(c);
        ((self.carrier_transit_hours as f64 * (0.5 + f)).round() as u64).max(1)
    }

    /// Shipping cost of carrier `c`, currency per unit.
    pub fn carrier_cost(&self, c: usize) -> f64 {
        self.carrier_cost_per_unit * (1.5 - self.carrier_position(c))
    }

    /// Base on-time probability of carrier `c`.
    pub fn carrier_on_time(&self, c: usize) -> f64 {
        (self.carrier_reliability + 0.08 * (0.5 - self.carrier_position(c))).clamp(0.0, 1.0)
    }

    /// Length of the observation vector: `4 × skus + docks + carriers + 8`.
    pub fn observation_len(&self) -> usize {
        4 * self.skus + self.docks + self.carriers + 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_layout_is_valid() {
        assert!(MorpheusConfig::default().validate().is_ok());
        assert!(MorpheusConfig::default().scaled(10).validate().is_ok());
    }

    #[test]
    fn zero_and_non_finite_values_name_their_field() {
        let cases = [
            MorpheusConfig {
                pick_capacity: 0,
                ..Default::default()
            },
            MorpheusConfig {
                unit_price: f64::NAN,
                ..Default::default()
            },
            MorpheusConfig {
                dock_unload_rate: -1.0,
                ..Default::default()
            },
        ];
        let fields = ["pick_capacity", "unit_price", "dock_unload_rate"];
        for (cfg, field) in cases.iter().zip(fields) {
            let err = cfg.validate().unwrap_err();
            assert_eq!(err.field, field);
            assert!(err.to_string().contains(field));
        }
    }

    #[test]
    fn config_rejects_unknown_fields() {
        let err = toml::from_str::<MorpheusConfig>("skuz = 3").unwrap_err();
        assert!(err.to_string().contains("skuz"), "{err}");
        let cfg: MorpheusConfig = toml::from_str("skus = 3\nhorizon = 100").unwrap();
        assert_eq!((cfg.skus, cfg.horizon, cfg.docks), (3, Some(100), 4));
    }
}
