//! Writing an events table: JSON Lines, CSV or Parquet parts, whole rows only.

use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_schema::SchemaRef;

use super::columns::{EventColumns, EventPart, PART_ROWS, schema, write_part};
use super::row::{EPISODE_END, EVENT_COLUMNS, EventRow, EventView};
use crate::trace::parquet::layout::part_name;
use crate::trace::parquet::resume::{check_rows, cut_back};
use crate::trace::parquet::thread::{PartCadence, PartThread};
use crate::trace::{TraceError, TraceFormat};

/// Bytes of JSON Lines / CSV buffered before they go to the file.
pub(super) const FLUSH_BYTES: usize = 1 << 16;

pub(super) enum Out {
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

pub(super) fn csv_cell(out: &mut Vec<u8>, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend(text.replace('"', "\"\"").bytes());
        out.push(b'"');
    } else {
        out.extend(text.bytes());
    }
}

pub(super) fn csv_line(out: &mut Vec<u8>, r: &EventView<'_>) {
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

/// Writes a run's events table (see the module docs).
pub struct EventWriter {
    path: PathBuf,
    out: Out,
    /// The digest of what is in the table ([`EventWriter::digest`]); for Parquet, of the
    /// parts before `hashed`.
    digest: crate::trace::Digest,
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
            let next = crate::trace::fresh_parquet_dir(path)?;
            return Self::parquet(path, next, 0, crate::trace::Digest::default());
        }
        let file = crate::output::open_locked(path)?;
        file.set_len(0).map_err(|e| TraceError::io(path, e))?;
        Self::lines(path, format, file, 0, crate::trace::Digest::default())
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
        let digest = crate::trace::Digest::of_prefix(&file, path, at)?;
        file.set_len(at).map_err(|e| TraceError::io(path, e))?;
        file.seek(std::io::SeekFrom::Start(at))
            .map_err(|e| TraceError::io(path, e))?;
        Self::lines(path, format, file, at, digest)
    }

    fn parquet(
        path: &Path,
        next_part: usize,
        rows_done: u64,
        digest: crate::trace::Digest,
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
        digest: crate::trace::Digest,
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
    /// ([`TraceSink::set_part_interval`](crate::trace::TraceSink::set_part_interval)). JSON Lines and CSV ignore it.
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
    /// [`recorded_digest`](crate::trace::recorded_digest)): what a checkpoint records with that length.
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
