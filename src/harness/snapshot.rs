//! Snapshots: everything a run needs to continue except its trace, as plain data.
//!
//! A [`Snapshot`] holds the world's saved state ([`Env::save_state_typed`]: the world and
//! its random streams), the scheduler (its plan position and random stream), the world's
//! baseline conditions, the run's identity (its notify level included) and config, the
//! counters (step, episode, step within the episode), the observation the agent acts on
//! next and, when the agent can be saved, the agent's state and its rollout window. It is
//! taken from a running harness ([`Harness::snapshot`]) or from a checkpoint
//! ([`Snapshot::from_checkpoint`]), and [`Harness::restore`] continues it in a fresh run
//! exactly where the saved one would have gone on: the same rows after the saved step,
//! given the same actions.
//!
//! In memory a snapshot keeps its parts typed: taking one copies the world's state and the
//! agent's window without writing JSON, and restoring it in the same process (a fork)
//! reads them without parsing. Its fields are private, so a snapshot in memory is one the
//! library made: taken from a run, made from a [validated](Checkpoint::validate)
//! checkpoint, or read and checked. Written out (serde, [`Snapshot::to_json`],
//! [`Snapshot::write`]) it is versioned ([`SNAPSHOT_VERSION`]) and sealed by a content hash
//! over its own canonical JSON; read back ([`Snapshot::from_json`], [`Snapshot::read`],
//! serde) the hash and the run's position are checked before anything else, so an edited
//! or truncated snapshot is refused before anything is restored. Restoring runs the checks
//! a world's and an agent's own `load_state` make, and checks the baseline and every
//! regime against the world's parameter table.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::agent::{Agent, Window};
use super::checkpoint::{Checkpoint, RunPosition, validate_position};
use super::config::{HarnessConfig, LabelSummary, RunSummary};
use super::error::{CheckpointError, HarnessError};
use super::run::{Continued, Harness};
use crate::env::{Env, SavedState};
use crate::regime::{Conditions, Scheduler, Shiftable};
use crate::session::{Counters, SessionState};
use crate::trace::{EventRow, RunIdentity};

/// The version written in every snapshot; a snapshot of another version is refused.
pub const SNAPSHOT_VERSION: u32 = 1;

/// A running world, saved: everything a run needs to continue except its trace (the
/// world's state and random streams, the scheduler, the run's identity, config and
/// counters, and the agent's state when it can be saved). See [`crate::harness`].
#[derive(Clone, Debug)]
pub struct Snapshot {
    identity: RunIdentity,
    config: HarnessConfig,
    counters: Counters,
    obs: serde_json::Value,
    baseline: Conditions,
    scheduler: Scheduler,
    env: SavedState,
    agent: Option<SavedAgent>,
}

/// The agent's part of a [`Snapshot`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SavedAgent {
    /// The agent's id (its trace `algorithm_id`).
    algorithm_id: String,
    /// [`Agent::save_state`].
    state: serde_json::Value,
    /// The rollout window since its last update.
    window: SavedState,
}

/// A snapshot as written: its fields in this order, `hash` last. Hashed with `hash` empty.
#[derive(Serialize)]
struct Wire<'a> {
    version: u32,
    identity: &'a RunIdentity,
    config: &'a HarnessConfig,
    step: u64,
    episode: u64,
    episode_step: u64,
    obs: &'a serde_json::Value,
    baseline: &'a Conditions,
    scheduler: &'a Scheduler,
    env: &'a SavedState,
    agent: &'a Option<SavedAgent>,
    hash: &'a str,
}

/// A snapshot as read, before it is checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireOwned {
    version: u32,
    identity: RunIdentity,
    config: HarnessConfig,
    step: u64,
    episode: u64,
    episode_step: u64,
    obs: serde_json::Value,
    baseline: Conditions,
    scheduler: Scheduler,
    env: SavedState,
    agent: Option<SavedAgent>,
    hash: String,
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

crate::error_from::wrap_errors!(SnapshotError {
    HarnessError => Harness,
});

impl Snapshot {
    /// The snapshot of the run saved in `checkpoint`, with its agent.
    ///
    /// # Errors
    ///
    /// The checkpoint fails [`Checkpoint::validate`], or its run had stopped.
    pub fn from_checkpoint(checkpoint: &Checkpoint) -> Result<Self, SnapshotError> {
        checkpoint
            .validate()
            .map_err(|e| SnapshotError::Harness(e.into()))?;
        if checkpoint.stopped {
            return Err(SnapshotError::Harness(HarnessError::Stopped {
                step: checkpoint.step,
            }));
        }
        Ok(Snapshot {
            identity: checkpoint.identity.clone(),
            config: checkpoint.config.clone(),
            counters: Counters {
                step: checkpoint.step,
                episode: checkpoint.episode,
                episode_step: checkpoint.episode_step,
            },
            obs: checkpoint.obs.clone(),
            baseline: checkpoint.baseline.clone(),
            scheduler: checkpoint.scheduler.clone(),
            env: SavedState::json(checkpoint.env.clone()),
            agent: Some(SavedAgent {
                algorithm_id: checkpoint.identity.algorithm_id.clone(),
                state: checkpoint.agent.clone(),
                window: SavedState::json(checkpoint.window.clone()),
            }),
        })
    }

    /// Steps done: the restored run's first row has this step index.
    pub fn step(&self) -> u64 {
        self.counters.step
    }

    /// The episode index and the step within the episode.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The identity of the run it was taken from.
    pub fn identity(&self) -> &RunIdentity {
        &self.identity
    }

    /// That run's harness config.
    pub fn config(&self) -> &HarnessConfig {
        &self.config
    }

    /// The saved agent's id, when the snapshot holds the agent (its state and window).
    pub fn agent_id(&self) -> Option<&str> {
        self.agent.as_ref().map(|a| a.algorithm_id.as_str())
    }

    /// This snapshot without its agent part: what a restore with [`AgentStart::Fresh`]
    /// reads. The saved parts are shared, not copied.
    pub fn without_agent(&self) -> Snapshot {
        Snapshot {
            identity: self.identity.clone(),
            config: self.config.clone(),
            counters: self.counters,
            obs: self.obs.clone(),
            baseline: self.baseline.clone(),
            scheduler: self.scheduler.clone(),
            env: self.env.clone(),
            agent: None,
        }
    }

    /// The snapshot as written, with `hash` as its hash.
    fn wire<'a>(&'a self, hash: &'a str) -> Wire<'a> {
        Wire {
            version: SNAPSHOT_VERSION,
            identity: &self.identity,
            config: &self.config,
            step: self.counters.step,
            episode: self.counters.episode,
            episode_step: self.counters.episode_step,
            obs: &self.obs,
            baseline: &self.baseline,
            scheduler: &self.scheduler,
            env: &self.env,
            agent: &self.agent,
            hash,
        }
    }

    /// The content hash: [`crate::output::content_hash`] of the snapshot's JSON with
    /// `hash` empty. The JSON is canonical: fields in declaration order, the maps of the
    /// saved parts with sorted keys, floats written so they read back to the same bits.
    ///
    /// # Errors
    ///
    /// A saved part cannot be written as JSON.
    pub fn content_hash(&self) -> Result<String, SnapshotError> {
        hash_of(&self.wire(""))
    }

    /// The snapshot as JSON, sealed by its content hash.
    ///
    /// # Errors
    ///
    /// A saved part cannot be written as JSON.
    pub fn to_json(&self) -> Result<String, SnapshotError> {
        serde_json::to_string(self).map_err(|e| SnapshotError::Format(e.to_string()))
    }

    /// Reads a snapshot from JSON and checks its version, its content hash and the run's
    /// position (as [`Checkpoint::validate`] does).
    ///
    /// # Errors
    ///
    /// The text is not a snapshot, is of another version, was edited, or holds a position
    /// out of range.
    pub fn from_json(text: &str) -> Result<Self, SnapshotError> {
        let wire: WireOwned =
            serde_json::from_str(text).map_err(|e| SnapshotError::Format(e.to_string()))?;
        Snapshot::checked(wire)
    }

    /// The snapshot `wire` holds, once its version, hash and position are checked.
    fn checked(wire: WireOwned) -> Result<Self, SnapshotError> {
        if wire.version != SNAPSHOT_VERSION {
            return Err(SnapshotError::Format(format!(
                "version {} cannot be restored by this perennial (version {SNAPSHOT_VERSION})",
                wire.version
            )));
        }
        let snapshot = Snapshot {
            identity: wire.identity,
            config: wire.config,
            counters: Counters {
                step: wire.step,
                episode: wire.episode,
                episode_step: wire.episode_step,
            },
            obs: wire.obs,
            baseline: wire.baseline,
            scheduler: wire.scheduler,
            env: wire.env,
            agent: wire.agent,
        };
        let actual = snapshot.content_hash()?;
        if actual != wire.hash {
            return Err(SnapshotError::Tampered {
                recorded: wire.hash,
                actual,
            });
        }
        snapshot.validate()?;
        Ok(snapshot)
    }

    /// Checks the run's position (the checks a checkpoint's get).
    fn validate(&self) -> Result<(), SnapshotError> {
        validate_position(&RunPosition {
            identity: &self.identity,
            config: &self.config,
            step: self.counters.step,
            episode: self.counters.episode,
            episode_step: self.counters.episode_step,
            scheduler: &self.scheduler,
        })
        .map_err(|e| SnapshotError::Harness(e.into()))
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

    /// Reads and checks a snapshot file (as [`Snapshot::from_json`]).
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
}

/// The content hash of `wire`'s JSON, streamed into the hash as it is written: the same
/// hash as of the whole text, without holding the text.
fn hash_of(wire: &Wire<'_>) -> Result<String, SnapshotError> {
    let mut hasher = crate::output::ContentHasher::default();
    serde_json::to_writer(&mut hasher, wire).map_err(|e| SnapshotError::Format(e.to_string()))?;
    Ok(hasher.finish())
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let hash = self.content_hash().map_err(serde::ser::Error::custom)?;
        self.wire(&hash).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Snapshot {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Snapshot::checked(WireOwned::deserialize(deserializer)?).map_err(serde::de::Error::custom)
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
        let saved = self.session_state()?;
        if self.has_stopped() {
            return Err(SnapshotError::Harness(HarnessError::Stopped {
                step: saved.counters.step,
            }));
        }
        // The window is kept only when the agent's part keeps it, and typed: it is written
        // as JSON only if the snapshot is.
        let agent = match self.agent().save_state() {
            Ok(state) => Some(SavedAgent {
                algorithm_id: self.agent().algorithm_id().to_string(),
                state,
                window: SavedState::typed(self.run_window().clone()),
            }),
            Err(_) => None,
        };
        let snapshot = Snapshot {
            identity: saved.identity,
            config: self.config_ref().clone(),
            counters: saved.counters,
            obs: saved.obs,
            baseline: saved.baseline,
            scheduler: saved.scheduler,
            env: saved.env,
            agent,
        };
        snapshot.validate()?;
        Ok(snapshot)
    }

    /// A fresh run that continues `snapshot`: the world, scheduler, counters and next
    /// observation are the saved ones, and the agent starts as `start` says. The run has
    /// the snapshot's identity and config (set another run id, budget or trace with the
    /// builder methods and [`Harness::open_trace`]); its summary counts from the saved step.
    ///
    /// # Errors
    ///
    /// A saved part does not fit `env` or `agent` (as in [`Harness::resume`]);
    /// [`AgentStart::Saved`] from a snapshot without an agent.
    pub fn restore(
        env: E,
        mut agent: A,
        snapshot: &Snapshot,
        start: AgentStart,
    ) -> Result<Self, SnapshotError> {
        let window = match (start, &snapshot.agent) {
            (AgentStart::Fresh, _) => Window {
                start_step: snapshot.counters.step,
                ..Window::default()
            },
            (AgentStart::Saved { .. }, None) => {
                return Err(SnapshotError::Harness(
                    CheckpointError::NoSavedAgent {
                        agent: snapshot.identity.algorithm_id.clone(),
                    }
                    .into(),
                ));
            }
            (AgentStart::Saved { reseed }, Some(saved)) => {
                agent
                    .load_state(saved.state.clone())
                    .map_err(CheckpointError::Agent)
                    .map_err(HarnessError::from)?;
                if let Some(seed) = reseed {
                    agent.reseed(seed);
                }
                saved
                    .window
                    .load()
                    .map_err(CheckpointError::Window)
                    .map_err(HarnessError::from)?
            }
        };
        let mut identity = snapshot.identity.clone();
        identity.algorithm_id = agent.algorithm_id().to_string();
        let continued = Continued {
            session: SessionState {
                identity,
                counters: snapshot.counters,
                scheduler: snapshot.scheduler.clone(),
                baseline: snapshot.baseline.clone(),
                env: snapshot.env.clone(),
                obs: snapshot.obs.clone(),
                ended: false,
            },
            config: snapshot.config.clone(),
            window,
            summary: RunSummary::at(snapshot.counters.step),
            label_totals: LabelSummary::default(),
            stopped: false,
            events_at: None,
        };
        Ok(Harness::continued(env, agent, continued, None)?)
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
