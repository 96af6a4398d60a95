//! The `perennial` command line: run a world, score traces, list and check world files.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use perennial::agents::{ActorCritic, ActorCriticParams, BalanceAgent, RandomAgent};
use perennial::env::Env;
use perennial::harness::{Agent, Harness, HarnessConfig, RunSummary};
use perennial::prelude::*;
use perennial::trace::{self, RunIdentity, TraceFormat};
use perennial::world_file::{WorldFile, WorldKind};

/// Reinforcement-learning environments whose worlds may never end.
#[derive(Parser)]
#[command(name = "perennial", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an agent in a world and write its trace.
    Run(RunArgs),
    /// Export a trace's experience as rLLM episodes (Episode > Trajectory > Step).
    Episodes(perennial::episodes::EpisodesArgs),
    /// List the shipped world files.
    Worlds,
    /// Validate a world file.
    Check {
        /// The world file.
        world_file: PathBuf,
    },
}

/// The world file `perennial run` uses when none is given.
const DEFAULT_WORLD: &str = "worlds/cartpole-drift.toml";

#[derive(clap::Args)]
struct RunArgs {
    /// World definition file [default: worlds/cartpole-drift.toml].
    world_file: Option<PathBuf>,
    /// Agent: random, actor-critic, or one of the world's own (balance for CartPole).
    #[arg(long)]
    agent: Option<String>,
    /// Step budget [default: the world file's, else 100000].
    #[arg(long)]
    steps: Option<u64>,
    /// Run seed [default: the world file's, else 0].
    #[arg(long)]
    seed: Option<u64>,
    /// Steps per rollout window [default: the world file's, else 256].
    #[arg(long)]
    window_steps: Option<usize>,
    /// Reset the env when it ends an episode and go on (off unless the world file says so).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    auto_reset: Option<bool>,
    /// Trace file [default: runs/<run-id>.<format>].
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Trace format.
    #[arg(long, value_enum, default_value = "jsonl")]
    format: FormatArg,
    /// Run id [default: <task>-<agent>-seed<seed>, so the same run twice writes the same bytes].
    #[arg(long)]
    run_id: Option<String>,
    /// Also write the `obs` and `action` columns.
    #[arg(long)]
    record_transitions: bool,
    /// Write no trace (for timing).
    #[arg(long, conflicts_with = "trace")]
    no_trace: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FormatArg {
    Jsonl,
    Csv,
}

/// An error and the exit code it earns: 2 for bad input, 1 for a run that failed.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn input(e: impl std::fmt::Display) -> Self {
        Failure {
            code: 2,
            message: e.to_string(),
        }
    }

    fn run(e: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: e.to_string(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Episodes(args) => perennial::episodes::run_cli(&args)
            .map(|summary| println!("{summary}"))
            .map_err(Failure::input),
        Command::Worlds => worlds(),
        Command::Check { world_file } => check(&world_file),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Finds a shipped file from the working directory or, failing that, from the crate root.
fn locate(path: &Path) -> PathBuf {
    if path.exists() || path.is_absolute() {
        return path.to_path_buf();
    }
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if shipped.exists() {
        shipped
    } else {
        path.to_path_buf()
    }
}

fn check(path: &Path) -> Result<(), Failure> {
    let world = WorldFile::load(path).map_err(Failure::input)?;
    println!(
        "{}: ok ({} world, {} regimes: {}; {} schedule)",
        path.display(),
        world.kind(),
        world.regimes.len(),
        world
            .regimes
            .iter()
            .map(|r| r.label.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        plan_name(&world.plan)
    );
    Ok(())
}

fn plan_name(plan: &Plan) -> &'static str {
    match plan {
        Plan::Fixed { .. } => "fixed",
        Plan::Cycle { .. } => "cycle",
        Plan::Stochastic { .. } => "stochastic",
        Plan::Manual => "manual",
    }
}

fn worlds() -> Result<(), Failure> {
    let dir = locate(Path::new("worlds"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match WorldFile::load(&path) {
            Ok(w) => println!(
                "{name:<24} {:<9} {:>2} regimes  {}",
                w.kind(),
                w.regimes.len(),
                w.description
            ),
            Err(e) => println!("{name:<24} invalid: {e}"),
        }
    }
    Ok(())
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let path = locate(
        args.world_file
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_WORLD)),
    );
    let world = WorldFile::load(&path).map_err(Failure::input)?;
    match world.world.clone() {
        WorldKind::CartPole(params) => run_env(
            CartPole::new(params),
            &world,
            &args,
            (&["balance"], cartpole_agents),
        ),
    }
}

/// A world's own agents, by name, besides the ones every discrete world has.
type WorldAgents<E> = fn(&str, &E, u64) -> Option<Box<dyn Agent<E>>>;

fn cartpole_agents(name: &str, _env: &CartPole, _seed: u64) -> Option<Box<dyn Agent<CartPole>>> {
    match name {
        "balance" => Some(Box::new(BalanceAgent::default())),
        _ => None,
    }
}

fn make_agent<E>(
    name: &str,
    env: &E,
    seed: u64,
    world_agents: (&[&str], WorldAgents<E>),
) -> Result<Box<dyn Agent<E>>, Failure>
where
    E: Env<Action = usize> + 'static,
{
    let spec = env.spec();
    match name {
        "random" => Ok(Box::new(RandomAgent::new(spec.action_space.clone(), seed))),
        "actor-critic" => {
            let Space::Discrete { n } = spec.action_space else {
                return Err(Failure::input("actor-critic needs a Discrete action space"));
            };
            let dim = spec.observation_space.len();
            Ok(Box::new(ActorCritic::new(
                dim,
                n,
                ActorCriticParams::default(),
                seed,
            )))
        }
        other => (world_agents.1)(other, env, seed).ok_or_else(|| {
            let mut names = vec!["random", "actor-critic"];
            names.extend(world_agents.0);
            Failure::input(format!(
                "unknown agent `{other}` for this world; use one of: {}",
                names.join(", ")
            ))
        }),
    }
}

fn run_env<E>(
    env: E,
    world: &WorldFile,
    args: &RunArgs,
    world_agents: (&[&str], WorldAgents<E>),
) -> Result<(), Failure>
where
    E: Env<Action = usize> + Shiftable + 'static,
{
    let d = &world.harness;
    let seed = args.seed.or(d.seed).unwrap_or(0);
    let agent_name = args
        .agent
        .clone()
        .or_else(|| d.agent.clone())
        .unwrap_or_else(|| "random".into());
    let config = HarnessConfig {
        window_steps: args.window_steps.or(d.window_steps).unwrap_or(256),
        auto_reset: args.auto_reset.or(d.auto_reset).unwrap_or(false),
        steps: args.steps.or(d.steps).unwrap_or(100_000),
        record_transitions: args.record_transitions,
    };
    if config.window_steps == 0 {
        return Err(Failure::input("--window-steps must be at least 1"));
    }
    let agent = make_agent(&agent_name, &env, seed, world_agents)?;
    let scheduler = world
        .scheduler(perennial::seed::derive(
            seed,
            perennial::seed::Stream::Scheduler,
            0,
        ))
        .map_err(Failure::input)?;
    let components = env.spec().components.clone();
    let payouts = env.spec().payouts.clone();
    let mut harness = Harness::new(env, agent, seed)
        .scheduler(scheduler)
        .config(config.clone());
    if let Some(id) = &args.run_id {
        harness = harness.run_id(id.clone());
    }
    let identity: RunIdentity = harness.identity().clone();
    let format = match args.format {
        FormatArg::Jsonl => TraceFormat::Jsonl,
        FormatArg::Csv => TraceFormat::Csv,
    };
    let trace_path = if args.no_trace {
        None
    } else {
        let ext = match format {
            TraceFormat::Jsonl => "jsonl",
            TraceFormat::Csv => "csv",
        };
        let p = args
            .trace
            .clone()
            .unwrap_or_else(|| PathBuf::from("runs").join(format!("{}.{ext}", identity.run_id)));
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?;
        }
        let sink = trace::create(
            &p,
            format,
            &identity,
            &components,
            &payouts,
            config.record_transitions,
        )
        .map_err(Failure::input)?;
        harness = harness.trace(sink);
        Some(p)
    };
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(config.steps);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let b = bar.clone();
        harness = harness.on_progress(move |n| b.set_position(n));
        let started = Instant::now();
        let result = harness.run();
        bar.finish_and_clear();
        report(result, started, &identity, world, trace_path.as_deref())
    } else {
        let started = Instant::now();
        let result = harness.run();
        report(result, started, &identity, world, trace_path.as_deref())
    }
}

fn report(
    result: Result<RunSummary, perennial::harness::HarnessError>,
    started: Instant,
    identity: &RunIdentity,
    world: &WorldFile,
    trace_path: Option<&Path>,
) -> Result<(), Failure> {
    let summary = result.map_err(Failure::run)?;
    let secs = started.elapsed().as_secs_f64();
    println!("run        {}", identity.run_id);
    println!("world      {} ({})", world.path.display(), identity.task);
    println!(
        "agent      {}   seed {}",
        identity.algorithm_id, identity.seed
    );
    println!(
        "steps      {}   episodes ended {}   shifts {}   stopped: {}",
        summary.steps,
        summary.episodes_ended,
        summary.shifts,
        match summary.stop {
            perennial::harness::StopReason::Budget => "step budget spent",
            perennial::harness::StopReason::EpisodeEnded =>
                "the env ended the episode (auto_reset off)",
        }
    );
    println!(
        "reward     total {:.3}   mean/step {:.5}",
        summary.total_reward,
        summary.total_reward / summary.steps.max(1) as f64
    );
    println!(
        "time       {secs:.2} s   {:.0} steps/s",
        summary.steps as f64 / secs.max(1e-9)
    );
    println!();
    println!("{:<20} {:>10} {:>14}", "regime", "steps", "mean reward");
    for (label, s) in &summary.labels {
        if s.steps > 0 {
            println!(
                "{label:<20} {:>10} {:>14.5}",
                s.steps,
                s.reward / s.steps as f64
            );
        }
    }
    if let Some(p) = trace_path {
        println!();
        println!("trace      {}", p.display());
        println!("score it:  perennial eval {}", p.display());
    }
    Ok(())
}
