//! Checkpoints: everything a run needs to continue, written atomically.
//!
//! A checkpoint holds the harness counters and window buffer, the scheduler (with its random
//! stream), the env's state ([`Env::save_state`](crate::env::Env::save_state): the world and
//! its random streams), the agent's state ([`Agent::save_state`](super::Agent::save_state)),
//! the trace's length in bytes at that step, a hash of its last complete row, and digests
//! of the trace and its events table up to that point. It is
//! written the SQLite way ([`crate::output::write_atomic`]) after the trace itself was
//! synced, so the checkpoint on disk always describes rows that are on disk.
//!
//! A checkpoint is a file like any other input: it may have been edited, downloaded or
//! copied from another run's folder. Resuming validates everything first
//! ([`Checkpoint::validate`], [`Checkpoint::verify_tables`]: the trace must be a trace of
//! the checkpoint's run, and it and its events table must hold exactly the bytes or parts
//! the checkpoint digested; then the env's and the agent's own checks), and only then cuts
//! the trace back to the recorded length and continues; the result is byte-identical to a
//! run that was never interrupted. A checkpoint that does not fit is refused with the
//! trace and every other file untouched.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::{HarnessConfig, LabelSummary, RunSummary};
use super::error::CheckpointError;
use crate::regime::{Conditions, Scheduler};
use crate::trace::{RunIdentity, TraceFormat};

/// The version written in every checkpoint; a checkpoint of another version is refused.
pub const CHECKPOINT_VERSION: u32 = 3;

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
    /// A hash of the trace's last complete row then ([`crate::trace::tail_hash`]).
    pub trace_tail: Option<String>,
    /// The events table's length then: bytes, or rows for Parquet (`None` without a
    /// trace, or from a perennial that wrote no events table; the table then starts over).
    #[serde(default)]
    pub events_at: Option<u64>,
    /// The digest of the trace up to `trace_bytes` ([`crate::trace::recorded_digest`]).
    pub trace_digest: Option<String>,
    /// The digest of the events table up to `events_at`.
    pub events_digest: Option<String>,
    /// The digest of every other field ([`Checkpoint::seal`]): an edited or damaged
    /// checkpoint is refused as a whole, before any of its fields is believed.
    #[serde(default)]
    pub seal: Option<String>,
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
    /// The file cannot be read, is not a checkpoint (with the line and column), is of
    /// another version, or does not match its seal.
    pub fn read(path: &Path) -> Result<Self, CheckpointError> {
        let text =
            crate::limits::read_regular(path, crate::limits::MAX_CHECKPOINT_BYTES, "a checkpoint")
                .map_err(|message| CheckpointError::Read {
                    path: path.to_path_buf(),
                    message,
                })?;
        let ckpt: Checkpoint =
            serde_json::from_slice(&text).map_err(|source| CheckpointError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        if ckpt.version != CHECKPOINT_VERSION {
            return Err(CheckpointError::Version {
                path: path.to_path_buf(),
                found: ckpt.version,
                supported: CHECKPOINT_VERSION,
            });
        }
        let found = ckpt.seal()?;
        if ckpt.seal.as_deref() != Some(found.as_str()) {
            return Err(CheckpointError::Seal {
                path: path.to_path_buf(),
                found,
                sealed: ckpt.seal,
            });
        }
        Ok(ckpt)
    }

    /// The digest (XXH64) of every field but [`Checkpoint::seal`], over their JSON with
    /// keys in sorted order, so that reading a checkpoint back computes the same value.
    ///
    /// # Errors
    ///
    /// A field cannot be rendered as JSON.
    pub fn seal(&self) -> Result<String, CheckpointError> {
        seal_of(
            &serde_json::to_value(self).map_err(|source| CheckpointError::Json {
                what: "sealing the checkpoint",
                source,
            })?,
        )
    }

    /// Writes the checkpoint, sealed ([`Checkpoint::seal`]), atomically: temp file, fsync,
    /// rename, fsync of the folder ([`crate::output::write_atomic`]); a path that is not a
    /// regular file is refused.
    ///
    /// # Errors
    ///
    /// An I/O error, with the path.
    pub fn write(&self, path: &Path) -> Result<(), CheckpointError> {
        let sealed = Checkpoint {
            seal: Some(self.seal()?),
            ..self.clone()
        };
        crate::output::write_atomic_with(path, |file| {
            let mut out = std::io::BufWriter::new(file);
            serde_json::to_writer(&mut out, &sealed).map_err(std::io::Error::other)?;
            std::io::Write::flush(&mut out)
        })
        .map_err(CheckpointError::Write)
    }

    /// Checks the fields that a hand-edited or corrupted file could put out of range, so
    /// that resuming it is an error before anything is touched, never a panic mid-run.
    /// The env's and agent's parts are checked by their own `load_state`.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Field`], naming the field.
    pub fn validate(&self) -> Result<(), CheckpointError> {
        let bad = |field, message: String| Err(CheckpointError::Field { field, message });
        validate_position(&RunPosition {
            identity: &self.identity,
            config: &self.config,
            step: self.step,
            episode: self.episode,
            episode_step: self.episode_step,
            scheduler: &self.scheduler,
        })?;
        if self.summary.steps != self.step {
            return bad(
                "summary.steps",
                format!("is {} but `step` is {}", self.summary.steps, self.step),
            );
        }
        // A Parquet trace records its length but no tail; `trace::append` requires the
        // tail of a line-based trace.
        if self.trace_tail.is_some() && self.trace_bytes.is_none() {
            return bad("trace_tail", "is given without `trace_bytes`".into());
        }
        if !self.summary.total_reward.is_finite() || !self.label_totals.reward.is_finite() {
            return bad("summary.total_reward", "is not finite".into());
        }
        if self.trace_bytes.is_some() != self.trace_digest.is_some() {
            return bad(
                "trace_digest",
                "must be given exactly when `trace_bytes` is".into(),
            );
        }
        if self.events_at.is_some() != self.events_digest.is_some() {
            return bad(
                "events_digest",
                "must be given exactly when `events_at` is".into(),
            );
        }
        Ok(())
    }

    /// Proves, reading only, that the trace at `trace` (in `format`) and its events table
    /// are the ones this checkpoint was taken of: the trace's first row is of this run
    /// ([`crate::trace::check_identity`]), and each table holds what the checkpoint
    /// recorded, digest for digest ([`crate::trace::recorded_digest`]). Call it before
    /// anything is cut; snapshots, which record no trace, have nothing to verify here.
    ///
    /// # Errors
    ///
    /// The file and what does not match; nothing was touched.
    pub fn verify_tables(&self, trace: &Path, format: TraceFormat) -> Result<(), CheckpointError> {
        let (Some(bytes), Some(digest)) = (self.trace_bytes, self.trace_digest.as_deref()) else {
            return Ok(());
        };
        // A run stopped before its first row recorded none, and its Parquet trace may be a
        // folder without parts yet: there is no first row to prove.
        let no_parts = || {
            std::fs::read_dir(trace).is_ok_and(|d| {
                !d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("part-"))
            })
        };
        if !(bytes == 0 && format == TraceFormat::Parquet && no_parts()) {
            crate::trace::check_identity(trace, &self.identity)
                .map_err(CheckpointError::Identity)?;
        }
        let empty = crate::trace::Digest::default().hex();
        let tables = [
            (trace.to_path_buf(), bytes, digest, "trace"),
            (
                crate::trace::events_path(trace, format),
                self.events_at.unwrap_or(0),
                self.events_digest.as_deref().unwrap_or(&empty),
                "events table",
            ),
        ];
        for (path, at, want, table) in tables {
            let found = crate::trace::recorded_digest(&path, format, at)
                .map_err(|source| CheckpointError::Table { table, source })?;
            if found != want {
                return Err(CheckpointError::TableMismatch {
                    path,
                    table,
                    at,
                    format,
                    found,
                    recorded: want.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// The seal of a checkpoint given as JSON ([`Checkpoint::seal`]): the digest of every
/// field but `seal`, keys in sorted order. A tool that edits a checkpoint on purpose (a
/// test, a migration) reseals it with this; the fields are then checked on their merits.
///
/// # Errors
///
/// The value cannot be rendered as JSON.
pub fn seal_of(checkpoint: &serde_json::Value) -> Result<String, CheckpointError> {
    let mut value = checkpoint.clone();
    if let Some(fields) = value.as_object_mut() {
        fields.remove("seal");
    }
    let bytes = serde_json::to_vec(&value).map_err(|source| CheckpointError::Json {
        what: "sealing the checkpoint",
        source,
    })?;
    let mut digest = crate::trace::Digest::default();
    digest.update(&bytes);
    Ok(digest.hex())
}

/// The parts of a saved run that say where it stands, as a checkpoint or a snapshot holds
/// them.
pub(super) struct RunPosition<'a> {
    pub(super) identity: &'a RunIdentity,
    pub(super) config: &'a HarnessConfig,
    pub(super) step: u64,
    pub(super) episode: u64,
    pub(super) episode_step: u64,
    pub(super) scheduler: &'a Scheduler,
}

/// Checks the fields of a saved run's position that an edited file could put out of range
/// (the checks a checkpoint and a snapshot share).
///
/// # Errors
///
/// [`CheckpointError::Field`], naming the field.
pub(super) fn validate_position(run: &RunPosition<'_>) -> Result<(), CheckpointError> {
    let bad = |field, message: String| Err(CheckpointError::Field { field, message });
    let window = run.config.window_steps;
    if window == 0 || window > crate::limits::MAX_WINDOW_STEPS {
        return bad(
            "config.window_steps",
            format!("is {window}; use 1 to {}", crate::limits::MAX_WINDOW_STEPS),
        );
    }
    if run.step > run.config.steps {
        return bad(
            "step",
            format!(
                "is {} but the step budget is {}",
                run.step, run.config.steps
            ),
        );
    }
    if run.episode_step > run.step || run.episode > run.step {
        return bad(
            "episode_step",
            format!(
                "episode {} step {} cannot follow {} steps",
                run.episode, run.episode_step, run.step
            ),
        );
    }
    if let Err(e) = run.scheduler.check_restored() {
        return bad("scheduler", e.to_string());
    }
    // The run id names the files written beside the trace: a path in it would write
    // outside the run's folder.
    if let Err(e) = crate::limits::check_run_id("the run id", &run.identity.run_id) {
        return bad("identity.run_id", e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_checkpoint_is_refused_with_its_path_and_position() {
        let (_dir, path) = crate::output::Scratch::file("ckpt.json");
        std::fs::write(&path, "{\n  \"version\": 3,\n  \"meta\": nope\n}").unwrap();
        let err = Checkpoint::read(&path).unwrap_err();
        let CheckpointError::Parse { path: named, .. } = &err else {
            panic!("expected a parse error, got {err:?}");
        };
        assert_eq!(named, &path);
        assert_eq!(err.position(), Some((3, 12)));
        assert!(err.to_string().contains("not a perennial checkpoint"));
        assert!(err.to_string().contains("line 3 column 12"));
    }

    #[test]
    fn a_missing_checkpoint_is_a_read_error_naming_the_file() {
        let (_dir, path) = crate::output::Scratch::file("absent.json");
        let err = Checkpoint::read(&path).unwrap_err();
        assert!(matches!(err, CheckpointError::Read { .. }), "{err:?}");
        assert!(err.to_string().contains("absent.json"));
        assert_eq!(err.position(), None);
    }
}
