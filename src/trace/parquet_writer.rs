//! The Parquet trace writer: a directory of part files, each written whole and renamed into
//! place, so a killed run leaves only complete parts.
//!
//! Layout: `<run-id>.parquet/part-00000.parquet`, `part-00001.parquet`, … Every part holds
//! the DESIGN columns (components and payouts flattened to `c.<name>` / `p.<name>` as CSV
//! does; payout cells are null except on an episode's last step), strings dictionary-encoded,
//! zstd-compressed, `step` and `episode_step` delta-encoded. A part is written to a hidden
//! `.part-NNNNN.parquet.tmp`, synced, renamed, and the directory synced (the way SQLite
//! writes); pyarrow, pandas and polars skip hidden files, so they read the directory as one
//! table at any moment.
//!
//! Rows wait in column buffers (reused from part to part) until a part is cut: when the
//! buffers reach [`PART_BYTES`], at a flush when [`PART_SECONDS`] have passed since the last
//! part, at every [`TraceSink::sync`] (checkpoints) and when the run ends. A run killed with
//! SIGKILL therefore loses at most the rows of the last second or so, where a JSON Lines run
//! loses at most one window; a checkpointed run loses nothing, since `--resume` rewrites
//! from the checkpoint.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::builder::{Float32Builder, Float64Builder, ListBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, RecordBatch, StringArray,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::row::{RowRecord, RunIdentity};
use super::{TraceError, TraceSink};
use crate::regime::Origin;

/// Raw column bytes buffered before a part is cut (bounds the writer's memory).
pub const PART_BYTES: usize = 32 << 20;

/// A flush cuts a part when this long has passed since the last one.
pub const PART_SECONDS: u64 = 1;

/// The key under which each part's file metadata holds the run manifest (JSON).
pub const MANIFEST_KEY: &str = "perennial.manifest";

/// The key under which each part's file metadata says how `action` reads back: `scalar`
/// (one number per row) or `array`.
pub const ACTION_KEY: &str = "perennial.action";

const ORIGINS: [&str; 4] = ["initial", "scheduled", "stochastic", "manual"];

fn origin_key(o: Origin) -> i32 {
    match o {
        Origin::Initial => 0,
        Origin::Scheduled => 1,
        Origin::Stochastic => 2,
        Origin::Manual => 3,
    }
}

fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// `schema` with a `notify` column after `task` when the run's level is not `none`.
fn with_notify(schema: Schema, identity: &RunIdentity) -> Schema {
    if identity.notify.is_none() {
        return schema;
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.insert(4, Field::new("notify", dict_type(), false));
    Schema::new(fields)
}

/// The Arrow schema of a trace with these reward term names.
pub fn schema(components: &[String], payouts: &[String], record_transitions: bool) -> Schema {
    let mut fields = vec![
        Field::new("run_id", dict_type(), false),
        Field::new("seed", DataType::UInt64, false),
        Field::new("algorithm_id", dict_type(), false),
        Field::new("task", dict_type(), false),
        Field::new("step", DataType::UInt64, false),
        Field::new("episode", DataType::UInt64, false),
        Field::new("episode_step", DataType::UInt64, false),
        Field::new("reward", DataType::Float64, false),
    ];
    fields.extend(
        components
            .iter()
            .map(|c| Field::new(format!("c.{c}"), DataType::Float64, false)),
    );
    fields.extend(
        payouts
            .iter()
            .map(|p| Field::new(format!("p.{p}"), DataType::Float64, true)),
    );
    fields.extend([
        Field::new("regime", dict_type(), false),
        Field::new("regime_origin", dict_type(), false),
        Field::new("terminated", DataType::Boolean, false),
        Field::new("truncated", DataType::Boolean, false),
        Field::new("ceiling", DataType::Float64, true),
    ]);
    if record_transitions {
        fields.push(Field::new(
            "obs",
            DataType::List(Arc::new(Field::new("item", DataType::Float32, true))),
            false,
        ));
        fields.push(Field::new(
            "action",
            DataType::List(Arc::new(Field::new("item", DataType::Float64, true))),
            false,
        ));
    }
    Schema::new(fields)
}

/// The writer properties every part uses: zstd, dictionaries for the strings and the
/// (often repeating) rewards, delta encoding for the counters.
fn properties(metadata: Vec<KeyValue>) -> WriterProperties {
    let level = ZstdLevel::try_new(3).unwrap_or_default();
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_key_value_metadata(Some(metadata));
    for counter in ["step", "episode", "episode_step"] {
        let path = ColumnPath::from(counter);
        b = b
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
    }
    b.build()
}

/// Rows waiting for the next part, one buffer per column.
#[derive(Default)]
struct Columns {
    step: Vec<u64>,
    episode: Vec<u64>,
    episode_step: Vec<u64>,
    reward: Vec<f64>,
    components: Vec<Vec<f64>>,
    payouts: Vec<Vec<f64>>,
    payout_valid: Vec<bool>,
    regime: Vec<i32>,
    origin: Vec<i32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    ceiling: Vec<f64>,
    ceiling_valid: Vec<bool>,
    obs: Vec<f32>,
    obs_ends: Vec<usize>,
    action: Vec<f64>,
    action_ends: Vec<usize>,
}

impl Columns {
    fn len(&self) -> usize {
        self.step.len()
    }

    fn clear(&mut self) {
        self.step.clear();
        self.episode.clear();
        self.episode_step.clear();
        self.reward.clear();
        self.components.iter_mut().for_each(Vec::clear);
        self.payouts.iter_mut().for_each(Vec::clear);
        self.payout_valid.clear();
        self.regime.clear();
        self.origin.clear();
        self.terminated.clear();
        self.truncated.clear();
        self.ceiling.clear();
        self.ceiling_valid.clear();
        self.obs.clear();
        self.obs_ends.clear();
        self.action.clear();
        self.action_ends.clear();
    }
}

/// Writes a trace as a directory of Parquet part files.
pub(crate) struct ParquetWriter {
    dir: PathBuf,
    schema: SchemaRef,
    identity: RunIdentity,
    record_transitions: bool,
    /// Regime labels in order of first appearance: the dictionary of the `regime` column.
    regimes: Vec<String>,
    cols: Columns,
    /// Rows a part holds at most ([`PART_BYTES`] over the row's raw size).
    part_rows: usize,
    next_part: usize,
    /// Rows in finished parts.
    rows_done: u64,
    last_part: Instant,
    manifest: Option<String>,
    /// `scalar` or `array`, from the first action written.
    action_kind: Option<&'static str>,
}

impl ParquetWriter {
    /// A writer into the directory `dir`, whose first part will be `part-{next_part:05}`
    /// and which already holds `rows_done` rows in earlier parts.
    pub(crate) fn new(
        dir: &Path,
        identity: &RunIdentity,
        components: &[String],
        payouts: &[String],
        record_transitions: bool,
        next_part: usize,
        rows_done: u64,
    ) -> Self {
        let row_bytes = 8 * (6 + components.len() + payouts.len())
            + 12
            + if record_transitions { 64 } else { 0 };
        ParquetWriter {
            dir: dir.to_path_buf(),
            schema: Arc::new(with_notify(
                schema(components, payouts, record_transitions),
                identity,
            )),
            identity: identity.clone(),
            record_transitions,
            regimes: Vec::new(),
            cols: Columns {
                components: vec![Vec::new(); components.len()],
                payouts: vec![Vec::new(); payouts.len()],
                ..Columns::default()
            },
            part_rows: (PART_BYTES / row_bytes).max(1024),
            next_part,
            rows_done,
            last_part: Instant::now(),
            manifest: None,
            action_kind: None,
        }
    }

    fn batch(&mut self) -> Result<RecordBatch, arrow_schema::ArrowError> {
        let n = self.cols.len();
        let c = &mut self.cols;
        let constant = |s: &str| -> ArrayRef {
            Arc::new(DictionaryArray::<Int32Type>::new(
                Int32Array::from(vec![0; n]),
                Arc::new(StringArray::from(vec![s])),
            ))
        };
        let u64s =
            |v: &mut Vec<u64>| -> ArrayRef { Arc::new(UInt64Array::from(std::mem::take(v))) };
        let mut arrays: Vec<ArrayRef> = vec![
            constant(&self.identity.run_id),
            Arc::new(UInt64Array::from(vec![self.identity.seed; n])),
            constant(&self.identity.algorithm_id),
            constant(&self.identity.task),
        ];
        if !self.identity.notify.is_none() {
            arrays.push(constant(self.identity.notify.as_str()));
        }
        arrays.extend([
            u64s(&mut c.step),
            u64s(&mut c.episode),
            u64s(&mut c.episode_step),
            Arc::new(Float64Array::from(std::mem::take(&mut c.reward))),
        ]);
        for v in &mut c.components {
            arrays.push(Arc::new(Float64Array::from(std::mem::take(v))));
        }
        for v in &mut c.payouts {
            let values: Vec<Option<f64>> = v
                .iter()
                .zip(&c.payout_valid)
                .map(|(&x, &ok)| ok.then_some(x))
                .collect();
            arrays.push(Arc::new(Float64Array::from(values)));
        }
        arrays.push(Arc::new(DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(std::mem::take(&mut c.regime)),
            Arc::new(StringArray::from_iter_values(&self.regimes)),
        )?));
        arrays.push(Arc::new(DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(std::mem::take(&mut c.origin)),
            Arc::new(StringArray::from_iter_values(ORIGINS)),
        )?));
        arrays.push(Arc::new(BooleanArray::from(std::mem::take(
            &mut c.terminated,
        ))));
        arrays.push(Arc::new(BooleanArray::from(std::mem::take(
            &mut c.truncated,
        ))));
        let ceiling: Vec<Option<f64>> = c
            .ceiling
            .iter()
            .zip(&c.ceiling_valid)
            .map(|(&x, &ok)| ok.then_some(x))
            .collect();
        arrays.push(Arc::new(Float64Array::from(ceiling)));
        if self.record_transitions {
            let mut obs = ListBuilder::new(Float32Builder::with_capacity(c.obs.len()));
            let mut start = 0;
            for &end in &c.obs_ends {
                obs.values().append_slice(&c.obs[start..end]);
                obs.append(true);
                start = end;
            }
            arrays.push(Arc::new(obs.finish()));
            let mut action = ListBuilder::new(Float64Builder::with_capacity(c.action.len()));
            let mut start = 0;
            for &end in &c.action_ends {
                action.values().append_slice(&c.action[start..end]);
                action.append(true);
                start = end;
            }
            arrays.push(Arc::new(action.finish()));
        }
        RecordBatch::try_new(self.schema.clone(), arrays)
    }

    /// Writes the buffered rows as the next part file: temp file, fsync, rename, directory
    /// fsync. Nothing happens without buffered rows.
    fn cut_part(&mut self) -> Result<(), TraceError> {
        let n = self.cols.len();
        if n == 0 {
            return Ok(());
        }
        let name = part_name(self.next_part);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let target = self.dir.join(&name);
        let err = |e: parquet::errors::ParquetError| {
            TraceError::io(&tmp, std::io::Error::other(e.to_string()))
        };
        let batch = self
            .batch()
            .map_err(|e| TraceError::io(&tmp, std::io::Error::other(e.to_string())))?;
        self.cols.clear();
        let mut metadata = Vec::new();
        if let Some(m) = &self.manifest {
            metadata.push(KeyValue::new(MANIFEST_KEY.into(), m.clone()));
        }
        if let Some(kind) = self.action_kind {
            metadata.push(KeyValue::new(ACTION_KEY.into(), kind.to_string()));
        }
        let mut file = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
        let mut writer =
            ArrowWriter::try_new(&mut file, self.schema.clone(), Some(properties(metadata)))
                .map_err(err)?;
        writer.write(&batch).map_err(err)?;
        writer.close().map_err(err)?;
        file.sync_all().map_err(|e| TraceError::io(&tmp, e))?;
        drop(file);
        std::fs::rename(&tmp, &target).map_err(|e| TraceError::io(&target, e))?;
        sync_dir(&self.dir);
        self.next_part += 1;
        self.rows_done += n as u64;
        self.last_part = Instant::now();
        Ok(())
    }
}

/// The file name of part `index`.
pub(crate) fn part_name(index: usize) -> String {
    format!("part-{index:05}.parquet")
}

pub(crate) fn sync_dir(dir: &Path) {
    // Some filesystems refuse to sync a directory; the rename is then as durable as they
    // make it, and there is nothing better to do.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

impl TraceSink for ParquetWriter {
    fn write_row(&mut self, row: &RowRecord<'_>) -> Result<(), TraceError> {
        let c = &mut self.cols;
        c.step.push(row.step);
        c.episode.push(row.episode);
        c.episode_step.push(row.episode_step);
        c.reward.push(row.reward);
        for (col, &v) in c.components.iter_mut().zip(row.components) {
            col.push(v);
        }
        let paid = !row.payouts.is_empty();
        for (i, col) in c.payouts.iter_mut().enumerate() {
            col.push(row.payouts.get(i).copied().unwrap_or(0.0));
        }
        c.payout_valid.push(paid);
        let key = match self.regimes.iter().rposition(|r| r == row.regime) {
            Some(k) => k,
            None => {
                self.regimes.push(row.regime.to_string());
                self.regimes.len() - 1
            }
        };
        c.regime.push(key as i32);
        c.origin.push(origin_key(row.origin));
        c.terminated.push(row.terminated);
        c.truncated.push(row.truncated);
        c.ceiling.push(row.ceiling.unwrap_or(0.0));
        c.ceiling_valid.push(row.ceiling.is_some());
        if self.record_transitions {
            c.obs.extend_from_slice(row.obs.unwrap_or_default());
            c.obs_ends.push(c.obs.len());
            let text = row.action_json.unwrap_or("null").trim();
            let array = text.starts_with('[');
            self.action_kind
                .get_or_insert(if array { "array" } else { "scalar" });
            if array {
                let values: Vec<f64> = serde_json::from_str(text).map_err(|e| {
                    TraceError::io(
                        &self.dir,
                        std::io::Error::other(format!(
                            "step {}: the action {text} is not an array of numbers: {e}",
                            row.step
                        )),
                    )
                })?;
                c.action.extend(values);
            } else if let Ok(v) = text.parse::<f64>() {
                c.action.push(v);
            }
            c.action_ends.push(c.action.len());
        }
        if c.len() >= self.part_rows {
            self.cut_part()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        if self.last_part.elapsed() >= Duration::from_secs(PART_SECONDS) {
            self.cut_part()?;
        }
        Ok(())
    }

    /// Cuts a part and returns the number of rows in finished parts: the position a
    /// checkpoint records for a Parquet trace (rows, not bytes).
    fn sync(&mut self) -> Result<u64, TraceError> {
        self.cut_part()?;
        Ok(self.rows_done)
    }

    fn close(&mut self) -> Result<(), TraceError> {
        self.cut_part()
    }

    fn attach_manifest(&mut self, json: &str) {
        self.manifest = Some(json.to_string());
    }
}

impl Drop for ParquetWriter {
    fn drop(&mut self) {
        // Best effort, for callers that never closed the sink: every part cut before is
        // already complete on disk.
        let _ = self.cut_part();
    }
}

/// Prepares `dir` for a run continued from a checkpoint that recorded `rows` rows: parts
/// wholly after that row are removed, the part holding it is rewritten with only the rows
/// before it, leftover temp files are removed. Returns the next part index.
///
/// # Errors
///
/// The directory or a part cannot be read or rewritten, or it holds fewer rows than the
/// checkpoint recorded.
pub(crate) fn cut_back(dir: &Path, rows: u64) -> Result<usize, TraceError> {
    let parts = super::parquet_reader::list_parts(dir)?;
    for tmp in &parts.temps {
        std::fs::remove_file(tmp).map_err(|e| TraceError::io(tmp, e))?;
    }
    let mut start = 0u64;
    let mut keep = 0usize;
    for path in &parts.parts {
        if start >= rows {
            std::fs::remove_file(path).map_err(|e| TraceError::io(path, e))?;
            continue;
        }
        let n = super::parquet_reader::part_rows(path)?;
        if start + n > rows {
            rewrite_prefix(path, (rows - start) as usize)?;
        }
        start += n.min(rows - start);
        keep += 1;
    }
    if start < rows {
        return Err(TraceError::io(
            dir,
            std::io::Error::other(format!(
                "the trace holds {start} rows but the checkpoint recorded {rows}; it is not the trace this checkpoint belongs to"
            )),
        ));
    }
    sync_dir(dir);
    Ok(keep)
}

/// Rewrites the part at `path` keeping its first `keep` rows (temp file, fsync, rename).
fn rewrite_prefix(path: &Path, keep: usize) -> Result<(), TraceError> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let err =
        |e: &dyn std::fmt::Display| TraceError::io(path, std::io::Error::other(e.to_string()));
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| err(&e))?;
    let metadata = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|kv| !kv.key.starts_with("ARROW:"))
        .collect();
    let schema = builder.schema().clone();
    let reader = builder.build().map_err(|e| err(&e))?;
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let mut out = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
    let mut writer =
        ArrowWriter::try_new(&mut out, schema, Some(properties(metadata))).map_err(|e| err(&e))?;
    let mut left = keep;
    for batch in reader {
        let batch = batch.map_err(|e| err(&e))?;
        let take = left.min(batch.num_rows());
        if take > 0 {
            writer.write(&batch.slice(0, take)).map_err(|e| err(&e))?;
        }
        left -= take;
    }
    writer.close().map_err(|e| err(&e))?;
    out.sync_all().map_err(|e| TraceError::io(&tmp, e))?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(|e| TraceError::io(path, e))?;
    Ok(())
}
