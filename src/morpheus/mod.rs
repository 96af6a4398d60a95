//! MORPHEUS: a persistent enterprise world (inbound warehouse, outbound logistics) that never resets itself.
//!
//! A warehouse buys SKUs from suppliers, receives them as trailers through dock doors,
//! and ships customer orders through carriers, while a failure engine breaks docks,
//! delays suppliers, keeps carriers away, takes the system down and spikes demand. The
//! world is a `bevy_ecs` [`World`](bevy_ecs::world::World) stepped by a single-threaded
//! `Schedule` whose stages are fixed by the [`Phase`] sets. **One step is one simulated
//! hour.** There is no terminal state: consequences compound (backlog carries over, late
//! and lost orders erode goodwill and with it future demand, debt costs interest), and only
//! an optional `horizon` makes the env truncate.
//!
//! # Money
//!
//! The default reward ([`default_reward_spec`]) is the hour's **profit**, one component per
//! ledger category: revenue, purchases, holding, shipping, late penalties, lost-sale
//! charges (`lost_sale_penalty` per unit lost: the goodwill a lost sale costs), repairs,
//! expedite fees, detention and interest. The sum of a run's rewards is the ledger's
//! change. Cash may go negative down to `−credit_limit` (a **credit line**): a reorder is
//! refused only when it would take cash below it, a negative balance pays `interest_rate`
//! per hour, and a firm in debt climbs out as soon as it sells at a margin again. Costs
//! other than purchases are always booked, so a policy that keeps losing money can pass
//! the limit; it then buys nothing until sales bring cash back within it.
//!
//! # `reset(seed)` DESTROYS THE WORLD
//!
//! **`reset(seed)` drops the ECS world and its schedule and builds new ones from `seed`.**
//! Stock, orders, trailers, shipments, cash, goodwill, the failure log, every counter and
//! every random stream start over; nothing survives. It is never a rewind. Conditions set
//! through [`Shiftable`](crate::regime::Shiftable) are configuration and are kept. To
//! save and resume a world, use [`Morpheus::snapshot`] and [`Morpheus::restore`].
//!
//! # One hour, in order ([`Phase`])
//!
//! 1. **Act**: the agent's operation is applied, or rejected when infeasible or beyond the
//!    day's `op_budget` (rate-limited; the budget resets at midnight).
//! 2. **Disrupt**: every failure slot is drawn: each dock (breakdown), carrier (no-show),
//!    supplier (delay), the system (outage) and each SKU (demand spike), with per-hour
//!    probability `rate × failure_rate` and a duration of 1 to the kind's `*_hours`.
//!    Each injection is a [`FailureEvent`] `{ kind, target, start, duration }` in the
//!    engine's bounded log, with counts per kind. The agent sees failures only through
//!    their effects.
//! 3. **Demand**: per SKU, a Poisson count (truncated at `max_units_per_sku_hour`) with
//!    mean `base × demand_rate × (1 + a·sin(2π(h − 6)/24)) × spike × goodwill` becomes
//!    one customer order due `promise_hours × promise` later, or is lost (and charged)
//!    when the SKU already has `max_open_orders_per_sku` open orders.
//! 4. **Inbound**: purchase orders whose lead time (`× lead_time`) has elapsed, unless
//!    their supplier is delayed, become trailers in the yard; working dock doors unload
//!    `dock_unload_rate × dock_capacity` units each, first come first served; trailers
//!    waiting past `detention_free_hours` pay detention.
//! 5. **Outbound**: shipments due are delivered (revenue at today's price; late ones pay
//!    `late_penalty` and cost goodwill, on-time ones restore a little); then open
//!    orders, oldest first, are cancelled when `cancel_after_hours` past due (lost sales),
//!    reserve stock, and ship on the chosen carrier within pick and carrier capacity,
//!    on time with the carrier's probability `× carrier_reliability`, else 1 to
//!    `carrier_delay_max_hours` late. A carrier that does not show up ships nothing.
//! 6. **Ledger**: holding cost on stock on hand, then interest on a negative balance.
//! 7. **Report**: signals, clock, observation (through the information layer).
//!
//! **Common random numbers.** Exogenous randomness does not depend on the agent: demand
//! draws exactly one uniform per SKU per hour and failures two per slot per hour, each
//! from its own ChaCha8 stream derived from the reset seed. Draws whose order the agent
//! decides are counter-based, keyed by what they are about ([`resources::WorldRng::keyed`]):
//! a shipment's punctuality and delay by (order placement hour, SKU, carrier), so a
//! carrier's delay for an order is the same whatever shipped before it; stale and missing
//! readings by the hour. Two agents on one seed meet the same demand, the same failures,
//! the same information-layer failures and the same delay for the same order and carrier.
//!
//! # Information-layer failures
//!
//! Beside the physical failures, the regime sets failures of what the agent sees and can
//! do: `stale_rate` (per hour, the stock block of the observation is `stale_hours` old),
//! `missing_rate` (per hour, the stock block is zeros and the validity flag is 0) and
//! `op_budget` (operations per calendar day; more are rejected as rate-limited and counted
//! in `rejected_actions` and the `rate_limited` total). The observation's length never
//! changes.
//!
//! # Actions: `Discrete(1 + S·B + C + S + D)`
//!
//! With `S` SKUs, `B` reorder buckets, `C` carriers, `D` docks (default 48 actions):
//!
//! | index | operation | infeasible (rejected) when |
//! |---|---|---|
//! | `0` | no-op | never |
//! | `1 + s·B + b` | reorder `reorder_quantities[b]` units of SKU `s`, paid now | it would take cash below `−credit_limit` |
//! | `1 + S·B + c` | use carrier `c` for the outbound waves | never |
//! | `1 + S·B + C + s` | expedite SKU `s`'s oldest purchase order (halve its remaining lead time, `expedite_fee`) | none in transit |
//! | `1 + S·B + C + S + d` | repair dock `d` (`repair_cost`) | the dock works |
//!
//! During a system outage, or beyond the day's `op_budget`, every operation but the no-op
//! is rejected. A rejected
//! operation changes nothing and counts in `rejected_actions`. An index outside the
//! space is [`EnvError::InvalidAction`](crate::env::EnvError) and leaves the world
//! unchanged. [`Op::decode`] gives the typed operation.
//!
//! # Observation: `Vec<f32>` of length `4S + D + C + 8`
//!
//! | range | content |
//! |---|---|
//! | `[0, S)` | units on hand per SKU / `stock_scale` |
//! | `[S, 2S)` | units reserved per SKU / `stock_scale` |
//! | `[2S, 3S)` | pipeline per SKU (purchase orders in transit + trailers in the yard) / `stock_scale` |
//! | `[3S, 4S)` | backlog per SKU (units on open orders) / `stock_scale` |
//! | `[4S, 4S+D)` | dock door works (1) or is broken (0) |
//! | `[4S+D, 4S+D+C)` | carrier is available (1) or absent (0) |
//! | `4S+D+C` | trailers in the yard / `D` |
//! | `+1` | cash / opening cash |
//! | `+2` | goodwill |
//! | `+3`, `+4` | sin and cos of 2π·hour-of-day/24 |
//! | `+5` | recent failures (event count with a one-day exponential decay) |
//! | `+6` | 1 if the last action was rejected |
//! | `+7` | 1 if the stock readings `[0, 4S)` are valid, 0 if they are missing (zeros) |
//!
//! The stock block `[0, 4S)` may be stale (see the information layer); nothing says so.
//! The regime label is not in it. Only the `oracle` reference agent
//! ([`crate::agents::Oracle`]) learns the regime in force, through a
//! [`RegimeProbe`](crate::regime::RegimeProbe) beside the observation.
//!
//! # Signals ([`signal_names`])
//!
//! Per step: `orders_shipped` (orders loaded on a carrier), `orders_delivered`,
//! `late_orders` (delivered after due), `lost_sales` (units lost to overflow or
//! cancellation), `failure_events`, `rejected_actions` (0 or 1), `revenue`,
//! `holding_cost`, `ledger_delta` (cash change), `ledger_balance` (cash), `backlog`
//! (open orders), `profit` (revenue minus every cost of the hour, equal to `ledger_delta`
//! up to rounding), and the hour's costs by category: `purchase_cost`, `shipping_cost`,
//! `late_penalty_cost`, `lost_sale_cost`, `repair_cost`, `expedite_cost`,
//! `detention_cost`, `interest_cost` (`holding_cost` and `revenue` above); then
//! `invalid_calls` and `malformed_calls`: the tool calls answered 404/422 and 400 since the
//! previous hour, as the [`api::Desk`] notes them before it steps the hour
//! ([`Morpheus::note_calls`]), always 0 for a numeric agent. A reward specification may
//! charge them (`{ signal = "invalid_calls", weight = -1.0 }`).
//! [`default_reward_spec`] pays `revenue` and charges every cost, every step, and leaves
//! the call signals alone.
//!
//! # Ceiling
//!
//! [`Env::ceiling`](crate::env::Env::ceiling) bounds each signal over *every* action
//! sequence under the conditions in force, then lets the reward specification pick each
//! term's best end ([`BoundSpec::ceiling`](crate::reward::BoundSpec::ceiling)). With
//! `ship = min(pick_capacity, carrier_capacity)`, transit window
//! `W = max transit + carrier_delay_max_hours − min transit + 1`, highest price `p`,
//! highest unit cost `c`, largest reorder `q`, and `n = hour + 1` steps:
//!
//! - `orders_shipped ≤ ship` (an order is at least one unit);
//! - `orders_delivered, late_orders ≤ ship·W` (a delivery hour collects shipments from
//!   at most `W` shipping hours);
//! - `revenue ≤ ship·W·p·price`; `lost_sales ≤ 2·S·max_units_per_sku_hour` (one new
//!   order and one cancellation per SKU per hour); `failure_events ≤ D + C + P + 1 + S`;
//!   `backlog ≤ S·max_open_orders_per_sku`; `invalid_calls, malformed_calls ≤`
//!   [`MAX_NOTED_CALLS`];
//! - `holding_cost ≤ (S·initial_stock + q·n)·c·holding_rate·holding_cost·cost_multiplier`
//!   (one reorder per step at most);
//! - one step's costs are at most the sum of holding, detention (`n` trailers at most),
//!   shipping, the dearest single operation, late penalties, lost-sale charges and
//!   interest (on at most the debt the earlier steps' cost bounds allow), which bounds
//!   `ledger_delta` and `profit` below; each cost signal is bounded by its own term;
//! - `ledger_balance ≤ opening_cash + ship·n·p·peak_price`, where `peak_price` is the
//!   highest price multiplier in force at any step since reset, and `≥ opening_cash −`
//!   the sum of every past step's cost bound.
//!
//! The bounds use `hour + 1`, so one ceiling holds for the step just taken and for the
//! next; it grows with the clock only through holding cost and the cash bounds.
//!
//! # Expected bound
//!
//! The ceiling bounds one hour over every action sequence, far above what a policy earns on
//! average. [`Env::expected_bound`](crate::env::Env::expected_bound) is the tighter number
//! the gap metric uses: [`expected_bound`], an upper bound on the long-run average profit
//! per hour of *any* policy under the conditions in force (a fluid relaxation: the margin
//! on the expected demand, less the shipping and late risk every order meets, within the
//! capacities; its module docs hold the derivation). It exists for the default reward
//! only; with another reward specification the world declares none.

pub mod api;

mod action;
mod bounds;
mod conditions;
mod config;
mod expected_bound;
mod world;

pub mod components;
pub mod resources;
pub mod roles;
pub mod systems;

use std::fmt;

pub use action::{ActionLayout, Op};
pub use bounds::{MAX_NOTED_CALLS, Tracker};
pub use conditions::{MorpheusConditions, PARAMETERS};
pub use config::{ConfigError, MorpheusConfig};
pub use expected_bound::{expected_bound, expected_bound_consolidating};
pub use resources::{FailureEvent, FailureKind};
pub use systems::Phase;
pub use world::{Counters, Morpheus, MorpheusSnapshot};

use crate::reward::{RewardError, RewardSpec, Term, When};

/// The signal names, in the order of [`Morpheus::signals`].
pub const SIGNAL_NAMES: [&str; 22] = [
    "orders_shipped",
    "orders_delivered",
    "late_orders",
    "lost_sales",
    "failure_events",
    "rejected_actions",
    "revenue",
    "holding_cost",
    "ledger_delta",
    "ledger_balance",
    "backlog",
    "profit",
    "purchase_cost",
    "shipping_cost",
    "late_penalty_cost",
    "lost_sale_cost",
    "repair_cost",
    "expedite_cost",
    "detention_cost",
    "interest_cost",
    "invalid_calls",
    "malformed_calls",
];

/// The signals a reward specification can read, in [`Morpheus::signals`] order.
pub fn signal_names() -> &'static [&'static str] {
    &SIGNAL_NAMES
}

/// The default reward: the hour's profit, decomposed into its components: `+revenue`,
/// and `−1 ×` each cost (purchases, holding, shipping, late penalties, lost-sale charges,
/// repairs, expedite fees, detention, interest). Every term is paid every step, so the sum
/// of a run's rewards is the ledger's change over the run.
///
/// # Examples
///
/// ```
/// use perennial::morpheus::{default_reward_spec, signal_names};
///
/// let spec = default_reward_spec();
/// assert!(spec.bind(signal_names()).is_ok());
/// assert_eq!(spec.terms[0].signal, "revenue");
/// ```
pub fn default_reward_spec() -> RewardSpec {
    let term = |name: &str, signal: &str, weight: f64| Term {
        name: name.into(),
        signal: signal.into(),
        weight,
        when: When::Step,
    };
    RewardSpec {
        terms: vec![
            term("revenue", "revenue", 1.0),
            term("purchases", "purchase_cost", -1.0),
            term("holding", "holding_cost", -1.0),
            term("shipping", "shipping_cost", -1.0),
            term("late", "late_penalty_cost", -1.0),
            term("lost", "lost_sale_cost", -1.0),
            term("repair", "repair_cost", -1.0),
            term("expedite", "expedite_cost", -1.0),
            term("detention", "detention_cost", -1.0),
            term("interest", "interest_cost", -1.0),
        ],
    }
}

/// Why a MORPHEUS world could not be built.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum MorpheusError {
    /// A configuration field is invalid.
    Config(ConfigError),
    /// The reward specification does not fit the world's signals.
    Reward(RewardError),
    /// A snapshot does not fit the layout it is restored under.
    Snapshot(String),
}

impl fmt::Display for MorpheusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MorpheusError::Config(e) => write!(f, "invalid morpheus config: {e}"),
            MorpheusError::Reward(e) => write!(f, "invalid morpheus reward: {e}"),
            MorpheusError::Snapshot(msg) => write!(f, "snapshot cannot be restored: {msg}"),
        }
    }
}

impl std::error::Error for MorpheusError {}
