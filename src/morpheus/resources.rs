//! World-wide state: clock, ledger, conditions, failure engine, random streams, counters.

use std::collections::VecDeque;

use bevy_ecs::prelude::Resource;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::conditions::MorpheusConditions;
use super::config::MorpheusConfig;
use crate::seed;

/// The layout, as a resource the systems read.
#[derive(Resource, Clone, Debug)]
pub struct Settings(pub MorpheusConfig);

/// The conditions in force, as a resource the systems read.
#[derive(Resource, Clone, Debug)]
pub struct CurrentConditions(pub MorpheusConditions);

/// Simulated time: one step is one hour.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    /// Hours since reset; the hour the next step simulates.
    pub hour: u64,
}

impl Clock {
    /// Hour of the day, `0..24`.
    pub fn hour_of_day(&self) -> u64 {
        self.hour % 24
    }
}

/// What a ledger cost entry pays for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CostKind {
    /// Purchase orders.
    Purchases,
    /// Stock on hand.
    Holding,
    /// Trailers waiting in the yard.
    Detention,
    /// Carrier charges.
    Shipping,
    /// Expedite fees.
    Expedite,
    /// Dock repairs.
    Repair,
    /// Late-delivery penalties.
    LatePenalties,
    /// Lost-sale charges (the goodwill a lost sale costs).
    LostSales,
    /// Interest on a negative balance.
    Interest,
}

/// Costs booked since reset, by category (currency, positive).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// Purchase orders.
    pub purchases: f64,
    /// Stock on hand.
    pub holding: f64,
    /// Trailers waiting in the yard.
    pub detention: f64,
    /// Carrier charges.
    pub shipping: f64,
    /// Expedite fees.
    pub expedite: f64,
    /// Dock repairs.
    pub repair: f64,
    /// Late-delivery penalties.
    pub late_penalties: f64,
    /// Lost-sale charges.
    #[serde(default)]
    pub lost_sales: f64,
    /// Interest on a negative balance.
    #[serde(default)]
    pub interest: f64,
}

impl Costs {
    /// The sum of every category.
    pub fn total(&self) -> f64 {
        self.purchases
            + self.holding
            + self.detention
            + self.shipping
            + self.expedite
            + self.repair
            + self.late_penalties
            + self.lost_sales
            + self.interest
    }

    fn slot(&mut self, kind: CostKind) -> &mut f64 {
        match kind {
            CostKind::Purchases => &mut self.purchases,
            CostKind::Holding => &mut self.holding,
            CostKind::Detention => &mut self.detention,
            CostKind::Shipping => &mut self.shipping,
            CostKind::Expedite => &mut self.expedite,
            CostKind::Repair => &mut self.repair,
            CostKind::LatePenalties => &mut self.late_penalties,
            CostKind::LostSales => &mut self.lost_sales,
            CostKind::Interest => &mut self.interest,
        }
    }
}

/// The financial ledger. `cash == opening + entries_sum` up to rounding.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// Cash at reset.
    pub opening: f64,
    /// Cash now.
    pub cash: f64,
    /// Sum of every entry (revenue positive, costs negative).
    pub entries_sum: f64,
    /// Number of entries booked.
    pub entries: u64,
    /// Revenue booked since reset.
    pub revenue: f64,
    /// Costs booked since reset, by category.
    pub costs: Costs,
    /// Cash at the start of the current step.
    pub hour_start_cash: f64,
    /// Revenue booked in the current step.
    #[serde(default)]
    pub hour_revenue: f64,
    /// Costs booked in the current step, by category: the profit decomposition.
    #[serde(default)]
    pub hour_costs: Costs,
}

impl Ledger {
    /// A ledger holding `opening` cash and no entries.
    pub fn new(opening: f64) -> Self {
        Ledger {
            opening,
            cash: opening,
            hour_start_cash: opening,
            ..Ledger::default()
        }
    }

    /// Books revenue (ignored when zero).
    pub fn earn(&mut self, amount: f64) {
        if amount != 0.0 {
            self.cash += amount;
            self.entries_sum += amount;
            self.entries += 1;
            self.revenue += amount;
            self.hour_revenue += amount;
        }
    }

    /// Starts a new step's decomposition.
    pub fn begin_hour(&mut self) {
        self.hour_start_cash = self.cash;
        self.hour_revenue = 0.0;
        self.hour_costs = Costs::default();
    }

    /// Whether paying `amount` now keeps cash within the credit line.
    pub fn can_pay(&self, amount: f64, credit_limit: f64) -> bool {
        self.cash - amount >= -credit_limit
    }

    /// Books a cost (ignored when zero).
    pub fn pay(&mut self, kind: CostKind, amount: f64) {
        if amount == 0.0 {
            return;
        }
        self.cash -= amount;
        self.entries_sum -= amount;
        self.entries += 1;
        *self.costs.slot(kind) += amount;
        *self.hour_costs.slot(kind) += amount;
    }
}

/// The kinds of failure the engine injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// A dock door stops unloading.
    DockBreakdown,
    /// A carrier does not collect its wave.
    CarrierNoShow,
    /// Nothing a supplier sends arrives.
    SupplierDelay,
    /// The warehouse system is down: every action is rejected.
    SystemOutage,
    /// One SKU's demand is multiplied.
    DemandSpike,
}

impl FailureKind {
    /// Every kind, in count order.
    pub const ALL: [FailureKind; 5] = [
        FailureKind::DockBreakdown,
        FailureKind::CarrierNoShow,
        FailureKind::SupplierDelay,
        FailureKind::SystemOutage,
        FailureKind::DemandSpike,
    ];

    /// Snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::DockBreakdown => "dock_breakdown",
            FailureKind::CarrierNoShow => "carrier_no_show",
            FailureKind::SupplierDelay => "supplier_delay",
            FailureKind::SystemOutage => "system_outage",
            FailureKind::DemandSpike => "demand_spike",
        }
    }
}

/// One injected failure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureEvent {
    /// What failed.
    pub kind: FailureKind,
    /// Id of the dock, carrier, supplier or SKU hit; `None` for a system outage.
    pub target: Option<u32>,
    /// Hour it started.
    pub start: u64,
    /// Hours it lasts.
    pub duration: u64,
}

/// The failure engine's state: the outage in force, a bounded log and counts per kind.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureEngine {
    /// Hour until which the system is down (exclusive).
    pub outage_until: u64,
    /// The most recent events, oldest first, at most `failure_log_len` of them.
    pub log: VecDeque<FailureEvent>,
    /// Events since reset, per kind in [`FailureKind::ALL`] order.
    pub counts: [u64; 5],
    /// Events with a one-day exponential decay: the observation's "recent failures".
    pub recent: f64,
}

impl FailureEngine {
    /// Records an event, dropping the oldest beyond `capacity`.
    pub fn record(&mut self, event: FailureEvent, capacity: usize) {
        if self.log.len() >= capacity {
            self.log.pop_front();
        }
        self.log.push_back(event);
        if let Some(i) = FailureKind::ALL.iter().position(|k| *k == event.kind) {
            self.counts[i] += 1;
        }
    }
}

/// The failures injected in the current hour, kept apart from the snapshot: what
/// [`Env::drain_events`](crate::env::Env::drain_events) hands out. Emptied at the start of
/// every hour, so an undrained world holds at most one hour's events.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
pub struct FreshFailures(pub Vec<FailureEvent>);

/// The world's random streams, all derived from the `reset` seed. Separate streams keep
/// exogenous events independent of what the agent does.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldRng {
    /// Demand: exactly one draw per SKU per hour.
    pub demand: ChaCha8Rng,
    /// Failures: exactly two draws per failure slot per hour.
    pub failures: ChaCha8Rng,
    /// Carrier outcomes: two draws per shipment (depends on the agent, so kept apart).
    /// Kept for snapshots taken before carrier outcomes were keyed; no longer drawn from.
    pub carriers: ChaCha8Rng,
    /// Key of the counter-based draws ([`WorldRng::keyed`]), derived from the reset seed.
    #[serde(default)]
    pub key: u64,
}

impl WorldRng {
    /// The streams of a world reset with `seed`.
    pub fn new(seed: u64) -> Self {
        let base = seed::rng(seed, seed::Stream::World);
        let stream = |n: u64| {
            let mut r = base.clone();
            r.set_stream(16 + n);
            r
        };
        WorldRng {
            demand: stream(0),
            failures: stream(1),
            carriers: stream(2),
            key: seed::nth_u64(stream(3), 0),
        }
    }

    /// A uniform draw in `[0, 1)` that depends only on the seed, the stream and the key
    /// `(a, b, c)`, never on how many draws came before: common random numbers for events
    /// that the agent decides the order of (which order ships on which carrier, when).
    pub fn keyed(&self, stream: KeyedStream, a: u64, b: u64, c: u64) -> f64 {
        let mut h = splitmix(self.key ^ (stream as u64).wrapping_mul(0xa076_1d64_78bd_642f));
        for part in [a, b, c] {
            h = splitmix(h ^ part);
        }
        (h >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The streams of [`WorldRng::keyed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyedStream {
    /// Whether a shipment is on time, keyed by (order placed hour, SKU, carrier).
    CarrierOnTime = 1,
    /// How late a late shipment is, keyed as [`KeyedStream::CarrierOnTime`].
    CarrierDelay = 2,
    /// Whether the stock readings are stale, keyed by hour.
    StaleReadings = 3,
    /// Whether the stock readings are missing, keyed by hour.
    MissingReadings = 4,
}

/// The information layer: past stock readings (for stale ones) and the operations used
/// today (for the rate limit).
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InfoLayer {
    /// The last `stale_hours + 1` true stock blocks, oldest first.
    pub readings: VecDeque<Vec<f32>>,
    /// Operations accepted or attempted since the last midnight.
    pub ops_today: u32,
    /// The hour whose reading was last recorded, so that writing the same hour's
    /// observation again (after a restore) records nothing twice.
    pub recorded: Option<u64>,
}

/// SplitMix64's finaliser: a bijective mix with full avalanche, enough to turn a key into
/// an independent-looking uniform.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Customer goodwill in `[goodwill_floor, 1]`; it multiplies demand.
#[derive(Resource, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goodwill(pub f64);

/// Operational choices that persist between steps.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dispatch {
    /// Carrier collecting the outbound waves.
    pub carrier: u32,
    /// The SKU whose orders ship first, and the hour that priority ends (roles worlds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<(u32, u64)>,
    /// This hour's wave is held (roles worlds).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold: bool,
    /// The next wave ships a held one's orders with it, at a discount (roles worlds).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub consolidated: bool,
    /// The rebooking fee of a change of carrier, booked as shipping (roles worlds; 0 in a
    /// single-agent world).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub switch_fee: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Id counters for entities created during the run.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ids {
    /// Next purchase-order id.
    pub next_po: u64,
    /// Next customer-order id.
    pub next_order: u64,
}

/// What happened during one step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HourStats {
    /// Customer orders loaded onto a carrier.
    pub orders_shipped: u64,
    /// Shipments delivered.
    pub orders_delivered: u64,
    /// Shipments delivered after their due hour.
    pub late_orders: u64,
    /// Units of demand lost (overflow or cancellation).
    pub lost_units: u64,
    /// Failures injected.
    pub failure_events: u64,
    /// Whether the action was valid but infeasible.
    pub rejected: bool,
    /// Whether it was rejected by the rate limit.
    #[serde(default)]
    pub rate_limited: bool,
    /// Revenue booked.
    pub revenue: f64,
    /// Holding cost booked.
    pub holding_cost: f64,
}

/// Counters since reset, for conservation checks and rate measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TotalStats {
    /// Units of stock at reset.
    pub initial_stock: u64,
    /// Units on purchase orders placed.
    pub units_ordered: u64,
    /// Units unloaded at the docks.
    pub units_received: u64,
    /// Units loaded onto carriers.
    pub units_shipped: u64,
    /// Units of demand the market offered (before goodwill): exogenous.
    pub demand_offered: u64,
    /// Units of demand customers placed (after goodwill).
    pub demand_realised: u64,
    /// Units of demand lost.
    pub lost_units: u64,
    /// Orders delivered.
    pub orders_delivered: u64,
    /// Orders delivered late.
    pub late_orders: u64,
    /// Actions rejected as infeasible.
    pub rejected_actions: u64,
    /// Operations rejected by the rate limit (counted in `rejected_actions` too).
    #[serde(default)]
    pub rate_limited: u64,
    /// Hours whose stock readings were stale.
    #[serde(default)]
    pub stale_readings: u64,
    /// Hours whose stock readings were missing.
    #[serde(default)]
    pub missing_readings: u64,
}

/// Per-step and cumulative counters.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The current (or last) step.
    pub hour: HourStats,
    /// Since reset.
    pub total: TotalStats,
}

/// The signal values of the last step, in [`signal_names`](super::signal_names) order.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals(pub Vec<f64>);

/// Tool calls answered with an error since the previous hour, as the desk noted them
/// before this one ([`Morpheus::note_calls`](super::Morpheus::note_calls)); always zero
/// for a numeric agent. Not world state: it lives for one hour and no snapshot keeps it.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallNotes {
    /// Calls naming no tool (404) or with invalid arguments (422).
    pub invalid: u64,
    /// Calls whose arguments are not a JSON object (400).
    pub malformed: u64,
}

/// The observation after the last step.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
pub struct ObservationBuffer(pub Vec<f32>);

/// Open customer orders by id, oldest first, so the outbound stage walks them in order
/// without sorting: each a copy of its [`CustomerOrder`](super::components::CustomerOrder)
/// beside its entity. The outbound stage reads the copies and writes a component only when
/// it allocates the order, so its hourly walk looks up no entity for the orders it leaves
/// as they are. Rebuilt from the orders themselves when a snapshot is restored.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
pub struct OrderBook(pub Vec<(super::components::CustomerOrder, bevy_ecs::entity::Entity)>);

/// The operations asked for this step, applied in order: one for a single agent, one per
/// role in a roles world.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
pub struct PendingAction(pub Vec<super::Op>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_cash_is_opening_plus_entries() {
        let mut l = Ledger::new(100.0);
        l.earn(30.0);
        l.pay(CostKind::Holding, 12.5);
        l.pay(CostKind::Shipping, 0.0);
        assert_eq!((l.cash, l.entries_sum, l.entries), (117.5, 17.5, 2));
        assert_eq!(l.costs.holding, 12.5);
    }

    #[test]
    fn failure_log_keeps_the_latest_events_and_every_count() {
        let mut engine = FailureEngine::default();
        for start in 0..10 {
            let event = FailureEvent {
                kind: FailureKind::ALL[start as usize % 5],
                target: None,
                start,
                duration: 1,
            };
            engine.record(event, 4);
        }
        assert_eq!(engine.log.len(), 4);
        assert_eq!(engine.log.front().map(|e| e.start), Some(6));
        assert_eq!(engine.counts, [2; 5]);
    }

    #[test]
    fn world_streams_differ_and_repeat() {
        use rand::Rng;
        let mut a = WorldRng::new(1);
        let mut b = WorldRng::new(1);
        assert_eq!(a.demand.next_u64(), b.demand.next_u64());
        assert_ne!(a.failures.next_u64(), a.carriers.next_u64());
    }
}
