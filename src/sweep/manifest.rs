//! `DIR/manifest.json`: what became of every run of a sweep, rewritten atomically, and
//! `DIR/manifest.journal`, the records of the runs started or ended since.
//!
//! Rewriting the whole manifest at every run's start and end would cost the square of the
//! runs (a 20,000-run sweep writes 10 MB per event). So each start and end appends the
//! run's record, one JSON line, to the journal, and the manifest is rewritten (and the
//! journal emptied) only now and then and at the end. Reading applies the journal's
//! records over the manifest's, so a sweep killed at any moment loses no record: a torn last
//! line, the one a kill cut, is ignored.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::SweepError;
use super::plan::PlannedRun;
use crate::trace::TraceFormat;

/// The version written in every manifest; another version is refused.
pub const MANIFEST_VERSION: u32 = 1;

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Not started yet.
    Pending,
    /// Started and not finished (or its sweep was killed: the next sweep resumes it).
    Running,
    /// Exited with code 0: its trace is complete.
    Done,
    /// Failed (after its retry, or at once with bad input); `error` says why.
    Failed,
}

/// One run's line in the manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// The run id.
    pub run_id: String,
    /// Where it stands.
    pub status: RunStatus,
    /// The last attempt's exit code (`null` before any, or when a signal ended it).
    pub exit_code: Option<i32>,
    /// Attempts made, over every invocation of the sweep.
    pub attempts: u32,
    /// Trace rows on disk when the manifest was written.
    pub steps_done: u64,
    /// The trace file.
    pub trace: PathBuf,
    /// The checkpoint file.
    pub checkpoint: PathBuf,
    /// The run's output (every attempt).
    pub log: PathBuf,
    /// Why the last attempt failed, when it did.
    pub error: Option<String>,
    /// The arguments that start the run: a manifest whose runs were started with other
    /// arguments belongs to another sweep.
    pub argv: Vec<String>,
}

/// The whole manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepManifest {
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// The sweep's name.
    pub sweep: String,
    /// The sweep file.
    pub sweep_file: PathBuf,
    /// One record per planned run, in plan order.
    pub runs: Vec<RunRecord>,
}

impl SweepManifest {
    /// The manifest file inside a sweep directory.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join("manifest.json")
    }

    /// The journal inside a sweep directory: run records appended since the manifest was
    /// last written whole (see the module doc).
    pub fn journal_in(dir: &Path) -> PathBuf {
        dir.join("manifest.journal")
    }

    /// The manifest for `runs`: the records in `dir/manifest.json` when there is one, with
    /// those of its journal applied over them, and a pending record for every run neither
    /// lists.
    ///
    /// # Errors
    ///
    /// The manifest cannot be read, is not a manifest of this version, or records a run
    /// with the same id but other arguments (the directory belongs to another sweep).
    pub fn load_or_new(
        dir: &Path,
        name: &str,
        sweep_file: &Path,
        runs: &[PlannedRun],
    ) -> Result<Self, SweepError> {
        let path = Self::path_in(dir);
        let old: Option<SweepManifest> = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let m: SweepManifest =
                    serde_json::from_str(&text).map_err(|e| SweepError::Manifest {
                        path: path.clone(),
                        message: format!(
                            "not a sweep manifest ({e}); remove it or give another --out"
                        ),
                    })?;
                if m.version != MANIFEST_VERSION {
                    return Err(SweepError::Manifest {
                        path,
                        message: format!(
                            "manifest version {} (this perennial writes {MANIFEST_VERSION}); give another --out",
                            m.version
                        ),
                    });
                }
                Some(m)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(SweepError::io(&path)(e)),
        };
        let mut kept: HashMap<String, RunRecord> = old
            .map(|m| m.runs.into_iter().map(|r| (r.run_id.clone(), r)).collect())
            .unwrap_or_default();
        for r in read_journal(&Self::journal_in(dir))? {
            kept.insert(r.run_id.clone(), r);
        }
        let mut records = Vec::with_capacity(runs.len());
        for run in runs {
            let kept = kept.remove(&run.run_id);
            match kept {
                Some(r) if r.argv != run.argv => {
                    return Err(SweepError::Manifest {
                        path,
                        message: format!(
                            "run `{}` was started with other options ({}); this directory \
                             belongs to another version of the sweep: give another --out",
                            run.run_id,
                            r.argv.join(" ")
                        ),
                    });
                }
                Some(r) => records.push(r),
                None => records.push(RunRecord {
                    run_id: run.run_id.clone(),
                    status: RunStatus::Pending,
                    exit_code: None,
                    attempts: 0,
                    steps_done: 0,
                    trace: run.trace.clone(),
                    checkpoint: run.checkpoint.clone(),
                    log: run.log.clone(),
                    error: None,
                    argv: run.argv.clone(),
                }),
            }
        }
        Ok(SweepManifest {
            version: MANIFEST_VERSION,
            sweep: name.to_string(),
            sweep_file: sweep_file.to_path_buf(),
            runs: records,
        })
    }

    /// Writes the manifest into `dir` atomically.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn write(&self, dir: &Path) -> Result<(), SweepError> {
        let mut json = serde_json::to_string_pretty(self)
            .expect("a manifest is made of strings, numbers and lists");
        json.push('\n');
        write_atomic(&Self::path_in(dir), json.as_bytes())
    }
}

/// Bytes a sweep's journal may hold (1 GiB): it is emptied whenever the manifest is
/// written, so even 100,000 runs' records over several attempts stay far below it.
const MAX_JOURNAL_BYTES: u64 = 1 << 30;

/// The records in the journal at `path`, in order; none when it does not exist. Reading
/// stops at the first line that is not a record (the torn last line of a killed sweep).
fn read_journal(path: &Path) -> Result<Vec<RunRecord>, SweepError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(Vec::new());
    }
    let bytes = crate::limits::read_regular(path, MAX_JOURNAL_BYTES, "a sweep's journal").map_err(
        |message| SweepError::Manifest {
            path: path.to_path_buf(),
            message,
        },
    )?;
    Ok(bytes
        .split(|&b| b == b'\n')
        .map_while(|line| serde_json::from_slice::<RunRecord>(line).ok())
        .collect())
}

/// The sweep's journal, open for appending (see the module doc).
pub(crate) struct Journal {
    file: File,
    path: PathBuf,
}

impl Journal {
    /// Opens the journal of `dir`, emptied: call it right after the manifest was written
    /// whole, so the manifest holds every record the journal held.
    pub(crate) fn open_empty(dir: &Path) -> Result<Self, SweepError> {
        let path = SweepManifest::journal_in(dir);
        let file = crate::output::open_append(&path)?;
        let mut journal = Journal { file, path };
        journal.clear()?;
        Ok(journal)
    }

    /// Appends `rec` as one line, in one write: a kill leaves at most that line torn. Not
    /// synced: what a killed process wrote is in the page cache and read back; after a
    /// power loss the manifest's older records only make the next sweep resume those runs
    /// from their checkpoints.
    pub(crate) fn record(&mut self, rec: &RunRecord) -> Result<(), SweepError> {
        let mut line = serde_json::to_vec(rec).expect("a record is strings and numbers");
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(SweepError::io(&self.path))
    }

    /// Empties the journal; call it right after the manifest was written whole.
    pub(crate) fn clear(&mut self) -> Result<(), SweepError> {
        self.file.set_len(0).map_err(SweepError::io(&self.path))
    }

    /// Removes the journal of `dir` when the manifest was written whole for the last time.
    pub(crate) fn remove(dir: &Path) -> Result<(), SweepError> {
        let path = SweepManifest::journal_in(dir);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SweepError::io(&path)(e)),
            _ => Ok(()),
        }
    }
}

/// Writes `bytes` to `path` the way SQLite would ([`crate::output::write_atomic`]: a temp
/// file beside it that no symlink redirects, fsync, rename, fsync of the directory).
/// Refuses to replace anything that is not a regular file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    crate::output::write_atomic(path, bytes).map_err(SweepError::from)
}

/// Counts complete trace rows as a file grows, reading only the bytes added since the last
/// call (and starting over when the file shrank: a resumed run cut it back).
#[derive(Clone, Debug, Default)]
pub(crate) struct RowCounter {
    offset: u64,
    newlines: u64,
}

impl RowCounter {
    /// Complete rows in `path` now.
    pub(crate) fn rows(&mut self, path: &Path, format: TraceFormat) -> u64 {
        if format == TraceFormat::Parquet {
            return crate::trace::parquet_rows(path);
        }
        let Ok(mut file) = std::fs::File::open(path) else {
            *self = RowCounter::default();
            return 0;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            *self = RowCounter::default();
        }
        if file.seek(SeekFrom::Start(self.offset)).is_ok() {
            let mut buf = [0u8; 64 * 1024];
            while let Ok(n) = file.read(&mut buf) {
                if n == 0 {
                    break;
                }
                self.newlines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
                self.offset += n as u64;
            }
        }
        match format {
            TraceFormat::Jsonl => self.newlines,
            TraceFormat::Csv | TraceFormat::Parquet => self.newlines.saturating_sub(1),
        }
    }
}

/// The message of a run's last failed attempt: the last `error:` line it printed after the
/// log's last attempt header, else its last line, else how it ended.
/// The end of a run's log that [`failure_message`] reads.
const LOG_TAIL_BYTES: u64 = 1 << 20;

pub(crate) fn failure_message(log: &Path, exit_code: Option<i32>) -> String {
    let mut last = None;
    let mut last_error = None;
    // A log replaced by a FIFO or a device is not read at all.
    let regular = crate::output::check_output(log).is_ok();
    if let Ok(file) = std::fs::File::open(log)
        .map_err(drop)
        .and_then(|f| if regular { Ok(f) } else { Err(()) })
    {
        // Only the log's end: a run's last attempt is there, and a log replaced by
        // `/dev/zero` or grown huge is never read whole.
        let len = file.metadata().map_or(0, |m| m.len());
        let mut file = file;
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)));
        for line in BufReader::new(file.take(LOG_TAIL_BYTES))
            .lines()
            .map_while(Result::ok)
        {
            let line = line.trim();
            if line.starts_with(super::ATTEMPT_HEADER) {
                (last, last_error) = (None, None);
            } else if let Some(msg) = line.strip_prefix("error:") {
                last_error = Some(msg.trim().to_string());
                last = Some(line.to_string());
            } else if !line.is_empty() {
                last = Some(line.to_string());
            }
        }
    }
    last_error.or(last).unwrap_or_else(|| match exit_code {
        Some(code) => format!("exited with code {code} and printed nothing"),
        None => "ended by a signal".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Scratch;

    #[test]
    fn rows_are_counted_incrementally_and_recounted_after_a_cut() {
        let (_dir, p) = Scratch::file("t.csv");
        std::fs::write(&p, "h\n1\n2\n3").unwrap();
        let mut c = RowCounter::default();
        assert_eq!(c.rows(&p, TraceFormat::Csv), 2);
        std::fs::write(&p, "h\n1\n2\n3\n4\n").unwrap();
        assert_eq!(c.rows(&p, TraceFormat::Csv), 4);
        std::fs::write(&p, "h\n1\n").unwrap();
        assert_eq!(c.rows(&p, TraceFormat::Csv), 1);
        assert_eq!(c.rows(&p, TraceFormat::Jsonl), 2);
    }

    #[test]
    fn the_failure_message_is_the_last_error_line_of_the_attempt() {
        let dir = Scratch::new("log");
        let p = dir.join("r.log");
        let h = crate::sweep::ATTEMPT_HEADER;
        std::fs::write(&p, format!("{h} 1: run\nerror: old attempt\n{h} 2: run\nprogress\nerror: unknown agent `x`\nmore\n")).unwrap();
        assert_eq!(failure_message(&p, Some(2)), "unknown agent `x`");
        std::fs::write(&p, format!("{h} 1: run\nerror: old attempt\n{h} 2: run\n")).unwrap();
        assert_eq!(failure_message(&p, None), "ended by a signal");
        assert_eq!(
            failure_message(&dir.join("none"), Some(1)),
            "exited with code 1 and printed nothing"
        );
    }

    #[test]
    fn atomic_writes_refuse_to_replace_a_directory() {
        let dir = Scratch::new("atomic");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        assert!(write_atomic(&dir.join("sub"), b"x").is_err());
        write_atomic(&dir.join("f"), b"x").unwrap();
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"x");
    }
}
