//! Episode export errors, each naming the file and the row or line.

use std::fmt;
use std::path::{Path, PathBuf};

use super::transcript::TranscriptError;
use crate::trace::TraceError;

/// What can go wrong exporting or reading episodes.
#[derive(Debug)]
#[non_exhaustive]
pub enum EpisodeError {
    /// A file could not be opened, read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A trace could not be read (it names its file and line).
    Trace(TraceError),
    /// A transcript could not be read, or does not fit its trace (it names its file, line
    /// and field).
    Transcript(TranscriptError),
    /// A trace row has no `obs` or `action`: the run did not record transitions.
    MissingTransitions {
        /// The trace.
        path: PathBuf,
        /// 1-based data row within the file (header and blank lines not counted).
        row: u64,
        /// The row's global step.
        step: u64,
    },
    /// The rows of a run are not whole and in step order.
    Inconsistent {
        /// The trace.
        path: PathBuf,
        /// 1-based data row within the file.
        row: u64,
        /// What is wrong and what to do.
        message: String,
    },
    /// A line of an episodes file is not an episode.
    Parse {
        /// The episodes file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The traces gave different episodes in the second pass of an export with
    /// advantages than in the first: a run was still writing to them.
    TracesChanged,
    /// An argument is out of range.
    InvalidArgument(String),
}

impl EpisodeError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        EpisodeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for EpisodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EpisodeError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            EpisodeError::Trace(e) => write!(f, "{e}"),
            EpisodeError::Transcript(e) => write!(f, "{e}"),
            EpisodeError::MissingTransitions { path, row, step } => write!(
                f,
                "{}: row {row} (step {step}) has no `obs` and `action` columns, which episode export needs; re-run with `--record-transitions` (HarnessConfig::record_transitions) to write them",
                path.display()
            ),
            EpisodeError::Inconsistent { path, row, message } => {
                write!(f, "{}: row {row}: {message}", path.display())
            }
            EpisodeError::Parse {
                path,
                line,
                message,
            } => write!(
                f,
                "{}:{line}: not an episode ({message}); each line must be one Episode JSON object",
                path.display()
            ),
            EpisodeError::TracesChanged => f.write_str(
                "the traces changed between the two passes of the export (is a run still writing to them?); export again once every run has finished",
            ),
            EpisodeError::InvalidArgument(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for EpisodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EpisodeError::Io { source, .. } => Some(source),
            EpisodeError::Trace(e) => Some(e),
            EpisodeError::Transcript(e) => Some(e),
            _ => None,
        }
    }
}

crate::error_from::wrap_errors!(EpisodeError {
    TranscriptError => Transcript,
    TraceError => Trace,
});
