//! Evaluation errors, each naming the file and line that caused it.

use std::fmt;
use std::path::PathBuf;

use crate::trace::TraceError;

/// What can stop an evaluation. A torn last line is not an error: it becomes a warning in
/// [`Report::warnings`](super::Report::warnings).
#[derive(Debug)]
#[non_exhaustive]
pub enum EvalError {
    /// A file cannot be read, or a line is not a valid row: a missing column, a bad value, or
    /// a reward, component, payout or ceiling that is NaN or infinite. Names file and line.
    Trace(TraceError),
    /// A run's steps skip or repeat.
    NonContiguous {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// The run.
        run_id: String,
        /// The step that should come next.
        expected: u64,
        /// The step found.
        found: u64,
    },
    /// A run's rows resume in a file after another run's rows.
    Interleaved {
        /// The file.
        path: PathBuf,
        /// 1-based line number where the run resumes.
        line: u64,
        /// The run that resumes.
        run_id: String,
        /// The run whose rows came in between.
        after: String,
    },
    /// No complete row in any of the files.
    NoRows {
        /// The files given.
        paths: Vec<PathBuf>,
    },
    /// `--role` names a role the trace has no reward for (or the trace has no roles).
    UnknownRole {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the first row without it.
        line: u64,
        /// The role asked for.
        role: String,
        /// The roles that row has, sorted (none in a trace of a world without roles).
        roles: Vec<String>,
    },
    /// An option is out of range.
    InvalidOptions(String),
    /// A file eval writes could not be written or read back: the plot, or the spill file
    /// that holds per-row rewards between its two passes.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Trace(e) => e.fmt(f),
            EvalError::NonContiguous {
                path,
                line,
                run_id,
                expected,
                found,
            } => write!(
                f,
                "{}:{line}: run `{run_id}` expected step {expected} but found step {found}; a run's steps must be contiguous (give a run's files in step order, and give distinct runs distinct run ids)",
                path.display()
            ),
            EvalError::Interleaved {
                path,
                line,
                run_id,
                after,
            } => write!(
                f,
                "{}:{line}: rows of run `{run_id}` resume after rows of run `{after}`; within a file each run's rows must be contiguous (write one file per run)",
                path.display()
            ),
            EvalError::NoRows { paths } => {
                let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "no complete trace row in {}; give at least one trace written by `perennial run`",
                    if names.is_empty() {
                        "the (empty) list of files".to_string()
                    } else {
                        names.join(", ")
                    }
                )
            }
            EvalError::UnknownRole {
                path,
                line,
                role,
                roles,
            } if roles.is_empty() => write!(
                f,
                "{}:{line}: `--role {role}`: the trace has no `role_rewards` column (no roles: it is not a run of a world with roles such as worlds/enterprise.toml); drop `--role`",
                path.display()
            ),
            EvalError::UnknownRole {
                path,
                line,
                role,
                roles,
            } => write!(
                f,
                "{}:{line}: `--role {role}`: the trace has no role `{role}`; its roles are {}",
                path.display(),
                roles.join(", ")
            ),
            EvalError::InvalidOptions(m) => f.write_str(m),
            EvalError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for EvalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EvalError::Trace(e) => Some(e),
            EvalError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

crate::error_from::wrap_errors!(EvalError {
    TraceError => Trace,
});
