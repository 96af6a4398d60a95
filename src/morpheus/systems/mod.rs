//! The step pipeline: one system per stage, ordered by the [`Phase`] sets.
#![expect(
    clippy::too_many_arguments,
    reason = "a system declares every resource it touches"
)]

mod actions;
mod demand;
mod failures;
mod inbound;
mod ledger;
mod outbound;
mod signals;

use bevy_ecs::prelude::{IntoScheduleConfigs, Res, Schedule, SystemSet};
use bevy_ecs::schedule::SingleThreadedExecutor;
use bevy_ecs::system::SystemParam;

use crate::morpheus::resources::{Clock, CurrentConditions, Settings};
use crate::morpheus::{MorpheusConditions, MorpheusConfig};

pub use actions::{apply_action, begin_hour};
pub use demand::{generate_demand, poisson_quantile};
pub use failures::inject_failures;
pub use inbound::{receive_purchase_orders, unload_trailers};
pub use ledger::charge_holding;
pub use outbound::{deliver_shipments, dispatch_orders};
pub use signals::{advance_clock, record_signals, write_observation};

/// What most systems read and none of them writes: the world's settings, the conditions in
/// force and the hour being simulated.
#[derive(SystemParam)]
pub struct Hour<'w> {
    settings: Res<'w, Settings>,
    conditions: Res<'w, CurrentConditions>,
    clock: Res<'w, Clock>,
}

impl Hour<'_> {
    /// The settings, the conditions in force and the hour.
    pub fn parts(&self) -> (&MorpheusConfig, &MorpheusConditions, u64) {
        (&self.settings.0, &self.conditions.0, self.clock.hour)
    }

    /// The hour of the simulated day, 0 to 23.
    pub fn of_day(&self) -> u64 {
        self.clock.hour_of_day()
    }
}

/// The stages of one simulated hour, run in this order.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Reset the hour's counters and apply the agent's operation.
    Act,
    /// Inject failures.
    Disrupt,
    /// Turn the market's demand into customer orders.
    Demand,
    /// Receive purchase orders into the yard and unload trailers at the docks.
    Inbound,
    /// Deliver shipments, then allocate, pick and ship customer orders.
    Outbound,
    /// Book the hour's holding cost.
    Ledger,
    /// Publish signals, advance the clock, write the observation.
    Report,
}

/// The schedule of one step, on the single-threaded executor (the world is small, and one
/// thread keeps the order of every random draw fixed).
pub fn build_schedule() -> Schedule {
    let mut schedule = Schedule::default();
    schedule.set_executor(SingleThreadedExecutor::new());
    schedule.configure_sets(
        (
            Phase::Act,
            Phase::Disrupt,
            Phase::Demand,
            Phase::Inbound,
            Phase::Outbound,
            Phase::Ledger,
            Phase::Report,
        )
            .chain(),
    );
    schedule.add_systems((
        (begin_hour, apply_action).chain().in_set(Phase::Act),
        inject_failures.in_set(Phase::Disrupt),
        generate_demand.in_set(Phase::Demand),
        (receive_purchase_orders, unload_trailers)
            .chain()
            .in_set(Phase::Inbound),
        (deliver_shipments, dispatch_orders)
            .chain()
            .in_set(Phase::Outbound),
        charge_holding.in_set(Phase::Ledger),
        (record_signals, advance_clock, write_observation)
            .chain()
            .in_set(Phase::Report),
    ));
    schedule
}
