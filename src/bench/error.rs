//! The bench layer's errors: a bad suite (file, line, field), a bad or foreign results
//! file, runs that failed, I/O.

use std::fmt;
use std::path::PathBuf;

use crate::eval::EvalError;
use crate::sweep::SweepError;
use crate::world_file::WorldFileError;

/// Everything `perennial bench` can fail with.
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// A suite is missing or its `suite.toml` is not valid.
    Suite(WorldFileError),
    /// A results file cannot be used: unreadable, not a results file, tampered with (its
    /// digest does not match), of another version of its suite, or not to be combined
    /// with the others.
    Results {
        /// The results file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The options given cannot be used together (`--out` holds full results and this is a
    /// smoke run, no results given).
    Options(String),
    /// A sweep of the suite's runs failed (a held directory, a foreign manifest, failed
    /// runs, a signal).
    Sweep(SweepError),
    /// Scoring the traces failed.
    Eval(EvalError),
    /// A file could not be written safely.
    Output(crate::output::OutputError),
    /// A file or folder could not be read or written.
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl BenchError {
    /// The exit code the command line uses: 2 for bad input (suites, results files,
    /// options), the sweep's own for a sweep, 1 for I/O and scoring.
    pub fn exit_code(&self) -> u8 {
        match self {
            BenchError::Suite(_) | BenchError::Results { .. } | BenchError::Options(_) => 2,
            BenchError::Output(_) => 2,
            BenchError::Sweep(e) => e.exit_code(),
            BenchError::Eval(_) | BenchError::Io { .. } => 1,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> BenchError {
        let path = path.into();
        move |source| BenchError::Io { path, source }
    }

    pub(crate) fn results(path: impl Into<PathBuf>, message: impl Into<String>) -> BenchError {
        BenchError::Results {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Suite(e) => e.fmt(f),
            BenchError::Results { path, message } => write!(f, "{}: {message}", path.display()),
            BenchError::Options(m) => f.write_str(m),
            BenchError::Sweep(e) => e.fmt(f),
            BenchError::Eval(e) => write!(f, "scoring the suite's traces: {e}"),
            BenchError::Output(e) => e.fmt(f),
            BenchError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Suite(e) => Some(e),
            BenchError::Sweep(e) => Some(e),
            BenchError::Eval(e) => Some(e),
            BenchError::Output(e) => Some(e),
            BenchError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

crate::error_from::wrap_errors!(BenchError {
    WorldFileError => Suite,
    SweepError => Sweep,
    EvalError => Eval,
});

crate::output::split_output_error!(BenchError);
