//! The events table: one row per exogenous event of a run, written beside its trace.
//!
//! A run's trace says what the agent saw and earned; its events table says what happened
//! to it from outside, as rows of their own rather than something to infer from labels:
//! regime shifts (the scheduler), injected failures (the world, through
//! [`Env::drain_events`](crate::env::Env::drain_events)) and episode ends (the env); and,
//! for a neural agent, its [`Plasticity`] diagnostics after each window's update. It is
//! `<trace-stem>.events.<format>` beside the trace ([`events_path`]; for the default trace
//! path `runs/<run-id>.<format>` that is `runs/<run-id>.events.<format>`), in the trace's
//! format: JSON Lines, CSV, or a directory of Parquet part files like the trace's. Every
//! row has every column ([`EVENT_COLUMNS`]); the ones that do not apply to its `event`
//! are null (empty in CSV).
//!
//! `step` is the trace row the event belongs to: a shift's first row under the new label,
//! the row of the step that injected a failure, an episode's last row, a window's last row.
//! Rows are in step order; within a step a shift comes first, then failures in the world's
//! order, then the episode end, then the plasticity diagnostics.
//!
//! The writer keeps whole rows only, flushes with the trace and is synced at every
//! checkpoint; a checkpoint records its length (bytes, or rows for Parquet) and `--resume`
//! cuts the table back to it, so a killed and resumed run writes the same events as an
//! uninterrupted one. [`EventReader`] streams a table back and reports what it cannot read
//! (a torn last line, a half-written part, a line that is not an event) instead of failing.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use serde::{Deserialize, Serialize};

use super::parquet::layout::part_name;
use super::parquet::pages::zstd_level;
use super::parquet::resume::{check_rows, cut_back};
use super::parquet::thread::{PartCadence, PartThread, place_part, sync_parts};
use super::{TraceError, TraceFormat};
use crate::env::WorldEvent;
use crate::regime::{Origin, Scheduler};

/// The columns of the events table, in order.
pub const EVENT_COLUMNS: [&str; 13] = [
    "run_id",
    "step",
    "event",
    "from_regime",
    "to_regime",
    "origin",
    "kind",
    "target",
    "start",
    "duration",
    "episode",
    "terminated",
    "truncated",
];

/// `event` of a regime shift.
pub const REGIME_SHIFT: &str = "regime_shift";
/// `event` of an injected failure.
pub const FAILURE: &str = "failure";
/// `event` of an episode end.
pub const EPISODE_END: &str = "episode_end";
/// `event` of a fork's first step: `kind` is the run it was forked from, `start` the
/// step, `target` the rollout's index in the fork.
pub const FORK: &str = "fork";
/// `event` of a neural agent's plasticity diagnostics after the update at the end of a
/// rollout window (its last step): `kind` holds the four numbers of [`Plasticity`] as
/// `name=value` pairs ([`EventRow::plasticity`]).
pub const PLASTICITY: &str = "plasticity";

/// What a neural agent's network looks like after an update, against loss of plasticity
/// (Sokar et al. 2023; Kumar et al. 2021; Dohare et al. 2024).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plasticity {
    /// Fraction of the hidden units that are τ-dormant on the window's inputs: a unit whose
    /// mean absolute activation is at most τ times its layer's average.
    pub dormant_fraction: f64,
    /// Effective rank `srank_δ` of the last hidden layer's activations over the window: the
    /// fewest singular values that sum to `1 − δ` of their total.
    pub effective_rank: f64,
    /// L2 norm of the network's weights and biases.
    pub weight_norm: f64,
    /// L2 norm of the loss gradient, the mean over the update's minibatches.
    pub grad_norm: f64,
}

impl Plasticity {
    /// The names of the four numbers, in the order of the fields.
    pub const NAMES: [&str; 4] = [
        "dormant_fraction",
        "effective_rank",
        "weight_norm",
        "grad_norm",
    ];

    /// The four numbers, in the order of [`Plasticity::NAMES`].
    pub fn values(&self) -> [f64; 4] {
        [
            self.dormant_fraction,
            self.effective_rank,
            self.weight_norm,
            self.grad_norm,
        ]
    }

    fn from_values(v: [f64; 4]) -> Self {
        Plasticity {
            dormant_fraction: v[0],
            effective_rank: v[1],
            weight_norm: v[2],
            grad_norm: v[3],
        }
    }
}

/// One row of the events table; the columns that do not apply to `event` are `None`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRow {
    /// The run.
    pub run_id: String,
    /// The trace row the event belongs to.
    pub step: u64,
    /// [`REGIME_SHIFT`], [`FAILURE`], [`EPISODE_END`] or [`FORK`].
    pub event: String,
    /// Shift: the label before.
    pub from_regime: Option<String>,
    /// Shift: the label after.
    pub to_regime: Option<String>,
    /// Shift: what caused it (`scheduled`, `stochastic`, `manual`).
    pub origin: Option<String>,
    /// Failure: its kind (e.g. `dock_breakdown`). Fork: the source run id.
    pub kind: Option<String>,
    /// Failure: the id of the thing hit; `None` for a failure of the whole world. Fork:
    /// the rollout's index.
    pub target: Option<u64>,
    /// Failure: world time it started (the enterprise world's hour). Fork: the step.
    pub start: Option<u64>,
    /// Failure: how long it lasts, in world time.
    pub duration: Option<u64>,
    /// Episode end: the episode that ended.
    pub episode: Option<u64>,
    /// Episode end: the env said terminal.
    pub terminated: Option<bool>,
    /// Episode end: the env imposed a cutoff.
    pub truncated: Option<bool>,
}

impl EventRow {
    fn blank(run_id: &str, step: u64, event: &str) -> Self {
        EventRow {
            run_id: run_id.to_string(),
            step,
            event: event.to_string(),
            from_regime: None,
            to_regime: None,
            origin: None,
            kind: None,
            target: None,
            start: None,
            duration: None,
            episode: None,
            terminated: None,
            truncated: None,
        }
    }

    /// A regime shift from `from` to `to` before the step `step`.
    pub fn shift(run_id: &str, step: u64, from: &str, to: &str, origin: Origin) -> Self {
        EventRow {
            from_regime: Some(from.to_string()),
            to_regime: Some(to.to_string()),
            origin: Some(origin.as_str().to_string()),
            ..Self::blank(run_id, step, REGIME_SHIFT)
        }
    }

    /// The shift `scheduler` has just made from the label `from`, before the step `step`.
    pub fn shift_made(run_id: &str, step: u64, from: &str, scheduler: &Scheduler) -> Self {
        Self::shift(run_id, step, from, scheduler.label(), scheduler.origin())
    }

    /// A failure the world injected during the step `step`.
    pub fn failure(run_id: &str, step: u64, e: &WorldEvent) -> Self {
        EventRow {
            kind: Some(e.kind.clone()),
            target: e.target,
            start: Some(e.start),
            duration: Some(e.duration),
            ..Self::blank(run_id, step, FAILURE)
        }
    }

    /// The end of episode `episode` on the step `step`.
    pub fn episode_end(
        run_id: &str,
        step: u64,
        episode: u64,
        terminated: bool,
        truncated: bool,
    ) -> Self {
        EventRow {
            episode: Some(episode),
            terminated: Some(terminated),
            truncated: Some(truncated),
            ..Self::blank(run_id, step, EPISODE_END)
        }
    }

    /// The first step `step` of run `run_id`, rollout `k` of a fork of run
    /// `source_run_id` at that step.
    pub fn fork(run_id: &str, step: u64, source_run_id: &str, k: u64) -> Self {
        EventRow {
            kind: Some(source_run_id.to_string()),
            target: Some(k),
            start: Some(step),
            ..Self::blank(run_id, step, FORK)
        }
    }

    /// A neural agent's diagnostics after the update that ended at step `step`. The numbers
    /// are written in `kind` as `name=value` pairs, shortest round-trip decimals, so the
    /// table keeps its columns (and every other run's table its bytes).
    ///
    /// ```
    /// use perennial::trace::{EventRow, Plasticity};
    ///
    /// let p = Plasticity { dormant_fraction: 0.125, effective_rank: 37.0, weight_norm: 12.5, grad_norm: 0.25 };
    /// let row = EventRow::plasticity("run", 255, &p);
    /// assert_eq!(row.kind.as_deref(), Some("dormant_fraction=0.125 effective_rank=37 weight_norm=12.5 grad_norm=0.25"));
    /// assert_eq!(row.plasticity_values(), Some(p));
    /// ```
    pub fn plasticity(run_id: &str, step: u64, p: &Plasticity) -> Self {
        let text = Plasticity::NAMES
            .iter()
            .zip(p.values())
            .map(|(name, v)| format!("{name}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        EventRow {
            kind: Some(text),
            ..Self::blank(run_id, step, PLASTICITY)
        }
    }

    /// The diagnostics of a [`PLASTICITY`] row; `None` for another event, or a `kind` that
    /// does not hold the four numbers.
    pub fn plasticity_values(&self) -> Option<Plasticity> {
        if self.event != PLASTICITY {
            return None;
        }
        let mut values = [0.0; 4];
        let mut pairs = self.kind.as_deref()?.split(' ');
        for (name, v) in Plasticity::NAMES.iter().zip(&mut values) {
            let (key, text) = pairs.next()?.split_once('=')?;
            if key != *name {
                return None;
            }
            *v = text.parse().ok()?;
        }
        pairs
            .next()
            .is_none()
            .then(|| Plasticity::from_values(values))
    }

    /// What the row says besides its step, in a few words (for tables).
    pub fn detail(&self) -> String {
        let s = |o: &Option<String>| o.as_deref().unwrap_or("-").to_string();
        match self.event.as_str() {
            REGIME_SHIFT => format!(
                "{} -> {} ({})",
                s(&self.from_regime),
                s(&self.to_regime),
                s(&self.origin)
            ),
            FAILURE => format!(
                "{} target {} start {} duration {}",
                s(&self.kind),
                self.target.map_or("-".into(), |t| t.to_string()),
                self.start.map_or("-".into(), |t| t.to_string()),
                self.duration.map_or("-".into(), |t| t.to_string()),
            ),
            PLASTICITY => s(&self.kind),
            FORK => format!(
                "rollout {} of {} at step {}",
                self.target.map_or("-".into(), |t| t.to_string()),
                s(&self.kind),
                self.start.map_or("-".into(), |t| t.to_string()),
            ),
            _ => format!(
                "episode {} terminated {} truncated {}",
                self.episode.map_or("-".into(), |t| t.to_string()),
                self.terminated.unwrap_or(false),
                self.truncated.unwrap_or(false),
            ),
        }
    }
}

/// Where the events table of the run traced to `trace` in `format` lives: beside the
/// trace, named after it, `<trace-stem>.events.<extension>`; for the default trace path
/// `runs/<run-id>.<format>` that is `runs/<run-id>.events.<format>`. Named after the trace
/// rather than the run id, so two traces of one run id in one folder never share a table.
pub fn events_path(trace: &Path, format: TraceFormat) -> PathBuf {
    let stem = trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    trace.with_file_name(format!("{stem}.events.{}", format.extension()))
}

/// The events table beside `trace`, if there is one: in the trace's own format first, then
/// in the others.
pub fn find_events(trace: &Path) -> Option<PathBuf> {
    let own = TraceFormat::from_path(trace);
    [
        own,
        TraceFormat::Jsonl,
        TraceFormat::Csv,
        TraceFormat::Parquet,
    ]
    .into_iter()
    .map(|f| events_path(trace, f))
    // A FIFO or device there would block or never end: only a file or a Parquet folder.
    .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() || m.is_dir()))
}

/// Whether `path` is named as an events table (`*.events.jsonl`, `.csv`, `.parquet`).
pub fn is_events_table(path: &Path) -> bool {
    path.file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.ends_with(".events"))
        && path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            ["jsonl", "csv", "parquet"]
                .iter()
                .any(|k| e.eq_ignore_ascii_case(k))
        })
}

/// Rows a Parquet part holds at most.
const PART_ROWS: usize = 1 << 16;
/// Bytes of JSON Lines / CSV buffered before they go to the file.
const FLUSH_BYTES: usize = 1 << 16;

fn schema() -> Schema {
    let s = |n: &str| Field::new(n, DataType::Utf8, true);
    let u = |n: &str| Field::new(n, DataType::UInt64, true);
    let b = |n: &str| Field::new(n, DataType::Boolean, true);
    Schema::new(vec![
        Field::new("run_id", DataType::Utf8, false),
        Field::new("step", DataType::UInt64, false),
        Field::new("event", DataType::Utf8, false),
        s("from_regime"),
        s("to_regime"),
        s("origin"),
        s("kind"),
        u("target"),
        u("start"),
        u("duration"),
        u("episode"),
        b("terminated"),
        b("truncated"),
    ])
}

enum Out {
    Lines {
        file: File,
        buf: Vec<u8>,
        written: u64,
        csv: bool,
    },
    Parquet {
        rows: Box<EventColumns>,
        /// The other row buffer, back from the part thread; `None` while its part is in
        /// flight.
        spare: Option<Box<EventColumns>>,
        parts: PartThread<EventPart>,
        next_part: usize,
        rows_done: u64,
        cadence: PartCadence,
    },
}

/// One part of a Parquet events table on its way to the part thread.
struct EventPart {
    rows: Box<EventColumns>,
    index: usize,
    /// Fsynced, with the parts before it ([`place_part`]).
    durable: bool,
}

/// No text: a null cell.
const NO_TEXT: u32 = u32::MAX;

/// One buffered event, its texts as keys into [`EventColumns::texts`].
struct Compact {
    step: u64,
    /// `run_id`, `event`, `from_regime`, `to_regime`, `origin`, `kind`.
    texts: [u32; 6],
    /// `target`, `start`, `duration`, `episode`.
    numbers: [Option<u64>; 4],
    /// `terminated`, `truncated`.
    flags: [Option<bool>; 2],
}

/// A Parquet events table's buffered rows: each distinct text is held once, so an event
/// costs no allocation (a random CartPole agent ends an episode every 22 steps or so).
#[derive(Default)]
struct EventColumns {
    rows: Vec<Compact>,
    texts: Vec<String>,
    keys: HashMap<String, u32>,
    /// Each text column's last key.
    last: [u32; 6],
}

impl EventColumns {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn clear(&mut self) {
        self.rows.clear();
        self.texts.clear();
        self.keys.clear();
        self.last = [NO_TEXT; 6];
    }

    /// The key of `text` in column `column`: the column's last key when it holds the same
    /// text (the run id, and the event name of a run of episode ends), else hashed.
    fn key(&mut self, column: usize, text: Option<&str>) -> u32 {
        let Some(text) = text else {
            return NO_TEXT;
        };
        let last = self.last[column];
        if self.text(last) == Some(text) {
            return last;
        }
        let k = match self.keys.get(text) {
            Some(&k) => k,
            None => {
                let k = self.texts.len() as u32;
                self.texts.push(text.to_string());
                self.keys.insert(text.to_string(), k);
                k
            }
        };
        self.last[column] = k;
        k
    }

    fn push(&mut self, row: &EventView<'_>) {
        let texts = [
            self.key(0, Some(row.run_id)),
            self.key(1, Some(row.event)),
            self.key(2, row.from_regime),
            self.key(3, row.to_regime),
            self.key(4, row.origin),
            self.key(5, row.kind),
        ];
        self.rows.push(Compact {
            step: row.step,
            texts,
            numbers: [row.target, row.start, row.duration, row.episode],
            flags: [row.terminated, row.truncated],
        });
    }

    fn text(&self, k: u32) -> Option<&str> {
        self.texts.get(k as usize).map(String::as_str)
    }
}

/// An event borrowed: what [`EventWriter`] writes, whether from an [`EventRow`] or from
/// the harness's arguments, so an event written in a hot loop allocates nothing. It
/// serializes as [`EventRow`] does.
#[derive(Serialize)]
struct EventView<'a> {
    run_id: &'a str,
    step: u64,
    event: &'a str,
    from_regime: Option<&'a str>,
    to_regime: Option<&'a str>,
    origin: Option<&'a str>,
    kind: Option<&'a str>,
    target: Option<u64>,
    start: Option<u64>,
    duration: Option<u64>,
    episode: Option<u64>,
    terminated: Option<bool>,
    truncated: Option<bool>,
}

impl EventRow {
    fn view(&self) -> EventView<'_> {
        EventView {
            run_id: &self.run_id,
            step: self.step,
            event: &self.event,
            from_regime: self.from_regime.as_deref(),
            to_regime: self.to_regime.as_deref(),
            origin: self.origin.as_deref(),
            kind: self.kind.as_deref(),
            target: self.target,
            start: self.start,
            duration: self.duration,
            episode: self.episode,
            terminated: self.terminated,
            truncated: self.truncated,
        }
    }
}

/// Writes `part` into the table `dir` as its part file (temp file and rename, fsynced
/// when the part is durable: [`place_part`]), returns the rows written and leaves the
/// part's buffer empty.
fn write_part(
    dir: &Path,
    schema: &SchemaRef,
    part: &mut EventPart,
    unsynced: &mut Vec<PathBuf>,
) -> Result<u64, TraceError> {
    if part.rows.is_empty() {
        return if part.durable {
            sync_parts(dir, unsynced).map(|()| 0)
        } else {
            Ok(0)
        };
    }
    let name = part_name(part.index);
    let tmp = dir.join(format!(".{name}.tmp"));
    let err =
        |e: &dyn std::fmt::Display| TraceError::io(&tmp, std::io::Error::other(e.to_string()));
    let batch = to_batch(schema, &part.rows).map_err(|e| err(&e))?;
    let n = part.rows.len() as u64;
    part.rows.clear();
    // Nothing reads the statistics of an events table.
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(zstd_level()))
        .set_statistics_enabled(EnabledStatistics::None)
        .build();
    let mut file = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
    let mut writer =
        ArrowWriter::try_new(&mut file, schema.clone(), Some(props)).map_err(|e| err(&e))?;
    writer.write(&batch).map_err(|e| err(&e))?;
    writer.close().map_err(|e| err(&e))?;
    place_part(dir, file, &tmp, &dir.join(&name), part.durable, unsynced)?;
    Ok(n)
}

/// Writes a run's events table (see the module docs).
pub struct EventWriter {
    path: PathBuf,
    out: Out,
    /// The digest of what is in the table ([`EventWriter::digest`]); for Parquet, of the
    /// parts before `hashed`.
    digest: super::Digest,
    hashed: usize,
}

impl EventWriter {
    /// Creates the table at `path` in `format`, replacing a previous run's.
    ///
    /// # Errors
    ///
    /// The file cannot be created (or is not a regular file), or the Parquet directory
    /// holds something other than part files.
    pub fn create(path: &Path, format: TraceFormat) -> Result<Self, TraceError> {
        if format == TraceFormat::Parquet {
            let next = super::fresh_parquet_dir(path)?;
            return Self::parquet(path, next, 0, super::Digest::default());
        }
        let file = crate::output::open_locked(path)?;
        file.set_len(0).map_err(|e| TraceError::io(path, e))?;
        Self::lines(path, format, file, 0, super::Digest::default())
    }

    /// Whether the table at `path` can continue from a checkpoint that recorded `at` (bytes;
    /// rows in finished parts for Parquet), without touching it: a resume checks this before
    /// it cuts the trace.
    ///
    /// # Errors
    ///
    /// The table holds less than the checkpoint recorded (it is not this checkpoint's), or,
    /// for Parquet, its directory or a finished part cannot be read.
    pub fn check_append(path: &Path, format: TraceFormat, at: u64) -> Result<(), TraceError> {
        if at == 0 {
            return Ok(());
        }
        if format == TraceFormat::Parquet {
            return check_rows(path, at, "events table");
        }
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        if len < at {
            return Err(TraceError::io(
                path,
                std::io::Error::other(format!(
                    "the events table holds {len} bytes but the checkpoint recorded {at}; it is not this checkpoint's (it was replaced or shortened since), and it was left untouched"
                )),
            ));
        }
        Ok(())
    }

    /// Reopens the table at `path` to continue a run from a checkpoint that recorded
    /// `at` (bytes; rows for Parquet): everything after it is removed.
    ///
    /// # Errors
    ///
    /// The table cannot be opened, or holds less than the checkpoint recorded (it is not
    /// this checkpoint's, and is left untouched).
    pub fn append(path: &Path, format: TraceFormat, at: u64) -> Result<Self, TraceError> {
        if format == TraceFormat::Parquet {
            if at == 0 && !path.exists() {
                return Self::create(path, format);
            }
            let (next, digest) = cut_back(path, at, "events table")?;
            return Self::parquet(path, next, at, digest);
        }
        Self::check_append(path, format, at)?;
        let mut file = crate::output::open_locked(path)?;
        let digest = super::Digest::of_prefix(&file, path, at)?;
        file.set_len(at).map_err(|e| TraceError::io(path, e))?;
        file.seek(std::io::SeekFrom::Start(at))
            .map_err(|e| TraceError::io(path, e))?;
        Self::lines(path, format, file, at, digest)
    }

    fn parquet(
        path: &Path,
        next_part: usize,
        rows_done: u64,
        digest: super::Digest,
    ) -> Result<Self, TraceError> {
        let (dir, schema): (PathBuf, SchemaRef) = (path.to_path_buf(), Arc::new(schema()));
        let mut unsynced = Vec::new();
        let parts = PartThread::spawn(path, move |part: &mut EventPart| {
            write_part(&dir, &schema, part, &mut unsynced)
        })?;
        Ok(EventWriter {
            path: path.to_path_buf(),
            out: Out::Parquet {
                rows: Box::default(),
                spare: None,
                parts,
                next_part,
                rows_done,
                cadence: PartCadence::default(),
            },
            digest,
            hashed: next_part,
        })
    }

    fn lines(
        path: &Path,
        format: TraceFormat,
        file: File,
        written: u64,
        digest: super::Digest,
    ) -> Result<Self, TraceError> {
        let csv = format == TraceFormat::Csv;
        let mut buf = Vec::with_capacity(FLUSH_BYTES * 2);
        if csv && written == 0 {
            buf.extend(EVENT_COLUMNS.join(",").bytes());
            buf.push(b'\n');
        }
        Ok(EventWriter {
            path: path.to_path_buf(),
            out: Out::Lines {
                file,
                buf,
                written,
                csv,
            },
            digest,
            hashed: 0,
        })
    }

    /// The table's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event.
    ///
    /// # Errors
    ///
    /// An I/O error of the file.
    pub fn write(&mut self, row: EventRow) -> Result<(), TraceError> {
        self.write_view(&row.view())
    }

    /// Appends the end of episode `episode` on the step `step`: the row
    /// [`EventRow::episode_end`] makes, written without building it.
    ///
    /// # Errors
    ///
    /// An I/O error of the file.
    pub fn episode_end(
        &mut self,
        run_id: &str,
        step: u64,
        episode: u64,
        terminated: bool,
        truncated: bool,
    ) -> Result<(), TraceError> {
        // Empty strings allocate nothing.
        let blank = EventRow::blank("", step, "");
        let mut row = blank.view();
        row.run_id = run_id;
        row.event = EPISODE_END;
        row.episode = Some(episode);
        row.terminated = Some(terminated);
        row.truncated = Some(truncated);
        self.write_view(&row)
    }

    fn write_view(&mut self, row: &EventView<'_>) -> Result<(), TraceError> {
        let full = match &mut self.out {
            Out::Lines { buf, csv, .. } => {
                if *csv {
                    csv_line(buf, row);
                } else {
                    // A row of strings, integers and booleans always serializes.
                    let _ = serde_json::to_writer(&mut *buf, row);
                    buf.push(b'\n');
                }
                buf.len() >= FLUSH_BYTES
            }
            Out::Parquet { rows, .. } => {
                rows.push(row);
                rows.len() >= PART_ROWS
            }
        };
        if full {
            match self.out {
                Out::Lines { .. } => self.drain()?,
                Out::Parquet { .. } => self.cut_part(false)?,
            }
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<(), TraceError> {
        if let Out::Lines {
            file, buf, written, ..
        } = &mut self.out
            && !buf.is_empty()
        {
            file.write_all(buf)
                .map_err(|e| TraceError::io(&self.path, e))?;
            *written += buf.len() as u64;
            self.digest.update(buf);
            buf.clear();
        }
        Ok(())
    }

    /// Takes back the buffer of the part in flight, waiting for it when `block`.
    fn collect(&mut self, block: bool) -> Result<(), TraceError> {
        let Out::Parquet {
            spare,
            parts,
            rows_done,
            ..
        } = &mut self.out
        else {
            return Ok(());
        };
        let finished = if block { parts.wait()? } else { parts.poll()? };
        if let Some((part, rows)) = finished {
            *rows_done += rows;
            *spare = Some(part.rows);
        }
        Ok(())
    }

    /// Hands the buffered rows to the part thread as the next part; a `durable` one (a
    /// sync's, handed over even without rows) is fsynced with every part before it.
    fn cut_part(&mut self, durable: bool) -> Result<(), TraceError> {
        if let Out::Parquet { rows, .. } = &self.out
            && rows.is_empty()
            && !durable
        {
            return Ok(());
        }
        self.collect(true)?;
        let Out::Parquet {
            rows,
            spare,
            parts,
            next_part,
            cadence,
            ..
        } = &mut self.out
        else {
            return Ok(());
        };
        cadence.cut();
        let next = spare.take().unwrap_or_default();
        let empty = rows.is_empty();
        let part = EventPart {
            rows: std::mem::replace(rows, next),
            index: *next_part,
            durable,
        };
        parts.send(part)?;
        if !empty {
            *next_part += 1;
        }
        Ok(())
    }

    /// Hands whole rows to the file (JSON Lines, CSV), or cuts a Parquet part when one is
    /// due ([`EventWriter::set_part_interval`]); called with the trace's flush.
    ///
    /// # Errors
    ///
    /// An I/O error of the file.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        match &self.out {
            Out::Lines { .. } => self.drain(),
            Out::Parquet { cadence, .. } => {
                let (due, waits) = (cadence.due(), cadence.waits());
                self.collect(false)?;
                if due {
                    self.cut_part(false)?;
                    if waits {
                        self.collect(true)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// How often a flush cuts a Parquet part: as the trace's
    /// ([`TraceSink::set_part_interval`](super::TraceSink::set_part_interval)). JSON Lines and CSV ignore it.
    pub fn set_part_interval(&mut self, every: Duration) {
        if let Out::Parquet { cadence, .. } = &mut self.out {
            cadence.every = every;
        }
    }

    /// Makes every event written so far durable and returns the table's length: bytes,
    /// or rows in finished parts for Parquet. What a checkpoint records.
    ///
    /// # Errors
    ///
    /// An I/O error of the file.
    pub fn sync(&mut self) -> Result<u64, TraceError> {
        if matches!(self.out, Out::Parquet { .. }) {
            self.cut_part(true)?;
            self.collect(true)?;
        } else {
            self.drain()?;
        }
        match &self.out {
            Out::Lines { file, written, .. } => {
                file.sync_data()
                    .map_err(|e| TraceError::io(&self.path, e))?;
                Ok(*written)
            }
            Out::Parquet {
                rows_done,
                next_part,
                ..
            } => {
                let new: Vec<PathBuf> = (self.hashed..*next_part)
                    .map(|i| self.path.join(part_name(i)))
                    .collect();
                self.digest.add_parts(&new)?;
                self.hashed = *next_part;
                Ok(*rows_done)
            }
        }
    }

    /// The digest of the table up to the length [`EventWriter::sync`] just returned (see
    /// [`super::recorded_digest`]): what a checkpoint records with that length.
    pub fn digest(&self) -> String {
        self.digest.hex()
    }

    /// Writes out everything still buffered; called when the run ends.
    ///
    /// # Errors
    ///
    /// An I/O error of the file.
    pub fn close(&mut self) -> Result<(), TraceError> {
        self.sync().map(|_| ())
    }
}

impl Drop for EventWriter {
    fn drop(&mut self) {
        // Best effort: every row before the last explicit flush is already in the file.
        let _ = match self.out {
            Out::Lines { .. } => self.drain(),
            Out::Parquet { .. } => self.cut_part(true).and_then(|()| self.collect(true)),
        };
    }
}

fn csv_cell(out: &mut Vec<u8>, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend(text.replace('"', "\"\"").bytes());
        out.push(b'"');
    } else {
        out.extend(text.bytes());
    }
}

fn csv_line(out: &mut Vec<u8>, r: &EventView<'_>) {
    let mut num = itoa::Buffer::new();
    csv_cell(out, r.run_id);
    out.push(b',');
    out.extend(num.format(r.step).bytes());
    for text in [Some(r.event), r.from_regime, r.to_regime, r.origin, r.kind] {
        out.push(b',');
        if let Some(t) = text {
            csv_cell(out, t);
        }
    }
    for n in [r.target, r.start, r.duration, r.episode] {
        out.push(b',');
        if let Some(n) = n {
            out.extend(num.format(n).bytes());
        }
    }
    for b in [r.terminated, r.truncated] {
        out.push(b',');
        if let Some(b) = b {
            out.extend(if b { &b"true"[..] } else { &b"false"[..] });
        }
    }
    out.push(b'\n');
}

fn to_batch(
    schema: &SchemaRef,
    cols: &EventColumns,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let rows = &cols.rows;
    let text = |i: usize| -> ArrayRef {
        Arc::new(
            rows.iter()
                .map(|r| cols.text(r.texts[i]))
                .collect::<StringArray>(),
        )
    };
    let num = |i: usize| -> ArrayRef {
        Arc::new(rows.iter().map(|r| r.numbers[i]).collect::<UInt64Array>())
    };
    let flag = |i: usize| -> ArrayRef {
        Arc::new(rows.iter().map(|r| r.flags[i]).collect::<BooleanArray>())
    };
    RecordBatch::try_new(
        schema.clone(),
        vec![
            text(0),
            Arc::new(rows.iter().map(|r| r.step).collect::<UInt64Array>()),
            text(1),
            text(2),
            text(3),
            text(4),
            text(5),
            num(0),
            num(1),
            num(2),
            num(3),
            flag(0),
            flag(1),
        ],
    )
}

/// Streams an events table back, one row at a time, in any of the three formats (by the
/// path, as [`TraceFormat::from_path`]). What it cannot read is reported by
/// [`EventReader::problems`] and skipped, never an error: a torn last line or a
/// half-written Parquet part (a killed writer), a line that is not an event, a file that
/// is not an events table.
///
/// # Examples
///
/// ```no_run
/// use perennial::trace::EventReader;
///
/// let mut events = EventReader::open("runs/warehouse-random-seed0.events.jsonl");
/// for e in &mut events {
///     println!("{} {} {}", e.step, e.event, e.detail());
/// }
/// for p in events.problems() {
///     eprintln!("warning: {p}");
/// }
/// ```
pub struct EventReader {
    path: PathBuf,
    source: Source,
    problems: Vec<String>,
}

enum Source {
    Lines {
        lines: BufReader<File>,
        line: u64,
        csv: Option<csv::StringRecord>,
    },
    Parquet {
        parts: std::collections::VecDeque<PathBuf>,
        batch: Option<(RecordBatch, usize)>,
        reader: Option<(
            PathBuf,
            parquet::arrow::arrow_reader::ParquetRecordBatchReader,
        )>,
    },
    Done,
}

impl EventReader {
    /// Opens the table at `path`; a file that cannot be opened is a problem and yields no
    /// rows.
    pub fn open(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref().to_path_buf();
        let mut problems = Vec::new();
        let source = match TraceFormat::from_path(&path) {
            TraceFormat::Parquet => match super::parquet::layout::list_parts(&path) {
                Ok(p) => Source::Parquet {
                    parts: p.parts.into(),
                    batch: None,
                    reader: None,
                },
                Err(e) => {
                    problems.push(format!("{e}; no events read"));
                    Source::Done
                }
            },
            format => match File::open(&path) {
                Ok(f) => Source::Lines {
                    lines: BufReader::new(f),
                    line: 0,
                    csv: (format == TraceFormat::Csv).then(csv::StringRecord::new),
                },
                Err(e) => {
                    problems.push(format!("{}: {e}; no events read", path.display()));
                    Source::Done
                }
            },
        };
        EventReader {
            path,
            source,
            problems,
        }
    }

    /// What could not be read so far, one message per problem naming the file (and line).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    fn next_line(&mut self) -> Option<EventRow> {
        let Source::Lines { lines, line, csv } = &mut self.source else {
            return None;
        };
        let limit = crate::limits::MAX_TRACE_LINE_BYTES as u64;
        loop {
            let mut buf = Vec::new();
            let n = match std::io::Read::take(&mut *lines, limit + 1).read_until(b'\n', &mut buf) {
                Ok(n) => n,
                Err(e) => {
                    self.problems.push(format!(
                        "{}: {e}; the events after it were not read",
                        self.path.display()
                    ));
                    self.source = Source::Done;
                    return None;
                }
            };
            if n == 0 {
                self.source = Source::Done;
                return None;
            }
            *line += 1;
            let at = *line;
            let complete = buf.last() == Some(&b'\n');
            if !complete && n as u64 > limit {
                self.problems.push(format!(
                    "{}: line {at} is longer than {limit} bytes; it is not an events table, and the events after it were not read",
                    self.path.display()
                ));
                self.source = Source::Done;
                return None;
            }
            let parsed = match csv {
                Some(header) => parse_csv(&buf, header, at),
                None => serde_json::from_slice::<EventRow>(&buf)
                    .map(Some)
                    .map_err(|e| e.to_string()),
            };
            match parsed {
                Ok(Some(row)) => return Some(row),
                Ok(None) => continue,
                Err(why) if !complete => {
                    self.problems.push(format!(
                        "{}: line {at} is torn (the writer was killed mid-row; {why}); every complete event before it was read",
                        self.path.display()
                    ));
                }
                Err(why) => {
                    self.problems.push(format!(
                        "{}: line {at} is not an event ({why}); it was skipped",
                        self.path.display()
                    ));
                }
            }
        }
    }

    fn next_parquet(&mut self) -> Option<EventRow> {
        loop {
            let Source::Parquet {
                parts,
                batch,
                reader,
            } = &mut self.source
            else {
                return None;
            };
            if let Some((b, i)) = batch {
                if *i < b.num_rows() {
                    let row = row_of(b, *i);
                    *i += 1;
                    match row {
                        Ok(r) => return Some(r),
                        Err(why) => {
                            let part = reader.as_ref().map_or(&self.path, |(p, _)| p);
                            self.problems
                                .push(format!("{}: {why}; this part was skipped", part.display()));
                            *batch = None;
                            *reader = None;
                            continue;
                        }
                    }
                }
                *batch = None;
            }
            if let Some((part, r)) = reader {
                match r.next() {
                    Some(Ok(b)) => {
                        *batch = Some((b, 0));
                        continue;
                    }
                    Some(Err(e)) => {
                        self.problems.push(format!(
                            "{}: {e}; the rest of this part was skipped",
                            part.display()
                        ));
                    }
                    None => {}
                }
                *reader = None;
            }
            let part = parts.pop_front()?;
            let opened = File::open(&part)
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| e.to_string())
                })
                .and_then(|b| b.with_batch_size(8192).build().map_err(|e| e.to_string()));
            match opened {
                Ok(r) => *reader = Some((part, r)),
                Err(why) => self.problems.push(format!(
                    "{}: a torn, half-written or foreign part ({why}); it was skipped and every other part was read",
                    part.display()
                )),
            }
        }
    }
}

impl Iterator for EventReader {
    type Item = EventRow;

    fn next(&mut self) -> Option<EventRow> {
        match self.source {
            Source::Lines { .. } => self.next_line(),
            Source::Parquet { .. } => {
                let row = self.next_parquet();
                if row.is_none() {
                    self.source = Source::Done;
                }
                row
            }
            Source::Done => None,
        }
    }
}

/// One CSV line: `Ok(None)` for the header (which it records), the row otherwise.
fn parse_csv(
    line: &[u8],
    header: &mut csv::StringRecord,
    at: u64,
) -> Result<Option<EventRow>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line);
    let mut record = csv::StringRecord::new();
    if !reader.read_record(&mut record).map_err(|e| e.to_string())? {
        return Err("an empty line".into());
    }
    if at == 1 {
        if record.iter().ne(EVENT_COLUMNS) {
            return Err(format!(
                "the header is not the events table's ({})",
                EVENT_COLUMNS.join(",")
            ));
        }
        *header = record;
        return Ok(None);
    }
    if record.len() != EVENT_COLUMNS.len() {
        return Err(format!(
            "{} cells where the events table has {}",
            record.len(),
            EVENT_COLUMNS.len()
        ));
    }
    record
        .deserialize::<EventRow>(Some(header))
        .map(Some)
        .map_err(|e| e.to_string())
}

fn row_of(b: &RecordBatch, i: usize) -> Result<EventRow, String> {
    let col = |name: &str| {
        b.column_by_name(name)
            .ok_or_else(|| format!("no `{name}` column; it is not an events table"))
    };
    // The column `name` as an array of type `T`, or an error saying it is not `what`.
    fn typed<'b, T: 'static>(
        c: Result<&'b ArrayRef, String>,
        name: &str,
        what: &str,
    ) -> Result<&'b T, String> {
        c?.as_any()
            .downcast_ref::<T>()
            .ok_or_else(|| format!("column `{name}` is not {what}"))
    }
    let text = |name: &str| -> Result<Option<String>, String> {
        let a = typed::<StringArray>(col(name), name, "text")?;
        Ok(a.is_valid(i).then(|| a.value(i).to_string()))
    };
    let num = |name: &str| -> Result<Option<u64>, String> {
        let a = typed::<UInt64Array>(col(name), name, "an unsigned integer")?;
        Ok(a.is_valid(i).then(|| a.value(i)))
    };
    let flag = |name: &str| -> Result<Option<bool>, String> {
        let a = typed::<BooleanArray>(col(name), name, "boolean")?;
        Ok(a.is_valid(i).then(|| a.value(i)))
    };
    let needed = |v: Option<String>, name: &str| v.ok_or_else(|| format!("a null `{name}`"));
    Ok(EventRow {
        run_id: needed(text("run_id")?, "run_id")?,
        step: num("step")?.ok_or("a null `step`")?,
        event: needed(text("event")?, "event")?,
        from_regime: text("from_regime")?,
        to_regime: text("to_regime")?,
        origin: text("origin")?,
        kind: text("kind")?,
        target: num("target")?,
        start: num("start")?,
        duration: num("duration")?,
        episode: num("episode")?,
        terminated: flag("terminated")?,
        truncated: flag("truncated")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Scratch;

    fn rows() -> Vec<EventRow> {
        let failure = WorldEvent {
            kind: "dock_breakdown".into(),
            target: Some(2),
            start: 5,
            duration: 3,
        };
        vec![
            EventRow::shift("r,1", 3, "calm", "storm \"x\"", Origin::Scheduled),
            EventRow::failure("r,1", 5, &failure),
            EventRow::episode_end("r,1", 9, 0, false, true),
        ]
    }

    #[test]
    fn every_format_reads_back_the_rows_written() {
        for format in [TraceFormat::Jsonl, TraceFormat::Csv, TraceFormat::Parquet] {
            let (_dir, path) = Scratch::file(&format!("rt.events.{}", format.extension()));
            let mut w = EventWriter::create(&path, format).unwrap();
            for r in rows() {
                w.write(r).unwrap();
            }
            w.close().unwrap();
            drop(w);
            let mut reader = EventReader::open(&path);
            let back: Vec<EventRow> = (&mut reader).collect();
            assert!(reader.problems().is_empty(), "{:?}", reader.problems());
            assert_eq!(back, rows(), "{format:?}");
        }
    }

    #[test]
    fn append_cuts_back_to_the_recorded_length() {
        for format in [TraceFormat::Jsonl, TraceFormat::Csv, TraceFormat::Parquet] {
            let (_dir, path) = Scratch::file(&format!("cut.events.{}", format.extension()));
            let mut w = EventWriter::create(&path, format).unwrap();
            let all = rows();
            w.write(all[0].clone()).unwrap();
            let at = w.sync().unwrap();
            w.write(all[1].clone()).unwrap();
            w.close().unwrap();
            drop(w);
            let mut w = EventWriter::append(&path, format, at).unwrap();
            w.write(all[2].clone()).unwrap();
            w.close().unwrap();
            drop(w);
            let back: Vec<EventRow> = EventReader::open(&path).collect();
            assert_eq!(back, vec![all[0].clone(), all[2].clone()], "{format:?}");
        }
    }

    #[test]
    fn a_torn_last_line_is_reported_and_earlier_events_are_kept() {
        let (_dir, path) = Scratch::file("torn.events.jsonl");
        let mut w = EventWriter::create(&path, TraceFormat::Jsonl).unwrap();
        for r in rows() {
            w.write(r).unwrap();
        }
        w.close().unwrap();
        drop(w);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 10);
        std::fs::write(&path, bytes).unwrap();
        let mut reader = EventReader::open(&path);
        assert_eq!((&mut reader).count(), 2);
        assert!(
            reader.problems()[0].contains("line 3 is torn"),
            "{:?}",
            reader.problems()
        );
    }
}
