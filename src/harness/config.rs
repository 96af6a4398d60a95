//! What a run is told (its [`HarnessConfig`]) and what it reports ([`RunSummary`]): the
//! types the run loop and its checkpoints share.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How the harness drives a run. Build with `Default` and struct update syntax.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HarnessConfig {
    /// Steps per rollout window: the agent's `update` is called every `window_steps` steps
    /// (256). Windows end nothing and are not recorded.
    pub window_steps: usize,
    /// Reset the env when it ends an episode and go on (off). With it off, the run stops at
    /// the first episode end. The harness never resets for any other reason.
    pub auto_reset: bool,
    /// Step budget: the run stops after this many steps (100,000).
    pub steps: u64,
    /// Write the `obs` and `action` columns (off).
    pub record_transitions: bool,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            window_steps: 256,
            auto_reset: false,
            steps: 100_000,
            record_transitions: false,
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The step budget was spent.
    Budget,
    /// The env ended an episode and `auto_reset` is off.
    EpisodeEnded,
    /// The flag given to [`Harness::stop_when`](super::Harness::stop_when) was raised (e.g. by SIGTERM): the run
    /// stopped after a whole step, with a checkpoint when checkpointing is on.
    Interrupted,
}

/// Reward earned under one label.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LabelSummary {
    /// Steps under the label.
    pub steps: u64,
    /// Sum of rewards under the label.
    pub reward: f64,
}

/// What a finished run reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Steps taken (rows written).
    pub steps: u64,
    /// Episodes the env ended during the run.
    pub episodes_ended: u64,
    /// Sum of all rewards.
    pub total_reward: f64,
    /// Steps and reward per label, by label name.
    pub labels: BTreeMap<String, LabelSummary>,
    /// Regime shifts during the run.
    pub shifts: u64,
    /// Why the run stopped.
    pub stop: StopReason,
}

impl RunSummary {
    /// The summary of a run that starts (or continues) at step `steps`: nothing counted yet.
    pub(crate) fn at(steps: u64) -> Self {
        RunSummary {
            steps,
            episodes_ended: 0,
            total_reward: 0.0,
            labels: BTreeMap::new(),
            shifts: 0,
            stop: StopReason::Budget,
        }
    }
}
