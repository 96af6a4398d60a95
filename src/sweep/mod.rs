//! Sweeps: every (world, agent, seed) run of a sweep file, on this machine or on Ray.
//!
//! # The sweep file
//!
//! ```toml
//! [sweep]
//! name = "warehouse-baselines"              # names the output directory
//! worlds = ["worlds/warehouse.toml", "worlds/logistics.toml"]
//! agents = ["random", "base-stock", "adaptive-base-stock"]
//! seeds = { from = 0, count = 5 }           # or a list: [0, 7, 42]
//! steps = 100000                            # step budget of every run
//! checkpoint_every = 10000                  # optional; default steps / 10
//! format = "jsonl"                          # optional; jsonl | csv | parquet
//! # part_seconds = 1                        # optional, with format = "parquet" only: seconds between part files (0: every window)
//! ```
//!
//! [`SweepFile::load`] validates it whole before anything runs: every world file must load,
//! names and seeds must be unique, and every error names the file, line and field. Relative
//! world paths are taken from the working directory, then from the crate's directory
//! (where the shipped `worlds/` are), as `perennial run` does. Runs are named
//! `<task>-<agent>-seed<seed>` (what `perennial run` would call them), so two worlds of one
//! task are refused: their runs would share ids and be pooled by the eval.
//!
//! # The sweep directory
//!
//! `perennial sweep FILE [--jobs N] [--out DIR]` (default `runs/sweeps/<name>/`) writes:
//!
//! | path | what |
//! |---|---|
//! | `traces/<run-id>.<format>` | each run's trace (a directory of part files for Parquet), with its `<run-id>.manifest.json` (and its `.lock`) and `<run-id>.events.<format>` beside it |
//! | `checkpoints/<run-id>.ckpt.json` | each run's last checkpoint |
//! | `logs/<run-id>.log` | each run's output, one header line per attempt |
//! | `manifest.json` | [`SweepManifest`]: status, exit code, attempts, steps done, paths, error of every run; rewritten atomically now and then (after ten times as long as its last write took) and at the end |
//! | `manifest.journal` | each run's record as it starts or ends, one JSON line, applied over `manifest.json` when it is read; emptied whenever the manifest is rewritten and removed at the end |
//! | `eval.json`, `eval.txt`, `plot.svg` | `perennial eval` of every finished trace: `eval.json` the whole report, `eval.txt` the group comparison (one group per (task, agent), each metric's mean over seeds with its 95% bootstrap CI), `plot.svg` the plot |
//! | `sweep.lock` | the lock, holding the pid of the sweep using the directory |
//!
//! Each run is a separate `perennial run` process (the running executable, or
//! `$PERENNIAL_BIN` when set) with explicit `--run-id`, `--trace`, `--checkpoint` and
//! `--checkpoint-every`, so its trace is byte-identical to the same `perennial run` made
//! alone. `--jobs` (default: the machine's cores) runs that many at once.
//!
//! Rerunning the command is idempotent: runs the manifest records as done are skipped, runs
//! that were interrupted (the sweep was killed) continue from their checkpoint with
//! `perennial run --resume`, and in each invocation a failed run is tried once more and then
//! recorded as failed (at once when it failed on bad input, exit code 2: trying again cannot
//! help). A failed run stops nothing else; it is listed in the summary and the command exits
//! with code 1. A directory whose manifest records a run started with other options belongs
//! to another version of the sweep and is refused.
//!
//! Two sweeps never share a directory: the first holds an advisory `flock` on
//! `sweep.lock` and the second stops with an error naming the holder's pid. The kernel drops
//! the lock when its holder dies, so a SIGKILLed sweep leaves no stale lock.
//!
//! # Other backends: `--plan-json` and `--collect`
//!
//! A backend that runs the runs elsewhere (the Python package's Ray backend) reuses this
//! planning instead of repeating it:
//!
//! - `perennial sweep FILE [--out DIR] --plan-json` prints the sweep directory and every
//!   run (`run_id`, `task`, `agent`, `seed`, `trace`, `checkpoint`, `log`, `status` from the
//!   manifest, `argv` to start it, `resume_argv` to continue it; arguments after the
//!   program name) without running anything. A run continues with `resume_argv` when its
//!   checkpoint file exists, and starts with `argv` otherwise; each attempt appends a line
//!   starting with [`ATTEMPT_HEADER`] to its log and then the run's output.
//! - `perennial sweep FILE [--out DIR] --collect RESULTS.json` takes the lock, merges
//!   `{"<run-id>": {"exit_code": 0, "attempts": 1}, ...}` (`exit_code` null for a run
//!   ended by a signal) into the manifest, and writes the eval files, exactly as the local
//!   runner does at its end.

mod error;
mod file;
mod lock;
mod manifest;
mod plan;
mod runner;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::registry::Registry;

use crate::world_file::TomlFile;
pub use error::{SweepError, SweepFileError};
pub use file::{SweepFile, SweepWorld};
pub use lock::DirLock;
pub use manifest::{MANIFEST_VERSION, RunRecord, RunStatus, SweepManifest};
pub use plan::{PlannedRun, plan};
pub use runner::{SweepOutcome, run_local, run_local_until};

/// How each attempt's header line in a run's log starts.
pub const ATTEMPT_HEADER: &str = "== perennial sweep attempt";

/// `perennial sweep SWEEP_FILE [--jobs N] [--out DIR] [--plan-json | --collect RESULTS]`
// The doc comments are clap's help text: `<name>` is a placeholder, not an HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct SweepArgs {
    /// The sweep file (TOML).
    pub sweep_file: PathBuf,
    /// Runs at once [default: the machine's cores].
    #[cfg_attr(feature = "cli", arg(long, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)))]
    pub jobs: Option<usize>,
    /// Sweep directory [default: runs/sweeps/<name>/].
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub out: Option<PathBuf>,
    /// Print the planned runs as JSON (with their exact `perennial` arguments) and run
    /// nothing.
    #[cfg_attr(feature = "cli", arg(long, conflicts_with_all = ["jobs", "collect"]))]
    pub plan_json: bool,
    /// Record the exit codes in RESULTS.json (from runs made elsewhere) in the manifest and
    /// score the finished traces; run nothing.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "RESULTS.json", conflicts_with = "jobs")
    )]
    pub collect: Option<PathBuf>,
}

/// The sweep directory: `out`, else `runs/sweeps/<name>/`, made absolute.
pub fn sweep_dir(sweep: &SweepFile, out: Option<&Path>) -> PathBuf {
    let dir = out.map_or_else(
        || Path::new("runs").join("sweeps").join(&sweep.name),
        Path::to_path_buf,
    );
    std::path::absolute(&dir).unwrap_or(dir)
}

/// The command a program embedding the command line starts its runs with (see
/// [`set_run_command`]).
static EMBEDDED: std::sync::OnceLock<(PathBuf, Vec<std::ffi::OsString>)> =
    std::sync::OnceLock::new();

/// For a program that embeds the command line (the Python package runs it inside the
/// interpreter, whose executable is not `perennial`): the program and leading arguments
/// each run of a sweep starts with when `$PERENNIAL_BIN` is unset, such as
/// `python -m perennial`. Only the first call counts.
pub fn set_run_command(program: PathBuf, leading: Vec<std::ffi::OsString>) {
    let _ = EMBEDDED.set((program, leading));
}

/// The arguments that go before `run ...` when starting `program`: the embedder's leading
/// ones when `program` is its program, else none.
pub(crate) fn leading_args(program: &Path) -> &'static [std::ffi::OsString] {
    match EMBEDDED.get() {
        Some((p, leading)) if p == program => leading,
        _ => &[],
    }
}

/// The executable each run is started with: `$PERENNIAL_BIN`, else the embedder's (see
/// [`set_run_command`]), else the running one.
///
/// # Errors
///
/// The running executable cannot be found.
pub fn perennial_program() -> Result<PathBuf, SweepError> {
    match std::env::var_os("PERENNIAL_BIN") {
        Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
        _ => match EMBEDDED.get() {
            Some((p, _)) => Ok(p.clone()),
            None => std::env::current_exe().map_err(SweepError::io("the perennial executable")),
        },
    }
}

/// Runs `perennial sweep` with `registry`'s worlds and agents (the runs themselves are
/// started as [`perennial_program`], which must know the same ones): returns what to print
/// on stdout.
///
/// # Errors
///
/// A bad sweep file, a held or foreign directory, I/O (see [`SweepError::exit_code`]), and
/// [`SweepError::RunsFailed`] when any run failed: the summary is then in the error, after
/// everything else was run, recorded and scored.
///
/// `stop` is raised by the command line's SIGINT and SIGTERM handler: see
/// [`run_local_until`].
pub fn run_cli(
    registry: &Registry,
    args: &SweepArgs,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<String, SweepError> {
    let sweep = SweepFile::load_with(&args.sweep_file, registry)?;
    let dir = sweep_dir(&sweep, args.out.as_deref());
    // The sweep manifest records every path a run writes, under `dir`, and the world
    // files: each must be UTF-8 before anything is written.
    crate::output::check_unicode("sweep --out", &dir)?;
    crate::output::check_unicode("the sweep file", &sweep.path)?;
    for world in &sweep.worlds {
        crate::output::check_unicode("a world file of the sweep", &world.path)?;
    }
    if args.plan_json {
        return plan_json(&sweep, &dir);
    }
    let outcome = match &args.collect {
        Some(results) => collect(&sweep, &dir, results)?,
        None => {
            let jobs = args.jobs.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
            });
            run_local_until(&sweep, &dir, jobs, &perennial_program()?, stop)?
        }
    };
    let summary = outcome.summary();
    let failed = outcome.failures();
    if failed.is_empty() {
        Ok(summary)
    } else {
        // Ignore a closed stdout (`perennial sweep ... | head`), as the other reports do.
        let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), summary.as_bytes());
        Err(SweepError::RunsFailed { failed })
    }
}

/// The `--plan-json` document.
fn plan_json(sweep: &SweepFile, dir: &Path) -> Result<String, SweepError> {
    let doc = plan_document(sweep, dir)?;
    let mut out = serde_json::to_string_pretty(&doc).expect("the plan is strings and numbers");
    out.push('\n');
    Ok(out)
}

/// The sweep's planned runs with their status in `dir`'s manifest, its paths and name:
/// what the Ray backend runs (`--plan-json`, and `perennial bench run --plan-json` per
/// sweep).
pub(crate) fn plan_document(
    sweep: &SweepFile,
    dir: &Path,
) -> Result<serde_json::Value, SweepError> {
    let runs = plan(sweep, dir);
    let manifest = SweepManifest::load_or_new(dir, &sweep.name, &sweep.path, &runs)?;
    let runs: Vec<serde_json::Value> = runs
        .iter()
        .zip(&manifest.runs)
        .map(|(run, rec)| {
            let mut v = serde_json::to_value(run).expect("a planned run is strings and numbers");
            v["status"] = serde_json::to_value(rec.status).expect("a status is a string");
            v
        })
        .collect();
    Ok(serde_json::json!({
        "name": sweep.name,
        "dir": dir,
        "manifest": SweepManifest::path_in(dir),
        "lock": DirLock::path_in(dir),
        "runs": runs,
    }))
}

/// How a run made elsewhere ended: an entry of a `--collect` results file.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunExit {
    exit_code: Option<i32>,
    #[serde(default = "one")]
    attempts: u32,
}

fn one() -> u32 {
    1
}

/// Merges results of runs made elsewhere into the manifest and scores the finished traces.
fn collect(sweep: &SweepFile, dir: &Path, results: &Path) -> Result<SweepOutcome, SweepError> {
    let text = crate::limits::read_regular(
        results,
        crate::limits::MAX_SIDE_FILE_BYTES,
        "a results file",
    )
    .map_err(|message| SweepError::Manifest {
        path: results.to_path_buf(),
        message,
    })?;
    let results: BTreeMap<String, RunExit> =
        serde_json::from_slice(&text).map_err(|e| SweepError::Manifest {
            path: results.to_path_buf(),
            message: format!(
                "not a results file ({e}); expected {{\"<run-id>\": {{\"exit_code\": 0, \"attempts\": 1}}}}"
            ),
        })?;
    collect_exits(sweep, dir, &results)
}

/// Records the exits of runs made elsewhere in `dir`'s manifest and scores the finished
/// traces, under the directory's lock.
pub(crate) fn collect_exits(
    sweep: &SweepFile,
    dir: &Path,
    results: &BTreeMap<String, RunExit>,
) -> Result<SweepOutcome, SweepError> {
    let _lock = DirLock::acquire(dir)?;
    let runs = plan(sweep, dir);
    let mut manifest = SweepManifest::load_or_new(dir, &sweep.name, &sweep.path, &runs)?;
    if let Some(unknown) = results
        .keys()
        .find(|id| !runs.iter().any(|r| &r.run_id == *id))
    {
        return Err(SweepError::Manifest {
            path: dir.join("results"),
            message: format!("run `{unknown}` is not a run of {}", sweep.path.display()),
        });
    }
    for (run, rec) in runs.iter().zip(&mut manifest.runs) {
        if let Some(r) = results.get(&run.run_id) {
            rec.attempts = rec.attempts.saturating_add(r.attempts);
            let rows = manifest::RowCounter::default().rows(&run.trace, sweep.format);
            runner::record_attempt(rec, run, r.exit_code, rows);
        }
    }
    runner::finish(dir, &runs, manifest, sweep.steps)
}
