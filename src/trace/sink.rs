//! Where trace rows go ([`TraceSink`]) and which columns they carry ([`TraceColumns`]).

use super::error::TraceError;
use super::row::RowRecord;

/// Where trace rows go.
///
/// A sink is `Send` so a run (a [`crate::session::Session`]) can move between threads: the
/// server keeps each session's run behind a lock that any of its worker threads takes.
pub trait TraceSink: Send {
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

    /// Flushes and makes the file durable (fsync), returning the position a checkpoint
    /// records (the file's length in bytes; a Parquet trace's rows in finished parts).
    /// Sinks without a file return `None`, and a checkpoint then records no trace position.
    ///
    /// # Errors
    ///
    /// An I/O error of the underlying file.
    fn sync(&mut self) -> Result<Option<u64>, TraceError> {
        self.flush()?;
        Ok(None)
    }

    /// A hash of the last complete line in the file ([`tail_hash`](super::tail_hash)), called after
    /// [`TraceSink::sync`]: what a checkpoint records so a resume can tell the trace it
    /// wrote from one replaced or rewritten since. Sinks without a file return `None`.
    ///
    /// # Errors
    ///
    /// An I/O error reading the file back.
    fn tail(&mut self) -> Result<Option<String>, TraceError> {
        Ok(None)
    }

    /// The digest of everything in the file up to the position [`TraceSink::sync`] just
    /// returned (see [`recorded_digest`](super::recorded_digest)), called after it: what a checkpoint records so a
    /// resume can prove the trace holds the very rows it wrote. Sinks without a file
    /// return `None`.
    fn digest(&self) -> Option<String> {
        None
    }

    /// Writes out everything still buffered; called once, when the run ends. The default
    /// flushes.
    ///
    /// # Errors
    ///
    /// An I/O error of the underlying file.
    fn close(&mut self) -> Result<(), TraceError> {
        self.flush()
    }

    /// Hands the sink the run manifest (JSON) to store in its files' metadata, for formats
    /// that have file metadata (Parquet); the default ignores it.
    fn attach_manifest(&mut self, _json: &str) {}

    /// How often a flush cuts a Parquet part ([`PART_SECONDS`](super::PART_SECONDS) by default; zero: at every
    /// flush, waiting until the part is on disk). JSON Lines and CSV hand their rows to the
    /// file at every flush and ignore it.
    fn set_part_interval(&mut self, _every: std::time::Duration) {}
}

/// The columns a trace carries besides the fixed ones: the env's reward component and
/// payout names and whether the `obs` and `action` columns are written. The harness builds
/// it from its env's spec and its config ([`TraceColumns::for_env`]), so rows always match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceColumns {
    /// Per-step reward component names, in the env's order.
    pub components: Vec<String>,
    /// Episode-end payout names, in the env's order.
    pub payouts: Vec<String>,
    /// Write the `obs` and `action` columns.
    pub record_transitions: bool,
    /// Write the [`BOUND`](crate::trace::BOUND) column: the env declares an expected bound.
    pub bound: bool,
    /// The env's roles: with any, the [`ROLE_REWARDS`](super::row::ROLE_REWARDS) column
    /// is written.
    pub roles: Vec<String>,
}

impl TraceColumns {
    /// The columns of a trace of `env`: its spec's component and payout names, and the
    /// `bound` column when it declares an expected bound, and its roles.
    pub fn for_env<E: crate::env::Env + ?Sized>(env: &E, record_transitions: bool) -> Self {
        let spec = env.spec();
        TraceColumns {
            components: spec.components.clone(),
            payouts: spec.payouts.clone(),
            record_transitions,
            bound: env.expected_bound().is_some(),
            roles: env.role_names().to_vec(),
        }
    }
}
