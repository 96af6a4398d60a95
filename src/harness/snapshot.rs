//! Snapshots: everything a run needs to continue except its trace, as plain data.
//!
//! A [`Snapshot`] holds the world's saved state ([`Env::save_state`]: the world and its
//! random streams), the scheduler (its plan position and random stream), the world's
//! baseline conditions, the run's identity (its notify level included) and config, the
//! counters (step, episode, step within the episode), the observation the agent acts on
//! next and, when the agent can be saved, the agent's state and its rollout window. It is
//! taken from a running harness ([`Harness::snapshot`]) or from a checkpoint
//! ([`Snapshot::from_checkpoint`]), and [`Harness::restore`] continues it in a fresh run
//! exactly where the saved one would have gone on: the same rows after the saved step,
//! given the same actions.
//!
//! A snapshot is versioned ([`SNAPSHOT_VERSION`]) and carries a content hash over its own
//! canonical JSON, so an edited or truncated snapshot is refused by [`Snapshot::check`]
//! before anything is restored; restoring then runs the checks a checkpoint gets on resume
//! ([`Checkpoint::validate`], the world's and the agent's own `load_state`, the baseline
//! and every regime against the world's parameter table).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::agent::{Agent, Window};
use super::checkpoint::{CHECKPOINT_VERSION, Checkpoint};
use super::run::{Harness, HarnessConfig, HarnessError, LabelSummary, RunSummary, StopReason};
use crate::env::Env;
use crate::regime::{Conditions, Scheduler, Shiftable};
use crate::trace::{EventRow, RunIdentity};

/// The version written in every snapshot; a snapshot of another version is refused.
pub const SNAPSHOT_VERSION: u32 = 1;

/// A running world, saved: see the [module docs](self).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// The identity of the run it was taken from.
    pub identity: RunIdentity,
    /// That run's harness config.
    pub config: HarnessConfig,
    /// Steps done: the restored run's first row has this step index.
    pub step: u64,
    /// Episode index.
    pub episode: u64,
    /// Step within the episode.
    pub episode_step: u64,
    /// The observation the agent acts on next.
    pub obs: serde_json::Value,
    /// The world's baseline conditions, which every regime is applied over.
    pub baseline: Conditions,
    /// The scheduler, with its plan position and random stream.
    pub scheduler: Scheduler,
    /// The world's saved state ([`Env::save_state`]).
    pub env: serde_json::Value,
    /// The agent's state and window, when the agent supports checkpoints.
    pub agent: Option<SavedAgent>,
    /// [`crate::output::content_hash`] of the snapshot's JSON with this field empty.
    pub hash: String,
}

/// The agent's part of a [`Snapshot`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedAgent {
    /// The agent's id (its trace `algorithm_id`).
    pub algorithm_id: String,
    /// [`Agent::save_state`].
    pub state: serde_json::Value,
    /// The rollout window since its last update.
    pub window: serde_json::Value,
}

/// Which agent a restored run continues with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentStart {
    /// The agent as given, with an empty window: a different or untrained agent.
    Fresh,
    /// The saved agent: its state and window are loaded into the given agent (built the
    /// same way as the saved one). With `reseed`, its random stream is then replaced by the
    /// one of that seed ([`Agent::reseed`]); without, it draws on from the saved stream, so
    /// the restored run repeats the saved run's continuation.
    Saved {
        /// The agent seed to draw actions from instead of the saved stream.
        reseed: Option<u64>,
    },
}

/// A snapshot that cannot be read, taken or restored.
#[derive(Debug)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file cannot be read or written.
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The text is not a snapshot of this version.
    Format(String),
    /// The content hash does not match: the snapshot was edited or damaged.
    Tampered {
        /// The hash recorded in the snapshot.
        recorded: String,
        /// The hash of its content.
        actual: String,
    },
    /// The run cannot be saved or restored (the world or agent has no checkpoints, the run
    /// stopped, a part does not fit).
    Harness(HarnessError),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            SnapshotError::Format(m) => write!(f, "not a perennial snapshot: {m}"),
            SnapshotError::Tampered { recorded, actual } => write!(
                f,
                "the snapshot's content hash is {actual} but it records {recorded}: it was edited or damaged, and is refused (take a new snapshot)"
            ),
            SnapshotError::Harness(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SnapshotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SnapshotError::Io { source, .. } => Some(source),
            SnapshotError::Harness(e) => Some(e),
            SnapshotError::Format(_) | SnapshotError::Tampered { .. } => None,
        }
    }
}

impl From<HarnessError> for SnapshotError {
    fn from(e: HarnessError) -> Self {
        SnapshotError::Harness(e)
    }
}

impl Snapshot {
    /// The snapshot of the run saved in `checkpoint`, with its agent.
    ///
    /// # Errors
    ///
    /// The checkpoint fails [`Checkpoint::validate`], or its run had stopped.
    pub fn from_checkpoint(checkpoint: &Checkpoint) -> Result<Self, SnapshotError> {
        Self::check_source(checkpoint)?;
        let agent = SavedAgent {
            algorithm_id: checkpoint.identity.algorithm_id.clone(),
            state: checkpoint.agent.clone(),
            window: checkpoint.window.clone(),
        };
        Self::seal(Snapshot {
            version: SNAPSHOT_VERSION,
            identity: checkpoint.identity.clone(),
            config: checkpoint.config.clone(),
            step: checkpoint.step,
            episode: checkpoint.episode,
            episode_step: checkpoint.episode_step,
            obs: checkpoint.obs.clone(),
            baseline: checkpoint.baseline.clone(),
            scheduler: checkpoint.scheduler.clone(),
            env: checkpoint.env.clone(),
            agent: Some(agent),
            hash: String::new(),
        })
    }

    /// The checks a checkpoint passes before a snapshot is made of it.
    fn check_source(checkpoint: &Checkpoint) -> Result<(), SnapshotError> {
        checkpoint
            .validate()
            .map_err(|e| SnapshotError::Harness(HarnessError::Checkpoint(e)))?;
        if checkpoint.stopped {
            return Err(SnapshotError::Harness(HarnessError::Stopped {
                step: checkpoint.step,
            }));
        }
        Ok(())
    }

    /// The snapshot of the run saved in `checkpoint`, which it takes apart (no saved part
    /// is copied), with `agent` as its agent part.
    fn of(checkpoint: Checkpoint, agent: Option<SavedAgent>) -> Result<Self, SnapshotError> {
        Self::check_source(&checkpoint)?;
        Self::seal(Snapshot {
            version: SNAPSHOT_VERSION,
            identity: checkpoint.identity,
            config: checkpoint.config,
            step: checkpoint.step,
            episode: checkpoint.episode,
            episode_step: checkpoint.episode_step,
            obs: checkpoint.obs,
            baseline: checkpoint.baseline,
            scheduler: checkpoint.scheduler,
            env: checkpoint.env,
            agent,
            hash: String::new(),
        })
    }

    /// `snapshot` with its content hash written in.
    fn seal(mut snapshot: Snapshot) -> Result<Self, SnapshotError> {
        snapshot.hash = snapshot.content_hash()?;
        Ok(snapshot)
    }

    /// The hash of the snapshot's JSON with `hash` empty. The JSON is canonical: fields in
    /// declaration order, the maps of the saved parts with sorted keys, floats written so
    /// they read back to the same bits.
    fn content_hash(&self) -> Result<String, SnapshotError> {
        // The snapshot's own fields, borrowed, in its order and with its names: the same
        // JSON as the snapshot's with `hash` empty, without copying the saved parts.
        #[derive(Serialize)]
        struct Unhashed<'a> {
            version: u32,
            identity: &'a RunIdentity,
            config: &'a HarnessConfig,
            step: u64,
            episode: u64,
            episode_step: u64,
            obs: &'a serde_json::Value,
            baseline: &'a Conditions,
            scheduler: &'a Scheduler,
            env: &'a serde_json::Value,
            agent: &'a Option<SavedAgent>,
            hash: &'a str,
        }
        let unhashed = Unhashed {
            version: self.version,
            identity: &self.identity,
            config: &self.config,
            step: self.step,
            episode: self.episode,
            episode_step: self.episode_step,
            obs: &self.obs,
            baseline: &self.baseline,
            scheduler: &self.scheduler,
            env: &self.env,
            agent: &self.agent,
            hash: "",
        };
        // Streamed into the hash as it is written: the same hash as of the whole text,
        // without holding the text.
        let mut hasher = crate::output::ContentHasher::default();
        serde_json::to_writer(&mut hasher, &unhashed)
            .map_err(|e| SnapshotError::Format(e.to_string()))?;
        Ok(hasher.finish())
    }

    /// This snapshot without its agent part, sealed anew: what a restore with
    /// [`AgentStart::Fresh`] reads, and cheaper to check, since the agent's rollout window
    /// is most of a snapshot's size. The snapshot is checked first.
    ///
    /// # Errors
    ///
    /// As [`Snapshot::check`].
    pub fn without_agent(&self) -> Result<Snapshot, SnapshotError> {
        self.check()?;
        // Field by field, so the agent's window is never copied.
        Self::seal(Snapshot {
            version: self.version,
            identity: self.identity.clone(),
            config: self.config.clone(),
            step: self.step,
            episode: self.episode,
            episode_step: self.episode_step,
            obs: self.obs.clone(),
            baseline: self.baseline.clone(),
            scheduler: self.scheduler.clone(),
            env: self.env.clone(),
            agent: None,
            hash: String::new(),
        })
    }

    /// Checks the version and the content hash.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Format`] for another version, [`SnapshotError::Tampered`] when the
    /// content does not match the hash.
    pub fn check(&self) -> Result<(), SnapshotError> {
        if self.version != SNAPSHOT_VERSION {
            return Err(SnapshotError::Format(format!(
                "version {} cannot be restored by this perennial (version {SNAPSHOT_VERSION})",
                self.version
            )));
        }
        let actual = self.content_hash()?;
        if actual != self.hash {
            return Err(SnapshotError::Tampered {
                recorded: self.hash.clone(),
                actual,
            });
        }
        Ok(())
    }

    /// The snapshot as JSON.
    ///
    /// # Errors
    ///
    /// A saved part cannot be written as JSON.
    pub fn to_json(&self) -> Result<String, SnapshotError> {
        serde_json::to_string(self).map_err(|e| SnapshotError::Format(e.to_string()))
    }

    /// Reads a snapshot from JSON and [checks](Snapshot::check) it.
    ///
    /// # Errors
    ///
    /// The text is not a snapshot, is of another version, or was edited.
    pub fn from_json(text: &str) -> Result<Self, SnapshotError> {
        let snapshot: Snapshot =
            serde_json::from_str(text).map_err(|e| SnapshotError::Format(e.to_string()))?;
        snapshot.check()?;
        Ok(snapshot)
    }

    /// Writes the snapshot atomically ([`crate::output::write_atomic`]).
    ///
    /// # Errors
    ///
    /// An I/O error, with the path.
    pub fn write(&self, path: &Path) -> Result<(), SnapshotError> {
        crate::output::write_atomic(path, self.to_json()?.as_bytes()).map_err(|e| {
            SnapshotError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other(e.to_string()),
            }
        })
    }

    /// Reads and checks a snapshot file.
    ///
    /// # Errors
    ///
    /// The file cannot be read, is not a snapshot, or was edited.
    pub fn read(path: &Path) -> Result<Self, SnapshotError> {
        let text = std::fs::read_to_string(path).map_err(|source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// The checkpoint [`Harness::resume`] would continue from this snapshot, with
    /// `agent` and `window` as the agent's parts; the run summary starts at the saved step
    /// with nothing earned yet.
    fn to_checkpoint(&self, agent: serde_json::Value, window: serde_json::Value) -> Checkpoint {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            meta: serde_json::Value::Null,
            identity: self.identity.clone(),
            config: self.config.clone(),
            step: self.step,
            episode: self.episode,
            episode_step: self.episode_step,
            obs: self.obs.clone(),
            window,
            baseline: self.baseline.clone(),
            summary: RunSummary {
                steps: self.step,
                episodes_ended: 0,
                total_reward: 0.0,
                labels: BTreeMap::new(),
                shifts: 0,
                stop: StopReason::Budget,
            },
            label_totals: LabelSummary::default(),
            stopped: false,
            scheduler: self.scheduler.clone(),
            env: self.env.clone(),
            agent,
            trace_bytes: None,
            trace_tail: None,
            events_at: None,
            trace_digest: None,
            events_digest: None,
            seal: None,
        }
    }
}

impl<E: Env + Shiftable, A: Agent<E>> Harness<E, A> {
    /// Saves the run as it stands, except its trace (see [`Snapshot`]). The agent's part
    /// is left out when the agent does not support checkpoints.
    ///
    /// # Errors
    ///
    /// The world does not support checkpoints ([`Env::save_state`]), or the run stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::agents::RandomAgent;
    /// use perennial::harness::{AgentStart, Harness, HarnessConfig};
    /// use perennial::prelude::*;
    ///
    /// let env = || CartPole::new(CartPoleParams::default());
    /// let agent = |seed| RandomAgent::new(env().spec().action_space.clone(), seed);
    /// let config = HarnessConfig { steps: 20, auto_reset: true, ..HarnessConfig::default() };
    /// let mut run = Harness::new(env(), agent(7), 7).config(config.clone());
    /// run.advance(10)?;
    /// let snapshot = run.snapshot()?;
    /// run.advance(10)?;
    /// let mut restored = Harness::restore(env(), agent(0), &snapshot, AgentStart::Saved { reseed: None })?
    ///     .config(config);
    /// restored.advance(10)?;
    /// assert_eq!(restored.observation(), run.observation());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Result<Snapshot, SnapshotError> {
        if self.observation().is_none() {
            return Err(SnapshotError::Format(
                "the run has not started: take a snapshot after its first step (or restore one)"
                    .into(),
            ));
        }
        let state = self.agent().save_state().ok();
        // The window is written only when the agent's part keeps it, and moves there:
        // nothing reads the checkpoint's own.
        let mut checkpoint = self.checkpoint_parts(
            serde_json::Value::Null,
            serde_json::Value::Null,
            state.is_some(),
        )?;
        let agent = state.map(|state| SavedAgent {
            algorithm_id: self.agent().algorithm_id().to_string(),
            state,
            window: std::mem::take(&mut checkpoint.window),
        });
        Snapshot::of(checkpoint, agent)
    }

    /// A fresh run that continues `snapshot`: the world, scheduler, counters and next
    /// observation are the saved ones, and the agent starts as `start` says. The run has
    /// the snapshot's identity and config (set another run id, budget or trace with the
    /// builder methods and [`Harness::open_trace`]); its summary counts from the saved step.
    ///
    /// # Errors
    ///
    /// The snapshot fails [`Snapshot::check`], or a saved part does not fit `env` or
    /// `agent` (as in [`Harness::resume`]); [`AgentStart::Saved`] from a snapshot without
    /// an agent.
    pub fn restore(
        env: E,
        mut agent: A,
        snapshot: &Snapshot,
        start: AgentStart,
    ) -> Result<Self, SnapshotError> {
        snapshot.check()?;
        let window = match (start, &snapshot.agent) {
            (AgentStart::Fresh, _) => serde_json::to_value(Window::<E::Obs, E::Action> {
                start_step: snapshot.step,
                ..Window::default()
            })
            .map_err(|e| SnapshotError::Format(e.to_string()))?,
            (AgentStart::Saved { .. }, None) => {
                return Err(SnapshotError::Harness(HarnessError::Checkpoint(format!(
                    "the snapshot holds no agent (agent `{}` of the saved run does not support checkpoints); restore with a fresh agent",
                    snapshot.identity.algorithm_id
                ))));
            }
            (AgentStart::Saved { reseed }, Some(saved)) => {
                agent.load_state(saved.state.clone()).map_err(|e| {
                    HarnessError::Checkpoint(format!("the saved agent does not fit: {e}"))
                })?;
                if let Some(seed) = reseed {
                    agent.reseed(seed);
                }
                saved.window.clone()
            }
        };
        let mut checkpoint = snapshot.to_checkpoint(serde_json::Value::Null, window);
        checkpoint.identity.algorithm_id = agent.algorithm_id().to_string();
        Ok(Harness::resume_parts(env, agent, checkpoint, None, false)?)
    }

    /// Records in the events table, at the current step, that this run is rollout `k` of
    /// a fork of run `source_run_id` at that step. Call it after [`Harness::open_trace`].
    ///
    /// # Errors
    ///
    /// The events table cannot be written.
    pub fn record_fork(&mut self, source_run_id: &str, k: u64) -> Result<(), HarnessError> {
        let step = self.steps_done();
        let row = EventRow::fork(&self.identity().run_id, step, source_run_id, k);
        match self.events_mut() {
            Some(events) => events
                .write(row)
                .map_err(|source| HarnessError::TraceAt { step, source }),
            None => Ok(()),
        }
    }
}

/// A harness restored from a snapshot, type-erased: what a registry builds for a fork.
pub trait DynRestored: super::DynHarness {
    /// See [`Harness::record_fork`].
    ///
    /// # Errors
    ///
    /// As [`Harness::record_fork`].
    fn record_fork(&mut self, source_run_id: &str, k: u64) -> Result<(), HarnessError>;
}

impl<E: Env + Shiftable, A: Agent<E>> DynRestored for Harness<E, A> {
    fn record_fork(&mut self, source_run_id: &str, k: u64) -> Result<(), HarnessError> {
        Harness::record_fork(self, source_run_id, k)
    }
}
