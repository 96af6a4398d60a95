//! The harness: drives an agent in a world, hands it rollout windows, writes one trace row per step.
//!
//! The harness owns three clocks and keeps them apart. The **step** is the shared axis:
//! every step is one trace row. The **rollout window** (`window_steps`) is the agent's: at
//! each boundary `Agent::update` is called; a window ends nothing and is never recorded.
//! The **episode** is the environment's: only the env ends one, by returning `terminated` or
//! `truncated`. The harness never calls `reset` on its own initiative: with `auto_reset` off
//! (the default) the run stops at the first episode end; with it on, the env is reset with
//! the next episode's world seed and the run goes on. Regime shifts, decided by the
//! [`Scheduler`](crate::regime::Scheduler) before each step, end nothing either.
//!
//! Whether the agent is told about shifts is the run's
//! [`NotifyLevel`](crate::regime::NotifyLevel) ([`Harness::notify`], `none` by default).
//! At `flag`, `delta` or `label` the harness calls [`Agent::notify`] once per shift, after
//! the new regime's conditions are applied and before the agent acts on the first step
//! they are in force; the initial regime is not notified. The observation is the same at
//! every level. The level is written in the trace's identity (a `notify` column, absent
//! for `none`) and kept by checkpoints, so a resumed run notifies as the original would.
//!
//! Checkpoints ([`Checkpoint`], [`Harness::checkpoint`], [`Harness::resume`]) save
//! everything a run needs to continue, so a killed run resumes to the same trace, byte for
//! byte.
//!
//! Snapshots ([`Snapshot`], [`Harness::snapshot`], [`Harness::restore`]) save the same
//! run state without the trace, so a fresh run (a fork) continues the world from there.
//!
//! Seeds: from the run seed, the world's `reset` seed of episode `k` is
//! `seed::derive(seed, Stream::World, k)`; the scheduler and the agent get their own streams.

mod agent;
mod checkpoint;
mod config;
mod error;
mod finite;
mod run;
mod snapshot;

pub use crate::trace::RunIdentity;
pub use agent::{Agent, Window};
pub use checkpoint::{CHECKPOINT_VERSION, Checkpoint, CheckpointPlan, seal_of};
pub use config::{HarnessConfig, LabelSummary, RunSummary, StopReason};
pub use error::{CheckpointError, HarnessError};
pub use finite::to_finite_value;
pub use run::{DynHarness, Harness, StepOutcome, episode_seed};
pub use snapshot::{AgentStart, DynRestored, SNAPSHOT_VERSION, Snapshot, SnapshotError};
