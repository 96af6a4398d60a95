//! Traces: one row per step, written as JSON Lines (default), CSV or Parquet, and read back
//! streaming; and the events table beside each trace.
//!
//! A trace is the whole record of a run as far as evaluation is concerned: the metrics read
//! traces and nothing else. Each row carries exactly the columns of [`TraceRow`]; with
//! `--record-transitions` the observation the agent acted on (`obs`) and its `action` are
//! added. Rollout windows are never recorded.
//!
//! A run whose agent is told about regime shifts (a [`NotifyLevel`](crate::regime::NotifyLevel)
//! other than `none`) carries its level in one more identity column, `notify`, right after
//! `task`, in every format; at `none` the column is absent, so such traces keep the exact
//! columns and bytes they always had. Readers take a missing column as `none`.
//!
//! Writers render each row whole before handing it to the file, and write to the file only
//! in whole rows, so a run killed at any moment (even with SIGKILL) leaves a file of complete
//! rows, at most followed by one torn line that the reader reports and skips. The harness
//! flushes at every window boundary and at the end of the run.
//!
//! CSV flattens the component and payout maps into `c.<name>` and `p.<name>` columns (payout
//! cells are empty except on an episode's last step); `obs` and `action` are JSON text in
//! their cells.
//!
//! Parquet (`--format parquet`) writes the CSV columns, typed, as a directory of part files
//! `<run-id>.parquet/part-00000.parquet`, … each written whole and renamed into place;
//! `obs` (float32) and `action` (float64) are list columns. Strings are dictionary-encoded
//! and pages zstd-compressed. pyarrow, pandas and polars read the directory as one table.
//! Parts are cut at checkpoints, at the end of the run, when about [`PART_BYTES`] of rows
//! are buffered, and at a flush (window boundary) once [`PART_SECONDS`] (`--part-seconds`,
//! [`TraceSink::set_part_interval`]) have passed since the last part, so a killed run loses
//! at most that last second or so of rows; at zero, a part is cut at every flush and the
//! flush waits for it, so a killed run keeps what a JSON Lines run keeps. Parts are
//! encoded and written on a thread of the writer's own while the next one fills. A
//! checkpoint records the number of rows in finished parts, and `--resume` removes the
//! parts after it (rewriting only a part that straddles it), after checking that the trace
//! and its events table still hold the rows the checkpoint recorded.
//!
//! Beside every trace the harness writes the run's events table,
//! `<trace-stem>.events.<format>` in the trace's format: one row per regime shift, injected
//! failure ([`Env::drain_events`](crate::env::Env::drain_events)) and episode end, with the
//! columns [`EVENT_COLUMNS`]:
//!
//! | column | type | filled for | meaning |
//! |---|---|---|---|
//! | `run_id` | string | all | the run |
//! | `step` | u64 | all | the trace row the event belongs to |
//! | `event` | string | all | `regime_shift`, `failure` or `episode_end` |
//! | `from_regime`, `to_regime`, `origin` | string | shifts | label before, label after, cause |
//! | `kind`, `target`, `start`, `duration` | string, u64 | failures | what, which id (null for the whole world), world time started, how long |
//! | `episode`, `terminated`, `truncated` | u64, bool | episode ends | which episode ended, and how |
//!
//! Columns that do not apply are null (empty CSV cells). See [`EventWriter`] and
//! [`EventReader`].

mod csv_writer;
use csv_writer::CsvWriter;
mod digest;
pub(crate) use digest::Digest;
use jsonl::JsonlWriter;
mod error;
mod events;
mod jsonl;
pub mod l2logger;
mod line;
mod manifest;
mod parquet;
mod reader;
mod row;
mod sink;

pub use l2logger::{ExportedRun, L2LoggerOptions, export_l2logger};
pub use manifest::{
    Manifest, TRACE_SCHEMA_VERSION, WorldFileRecord, content_hash, manifest_summaries,
    manifest_warnings, utc_now,
};
pub(crate) use parquet::batch::{Columns, Projection};
pub use parquet::layout::{ACTION_KEY, MANIFEST_KEY};
pub(crate) use parquet::reader::ParquetSource;
pub use parquet::reader::parquet_manifest;
pub use parquet::schema::schema as parquet_schema;
pub use parquet::thread::{PART_SECONDS, part_interval};
pub use parquet::writer::PART_BYTES;

pub use error::{TornTail, TraceError};
pub use events::{
    EPISODE_END, EVENT_COLUMNS, EventReader, EventRow, EventWriter, FAILURE, FORK, PLASTICITY,
    Plasticity, REGIME_SHIFT, events_path, find_events, is_events_table,
};
pub use line::tail_hash;
use line::{LineSink, RowBuffer};
pub use reader::{Located, RowRef, Terms, TraceFormat, TraceReader};
pub use row::{BOUND, COLUMNS, ROLE_REWARDS, RecordedObs, RowRecord, RunIdentity, TraceRow};
pub use sink::{TraceColumns, TraceSink};

use std::fs::File;
use std::path::{Path, PathBuf};

/// Creates a trace file for `format`, with the run's identity and columns.
///
/// # Errors
///
/// The file cannot be created.
pub fn create(
    path: &Path,
    format: TraceFormat,
    identity: &RunIdentity,
    columns: &TraceColumns,
) -> Result<Box<dyn TraceSink>, TraceError> {
    if format == TraceFormat::Parquet {
        let next = fresh_parquet_dir(path)?;
        return Ok(Box::new(parquet::writer::ParquetWriter::new(
            path, identity, columns, next, 0,
        )?));
    }
    // Locked before it is emptied, so a second writer of the same path damages nothing.
    let file = crate::output::open_locked(path)?;
    file.set_len(0).map_err(|e| TraceError::io(path, e))?;
    let out = RowBuffer::new(file, path, 0, Digest::default());
    open_sink(out, format, identity, columns, true)
}

/// `paths` as an owned queue of files, read in the order given.
pub(crate) fn path_queue<P: AsRef<Path>>(paths: &[P]) -> std::vec::IntoIter<PathBuf> {
    let owned: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
    owned.into_iter()
}

/// The number of finished parts of the Parquet trace `dir`; 0 when it cannot be listed.
pub(crate) fn parquet_parts(dir: &Path) -> usize {
    parquet::layout::list_parts(dir).map_or(0, |p| p.parts.len())
}

/// The rows in the finished parts of the Parquet trace `dir`, from their footers; 0 when
/// it cannot be read yet.
pub(crate) fn parquet_rows(dir: &Path) -> u64 {
    parquet::layout::list_parts(dir)
        .map(|p| {
            p.parts
                .iter()
                .filter_map(|part| parquet::layout::part_rows(part).ok())
                .sum()
        })
        .unwrap_or(0)
}

/// The complete rows in the trace at `path`: a Parquet trace's finished parts, a line
/// trace's newline-ended lines (less a CSV's header); 0 when it cannot be read. Reads a
/// line trace whole, so it is for a run's end (a failed run's manifest), not its steps.
pub fn rows_on_disk(path: &Path, format: TraceFormat) -> u64 {
    use std::io::Read;
    if format == TraceFormat::Parquet {
        return parquet_rows(path);
    }
    let Ok(mut file) = File::open(path) else {
        return 0;
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut lines = 0u64;
    while let Ok(n) = file.read(&mut buf) {
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
    match format {
        TraceFormat::Csv => lines.saturating_sub(1),
        TraceFormat::Jsonl | TraceFormat::Parquet => lines,
    }
}

/// Makes `dir` an empty Parquet trace directory: creates it, or removes the part files a
/// previous run with the same path left (and nothing else). Returns the first part index.
fn fresh_parquet_dir(dir: &Path) -> Result<usize, TraceError> {
    if dir.exists() && !dir.is_dir() {
        return Err(TraceError::io(
            dir,
            std::io::Error::other(
                "a Parquet trace is a directory of part files, and this path is a file; choose another --trace path",
            ),
        ));
    }
    // A symlink to a folder is refused as a symlink to a file is: it would write elsewhere.
    crate::output::check_output_dir(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| TraceError::io(dir, e))?;
    // Only a previous trace's parts are replaced: a folder holding anything else is not a
    // trace directory, and nothing in it is removed.
    for entry in std::fs::read_dir(dir).map_err(|e| TraceError::io(dir, e))? {
        let name = entry
            .map_err(|e| TraceError::io(dir, e))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        let ours = (name.starts_with("part-") && name.ends_with(".parquet"))
            || (name.starts_with(".part-") && name.ends_with(".tmp"));
        if !ours {
            return Err(TraceError::io(
                dir,
                std::io::Error::other(format!(
                    "this folder holds `{name}`, which is not a part file of a Parquet trace; choose another --trace path (a new or trace-only folder)"
                )),
            ));
        }
    }
    parquet::resume::cut_back(dir, 0, "trace").map(|(next, _)| next)
}

/// Reopens a trace to continue a run from a checkpoint: the file is cut back to
/// `at_byte` (the length the checkpoint recorded, so rows written after the checkpoint are
/// dropped and will be written again) and rows are appended from there. For Parquet,
/// `at_byte` counts rows: the parts after it are removed.
///
/// For JSON Lines and CSV, `tail` (the checkpoint's [`TraceSink::tail`]) is required and
/// the line ending at `at_byte` must hash to it: a trace replaced, shortened or rewritten
/// since the checkpoint is refused before anything is cut. Parquet parts are written whole
/// and renamed into place, and record no tail.
///
/// # Errors
///
/// The file cannot be opened or locked, is shorter than `at_byte`, its row at `at_byte`
/// is not the checkpoint's, or it cannot be cut.
pub fn append(
    path: &Path,
    format: TraceFormat,
    identity: &RunIdentity,
    columns: &TraceColumns,
    at_byte: u64,
    tail: Option<&str>,
) -> Result<Box<dyn TraceSink>, TraceError> {
    if format == TraceFormat::Parquet {
        let (next, digest) = parquet::resume::cut_back(path, at_byte, "trace")?;
        let mut writer =
            parquet::writer::ParquetWriter::new(path, identity, columns, next, at_byte)?;
        writer.continue_digest(digest, next);
        return Ok(Box::new(writer));
    }
    if !path.exists() {
        return Err(TraceError::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the checkpoint's trace is missing; it cannot be resumed",
            ),
        ));
    }
    let Some(tail) = tail else {
        return Err(TraceError::io(
            path,
            std::io::Error::other(
                "the checkpoint records no hash of the trace's last row; it was edited, and cannot be resumed",
            ),
        ));
    };
    let file = crate::output::open_locked(path)?;
    verify_tail(&file, path, at_byte, Some(tail))?;
    let digest = Digest::of_prefix(&file, path, at_byte)?;
    file.set_len(at_byte).map_err(|e| TraceError::io(path, e))?;
    let mut file = file;
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(at_byte))
        .map_err(|e| TraceError::io(path, e))?;
    let out = RowBuffer::new(file, path, at_byte, digest);
    open_sink(out, format, identity, columns, at_byte == 0)
}

/// The digest of the first `at` of the table at `path` (bytes of a JSON Lines or CSV file,
/// rows of a Parquet directory, which must end a part), reading only: what
/// [`TraceSink::digest`] and [`EventWriter::digest`] returned when a checkpoint recorded
/// `at`. Nothing is read when `at` is 0.
///
/// # Errors
///
/// The table cannot be read, or holds less than `at`.
pub fn recorded_digest(path: &Path, format: TraceFormat, at: u64) -> Result<String, TraceError> {
    if at == 0 {
        return Ok(Digest::default().hex());
    }
    if format == TraceFormat::Parquet {
        return parquet::resume::parts_digest(path, at, "table");
    }
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    let len = file.metadata().map_err(|e| TraceError::io(path, e))?.len();
    if len < at {
        return Err(TraceError::io(
            path,
            std::io::Error::other(format!(
                "it holds {len} bytes but the checkpoint recorded {at}; it is not this checkpoint's (it was replaced or shortened since), and it was left untouched"
            )),
        ));
    }
    Digest::of_prefix(&file, path, at).map(|d| d.hex())
}

/// Checks that the output `out` of a command reading `traces` is none of their
/// companions: not an events table (`*.events.<format>`, a trace's own beside it), not a
/// run manifest (`*.manifest.json`), and not inside a Parquet trace's folder. `role` names
/// the output in the message.
///
/// # Errors
///
/// A message naming the output and what it would replace; nothing was written.
pub fn check_not_companion<P: AsRef<Path>>(
    role: &str,
    out: &Path,
    traces: &[P],
) -> Result<(), String> {
    let refuse = |what: String| {
        Err(format!(
            "{role} {}: {what}; give the output another path (nothing was written)",
            out.display()
        ))
    };
    if is_events_table(out) {
        return refuse(
            "is named as a trace's events table, which perennial writes beside its trace".into(),
        );
    }
    if out
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".manifest.json"))
    {
        return refuse(
            "is named as a run manifest, which perennial writes beside its trace".into(),
        );
    }
    let folder = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .canonicalize();
    for trace in traces {
        let trace = trace.as_ref();
        if trace.is_dir()
            && let (Ok(folder), Ok(trace_dir)) = (&folder, trace.canonicalize())
            && folder.starts_with(&trace_dir)
        {
            return refuse(format!(
                "is inside the Parquet trace {}, whose folder holds only its parts",
                trace.display()
            ));
        }
    }
    Ok(())
}

/// Checks, reading only, that the trace at `path` is one of the run `identity`: its first
/// row (when it has one) carries the run's identity columns and is step 0. A file that is
/// not a trace at all is refused, so a checkpoint naming it can never cut it.
///
/// # Errors
///
/// The first row cannot be read, or belongs to another run.
pub fn check_identity(path: &Path, identity: &RunIdentity) -> Result<(), TraceError> {
    let refuse = |why: String| {
        TraceError::io(
            path,
            std::io::Error::other(format!(
                "{why}; it is not the trace this checkpoint belongs to (run `{}`), and it was left untouched",
                identity.run_id
            )),
        )
    };
    let mut reader = TraceReader::open(&[path]);
    match reader.next_ref() {
        None => Ok(()),
        Some(Err(e)) => Err(refuse(format!("it is not a readable trace ({e})"))),
        Some(Ok(at)) => {
            let r = &at.row;
            let found = (
                r.run_id.as_ref(),
                r.seed,
                r.algorithm_id.as_ref(),
                r.task.as_ref(),
            );
            let want = (
                identity.run_id.as_str(),
                identity.seed,
                identity.algorithm_id.as_str(),
                identity.task.as_str(),
            );
            if found != want || r.notify != identity.notify {
                return Err(refuse(format!(
                    "its first row is of run `{}` (seed {}, agent `{}`, task `{}`, notify {})",
                    found.0, found.1, found.2, found.3, r.notify
                )));
            }
            if r.step != 0 {
                return Err(refuse(format!("its first row is step {}, not 0", r.step)));
            }
            Ok(())
        }
    }
}

/// Checks that `file` holds at least `at_byte` bytes and that its line ending there
/// hashes to `tail` (when given). Reads only; the file is left as it was.
///
/// # Errors
///
/// A message naming the file and what does not match.
pub fn verify_tail(
    file: &File,
    path: &Path,
    at_byte: u64,
    tail: Option<&str>,
) -> Result<(), TraceError> {
    let len = file.metadata().map_err(|e| TraceError::io(path, e))?.len();
    let refuse = |what: String| {
        TraceError::io(
            path,
            std::io::Error::other(format!(
                "{what}; it is not the trace this checkpoint belongs to (it was replaced, shortened or rewritten since), and it was left untouched"
            )),
        )
    };
    if len < at_byte {
        return Err(refuse(format!(
            "the trace holds {len} bytes but the checkpoint recorded {at_byte}"
        )));
    }
    if let Some(expected) = tail {
        let found = tail_hash(file, path, at_byte)?;
        if found != expected {
            return Err(refuse(format!(
                "the row ending at byte {at_byte} hashes to {found}, the checkpoint recorded {expected}"
            )));
        }
    }
    Ok(())
}

fn open_sink(
    out: RowBuffer,
    format: TraceFormat,
    identity: &RunIdentity,
    columns: &TraceColumns,
    fresh: bool,
) -> Result<Box<dyn TraceSink>, TraceError> {
    Ok(match format {
        TraceFormat::Jsonl => Box::new(LineSink {
            format: JsonlWriter::new(identity, columns),
            out,
        }),
        TraceFormat::Csv => {
            let mut sink = LineSink {
                format: CsvWriter::new(identity, columns),
                out,
            };
            if fresh {
                let head = csv_writer::header(columns, !identity.notify.is_none());
                sink.write_line(|_, buf| CsvWriter::encode_fields(&head, buf))?;
            }
            Box::new(sink)
        }
        TraceFormat::Parquet => {
            return Err(TraceError::io(
                &out.path,
                std::io::Error::other("a Parquet trace is written by its own writer"),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Scratch;
    use crate::regime::Origin;

    fn identity() -> RunIdentity {
        RunIdentity {
            run_id: "r\"1".into(),
            seed: 9,
            algorithm_id: "a".into(),
            task: "t".into(),
            notify: Default::default(),
        }
    }

    fn record(step: u64, payouts: &[f64]) -> RowRecord<'_> {
        RowRecord {
            step,
            episode: 0,
            episode_step: step,
            reward: 0.5 + payouts.iter().sum::<f64>(),
            components: &[0.25, 0.25],
            payouts,
            regime: "calm",
            origin: Origin::Initial,
            terminated: false,
            truncated: !payouts.is_empty(),
            ceiling: Some(2.0),
            bound: None,
            role_rewards: &[],
            obs: None,
            action_json: None,
            role_obs: &[],
            role_actions: &[],
        }
    }

    fn write(path: &Path, format: TraceFormat, rows: u64) {
        write_bounded(path, format, rows, false);
    }

    /// Writes `rows` rows; with `bound`, a `bound` column holding 1.5 in every row but the
    /// second, where it is null.
    fn write_bounded(path: &Path, format: TraceFormat, rows: u64, bound: bool) {
        let names = ["x".to_string(), "y".to_string()];
        let columns = TraceColumns {
            components: names.to_vec(),
            payouts: vec!["settle".to_string()],
            record_transitions: false,
            bound,
            roles: Vec::new(),
        };
        let mut sink = create(path, format, &identity(), &columns).unwrap();
        for s in 0..rows {
            let last = s + 1 == rows;
            sink.write_row(&RowRecord {
                bound: (bound && s != 1).then_some(1.5),
                ..record(s, if last { &[3.0] } else { &[] })
            })
            .unwrap();
        }
        sink.flush().unwrap();
    }

    #[test]
    fn rows_read_back_with_every_column() {
        for (name, format) in [
            ("rt.jsonl", TraceFormat::Jsonl),
            ("rt.csv", TraceFormat::Csv),
        ] {
            let (_dir, path) = Scratch::file(name);
            write(&path, format, 3);
            let rows: Vec<TraceRow> = TraceReader::open(&[&path])
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(rows.len(), 3);
            assert_eq!(rows[0].run_id, "r\"1");
            assert_eq!(rows[0].components["x"], 0.25);
            assert!(rows[0].payout.is_empty());
            assert_eq!(rows[2].payout["settle"], 3.0);
            assert_eq!(rows[2].reward, 3.5);
            assert_eq!(rows[2].reward_without_payout(), 0.5);
            assert_eq!(rows[1].ceiling, Some(2.0));
        }
    }

    #[test]
    fn the_bound_column_round_trips_in_every_format_and_is_absent_without_one() {
        for (name, format) in [
            ("b.jsonl", TraceFormat::Jsonl),
            ("b.csv", TraceFormat::Csv),
            ("b.parquet", TraceFormat::Parquet),
        ] {
            let (_dir, path) = Scratch::file(name);
            write_bounded(&path, format, 3, true);
            let rows: Vec<TraceRow> = TraceReader::open(&[&path])
                .collect::<Result<_, _>>()
                .unwrap();
            let bounds: Vec<Option<f64>> = rows.iter().map(|r| r.bound).collect();
            assert_eq!(bounds, [Some(1.5), None, Some(1.5)], "{name}");
            assert_eq!(rows[1].ceiling, Some(2.0), "{name}");
        }
        for (name, format) in [("n.jsonl", TraceFormat::Jsonl), ("n.csv", TraceFormat::Csv)] {
            let (_dir, path) = Scratch::file(name);
            write(&path, format, 2);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(!text.contains("bound"), "{name}: {text}");
            let rows: Vec<TraceRow> = TraceReader::open(&[&path])
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(rows.iter().all(|r| r.bound.is_none()), "{name}");
        }
        let (_dir, path) = Scratch::file("nan.jsonl");
        write_bounded(&path, TraceFormat::Jsonl, 2, true);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replacen("\"bound\":1.5", "\"bound\":\"high\"", 1),
        )
        .unwrap();
        let err = TraceReader::open(&[&path]).find_map(Result::err).unwrap();
        assert!(err.to_string().contains(":1:"), "{err}");
    }

    #[test]
    fn a_torn_last_line_is_reported_and_earlier_rows_are_kept() {
        let (_dir, path) = Scratch::file("torn.jsonl");
        write(&path, TraceFormat::Jsonl, 4);
        let mut bytes = std::fs::read(&path).unwrap();
        let full = bytes.len();
        bytes.truncate(full - 40);
        std::fs::write(&path, &bytes).unwrap();
        let mut reader = TraceReader::open(&[&path]);
        let rows: Vec<TraceRow> = (&mut reader).collect::<Result<_, _>>().unwrap();
        assert_eq!(rows.len(), 3);
        let torn = &reader.torn_tails()[0];
        assert_eq!(torn.line, 4);
        let line_start = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(2)
            .unwrap()
            .0
            + 1;
        assert_eq!(torn.byte_offset, line_start as u64);
        assert!(torn.to_string().contains("line 4"));
    }

    #[test]
    fn a_bad_complete_line_is_an_error_naming_file_and_line() {
        let (_dir, path) = Scratch::file("bad.jsonl");
        write(&path, TraceFormat::Jsonl, 3);
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replacen("\"regime\":", "\"regim\":", 2);
        std::fs::write(&path, text).unwrap();
        let err = TraceReader::open(&[&path]).find_map(Result::err).unwrap();
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("{}:1:", path.display())), "{msg}");
        assert!(msg.contains("regim"), "{msg}");
    }

    #[test]
    fn several_files_are_read_in_order() {
        let dir = Scratch::new("several");
        let (a, b) = (dir.join("a.jsonl"), dir.join("b.csv"));
        write(&a, TraceFormat::Jsonl, 2);
        write(&b, TraceFormat::Csv, 3);
        let n = TraceReader::open(&[&a, &b]).filter(|r| r.is_ok()).count();
        assert_eq!(n, 5);
    }
}
