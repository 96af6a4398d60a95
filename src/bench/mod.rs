//! perennial-bench: versioned suites, their reference bounds, and the table of results.
//!
//! A **suite** is a folder, `bench/v1/<name>/`, holding `suite.toml` and the world file it
//! runs (copied in, so the folder is self-contained):
//!
//! ```toml
//! [suite]
//! name = "warehouse"
//! world = "warehouse.toml"            # a file of this folder
//! steps = 200000                      # step budget of every run
//! seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
//! tracks = ["none"]                   # notify levels: each a separate row of the table
//! references = ["random", "best-fixed", "oracle"]   # or "ceiling" instead of "oracle"
//!
//! [[best_fixed]]                      # the fixed policies best-fixed chooses among
//! agent = "base-stock"
//! options = { reorder_hours = 24.0, target_hours = 36.0 }
//! ```
//!
//! A suite's identity is [`suite_hash`] of its folder's files. Results carry it, and
//! `perennial bench report` refuses results whose suite has changed since: changing a suite
//! means a new version folder, never an edit.
//!
//! `perennial bench run SUITE... --agent A [--agent-opt K=V] [--jobs J] --out DIR [--seeds
//! N] [--steps N]` runs, per suite and track, the references' seeds and the agent's, each
//! policy as a [sweep](crate::sweep) in `DIR/runs/<suite>/<track>/<policy>/` (so a rerun
//! resumes, and runs already done for another agent are reused), and writes
//! `DIR/results/<suite>.<track>.<policy>.json` ([`Results`]). `--seeds` and `--steps`
//! shrink the suites for a smoke run; its results say so and are never combined with full
//! ones. A neural agent's results hold, per seed, its plasticity diagnostics after its last
//! update (from the run's events table). `--plan-json` and `--collect` split a bench run
//! for the Python package's Ray backend ([`plan_json`], [`collect`]).
//!
//! `perennial bench report RESULTS... [--json | --markdown] [--out DIR]` checks every
//! results file (digest, suite hash, budgets, references), then prints the [`Table`] and
//! writes `table.txt`, `table.md`, `table.json` and `profile.svg` into `--out` (default
//! `runs/bench-report/`).
//!
//! # The score
//!
//! Per seed, the run's mean reward m is the mean of x (the reward without episode-end
//! payouts, as `perennial eval` reads it) over its 100-step blocks (every step when the
//! budget is a multiple of 100). The normalized score is (m − random) / (top − random),
//! with random and top the same seed's references: top is the oracle's m, or where a suite
//! has no oracle (CartPole) the world's ceiling (the trace's per-step cap: the pole never
//! falls). Regret is top − m. Best-fixed is the `[[best_fixed]]` policy with the highest m
//! averaged over the seeds, held fixed all run long.

mod error;
mod report;
mod results;
mod run;
mod suite;
mod svg;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

pub use error::BenchError;
pub use report::{
    BASELINE, BOOTSTRAP_SEED, Medians, Overall, RESAMPLES, ReferenceSummary, Row, SCORE, Section,
    Table, combine, expand,
};
pub use results::{
    Candidate, RESULTS_FORMAT, Reference, Results, RunResult, WINDOW, normalized, run_ceiling,
    run_mean, run_result,
};
pub use run::{RunOptions, collect, plan_json, results_path, run};
pub use suite::{FixedPolicy, ReferenceKind, SHIPPED, SUITE_FILE, Suite, resolve, suite_hash};
pub use svg::profile_svg;

use crate::registry::Registry;

/// `perennial bench run SUITE... --agent A [--agent-opt K=V] [--jobs J] --out DIR`
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct BenchRunArgs {
    /// Suites: shipped names (`warehouse`, see bench/v1/) or suite folders.
    #[cfg_attr(feature = "cli", arg(required = true))]
    pub suites: Vec<String>,
    /// The agent to run.
    #[cfg_attr(feature = "cli", arg(long))]
    pub agent: String,
    /// An agent option, `KEY=VALUE` as `perennial run --agent-opt` takes it. Repeatable.
    #[cfg_attr(feature = "cli", arg(long = "agent-opt", value_name = "KEY=VALUE"))]
    pub agent_opt: Vec<String>,
    /// Runs at once [default: the machine's cores].
    #[cfg_attr(feature = "cli", arg(long, value_name = "J",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)))]
    pub jobs: Option<usize>,
    /// The results folder (runs/ and results/ inside).
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub out: PathBuf,
    /// Smoke run: only each suite's first N seeds.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)))]
    pub seeds: Option<usize>,
    /// Smoke run: N steps per run instead of the suite's budget.
    #[cfg_attr(feature = "cli", arg(long, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..)))]
    pub steps: Option<u64>,
    /// Print every run the bench run needs as JSON (per policy's sweep, with the exact
    /// `perennial` arguments) and run nothing: what the Python package's Ray backend runs.
    #[cfg_attr(feature = "cli", arg(long, conflicts_with_all = ["jobs", "collect"]))]
    pub plan_json: bool,
    /// Record how the runs of `--plan-json` ended elsewhere (EXITS.json: per sweep folder,
    /// per run id, its exit code and attempts) and score them into the results files; run
    /// nothing.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "EXITS.json", conflicts_with = "jobs")
    )]
    pub collect: Option<PathBuf>,
}

/// `perennial bench report RESULTS... [--json | --markdown] [--out DIR]`
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct BenchReportArgs {
    /// Results files, or folders (`bench run --out`) whose results/ are read.
    #[cfg_attr(feature = "cli", arg(required = true))]
    pub results: Vec<PathBuf>,
    /// Print the table as JSON instead of text.
    #[cfg_attr(feature = "cli", arg(long))]
    pub json: bool,
    /// Print the table as Markdown instead of text (a section per suite and track, each
    /// row with its command).
    #[cfg_attr(feature = "cli", arg(long, conflicts_with = "json"))]
    pub markdown: bool,
    /// Where table.txt, table.md, table.json and profile.svg are written [default:
    /// runs/bench-report/].
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub out: Option<PathBuf>,
}

/// Runs `perennial bench run`; returns what to print.
///
/// # Errors
///
/// A bad suite or option, a failed sweep: see [`BenchError::exit_code`].
pub fn run_cli(
    registry: &Registry,
    args: &BenchRunArgs,
    stop: &AtomicBool,
) -> Result<String, BenchError> {
    for opt in &args.agent_opt {
        if !opt.contains('=') {
            return Err(BenchError::Options(format!(
                "--agent-opt `{opt}`: give KEY=VALUE"
            )));
        }
    }
    let suites = args
        .suites
        .iter()
        .map(|s| Suite::load(s))
        .collect::<Result<Vec<_>, _>>()?;
    let options = RunOptions {
        agent: args.agent.clone(),
        agent_options: args.agent_opt.clone(),
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        }),
        out: args.out.clone(),
        seeds: args.seeds,
        steps: args.steps,
    };
    if args.plan_json {
        return plan_json(registry, &suites, &options);
    }
    match &args.collect {
        Some(exits) => collect(registry, &suites, &options, exits),
        None => run(registry, &suites, &options, stop),
    }
}

/// Runs `perennial bench report`: checks and combines the results, writes table.txt,
/// table.md, table.json and profile.svg, and returns what to print. Nothing is written
/// unless every file passed.
///
/// # Errors
///
/// A bad, tampered, foreign or mixed results file ([`BenchError::Results`], exit 2), a
/// file that cannot be written.
pub fn report_cli(args: &BenchReportArgs) -> Result<String, BenchError> {
    let table = combine(&args.results)?;
    let text = table.to_text();
    let markdown = table.to_markdown();
    let mut json = serde_json::to_string_pretty(&table).expect("a table is strings and numbers");
    json.push('\n');
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join("bench-report"));
    let inputs = expand(&args.results)?;
    let outputs = [
        ("table.txt", text.clone()),
        ("table.md", markdown.clone()),
        ("table.json", json.clone()),
        ("profile.svg", profile_svg(&table)),
    ]
    .map(|(name, content)| (dir.join(name), content));
    let ins: Vec<(&str, &std::path::Path)> = inputs
        .iter()
        .map(|p| ("a results file", p.as_path()))
        .collect();
    let outs: Vec<(&str, &std::path::Path)> = outputs
        .iter()
        .map(|(p, _)| ("a report file", p.as_path()))
        .collect();
    crate::output::check_distinct(&ins, &outs)?;
    for (path, content) in &outputs {
        crate::output::write_atomic(path, content.as_bytes())?;
    }
    if args.json {
        return Ok(json);
    }
    if args.markdown {
        return Ok(markdown);
    }
    let mut out = text;
    let _ = writeln!(out);
    for (k, (path, _)) in outputs.iter().enumerate() {
        let label = match k {
            0 => "table",
            3 => "profile",
            _ => "",
        };
        let _ = writeln!(out, "{label:<10} {}", path.display());
    }
    Ok(out)
}
