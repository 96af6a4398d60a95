//! Why a run could not go on.

use std::fmt;
use std::path::PathBuf;

use crate::env::EnvError;
use crate::output::OutputError;
use crate::regime::RegimeError;
use crate::session::{RestoreError, StepError};
use crate::trace::{TraceError, TraceFormat};

/// A run that could not go on. Every row before the failing step is in the trace.
#[derive(Debug)]
#[non_exhaustive]
pub enum HarnessError {
    /// The env refused a step (e.g. the agent chose an invalid action).
    Env {
        /// Global step index.
        step: u64,
        /// The env's error.
        source: EnvError,
    },
    /// The env returned a NaN or infinite reward, or one beyond
    /// [`MAX_REWARD`](crate::limits::MAX_REWARD).
    NonFiniteReward {
        /// Global step index.
        step: u64,
        /// The reward.
        reward: f64,
    },
    /// A regime's conditions could not be applied.
    Regime {
        /// Global step index.
        step: u64,
        /// The cause.
        source: RegimeError,
    },
    /// The trace could not be written.
    Trace(TraceError),
    /// The trace could not be written at a step (e.g. the disk is full).
    TraceAt {
        /// Global step index of the row that could not be written.
        step: u64,
        /// The cause.
        source: TraceError,
    },
    /// A checkpoint could not be written or resumed.
    Checkpoint(CheckpointError),
    /// The agent's state could not be saved in a checkpoint: its numbers diverged to NaN
    /// or infinity, which a checkpoint cannot record. The run stops there rather than
    /// write a checkpoint its resume would refuse; the previous checkpoint stands.
    AgentState {
        /// Global step index of the checkpoint.
        step: u64,
        /// The agent's algorithm id.
        agent: String,
        /// Why, and which options to change.
        message: String,
    },
    /// [`Harness::step_with`](crate::harness::Harness::step_with) was called after the run stopped or spent its budget.
    Stopped {
        /// Steps done.
        step: u64,
    },
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarnessError::Env { step, source } => {
                write!(
                    f,
                    "step {step}: {source}; every row before this step is in the trace"
                )
            }
            HarnessError::NonFiniteReward { step, reward } => write!(
                f,
                "step {step}: the world returned {}; the run stopped and every row before this step is in the trace",
                crate::session::reward_text(*reward)
            ),
            HarnessError::Regime { step, source } => write!(f, "step {step}: {source}"),
            HarnessError::Trace(e) => write!(f, "writing the trace: {e}"),
            HarnessError::TraceAt { step, source } => write!(
                f,
                "step {step}: writing the trace: {source}; every row before this step's window is in the trace"
            ),
            HarnessError::Checkpoint(msg) => write!(f, "checkpoint: {msg}"),
            HarnessError::AgentState {
                step,
                agent,
                message,
            } => write!(
                f,
                "step {step}: agent `{agent}` cannot be checkpointed: {message}; the run stopped (every row before this step is in the trace, and the previous checkpoint stands)"
            ),
            HarnessError::Stopped { step } => write!(
                f,
                "step {step}: the run has stopped (budget spent, episode ended with auto_reset off, or an earlier error); start a new run"
            ),
        }
    }
}

impl std::error::Error for HarnessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HarnessError::Env { source, .. } => Some(source),
            HarnessError::Regime { source, .. } => Some(source),
            HarnessError::Trace(e) | HarnessError::TraceAt { source: e, .. } => Some(e),
            HarnessError::Checkpoint(e) => Some(e),
            HarnessError::NonFiniteReward { .. }
            | HarnessError::AgentState { .. }
            | HarnessError::Stopped { .. } => None,
        }
    }
}

crate::error_from::wrap_errors!(HarnessError {
    CheckpointError => Checkpoint,
    TraceError => Trace,
});

impl From<StepError> for HarnessError {
    fn from(e: StepError) -> Self {
        match e {
            StepError::Env { step, source } => HarnessError::Env {
                step,
                source: *source,
            },
            StepError::NonFiniteReward { step, reward } => {
                HarnessError::NonFiniteReward { step, reward }
            }
            StepError::Regime { step, source } => HarnessError::Regime {
                step,
                source: *source,
            },
            StepError::Trace { step, source } => HarnessError::TraceAt {
                step,
                source: *source,
            },
            other => HarnessError::Stopped { step: other.step() },
        }
    }
}

/// A checkpoint (or a snapshot's run position) that could not be read, written, trusted or
/// resumed: the file and what is wrong with it. Nothing was touched when resuming fails.
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The file cannot be read: missing, not a regular file, or too large.
    Read {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the file.
        message: String,
    },
    /// The file is not a checkpoint: not JSON, or not a checkpoint's fields.
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause, with its line and column ([`CheckpointError::position`]).
        source: serde_json::Error,
    },
    /// The checkpoint was written by a perennial of another checkpoint version.
    Version {
        /// The file.
        path: PathBuf,
        /// The version it holds.
        found: u32,
        /// The version this perennial resumes
        /// ([`CHECKPOINT_VERSION`](super::CHECKPOINT_VERSION)).
        supported: u32,
    },
    /// The checkpoint's content does not digest to its seal: it was edited or damaged.
    Seal {
        /// The file.
        path: PathBuf,
        /// The digest of its content.
        found: String,
        /// The seal it holds, if any.
        sealed: Option<String>,
    },
    /// A field is out of range or contradicts another.
    Field {
        /// The field, as a dotted path (`summary.steps`).
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The trace is not a trace of the checkpoint's run, or cannot be read to prove it.
    Identity(TraceError),
    /// The trace or its events table cannot be read up to the recorded length.
    Table {
        /// `trace` or `events table`.
        table: &'static str,
        /// The cause.
        source: TraceError,
    },
    /// The trace or its events table does not hold what the checkpoint recorded.
    TableMismatch {
        /// The file.
        path: PathBuf,
        /// `trace` or `events table`.
        table: &'static str,
        /// The recorded length: rows for Parquet, bytes otherwise.
        at: u64,
        /// The trace format.
        format: TraceFormat,
        /// The digest of what the file holds.
        found: String,
        /// The digest the checkpoint recorded.
        recorded: String,
    },
    /// The checkpoint could not be written (the cause names the file).
    Write(OutputError),
    /// A part of the run could not be rendered as JSON.
    Json {
        /// What was being rendered.
        what: &'static str,
        /// The cause.
        source: serde_json::Error,
    },
    /// The world's state could not be saved.
    SaveWorld(EnvError),
    /// Checkpoints are on, but the world cannot be saved.
    WorldUnsaveable {
        /// The world's id.
        world: String,
        /// The cause.
        source: EnvError,
    },
    /// Checkpoints are on, but the agent cannot be saved.
    AgentUnsaveable {
        /// The agent's algorithm id.
        agent: String,
        /// Why.
        message: String,
    },
    /// The saved session (world, baseline, regimes, observation) does not fit the world.
    Restore(RestoreError),
    /// The saved agent does not fit the agent it is resumed with.
    Agent(String),
    /// The saved window does not fit the agent's observation and action types.
    Window(serde_json::Error),
    /// A snapshot restored with its saved agent holds none.
    NoSavedAgent {
        /// The algorithm id of the saved run's agent.
        agent: String,
    },
    /// The edited world file's regime in force does not fit the world.
    WorldChange(RegimeError),
}

impl CheckpointError {
    /// The line and column (1-based) where a checkpoint file stops parsing.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            CheckpointError::Parse { source, .. } => Some((source.line(), source.column())),
            _ => None,
        }
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointError::Read { message, .. } => f.write_str(message),
            CheckpointError::Parse { path, source } => write!(
                f,
                "{}: not a perennial checkpoint ({source}); pass the file written by --checkpoint-every",
                path.display()
            ),
            CheckpointError::Version {
                path,
                found,
                supported,
            } => write!(
                f,
                "{}: checkpoint version {found} cannot be resumed by this perennial (version {supported})",
                path.display()
            ),
            CheckpointError::Seal {
                path,
                found,
                sealed,
            } => write!(
                f,
                "{}: the checkpoint's content digests to {found}, but it is sealed with {}; it was edited or damaged since it was written, and cannot be resumed (nothing was touched)",
                path.display(),
                sealed.as_deref().unwrap_or("nothing")
            ),
            CheckpointError::Field { field, message } => write!(f, "field `{field}`: {message}"),
            CheckpointError::Identity(e) => write!(f, "{e}"),
            CheckpointError::Table { table, source } => write!(f, "the {table}: {source}"),
            CheckpointError::TableMismatch {
                path,
                table,
                at,
                format,
                found,
                recorded,
            } => write!(
                f,
                "{}: the {table}'s first {at} {} digest to {found}, but the checkpoint recorded {recorded}; it is not the {table} this checkpoint belongs to (it was replaced or rewritten since, or the checkpoint was edited), and nothing was touched",
                path.display(),
                if *format == TraceFormat::Parquet {
                    "rows"
                } else {
                    "bytes"
                }
            ),
            CheckpointError::Write(e) => write!(f, "{e}"),
            CheckpointError::Json { what, source } => write!(f, "{what}: {source}"),
            CheckpointError::SaveWorld(e) => write!(f, "{e}"),
            CheckpointError::WorldUnsaveable { world, source } => write!(
                f,
                "checkpoints are on, but world `{world}` cannot be saved: {source}"
            ),
            CheckpointError::AgentUnsaveable { agent, message } => write!(
                f,
                "checkpoints are on, but agent `{agent}` cannot be saved: {message}"
            ),
            CheckpointError::Restore(e) => write!(f, "{e}"),
            CheckpointError::Agent(message) => {
                write!(f, "the saved agent does not fit: {message}")
            }
            CheckpointError::Window(e) => write!(f, "the saved window does not fit: {e}"),
            CheckpointError::NoSavedAgent { agent } => write!(
                f,
                "the snapshot holds no agent (agent `{agent}` of the saved run does not support checkpoints); restore with a fresh agent"
            ),
            CheckpointError::WorldChange(e) => write!(f, "the edited world does not fit: {e}"),
        }
    }
}

impl std::error::Error for CheckpointError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckpointError::Parse { source, .. } | CheckpointError::Json { source, .. } => {
                Some(source)
            }
            CheckpointError::Window(e) => Some(e),
            CheckpointError::Identity(e) | CheckpointError::Table { source: e, .. } => Some(e),
            CheckpointError::Write(e) => Some(e),
            CheckpointError::SaveWorld(e) | CheckpointError::WorldUnsaveable { source: e, .. } => {
                Some(e)
            }
            CheckpointError::Restore(e) => Some(e),
            CheckpointError::WorldChange(e) => Some(e),
            CheckpointError::Read { .. }
            | CheckpointError::Version { .. }
            | CheckpointError::Seal { .. }
            | CheckpointError::Field { .. }
            | CheckpointError::TableMismatch { .. }
            | CheckpointError::AgentUnsaveable { .. }
            | CheckpointError::Agent(_)
            | CheckpointError::NoSavedAgent { .. } => None,
        }
    }
}
