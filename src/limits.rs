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

/// Longest line of a transcript, in bytes (16 MiB): one model call, its new messages,
/// tool calls and replies. A call of a model with a 128k-token context is well under it.
pub const MAX_TRANSCRIPT_LINE_BYTES: usize = 16 << 20;

/// Most regimes in one world file (100,000).
pub const MAX_REGIMES: usize = 100_000;

/// Most SKUs in an enterprise world (10,000). At 10,000 a run of the shipped warehouse
/// holds about 200 MB after 1,000 steps; at 100,000 it grew by about 10 MB a step.
pub const MAX_SKUS: usize = 10_000;

/// Most suppliers, dock doors or carriers in an enterprise world, each (1,000). At 1,000
/// of each, `actor-critic` runs the warehouse in under 100 MB; at 100,000 its linear
/// policy over observations × actions asked for 320 GB and aborted.
pub const MAX_SITES: usize = 1_000;

/// Most weights between the hidden layers of a PPO network, the sum of the products of
/// neighbouring widths (4,194,304: two layers of 2,048). Each network keeps its weights,
/// gradients and two Adam moments, so 8 layers of 4,096 (117 million weights) needed
/// gigabytes and aborted.
pub const MAX_HIDDEN_WEIGHTS: usize = 1 << 22;

/// Most PPO passes over each window (1,000; the usual 4 to 10 is far below). Without a
/// bound one window's update never ended.
pub const MAX_EPOCHS: usize = 1_000;

/// Largest count or duration in an enterprise world's parameters: stock, capacities,
/// quantities, hours (1e9).
pub const MAX_QUANTITY: f64 = 1e9;

/// Largest money amount, rate or multiplier in an enterprise world's parameters (1e9).
/// With quantities below [`MAX_QUANTITY`] a step's ledger stays below about 1e40.
pub const MAX_MAGNITUDE: f64 = 1e9;

/// Smallest `stock_scale` of an enterprise world (1e-3): observations are stock divided
/// by it, and a tiny divisor turned them into infinities.
pub const MIN_STOCK_SCALE: f64 = 1e-3;

/// Largest rollout window, in steps (16,777,216): the harness keeps one window of
/// transitions in memory.
pub const MAX_WINDOW_STEPS: usize = 1 << 24;

/// Largest smoothing window of `perennial eval`, in steps (16,777,216): eval keeps one
/// window of rewards per run in memory.
pub const MAX_EVAL_WINDOW: usize = 1 << 24;

/// Most runs in one sweep (100,000): worlds × agents × seeds. A sweep keeps its plan and
/// manifest in memory and starts one process per run.
pub const MAX_SWEEP_RUNS: usize = 100_000;

/// Most copies in one vector env built from a world file (1,048,576): far above the
/// thousands a vectorized benchmark uses, and refused before anything is allocated.
pub const MAX_VECTOR_COPIES: usize = 1 << 20;

/// Most rollouts one `perennial fork` runs: each is a trace file of its own.
pub const MAX_FORK_ROLLOUTS: u64 = 10_000;

/// Largest magnitude of a reward, component, payout, ceiling or bound a trace may hold
/// (1e30): far above what a world within these limits earns in a step (a weight of
/// [`MAX_MAGNITUDE`] on a quantity of [`MAX_QUANTITY`] over [`MAX_SKUS`] SKUs is 1e23),
/// so a number beyond it is a damaged file or a broken world. A run stops at such a
/// reward and a reader refuses one.
pub const MAX_REWARD: f64 = 1e30;

/// True when `v` is a number a trace may hold: finite and within [`MAX_REWARD`].
#[inline]
pub fn reward_in_range(v: f64) -> bool {
    v.abs() <= MAX_REWARD
}

/// Longest run id, task, agent id or regime label, in bytes (256). They are written in
/// every trace row and used in file names.
pub const MAX_ID_BYTES: usize = 256;

/// Longest run id or sweep name, in bytes (200): they name files, and the longest name
/// perennial puts beside a run's (`<run-id>.ckpt.json.<pid>.tmp`, `<stem>.manifest.json.lock`,
/// `<stem>.events.parquet`) must stay within the 255 bytes a file name may have.
pub const MAX_RUN_ID_BYTES: usize = 200;

/// Checks a run id or sweep name: [`check_id`], and at most [`MAX_RUN_ID_BYTES`] bytes.
///
/// # Errors
///
/// A message naming `what` and what to use instead.
pub fn check_run_id(what: &str, value: &str) -> Result<(), String> {
    check_id(what, value)?;
    if value.len() > MAX_RUN_ID_BYTES {
        return Err(format!(
            "{what} is {} bytes long; use at most {MAX_RUN_ID_BYTES}, so the files named after it keep to the 255 bytes of a file name",
            value.len()
        ));
    }
    Ok(())
}

/// Checks a run id, task or agent id: 1 to [`MAX_ID_BYTES`] bytes of ASCII letters, digits,
/// `-`, `_`, `.` and `+`, not starting with `.`. Such a value is safe as a file name (no
/// `/`, no `..`, no hidden file), in a CSV cell and in a JSON string, and reads the same
/// everywhere.
///
/// # Errors
///
/// A message naming `what` and the first offending character.
///
/// # Examples
///
/// ```
/// use perennial::limits::check_id;
///
/// assert!(check_id("--run-id", "warehouse-random-seed0").is_ok());
/// assert!(check_id("--run-id", "../../x").is_err());
/// assert!(check_id("--run-id", "").is_err());
/// ```
pub fn check_id(what: &str, value: &str) -> Result<(), String> {
    const ALLOWED: &str = "ASCII letters, digits, `-`, `_`, `.` and `+`, not starting with `.`";
    if value.is_empty() {
        return Err(format!("{what} is empty; use {ALLOWED}"));
    }
    if value.len() > MAX_ID_BYTES {
        return Err(format!(
            "{what} is {} bytes long; use at most {MAX_ID_BYTES}",
            value.len()
        ));
    }
    if value.starts_with('.') {
        return Err(format!("{what} `{value}` starts with `.`; use {ALLOWED}"));
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+')))
    {
        return Err(format!("{what} {:?} contains {c:?}; use {ALLOWED}", value));
    }
    Ok(())
}

/// Bytes a checkpoint file may hold: far above any world's and agent's saved state that
/// the other limits allow, far below what would exhaust memory.
pub const MAX_CHECKPOINT_BYTES: u64 = 4 << 30;

/// Bytes a secondary input may hold: a run manifest beside a trace, a sweep's `--collect`
/// results file.
pub const MAX_SIDE_FILE_BYTES: u64 = 64 << 20;

/// Reads the regular file `path` whole, refusing anything else (a FIFO, which would block,
/// or a device such as `/dev/zero`, which never ends) and a file longer than `limit`
/// bytes; `what` names the file in the message.
///
/// # Errors
///
/// A message saying what is wrong.
pub fn read_regular(path: &std::path::Path, limit: u64, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "{}: is not a regular file; {what} must be one",
            path.display()
        ));
    }
    if meta.len() > limit {
        return Err(format!(
            "{}: holds {} bytes, more than {limit}, the limit for {what}; is it the right file?",
            path.display(),
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{}: grew past {limit} bytes, the limit for {what}, while it was read",
            path.display()
        ));
    }
    Ok(bytes)
}
