//! The adapter between Python and the core crate: a world built from a world file, and a
//! run driven one externally supplied action at a time.
//!
//! This is the one module that knows how the core crate builds worlds and runs them. A
//! [`Run`] is what `perennial run` does with an agent, with the agent replaced by the
//! caller: the world file's regimes shift on the scheduler's step axis, the episode seeds
//! come from [`seed::derive`] on the run seed, and every step becomes one trace row written
//! by the core crate's trace writer. The replay tests in `python/tests/` check that the
//! bytes match `perennial run` for the same seed, run id and actions.

use std::fmt::Write as _;
use std::path::Path;

use perennial::cartpole::{CartPole, CartPoleParams};
use perennial::env::{Env, EnvError, EnvSpec, Transition, WorldEvent, check_step};
use perennial::morpheus::{Morpheus, MorpheusConfig};
use perennial::regime::{
    Conditions, Notification, NotifyLevel, Origin, ParamInfo, Plan, RegimeError, Scheduler,
    Shiftable, apply_over_baseline,
};
use perennial::reward::{Breakdown, Ceiling};
use perennial::seed::{self, Stream};
use perennial::trace::{
    self, EventRow, EventWriter, RowRecord, RunIdentity, TraceFormat, TraceSink,
};
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
];

/// How the Python layer names a shipped world: `shipped:<file name>`.
pub const SHIPPED_PREFIX: &str = "shipped:";

/// Loads a world file: `shipped:<name>` from the compiled-in texts (reported as
/// `worlds/<name>`, where the repository keeps them), anything else from disk.
pub fn load(world: &str) -> Result<WorldFile, WorldFileError> {
    let Some(name) = world.strip_prefix(SHIPPED_PREFIX) else {
        return WorldFile::load(Path::new(world));
    };
    let shown = Path::new("worlds").join(name);
    match SHIPPED.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => WorldFile::parse(text, &shown),
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

/// Any world a world file can describe, behind one type.
#[expect(
    clippy::large_enum_variant,
    reason = "a run holds one World; CartPole stays inline on the per-step path"
)]
pub enum World {
    /// Gymnasium's CartPole-v1.
    CartPole(CartPole),
    /// The persistent enterprise world.
    Morpheus(Box<Morpheus>),
}

impl World {
    /// Builds the world a loaded world file describes, with its reward specification.
    pub fn build(file: &WorldFile) -> Result<Self, String> {
        if let Some(params) = file.params::<CartPoleParams>() {
            return Ok(World::CartPole(CartPole::new(params.clone())));
        }
        if let Some(config) = file.params::<MorpheusConfig>() {
            let reward = file
                .reward_spec()
                .unwrap_or_else(perennial::morpheus::default_reward_spec);
            return Morpheus::new(config.clone(), reward)
                .map(|m| World::Morpheus(Box::new(m)))
                .map_err(|e| format!("{}: {e}", file.path.display()));
        }
        Err(format!(
            "{}: world kind `{}` is not available from Python; the package builds the kinds `cartpole` and `morpheus`",
            file.path.display(),
            file.kind()
        ))
    }
}

impl Env for World {
    type Obs = Vec<f32>;
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        match self {
            World::CartPole(e) => e.spec(),
            World::Morpheus(e) => e.spec(),
        }
    }

    fn reset(&mut self, seed: u64) -> Vec<f32> {
        match self {
            World::CartPole(e) => e.reset(seed).to_vec(),
            World::Morpheus(e) => e.reset(seed),
        }
    }

    fn step(&mut self, action: &usize) -> Result<Transition<Vec<f32>>, EnvError> {
        match self {
            World::CartPole(e) => e.step(action).map(|t| Transition {
                observation: t.observation.to_vec(),
                reward: t.reward,
                terminated: t.terminated,
                truncated: t.truncated,
                breakdown: t.breakdown,
            }),
            World::Morpheus(e) => e.step(action),
        }
    }

    fn ceiling(&self) -> Option<Ceiling> {
        match self {
            World::CartPole(e) => e.ceiling(),
            World::Morpheus(e) => e.ceiling(),
        }
    }

    fn expected_bound(&self) -> Option<f64> {
        match self {
            World::CartPole(e) => e.expected_bound(),
            World::Morpheus(e) => e.expected_bound(),
        }
    }

    fn drain_events(&mut self, out: &mut Vec<WorldEvent>) {
        match self {
            World::CartPole(e) => e.drain_events(out),
            World::Morpheus(e) => e.drain_events(out),
        }
    }
}

impl Shiftable for World {
    fn parameters(&self) -> Vec<ParamInfo> {
        match self {
            World::CartPole(e) => e.parameters(),
            World::Morpheus(e) => e.parameters(),
        }
    }

    fn get(&self, name: &str) -> Option<f64> {
        match self {
            World::CartPole(e) => e.get(name),
            World::Morpheus(e) => e.get(name),
        }
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        match self {
            World::CartPole(e) => e.set(name, value),
            World::Morpheus(e) => e.set(name, value),
        }
    }
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
    world: World,
    scheduler: Scheduler,
    /// The world's parameters before any regime: a regime's conditions override these.
    baseline: Conditions,
    identity: RunIdentity,
    trace: Option<TraceTarget>,
    /// The trace `close` finished: a closed traced run takes no more steps.
    closed_trace: Option<std::path::PathBuf>,
    sink: Option<Box<dyn TraceSink>>,
    /// The events table beside the trace, as `perennial run` writes it.
    events: Option<EventWriter>,
    /// The run manifest beside the trace and where it is written.
    manifest: Option<(std::path::PathBuf, trace::Manifest)>,
    /// Why the run failed, for the manifest's exit status.
    failure: Option<String>,
    world_events: Vec<WorldEvent>,
    step: u64,
    episode: u64,
    episode_step: u64,
    obs: Vec<f32>,
    breakdown: Option<Breakdown>,
    /// What the last step told the agent: set on the first step of a new regime when the
    /// notify level is not `none`, cleared by every other step and by `reset`.
    notification: Option<Notification>,
    started: bool,
    ended: bool,
    action_json: String,
}

/// What can go wrong in a run, already worded for the user.
#[derive(Debug)]
pub enum RunError {
    /// A bad action or a call out of order; nothing changed.
    Usage(String),
    /// The world, a regime or the trace failed.
    Failed(String),
}

impl Run {
    /// A run of `file` with run seed `seed`, not yet reset, telling the agent about shifts
    /// at level `notify` (`None`: the world file's `[notify] level`). With a trace target
    /// the trace file is created now, so a bad path is reported at once.
    pub fn new(
        file: WorldFile,
        seed: u64,
        run_id: Option<String>,
        algorithm_id: String,
        trace: Option<TraceTarget>,
        notify: Option<NotifyLevel>,
    ) -> Result<Self, RunError> {
        let world = World::build(&file).map_err(RunError::Failed)?;
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
        let baseline = world.snapshot();
        let mut run = Run {
            file,
            world,
            scheduler,
            baseline,
            identity,
            trace,
            closed_trace: None,
            sink: None,
            events: None,
            manifest: None,
            failure: None,
            world_events: Vec::new(),
            step: 0,
            episode: 0,
            episode_step: 0,
            obs: Vec::new(),
            breakdown: None,
            notification: None,
            started: false,
            ended: false,
            action_json: String::new(),
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
        let columns = trace::TraceColumns::for_env(&self.world, t.record_transitions);
        let mut sink = trace::create(&t.path, t.format, &self.identity, &columns)
            .map_err(|e| RunError::Usage(e.to_string()))?;
        let events = trace::events_path(&t.path, t.format);
        let mut events =
            EventWriter::create(&events, t.format).map_err(|e| RunError::Usage(e.to_string()))?;
        if let Some(every) = t.part_interval {
            sink.set_part_interval(every);
            events.set_part_interval(every);
        }
        let (path, manifest) = self.start_manifest(t);
        manifest
            .write(&path)
            .map_err(|e| RunError::Usage(e.to_string()))?;
        if let Ok(json) = serde_json::to_string(&manifest) {
            sink.attach_manifest(&json);
        }
        self.sink = Some(sink);
        self.events = Some(events);
        self.manifest = Some((path, manifest));
        Ok(())
    }

    /// The run manifest as `perennial run` writes it, with the Python env's options in place
    /// of the command line's.
    fn start_manifest(&self, t: &TraceTarget) -> (std::path::PathBuf, trace::Manifest) {
        let id = &self.identity;
        let options = serde_json::json!({
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
        let manifest = trace::Manifest {
            schema_version: trace::TRACE_SCHEMA_VERSION,
            perennial_version: perennial::VERSION.to_string(),
            run_id: id.run_id.clone(),
            task: id.task.clone(),
            world_file: Some(self.file.record()),
            seed: id.seed,
            agent: id.algorithm_id.clone(),
            agent_options: serde_json::json!({}),
            trace: Some(t.path.clone()),
            options,
            argv: std::env::args().collect(),
            started_at: trace::utc_now(),
            resumed_at: Vec::new(),
            ended_at: None,
            steps_done: 0,
            exit_status: "running".into(),
        };
        (trace::Manifest::path_for(&t.path, &id.run_id), manifest)
    }

    /// Rewrites the manifest with the end time, the steps in the trace and how the run
    /// ended.
    fn end_manifest(&mut self) -> Result<(), RunError> {
        let Some((path, mut manifest)) = self.manifest.take() else {
            return Ok(());
        };
        manifest.ended_at = Some(trace::utc_now());
        manifest.steps_done = self.step;
        manifest.exit_status = match &self.failure {
            Some(e) => format!("failed: {e}"),
            None => "completed".into(),
        };
        manifest
            .write(&path)
            .map_err(|e| RunError::Failed(e.to_string()))
    }

    /// The world file the run was built from.
    pub fn file(&self) -> &WorldFile {
        &self.file
    }

    /// The world's spec.
    pub fn spec(&self) -> &EnvSpec {
        self.world.spec()
    }

    /// The run's identity columns.
    pub fn identity(&self) -> &RunIdentity {
        &self.identity
    }

    /// The regime label in force and its origin.
    pub fn regime(&self) -> (&str, Origin) {
        (self.scheduler.label(), self.scheduler.origin())
    }

    /// Steps taken in the run, episode index and step within the episode.
    pub fn counters(&self) -> (u64, u64, u64) {
        (self.step, self.episode, self.episode_step)
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
            if self.sink.is_some() && self.step > 0 {
                return Err(RunError::Usage(format!(
                    "reset(seed={s}) on a traced env that already took {} steps: a trace holds one run with one seed (here {}); reset without a seed to start the next episode, or make a new env with seed={s} and its own trace",
                    self.step, self.identity.seed
                )));
            }
            self.restart(s)?;
        }
        if self.started {
            self.episode += 1;
        } else {
            self.start()?;
        }
        self.episode_step = 0;
        self.ended = false;
        self.breakdown = None;
        self.notification = None;
        self.obs = self.world.reset(seed::derive(
            self.identity.seed,
            Stream::World,
            self.episode,
        ));
        Ok(&self.obs)
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
        let default_id = format!(
            "{}-{}-seed{}",
            self.identity.task, self.identity.algorithm_id, self.identity.seed
        );
        if self.identity.run_id == default_id {
            self.identity.run_id = format!(
                "{}-{}-seed{seed}",
                self.identity.task, self.identity.algorithm_id
            );
        }
        self.identity.seed = seed;
        self.scheduler = self
            .file
            .scheduler(seed::derive(seed, Stream::Scheduler, 0))
            .map_err(|e| RunError::Failed(e.to_string()))?;
        self.started = false;
        self.step = 0;
        self.episode = 0;
        if self.sink.take().is_some() {
            // No row was written: the file is recreated with the new identity.
            self.events = None;
            if let Some((path, _)) = self.manifest.take() {
                let _ = std::fs::remove_file(path);
            }
            self.open_trace()?;
        }
        Ok(())
    }

    /// Puts the initial regime in force, as the harness does before its first step.
    fn start(&mut self) -> Result<(), RunError> {
        self.apply(0)?;
        self.started = true;
        self.episode = 0;
        Ok(())
    }

    fn apply(&mut self, step: u64) -> Result<(), RunError> {
        apply_over_baseline(&mut self.world, &self.baseline, self.scheduler.regime())
            .map_err(|e| RunError::Failed(format!("step {step}: {e}")))
    }

    /// Under a manual plan, makes `label` the regime from the next step on.
    ///
    /// # Errors
    ///
    /// [`RunError::Usage`] for an unknown label or a plan that is not manual.
    pub fn shift(&mut self, label: &str) -> Result<(), RunError> {
        if !matches!(self.scheduler.plan(), Plan::Manual) {
            return Err(RunError::Usage(format!(
                "shift(\"{label}\"): {} is not a manual plan: its regimes shift on their own schedule; give the world file `[schedule] plan = \"manual\"` to shift by hand",
                self.file.path.display()
            )));
        }
        self.scheduler
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
        if let Err(e) = check_step(
            self.started,
            self.ended,
            &action,
            &self.world.spec().action_space,
        ) {
            return Err(RunError::Usage(match e {
                EnvError::InvalidAction { .. } => format!("step {}: {e}", self.step),
                _ => e.to_string(),
            }));
        }
        let (reward, terminated, truncated) = match self.step_inner(action) {
            Ok(r) => r,
            Err(e) => {
                // Keep every complete row: the error is what the caller needs to see.
                if let Some(sink) = self.sink.as_mut() {
                    let _ = sink.flush();
                }
                if let RunError::Failed(msg) = &e {
                    self.failure = Some(msg.clone());
                }
                return Err(e);
            }
        };
        Ok(StepOut {
            obs: &self.obs,
            reward,
            terminated,
            truncated,
            breakdown: self.breakdown.as_ref(),
        })
    }

    fn step_inner(&mut self, action: usize) -> Result<(f64, bool, bool), RunError> {
        let step = self.step;
        self.notification = None;
        if self.scheduler.next_shift_due(step) {
            let level = self.identity.notify;
            if let Some(shift) = self.scheduler.shift_before(step, level, &self.baseline) {
                self.notification = shift.notification;
                self.apply(step)?;
                if let Some(events) = self.events.as_mut() {
                    let (run_id, from) = (&self.identity.run_id, &shift.from);
                    events
                        .write(EventRow::shift_made(run_id, step, from, &self.scheduler))
                        .map_err(|e| RunError::Failed(format!("step {step}: {e}")))?;
                }
            }
        }
        let t = self
            .world
            .step(&action)
            .map_err(|e| RunError::Usage(format!("step {step}: {e}")))?;
        if !t.reward.is_finite() {
            return Err(RunError::Failed(format!(
                "step {step}: the world returned a non-finite reward ({}); every row before this step is in the trace",
                t.reward
            )));
        }
        let done = t.done();
        if let Some(sink) = self.sink.as_mut() {
            let record = self.trace.as_ref().is_some_and(|t| t.record_transitions);
            if record {
                self.action_json.clear();
                // An action is an integer, written as serde_json writes it in the harness.
                let _ = write!(self.action_json, "{action}");
            }
            let position = (step, self.episode, self.episode_step);
            let (regime, origin) = (self.scheduler.label(), self.scheduler.origin());
            sink.write_row(&RowRecord {
                obs: record.then_some(self.obs.as_slice()),
                action_json: record.then_some(self.action_json.as_str()),
                ..RowRecord::of_step(position, &t, regime, origin, &self.world)
            })
            .map_err(|e| RunError::Failed(format!("step {step}: {e}")))?;
        }
        if let Some(events) = self.events.as_mut() {
            let failed = |e: trace::TraceError| RunError::Failed(format!("step {step}: {e}"));
            self.world.drain_events(&mut self.world_events);
            for e in self.world_events.drain(..) {
                events
                    .write(EventRow::failure(&self.identity.run_id, step, &e))
                    .map_err(failed)?;
            }
            if done {
                let (run_id, episode) = (&self.identity.run_id, self.episode);
                events
                    .write(EventRow::episode_end(
                        run_id,
                        step,
                        episode,
                        t.terminated,
                        t.truncated,
                    ))
                    .map_err(failed)?;
            }
        }
        self.step += 1;
        self.episode_step += 1;
        self.ended = done;
        self.obs = t.observation;
        self.breakdown = t.breakdown;
        if self.step.is_multiple_of(FLUSH_EVERY) {
            self.flush()?;
        }
        Ok((t.reward, t.terminated, t.truncated))
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
        if let Some(events) = self.events.as_mut() {
            events
                .flush()
                .map_err(|e| RunError::Failed(e.to_string()))?;
        }
        match self.sink.as_mut() {
            Some(sink) => sink.flush().map_err(|e| RunError::Failed(e.to_string())),
            None => Ok(()),
        }
    }

    /// Flushes and closes the trace; the run takes no more rows.
    ///
    /// # Errors
    ///
    /// As [`Run::flush`].
    pub fn close(&mut self) -> Result<(), RunError> {
        let flushed = self.flush();
        let closed = match self.events.take() {
            Some(mut events) => events.close().map_err(|e| RunError::Failed(e.to_string())),
            None => Ok(()),
        };
        self.sink = None;
        if let Some(t) = self.trace.take() {
            self.closed_trace = Some(t.path);
        }
        let ended = self.end_manifest();
        flushed.and(closed).and(ended)
    }
}

impl Drop for Run {
    /// An env dropped without `close` (garbage collection) still ends its manifest; the
    /// trace and events writers flush on their own drop.
    fn drop(&mut self) {
        let _ = self.end_manifest();
    }
}
