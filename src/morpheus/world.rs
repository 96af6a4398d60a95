//! `Morpheus`: the enterprise world as an [`Env`], with its ECS world and schedule.

use std::sync::atomic::{AtomicU64, Ordering};

use bevy_ecs::prelude::{Component, Schedule, World};
use bevy_ecs::system::RunSystemOnce;
use serde::{Deserialize, Serialize};

use super::bounds::{MAX_NOTED_CALLS, Tracker, signal_bounds};
use super::components::{
    Carrier, CustomerOrder, Dock, PurchaseOrder, Shipment, Sku, Supplier, Trailer,
};
use super::conditions::{MorpheusConditions, PARAMETERS};
use super::config::MorpheusConfig;
use super::resources::{
    CallNotes, Clock, Costs, CurrentConditions, Dispatch, FailureEngine, FailureEvent,
    FreshFailures, Goodwill, Ids, InfoLayer, Ledger, ObservationBuffer, OrderBook, PendingAction,
    Settings, Signals, Stats, TotalStats, WorldRng,
};
use super::systems::{build_schedule, write_observation};
use super::{MorpheusError, Op, SIGNAL_NAMES};
use crate::env::{Env, EnvError, EnvSpec, SavedState, Space, Transition, WorldEvent, check_step};
use crate::regime::{ParamInfo, RegimeError, Shiftable};
use crate::reward::{BoundSpec, Breakdown, Ceiling, RewardSpec};

/// The persistent enterprise world. See the [module docs](super) for the dynamics, the
/// action table, the observation layout, the signals and the ceiling.
///
/// **`reset(seed)` destroys the ECS world** (every entity, resource, random stream and
/// counter) and builds a new one from `seed`; the conditions set through [`Shiftable`]
/// are kept.
///
/// # Examples
///
/// ```
/// use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
/// use perennial::prelude::*;
///
/// let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
/// let obs = env.reset(7);
/// assert_eq!(obs.len(), MorpheusConfig::default().observation_len());
/// let t = env.step(&0).unwrap();
/// assert!(!t.terminated && !t.truncated);
/// assert!(t.reward <= env.ceiling().unwrap().step);
/// env.set("demand_rate", 2.0).unwrap();
/// assert!(env.step(&1).is_ok(), "a shift ends nothing");
/// ```
pub struct Morpheus {
    config: MorpheusConfig,
    conditions: MorpheusConditions,
    reward: RewardSpec,
    bound: BoundSpec,
    /// The expected-reward bound under `conditions`, computed when first asked for after
    /// they last changed; `None` when the reward is not the default profit.
    expected: Option<std::sync::OnceLock<f64>>,
    /// Whether a wave may be held (a world with roles), which the bound must price.
    consolidating: bool,
    spec: EnvSpec,
    sim: Option<Sim>,
    breakdown: Breakdown,
    calls: NotedCalls,
}

/// Calls a desk noted for the next hour. Atomic, so a desk that reaches the world only
/// through a shared reference (a harness's `env()`, a type-erased run's `world_any`) can
/// still note them.
#[derive(Debug, Default)]
struct NotedCalls {
    invalid: AtomicU64,
    malformed: AtomicU64,
}

impl NotedCalls {
    fn add(counter: &AtomicU64, n: u64) {
        let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
            Some(c.saturating_add(n).min(MAX_NOTED_CALLS))
        });
    }

    /// The notes, leaving zeros.
    fn take(&self) -> CallNotes {
        CallNotes {
            invalid: self.invalid.swap(0, Ordering::Relaxed),
            malformed: self.malformed.swap(0, Ordering::Relaxed),
        }
    }
}

/// One world's life, from a reset to the next.
struct Sim {
    world: World,
    schedule: Schedule,
    episode_step: u64,
    ended: bool,
    tracker: Tracker,
}

/// Counters of the current world, for conservation checks and rate measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Hours simulated since reset.
    pub hour: u64,
    /// Cumulative counters (units ordered, received, shipped, demand, losses...).
    pub totals: TotalStats,
    /// Units on the shelves now (reserved included).
    pub stock_on_hand: u64,
    /// Units on hand reserved for open orders.
    pub stock_reserved: u64,
    /// Units on purchase orders in transit or in trailers in the yard.
    pub units_in_pipeline: u64,
    /// Open customer orders.
    pub open_orders: u64,
    /// Shipments on their way to customers.
    pub shipments_in_transit: u64,
    /// Failures injected since reset, per kind in `FailureKind::ALL` order.
    pub failure_counts: [u64; 5],
    /// Cash at reset.
    pub opening_cash: f64,
    /// Cash now.
    pub cash: f64,
    /// Sum of every ledger entry since reset.
    pub ledger_entries_sum: f64,
    /// Revenue booked since reset.
    pub revenue: f64,
    /// Costs booked since reset, by category.
    pub costs: Costs,
    /// Customer goodwill now.
    pub goodwill: f64,
}

/// Everything a world is, for checkpoints: restore it with [`Morpheus::restore`] and it
/// continues bit for bit. Entities are listed in storage order, which restoring keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MorpheusSnapshot {
    /// Conditions in force.
    pub conditions: MorpheusConditions,
    /// Steps taken in the episode.
    pub episode_step: u64,
    /// Whether the episode has ended.
    pub ended: bool,
    /// What the ceiling remembers about the run.
    pub tracker: Tracker,
    /// Simulated time.
    pub clock: Clock,
    /// The ledger.
    pub ledger: Ledger,
    /// The failure engine.
    pub failures: FailureEngine,
    /// The random streams.
    pub rng: WorldRng,
    /// Customer goodwill.
    pub goodwill: Goodwill,
    /// Carrier choice.
    pub dispatch: Dispatch,
    /// Id counters.
    pub ids: Ids,
    /// Counters.
    pub stats: Stats,
    /// Last step's signal values.
    pub signals: Vec<f64>,
    /// Past stock readings and today's operations.
    #[serde(default)]
    pub info: InfoLayer,
    /// SKUs.
    pub skus: Vec<Sku>,
    /// Suppliers.
    pub suppliers: Vec<Supplier>,
    /// Dock doors.
    pub docks: Vec<Dock>,
    /// Carriers.
    pub carriers: Vec<Carrier>,
    /// Purchase orders in transit.
    pub purchase_orders: Vec<PurchaseOrder>,
    /// Trailers in the yard.
    pub trailers: Vec<Trailer>,
    /// Open customer orders.
    pub orders: Vec<CustomerOrder>,
    /// Shipments in transit.
    pub shipments: Vec<Shipment>,
}

/// Non-negative counts, 0/1 flags, cash (any sign), goodwill and the clock's sin/cos.
fn observation_space(cfg: &MorpheusConfig) -> Space {
    let len = cfg.observation_len();
    let flags = 4 * cfg.skus..4 * cfg.skus + cfg.docks + cfg.carriers;
    let base = flags.end;
    let mut low = vec![0.0; len];
    let mut high = vec![f64::INFINITY; len];
    for i in flags {
        high[i] = 1.0;
    }
    low[base + 1] = f64::NEG_INFINITY;
    high[base + 2] = 1.0;
    for i in [base + 3, base + 4] {
        low[i] = -1.0;
        high[i] = 1.0;
    }
    high[base + 6] = 1.0;
    Space::Box {
        low,
        high,
        dtype: crate::env::Dtype::F32,
    }
}

fn collect<T: Component + Clone>(world: &World) -> Vec<T> {
    world
        .try_query::<&T>()
        .map(|mut q| q.iter(world).cloned().collect())
        .unwrap_or_default()
}

impl Morpheus {
    /// A world with this layout and reward specification. Call [`Env::reset`] before the
    /// first step.
    ///
    /// # Errors
    ///
    /// [`MorpheusError::Config`] naming the bad field, or [`MorpheusError::Reward`] when a
    /// term reads a signal this world does not expose.
    pub fn new(config: MorpheusConfig, reward: RewardSpec) -> Result<Self, MorpheusError> {
        config.validate().map_err(MorpheusError::Config)?;
        let bound = reward.bind(&SIGNAL_NAMES).map_err(MorpheusError::Reward)?;
        let spec = EnvSpec {
            id: config.task.clone(),
            observation_space: observation_space(&config),
            action_space: Space::Discrete {
                n: config.action_count(),
            },
            persistent: true,
            components: bound.component_names().to_vec(),
            payouts: bound.payout_names().to_vec(),
        };
        let conditions = MorpheusConditions::default();
        // Computed when first asked for (a trace row), not at every change of a condition.
        let expected = (reward == super::default_reward_spec()).then(std::sync::OnceLock::new);
        Ok(Morpheus {
            config,
            conditions,
            reward,
            bound,
            expected,
            consolidating: false,
            spec,
            sim: None,
            breakdown: Breakdown::default(),
            calls: NotedCalls::default(),
        })
    }

    /// Rebuilds a world from a snapshot taken with [`Morpheus::snapshot`] under the same
    /// layout. The restored world continues exactly as the original would.
    ///
    /// # Errors
    ///
    /// As [`Morpheus::new`], or [`MorpheusError::Snapshot`] when the snapshot does not fit
    /// the layout.
    pub fn restore(
        config: MorpheusConfig,
        reward: RewardSpec,
        mut snapshot: MorpheusSnapshot,
    ) -> Result<Self, MorpheusError> {
        let mut env = Morpheus::new(config, reward)?;
        // Snapshots taken before the call signals existed hold only the signals before
        // them; those signals were 0 then.
        if snapshot.signals.len() == SIGNAL_NAMES.len() - 2 {
            snapshot.signals.resize(SIGNAL_NAMES.len(), 0.0);
        }
        let cfg = &env.config;
        let sizes = [
            ("skus", snapshot.skus.len(), cfg.skus),
            ("suppliers", snapshot.suppliers.len(), cfg.suppliers),
            ("docks", snapshot.docks.len(), cfg.docks),
            ("carriers", snapshot.carriers.len(), cfg.carriers),
            ("signals", snapshot.signals.len(), SIGNAL_NAMES.len()),
        ];
        for (what, got, want) in sizes {
            if got != want {
                return Err(MorpheusError::Snapshot(format!(
                    "it holds {got} {what} but the layout has {want}; restore with the config the snapshot was taken under"
                )));
            }
        }
        for p in PARAMETERS {
            let v = snapshot.conditions.get(p.name).unwrap_or(f64::NAN);
            env.conditions
                .set(p.name, v)
                .map_err(|e| MorpheusError::Snapshot(e.to_string()))?;
        }
        env.conditions_changed();
        env.start(snapshot);
        Ok(env)
    }

    /// Builds the ECS world `snapshot` describes, under the conditions in force, and runs
    /// it from there: the one place that knows which resources and entities a world holds,
    /// for a reset and a restore alike.
    fn start(&mut self, snapshot: MorpheusSnapshot) {
        let mut world = World::new();
        world.insert_resource(Settings(self.config.clone()));
        world.insert_resource(CurrentConditions(self.conditions.clone()));
        world.insert_resource(snapshot.clock);
        world.insert_resource(snapshot.ledger);
        world.insert_resource(snapshot.failures);
        world.insert_resource(snapshot.rng);
        world.insert_resource(snapshot.goodwill);
        world.insert_resource(snapshot.dispatch);
        world.insert_resource(snapshot.ids);
        world.insert_resource(snapshot.stats);
        world.insert_resource(Signals(snapshot.signals));
        world.insert_resource(snapshot.info);
        world.insert_resource(ObservationBuffer::default());
        world.insert_resource(FreshFailures::default());
        world.insert_resource(PendingAction::default());
        world.insert_resource(CallNotes::default());
        world.spawn_batch(snapshot.skus);
        world.spawn_batch(snapshot.suppliers);
        world.spawn_batch(snapshot.docks);
        world.spawn_batch(snapshot.carriers);
        world.spawn_batch(snapshot.purchase_orders);
        world.spawn_batch(snapshot.trailers);
        let mut book: Vec<_> = snapshot
            .orders
            .into_iter()
            .map(|o| (o.clone(), world.spawn(o).id()))
            .collect();
        book.sort_unstable_by_key(|(o, _)| o.id);
        world.insert_resource(OrderBook(book));
        world.spawn_batch(snapshot.shipments);
        self.sim = Some(Sim::start(
            world,
            snapshot.episode_step,
            snapshot.ended,
            snapshot.tracker,
        ));
    }

    /// The whole state of the current world, or `None` before the first reset.
    pub fn snapshot(&self) -> Option<MorpheusSnapshot> {
        let sim = self.sim.as_ref()?;
        let w = &sim.world;
        Some(MorpheusSnapshot {
            conditions: self.conditions.clone(),
            episode_step: sim.episode_step,
            ended: sim.ended,
            tracker: sim.tracker,
            clock: *w.get_resource::<Clock>()?,
            ledger: w.get_resource::<Ledger>()?.clone(),
            failures: w.get_resource::<FailureEngine>()?.clone(),
            rng: w.get_resource::<WorldRng>()?.clone(),
            goodwill: *w.get_resource::<Goodwill>()?,
            dispatch: *w.get_resource::<Dispatch>()?,
            ids: *w.get_resource::<Ids>()?,
            stats: *w.get_resource::<Stats>()?,
            signals: w.get_resource::<Signals>()?.0.clone(),
            info: w.get_resource::<InfoLayer>()?.clone(),
            skus: collect(w),
            suppliers: collect(w),
            docks: collect(w),
            carriers: collect(w),
            purchase_orders: collect(w),
            trailers: collect(w),
            orders: collect(w),
            shipments: collect(w),
        })
    }

    /// Brings what follows from the conditions up to date with them.
    fn conditions_changed(&mut self) {
        if let Some(bound) = &mut self.expected {
            *bound = std::sync::OnceLock::new();
        }
    }

    /// The layout.
    pub fn config(&self) -> &MorpheusConfig {
        &self.config
    }

    /// The conditions in force.
    pub fn conditions(&self) -> &MorpheusConditions {
        &self.conditions
    }

    /// The last step's signal values, in [`signal_names`](super::signal_names) order
    /// (empty before the first reset).
    pub fn signals(&self) -> &[f64] {
        self.sim
            .as_ref()
            .and_then(|s| s.world.get_resource::<Signals>())
            .map_or(&[], |s| &s.0)
    }

    /// Notes tool calls answered with an error since the previous hour: `invalid` (404,
    /// 422) and `malformed` (400). The next step's `invalid_calls` and `malformed_calls`
    /// signals carry them (added up, at most [`MAX_NOTED_CALLS`] each), and the notes then
    /// start again from zero. The [`Desk`](super::api::Desk) calls this before it steps an
    /// hour; a numeric agent never does, so its signals are 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec, signal_names};
    /// use perennial::prelude::*;
    ///
    /// let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
    /// env.reset(1);
    /// env.note_calls(3, 1);
    /// env.step(&0).unwrap();
    /// let at = |name| signal_names().iter().position(|s| *s == name).unwrap();
    /// assert_eq!(env.signals()[at("invalid_calls")], 3.0);
    /// assert_eq!(env.signals()[at("malformed_calls")], 1.0);
    /// env.step(&0).unwrap();
    /// assert_eq!(env.signals()[at("invalid_calls")], 0.0);
    /// ```
    pub fn note_calls(&self, invalid: u64, malformed: u64) {
        NotedCalls::add(&self.calls.invalid, invalid);
        NotedCalls::add(&self.calls.malformed, malformed);
    }

    /// Counters of the current world, or `None` before the first reset.
    pub fn counters(&self) -> Option<Counters> {
        let w = &self.sim.as_ref()?.world;
        let ledger = w.get_resource::<Ledger>()?;
        let engine = w.get_resource::<FailureEngine>()?;
        let skus = collect::<Sku>(w);
        let pipeline = collect::<PurchaseOrder>(w)
            .iter()
            .map(|p| p.units)
            .sum::<u64>()
            + collect::<Trailer>(w)
                .iter()
                .map(|t| t.units_left)
                .sum::<u64>();
        Some(Counters {
            hour: w.get_resource::<Clock>()?.hour,
            totals: w.get_resource::<Stats>()?.total,
            stock_on_hand: skus.iter().map(|s| s.on_hand).sum(),
            stock_reserved: skus.iter().map(|s| s.reserved).sum(),
            units_in_pipeline: pipeline,
            open_orders: collect::<CustomerOrder>(w).len() as u64,
            shipments_in_transit: collect::<Shipment>(w).len() as u64,
            failure_counts: engine.counts,
            opening_cash: ledger.opening,
            cash: ledger.cash,
            ledger_entries_sum: ledger.entries_sum,
            revenue: ledger.revenue,
            costs: ledger.costs.clone(),
            goodwill: w.get_resource::<Goodwill>()?.0,
        })
    }

    /// The failure engine's log (most recent last), empty before the first reset.
    pub fn failure_log(&self) -> Vec<FailureEvent> {
        self.sim
            .as_ref()
            .and_then(|s| s.world.get_resource::<FailureEngine>())
            .map(|e| e.log.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The ECS world of the current reset, for the read-only views of [`super::api`].
    pub(super) fn ecs(&self) -> Option<&World> {
        self.sim.as_ref().map(|s| &s.world)
    }

    /// Rebuilds this world from `snapshot` under its layout and reward, keeping what the
    /// snapshot does not hold: whether the bound prices held waves.
    fn restore_in_place(&mut self, snapshot: MorpheusSnapshot) -> Result<(), EnvError> {
        let consolidating = self.consolidating;
        *self = Morpheus::restore(self.config.clone(), self.reward.clone(), snapshot)
            .map_err(|e| EnvError::World(e.to_string()))?;
        self.consolidating = consolidating;
        Ok(())
    }

    /// Lets the bound price held waves: a world whose logistics role may `hold_wave` ships
    /// the next wave at a discount (see
    /// [`expected_bound_consolidating`](super::expected_bound_consolidating)).
    pub(crate) fn set_consolidating(&mut self) {
        self.consolidating = true;
        self.conditions_changed();
    }

    /// Sets the rebooking fee of a change of carrier in the current world (a roles world
    /// sets it after each reset; a single-agent world has none).
    pub(crate) fn set_switch_fee(&mut self, fee: f64) {
        if let Some(mut d) = self
            .sim
            .as_mut()
            .and_then(|s| s.world.get_resource_mut::<Dispatch>())
        {
            d.switch_fee = fee;
        }
    }

    /// The operation an action index stands for under this layout.
    pub fn decode(&self, action: usize) -> Option<Op> {
        Op::decode(action, &self.config)
    }

    /// Steps one hour applying `ops` in order (a roles world's operations, one per role):
    /// each counts against the day's `op_budget` and is rejected on its own. With one
    /// operation this is [`Env::step`] on its index.
    ///
    /// # Errors
    ///
    /// As [`Env::step`]: not reset, the episode has ended, or the reward is not finite.
    pub fn step_ops(&mut self, ops: &[Op]) -> Result<Transition<Vec<f32>>, EnvError> {
        let Some(sim) = self.sim.as_mut() else {
            return Err(EnvError::NotReset);
        };
        if sim.ended {
            return Err(EnvError::EpisodeEnded);
        }
        let hour = sim.world.resource::<Clock>().hour;
        {
            let mut pending = sim.world.resource_mut::<PendingAction>();
            pending.0.clear();
            pending.0.extend_from_slice(ops);
        }
        *sim.world.resource_mut::<CallNotes>() = self.calls.take();
        sim.schedule.run(&mut sim.world);
        // bevy_ecs alone never clears the record of despawned entities' components (an
        // app would, after each update): without this a persistent world grows by every
        // order, trailer and shipment it has ever despawned. No system reads change ticks.
        sim.world.clear_trackers();
        sim.tracker.record(&self.config, &self.conditions, hour);
        sim.episode_step += 1;
        let truncated = self.config.horizon.is_some_and(|h| sim.episode_step >= h);
        sim.ended = truncated;
        let signals = &sim.world.resource::<Signals>().0;
        let reward = self.bound.evaluate(signals, truncated, &mut self.breakdown);
        if !reward.is_finite() {
            return Err(EnvError::World(format!(
                "reward {reward} at hour {hour} is not finite; check the reward weights and the config's prices"
            )));
        }
        Ok(Transition {
            observation: self.observation(),
            reward,
            terminated: false,
            truncated,
            breakdown: Some(self.breakdown.clone()),
        })
    }

    /// The world a reset with `seed` begins, as the snapshot of its hour 0.
    fn initial(&self, seed: u64) -> MorpheusSnapshot {
        let cfg = &self.config;
        let mut stats = Stats::default();
        stats.total.initial_stock = cfg.skus as u64 * cfg.initial_stock;
        let mut signals = vec![0.0; SIGNAL_NAMES.len()];
        signals[9] = cfg.opening_cash;
        let skus = (0..cfg.skus).map(|i| {
            let price = cfg.sku_price(i);
            Sku {
                id: i as u32,
                on_hand: cfg.initial_stock,
                reserved: 0,
                price,
                unit_cost: price * cfg.unit_cost_ratio,
                base_demand: cfg.sku_demand(i),
                supplier: (i % cfg.suppliers) as u32,
                spike_until: 0,
            }
        });
        let suppliers = (0..cfg.suppliers).map(|j| Supplier {
            id: j as u32,
            lead_time_hours: cfg.supplier_lead_time(j),
            delayed_until: 0,
        });
        let docks = (0..cfg.docks).map(|d| Dock {
            id: d as u32,
            down_until: 0,
        });
        let carriers = (0..cfg.carriers).map(|c| Carrier {
            id: c as u32,
            cost_per_unit: cfg.carrier_cost(c),
            on_time: cfg.carrier_on_time(c),
            transit_hours: cfg.carrier_transit(c),
            capacity: cfg.carrier_capacity,
            absent_until: 0,
        });
        MorpheusSnapshot {
            conditions: self.conditions.clone(),
            episode_step: 0,
            ended: false,
            tracker: Tracker::default(),
            clock: Clock::default(),
            ledger: Ledger::new(cfg.opening_cash),
            failures: FailureEngine::default(),
            rng: WorldRng::new(seed),
            goodwill: Goodwill(1.0),
            dispatch: Dispatch {
                carrier: (cfg.carriers.saturating_sub(1) / 2) as u32,
                ..Dispatch::default()
            },
            ids: Ids::default(),
            stats,
            signals,
            info: InfoLayer::default(),
            skus: skus.collect(),
            suppliers: suppliers.collect(),
            docks: docks.collect(),
            carriers: carriers.collect(),
            purchase_orders: Vec::new(),
            trailers: Vec::new(),
            orders: Vec::new(),
            shipments: Vec::new(),
        }
    }

    fn observation(&self) -> Vec<f32> {
        self.sim
            .as_ref()
            .and_then(|s| s.world.get_resource::<ObservationBuffer>())
            .map(|o| o.0.clone())
            .unwrap_or_default()
    }
}

impl Sim {
    fn start(mut world: World, episode_step: u64, ended: bool, tracker: Tracker) -> Self {
        // Cannot fail: the world was just built with every resource the system reads.
        let _ = world.run_system_once(write_observation);
        Sim {
            world,
            schedule: build_schedule(),
            episode_step,
            ended,
            tracker,
        }
    }
}

impl Env for Morpheus {
    type Obs = Vec<f32>;
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The failures injected during the last step (hour), oldest first.
    fn drain_events(&mut self, out: &mut Vec<WorldEvent>) {
        let Some(mut fresh) = self
            .sim
            .as_mut()
            .and_then(|s| s.world.get_resource_mut::<FreshFailures>())
        else {
            return;
        };
        if fresh.0.is_empty() {
            return;
        }
        out.extend(fresh.0.drain(..).map(|e| WorldEvent {
            kind: e.kind.as_str().to_string(),
            target: e.target.map(u64::from),
            start: e.start,
            duration: e.duration,
        }));
    }

    fn save_state(&self) -> Result<serde_json::Value, EnvError> {
        let snapshot = self.snapshot().ok_or(EnvError::NotReset)?;
        serde_json::to_value(snapshot)
            .map_err(|e| EnvError::World(format!("saving the world: {e}")))
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), EnvError> {
        let snapshot: MorpheusSnapshot = serde_json::from_value(state)
            .map_err(|e| EnvError::World(format!("not a saved enterprise world: {e}")))?;
        self.restore_in_place(snapshot)
    }

    fn save_state_typed(&self) -> Result<SavedState, EnvError> {
        Ok(SavedState::typed(
            self.snapshot().ok_or(EnvError::NotReset)?,
        ))
    }

    fn load_state_typed(&mut self, state: &SavedState) -> Result<(), EnvError> {
        let snapshot: MorpheusSnapshot = state
            .load()
            .map_err(|e| EnvError::World(format!("not a saved enterprise world: {e}")))?;
        self.restore_in_place(snapshot)
    }

    /// **Destroys the ECS world** and builds a new one from `seed`: fresh entities,
    /// resources, random streams and counters. The conditions in force are kept.
    fn reset(&mut self, seed: u64) -> Vec<f32> {
        self.sim = None;
        self.calls.take();
        let first = self.initial(seed);
        self.start(first);
        self.observation()
    }

    fn step(&mut self, action: &usize) -> Result<Transition<Vec<f32>>, EnvError> {
        let space = &self.spec.action_space;
        let Some(sim) = self.sim.as_ref() else {
            return Err(EnvError::NotReset);
        };
        check_step(true, sim.ended, action, space)?;
        let Some(op) = Op::decode(*action, &self.config) else {
            return Err(EnvError::invalid_action(action, space));
        };
        self.step_ops(&[op])
    }

    /// The ceiling under the conditions in force, valid for the step just taken and for
    /// the next one (see the module docs for the derivation).
    fn ceiling(&self) -> Option<Ceiling> {
        let (hour, tracker) = match &self.sim {
            Some(sim) => (
                sim.world.get_resource::<Clock>().map_or(0, |c| c.hour),
                sim.tracker,
            ),
            None => (0, Tracker::default()),
        };
        let bounds = signal_bounds(&self.config, &self.conditions, hour, &tracker);
        Some(self.bound.ceiling(&bounds))
    }

    /// The expected-reward bound under the conditions in force, for the default reward
    /// (see [`expected_bound`](super::expected_bound) for the derivation).
    fn expected_bound(&self) -> Option<f64> {
        let bound = self.expected.as_ref()?;
        Some(*bound.get_or_init(|| {
            super::expected_bound::expected_bound_cached(
                &self.config,
                &self.conditions,
                self.consolidating,
            )
        }))
    }
}

impl Shiftable for Morpheus {
    fn parameters(&self) -> Vec<ParamInfo> {
        PARAMETERS.to_vec()
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.conditions.get(name)
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        self.conditions.set(name, value)?;
        self.conditions_changed();
        if let Some(sim) = self.sim.as_mut() {
            sim.world
                .insert_resource(CurrentConditions(self.conditions.clone()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::morpheus::default_reward_spec;

    #[test]
    fn reset_keeps_conditions_and_drops_everything_else() {
        let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
        assert!(env.snapshot().is_none() && env.signals().is_empty());
        env.set("demand_rate", 2.5).unwrap();
        env.reset(1);
        for _ in 0..200 {
            env.step(&1).unwrap();
        }
        assert!(env.counters().unwrap().totals.units_ordered > 0);
        env.reset(1);
        let c = env.counters().unwrap();
        assert_eq!((c.hour, c.totals.units_ordered, c.cash), (0, 0, 10_000.0));
        assert_eq!(env.get("demand_rate"), Some(2.5));
    }
}
