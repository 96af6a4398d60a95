//! `perennial fork`: K rollouts of H steps from a checkpoint, into one folder.

use std::path::{Path, PathBuf};

use super::Failure;
use super::args::FormatArg;
use super::run::{absolute, kind_of, plan_from_checkpoint, set_option};
use crate::fork::{FORK_RECORD, ForkError, ForkPlan, ForkRecord, RolloutRecord};
use crate::harness::Snapshot;
use crate::registry::Registry;
use crate::trace::TraceFormat;
use crate::world_file::TomlFile;
use crate::world_file::WorldFile;

/// `perennial fork SOURCE --rollouts K --steps H [--agent A] [--agent-opt K=V]... [--seed
/// S] [--format jsonl|csv|parquet] [--record-transitions] [--out DIR] [--jobs J]`.
#[derive(Clone, Debug, clap::Args)]
pub struct ForkArgs {
    /// The checkpoint to fork, written by `perennial run --checkpoint-every N`.
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
    /// Rollouts (K), each a trace `rollout-<k>` (k = 0..K-1).
    #[arg(long, value_name = "K")]
    pub rollouts: u64,
    /// Steps per rollout (H), continuing the source run's step axis.
    #[arg(long, value_name = "H")]
    pub steps: u64,
    /// Run this agent, freshly built, instead of the saved one [default: the checkpoint's
    /// agent with its learned state].
    #[arg(long)]
    pub agent: Option<String>,
    /// Set an option of the --agent agent: KEY=VALUE (VALUE is TOML); repeatable.
    #[arg(long, value_name = "KEY=VALUE", requires = "agent")]
    pub agent_opt: Vec<String>,
    /// The fork seed S: rollout k's agent seed is S for k = 0, else derived from S and k
    /// [default: the source run's seed].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Trace format.
    #[arg(long, value_enum, default_value_t = FormatArg::Jsonl)]
    pub format: FormatArg,
    /// Write the `obs` and `action` columns (needed by `perennial episodes`).
    #[arg(long)]
    pub record_transitions: bool,
    /// The folder [default: runs/forks/<source run id>-s<step>/].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Threads the rollouts run on [default: the cores].
    #[arg(long, value_name = "J")]
    pub jobs: Option<usize>,
}

/// Runs `perennial fork`.
pub(super) fn run(registry: &Registry, args: &ForkArgs) -> Result<(), Failure> {
    check_counts(args)?;
    let source = absolute(&args.source);
    refuse_trace(&source)?;
    let (plan, ckpt, _) = plan_from_checkpoint(&source, false)?;
    let source_hash = std::fs::read(&source)
        .map(|bytes| crate::output::content_hash(&bytes))
        .map_err(|e| Failure::input(format!("{}: {e}", source.display())))?;
    let snapshot = Snapshot::from_checkpoint(&ckpt)
        .map_err(|e| Failure::input(format!("{}: {e}", source.display())))?;
    let world = WorldFile::load_with(&plan.world_file, registry).map_err(Failure::input)?;
    let kind = kind_of(registry, &world)?;
    let (agent, mut options) = match &args.agent {
        Some(name) => (name.clone(), world.agent_options(name)),
        None => (plan.agent.clone(), plan.agent_options.clone()),
    };
    for opt in &args.agent_opt {
        set_option(&mut options, opt).map_err(Failure::input)?;
    }
    let format = match args.format {
        FormatArg::Jsonl => TraceFormat::Jsonl,
        FormatArg::Csv => TraceFormat::Csv,
        FormatArg::Parquet => TraceFormat::Parquet,
    };
    let dir = absolute(
        &args
            .out
            .clone()
            .unwrap_or_else(|| crate::fork::default_dir(&snapshot)),
    );
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    if jobs == 0 {
        return Err(Failure::input("--jobs must be at least 1"));
    }
    let fork = ForkPlan {
        snapshot: &snapshot,
        world: &world,
        agent: &agent,
        agent_options: &options,
        saved_agent: args.agent.is_none(),
        seed: args.seed.unwrap_or(snapshot.identity().seed),
        rollouts: args.rollouts,
        steps: args.steps,
        format,
        record_transitions: args.record_transitions,
        dir: &dir,
        jobs,
    };
    // Everything the rollouts will check, checked once before anything is written.
    fork.restore(kind, 0)
        .map_err(|e| Failure::input(format!("{}: {e}", source.display())))?;
    let record = ForkRecord {
        source: source.clone(),
        source_hash,
        source_run_id: snapshot.identity().run_id.clone(),
        step: snapshot.step(),
        world_file: plan.world_file.clone(),
        task: snapshot.identity().task.clone(),
        rollouts: args.rollouts,
        steps: args.steps,
        agent: agent.clone(),
        saved_agent: fork.saved_agent,
        agent_options: serde_json::to_value(&options).map_err(Failure::run)?,
        seed: fork.seed,
        format: format.extension().to_string(),
        record_transitions: args.record_transitions,
        runs: (0..args.rollouts)
            .map(|k| RolloutRecord {
                k,
                run_id: crate::fork::rollout_run_id(
                    &snapshot.identity().run_id,
                    snapshot.step(),
                    k,
                ),
                agent_seed: crate::fork::agent_seed(fork.seed, k),
                trace: PathBuf::from(format!("rollout-{k}.{}", format.extension())),
            })
            .collect(),
    };
    prepare_dir(&dir, &record, &fork)?;
    let started = std::time::Instant::now();
    let results = crate::fork::run_rollouts(kind, &fork).map_err(|e| match e {
        ForkError::Build(_) => Failure::input(e),
        _ => Failure::run(e),
    })?;
    let secs = started.elapsed().as_secs_f64();
    out!(
        "fork       {} at step {} ({})",
        snapshot.identity().run_id,
        snapshot.step(),
        source.display()
    );
    out!(
        "rollouts   {} x {} steps   agent {}{}   {} threads   {secs:.2} s",
        args.rollouts,
        args.steps,
        agent,
        if fork.saved_agent { " (saved)" } else { "" },
        jobs.min(usize::try_from(args.rollouts).unwrap_or(usize::MAX))
    );
    out!();
    out!(
        "{:>4} {:<40} {:>20} {:>14}",
        "k",
        "run",
        "agent seed",
        "reward"
    );
    for r in &results {
        out!(
            "{:>4} {:<40} {:>20} {:>14.3}",
            r.k,
            r.run_id,
            r.agent_seed,
            r.summary.total_reward
        );
    }
    out!();
    out!("folder     {}", dir.display());
    out!(
        "group it:  perennial episodes {}/rollout-*.{} --out episodes.jsonl --advantage grpo",
        dir.display(),
        format.extension()
    );
    Ok(())
}

fn check_counts(args: &ForkArgs) -> Result<(), Failure> {
    if args.rollouts == 0 {
        return Err(Failure::input("--rollouts must be at least 1"));
    }
    if args.rollouts > crate::limits::MAX_FORK_ROLLOUTS {
        return Err(Failure::input(format!(
            "--rollouts is {}; use at most {} (run several forks for more)",
            args.rollouts,
            crate::limits::MAX_FORK_ROLLOUTS
        )));
    }
    if args.steps == 0 {
        return Err(Failure::input(
            "--steps must be at least 1: a rollout of no steps writes no rows",
        ));
    }
    Ok(())
}

/// A trace given as SOURCE is named as such, not reported as a broken checkpoint.
fn refuse_trace(source: &Path) -> Result<(), Failure> {
    let trace_like = source.is_dir()
        || source
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| {
                ["jsonl", "csv", "parquet"].contains(&e.to_ascii_lowercase().as_str())
            });
    if trace_like {
        return Err(Failure::input(format!(
            "{}: this is a trace; fork needs the checkpoint `perennial run --checkpoint-every N` writes (runs/<run-id>.ckpt.json by default)",
            source.display()
        )));
    }
    Ok(())
}

/// Creates the fork's folder and writes its record, or refuses a folder that holds
/// another fork, or files that are not a fork's: nothing in it is touched then. A folder
/// holding this very fork (the same record) is written over.
fn prepare_dir(dir: &Path, record: &ForkRecord, fork: &ForkPlan<'_>) -> Result<(), Failure> {
    let record_path = dir.join(FORK_RECORD);
    if dir.exists() {
        if !dir.is_dir() {
            return Err(Failure::input(format!(
                "--out {}: exists and is not a folder",
                dir.display()
            )));
        }
        if record_path.exists() {
            let existing = ForkRecord::read(&record_path).map_err(Failure::input)?;
            if existing != *record {
                return Err(Failure::input(format!(
                    "--out {}: holds another fork (of {} at step {}, {} x {} steps, agent {}); pass another --out (nothing was touched)",
                    dir.display(),
                    existing.source_run_id,
                    existing.step,
                    existing.rollouts,
                    existing.steps,
                    existing.agent
                )));
            }
        } else if std::fs::read_dir(dir)
            .map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?
            .next()
            .is_some()
        {
            return Err(Failure::input(format!(
                "--out {}: is not empty and holds no {FORK_RECORD}; pass an empty or new folder (nothing was touched)",
                dir.display()
            )));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?;
    for k in 0..record.rollouts {
        let trace = fork.trace_path(k);
        if fork.format != TraceFormat::Parquet {
            crate::output::check_output(&trace).map_err(Failure::input)?;
        }
    }
    record.write(&record_path).map_err(Failure::input)
}
