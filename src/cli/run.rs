//! `perennial run`: a plan from the flags (or a checkpoint), a harness from the registry,
//! its outputs, the run, and the report.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::args::{FormatArg, RunArgs};
use super::info::locate;
use super::{Failure, progress, signals};
use crate::harness::{
    Checkpoint, CheckpointPlan, DynHarness, HarnessConfig, HarnessError, RunSummary, StopReason,
};
use crate::output::OutputLock;
use crate::regime::NotifyLevel;
use crate::registry::{Kind, Registry, RunRequest};
use crate::trace::{RunIdentity, TraceFormat};
use crate::world_file::TomlFile;
use crate::world_file::WorldFile;

/// The world file `perennial run` uses when none is given.
const DEFAULT_WORLD: &str = "worlds/warehouse.toml";

/// Everything `perennial run` decided from its flags and the world file; stored in
/// checkpoints so `--resume` continues the same run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunPlan {
    /// The world file, absolute.
    pub world_file: PathBuf,
    /// The agent's name.
    pub agent: String,
    /// The agent's options: the world file's `[agent.<name>]` table with `--agent-opt`
    /// overrides applied.
    #[serde(default)]
    pub agent_options: toml::Table,
    /// The run seed.
    pub seed: u64,
    /// How the harness drives the run.
    pub config: HarnessConfig,
    /// The run id, when given.
    pub run_id: Option<String>,
    /// The trace format.
    pub format: TraceFormat,
    /// Seconds between two parts of a Parquet trace (`--part-seconds`; 0: a part at
    /// every window).
    #[serde(
        default = "default_part_seconds",
        skip_serializing_if = "is_default_part_seconds"
    )]
    pub part_seconds: f64,
    /// The trace file (resolved to its default once the run id is known).
    pub trace: Option<PathBuf>,
    /// Write no trace.
    pub no_trace: bool,
    /// Steps between checkpoints, when checkpointing.
    pub checkpoint_every: Option<u64>,
    /// The checkpoint file (resolved to its default once the run id is known).
    pub checkpoint: Option<PathBuf>,
    /// What the agent is told at a shift: `--notify`, else the world file's `[notify]`.
    #[serde(default, skip_serializing_if = "NotifyLevel::is_none")]
    pub notify: NotifyLevel,
    /// In a world with roles, each role's notify level from the world file's `[notify]`
    /// (empty when it gives none): a role is told at its own level.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub role_notify: std::collections::BTreeMap<String, NotifyLevel>,
    /// The world file's content when the run started: a resume refuses an edited world
    /// file.
    pub world_text: String,
    /// The hash of `world_text` ([`crate::output::content_hash`]).
    pub world_hash: String,
}

fn default_part_seconds() -> f64 {
    crate::trace::PART_SECONDS as f64
}

fn is_default_part_seconds(s: &f64) -> bool {
    *s == default_part_seconds()
}

impl RunPlan {
    /// How often a window's flush cuts a Parquet part (checked again: a checkpoint's plan
    /// may have been edited).
    fn part_interval(&self) -> Result<std::time::Duration, Failure> {
        crate::trace::part_interval(self.part_seconds, "--part-seconds").map_err(Failure::input)
    }

    fn request<'a>(&'a self, world: &'a WorldFile, follow_world: bool) -> RunRequest<'a> {
        RunRequest {
            world,
            agent: &self.agent,
            agent_options: &self.agent_options,
            seed: self.seed,
            config: self.config.clone(),
            run_id: self.run_id.clone(),
            notify: self.notify,
            follow_world,
        }
    }
}

/// A harness ready to run (its run manifest begun) and the checkpoint's lock, held for the
/// run.
type Prepared = (Box<dyn DynHarness>, Option<OutputLock>);

pub(super) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Runs `perennial run`. With `handle_signals` (the process's own entry point, not a
/// caller embedding the command line) SIGINT and SIGTERM end the run cleanly.
pub(super) fn run(
    registry: &Registry,
    args: &RunArgs,
    handle_signals: bool,
) -> Result<(), Failure> {
    let (plan, resume) = match &args.resume {
        Some(ckpt_path) => {
            let (plan, ckpt, edited) = plan_from_checkpoint(ckpt_path, args.allow_world_change)?;
            (plan, Some((ckpt, ckpt_path.as_path(), edited)))
        }
        None => (plan_from_args(registry, args)?, None),
    };
    let world = WorldFile::load_with(&plan.world_file, registry).map_err(Failure::input)?;
    let kind = kind_of(registry, &world)?;
    let ((harness, lock), plan) = match resume {
        None => start(kind, &world, plan)?,
        Some((ckpt, ckpt_path, edited)) => (
            continue_from(kind, &world, &plan, (ckpt, ckpt_path), edited)?,
            plan,
        ),
    };
    let mut harness = with_checkpoints(harness, &plan)?;
    if handle_signals {
        signals::install();
        harness.set_stop_flag(&signals::RAISED);
    }
    let identity = harness.identity().clone();
    let started = Instant::now();
    // The run ends its manifest itself: completed, interrupted or failed.
    let result = progress::drive(harness, plan.config.steps);
    let summary = result.map_err(|e| match e {
        // The agent's options make its updates diverge: rerunning cannot help.
        HarnessError::AgentState { .. } => Failure::input(e),
        e => Failure::run(e),
    })?;
    report(&summary, started, &identity, &world, &plan);
    drop(lock);
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

pub(super) fn kind_of<'r>(
    registry: &'r Registry,
    world: &WorldFile,
) -> Result<&'r dyn Kind, Failure> {
    registry
        .kind(world.kind())
        .ok_or_else(|| Failure::input(format!("unknown world kind `{}`", world.kind())))
}

/// The plan of the run saved at `path`, its checkpoint, and whether the run follows a
/// world file edited since (`allow_world_change`).
pub(super) fn plan_from_checkpoint(
    path: &Path,
    allow_world_change: bool,
) -> Result<(RunPlan, Checkpoint, bool), Failure> {
    let ckpt = Checkpoint::read(path).map_err(Failure::input)?;
    let mut plan: RunPlan = serde_json::from_value(ckpt.meta.clone()).map_err(|e| {
        Failure::input(format!(
            "{}: this checkpoint was not written by `perennial run` ({e})",
            path.display()
        ))
    })?;
    let refuse =
        |why: String| Failure::input(format!("{}: {why}; nothing was touched", path.display()));
    ckpt.validate().map_err(|e| refuse(e.to_string()))?;
    if plan
        .run_id
        .as_ref()
        .is_some_and(|id| *id != ckpt.identity.run_id)
    {
        return Err(refuse(format!(
            "its plan names run `{}` but its identity is run `{}`; it was edited, and cannot be resumed",
            plan.run_id.as_deref().unwrap_or_default(),
            ckpt.identity.run_id
        )));
    }
    // The checkpoint resumed is the one written on: whatever path it names for itself, it
    // may only replace the file it was read from.
    plan.checkpoint = plan.checkpoint_every.map(|_| absolute(path));
    let edited = check_world_unchanged(&plan, path, allow_world_change)?;
    let follow_world = edited.is_some();
    if let Some(text) = edited {
        // The run follows the edited file from here on, and says so: the checkpoints and
        // the manifest it writes record the file it now runs.
        plan.world_hash = crate::output::content_hash(text.as_bytes());
        plan.world_text = text;
    }
    Ok((plan, ckpt, follow_world))
}

/// Refuses to resume against a world file edited since the checkpoint, unless asked to.
/// Returns the edited file's text when it changed and `allow` is given.
fn check_world_unchanged(
    plan: &RunPlan,
    ckpt: &Path,
    allow: bool,
) -> Result<Option<String>, Failure> {
    let now = std::fs::read(&plan.world_file)
        .map_err(|e| Failure::input(format!("{}: {e}", plan.world_file.display())))?;
    let hash = crate::output::content_hash(&now);
    if hash == plan.world_hash {
        return Ok(None);
    }
    if allow {
        return String::from_utf8(now).map(Some).map_err(|_| {
            Failure::input(format!(
                "{}: the world file is not UTF-8 text",
                plan.world_file.display()
            ))
        });
    }
    Err(Failure::input(format!(
        "{}: the world file changed since the checkpoint {} was written (hash {} then, {hash} now), so the resumed run would not continue the same world; restore it, or pass --allow-world-change to follow the edited file (nothing was touched)",
        plan.world_file.display(),
        ckpt.display(),
        plan.world_hash
    )))
}

fn plan_from_args(registry: &Registry, args: &RunArgs) -> Result<RunPlan, Failure> {
    let world_file = absolute(&locate(
        args.world_file
            .as_deref()
            .unwrap_or(Path::new(DEFAULT_WORLD)),
    ));
    let world = WorldFile::load_with(&world_file, registry).map_err(Failure::input)?;
    let world_text = std::fs::read_to_string(&world_file)
        .map_err(|e| Failure::input(format!("{}: {e}", world_file.display())))?;
    let d = &world.harness;
    let config = HarnessConfig {
        window_steps: args.window_steps.or(d.window_steps).unwrap_or(256),
        auto_reset: args.auto_reset.or(d.auto_reset).unwrap_or(false),
        steps: args.steps.or(d.steps).unwrap_or(100_000),
        record_transitions: args.record_transitions,
    };
    if config.window_steps == 0 || config.window_steps > crate::limits::MAX_WINDOW_STEPS {
        return Err(Failure::input(format!(
            "--window-steps is {}; use 1 to {}",
            config.window_steps,
            crate::limits::MAX_WINDOW_STEPS
        )));
    }
    if let Some(id) = &args.run_id {
        crate::limits::check_run_id("--run-id", id).map_err(Failure::input)?;
    }
    if args.checkpoint_every == Some(0) {
        return Err(Failure::input("--checkpoint-every must be at least 1"));
    }
    let agent = args
        .agent
        .clone()
        .or_else(|| d.agent.clone())
        .unwrap_or_else(|| "random".into());
    let mut agent_options = world.agent_options(&agent);
    for opt in &args.agent_opt {
        set_option(&mut agent_options, opt).map_err(Failure::input)?;
    }
    if args.part_seconds.is_some() && !matches!(args.format, FormatArg::Parquet) {
        return Err(Failure::input(
            "--part-seconds applies to Parquet traces only (--format parquet): JSON Lines and CSV hand every window's rows to the file at its flush",
        ));
    }
    Ok(RunPlan {
        world_file,
        agent,
        agent_options,
        seed: args.seed.or(d.seed).unwrap_or(0),
        config,
        run_id: args.run_id.clone(),
        format: match args.format {
            FormatArg::Jsonl => TraceFormat::Jsonl,
            FormatArg::Csv => TraceFormat::Csv,
            FormatArg::Parquet => TraceFormat::Parquet,
        },
        part_seconds: args.part_seconds.unwrap_or_else(default_part_seconds),
        trace: args.trace.as_deref().map(absolute),
        no_trace: args.no_trace,
        checkpoint_every: args.checkpoint_every,
        checkpoint: args.checkpoint.as_deref().map(absolute),
        notify: args.notify.unwrap_or(world.notify),
        role_notify: world
            .roles
            .as_ref()
            .map(|r| r.notify.levels.clone())
            .unwrap_or_default(),
        world_hash: crate::output::content_hash(world_text.as_bytes()),
        world_text,
    })
}

/// Applies one `--agent-opt KEY=VALUE` to `table`: a dotted KEY names nested tables, VALUE
/// is read as TOML and, failing that, taken as a string.
pub(crate) fn set_option(table: &mut toml::Table, opt: &str) -> Result<(), String> {
    let (key, raw) = opt
        .split_once('=')
        .ok_or_else(|| format!("--agent-opt `{opt}`: expected KEY=VALUE"))?;
    let path: Vec<&str> = key.trim().split('.').collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "--agent-opt `{opt}`: the key is empty or has an empty part"
        ));
    }
    let value = toml::from_str::<toml::Table>(&format!("v = {}", raw.trim()))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.trim().to_string()));
    let (last, parents) = path.split_last().unwrap_or((&"", &[]));
    let mut at = table;
    for part in parents {
        let entry = at
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        at = entry
            .as_table_mut()
            .ok_or_else(|| format!("--agent-opt `{opt}`: `{part}` is not a table"))?;
    }
    at.insert(last.to_string(), value);
    Ok(())
}

fn ensure_parent(p: &Path) -> Result<(), Failure> {
    crate::output::create_parent(p).map_err(|e| Failure::input(e.to_string()))
}

/// A new run: builds the harness, resolves the default output paths from its run id,
/// checks them, locks the checkpoint and opens the trace. Returns the resolved plan, which
/// checkpoints store, and the checkpoint's lock, held for the run.
fn start(
    kind: &dyn Kind,
    world: &WorldFile,
    plan: RunPlan,
) -> Result<(Prepared, RunPlan), Failure> {
    let mut harness = kind
        .harness(&plan.request(world, false))
        .map_err(Failure::input)?;
    if plan.run_id.is_none() {
        let id = harness.identity();
        let run_id = default_run_id(&plan, &id.task, &id.algorithm_id)?;
        harness.set_run_id(run_id);
    }
    let plan = resolve_paths(plan, &harness.identity().run_id);
    check_unicode(&plan)?;
    check_outputs(&plan, None)?;
    let lock = lock_checkpoint(&plan)?;
    let manifest_lock = lock_manifest(&plan)?;
    if let (Some(p), Some(manifest_lock)) = (&plan.trace, manifest_lock) {
        ensure_parent(p)?;
        harness.set_part_interval(plan.part_interval()?);
        harness
            .open_trace(p, plan.format, None)
            .map_err(Failure::input)?;
        let (path, manifest) = start_manifest(&plan, harness.identity(), None)?;
        harness
            .begin_manifest(&path, manifest, manifest_lock)
            .map_err(Failure::input)?;
    }
    Ok(((harness, lock), plan))
}

/// `{task}-{agent}-seed{seed}`, with the world file's stem after the task when it differs
/// from the task, so two world files of one task do not share default paths, and
/// `-notify-{level}` after the agent when the level is not `none`, so the settings of one
/// agent do not either; the same command twice still writes the same bytes.
fn default_run_id(plan: &RunPlan, task: &str, agent: &str) -> Result<String, Failure> {
    let stem = plan
        .world_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let agent = if plan.notify.is_none() {
        crate::morpheus::roles::agent_id(agent)
    } else {
        format!("{agent}-notify-{}", plan.notify)
    };
    let id = if stem.is_empty() || stem == task {
        format!("{task}-{agent}-seed{}", plan.seed)
    } else {
        format!("{task}-{stem}-{agent}-seed{}", plan.seed)
    };
    crate::limits::check_run_id(
        "the default run id (from the task and world file name)",
        &id,
    )
    .map_err(|e| Failure::input(format!("{e}; pass --run-id")))?;
    Ok(id)
}

/// Checks every output path before any work: each must be a regular file or absent, none
/// may be an input (the world file, the checkpoint being resumed) or another output (the
/// events table and the manifest written beside the trace included), and the trace's
/// extension must match its format.
fn check_outputs(plan: &RunPlan, resume: Option<&Path>) -> Result<(), Failure> {
    use crate::output::{check_distinct, check_output};
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    let beside = plan.trace.as_ref().map(|t| {
        (
            crate::trace::events_path(t, plan.format),
            crate::trace::Manifest::path_for(t),
        )
    });
    if let (Some(t), Some((events, manifest))) = (&plan.trace, &beside) {
        if crate::trace::is_events_table(t) {
            return Err(Failure::input(format!(
                "--trace {}: the name is an events table's (`*.events.<format>`), which eval would refuse as a trace; name the trace otherwise",
                t.display()
            )));
        }
        outputs.push(("--trace", t));
        outputs.push(("the trace's events table", events));
        outputs.push(("the run's manifest", manifest));
        let want = plan.format.extension();
        let named = t.extension().and_then(|e| e.to_str()).and_then(|ext| {
            [TraceFormat::Jsonl, TraceFormat::Csv, TraceFormat::Parquet]
                .into_iter()
                .map(TraceFormat::extension)
                .find(|known| ext.eq_ignore_ascii_case(known))
        });
        if let Some(wrong) = named
            && wrong != want
        {
            return Err(Failure::input(format!(
                "--trace {}: the extension says {wrong} but the format is {want}; pass --format {wrong} or name the file .{want}",
                t.display()
            )));
        }
        // A Parquet trace is a directory of part files; its writer refuses a path that is
        // not one of its own directories.
        if plan.format != TraceFormat::Parquet {
            check_output(t).map_err(Failure::input)?;
        }
    }
    if let Some(c) = &plan.checkpoint {
        outputs.push(("--checkpoint", c));
        check_output(c).map_err(Failure::input)?;
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

/// Holds the checkpoint's lock for the run, so two runs never share one checkpoint.
fn lock_checkpoint(plan: &RunPlan) -> Result<Option<OutputLock>, Failure> {
    match &plan.checkpoint {
        Some(p) => {
            ensure_parent(p)?;
            OutputLock::beside(p).map(Some).map_err(Failure::input)
        }
        None => Ok(None),
    }
}

/// Refuses a world file, trace or checkpoint path that is not UTF-8 before anything is
/// opened: the checkpoint and the manifest record them as JSON text.
fn check_unicode(plan: &RunPlan) -> Result<(), Failure> {
    let paths = [
        ("the world file", Some(&plan.world_file)),
        ("--trace", plan.trace.as_ref()),
        ("--checkpoint", plan.checkpoint.as_ref()),
    ];
    for (role, path) in paths {
        if let Some(p) = path {
            crate::output::check_unicode(role, p).map_err(Failure::input)?;
        }
    }
    Ok(())
}

/// Takes the lock of the run manifest beside the trace, before the trace is opened (and
/// cut or emptied), so a second run onto the same trace is refused having changed nothing.
fn lock_manifest(plan: &RunPlan) -> Result<Option<OutputLock>, Failure> {
    match &plan.trace {
        Some(t) => {
            ensure_parent(t)?;
            crate::trace::Manifest::lock(&crate::trace::Manifest::path_for(t))
                .map(Some)
                .map_err(Failure::input)
        }
        None => Ok(None),
    }
}

/// Default paths depend on the run id, known only once the harness is built.
fn resolve_paths(plan: RunPlan, run_id: &str) -> RunPlan {
    let default = |ext: &str| absolute(&PathBuf::from("runs").join(format!("{run_id}.{ext}")));
    let ext = plan.format.extension();
    RunPlan {
        trace: (!plan.no_trace).then(|| plan.trace.clone().unwrap_or_else(|| default(ext))),
        checkpoint: plan.checkpoint_every.map(|_| {
            plan.checkpoint
                .clone()
                .unwrap_or_else(|| default("ckpt.json"))
        }),
        ..plan
    }
}

/// A resumed run: the outputs checked and the checkpoint locked, the harness from the
/// checkpoint, then the trace cut back to its length. Everything in the checkpoint is
/// checked (by the resume) before the trace is opened, and the trace's own length and last
/// row before it is cut.
fn continue_from(
    kind: &dyn Kind,
    world: &WorldFile,
    plan: &RunPlan,
    (ckpt, ckpt_path): (Checkpoint, &Path),
    follow_world: bool,
) -> Result<Prepared, Failure> {
    check_outputs(plan, Some(ckpt_path))?;
    let (trace_bytes, tail) = (ckpt.trace_bytes, ckpt.trace_tail.clone());
    let at_step = ckpt.step;
    // Everything that reads only comes first, so a refusal leaves every file as it was
    // (the lock file's pid included).
    if let Some(p) = &plan.trace {
        ckpt.verify_tables(p, plan.format)
            .map_err(|e| Failure::input(format!("--resume {}: {e}", ckpt_path.display())))?;
    }
    let mut harness = kind
        .resume(&plan.request(world, follow_world), ckpt)
        .map_err(Failure::input)?;
    let lock = lock_checkpoint(plan)?;
    let manifest_lock = lock_manifest(plan)?;
    match (&plan.trace, trace_bytes, manifest_lock) {
        (Some(p), Some(bytes), Some(manifest_lock)) => {
            harness.set_part_interval(plan.part_interval()?);
            harness
                .open_trace(p, plan.format, Some((bytes, tail.as_deref())))
                .map_err(Failure::input)?;
            let (path, manifest) = start_manifest(plan, harness.identity(), Some(at_step))?;
            harness
                .begin_manifest(&path, manifest, manifest_lock)
                .map_err(Failure::input)?;
        }
        (Some(_), None, _) | (None, Some(_), _) => {
            return Err(Failure::input(
                "the checkpoint's trace fields do not match its run plan; it was edited, and cannot be resumed",
            ));
        }
        (Some(_), Some(_), None) | (None, None, _) => {}
    }
    Ok((harness, lock))
}

fn with_checkpoints(
    mut harness: Box<dyn DynHarness>,
    plan: &RunPlan,
) -> Result<Box<dyn DynHarness>, Failure> {
    if let (Some(path), Some(every)) = (&plan.checkpoint, plan.checkpoint_every) {
        ensure_parent(path)?;
        let meta = serde_json::to_value(plan).map_err(Failure::run)?;
        harness.set_checkpoint(CheckpointPlan {
            path: path.to_path_buf(),
            every,
            meta,
        });
    }
    Ok(harness)
}

fn report(
    summary: &RunSummary,
    started: Instant,
    identity: &crate::trace::RunIdentity,
    world: &WorldFile,
    plan: &RunPlan,
) {
    let secs = started.elapsed().as_secs_f64();
    out!("run        {}", identity.run_id);
    out!("world      {} ({})", world.path.display(), identity.task);
    out!(
        "agent      {}   seed {}",
        identity.algorithm_id,
        identity.seed
    );
    out!(
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
    out!(
        "reward     total {:.3}   mean/step {:.5}",
        summary.total_reward,
        summary.total_reward / summary.steps.max(1) as f64
    );
    out!("time       {secs:.2} s for this invocation");
    out!();
    out!("{:<20} {:>10} {:>14}", "regime", "steps", "mean reward");
    for (label, s) in &summary.labels {
        if s.steps > 0 {
            out!(
                "{label:<20} {:>10} {:>14.5}",
                s.steps,
                s.reward / s.steps as f64
            );
        }
    }
    if let Some(p) = &plan.trace {
        out!();
        out!("trace      {}", p.display());
        if summary.steps == 0 {
            // `eval` refuses a trace without rows: say so instead of a command that fails.
            out!("score it:  nothing to score, the run took no steps");
        } else {
            out!("score it:  perennial eval {}", p.display());
        }
    }
    // Only a checkpoint that exists is announced: none is written before `every` steps.
    if let (Some(p), Some(every)) = (&plan.checkpoint, plan.checkpoint_every)
        && summary.steps >= every
    {
        out!(
            "checkpoint {} (every {every} steps; continue with --resume)",
            p.display()
        );
    }
}

/// The run manifest to write next to the trace, and its path, with `exit_status` =
/// `running`; a resumed run (`resumed_at` = the checkpoint's step) keeps the first start
/// time. The run writes it ([`DynHarness::begin_manifest`]) and ends it.
fn start_manifest(
    plan: &RunPlan,
    identity: &RunIdentity,
    resumed_at: Option<u64>,
) -> Result<(PathBuf, crate::trace::Manifest), Failure> {
    let Some(trace_path) = &plan.trace else {
        return Err(Failure::run("a manifest needs a trace path"));
    };
    let path = crate::trace::Manifest::path_for(trace_path);
    let now = crate::trace::utc_now();
    let earlier =
        resumed_at.and_then(|_| crate::trace::Manifest::find(trace_path, &identity.run_id));
    let manifest = crate::trace::Manifest {
        schema_version: crate::trace::TRACE_SCHEMA_VERSION,
        perennial_version: crate::VERSION.to_string(),
        run_id: identity.run_id.clone(),
        task: identity.task.clone(),
        // The text the run was built from, not the file as it is now.
        world_file: Some(crate::trace::WorldFileRecord {
            path: plan.world_file.clone(),
            hash: plan.world_hash.clone(),
            text: plan.world_text.clone(),
        }),
        seed: identity.seed,
        agent: plan.agent.clone(),
        agent_options: serde_json::to_value(&plan.agent_options).map_err(Failure::run)?,
        trace: Some(trace_path.clone()),
        options: serde_json::to_value(plan).map_err(Failure::run)?,
        argv: std::env::args().collect(),
        started_at: earlier
            .as_ref()
            .map_or_else(|| now.clone(), |m| m.started_at.clone()),
        resumed_at: match (&earlier, resumed_at) {
            (Some(m), Some(_)) => m.resumed_at.iter().cloned().chain([now]).collect(),
            (None, Some(_)) => vec![now],
            _ => Vec::new(),
        },
        ended_at: None,
        steps_done: resumed_at.unwrap_or(0),
        exit_status: "running".into(),
    };
    Ok((path, manifest))
}

#[cfg(test)]
mod tests {
    use super::set_option;

    #[test]
    fn agent_options_parse_as_toml_and_nest_by_dots() {
        let mut t = toml::Table::new();
        set_option(&mut t, "actor_lr=3e-4").unwrap();
        set_option(&mut t, "baseline.reorder_point = 40").unwrap();
        set_option(&mut t, "mode=greedy").unwrap();
        assert_eq!(t["actor_lr"].as_float(), Some(3e-4));
        assert_eq!(t["baseline"]["reorder_point"].as_integer(), Some(40));
        assert_eq!(t["mode"].as_str(), Some("greedy"));
    }

    #[test]
    fn an_agent_option_without_a_value_or_key_is_an_error() {
        let mut t = toml::Table::new();
        assert!(
            set_option(&mut t, "actor_lr")
                .unwrap_err()
                .contains("KEY=VALUE")
        );
        assert!(set_option(&mut t, "a..b=1").is_err());
        set_option(&mut t, "x=1").unwrap();
        assert!(
            set_option(&mut t, "x.y=1")
                .unwrap_err()
                .contains("not a table")
        );
    }
}
