//! The sweep layer's errors: a bad sweep file (file, line, field), a held directory, I/O.

use std::fmt;
use std::path::PathBuf;

use crate::eval::EvalError;

/// What is wrong with a sweep file, and where: the same file, line, field and message as
/// a world file's error, displayed the same way.
pub type SweepFileError = crate::world_file::WorldFileError;

/// Everything a sweep can fail with.
#[derive(Debug)]
#[non_exhaustive]
pub enum SweepError {
    /// The sweep file is not valid.
    File(SweepFileError),
    /// Another process holds the sweep directory.
    Locked {
        /// The sweep directory.
        dir: PathBuf,
        /// The holder's process id, as it wrote it in the lock file.
        pid: Option<u32>,
    },
    /// The sweep directory (`--out`) is a file or something else that is not a directory.
    NotADirectory {
        /// The path given.
        dir: PathBuf,
    },
    /// The directory holds a manifest that cannot be used with this sweep file.
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// A file in the sweep directory cannot be written safely: something other than a
    /// regular file (a symlink, a FIFO) stands at its path.
    Output(crate::output::OutputError),
    /// A file or directory could not be read or written, or a run could not be started.
    Io {
        /// The path involved.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Scoring the finished traces failed.
    Eval(EvalError),
    /// The sweep was stopped (SIGINT or SIGTERM): its running runs were stopped with a
    /// checkpoint and recorded as pending; running the sweep again continues them.
    Interrupted {
        /// The sweep directory.
        dir: PathBuf,
    },
    /// Some runs failed (each twice, or once with bad input); the others finished and were
    /// scored.
    RunsFailed {
        /// `run_id: error` for each failed run.
        failed: Vec<String>,
    },
}

impl SweepError {
    /// The exit code the command line uses: 2 for bad input (sweep file, options, a held
    /// directory, an `--out` that is not a directory, a foreign manifest), 1 for failed runs
    /// and I/O, 143 when stopped by a signal (the command line uses 128 + the signal).
    pub fn exit_code(&self) -> u8 {
        match self {
            SweepError::File(_)
            | SweepError::Locked { .. }
            | SweepError::NotADirectory { .. }
            | SweepError::Manifest { .. }
            | SweepError::Output(_) => 2,
            SweepError::Eval(_) | SweepError::Io { .. } | SweepError::RunsFailed { .. } => 1,
            // As `perennial run` stopped by SIGTERM; the caller may know the signal.
            SweepError::Interrupted { .. } => 143,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SweepError {
        let path = path.into();
        move |source| SweepError::Io { path, source }
    }
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::File(e) => e.fmt(f),
            SweepError::Locked { dir, pid } => {
                write!(
                    f,
                    "{}: another sweep is using this directory",
                    dir.display()
                )?;
                match pid {
                    Some(pid) => write!(f, " (pid {pid})")?,
                    None => write!(f, " (its pid is not recorded yet)")?,
                }
                write!(f, "; wait for it to finish or give another --out")
            }
            SweepError::NotADirectory { dir } => write!(
                f,
                "{}: is not a directory; give --out a directory (it is created when missing)",
                dir.display()
            ),
            SweepError::Manifest { path, message } => write!(f, "{}: {message}", path.display()),
            SweepError::Output(e) => e.fmt(f),
            SweepError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            SweepError::Eval(e) => write!(f, "scoring the sweep's traces: {e}"),
            SweepError::Interrupted { dir } => write!(
                f,
                "{}: stopped by a signal; every running run was stopped at a checkpoint and is pending: run the same sweep again to continue",
                dir.display()
            ),
            SweepError::RunsFailed { failed } => {
                write!(f, "{} run(s) failed:", failed.len())?;
                for line in failed {
                    write!(f, "\n  {line}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for SweepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SweepError::File(e) => Some(e),
            SweepError::Io { source, .. } => Some(source),
            SweepError::Eval(e) => Some(e),
            SweepError::Output(e) => Some(e),
            _ => None,
        }
    }
}

crate::error_from::wrap_errors!(SweepError {
    SweepFileError => File,
    EvalError => Eval,
});

crate::output::split_output_error!(SweepError);
