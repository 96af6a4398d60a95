//! The Parquet trace writer: a directory of part files, each written whole and renamed into
//! place, so a killed run leaves only complete parts.
//!
//! Layout: `<run-id>.parquet/part-00000.parquet`, `part-00001.parquet`, … Every part holds
//! the DESIGN columns (components and payouts flattened to `c.<name>` / `p.<name>` as CSV
//! does; payout cells are null except on an episode's last step), strings dictionary-encoded,
//! zstd-compressed, `step` and `episode_step` delta-encoded. A part is written to a hidden
//! `.part-NNNNN.parquet.tmp` and renamed into place; pyarrow, pandas and polars skip hidden
//! files, so they read the directory as one table at any moment. A part cut at a window's
//! flush is not fsynced, as a JSON Lines flush is not: its bytes are in the page cache, so
//! a killed process leaves it whole. At every [`TraceSink::sync`] (checkpoints) and at the
//! end of the run the part cut then, every part renamed without an fsync before it, and the
//! directory are fsynced ([`place_part`]), so what a checkpoint records survives a power
//! loss as well.
//!
//! Rows wait in column buffers until a part is cut: when the buffers reach [`PART_BYTES`], at a
//! flush (a window boundary) when a part is due ([`PartCadence`], `--part-seconds`), at
//! every [`TraceSink::sync`] (checkpoints) and when the run ends. What a SIGKILL loses
//! depends on the cadence:
//!
//! - `--part-seconds S` (default 1): a part at the first window boundary S seconds after the
//!   last, handed to the part thread without waiting. A killed run loses at most the rows of
//!   the last S seconds or so and of the part being written, where a JSON Lines run loses at
//!   most one window. It costs about one part file per S seconds (CartPole, 1M steps: 3
//!   parts and 0.32 bytes per row).
//! - `--part-seconds 0`: a part at every window boundary, and the flush waits until it is
//!   renamed into place (written and renamed), as a JSON Lines flush waits for its write:
//!   a killed run keeps every row up to its last whole window, exactly what a JSON Lines
//!   run keeps. It costs a part file (and an events part) per window, and two hand-overs to
//!   the part threads that the stepping thread waits for: on this machine (loaded)
//!   CartPole with 256-step windows ran at about 24 k steps/s instead of 1.6 M, with 19
//!   bytes per row instead of 0.32 (3,907 parts for 1M steps); the warehouse took 4.6
//!   times as long (measured when every part was also fsynced).
//!
//! A checkpointed run loses nothing either way, since `--resume` rewrites from the
//! checkpoint.
//!
//! The stepping thread only fills buffers. Encoding, compression, the write, the fsync and
//! the rename happen on a thread of the writer's own ([`PartThread`]), one part at a time
//! and in order, while the next part's buffers fill; two sets of buffers take turns, so
//! nothing is allocated per row or per part once both exist. [`TraceSink::sync`] and
//! [`TraceSink::close`] wait until every part handed over is on disk, so a checkpoint
//! never records a row that is not.
//!
//! The part thread encodes every column but `obs` and `action` itself, straight from the
//! typed buffers ([`ChunkEncoder`]): no Arrow arrays, no per-value dictionary hashing, no
//! statistics. The run's identity (`run_id`, `seed`, `algorithm_id`, `task`, `notify`: one
//! value per run) and the regime label and origin (which change rarely) are kept as runs
//! of keys and read back as the same dictionary-encoded columns, in every reader.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{ArrayRef, UInt64Array};
use arrow_schema::DataType;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_writer::{ArrowRowGroupWriterFactory, compute_leaves};
use parquet::arrow::{ArrowSchemaConverter, add_encoded_arrow_schema_to_metadata};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescriptor;

use super::arrays::{by_role, list};
use super::layout::{ACTION_KEY, MANIFEST_KEY, part_name};
use super::pages::{Chunk, ChunkEncoder, Runs, push_run};
use super::schema::{ORIGINS, origin_key, properties, schema, with_notify};
use super::thread::{PartCadence, PartThread, place_part, sync_parts};
use crate::trace::digest::Digest;
use crate::trace::row::{RowRecord, RunIdentity};
use crate::trace::{TraceColumns, TraceError, TraceSink};

/// Raw column bytes buffered before a part is cut (bounds the writer's memory: two sets of
/// buffers of this size take turns).
pub const PART_BYTES: usize = 32 << 20;

/// Rows of a run's first part at most: its buffers are the only ones the stepping thread
/// maps fresh (the part thread grows every other set before it is filled).
const FIRST_PART_ROWS: usize = 1 << 16;

/// Rows waiting for the next part, one buffer per column.
#[derive(Default)]
struct ColumnBuffers {
    step: Vec<u64>,
    episode: Vec<u64>,
    episode_step: Vec<u64>,
    reward: Vec<f64>,
    components: Vec<Vec<f64>>,
    payouts: Vec<Vec<f64>>,
    payout_valid: Vec<bool>,
    regime: Runs,
    origin: Runs,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    ceiling: Vec<f64>,
    ceiling_valid: Vec<bool>,
    bound: Vec<f64>,
    bound_valid: Vec<bool>,
    /// Each role's own rewards (the `role_rewards` struct's fields).
    roles: Vec<Vec<f64>>,
    obs: Vec<f32>,
    obs_ends: Vec<usize>,
    action: Vec<f64>,
    action_ends: Vec<usize>,
    /// In a roles trace: each role's views (values and row ends) and action indices.
    role_obs: Vec<(Vec<f32>, Vec<usize>)>,
    role_actions: Vec<Vec<u64>>,
    /// Rows the buffers take before their part is cut.
    limit: usize,
}

/// Reserves room for `rows` values in `v` (empty) and writes every page of it once, so
/// the memory is mapped before a row is pushed.
fn touch<T: Clone + Default>(v: &mut Vec<T>, rows: usize) {
    v.reserve(rows);
    v.resize(v.capacity(), T::default());
    v.clear();
}

impl ColumnBuffers {
    /// Empty buffers for `rows` rows of a trace with these many terms and roles.
    fn with_capacity(rows: usize, components: usize, payouts: usize, roles: usize) -> Self {
        let f64s = || Vec::with_capacity(rows);
        ColumnBuffers {
            step: Vec::with_capacity(rows),
            episode: Vec::with_capacity(rows),
            episode_step: Vec::with_capacity(rows),
            reward: f64s(),
            components: (0..components).map(|_| f64s()).collect(),
            payouts: (0..payouts).map(|_| f64s()).collect(),
            payout_valid: Vec::with_capacity(if payouts > 0 { rows } else { 0 }),
            terminated: Vec::with_capacity(rows),
            truncated: Vec::with_capacity(rows),
            ceiling: f64s(),
            ceiling_valid: Vec::with_capacity(rows),
            bound: f64s(),
            bound_valid: Vec::with_capacity(rows),
            roles: (0..roles).map(|_| f64s()).collect(),
            limit: rows,
            ..ColumnBuffers::default()
        }
    }

    /// Grows empty buffers to `rows` rows, every page written once: done on the part
    /// thread, so the stepping thread never waits for the kernel to map a fresh page.
    fn grow(&mut self, rows: usize) {
        self.limit = rows;
        touch(&mut self.step, rows);
        touch(&mut self.episode, rows);
        touch(&mut self.episode_step, rows);
        touch(&mut self.reward, rows);
        self.components.iter_mut().for_each(|v| touch(v, rows));
        if !self.payouts.is_empty() {
            self.payouts.iter_mut().for_each(|v| touch(v, rows));
            touch(&mut self.payout_valid, rows);
        }
        touch(&mut self.terminated, rows);
        touch(&mut self.truncated, rows);
        touch(&mut self.ceiling, rows);
        touch(&mut self.ceiling_valid, rows);
        touch(&mut self.bound, rows);
        touch(&mut self.bound_valid, rows);
        self.roles.iter_mut().for_each(|v| touch(v, rows));
    }

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
        self.bound.clear();
        self.bound_valid.clear();
        self.roles.iter_mut().for_each(Vec::clear);
        self.obs.clear();
        self.obs_ends.clear();
        self.action.clear();
        self.action_ends.clear();
        for (values, ends) in &mut self.role_obs {
            values.clear();
            ends.clear();
        }
        self.role_actions.iter_mut().for_each(Vec::clear);
    }
}

/// `a == b`, compared in a few loads without a call for labels of up to 16 bytes (the
/// label check runs at every row): the first and the last word (half word, two bytes) of
/// the label overlap and cover every byte.
#[inline]
fn same_label(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap_or([0; 4]));
    let pair = |s: &[u8], at: usize| u16::from_le_bytes(s[at..at + 2].try_into().unwrap_or([0; 2]));
    if n > 16 {
        a == b
    } else if n >= 8 {
        word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
    } else if n >= 4 {
        half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4)
    } else if n >= 2 {
        pair(a, 0) == pair(b, 0) && pair(a, n - 2) == pair(b, n - 2)
    } else {
        a.first() == b.first()
    }
}

/// One part on its way to the part thread: its rows and what its file records.
struct PartJob {
    cols: ColumnBuffers,
    index: usize,
    /// The `regime` column's dictionary: every label seen so far, in order of appearance.
    regimes: Vec<String>,
    manifest: Option<Arc<str>>,
    action_kind: Option<&'static str>,
    /// Cut by a sync or the end of the run: fsync it, and every part renamed without one.
    durable: bool,
}

/// What every part of one trace shares: where it goes and its schema.
struct PartLayout {
    dir: PathBuf,
    schema: SchemaRef,
    parquet: Arc<SchemaDescriptor>,
    identity: RunIdentity,
    record_transitions: bool,
    /// The trace has a `bound` column.
    bound: bool,
    /// Rows of a whole part (the first is smaller).
    part_rows: usize,
    pages: ChunkEncoder,
    /// Parts renamed into place without an fsync since the last durable one.
    unsynced: Vec<PathBuf>,
}

/// The PLAIN encoding of strings: each one's length (u32, little-endian), then its bytes.
fn plain_strings<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

impl PartLayout {
    /// The chunks of the part's columns up to `ceiling` (and `bound`, `role_rewards`), in schema order, encoded from
    /// its buffers by [`ChunkEncoder`].
    fn chunks(&mut self, job: &PartJob) -> Result<Vec<Chunk>, ParquetError> {
        let c = &job.cols;
        let n = c.len();
        let id = &self.identity;
        let whole = vec![(0, n as u32)];
        let strings = |s: &str| plain_strings([s]);
        let mut keyed = vec![
            (strings(&id.run_id), 1, &whole),
            (id.seed.to_le_bytes().to_vec(), 1, &whole),
            (strings(&id.algorithm_id), 1, &whole),
            (strings(&id.task), 1, &whole),
        ];
        if !id.notify.is_none() {
            keyed.push((strings(id.notify.as_str()), 1, &whole));
        }
        let mut chunks = Vec::with_capacity(self.parquet.num_columns());
        let at = |chunks: &Vec<Chunk>| self.parquet.column(chunks.len());
        let pages = &mut self.pages;
        for (dict, len, runs) in keyed {
            chunks.push(pages.keyed(at(&chunks), &dict, len, runs)?);
        }
        for v in [&c.step, &c.episode, &c.episode_step] {
            chunks.push(pages.counters(at(&chunks), v)?);
        }
        chunks.push(pages.floats(at(&chunks), &c.reward, None)?);
        for v in &c.components {
            chunks.push(pages.floats(at(&chunks), v, None)?);
        }
        for v in &c.payouts {
            chunks.push(pages.floats(at(&chunks), v, Some(&c.payout_valid[..]))?);
        }
        let regimes = plain_strings(job.regimes.iter().map(String::as_str));
        chunks.push(pages.keyed(at(&chunks), &regimes, job.regimes.len(), &c.regime)?);
        let origins = plain_strings(ORIGINS);
        chunks.push(pages.keyed(at(&chunks), &origins, ORIGINS.len(), &c.origin)?);
        chunks.push(pages.flags(at(&chunks), &c.terminated)?);
        chunks.push(pages.flags(at(&chunks), &c.truncated)?);
        chunks.push(pages.floats(at(&chunks), &c.ceiling, Some(&c.ceiling_valid[..]))?);
        if self.bound {
            chunks.push(pages.floats(at(&chunks), &c.bound, Some(&c.bound_valid[..]))?);
        }
        // The struct is required and so are its fields: each field is a plain leaf.
        for v in &c.roles {
            chunks.push(pages.floats(at(&chunks), v, None)?);
        }
        Ok(chunks)
    }

    /// Writes `job` as its part file: temp file and rename, with the fsyncs of
    /// [`place_part`] when the job is durable. Returns the rows written.
    fn write_part(&mut self, job: &PartJob) -> Result<u64, TraceError> {
        let n = job.cols.len();
        if n == 0 {
            if job.durable {
                sync_parts(&self.dir, &mut self.unsynced)?;
            }
            return Ok(0);
        }
        let name = part_name(job.index);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let target = self.dir.join(&name);
        let err = |e: ParquetError| TraceError::io(&tmp, std::io::Error::other(e.to_string()));
        let mut metadata = Vec::new();
        if let Some(m) = &job.manifest {
            metadata.push(KeyValue::new(MANIFEST_KEY.into(), m.to_string()));
        }
        if let Some(kind) = job.action_kind {
            metadata.push(KeyValue::new(ACTION_KEY.into(), kind.to_string()));
        }
        let mut props = properties(metadata);
        add_encoded_arrow_schema_to_metadata(&self.schema, &mut props);
        let props = Arc::new(props);
        let chunks = self.chunks(job).map_err(err)?;

        let mut file = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
        let mut writer =
            SerializedFileWriter::new(&mut file, self.parquet.root_schema_ptr(), props)
                .map_err(err)?;
        // `obs` and `action` go through Parquet's own writers, after the other columns.
        let lists = if self.record_transitions {
            let factory = ArrowRowGroupWriterFactory::new(&writer, self.schema.clone());
            let c = &job.cols;
            let field = self.schema.fields().len() - 2;
            let arrays = match self.schema.field(field).data_type() {
                DataType::Struct(roles) => {
                    let views = c
                        .role_obs
                        .iter()
                        .map(|(values, ends)| list::<Float32Type>(values, ends))
                        .collect();
                    let actions = c
                        .role_actions
                        .iter()
                        .map(|a| Arc::new(UInt64Array::from(a.clone())) as ArrayRef)
                        .collect();
                    let of = |f: usize| match self.schema.field(f).data_type() {
                        DataType::Struct(fields) => fields.clone(),
                        _ => roles.clone(),
                    };
                    [
                        by_role(of(field), views, c.len()).map_err(err)?,
                        by_role(of(field + 1), actions, c.len()).map_err(err)?,
                    ]
                }
                _ => [
                    list::<Float32Type>(&c.obs, &c.obs_ends),
                    list::<Float64Type>(&c.action, &c.action_ends),
                ],
            };
            // One encoder per leaf (a struct has one per field): `obs` and `action` are
            // the last two fields and own the last leaves.
            let leaves = |a: &ArrayRef| match a.data_type() {
                DataType::Struct(fields) => fields.len(),
                _ => 1,
            };
            let encoders = factory.create_column_writers(0).map_err(err)?;
            let at = encoders.len() - arrays.iter().map(leaves).sum::<usize>();
            let mut encoders = encoders.into_iter().skip(at);
            arrays
                .into_iter()
                .enumerate()
                .map(|(k, a)| {
                    let mine: Vec<_> = encoders.by_ref().take(leaves(&a)).collect();
                    ((field + k, mine), a)
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut rows = writer.next_row_group().map_err(err)?;
        for (bytes, close) in chunks {
            rows.append_column(&bytes, close).map_err(err)?;
        }
        for ((i, encoders), array) in lists {
            let leaves = compute_leaves(self.schema.field(i), &array).map_err(err)?;
            for (mut encoder, leaf) in encoders.into_iter().zip(leaves) {
                encoder.write(&leaf).map_err(err)?;
                encoder
                    .close()
                    .map_err(err)?
                    .append_to_row_group(&mut rows)
                    .map_err(err)?;
            }
        }
        rows.close().map_err(err)?;
        writer.close().map_err(err)?;
        place_part(
            &self.dir,
            file,
            &tmp,
            &target,
            job.durable,
            &mut self.unsynced,
        )?;
        Ok(n as u64)
    }

    /// Writes `job` as its part file ([`PartLayout::write_part`]), then hands its buffers
    /// back empty and grown to a whole part's rows: the first set of buffers starts small.
    fn write(&mut self, job: &mut PartJob) -> Result<u64, TraceError> {
        let result = self.write_part(job).map_err(|e| {
            // A part that could not be written (a full disk) leaves no temp file, and the
            // error names the part, not the hidden temp file it was being written as.
            let name = part_name(job.index);
            let tmp = self.dir.join(format!(".{name}.tmp"));
            let _ = std::fs::remove_file(&tmp);
            match e {
                TraceError::Io { path, source } if path == tmp => {
                    TraceError::io(&self.dir.join(name), source)
                }
                other => other,
            }
        });
        job.cols.clear();
        if job.cols.limit < self.part_rows {
            job.cols.grow(self.part_rows);
        }
        result
    }
}

/// Writes a trace as a directory of Parquet part files.
pub(crate) struct ParquetWriter {
    dir: PathBuf,
    record_transitions: bool,
    /// Regime labels in order of first appearance: the dictionary of the `regime` column.
    regimes: Vec<String>,
    /// The key of the label of the last row.
    regime_key: Option<u32>,
    cols: ColumnBuffers,
    /// The other set of buffers, back from the part thread; `None` while its part is in
    /// flight.
    spare: Option<ColumnBuffers>,
    parts: PartThread<PartJob>,
    /// Rows a part holds at most ([`PART_BYTES`] over the row's raw size).
    part_rows: usize,
    next_part: usize,
    /// Rows in finished parts.
    rows_done: u64,
    cadence: PartCadence,
    manifest: Option<Arc<str>>,
    /// `scalar` or `array`, from the first action written.
    action_kind: Option<&'static str>,
    /// Parts were handed over without an fsync since the last durable one.
    unsynced: bool,
    /// The digest of the finished parts before `hashed` ([`Digest::add_parts`]).
    digest: Digest,
    hashed: usize,
}

impl ParquetWriter {
    /// A writer into the directory `dir`, whose first part will be `part-{next_part:05}`
    /// and which already holds `rows_done` rows in earlier parts.
    ///
    /// # Errors
    ///
    /// The part thread cannot be started.
    pub(crate) fn new(
        dir: &Path,
        identity: &RunIdentity,
        columns: &TraceColumns,
        next_part: usize,
        rows_done: u64,
    ) -> Result<Self, TraceError> {
        let (components, payouts) = (&columns.components[..], &columns.payouts[..]);
        let record_transitions = columns.record_transitions;
        let row_bytes = 8 * (6 + components.len() + payouts.len() + columns.roles.len())
            + 12
            + if record_transitions { 64 } else { 0 };
        let part_rows = (PART_BYTES / row_bytes).max(1024);
        let schema = Arc::new(with_notify(schema(columns), identity));
        let parquet = ArrowSchemaConverter::new()
            .convert(&schema)
            .map_err(|e| TraceError::io(dir, std::io::Error::other(e.to_string())))?;
        let mut layout = PartLayout {
            dir: dir.to_path_buf(),
            schema,
            parquet: Arc::new(parquet),
            identity: identity.clone(),
            record_transitions,
            bound: columns.bound,
            part_rows,
            pages: ChunkEncoder::new()
                .map_err(|e| TraceError::io(dir, std::io::Error::other(e.to_string())))?,
            unsynced: Vec::new(),
        };
        let mut parts = PartThread::spawn(dir, move |job: &mut PartJob| layout.write(job))?;
        // The second set of buffers is grown on the part thread while the first, small
        // one fills: the first part holds at most FIRST_PART_ROWS rows.
        parts.send(PartJob {
            cols: ColumnBuffers::with_capacity(
                0,
                components.len(),
                payouts.len(),
                columns.roles.len(),
            ),
            index: next_part,
            regimes: Vec::new(),
            manifest: None,
            action_kind: None,
            durable: false,
        })?;
        Ok(ParquetWriter {
            dir: dir.to_path_buf(),
            record_transitions,
            regimes: Vec::new(),
            regime_key: None,
            cols: ColumnBuffers::with_capacity(
                part_rows.min(FIRST_PART_ROWS),
                components.len(),
                payouts.len(),
                columns.roles.len(),
            ),
            spare: None,
            parts,
            part_rows,
            next_part,
            rows_done,
            cadence: PartCadence::default(),
            manifest: None,
            action_kind: None,
            unsynced: false,
            digest: Digest::default(),
            hashed: next_part,
        })
    }

    /// Goes on from `digest`, the digest of the `parts` parts a resumed run kept.
    pub(crate) fn continue_digest(&mut self, digest: Digest, parts: usize) {
        self.digest = digest;
        self.hashed = parts;
    }

    /// The key of `label` in the `regime` dictionary, added when new.
    fn regime_key(&mut self, label: &str) -> u32 {
        if let Some(k) = self.regime_key
            && same_label(self.regimes[k as usize].as_bytes(), label.as_bytes())
        {
            return k;
        }
        let k = match self.regimes.iter().position(|r| r == label) {
            Some(k) => k,
            None => {
                self.regimes.push(label.to_string());
                self.regimes.len() - 1
            }
        } as u32;
        self.regime_key = Some(k);
        k
    }

    /// Takes back the buffers of a finished part, waiting for it when `block`.
    fn collect(&mut self, block: bool) -> Result<(), TraceError> {
        let finished = if block {
            self.parts.wait()?
        } else {
            self.parts.poll()?
        };
        if let Some((job, rows)) = finished {
            self.rows_done += rows;
            self.spare = Some(job.cols);
        }
        Ok(())
    }

    /// Hands the buffered rows to the part thread as the next part, and goes on filling
    /// the other set of buffers. Nothing happens without buffered rows.
    /// Hands the buffered rows to the part thread as the next part; a `durable` one is
    /// fsynced with every part renamed without one before it ([`place_part`]), and is
    /// handed over even without rows when such parts exist.
    fn cut_part(&mut self, durable: bool) -> Result<(), TraceError> {
        if self.cols.len() == 0 && !(durable && self.unsynced) {
            return Ok(());
        }
        self.collect(true)?;
        let next = match self.spare.take() {
            Some(cols) => cols,
            None => ColumnBuffers::with_capacity(
                self.part_rows,
                self.cols.components.len(),
                self.cols.payouts.len(),
                self.cols.roles.len(),
            ),
        };
        let cols = std::mem::replace(&mut self.cols, next);
        let empty = cols.len() == 0;
        self.parts.send(PartJob {
            cols,
            index: self.next_part,
            regimes: self.regimes.clone(),
            manifest: self.manifest.clone(),
            action_kind: self.action_kind,
            durable,
        })?;
        self.unsynced = !durable;
        if !empty {
            self.next_part += 1;
        }
        self.cadence.cut();
        Ok(())
    }

    /// Cuts a part and waits until every part handed over is on disk.
    fn finish_parts(&mut self) -> Result<(), TraceError> {
        self.cut_part(true)?;
        self.collect(true)
    }
}

impl TraceSink for ParquetWriter {
    fn write_row(&mut self, row: &RowRecord<'_>) -> Result<(), TraceError> {
        let regime = self.regime_key(row.regime);
        let c = &mut self.cols;
        c.step.push(row.step);
        c.episode.push(row.episode);
        c.episode_step.push(row.episode_step);
        c.reward.push(row.reward);
        for (col, &v) in c.components.iter_mut().zip(row.components) {
            col.push(v);
        }
        if !c.payouts.is_empty() {
            for (i, col) in c.payouts.iter_mut().enumerate() {
                col.push(row.payouts.get(i).copied().unwrap_or(0.0));
            }
            c.payout_valid.push(!row.payouts.is_empty());
        }
        push_run(&mut c.regime, regime);
        push_run(&mut c.origin, origin_key(row.origin));
        c.terminated.push(row.terminated);
        c.truncated.push(row.truncated);
        // An infinite ceiling or bound (no cap) is null, as JSON Lines writes it: a reader
        // refuses a non-finite number in these columns.
        let ceiling = row.ceiling.filter(|v| v.is_finite());
        c.ceiling.push(ceiling.unwrap_or(0.0));
        c.ceiling_valid.push(ceiling.is_some());
        let bound = row.bound.filter(|v| v.is_finite());
        c.bound.push(bound.unwrap_or(0.0));
        c.bound_valid.push(bound.is_some());
        for (col, &v) in c.roles.iter_mut().zip(row.role_rewards) {
            col.push(v);
        }
        if self.record_transitions && !row.role_obs.is_empty() {
            c.role_obs.resize_with(row.role_obs.len(), Default::default);
            c.role_actions.resize_with(row.role_actions.len(), Vec::new);
            for ((values, ends), view) in c.role_obs.iter_mut().zip(row.role_obs) {
                values.extend_from_slice(view);
                ends.push(values.len());
            }
            for (col, &a) in c.role_actions.iter_mut().zip(row.role_actions) {
                col.push(a as u64);
            }
        } else if self.record_transitions {
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
        if c.len() >= c.limit {
            self.cut_part(false)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        // A part that failed on the part thread fails the run here, at the next window.
        self.collect(false)?;
        if self.cadence.due() {
            self.cut_part(false)?;
            if self.cadence.waits() {
                self.collect(true)?;
            }
        }
        Ok(())
    }

    fn set_part_interval(&mut self, every: Duration) {
        self.cadence.every = every;
    }

    /// Cuts a part, waits until it is on disk and returns the number of rows in finished
    /// parts: the position a checkpoint records for a Parquet trace (rows, not bytes).
    fn sync(&mut self) -> Result<Option<u64>, TraceError> {
        self.finish_parts()?;
        let new: Vec<PathBuf> = (self.hashed..self.next_part)
            .map(|i| self.dir.join(part_name(i)))
            .collect();
        self.digest.add_parts(&new)?;
        self.hashed = self.next_part;
        Ok(Some(self.rows_done))
    }

    fn digest(&self) -> Option<String> {
        Some(self.digest.hex())
    }

    fn close(&mut self) -> Result<(), TraceError> {
        self.finish_parts()
    }

    fn attach_manifest(&mut self, json: &str) {
        self.manifest = Some(Arc::from(json));
    }
}

impl Drop for ParquetWriter {
    fn drop(&mut self) {
        // Best effort, for callers that never closed the sink: every part cut before is
        // already complete on disk.
        let _ = self.finish_parts();
    }
}

#[cfg(test)]
mod tests {
    use super::same_label;

    #[test]
    fn same_label_tells_apart_labels_differing_in_any_byte() {
        for n in 0..=20usize {
            let a: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
            assert!(same_label(&a, &a.clone()), "length {n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] = b'Z';
                assert!(!same_label(&a, &b), "length {n}, byte {at}");
            }
            let mut longer = a.clone();
            longer.push(b'a');
            assert!(!same_label(&a, &longer), "length {n} against {}", n + 1);
        }
    }
}
