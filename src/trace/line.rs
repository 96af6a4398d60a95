//! Line formats (JSON Lines, CSV): a [`LineSink`] renders each row whole and a [`RowBuffer`]
//! hands whole lines to the file.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::digest::Digest;
use super::error::TraceError;
use super::row::RowRecord;
use super::sink::TraceSink;

/// How a line format (JSON Lines, CSV) renders one row as one whole line.
pub(super) trait LineFormat {
    /// Appends `row` and its line end to `buf`.
    ///
    /// # Errors
    ///
    /// The row cannot be rendered.
    fn encode(&mut self, row: &RowRecord<'_>, buf: &mut Vec<u8>) -> std::io::Result<()>;
}

/// A trace of whole lines: `format` renders each row, `out` hands whole lines to the file.
pub(super) struct LineSink<F> {
    pub(super) format: F,
    pub(super) out: RowBuffer,
}

impl<F> LineSink<F> {
    /// Appends one line rendered by `render`, naming the file if it fails.
    pub(super) fn write_line(
        &mut self,
        render: impl FnOnce(&mut F, &mut Vec<u8>) -> std::io::Result<()>,
    ) -> Result<(), TraceError> {
        render(&mut self.format, &mut self.out.buf)
            .map_err(|e| TraceError::io(&self.out.path, e))?;
        self.out.row_done()
    }
}

impl<F: LineFormat + Send> TraceSink for LineSink<F> {
    fn write_row(&mut self, row: &RowRecord<'_>) -> Result<(), TraceError> {
        self.write_line(|format, buf| format.encode(row, buf))
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        self.out.flush()
    }

    fn sync(&mut self) -> Result<Option<u64>, TraceError> {
        self.out.sync().map(Some)
    }

    fn tail(&mut self) -> Result<Option<String>, TraceError> {
        self.out.tail()
    }

    fn digest(&self) -> Option<String> {
        Some(self.out.digest.hex())
    }
}

/// Whole-row output buffering shared by the writers: rows are appended to a buffer and the
/// buffer goes to the file only as whole rows.
pub(super) struct RowBuffer {
    out: File,
    buf: Vec<u8>,
    pub(super) path: std::path::PathBuf,
    /// Bytes handed to the file so far (its length once flushed).
    written: u64,
    /// The digest of those bytes.
    digest: Digest,
}

const FLUSH_BYTES: usize = 1 << 16;

impl RowBuffer {
    pub(super) fn new(out: File, path: &Path, written: u64, digest: Digest) -> Self {
        RowBuffer {
            out,
            buf: Vec::with_capacity(FLUSH_BYTES * 2),
            path: path.to_path_buf(),
            written,
            digest,
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
        if let Err(e) = self.out.write_all(&self.buf) {
            // Part of the buffer may have reached the file (a full disk): cut it back to
            // its last whole row, so the trace ends with a complete row, not a torn one.
            // The rows not written are dropped, so nothing tries to write them again.
            let _ = self.out.set_len(self.written);
            let _ = std::io::Seek::seek(&mut self.out, std::io::SeekFrom::Start(self.written));
            self.buf.clear();
            return Err(TraceError::io(&self.path, e));
        }
        self.written += self.buf.len() as u64;
        self.digest.update(&self.buf);
        self.buf.clear();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        self.drain()?;
        self.out.flush().map_err(|e| TraceError::io(&self.path, e))
    }

    fn sync(&mut self) -> Result<u64, TraceError> {
        self.flush()?;
        self.out
            .sync_data()
            .map_err(|e| TraceError::io(&self.path, e))?;
        Ok(self.written)
    }

    fn tail(&mut self) -> Result<Option<String>, TraceError> {
        self.flush()?;
        tail_hash(&self.out, &self.path, self.written).map(Some)
    }
}

impl Drop for RowBuffer {
    fn drop(&mut self) {
        // Best effort: an error here has nowhere to go, and every row written before the
        // last explicit flush is already in the file.
        let _ = self.drain();
    }
}

/// A hash (FNV-1a, 64 bits, hex) of the last line of `file` that ends at byte `len`
/// (its newline included); of nothing when `len` is 0.
///
/// # Errors
///
/// An I/O error, or a last line longer than
/// [`MAX_TRACE_LINE_BYTES`](crate::limits::MAX_TRACE_LINE_BYTES).
pub fn tail_hash(file: &File, path: &Path, len: u64) -> Result<String, TraceError> {
    use std::os::unix::fs::FileExt;
    let limit = crate::limits::MAX_TRACE_LINE_BYTES as u64;
    // The line starts after the last newline before its own final byte.
    let end = len.saturating_sub(1);
    let mut start = 0;
    let mut pos = end;
    let mut chunk = vec![0u8; 1 << 16];
    while pos > 0 {
        let from = pos.saturating_sub(chunk.len() as u64);
        let n = (pos - from) as usize;
        file.read_exact_at(&mut chunk[..n], from)
            .map_err(|e| TraceError::io(path, e))?;
        if let Some(i) = chunk[..n].iter().rposition(|b| *b == b'\n') {
            start = from + i as u64 + 1;
            break;
        }
        pos = from;
        if end - pos > limit {
            return Err(TraceError::io(
                path,
                std::io::Error::other(format!(
                    "the line ending at byte {len} is longer than {limit} bytes"
                )),
            ));
        }
    }
    let mut line = vec![0u8; (len - start) as usize];
    file.read_exact_at(&mut line, start)
        .map_err(|e| TraceError::io(path, e))?;
    Ok(crate::output::content_hash(&line))
}
