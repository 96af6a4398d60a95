//! The run manifest: what produced a trace, written next to it as `<stem>.manifest.json`
//! (`runs/a.jsonl` has `runs/a.manifest.json`), so two traces of one run id each keep
//! their own.
//!
//! A trace holds what happened; the manifest holds what made it happen: the trace schema
//! and perennial versions, the world file's path, full text and a hash of that text, the
//! seed, the agent and its options, every option of the command, the start and end times,
//! the steps done and the exit status. `perennial run` writes it when the run starts
//! (`exit_status` = `running`, so a killed run says so) and again when it ends (with the
//! rows a failed run did write), each time atomically, holding a lock on it
//! ([`Manifest::lock`]) from start to end; a Parquet trace also carries it in every part's file metadata under
//! [`MANIFEST_KEY`](super::MANIFEST_KEY). `perennial eval` prints a summary per run and
//! warns when runs of one task came from different world-file texts.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TraceError;

/// The version of the trace columns and of this manifest's fields.
pub const TRACE_SCHEMA_VERSION: u32 = 1;

/// The world file a run was built from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldFileRecord {
    /// Its path, as the run resolved it.
    pub path: PathBuf,
    /// [`content_hash`] of `text`: equal texts, equal hashes.
    pub hash: String,
    /// Its full text.
    pub text: String,
}

impl WorldFileRecord {
    /// Reads the world file at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read.
    pub fn read(path: &Path) -> Result<Self, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(path, e))?;
        Ok(WorldFileRecord {
            path: path.to_path_buf(),
            hash: content_hash(&text),
            text,
        })
    }
}

/// What produced a run's trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`TRACE_SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The perennial version that wrote the run.
    pub perennial_version: String,
    /// The run id (the trace's `run_id` column).
    pub run_id: String,
    /// The world or task id.
    pub task: String,
    /// The world file, when the run was built from one.
    pub world_file: Option<WorldFileRecord>,
    /// The run seed.
    pub seed: u64,
    /// The agent's name.
    pub agent: String,
    /// The agent's options (an object; empty when the agent took the defaults).
    pub agent_options: serde_json::Value,
    /// The trace file or directory.
    pub trace: Option<PathBuf>,
    /// Every option of the command as it resolved them (flags, world-file defaults).
    pub options: serde_json::Value,
    /// The command line as given.
    pub argv: Vec<String>,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// When each `--resume` continued it (RFC 3339, UTC).
    #[serde(default)]
    pub resumed_at: Vec<String>,
    /// When it ended; `None` while it runs (or after it was killed).
    pub ended_at: Option<String>,
    /// Steps in the trace when the manifest was written.
    pub steps_done: u64,
    /// `running`, `completed`, or `failed: <message>`.
    pub exit_status: String,
}

impl Manifest {
    /// The manifest path of the trace at `trace`: `<stem>.manifest.json` in the trace's
    /// folder, as its events table is `<stem>.events.<format>`.
    pub fn path_for(trace: &Path) -> PathBuf {
        let stem = trace
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        trace.with_file_name(format!("{stem}.manifest.json"))
    }

    /// Where perennial 0.x before trace-named manifests wrote run `run_id`'s:
    /// `<run-id>.manifest.json` in the trace's folder, read when [`Manifest::path_for`] has
    /// none.
    fn legacy_path(trace: &Path, run_id: &str) -> PathBuf {
        trace.with_file_name(format!("{run_id}.manifest.json"))
    }

    /// Takes the manifest's lock (`<manifest>.lock`), held by a run from its start to its
    /// end, so two runs never write one manifest (a second run onto the same trace is
    /// refused naming the holder's pid).
    ///
    /// # Errors
    ///
    /// Another process holds it, or the lock file cannot be made.
    pub fn lock(path: &Path) -> Result<crate::output::OutputLock, crate::output::OutputError> {
        crate::output::OutputLock::beside(path)
    }

    /// Writes the manifest as pretty JSON: temp file, fsync, rename, folder fsync.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        let mut text = serde_json::to_vec_pretty(self)
            .map_err(|e| TraceError::io(path, std::io::Error::other(e)))?;
        text.push(b'\n');
        // Its temp file is one per process (two runs of one run id writing manifests into
        // one folder at once must not rename each other's away) and removed on failure; an
        // error (a full disk) names the manifest, not the temp file.
        crate::output::write_atomic(path, &text).map_err(TraceError::Output)
    }

    /// Reads a manifest file.
    ///
    /// # Errors
    ///
    /// The file cannot be read or is not a manifest.
    pub fn read(path: &Path) -> Result<Self, TraceError> {
        let bytes =
            crate::limits::read_regular(path, crate::limits::MAX_SIDE_FILE_BYTES, "a run manifest")
                .map_err(|e| TraceError::io(path, std::io::Error::other(e)))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            TraceError::io(
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })?;
        Self::parse(&text).map_err(|e| TraceError::parse(path, e.line() as u64, e.to_string()))
    }

    /// Parses a manifest from its JSON text.
    ///
    /// # Errors
    ///
    /// The text is not a manifest.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The manifest of `trace`: the file next to it ([`Manifest::path_for`]), else (for a
    /// Parquet trace) the one in its metadata. `None` when there is none, it does not parse,
    /// or it names another trace (traces written before manifests existed have none).
    pub fn beside(trace: &Path) -> Option<Self> {
        Self::read(&Self::path_for(trace))
            .ok()
            .filter(|m| m.describes(trace))
            .or_else(|| {
                let text = super::parquet_manifest(trace).ok()??;
                Self::parse(&text).ok()
            })
    }

    /// The manifest of run `run_id` read from `trace`: [`Manifest::beside`] when it is that
    /// run's, else one under the run id's name that older versions wrote
    /// (`<run-id>.manifest.json`) when it names this trace.
    pub fn find(trace: &Path, run_id: &str) -> Option<Self> {
        Self::beside(trace)
            .filter(|m| m.run_id == run_id)
            .or_else(|| Self::legacy(trace, run_id))
    }

    fn legacy(trace: &Path, run_id: &str) -> Option<Self> {
        Self::read(&Self::legacy_path(trace, run_id))
            .ok()
            .filter(|m| m.run_id == run_id && m.describes(trace))
    }

    /// Whether this manifest is `trace`'s: it names a trace of the same file name (a folder
    /// may be moved whole, so the folder is not compared), or names none.
    fn describes(&self, trace: &Path) -> bool {
        self.trace
            .as_ref()
            .is_none_or(|t| t.file_name() == trace.file_name())
    }

    /// One line for a report: versions, world file, seed, agent, steps, times, status.
    pub fn summary(&self) -> String {
        let world = match &self.world_file {
            Some(w) => format!("{} (hash {})", w.path.display(), w.hash),
            None => "no world file".into(),
        };
        format!(
            "{}: perennial {} (schema {}), world {world}, seed {}, agent {}, {} steps, {} -> {}, {}",
            self.run_id,
            self.perennial_version,
            self.schema_version,
            self.seed,
            self.agent,
            self.steps_done,
            self.started_at,
            self.ended_at.as_deref().unwrap_or("(not ended)"),
            self.exit_status
        )
    }
}

/// A 64-bit FNV-1a hash of `text`, as 16 hex digits: enough to tell world files apart
/// (the manifest keeps the full text for anything stronger). The same hash as
/// [`crate::output::content_hash`], which checkpoints store for the world file.
pub fn content_hash(text: &str) -> String {
    crate::output::content_hash(text.as_bytes())
}

/// The current time as RFC 3339 UTC with seconds, e.g. `2026-11-30T02:30:00Z`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Seconds since the Unix epoch as RFC 3339 UTC (the civil-from-days algorithm of Howard
/// Hinnant's date library).
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Each evaluated run's manifest: each trace's own is read once ([`Manifest::beside`]),
/// and a run none of them describes is looked up under its run id's name
/// ([`Manifest::find`]) beside each trace's folder, so the work grows with the traces, not
/// with their square.
fn manifests<'a>(
    paths: &[PathBuf],
    runs: &'a [crate::eval::RunReport],
) -> Vec<(&'a crate::eval::RunReport, Manifest)> {
    let mut by_run: std::collections::HashMap<String, Manifest> = Default::default();
    for p in paths {
        if let Some(m) = Manifest::beside(p) {
            by_run.entry(m.run_id.clone()).or_insert(m);
        }
    }
    // Older manifests, named after the run id: one read per run and folder, kept only when
    // it names one of the traces given.
    let mut folders: Vec<&Path> = Vec::new();
    for p in paths {
        if !folders.iter().any(|f| f.parent() == p.parent()) {
            folders.push(p);
        }
    }
    let names: std::collections::HashSet<_> = paths.iter().filter_map(|p| p.file_name()).collect();
    let legacy = |run_id: &str| {
        folders.iter().find_map(|p| {
            Manifest::read(&Manifest::legacy_path(p, run_id))
                .ok()
                .filter(|m| m.run_id == run_id)
                .filter(|m| {
                    m.trace
                        .as_ref()
                        .is_none_or(|t| t.file_name().is_some_and(|n| names.contains(n)))
                })
        })
    };
    runs.iter()
        .filter_map(|r| {
            by_run
                .remove(&r.run_id)
                .or_else(|| legacy(&r.run_id))
                .map(|m| (r, m))
        })
        .collect()
}

/// One summary line per evaluated run that has a manifest (see [`Manifest::summary`]).
pub fn manifest_summaries(paths: &[PathBuf], runs: &[crate::eval::RunReport]) -> Vec<String> {
    manifests(paths, runs)
        .iter()
        .map(|(_, m)| m.summary())
        .collect()
}

/// A warning per task whose runs came from different world-file texts (by their manifests'
/// hashes): comparing such runs compares different worlds.
pub fn manifest_warnings(paths: &[PathBuf], runs: &[crate::eval::RunReport]) -> Vec<String> {
    let mut by_task: std::collections::BTreeMap<&str, Vec<(&str, &str)>> = Default::default();
    let found = manifests(paths, runs);
    for (run, m) in &found {
        if let Some(w) = &m.world_file {
            by_task
                .entry(run.task.as_str())
                .or_default()
                .push((run.run_id.as_str(), w.hash.as_str()));
        }
    }
    by_task
        .into_iter()
        .filter(|(_, v)| v.iter().any(|(_, h)| *h != v[0].1))
        .map(|(task, v)| {
            let list: Vec<String> = v.iter().map(|(r, h)| format!("{r} ({h})")).collect();
            format!(
                "runs of task `{task}` came from different world-file contents: {}; their metrics compare different worlds (see each trace's manifest.json)",
                list.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_999_999), "2026-11-30T00:53:19Z");
    }

    #[test]
    fn equal_texts_hash_equal_and_different_texts_do_not() {
        assert_eq!(content_hash("a = 1\n"), content_hash("a = 1\n"));
        assert_ne!(content_hash("a = 1\n"), content_hash("a = 2\n"));
        assert_eq!(content_hash(""), "cbf29ce484222325");
    }
}
