//! Traces: one row per step, written as JSON Lines (default) or CSV, and read back streaming.
//!
//! A trace is the whole record of a run as far as evaluation is concerned: the metrics read
//! traces and nothing else. Each row carries exactly the columns of [`TraceRow`]; with
//! `--record-transitions` the observation the agent acted on (`obs`) and its `action` are
//! added. Rollout windows are never recorded.
//!
//! Writers render each row whole before handing it to the file, and write to the file only
//! in whole rows, so a run killed at any moment (even with SIGKILL) leaves a file of complete
//! rows, at most followed by one torn line that the reader reports and skips. The harness
//! flushes at every window boundary and at the end of the run.
//!
//! CSV flattens the component and payout maps into `c.<name>` and `p.<name>` columns (payout
//! cells are empty except on an episode's last step); `obs` and `action` are JSON text in
//! their cells.

mod csv_writer;
mod error;
mod jsonl;
mod reader;
mod row;

pub use csv_writer::CsvWriter;
pub use error::{TornTail, TraceError};
pub use jsonl::JsonlWriter;
pub use reader::{Located, RowRef, Terms, TraceFormat, TraceReader};
pub use row::{RowRecord, RunIdentity, TraceRow};

use std::path::Path;

/// Where trace rows go.
pub trait TraceSink {
    /// Appends one row.
    ///
    /// # Errors
    ///
    /// An I/O error of the underlying file.
    fn write_row(&mut self, row: &RowRecord<'_>) -> Result<(), TraceError>;

    /// Makes every row written so far durable in the file (whole rows only).
    ///
    /// # Errors
    ///
    /// An I/O error of the underlying file.
    fn flush(&mut self) -> Result<(), TraceError>;
}

/// A sink that drops every row: a run with tracing off.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTrace;

impl TraceSink for NoTrace {
    fn write_row(&mut self, _row: &RowRecord<'_>) -> Result<(), TraceError> {
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        Ok(())
    }
}

impl<S: TraceSink + ?Sized> TraceSink for Box<S> {
    fn write_row(&mut self, row: &RowRecord<'_>) -> Result<(), TraceError> {
        (**self).write_row(row)
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        (**self).flush()
    }
}

/// Creates a trace file for `format`, with the run's identity and reward term names.
///
/// # Errors
///
/// The file cannot be created.
pub fn create(
    path: &Path,
    format: TraceFormat,
    identity: &RunIdentity,
    components: &[String],
    payouts: &[String],
    record_transitions: bool,
) -> Result<Box<dyn TraceSink>, TraceError> {
    let file = std::fs::File::create(path).map_err(|e| TraceError::io(path, e))?;
    Ok(match format {
        TraceFormat::Jsonl => Box::new(JsonlWriter::new(
            file,
            path,
            identity,
            components,
            payouts,
            record_transitions,
        )),
        TraceFormat::Csv => Box::new(CsvWriter::new(
            file,
            path,
            identity,
            components,
            payouts,
            record_transitions,
        )?),
    })
}

/// Whole-row output buffering shared by the writers: rows are appended to a buffer and the
/// buffer goes to the file only as whole rows.
struct RowBuffer<W: std::io::Write> {
    out: W,
    buf: Vec<u8>,
    path: std::path::PathBuf,
}

const FLUSH_BYTES: usize = 1 << 16;

impl<W: std::io::Write> RowBuffer<W> {
    fn new(out: W, path: &Path) -> Self {
        RowBuffer {
            out,
            buf: Vec::with_capacity(FLUSH_BYTES * 2),
            path: path.to_path_buf(),
        }
    }

    /// Called after each complete row.
    fn row_done(&mut self) -> Result<(), TraceError> {
        if self.buf.len() >= FLUSH_BYTES {
            self.drain()?;
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<(), TraceError> {
        self.out
            .write_all(&self.buf)
            .map_err(|e| TraceError::io(&self.path, e))?;
        self.buf.clear();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        self.drain()?;
        self.out.flush().map_err(|e| TraceError::io(&self.path, e))
    }
}

impl<W: std::io::Write> Drop for RowBuffer<W> {
    fn drop(&mut self) {
        // Best effort: an error here has nowhere to go, and every row written before the
        // last explicit flush is already in the file.
        let _ = self.drain();
        let _ = self.out.flush();
    }
}
