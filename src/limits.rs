//! Documented size limits, checked when a file is loaded so that no input can make a run
//! allocate without bound, overflow an index or take quadratic time.
//!
//! Each limit is far above any sensible use and far below what would exhaust a machine:
//! a world file or option beyond one is refused at load, with the file, line and field.

/// Largest world file, in bytes (16 MiB). World files are hand-written tables; the
/// largest shipped one is a few kilobytes.
pub const MAX_WORLD_FILE_BYTES: u64 = 16 << 20;

/// Longest line of a trace file, in bytes (16 MiB). A row with `--record-transitions` of
/// the largest allowed world is well under a megabyte.
pub const MAX_TRACE_LINE_BYTES: usize = 16 << 20;

/// Most regimes in one world file (100,000).
pub const MAX_REGIMES: usize = 100_000;

/// Most SKUs in an enterprise world (100,000).
pub const MAX_SKUS: usize = 100_000;

/// Most suppliers, dock doors or carriers in an enterprise world, each (100,000).
pub const MAX_SITES: usize = 100_000;

/// Largest rollout window, in steps (16,777,216): the harness keeps one window of
/// transitions in memory.
pub const MAX_WINDOW_STEPS: usize = 1 << 24;

/// Largest smoothing window of `perennial eval`, in steps (16,777,216): eval keeps one
/// window of rewards per run in memory.
pub const MAX_EVAL_WINDOW: usize = 1 << 24;

/// Longest run id, task, agent id or regime label, in bytes (256). They are written in
/// every trace row and used in file names.
pub const MAX_ID_BYTES: usize = 256;
