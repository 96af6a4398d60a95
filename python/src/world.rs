//! The adapter between Python and the core crate: a world built from a world file, and a
//! run driven one externally supplied action at a time.
//!
//! A [`Run`] is what `perennial run` does with an agent, with the agent replaced by the
//! caller: a [`Session`] (the core crate's run core, the one place a step is taken and
//! recorded) over the world the file's kind builds through the [`Registry`], so the
//! world file's regimes shift on the scheduler's step axis, the episode seeds come from the
//! run seed as in the harness, and every step becomes one trace row. The replay tests in `python/tests/` check that the
//! bytes match `perennial run` for the same seed, run id and actions.

use std::path::Path;

use perennial::dyn_env::DynEnv;
use perennial::env::{Env, EnvError, EnvSpec, check_step};
use perennial::regime::{Notification, NotifyLevel, Origin, Plan};
use perennial::registry::{BuildError, Registry};
use perennial::reward::Breakdown;
use perennial::seed::{self, Stream};
use perennial::session::{RunEnd, Session, SessionState, StepError};
use perennial::trace::{self, RunIdentity, TraceFormat};
use perennial::world_file::TomlFile;
use perennial::world_file::{WorldFile, WorldFileError};

/// The world files shipped with the crate, compiled into the extension so an installed
/// package finds them without the repository: (file name, TOML text).
pub const SHIPPED: &[(&str, &str)] = &[
    ("cartpole.toml", include_str!("../../worlds/cartpole.toml")),
    (
        "cartpole-drift.toml",
        include_str!("../../worlds/cartpole-drift.toml"),
    ),
    (
        "warehouse.toml",
        include_str!("../../worlds/warehouse.toml"),
    ),
    (
        "logistics.toml",
        include_str!("../../worlds/logistics.toml"),
    ),
    (
        "enterprise.toml",
        include_str!("../../worlds/enterprise.toml"),
    ),
];

/// How the Python layer names a shipped world: `shipped:<file name>`.
pub const SHIPPED_PREFIX: &str = "shipped:";

/// Loads a world file: `shipped:<name>` from the compiled-in texts (reported as
/// `worlds/<name>`, where the repository keeps them), anything else from disk.
pub fn load(world: &str) -> Result<WorldFile, WorldFileError> {
    let Some(name) = world.strip_prefix(SHIPPED_PREFIX) else {
        return WorldFile::load_with(Path::new(world), crate::pyworld::registry());
    };
    let shown = Path::new("worlds").join(name);
    match SHIPPED.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => WorldFile::parse_with(text, &shown, crate::pyworld::registry()),
        None => Err(WorldFileError {
            path: shown,
            line: None,
            field: None,
            message: format!(
                "no shipped world file is called `{name}`; the shipped ones are {}",
                SHIPPED
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// Rows between two trace flushes, as the harness's default window: a killed process keeps
/// every row but the last few hundred.
const FLUSH_EVERY: u64 = 256;

/// Builds the world a loaded world file describes, through `registry`.
pub fn build_world(file: &WorldFile, registry: &Registry) -> Result<Box<dyn DynEnv>, BuildError> {
    perennial::dyn_env::build(file, registry)
}

/// Where a run's rows go and how.
pub struct TraceTarget {
    /// The trace file.
    pub path: std::path::PathBuf,
    /// JSON Lines or CSV.
    pub format: TraceFormat,
    /// Write the `obs` and `action` columns.
    pub record_transitions: bool,
    /// How often a flush cuts a Parquet part (`None`: the writer's default).
    pub part_interval: Option<std::time::Duration>,
}

/// The result of one step, borrowed from the run.
pub struct StepOut<'a> {
    /// The observation after the step.
    pub obs: &'a [f32],
    /// The step's reward.
    pub reward: f64,
    /// The env says the state is terminal.
    pub terminated: bool,
    /// The env imposed a cutoff.
    pub truncated: bool,
    /// The reward breakdown, when the world has a reward specification.
    pub breakdown: Option<&'a Breakdown>,
}

/// A run of a world file driven by externally supplied actions, as `perennial run` drives it
/// with an agent.
///
/// Seeds: a run with seed `S` builds episode `e` from `seed::derive(S, World, e)` and seeds
/// the scheduler with `seed::derive(S, Scheduler, 0)`, as the harness does. Every `reset`
/// without a seed starts the next episode; `reset` with a seed starts the run afresh.
pub struct Run {
    file: WorldFile,
    session: Session<Box<dyn DynEnv>>,
    trace: Option<TraceTarget>,
    /// The trace `close` finished: a closed traced run takes no more steps.
    closed_trace: Option<std::path::PathBuf>,
    /// Why the run failed, for the manifest's exit status.
    failure: Option<String>,
    /// The run was stopped by an interrupt (the manifest's exit status `interrupted`).
    interrupted: bool,
    /// What the manifest says of the agent and the options, when the caller runs an agent
    /// of its own (`python -m perennial run --agent module:Class`).
    described: Option<Described>,
    /// What the last step told the agent: set on the first step of a new regime when the
    /// notify level is not `none`, cleared by every other step and by `reset`.
    notification: Option<Notification>,
}

/// The agent and options a run's manifest records in place of the Python env's defaults.
pub struct Described {
    /// The agent's name as the user gave it.
    pub agent: String,
    /// The agent's options.
    pub agent_options: serde_json::Value,
    /// Options merged over the env's (e.g. the step budget and window of a command-line
    /// run).
    pub options: serde_json::Map<String, serde_json::Value>,
}

/// What can go wrong in a run, already worded for the user.
#[derive(Debug)]
pub enum RunError {
    /// A bad action or a call out of order; nothing changed.
    Usage(String),
    /// The world, a regime or the trace failed.
    Failed(String),
    /// The world file describes a world that cannot be built: where and why.
    World(WorldFileError),
}

impl From<BuildError> for RunError {
    fn from(e: BuildError) -> Self {
        match e {
            BuildError::World(e) => RunError::World(e),
            e => RunError::Failed(e.to_string()),
        }
    }
}

impl From<StepError> for RunError {
    fn from(e: StepError) -> Self {
        match &e {
            // The world itself failed: not a bad call by the user.
            StepError::Env { source, .. } if matches!(**source, EnvError::World(_)) => {
                RunError::Failed(e.to_string())
            }
            StepError::Env { .. }
            | StepError::NotStarted { .. }
            | StepError::EpisodeEnded { .. } => RunError::Usage(e.to_string()),
            _ => RunError::Failed(e.to_string()),
        }
    }
}

impl Run {
    /// A run of `file` with run seed `seed`, not yet reset, telling the agent about shifts
    /// at level `notify` (`None`: the world file's `[notify] level`). With a trace target
    /// the trace file is created now, so a bad path is reported at once.
    pub fn new(
        file: WorldFile,
        registry: &Registry,
        seed: u64,
        run_id: Option<String>,
        algorithm_id: String,
        trace: Option<TraceTarget>,
        notify: Option<NotifyLevel>,
    ) -> Result<Self, RunError> {
        let world = build_world(&file, registry)?;
        let task = world.spec().id.clone();
        let identity = RunIdentity {
            run_id: run_id.unwrap_or_else(|| format!("{task}-{algorithm_id}-seed{seed}")),
            seed,
            algorithm_id,
            task,
            notify: notify.unwrap_or(file.notify),
        };
        let scheduler = file
            .scheduler(seed::derive(seed, Stream::Scheduler, 0))
            .map_err(|e| RunError::Failed(e.to_string()))?;
        let mut session = Session::new(world, scheduler, identity);
        session.set_record_transitions(trace.as_ref().is_some_and(|t| t.record_transitions));
        let mut run = Run {
            file,
            session,
            trace,
            closed_trace: None,
            failure: None,
            interrupted: false,
            described: None,
            notification: None,
        };
        run.open_trace()?;
        Ok(run)
    }

    fn open_trace(&mut self) -> Result<(), RunError> {
        let Some(t) = &self.trace else {
            return Ok(());
        };
        if let Some(dir) = t.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| RunError::Usage(format!("{}: {e}", dir.display())))?;
        }
        // Locked before the trace is opened (and emptied): a second env onto the same trace
        // is refused having changed nothing.
        let lock = trace::Manifest::lock(&trace::Manifest::path_for(&t.path))
            .map_err(|e| RunError::Usage(e.to_string()))?;
        self.session
            .open_trace(&t.path, t.format, None, 0, t.part_interval)
            .map_err(|e| RunError::Usage(e.to_string()))?;
        let (path, manifest) = self.start_manifest(t);
        self.session
            .begin_manifest(&path, manifest, lock)
            .map_err(|e| RunError::Usage(e.to_string()))
    }

    /// The run manifest as `perennial run` writes it, with the Python env's options in place
    /// of the command line's.
    fn start_manifest(&self, t: &TraceTarget) -> (std::path::PathBuf, trace::Manifest) {
        let id = self.session.identity();
        let mut options = serde_json::json!({
            "interface": "python",
            "world": self.file.path,
            "seed": id.seed,
            "run_id": id.run_id,
            "algorithm_id": id.algorithm_id,
            "notify": id.notify,
            "trace": t.path,
            "format": t.format.extension(),
            "record_transitions": t.record_transitions,
            "part_seconds": t.part_interval.map(|d| d.as_secs_f64()),
        });
        if let (Some(d), Some(o)) = (&self.described, options.as_object_mut()) {
            o.extend(d.options.clone());
        }
        let (agent, agent_options) = match &self.described {
            Some(d) => (d.agent.clone(), d.agent_options.clone()),
            None => (id.algorithm_id.clone(), serde_json::json!({})),
        };
        let manifest = trace::Manifest {
            schema_version: trace::TRACE_SCHEMA_VERSION,
            perennial_version: perennial::VERSION.to_string(),
            run_id: id.run_id.clone(),
            task: id.task.clone(),
            world_file: Some(self.file.record()),
            seed: id.seed,
            agent,
            agent_options,
            trace: Some(t.path.clone()),
            options,
            argv: std::env::args().collect(),
            started_at: trace::utc_now(),
            resumed_at: Vec::new(),
            ended_at: None,
            steps_done: 0,
            exit_status: "running".into(),
        };
        (trace::Manifest::path_for(&t.path), manifest)
    }

    /// Rewrites the manifest with the end time, the steps in the trace and how the run
    /// ended.
    fn end_manifest(&mut self) -> Result<(), RunError> {
        let end = match (&self.failure, self.interrupted) {
            (Some(e), _) => RunEnd::Failed(e.clone()),
            (None, true) => RunEnd::Interrupted,
            (None, false) => RunEnd::Completed,
        };
        let steps = self.session.counters().step;
        self.session
            .end_manifest(&end, steps)
            .map_err(|e| RunError::Failed(e.to_string()))
    }

    /// Records that the run failed for a reason outside the world (e.g. the caller's agent
    /// raised): the manifest's exit status becomes `failed: <message>`.
    pub fn fail(&mut self, message: String) {
        self.failure = Some(message);
    }

    /// Records that the run was interrupted: the manifest's exit status becomes
    /// `interrupted`.
    pub fn interrupt(&mut self) {
        self.interrupted = true;
    }

    /// Gives the run id and the algorithm id (before the trace is opened).
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] once the run has a trace, which carries both in every row, or
    /// for a run id a trace cannot carry.
    pub fn identify(&mut self, run_id: String, algorithm_id: String) -> Result<(), RunError> {
        if self.trace.is_some() || self.closed_trace.is_some() {
            return Err(RunError::Usage(
                "the run and algorithm ids are given before the trace is opened".into(),
            ));
        }
        perennial::limits::check_run_id("run_id", &run_id).map_err(RunError::Usage)?;
        let id = self.session.identity_mut();
        id.run_id = run_id;
        id.algorithm_id = algorithm_id;
        Ok(())
    }

    /// What the manifest records of the agent and the run's options (before the trace is
    /// opened).
    pub fn describe(&mut self, described: Described) {
        self.described = Some(described);
    }

    /// The run's saved state (see `crate::snapshot`).
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] when the world cannot be saved.
    pub fn save_state(&self) -> Result<SessionState, RunError> {
        self.session
            .snapshot()
            .map_err(|e| RunError::Usage(format!("this world cannot be snapshotted: {e}")))
    }

    /// Puts `state` in place. A traced run refuses: its trace would no longer be one run.
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] for a traced run or a state that does not fit the world.
    pub fn restore_state(&mut self, state: SessionState) -> Result<(), RunError> {
        let traced = self.trace.as_ref().map(|t| &t.path);
        if let Some(path) = traced.or(self.closed_trace.as_ref()) {
            return Err(RunError::Usage(format!(
                "restore() on a traced env: its trace {} would no longer hold one run; start a new env from the snapshot instead: perennial.make(world, snapshot=snapshot, trace=...)",
                path.display()
            )));
        }
        self.session
            .restore(state)
            .map_err(|e| RunError::Usage(format!("the snapshot does not fit this env: {e}")))?;
        self.notification = None;
        Ok(())
    }

    /// Starts writing the trace `target` from the step the run stands at (a run restored
    /// from a snapshot writes its first row at the saved step).
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] when the run already has a trace or the file cannot be made.
    pub fn attach_trace(&mut self, target: TraceTarget) -> Result<(), RunError> {
        if self.trace.is_some() || self.closed_trace.is_some() {
            return Err(RunError::Usage("the env already has a trace".into()));
        }
        self.session
            .set_record_transitions(target.record_transitions);
        self.trace = Some(target);
        self.open_trace()
    }

    /// Records in the events table, at the step the run stands at, that this run is
    /// rollout `k` of a fork of run `source_run_id` (as `perennial fork` does), so
    /// `perennial episodes` groups the rollouts of one fork. A run without a trace records
    /// nothing.
    ///
    /// # Errors
    ///
    /// [`RunError::Failed`] when the events table cannot be written.
    pub fn record_fork(&mut self, source_run_id: &str, k: u64) -> Result<(), RunError> {
        let step = self.session.counters().step;
        let row = trace::EventRow::fork(&self.session.identity().run_id, step, source_run_id, k);
        match self.session.events_mut() {
            Some(events) => events
                .write(row)
                .map_err(|e| RunError::Failed(e.to_string())),
            None => Ok(()),
        }
    }

    /// The world file the run was built from.
    pub fn file(&self) -> &WorldFile {
        &self.file
    }

    /// The world itself, type-erased.
    pub fn world(&self) -> &dyn DynEnv {
        self.session.env().as_ref()
    }

    /// The world's spec.
    pub fn spec(&self) -> &EnvSpec {
        self.session.env().spec()
    }

    /// The run's identity columns.
    pub fn identity(&self) -> &RunIdentity {
        self.session.identity()
    }

    /// The regime label in force and its origin.
    pub fn regime(&self) -> (&str, Origin) {
        let scheduler = self.session.scheduler();
        (scheduler.label(), scheduler.origin())
    }

    /// Steps taken in the run, episode index and step within the episode.
    pub fn counters(&self) -> (u64, u64, u64) {
        let c = self.session.counters();
        (c.step, c.episode, c.episode_step)
    }

    /// Destroys the world and builds the next episode (`seed` = `None`) or starts the run
    /// afresh with run seed `seed`. Returns the first observation.
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] for a new seed once a traced run has written rows (a trace is one
    /// run with one seed), and after `close` of a traced run.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<&[f32], RunError> {
        self.check_open()?;
        if let Some(s) = seed {
            let step = self.session.counters().step;
            if self.session.sink_mut().is_some() && step > 0 {
                return Err(RunError::Usage(format!(
                    "reset(seed={s}) on a traced env that already took {step} steps: a trace holds one run with one seed (here {}); reset without a seed to start the next episode, or make a new env with seed={s} and its own trace",
                    self.session.identity().seed
                )));
            }
            self.restart(s)?;
        }
        self.notification = None;
        if self.session.observation().is_some() {
            self.session.next_episode();
        } else {
            self.session.start()?;
        }
        Ok(self.session.observation().map_or(&[], Vec::as_slice))
    }

    /// A traced run that `close` finished takes no more steps: they would not be recorded.
    fn check_open(&self) -> Result<(), RunError> {
        match &self.closed_trace {
            Some(path) => Err(RunError::Usage(format!(
                "the env is closed: its trace {} is complete and records no more steps; make a new env (with a trace of its own) to go on",
                path.display()
            ))),
            None => Ok(()),
        }
    }

    /// Forgets the run so far and makes `seed` its seed, as a new run would.
    fn restart(&mut self, seed: u64) -> Result<(), RunError> {
        let id = self.session.identity_mut();
        let default_id = format!("{}-{}-seed{}", id.task, id.algorithm_id, id.seed);
        if id.run_id == default_id {
            id.run_id = format!("{}-{}-seed{seed}", id.task, id.algorithm_id);
        }
        let scheduler = self
            .file
            .scheduler(seed::derive(seed, Stream::Scheduler, 0))
            .map_err(|e| RunError::Failed(e.to_string()))?;
        self.session.restart(seed, scheduler);
        if self.session.sink_mut().is_some() {
            // No row was written: the file is recreated with the new identity.
            self.session.detach_trace();
            if let Some(path) = self.session.forget_manifest() {
                let _ = std::fs::remove_file(path);
            }
            self.open_trace()?;
        }
        Ok(())
    }

    /// Under a manual plan, makes `label` the regime from the next step on.
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] for an unknown label or a plan that is not manual.
    pub fn shift(&mut self, label: &str) -> Result<(), RunError> {
        if !matches!(self.session.scheduler().plan(), Plan::Manual) {
            return Err(RunError::Usage(format!(
                "shift(\"{label}\"): {} is not a manual plan: its regimes shift on their own schedule; give the world file `[schedule] plan = \"manual\"` to shift by hand",
                self.file.path.display()
            )));
        }
        self.session
            .scheduler_mut()
            .shift_to(label)
            .map_err(|e| RunError::Usage(e.to_string()))
    }

    /// Takes one step with `action`, writing its trace row.
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] for an invalid action, a step before `reset`, after the episode
    /// ended or after `close` of a traced run (nothing changes); [`RunError::Failed`] when
    /// the world, a regime or the trace fails (every earlier row is flushed).
    pub fn step(&mut self, action: usize) -> Result<StepOut<'_>, RunError> {
        self.check_open()?;
        // Checked before the session moves, so a refused action makes no shift either.
        if let Err(e) = check_step(
            self.session.observation().is_some(),
            self.session.episode_ended(),
            &action,
            &self.spec().action_space,
        ) {
            return Err(RunError::Usage(match e {
                EnvError::InvalidAction { .. } => {
                    format!("step {}: {e}", self.session.counters().step)
                }
                _ => e.to_string(),
            }));
        }
        self.notification = None;
        let stepped = match self.session.step(&action) {
            Ok(t) => t,
            Err(e) => {
                // Keep every complete row: the error is what the caller needs to see.
                let _ = self.session.flush();
                let e = RunError::from(e);
                if let RunError::Failed(msg) = &e {
                    self.failure = Some(msg.clone());
                }
                return Err(e);
            }
        };
        self.notification = stepped.shift.and_then(|s| s.notification);
        if self.session.counters().step.is_multiple_of(FLUSH_EVERY) {
            self.flush()?;
        }
        Ok(StepOut {
            obs: self.session.observation().map_or(&[], Vec::as_slice),
            reward: stepped.reward,
            terminated: stepped.terminated,
            truncated: stepped.truncated,
            breakdown: self.session.breakdown(),
        })
    }

    /// What the last step told the agent about a regime shift: `Some` only on the first
    /// step of a new regime, when the run's notify level is not `none`.
    pub fn notification(&self) -> Option<&Notification> {
        self.notification.as_ref()
    }

    /// Writes every buffered row to the trace file.
    ///
    /// # Errors
    ///
    /// [`RunError::Failed`] when the file cannot be written.
    pub fn flush(&mut self) -> Result<(), RunError> {
        self.session
            .flush()
            .map_err(|e| RunError::Failed(e.to_string()))
    }

    /// Flushes and closes the trace; the run takes no more rows.
    ///
    /// # Errors
    ///
    /// As [`Run::flush`].
    pub fn close(&mut self) -> Result<(), RunError> {
        let flushed = self.flush();
        let closed = self
            .session
            .close()
            .map_err(|e| RunError::Failed(e.to_string()));
        let ended = self.end_manifest();
        self.session.detach_trace();
        if let Some(t) = self.trace.take() {
            self.closed_trace = Some(t.path);
        }
        flushed.and(closed).and(ended)
    }
}

impl Drop for Run {
    /// An env dropped without `close` (garbage collection) still flushes its rows and ends
    /// its manifest; the trace and events writers finish on their own drop.
    fn drop(&mut self) {
        let _ = self.session.flush();
        let _ = self.end_manifest();
    }
}
