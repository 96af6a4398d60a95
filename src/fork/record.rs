//! `fork.json`: what a fork was made from and of.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file name of a fork's record in its folder.
pub const FORK_RECORD: &str = "fork.json";

/// A fork, as `fork.json` records it: written before the rollouts run, so a folder is
/// known to hold this fork (and a second fork into it is refused).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkRecord {
    /// The source checkpoint, absolute.
    pub source: PathBuf,
    /// [`crate::output::content_hash`] of the source checkpoint file.
    pub source_hash: String,
    /// The source run's id.
    pub source_run_id: String,
    /// The step the rollouts start at.
    pub step: u64,
    /// The world file, absolute.
    pub world_file: PathBuf,
    /// The task.
    pub task: String,
    /// Rollouts (K).
    pub rollouts: u64,
    /// Steps per rollout (H).
    pub steps: u64,
    /// The agent's name.
    pub agent: String,
    /// Whether the rollouts continue the saved agent (its learned state) rather than a
    /// freshly built one.
    pub saved_agent: bool,
    /// The agent's options.
    pub agent_options: serde_json::Value,
    /// The fork seed S the agent seeds are derived from.
    pub seed: u64,
    /// The trace format.
    pub format: String,
    /// Whether the traces carry `obs` and `action`.
    pub record_transitions: bool,
    /// Each rollout.
    pub runs: Vec<RolloutRecord>,
}

/// One rollout in a [`ForkRecord`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutRecord {
    /// Its index k.
    pub k: u64,
    /// Its run id.
    pub run_id: String,
    /// Its agent's seed.
    pub agent_seed: u64,
    /// Its trace, relative to the fork's folder.
    pub trace: PathBuf,
}

impl ForkRecord {
    /// Reads a `fork.json`.
    ///
    /// # Errors
    ///
    /// A message naming the file.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&text)
            .map_err(|e| format!("{}: not a perennial fork record ({e})", path.display()))
    }

    /// Writes it atomically ([`crate::output::write_atomic`]).
    ///
    /// # Errors
    ///
    /// An I/O error, with the path.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        crate::output::write_atomic(path, text.as_bytes()).map_err(|e| e.to_string())
    }
}
