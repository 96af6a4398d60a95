//! Running a fork's rollouts, on a pool of threads.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{agent_seed, rollout_run_id};
use crate::harness::{AgentStart, DynRestored, HarnessConfig, HarnessError, RunSummary, Snapshot};
use crate::registry::{BuildError, Kind, RunRequest};
use crate::trace::{TraceError, TraceFormat};
use crate::world_file::WorldFile;

/// What a fork runs: K rollouts of H steps from one snapshot.
#[derive(Clone, Debug)]
pub struct ForkPlan<'a> {
    /// The saved state every rollout starts from.
    pub snapshot: &'a Snapshot,
    /// The world file the snapshot's run was built from.
    pub world: &'a WorldFile,
    /// The agent's registered name.
    pub agent: &'a str,
    /// Its options.
    pub agent_options: &'a toml::Table,
    /// Continue the saved agent (its learned state) instead of a freshly built one.
    pub saved_agent: bool,
    /// The fork seed S ([`agent_seed`]).
    pub seed: u64,
    /// Rollouts (K).
    pub rollouts: u64,
    /// Steps per rollout (H).
    pub steps: u64,
    /// Trace format.
    pub format: TraceFormat,
    /// Write `obs` and `action`.
    pub record_transitions: bool,
    /// The folder the traces go to.
    pub dir: &'a Path,
    /// Threads (at least 1).
    pub jobs: usize,
}

/// One finished rollout.
#[derive(Clone, Debug)]
pub struct RolloutResult {
    /// Its index.
    pub k: u64,
    /// Its run id.
    pub run_id: String,
    /// Its agent's seed.
    pub agent_seed: u64,
    /// What its run reports (`steps` counts from the source run's first step).
    pub summary: RunSummary,
}

/// A fork that could not be made or did not finish.
#[derive(Debug)]
#[non_exhaustive]
pub enum ForkError {
    /// The snapshot does not fit the world or agent, or the agent cannot be built.
    Build(BuildError),
    /// A rollout's trace could not be created.
    Trace {
        /// The rollout.
        k: u64,
        /// The cause.
        source: TraceError,
    },
    /// A rollout failed while running; its rows before the failure are in its trace.
    Run {
        /// The rollout.
        k: u64,
        /// The cause.
        source: HarnessError,
    },
}

impl fmt::Display for ForkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForkError::Build(e) => write!(f, "{e}"),
            ForkError::Trace { k, source } => write!(f, "rollout {k}: {source}"),
            ForkError::Run { k, source } => write!(f, "rollout {k}: {source}"),
        }
    }
}

impl std::error::Error for ForkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ForkError::Build(e) => Some(e),
            ForkError::Trace { source, .. } => Some(source),
            ForkError::Run { source, .. } => Some(source),
        }
    }
}

impl ForkPlan<'_> {
    /// Rollout `k`'s trace path.
    pub fn trace_path(&self, k: u64) -> PathBuf {
        self.dir
            .join(format!("rollout-{k}.{}", self.format.extension()))
    }

    /// Rollout `k`'s harness, restored and ready to run, without a trace.
    ///
    /// # Errors
    ///
    /// The snapshot does not fit, or the agent cannot be built.
    pub fn restore(&self, kind: &dyn Kind, k: u64) -> Result<Box<dyn DynRestored>, BuildError> {
        let s = self.snapshot;
        let seed = agent_seed(self.seed, k);
        let request = RunRequest {
            world: self.world,
            agent: self.agent,
            agent_options: self.agent_options,
            seed,
            config: HarnessConfig {
                steps: s.step().saturating_add(self.steps),
                record_transitions: self.record_transitions,
                ..s.config().clone()
            },
            run_id: Some(rollout_run_id(&s.identity().run_id, s.step(), k)),
            notify: s.identity().notify,
            follow_world: false,
        };
        let start = if !self.saved_agent {
            AgentStart::Fresh
        } else {
            // The saved stream was drawn from the source run's seed: keep it for that seed.
            AgentStart::Saved {
                reseed: (seed != s.identity().seed).then_some(seed),
            }
        };
        kind.restore(&request, s, start)
    }

    fn run_one(&self, kind: &dyn Kind, k: u64) -> Result<RolloutResult, ForkError> {
        let mut harness = self.restore(kind, k).map_err(ForkError::Build)?;
        let run_id = harness.identity().run_id.clone();
        harness
            .open_trace(&self.trace_path(k), self.format, None)
            .map_err(|source| ForkError::Trace { k, source })?;
        harness
            .record_fork(&self.snapshot.identity().run_id, k)
            .map_err(|source| ForkError::Run { k, source })?;
        let summary = harness
            .run_boxed()
            .map_err(|source| ForkError::Run { k, source })?;
        Ok(RolloutResult {
            k,
            run_id,
            agent_seed: agent_seed(self.seed, k),
            summary,
        })
    }
}

/// Runs every rollout of `plan` on `plan.jobs` threads and returns them in order of `k`.
/// Every rollout is run even when one fails; the error returned is the one of the lowest
/// `k`.
///
/// # Errors
///
/// The first failed rollout's error.
pub fn run_rollouts(kind: &dyn Kind, plan: &ForkPlan<'_>) -> Result<Vec<RolloutResult>, ForkError> {
    // Fresh agents read nothing of the saved agent: every rollout restores a snapshot
    // without it.
    let stripped;
    let lighter;
    let plan = if !plan.saved_agent && plan.snapshot.agent_id().is_some() {
        stripped = plan.snapshot.without_agent();
        lighter = ForkPlan {
            snapshot: &stripped,
            ..plan.clone()
        };
        &lighter
    } else {
        plan
    };
    let next = AtomicU64::new(0);
    let results: Mutex<Vec<Result<RolloutResult, ForkError>>> = Mutex::new(Vec::new());
    let jobs = plan.jobs.clamp(
        1,
        usize::try_from(plan.rollouts).unwrap_or(usize::MAX).max(1),
    );
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= plan.rollouts {
                        break;
                    }
                    let result = plan.run_one(kind, k);
                    if let Ok(mut all) = results.lock() {
                        all.push(result);
                    }
                }
            });
        }
    });
    let mut all = results.into_inner().unwrap_or_default();
    all.sort_by_key(|r| match r {
        Ok(r) => r.k,
        Err(ForkError::Trace { k, .. } | ForkError::Run { k, .. }) => *k,
        Err(ForkError::Build(_)) => 0,
    });
    all.into_iter().collect()
}
