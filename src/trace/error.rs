//! Trace errors, each naming the file and, where it applies, the line.

use std::fmt;
use std::path::{Path, PathBuf};

/// A torn last line: what a writer killed mid-row leaves behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number of the torn line; 0 for a Parquet part file the writer never
    /// finished (skipped whole).
    pub line: u64,
    /// Byte offset where the torn line starts; truncating the file there repairs it.
    pub byte_offset: u64,
}

impl fmt::Display for TornTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(
                f,
                "{}: a torn or half-written Parquet part (the writer was killed mid-part); it was skipped and every complete part was read",
                self.path.display()
            );
        }
        write!(
            f,
            "{}: line {} (byte {}) is torn (the writer was killed mid-row); every complete row before it was read",
            self.path.display(),
            self.line,
            self.byte_offset
        )
    }
}

/// What can go wrong writing or reading a trace.
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be opened, read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The output path is unsafe to write or locked by another writer.
    Output(crate::output::OutputError),
    /// A complete line is not a valid row.
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong and what to do.
        message: String,
    },
}

impl TraceError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        TraceError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn parse(path: &Path, line: u64, message: impl Into<String>) -> Self {
        TraceError::Parse {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            TraceError::Output(e) => write!(f, "{e}"),
            TraceError::Parse {
                path,
                line: 0,
                message,
            } => write!(f, "{}: {message}", path.display()),
            TraceError::Parse {
                path,
                line,
                message,
            } => write!(f, "{}:{line}: {message}", path.display()),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { source, .. } => Some(source),
            TraceError::Output(e) => Some(e),
            TraceError::Parse { .. } => None,
        }
    }
}

crate::error_from::wrap_errors!(TraceError {
    crate::output::OutputError => Output,
});
