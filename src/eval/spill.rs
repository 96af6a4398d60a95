//! The x_t of every row, in reading order, kept in a temporary file for pass 2.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::EvalError;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Eight little-endian bytes per row, written as pass 1 reads and read back by pass 2.
///
/// The file is removed as soon as it is open where the platform allows it (Unix), so
/// nothing is left behind even if the process is killed; elsewhere it is removed on drop.
pub(crate) struct Spill {
    out: BufWriter<File>,
    path: PathBuf,
    /// The bytes of [`Spill::push_all`]'s values, reused.
    bytes: Vec<u8>,
}

impl Spill {
    pub(crate) fn create() -> Result<Self, EvalError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "perennial-eval-{}-{}-{nanos}.x",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|source| io(&path, source))?;
        if cfg!(unix) {
            let _ = std::fs::remove_file(&path);
        }
        Ok(Spill {
            out: BufWriter::with_capacity(1 << 16, file),
            path,
            bytes: Vec::new(),
        })
    }

    pub(crate) fn push(&mut self, x: f64) -> Result<(), EvalError> {
        self.out
            .write_all(&x.to_le_bytes())
            .map_err(|source| io(&self.path, source))
    }

    /// Writes several values, in order.
    pub(crate) fn push_all(&mut self, xs: &[f64]) -> Result<(), EvalError> {
        self.bytes.clear();
        self.bytes.reserve(xs.len() * 8);
        for x in xs {
            self.bytes.extend_from_slice(&x.to_le_bytes());
        }
        self.out
            .write_all(&self.bytes)
            .map_err(|source| io(&self.path, source))
    }

    /// Reads the values back from the first.
    pub(crate) fn replay(&mut self) -> Result<Replay<'_>, EvalError> {
        self.out.flush().map_err(|source| io(&self.path, source))?;
        let file = self.out.get_mut();
        file.seek(SeekFrom::Start(0))
            .map_err(|source| io(&self.path, source))?;
        Ok(Replay {
            input: BufReader::with_capacity(1 << 16, file),
            path: &self.path,
        })
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        if !cfg!(unix) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn io(path: &std::path::Path, source: std::io::Error) -> EvalError {
    EvalError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            source.kind(),
            format!("the temporary file of rewards for pass 2: {source}"),
        ),
    }
}

/// The spilled values, in order.
pub(crate) struct Replay<'a> {
    input: BufReader<&'a mut File>,
    path: &'a PathBuf,
}

impl Replay<'_> {
    /// Fills `out` with the next `out.len()` values.
    pub(crate) fn read(&mut self, out: &mut [f64]) -> Result<(), EvalError> {
        let mut bytes = [0u8; 1 << 13];
        for chunk in out.chunks_mut(bytes.len() / 8) {
            let bytes = &mut bytes[..chunk.len() * 8];
            self.input
                .read_exact(bytes)
                .map_err(|source| io(self.path, source))?;
            for (x, b) in chunk.iter_mut().zip(bytes.chunks_exact(8)) {
                *x = f64::from_le_bytes(b.try_into().unwrap_or_default());
            }
        }
        Ok(())
    }
}
