//! Reading Parquet traces: a directory of part files (or one file), streamed batch by batch,
//! reading only the columns the caller needs.
//!
//! Rows come out as the line formats' rows do ([`RowRef`] borrowed from the current batch,
//! or an owned [`TraceRow`]); a position is the part file and the 1-based row within it.
//! A part the writer never finished (a hidden `.part-*.tmp`, or a last part whose footer is
//! missing) is reported as a torn tail, like a torn last line: every complete part is read.
//! Files written by other tools read as well when they have the trace columns (plain or
//! dictionary strings, unsigned or non-negative signed integers).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, UInt64Type};
use arrow_array::{Array, ArrayRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::{FileReader, SerializedFileReader};

use super::layout::{ACTION_KEY, MANIFEST_KEY, list_parts, not_parquet, part_number};
use crate::regime::{NotifyLevel, Origin};
use crate::trace::error::{TornTail, TraceError};
use crate::trace::reader::{Located, RowRef, Terms};
use crate::trace::row::{BOUND, ROLE_REWARDS, RecordedObs, TraceRow};

use super::batch::{
    Columns, Ints, Part, PartRun, Projection, Transitions, every, finite, number, required,
    schema_error, to_batch,
};

const BATCH_ROWS: usize = 1 << 16;

/// Refuses a directory of numbered parts (as perennial writes them, `part-00000.parquet`
/// on, one number after another) whose numbers do not start at 0 or skip one: a part was
/// deleted, and the rows read would be a run with its start or its middle cut out. A
/// directory with any other file names is another tool's and is read as it is.
fn check_numbering(dir: &Path, parts: &[PathBuf]) -> Result<(), TraceError> {
    let numbers: Option<Vec<u64>> = parts.iter().map(|p| part_number(p)).collect();
    let Some(numbers) = numbers else {
        return Ok(());
    };
    for (expected, (&n, path)) in (0u64..).zip(numbers.iter().zip(parts)) {
        if n != expected {
            let missing = dir.join(format!("part-{expected:05}.parquet"));
            let from = match expected {
                0 => "the trace's first part".to_string(),
                _ => format!("it comes before {}", path.display()),
            };
            return Err(TraceError::parse(
                &missing,
                0,
                format!(
                    "this part is missing ({from}): the trace's rows would skip the steps it held; restore the part from a copy, or rerun the run"
                ),
            ));
        }
    }
    Ok(())
}

/// True when the file at `path` ends with Parquet's closing magic `PAR1`, as every part
/// a writer finished does.
fn ends_with_magic(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut tail = [0u8; 4];
    File::open(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::End(-4))?;
            f.read_exact(&mut tail)
        })
        .is_ok_and(|()| &tail == b"PAR1")
}

/// The run manifest stored in a Parquet trace's metadata, if any: the first part's.
pub fn parquet_manifest(path: &Path) -> Result<Option<String>, TraceError> {
    let first = if path.is_dir() {
        match list_parts(path)?.parts.into_iter().next() {
            Some(p) => p,
            None => return Ok(None),
        }
    } else {
        path.to_path_buf()
    };
    let file = File::open(&first).map_err(|e| TraceError::io(&first, e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| not_parquet(&first, &e))?;
    Ok(reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == MANIFEST_KEY))
        .and_then(|kv| kv.value.clone()))
}

/// Streams the rows of one Parquet trace (a directory of parts or a single file).
pub(crate) struct ParquetSource {
    root: PathBuf,
    listed: bool,
    parts: VecDeque<PathBuf>,
    projection: Projection,
    part: Option<Part>,
    torn: Vec<TornTail>,
    done: bool,
    /// The first part's run (by its manifest) and path: every later part must be of it.
    first_run: Option<(PartRun, PathBuf)>,
}

impl ParquetSource {
    /// A source over `root` that decodes the columns of `projection`.
    pub(crate) fn open(root: PathBuf, projection: Projection) -> Self {
        ParquetSource {
            root,
            listed: false,
            parts: VecDeque::new(),
            projection,
            part: None,
            torn: Vec::new(),
            done: false,
            first_run: None,
        }
    }

    /// Parts the writer never finished, met so far.
    pub(crate) fn take_torn(&mut self) -> Vec<TornTail> {
        std::mem::take(&mut self.torn)
    }

    fn list(&mut self) -> Result<(), TraceError> {
        self.listed = true;
        if self.root.is_dir() {
            let parts = list_parts(&self.root)?;
            for tmp in parts.temps {
                self.torn.push(TornTail {
                    path: tmp,
                    line: 0,
                    byte_offset: 0,
                });
            }
            if parts.parts.is_empty() {
                return Err(TraceError::parse(
                    &self.root,
                    0,
                    "this Parquet trace directory holds no part files (part-NNNNN.parquet)",
                ));
            }
            check_numbering(&self.root, &parts.parts)?;
            self.parts = parts.parts.into();
        } else {
            self.parts.push_back(self.root.clone());
        }
        Ok(())
    }

    fn open_part(&self, path: &Path) -> Result<Part, TraceError> {
        let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| not_parquet(path, &e))?;
        let key = |key: &str| {
            builder
                .metadata()
                .file_metadata()
                .key_value_metadata()
                .and_then(|kv| kv.iter().find(|kv| kv.key == key))
                .and_then(|kv| kv.value.as_deref())
        };
        let action_scalar = key(ACTION_KEY) != Some("array");
        let run = key(MANIFEST_KEY).and_then(|m| serde_json::from_str::<PartRun>(m).ok());
        let schema = builder.schema().clone();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let mut wanted = Vec::new();
        for column in required() {
            match names.iter().position(|n| *n == column) {
                Some(i) if self.projection.reads(column) => wanted.push(i),
                Some(_) => {}
                None if column == "ceiling" => {}
                None => {
                    return Err(schema_error(
                        path,
                        format!(
                            "it has no column `{column}` (its columns: {})",
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        let mut components = Vec::new();
        let mut payouts = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if let Some(c) = name.strip_prefix("c.") {
                components.push(c.to_string());
                wanted.push(i);
            } else if let Some(p) = name.strip_prefix("p.") {
                payouts.push(p.to_string());
                wanted.push(i);
            } else if *name == "notify"
                || *name == BOUND
                || *name == ROLE_REWARDS
                || ((*name == "obs" || *name == "action") && self.projection.reads(name))
            {
                wanted.push(i);
            }
        }
        let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| not_parquet(path, &e))?;
        Ok(Part {
            path: path.to_path_buf(),
            reader,
            components,
            payouts,
            action_scalar,
            batch: None,
            row: 0,
            before: 0,
            run,
        })
    }

    /// Refuses a part whose manifest names another run than the first part's: a part of
    /// another trace copied in, whose rows would be read as this run's or as a run of
    /// their own.
    fn check_run(&mut self, part: &mut Part) -> Result<(), TraceError> {
        let Some(run) = part.run.take() else {
            return Ok(());
        };
        match &self.first_run {
            None => self.first_run = Some((run, part.path.clone())),
            Some((first, path)) if *first != run => {
                return Err(TraceError::parse(
                    &part.path,
                    0,
                    format!(
                        "this part is of run `{}` (seed {}, agent `{}`) but {} is of run `{}` (seed {}, agent `{}`): a part of another trace was put in this one; remove it",
                        run.run_id,
                        run.seed,
                        run.agent,
                        path.display(),
                        first.run_id,
                        first.seed,
                        first.agent
                    ),
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Moves to the next row; `None` when the trace is exhausted.
    pub(crate) fn advance(&mut self) -> Option<Result<(), TraceError>> {
        if self.done {
            return None;
        }
        let result = self.advance_inner();
        if !matches!(result, Some(Ok(()))) {
            self.done = true;
        }
        result
    }

    /// Moves past the rest of the current batch to the first row of the next one; `None`
    /// when the trace is exhausted. [`ParquetSource::batch`] then shows the new batch.
    pub(crate) fn advance_batch(&mut self) -> Option<Result<(), TraceError>> {
        if let Some(part) = self.part.as_mut()
            && let Some(b) = &part.batch
        {
            part.row = b.len.saturating_sub(1);
        }
        self.advance()
    }

    fn advance_inner(&mut self) -> Option<Result<(), TraceError>> {
        if !self.listed
            && let Err(e) = self.list()
        {
            return Some(Err(e));
        }
        loop {
            if let Some(part) = self.part.as_mut() {
                if let Some(b) = &part.batch
                    && part.row + 1 < b.len
                {
                    part.row += 1;
                    return Some(Ok(()));
                }
                if let Some(b) = part.batch.take() {
                    part.before += b.len as u64;
                }
                match part.reader.next() {
                    Some(Ok(batch)) => match to_batch(&batch, part) {
                        Ok(b) => {
                            part.row = 0;
                            if b.len > 0 {
                                part.batch = Some(b);
                                return Some(Ok(()));
                            }
                        }
                        Err(e) => return Some(Err(e)),
                    },
                    Some(Err(e)) => {
                        let at = part.before + 1;
                        return Some(Err(TraceError::parse(
                            &part.path,
                            at,
                            format!("the part cannot be decoded from this row on: {e}"),
                        )));
                    }
                    None => self.part = None,
                }
                continue;
            }
            let path = self.parts.pop_front()?;
            match self.open_part(&path) {
                Ok(mut p) => {
                    if let Err(e) = self.check_run(&mut p) {
                        return Some(Err(e));
                    }
                    self.part = Some(p);
                }
                // A directory's last part with no readable footer is what a writer killed
                // mid-part leaves if its temp file was renamed by hand or the disk lied: it
                // stops short of the closing magic. One that still ends with it was
                // complete and has been damaged since, an error like any other.
                Err(TraceError::Parse { line: 0, .. })
                    if self.parts.is_empty()
                        && self.root.is_dir()
                        && !ends_with_magic(&path)
                        && File::open(&path)
                            .ok()
                            .and_then(|f| SerializedFileReader::new(f).err())
                            .is_some() =>
                {
                    self.torn.push(TornTail {
                        path,
                        line: 0,
                        byte_offset: 0,
                    });
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Rows in the current batch (0 before the first).
    pub(crate) fn batch_len(&self) -> usize {
        self.part
            .as_ref()
            .and_then(|p| p.batch.as_ref())
            .map_or(0, |b| b.len)
    }

    /// The current batch as slices, when every row of it is valid (see [`Columns`]).
    pub(crate) fn columns(&self) -> Option<Columns<'_>> {
        let part = self.part.as_ref()?;
        let b = part.batch.as_ref()?;
        let origin_ok = |s: &str| Origin::parse(s).is_some();
        let uniform = b.run_id.uniform()
            && b.algorithm_id.uniform()
            && b.task.uniform()
            && b.notify
                .as_ref()
                .is_none_or(|n| n.uniform() && n.all(|s| s.parse::<NotifyLevel>().is_ok()));
        let seed = b.seed.unsigned()?;
        if !uniform
            || !every(seed, |&s| s == seed[0])
            || !b.origin.all(origin_ok)
            || !finite(&b.reward)
            || !b.components.iter().all(finite)
            || !b.payouts.iter().all(finite)
            || !b.ceiling.as_ref().is_none_or(finite)
            || !b.bound.as_ref().is_none_or(finite)
        {
            return None;
        }
        Some(Columns {
            len: b.len,
            step: b.step.unsigned()?,
            episode: b.episode.unsigned()?,
            reward: b.reward.values(),
            components: part
                .components
                .iter()
                .map(String::as_str)
                .zip(b.components.iter().map(|c| &c.values()[..]))
                .collect(),
            payouts: b.payouts.iter().collect(),
            ceiling: b.ceiling.as_ref(),
            bound: b.bound.as_ref(),
            regime: &b.regime,
        })
    }

    /// The current row, borrowed.
    pub(crate) fn row_ref(&self) -> Result<Located<'_>, TraceError> {
        let row = self.part.as_ref().map_or(0, |p| p.row);
        self.row_at(row)
    }

    /// Row `i` of the current batch, borrowed.
    pub(crate) fn row_at(&self, i: usize) -> Result<Located<'_>, TraceError> {
        let part = self
            .part
            .as_ref()
            .ok_or_else(|| TraceError::parse(&self.root, 0, "no current row"))?;
        let b = part
            .batch
            .as_ref()
            .filter(|b| i < b.len)
            .ok_or_else(|| TraceError::parse(&part.path, 0, "no current row"))?;
        let line = part.before + i as u64 + 1;
        let err = |m: String| TraceError::parse(&part.path, line, m);
        let int = |name: &str, col: &Ints| {
            col.get(i)
                .ok_or_else(|| err(format!("column `{name}` must be a non-negative integer")))
        };
        let real = |name: &str, v: f64| {
            if crate::limits::reward_in_range(v) {
                Ok(v)
            } else {
                Err(err(format!(
                    "column `{name}` holds {v}; rewards must be finite and within ±1e30 (perennial::limits::MAX_REWARD): the part is damaged or was not written by perennial"
                )))
            }
        };
        let mut components = Vec::with_capacity(b.components.len());
        for (name, col) in part.components.iter().zip(&b.components) {
            if col.is_null(i) {
                return Err(err(format!("column `c.{name}` is null")));
            }
            components.push((Cow::Borrowed(name.as_str()), real(name, col.value(i))?));
        }
        let mut payout = Vec::new();
        for (name, col) in part.payouts.iter().zip(&b.payouts) {
            if col.is_valid(i) {
                payout.push((Cow::Borrowed(name.as_str()), real(name, col.value(i))?));
            }
        }
        let text = b.origin.get(i);
        let origin = Origin::parse(text).ok_or_else(|| {
            err(format!(
                "column `regime_origin` holds `{text}`; expected initial, scheduled, stochastic or manual"
            ))
        })?;
        let ceiling = match &b.ceiling {
            Some(c) if c.is_valid(i) => Some(real("ceiling", c.value(i))?),
            _ => None,
        };
        let bound = match &b.bound {
            Some(c) if c.is_valid(i) => Some(real(BOUND, c.value(i))?),
            _ => None,
        };
        let mut role_rewards = Vec::with_capacity(b.role_rewards.len());
        for (name, col) in &b.role_rewards {
            if col.is_null(i) {
                return Err(err(format!("column `{ROLE_REWARDS}.{name}` is null")));
            }
            role_rewards.push((Cow::Borrowed(name.as_str()), real(name, col.value(i))?));
        }
        let notify = match &b.notify {
            None => NotifyLevel::None,
            Some(n) => n
                .get(i)
                .parse()
                .map_err(|e: String| err(format!("column `notify`: {e}")))?,
        };
        let row = RowRef {
            run_id: Cow::Borrowed(b.run_id.get(i)),
            seed: int("seed", &b.seed)?,
            algorithm_id: Cow::Borrowed(b.algorithm_id.get(i)),
            task: Cow::Borrowed(b.task.get(i)),
            notify,
            step: int("step", &b.step)?,
            episode: int("episode", &b.episode)?,
            episode_step: match &b.episode_step {
                Some(c) => int("episode_step", c)?,
                None => 0,
            },
            reward: real("reward", b.reward.value(i))?,
            components: Terms(components),
            payout: Terms(payout),
            regime: Cow::Borrowed(b.regime.get(i)),
            regime_origin: origin,
            terminated: b.terminated.as_ref().is_some_and(|c| c.value(i)),
            truncated: b.truncated.as_ref().is_some_and(|c| c.value(i)),
            ceiling,
            bound,
            role_rewards: Terms(role_rewards),
            _obs: b.obs.as_ref().map(|_| serde::de::IgnoredAny),
            _action: b.action.as_ref().map(|_| serde::de::IgnoredAny),
        };
        Ok(Located {
            path: &part.path,
            line,
            row,
        })
    }

    /// The current row, owned, with `obs` and `action` when they were read.
    pub(crate) fn row_owned(&self) -> Result<TraceRow, TraceError> {
        let at = self.row_ref()?;
        let r = &at.row;
        let (mut obs, mut action) = (None, None);
        if let Some(part) = &self.part
            && let Some(b) = &part.batch
        {
            let i = part.row;
            let wrong = |message| TraceError::parse(at.path, at.line, message);
            match &b.obs {
                Some(Transitions::List(list)) => {
                    obs = Some(RecordedObs::Flat(floats32(
                        &list.value(i),
                        at.path,
                        at.line,
                    )?));
                }
                Some(Transitions::Roles(roles)) => {
                    let mut views = std::collections::BTreeMap::new();
                    for (role, col) in roles {
                        let view = col.as_list_opt::<i32>().ok_or_else(|| {
                            wrong("column `obs` must be a struct of lists of float32")
                        })?;
                        views.insert(role.clone(), floats32(&view.value(i), at.path, at.line)?);
                    }
                    obs = Some(RecordedObs::Roles(views));
                }
                None => {}
            }
            match &b.action {
                Some(Transitions::List(list)) => {
                    let values = list.value(i);
                    let values = values
                        .as_primitive_opt::<Float64Type>()
                        .ok_or_else(|| wrong("column `action` must be a list of float64"))?;
                    let json: Vec<serde_json::Value> =
                        values.values().iter().map(|&v| number(v)).collect();
                    action = Some(match (part.action_scalar, json.as_slice()) {
                        (true, [one]) => one.clone(),
                        (true, []) => serde_json::Value::Null,
                        _ => serde_json::Value::Array(json),
                    });
                }
                Some(Transitions::Roles(roles)) => {
                    let mut indices = serde_json::Map::new();
                    for (role, col) in roles {
                        let col = col
                            .as_primitive_opt::<UInt64Type>()
                            .ok_or_else(|| wrong("column `action` must be a struct of uint64"))?;
                        indices.insert(role.clone(), col.value(i).into());
                    }
                    action = Some(serde_json::Value::Object(indices));
                }
                None => {}
            }
        }
        Ok(TraceRow {
            run_id: r.run_id.to_string(),
            seed: r.seed,
            algorithm_id: r.algorithm_id.to_string(),
            task: r.task.to_string(),
            notify: r.notify,
            step: r.step,
            episode: r.episode,
            episode_step: r.episode_step,
            reward: r.reward,
            components: r
                .components
                .iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            payout: r.payout.iter().map(|(k, v)| (k.to_string(), v)).collect(),
            regime: r.regime.to_string(),
            regime_origin: r.regime_origin,
            terminated: r.terminated,
            truncated: r.truncated,
            ceiling: r.ceiling,
            bound: r.bound,
            role_rewards: r
                .role_rewards
                .iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            obs,
            action,
        })
    }
}

/// A list of float32 as the f64s the JSON Lines trace reads back: each f32's shortest
/// decimal form, so both formats give the same rows.
fn floats32(values: &ArrayRef, path: &Path, line: u64) -> Result<Vec<f64>, TraceError> {
    let values = values
        .as_primitive_opt::<Float32Type>()
        .ok_or_else(|| TraceError::parse(path, line, "column `obs` must be a list of float32"))?;
    let mut text = ryu::Buffer::new();
    Ok(values
        .values()
        .iter()
        .map(|&v| {
            if v.is_finite() {
                text.format_finite(v).parse().unwrap_or(f64::from(v))
            } else {
                f64::from(v)
            }
        })
        .collect())
}
