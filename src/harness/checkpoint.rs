//! Checkpoints: everything a run needs to continue, written atomically.
//!
//! A checkpoint holds the harness counters and window buffer, the scheduler (with its random
//! stream), the env's state ([`Env::save_state`](crate::env::Env::save_state): the world and
//! its random streams), the agent's state ([`Agent::save_state`](super::Agent::save_state)),
//! and the trace's length in bytes at that step. It is written to `PATH.tmp`, synced, and
//! renamed over `PATH`, after the trace itself was synced, so the checkpoint on disk always
//! describes rows that are on disk. Resuming cuts the trace back to the recorded length and
//! continues; the result is byte-identical to a run that was never interrupted.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::run::{HarnessConfig, LabelSummary, RunSummary};
use crate::regime::{Conditions, Scheduler};
use crate::trace::RunIdentity;

/// The version written in every checkpoint; a checkpoint of another version is refused.
pub const CHECKPOINT_VERSION: u32 = 1;

/// A saved run. Typed parts are kept as JSON values so a checkpoint can be read before
/// the world it belongs to is built.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// [`CHECKPOINT_VERSION`].
    pub version: u32,
    /// Whatever the caller attached (the CLI stores the world file, agent and trace options).
    pub meta: serde_json::Value,
    /// The run's identity.
    pub identity: RunIdentity,
    /// The harness config.
    pub config: HarnessConfig,
    /// Steps done.
    pub step: u64,
    /// Episode index.
    pub episode: u64,
    /// Step within the episode.
    pub episode_step: u64,
    /// The observation the agent acts on next.
    pub obs: serde_json::Value,
    /// The window buffer since the last update.
    pub window: serde_json::Value,
    /// The world's baseline conditions.
    pub baseline: Conditions,
    /// The summary so far.
    pub summary: RunSummary,
    /// Steps and reward under the label in force, not yet merged into the summary.
    pub label_totals: LabelSummary,
    /// Whether the run had stopped.
    pub stopped: bool,
    /// The scheduler, with its random stream.
    pub scheduler: Scheduler,
    /// The env's saved state.
    pub env: serde_json::Value,
    /// The agent's saved state.
    pub agent: serde_json::Value,
    /// The trace file's length when the checkpoint was taken (`None` without a trace).
    pub trace_bytes: Option<u64>,
}

/// Where and how often the harness checkpoints.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointPlan {
    /// The checkpoint file.
    pub path: PathBuf,
    /// Steps between two checkpoints.
    pub every: u64,
    /// Attached to every checkpoint as [`Checkpoint::meta`].
    pub meta: serde_json::Value,
}

impl Checkpoint {
    /// Reads a checkpoint file.
    ///
    /// # Errors
    ///
    /// A message naming the file: it cannot be read, is not a checkpoint, or is of another
    /// version.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let ckpt: Checkpoint = serde_json::from_slice(&text).map_err(|e| {
            format!(
                "{}: not a perennial checkpoint ({e}); pass the file written by --checkpoint-every",
                path.display()
            )
        })?;
        if ckpt.version != CHECKPOINT_VERSION {
            return Err(format!(
                "{}: checkpoint version {} cannot be resumed by this perennial (version {CHECKPOINT_VERSION})",
                path.display(),
                ckpt.version
            ));
        }
        Ok(ckpt)
    }

    /// Writes the checkpoint atomically: temp file, fsync, rename, fsync of the folder.
    ///
    /// # Errors
    ///
    /// An I/O error, with the path.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut tmp_name = path.as_os_str().to_owned();
        tmp_name.push(".tmp");
        let tmp = PathBuf::from(tmp_name);
        let bytes = serde_json::to_vec(self).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut file = File::create(&tmp).map_err(err)?;
        file.write_all(&bytes).map_err(err)?;
        file.sync_all().map_err(err)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(err)?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if let Ok(d) = File::open(dir) {
            // Some filesystems refuse to sync a directory; the rename is then as durable as
            // they make it.
            let _ = d.sync_all();
        }
        Ok(())
    }
}
