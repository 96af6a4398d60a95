//! The `perennial` command line: run a world, score traces, list and check world files.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use perennial::agents::{
    ActorCritic, ActorCriticParams, AdaptiveBaseStock, AdaptiveParams, BalanceAgent,
    BaseStockAgent, BaseStockParams, RandomAgent,
};
use perennial::env::Env;
use perennial::harness::{
    Agent, Checkpoint, CheckpointPlan, Harness, HarnessConfig, RunSummary, StopReason,
};
use perennial::morpheus::{self, Morpheus};
use perennial::prelude::*;
use perennial::seed::Stream;
use perennial::trace::{self, RunIdentity, TraceFormat};
use perennial::world_file::{WorldFile, WorldKind};

/// Reinforcement-learning environments whose worlds may never end.
#[derive(Parser)]
#[command(name = "perennial", version, about, long_about = None)]
struct Cli {
    /// Without a command, `perennial` runs the default world as `perennial run` would.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run an agent in a world and write its trace.
    Run(RunArgs),
    /// Score traces: the six continual-RL metrics per configuration interval.
    Eval(perennial::eval::EvalArgs),
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
const DEFAULT_WORLD: &str = "worlds/warehouse.toml";

#[derive(clap::Args, Default)]
struct RunArgs {
    /// World definition file [default: worlds/warehouse.toml].
    world_file: Option<PathBuf>,
    /// Agent: random, actor-critic, or one of the world's own (balance for CartPole,
    /// base-stock and adaptive-base-stock for the enterprise world).
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
    /// Write a checkpoint every N steps (atomically), to continue a killed run with --resume.
    #[arg(long, value_name = "N")]
    checkpoint_every: Option<u64>,
    /// Checkpoint file [default: runs/<run-id>.ckpt.json].
    #[arg(long, requires = "checkpoint_every")]
    checkpoint: Option<PathBuf>,
    /// Continue the run saved in this checkpoint: the trace is cut back to the checkpoint's
    /// step and appended to; every other flag comes from the checkpoint.
    #[arg(long, value_name = "CHECKPOINT", conflicts_with_all = ["world_file", "agent", "steps", "seed", "window_steps", "auto_reset", "trace", "run_id", "record_transitions", "no_trace", "checkpoint_every"])]
    resume: Option<PathBuf>,
    /// With --resume: continue even though the world file changed since the checkpoint
    /// (the run then follows the edited file, and its trace differs from an uninterrupted one).
    #[arg(long, requires = "resume")]
    allow_world_change: bool,
}

#[derive(Clone, Copy, Default, clap::ValueEnum)]
enum FormatArg {
    #[default]
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
    let result = match cli.command.unwrap_or(Command::Run(RunArgs::default())) {
        Command::Run(args) => run(args),
        Command::Eval(args) => perennial::eval::run_cli(&args)
            .map(|out| print!("{out}"))
            .map_err(Failure::input),
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
    // `check` accepts exactly the agents `run` would.
    if let Some(agent) = &world.harness.agent {
        let mut names = vec!["random", "actor-critic"];
        names.extend(match &world.world {
            WorldKind::CartPole(_) => CARTPOLE_AGENTS,
            WorldKind::Morpheus(_) => MORPHEUS_AGENTS,
        });
        if !names.contains(&agent.as_str()) {
            return Err(Failure::input(format!(
                "{}: field `harness.agent`: unknown agent `{agent}` for this world; use one of: {}",
                path.display(),
                names.join(", ")
            )));
        }
    }
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

/// Everything `perennial run` decided from its flags and the world file; stored in
/// checkpoints so `--resume` continues the same run.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct RunPlan {
    world_file: PathBuf,
    agent: String,
    seed: u64,
    config: HarnessConfig,
    run_id: Option<String>,
    format: TraceFormat,
    trace: Option<PathBuf>,
    no_trace: bool,
    /// Steps between checkpoints, when checkpointing.
    checkpoint_every: Option<u64>,
    /// The checkpoint file (resolved to its default once the run id is known).
    checkpoint: Option<PathBuf>,
    /// The world file's content when the run started, and its hash
    /// ([`perennial::output::content_hash`]): a resume refuses an edited world file.
    world_text: String,
    /// The hash of `world_text`.
    world_hash: String,
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let (plan, resume) = match &args.resume {
        Some(ckpt_path) => {
            let ckpt = Checkpoint::read(ckpt_path).map_err(Failure::input)?;
            let plan: RunPlan = serde_json::from_value(ckpt.meta.clone()).map_err(|e| {
                Failure::input(format!(
                    "{}: this checkpoint was not written by `perennial run` ({e})",
                    ckpt_path.display()
                ))
            })?;
            check_world_unchanged(&plan, ckpt_path, args.allow_world_change)?;
            (plan, Some((ckpt, ckpt_path.clone())))
        }
        None => (plan_from_args(&args)?, None),
    };
    let world = WorldFile::load(&plan.world_file).map_err(Failure::input)?;
    match world.world.clone() {
        WorldKind::CartPole(params) => run_env(
            CartPole::new(params),
            &world,
            &plan,
            resume,
            (CARTPOLE_AGENTS, cartpole_agents),
        ),
        WorldKind::Morpheus(config) => {
            let reward = world
                .reward_spec()
                .unwrap_or_else(morpheus::default_reward_spec);
            let env = Morpheus::new(*config, reward).map_err(Failure::input)?;
            run_env(
                env,
                &world,
                &plan,
                resume,
                (MORPHEUS_AGENTS, morpheus_agents),
            )
        }
    }
}

fn plan_from_args(args: &RunArgs) -> Result<RunPlan, Failure> {
    let world_file = absolute(&locate(
        args.world_file
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_WORLD)),
    ));
    let world = WorldFile::load(&world_file).map_err(Failure::input)?;
    let world_text = std::fs::read_to_string(&world_file)
        .map_err(|e| Failure::input(format!("{}: {e}", world_file.display())))?;
    let d = &world.harness;
    let config = HarnessConfig {
        window_steps: args.window_steps.or(d.window_steps).unwrap_or(256),
        auto_reset: args.auto_reset.or(d.auto_reset).unwrap_or(false),
        steps: args.steps.or(d.steps).unwrap_or(100_000),
        record_transitions: args.record_transitions,
    };
    if config.window_steps == 0 || config.window_steps > perennial::limits::MAX_WINDOW_STEPS {
        return Err(Failure::input(format!(
            "--window-steps is {}; use 1 to {}",
            config.window_steps,
            perennial::limits::MAX_WINDOW_STEPS
        )));
    }
    if let Some(id) = &args.run_id {
        perennial::limits::check_id("--run-id", id).map_err(Failure::input)?;
    }
    if args.checkpoint_every == Some(0) {
        return Err(Failure::input("--checkpoint-every must be at least 1"));
    }
    let format = match args.format {
        FormatArg::Jsonl => TraceFormat::Jsonl,
        FormatArg::Csv => TraceFormat::Csv,
    };
    Ok(RunPlan {
        world_file,
        agent: args
            .agent
            .clone()
            .or_else(|| d.agent.clone())
            .unwrap_or_else(|| "random".into()),
        seed: args.seed.or(d.seed).unwrap_or(0),
        config,
        run_id: args.run_id.clone(),
        format,
        trace: args.trace.clone().map(|p| absolute(&p)),
        no_trace: args.no_trace,
        checkpoint_every: args.checkpoint_every,
        checkpoint: args.checkpoint.as_deref().map(absolute),
        world_hash: perennial::output::content_hash(world_text.as_bytes()),
        world_text,
    })
}

/// Refuses to resume against a world file edited since the checkpoint, unless asked to.
fn check_world_unchanged(plan: &RunPlan, ckpt: &Path, allow: bool) -> Result<(), Failure> {
    let now = std::fs::read(&plan.world_file)
        .map_err(|e| Failure::input(format!("{}: {e}", plan.world_file.display())))?;
    let hash = perennial::output::content_hash(&now);
    if hash == plan.world_hash || allow {
        return Ok(());
    }
    Err(Failure::input(format!(
        "{}: the world file changed since the checkpoint {} was written (hash {} then, {hash} now), so the resumed run would not continue the same world; restore it, or pass --allow-world-change to follow the edited file (nothing was touched)",
        plan.world_file.display(),
        ckpt.display(),
        plan.world_hash
    )))
}

/// Checks every output path before any work: each must be a regular file or absent, none
/// may be an input (the world file, the checkpoint being resumed) or another output, and
/// the trace's extension must match its format.
fn check_outputs(plan: &RunPlan, resume: Option<&Path>) -> Result<(), Failure> {
    use perennial::output::{check_distinct, check_output};
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    if let Some(t) = &plan.trace {
        outputs.push(("--trace", t));
        let ext = t.extension().and_then(|e| e.to_str()).unwrap_or("");
        let (wrong, want) = match plan.format {
            TraceFormat::Jsonl => ("csv", "jsonl"),
            TraceFormat::Csv => ("jsonl", "csv"),
        };
        if ext.eq_ignore_ascii_case(wrong) {
            return Err(Failure::input(format!(
                "--trace {}: the extension says {wrong} but the format is {want}; pass --format {wrong} or name the file .{want}",
                t.display()
            )));
        }
    }
    if let Some(c) = &plan.checkpoint {
        outputs.push(("--checkpoint", c));
    }
    for (_, p) in &outputs {
        check_output(p).map_err(Failure::input)?;
    }
    let mut inputs: Vec<(&str, &Path)> = vec![("the world file", &plan.world_file)];
    if let Some(r) = resume {
        inputs.push(("--resume", r));
    }
    // Resuming writes the checkpoint it read: that one pair is the same file on purpose.
    let outputs: Vec<(&str, &Path)> = outputs
        .into_iter()
        .filter(|(role, p)| !(*role == "--checkpoint" && resume.is_some_and(|r| same_file(r, p))))
        .collect();
    check_distinct(&inputs, &outputs).map_err(Failure::input)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn ensure_parent(p: &Path) -> Result<(), Failure> {
    if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?;
    }
    Ok(())
}

/// CartPole's own agents.
const CARTPOLE_AGENTS: &[&str] = &["balance"];
/// The enterprise world's own agents.
const MORPHEUS_AGENTS: &[&str] = &["base-stock", "adaptive-base-stock"];

/// A world's own agents, by name, besides the ones every discrete world has.
type WorldAgents<E> = fn(&str, &E, u64) -> Option<Box<dyn Agent<E>>>;

fn cartpole_agents(name: &str, _env: &CartPole, _seed: u64) -> Option<Box<dyn Agent<CartPole>>> {
    match name {
        "balance" => Some(Box::new(BalanceAgent::default())),
        _ => None,
    }
}

fn morpheus_agents(name: &str, env: &Morpheus, seed: u64) -> Option<Box<dyn Agent<Morpheus>>> {
    match name {
        "base-stock" => Some(Box::new(BaseStockAgent::new(
            env.config(),
            BaseStockParams::default(),
        ))),
        "adaptive-base-stock" => Some(Box::new(AdaptiveBaseStock::new(
            env.config(),
            AdaptiveParams::default(),
            seed,
        ))),
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
    plan: &RunPlan,
    resume: Option<(Checkpoint, PathBuf)>,
    world_agents: (&[&str], WorldAgents<E>),
) -> Result<(), Failure>
where
    E: Env<Action = usize> + Shiftable + 'static,
{
    let agent = make_agent(&plan.agent, &env, plan.seed, world_agents)?;
    let components = env.spec().components.clone();
    let payouts = env.spec().payouts.clone();
    let record = plan.config.record_transitions;
    let lock;
    let (mut harness, plan) = match resume {
        None => {
            let scheduler = world
                .scheduler(perennial::seed::derive(plan.seed, Stream::Scheduler, 0))
                .map_err(Failure::input)?;
            let run_id = match &plan.run_id {
                Some(id) => id.clone(),
                None => default_run_id(plan, &env.spec().id, agent.algorithm_id())?,
            };
            let mut harness = Harness::new(env, agent, plan.seed)
                .scheduler(scheduler)
                .config(plan.config.clone())
                .run_id(run_id.clone());
            // Default paths depend on the run id, known only now; the resolved plan is what
            // checkpoints store, so a resumed run writes to the same files.
            let default =
                |ext: &str| absolute(&PathBuf::from("runs").join(format!("{run_id}.{ext}")));
            let ext = match plan.format {
                TraceFormat::Jsonl => "jsonl",
                TraceFormat::Csv => "csv",
            };
            let resolved = RunPlan {
                trace: (!plan.no_trace).then(|| plan.trace.clone().unwrap_or_else(|| default(ext))),
                checkpoint: plan.checkpoint_every.map(|_| {
                    plan.checkpoint
                        .clone()
                        .unwrap_or_else(|| default("ckpt.json"))
                }),
                ..plan.clone()
            };
            check_outputs(&resolved, None)?;
            lock = lock_checkpoint(&resolved)?;
            if let Some(p) = &resolved.trace {
                ensure_parent(p)?;
                let id = harness.identity().clone();
                let sink = trace::create(p, plan.format, &id, &components, &payouts, record)
                    .map_err(Failure::input)?;
                harness = harness.trace(sink);
            }
            (harness, resolved)
        }
        Some((ckpt, ckpt_path)) => {
            check_outputs(plan, Some(&ckpt_path))?;
            lock = lock_checkpoint(plan)?;
            // Everything in the checkpoint is checked (Harness::resume) before the trace
            // is opened, and the trace's own length and last row before it is cut.
            let (bytes, tail, identity) = (
                ckpt.trace_bytes,
                ckpt.trace_tail.clone(),
                ckpt.identity.clone(),
            );
            let mut harness = Harness::resume(env, agent, ckpt, None).map_err(Failure::input)?;
            match (&plan.trace, bytes) {
                (Some(p), Some(bytes)) => {
                    let sink = trace::append(
                        p,
                        plan.format,
                        &identity,
                        &components,
                        &payouts,
                        record,
                        bytes,
                        tail.as_deref(),
                    )
                    .map_err(Failure::input)?;
                    harness = harness.trace(sink);
                }
                (Some(_), None) | (None, Some(_)) => {
                    return Err(Failure::input(
                        "the checkpoint's trace fields do not match its run plan; it was edited, and cannot be resumed",
                    ));
                }
                (None, None) => {}
            }
            (harness, plan.clone())
        }
    };
    if let (Some(path), Some(every)) = (&plan.checkpoint, plan.checkpoint_every) {
        ensure_parent(path)?;
        let meta = serde_json::to_value(&plan).map_err(Failure::run)?;
        harness = harness.checkpoint(CheckpointPlan {
            path: path.to_path_buf(),
            every,
            meta,
        });
    }
    signals::install();
    harness = harness.stop_when(&signals::RAISED);
    let identity = harness.identity().clone();
    let started = Instant::now();
    let result = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(plan.config.steps);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {human_pos}/{human_len} steps  {rate}  eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} steps/s", state.per_sec());
                },
            ),
        );
        bar.set_position(harness.steps_done());
        let b = bar.clone();
        let result = harness.on_progress(move |n| b.set_position(n)).run();
        bar.finish_and_clear();
        result
    } else {
        harness.run()
    };
    let reported = report(result, started, &identity, world, &plan);
    drop(lock);
    reported?;
    match signals::code() {
        Some(code) => {
            match &plan.checkpoint {
                Some(p) if p.exists() => eprintln!(
                    "interrupted: every row so far is in the trace; continue with: perennial run --resume {}",
                    p.display()
                ),
                _ => eprintln!(
                    "interrupted: every row so far is in the trace; run with --checkpoint-every N to be able to continue"
                ),
            }
            Err(Failure {
                code,
                message: "stopped by a signal".into(),
            })
        }
        None => Ok(()),
    }
}

/// SIGINT and SIGTERM end a run cleanly: the handler only raises a flag that the harness
/// reads once per step (see `Harness::stop_when`), so the step under way finishes, the trace
/// is flushed and a checkpoint written before the process exits with 128 + the signal.
mod signals {
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

    /// Raised by the handler.
    pub static RAISED: AtomicBool = AtomicBool::new(false);
    static SIGNAL: AtomicI32 = AtomicI32::new(0);

    extern "C" fn on_signal(sig: libc::c_int) {
        // Only atomic stores: async-signal-safe.
        SIGNAL.store(sig, Ordering::Relaxed);
        RAISED.store(true, Ordering::Relaxed);
    }

    /// Installs the handler for SIGINT and SIGTERM.
    pub fn install() {
        let handler: extern "C" fn(libc::c_int) = on_signal;
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the handler only performs atomic stores, which are async-signal-safe.
            unsafe {
                libc::signal(sig, handler as libc::sighandler_t);
            }
        }
    }

    /// The exit code the caught signal earns (130 for SIGINT, 143 for SIGTERM), if any.
    pub fn code() -> Option<u8> {
        RAISED
            .load(Ordering::Relaxed)
            .then(|| 128 + SIGNAL.load(Ordering::Relaxed) as u8)
    }
}

/// Holds the checkpoint's lock for the run, so two runs never share one checkpoint.
fn lock_checkpoint(plan: &RunPlan) -> Result<Option<perennial::output::OutputLock>, Failure> {
    match &plan.checkpoint {
        Some(p) => {
            ensure_parent(p)?;
            perennial::output::OutputLock::beside(p)
                .map(Some)
                .map_err(Failure::input)
        }
        None => Ok(None),
    }
}

/// `{task}-{agent}-seed{seed}`, with the world file's stem after the task when it differs
/// from the task, so two world files of one task do not share default paths, while the
/// same command twice still writes the same bytes.
fn default_run_id(plan: &RunPlan, task: &str, agent: &str) -> Result<String, Failure> {
    let stem = plan
        .world_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = if stem.is_empty() || stem == task {
        format!("{task}-{agent}-seed{}", plan.seed)
    } else {
        format!("{task}-{stem}-{agent}-seed{}", plan.seed)
    };
    perennial::limits::check_id(
        "the default run id (from the task and world file name)",
        &id,
    )
    .map_err(|e| Failure::input(format!("{e}; pass --run-id")))?;
    Ok(id)
}

fn report(
    result: Result<RunSummary, perennial::harness::HarnessError>,
    started: Instant,
    identity: &RunIdentity,
    world: &WorldFile,
    plan: &RunPlan,
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
            StopReason::Budget => "step budget spent",
            StopReason::EpisodeEnded => "the env ended the episode (auto_reset off)",
            StopReason::Interrupted => "interrupted by a signal",
        }
    );
    println!(
        "reward     total {:.3}   mean/step {:.5}",
        summary.total_reward,
        summary.total_reward / summary.steps.max(1) as f64
    );
    println!("time       {secs:.2} s for this invocation");
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
    if let Some(p) = &plan.trace {
        println!();
        println!("trace      {}", p.display());
        println!("score it:  perennial eval {}", p.display());
    }
    // Only a checkpoint that exists is announced: none is written before `every` steps.
    if let (Some(p), Some(every)) = (&plan.checkpoint, plan.checkpoint_every)
        && summary.steps >= every
    {
        println!(
            "checkpoint {} (every {every} steps; continue with --resume)",
            p.display()
        );
    }
    Ok(())
}
