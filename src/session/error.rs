//! What can stop a session's step, and why a saved state does not fit.

use std::fmt;

use crate::env::EnvError;
use crate::regime::RegimeError;
use crate::trace::TraceError;

/// A step that could not be taken or recorded. Every row before `step` is in the trace.
///
/// The causes are boxed, so the error is three words and a step's `Result` stays small: it
/// is moved at every step.
#[derive(Debug)]
#[non_exhaustive]
pub enum StepError {
    /// The env refused the step (e.g. an invalid action); the world is unchanged.
    Env {
        /// Global step index.
        step: u64,
        /// The env's error.
        source: Box<EnvError>,
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
        source: Box<RegimeError>,
    },
    /// The trace or the events table could not be written.
    Trace {
        /// Global step index of the row that could not be written.
        step: u64,
        /// The cause.
        source: Box<TraceError>,
    },
    /// A step before [`super::Session::start`].
    NotStarted {
        /// Global step index.
        step: u64,
    },
    /// A step after an episode end, before [`super::Session::next_episode`].
    EpisodeEnded {
        /// Global step index.
        step: u64,
    },
}

impl StepError {
    /// The global step index the error happened at.
    pub fn step(&self) -> u64 {
        match self {
            StepError::Env { step, .. }
            | StepError::NonFiniteReward { step, .. }
            | StepError::Regime { step, .. }
            | StepError::Trace { step, .. }
            | StepError::NotStarted { step }
            | StepError::EpisodeEnded { step } => *step,
        }
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepError::Env { step, source } => write!(f, "step {step}: {source}"),
            StepError::NonFiniteReward { step, reward } => write!(
                f,
                "step {step}: the world returned {}; every row before this step is in the trace",
                reward_text(*reward)
            ),
            StepError::Regime { step, source } => write!(f, "step {step}: {source}"),
            StepError::Trace { step, source } => write!(f, "step {step}: {source}"),
            StepError::NotStarted { step } => write!(
                f,
                "step {step}: the run has not started; call reset (start) before the first step"
            ),
            StepError::EpisodeEnded { step } => write!(
                f,
                "step {step}: the episode has ended; reset to start the next one"
            ),
        }
    }
}

impl std::error::Error for StepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StepError::Env { source, .. } => Some(source.as_ref()),
            StepError::Regime { source, .. } => Some(source.as_ref()),
            StepError::Trace { source, .. } => Some(source.as_ref()),
            StepError::NonFiniteReward { .. }
            | StepError::NotStarted { .. }
            | StepError::EpisodeEnded { .. } => None,
        }
    }
}

/// A saved [`super::SessionState`] that does not fit the session's world: nothing was
/// changed but, when the world itself refused it, the world.
#[derive(Debug)]
pub struct RestoreError {
    /// The part that does not fit: `world`, `baseline`, `regime `x``, `observation`.
    pub what: String,
    /// Why.
    pub message: String,
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the saved {} does not fit: {}", self.what, self.message)
    }
}

impl std::error::Error for RestoreError {}

/// What a refused reward was: non-finite, or beyond the range a trace can hold.
pub(crate) fn reward_text(reward: f64) -> String {
    if reward.is_finite() {
        format!(
            "a reward of {reward}, beyond the ±1e30 a trace can hold (perennial::limits::MAX_REWARD)"
        )
    } else {
        format!("a non-finite reward ({reward})")
    }
}
