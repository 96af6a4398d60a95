//! Forks: K rollouts of one saved world state, each with its own agent stream.
//!
//! A fork restores one [`Snapshot`] K times and runs each copy for H steps. Every rollout
//! meets the same exogenous events (demand, failures, delays, regime shifts), since those
//! come from the world's and the scheduler's streams, which the snapshot saved; only the
//! agent's choices differ. Rollout `k` builds its agent with the seed [`agent_seed`]`(S, k)`:
//! a stochastic agent's rollouts then differ and a deterministic agent's are identical.
//! With the saved agent, rollout 0 of a fork whose seed `S` is the source run's seed keeps
//! the saved random stream, so its rows are the source run's own continuation.
//!
//! Rollout `k`'s run id is [`rollout_run_id`] (`<source run id>-s<step>-r<k>`), its
//! trace `rollout-<k>.<format>` in the fork's folder (by default [`default_dir`]) with its
//! events table beside it, whose first row is a `fork` event
//! ([`crate::trace::FORK`]) naming the source run and step; `fork.json` ([`ForkRecord`])
//! describes the whole fork. See `docs/forks.md`.

mod record;
mod rollout;

pub use record::{FORK_RECORD, ForkRecord, RolloutRecord};
pub use rollout::{ForkError, ForkPlan, RolloutResult, run_rollouts};

use std::path::PathBuf;

use crate::harness::Snapshot;
use crate::seed::{self, Stream};

/// The agent seed of rollout `k` of a fork with seed `seed`: `seed` itself for rollout 0,
/// else [`seed::derive`]`(seed, Stream::Agent, k)`.
///
/// # Examples
///
/// ```
/// use perennial::fork::agent_seed;
///
/// assert_eq!(agent_seed(7, 0), 7);
/// assert_ne!(agent_seed(7, 1), agent_seed(7, 2));
/// ```
pub fn agent_seed(seed: u64, k: u64) -> u64 {
    if k == 0 {
        seed
    } else {
        seed::derive(seed, Stream::Agent, k)
    }
}

/// The run id of rollout `k` of a fork of run `source_run_id` at step `step`.
///
/// # Examples
///
/// ```
/// assert_eq!(perennial::fork::rollout_run_id("warehouse-random-seed0", 500, 3), "warehouse-random-seed0-s500-r3");
/// ```
pub fn rollout_run_id(source_run_id: &str, step: u64, k: u64) -> String {
    format!("{source_run_id}-s{step}-r{k}")
}

/// The folder a fork of `snapshot` writes to by default: `runs/forks/<run id>-s<step>/`.
pub fn default_dir(snapshot: &Snapshot) -> PathBuf {
    PathBuf::from("runs").join("forks").join(format!(
        "{}-s{}",
        snapshot.identity().run_id,
        snapshot.step()
    ))
}

/// The task id a fork's rollouts are grouped under: `<task>@s<step>`.
pub fn fork_task(task: &str, step: u64) -> String {
    format!("{task}@s{step}")
}
