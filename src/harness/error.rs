//! Why a run could not go on.

use std::fmt;

use crate::env::EnvError;
use crate::regime::RegimeError;
use crate::session::StepError;
use crate::trace::TraceError;

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
    Checkpoint(String),
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
    /// [`Harness::step_with`] was called after the run stopped or spent its budget.
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
            HarnessError::NonFiniteReward { .. }
            | HarnessError::Checkpoint(_)
            | HarnessError::AgentState { .. }
            | HarnessError::Stopped { .. } => None,
        }
    }
}

impl From<TraceError> for HarnessError {
    fn from(e: TraceError) -> Self {
        HarnessError::Trace(e)
    }
}

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
