//! The run manifest a session keeps beside its trace: written when the run starts, again
//! when it ends.

use std::path::{Path, PathBuf};

use super::Session;
use crate::env::Env;
use crate::output::OutputLock;
use crate::regime::Shiftable;
use crate::trace::{Manifest, TraceError};

/// How a run ended, as its manifest records it (`exit_status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The run took the steps it was asked for (or the env ended the episode).
    Completed,
    /// A signal stopped it after a whole step.
    Interrupted,
    /// It failed: why. The manifest counts the rows that reached the trace.
    Failed(String),
}

impl RunEnd {
    fn status(&self) -> String {
        match self {
            RunEnd::Completed => "completed".into(),
            RunEnd::Interrupted => "interrupted".into(),
            RunEnd::Failed(why) => format!("failed: {why}"),
        }
    }
}

/// The manifest of a running session, where it is written, and its lock, held until the
/// manifest is rewritten at the end, so two runs never write one manifest.
pub(super) struct Kept {
    path: PathBuf,
    manifest: Manifest,
    _lock: OutputLock,
}

impl Kept {
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl<E: Env + Shiftable> Session<E> {
    /// Writes `manifest` (its `exit_status` `running`) to `path` and hands it to the trace
    /// sink (a Parquet part carries it in its metadata); the session keeps it, with `lock`
    /// (from [`Manifest::lock`], taken before the trace was opened), until
    /// [`Session::end_manifest`]. Every door that traces a run (the command line, the
    /// Python env) records its manifest through this, so all write it the same way.
    ///
    /// # Errors
    ///
    /// The manifest cannot be written.
    pub fn begin_manifest(
        &mut self,
        path: &Path,
        manifest: Manifest,
        lock: OutputLock,
    ) -> Result<(), TraceError> {
        manifest.write(path)?;
        if let (Ok(json), Some(sink)) = (serde_json::to_string(&manifest), self.sink.as_mut()) {
            sink.attach_manifest(&json);
        }
        self.manifest = Some(Kept {
            path: path.to_path_buf(),
            manifest,
            _lock: lock,
        });
        Ok(())
    }

    /// The manifest kept since [`Session::begin_manifest`], while the run goes on.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.as_ref().map(|k| &k.manifest)
    }

    /// Rewrites the manifest with the end time, how the run ended and the steps in the
    /// trace: `steps` for a run that ended well, the complete rows on disk for a failed
    /// one (a failed write may have lost the last rows); then releases its lock. Call it
    /// after [`Session::close`]. A session without a manifest does nothing.
    ///
    /// # Errors
    ///
    /// The manifest cannot be written.
    pub fn end_manifest(&mut self, end: &RunEnd, steps: u64) -> Result<(), TraceError> {
        let Some(Kept {
            path,
            mut manifest,
            _lock,
        }) = self.manifest.take()
        else {
            return Ok(());
        };
        manifest.ended_at = Some(crate::trace::utc_now());
        manifest.steps_done = match (end, &self.trace_at) {
            (RunEnd::Failed(_), Some((trace, format))) => {
                crate::trace::rows_on_disk(trace, *format)
            }
            _ => steps,
        };
        manifest.exit_status = end.status();
        manifest.write(&path)
    }
}
