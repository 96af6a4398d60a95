//! The run loop: scheduler, agent, env and trace, one step at a time.

mod resume;

use std::sync::atomic::{AtomicBool, Ordering};

use super::agent::{Agent, Window};
use super::checkpoint::CheckpointPlan;
use super::config::{HarnessConfig, LabelSummary, RunSummary, StopReason};
use super::error::{CheckpointError, HarnessError};
use crate::env::Env;
use crate::regime::{NotifyLevel, RegimeProbe, Scheduler, Shiftable};
use crate::seed::{self, Stream};
use crate::session::{RunEnd, Session, SessionState};
use crate::trace::{EventRow, EventWriter, RunIdentity, TraceError};

type Progress = Box<dyn FnMut(u64)>;

/// Drives an agent in an env under a regime scheduler, writing one trace row per step.
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
/// use perennial::agents::RandomAgent;
/// use perennial::harness::{Harness, HarnessConfig, StopReason};
///
/// let env = CartPole::new(CartPoleParams::default());
/// let agent = RandomAgent::new(env.spec().action_space.clone(), 7);
/// let config = HarnessConfig { steps: 1_000, auto_reset: true, ..HarnessConfig::default() };
/// let summary = Harness::new(env, agent, 7).config(config).run().unwrap();
/// assert_eq!(summary.steps, 1_000);
/// assert!(summary.episodes_ended > 10);
/// assert_eq!(summary.stop, StopReason::Budget);
/// ```
pub struct Harness<E: Env + Shiftable, A: Agent<E>> {
    /// The run core: the world, its scheduler, its trace and its counters.
    session: Session<E>,
    agent: A,
    config: HarnessConfig,
    /// The events table's length a resumed run's checkpoint recorded.
    events_at: Option<u64>,
    progress: Option<Progress>,
    state: RunState<E::Obs, E::Action>,
    checkpoint: Option<CheckpointPlan>,
    /// The trace [`Harness::trace`] asked for, opened when the run starts.
    pending_trace: Option<(std::path::PathBuf, crate::trace::TraceFormat)>,
    interrupt: Option<&'static AtomicBool>,
    /// Where the label in force is published for a privileged reference agent.
    regime_probe: Option<RegimeProbe>,
    /// How often a flush cuts a Parquet part (see [`Harness::part_interval`]).
    part_interval: Option<std::time::Duration>,
}

/// Steps between two progress callbacks.
const PROGRESS_EVERY: u64 = 4096;

impl<E: Env + Shiftable, A: Agent<E>> Harness<E, A> {
    /// A harness for `env` and `agent` with run seed `seed`, a stationary regime named
    /// `default`, the default config, no trace, and a run id `{task}-{algorithm}-seed{seed}`.
    pub fn new(env: E, agent: A, seed: u64) -> Self {
        let identity = RunIdentity {
            run_id: format!("{}-{}-seed{seed}", env.spec().id, agent.algorithm_id()),
            seed,
            algorithm_id: agent.algorithm_id().to_string(),
            task: env.spec().id.clone(),
            notify: NotifyLevel::None,
        };
        Harness {
            session: Session::new(env, Scheduler::stationary("default"), identity),
            agent,
            config: HarnessConfig::default(),
            events_at: None,
            progress: None,
            state: RunState::default(),
            checkpoint: None,
            pending_trace: None,
            interrupt: None,
            regime_probe: None,
            part_interval: None,
        }
    }

    /// Follows an edited world file from the step the run stands at: its schedule
    /// (`scheduler`, replayed to this step) and its parameters (`baseline`) replace the
    /// checkpoint's; see [`Session::follow_world`].
    ///
    /// # Errors
    ///
    /// The regime in force does not fit the world.
    pub fn follow_world(
        mut self,
        scheduler: Scheduler,
        baseline: crate::regime::Conditions,
    ) -> Result<Self, HarnessError> {
        let scheduler = scheduler.replayed_to(self.steps_done(), self.session.scheduler());
        self.session
            .follow_world(scheduler, baseline)
            .map_err(CheckpointError::WorldChange)?;
        Ok(self)
    }

    /// Writes a checkpoint every `plan.every` steps (see [`Checkpoint`](crate::harness::Checkpoint)).
    pub fn checkpoint(mut self, plan: CheckpointPlan) -> Self {
        self.checkpoint = Some(plan);
        self
    }

    /// Stops the run cleanly once `flag` is set (a signal handler sets it): the step under
    /// way finishes and is recorded, a checkpoint is written when checkpointing is on, and
    /// the run ends with [`StopReason::Interrupted`]. The flag is read once per step, a
    /// relaxed atomic load. A `static` suits a signal handler.
    pub fn stop_when(mut self, flag: &'static AtomicBool) -> Self {
        self.interrupt = Some(flag);
        self
    }

    /// Steps done so far.
    pub fn steps_done(&self) -> u64 {
        self.session.counters().step
    }

    /// The agent's rollout window since its last update.
    pub(super) fn run_window(&self) -> &Window<E::Obs, E::Action> {
        &self.state.window
    }

    /// Whether the run has stopped.
    pub(super) fn has_stopped(&self) -> bool {
        self.state.stopped
    }

    /// The harness config.
    pub(super) fn config_ref(&self) -> &HarnessConfig {
        &self.config
    }

    /// The events table, once the trace is open.
    pub(super) fn events_mut(&mut self) -> Option<&mut EventWriter> {
        self.session.events_mut()
    }

    /// Sets the regime scheduler.
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        *self.session.scheduler_mut() = scheduler;
        self.publish_label();
        self
    }

    /// Publishes the label in force on `probe`: now, at the run's start and after every
    /// shift. This is how a privileged reference agent (the enterprise world's `oracle`)
    /// learns the regime without it entering the observation; give it a clone of the same
    /// probe. A learner is never given one.
    pub fn publish_regime(mut self, probe: RegimeProbe) -> Self {
        self.regime_probe = Some(probe);
        self.publish_label();
        self
    }

    fn publish_label(&self) {
        if let Some(probe) = &self.regime_probe {
            probe.publish(self.session.scheduler().label());
        }
    }

    /// Sets the config.
    pub fn config(mut self, config: HarnessConfig) -> Self {
        self.session
            .set_record_transitions(config.record_transitions);
        self.config = config;
        self
    }

    /// Sets how much the agent is told about regime shifts (default
    /// [`NotifyLevel::None`]): at any other level [`Agent::notify`] is called before `act`
    /// on the first step of each new regime (never for the initial regime). The level is
    /// part of the run's identity: the trace writes it in a `notify` column, and a
    /// checkpoint keeps it.
    pub fn notify(mut self, level: NotifyLevel) -> Self {
        self.session.identity_mut().notify = level;
        self
    }

    /// Sets the run id (default `{task}-{algorithm}-seed{seed}`, so the same run twice
    /// writes the same bytes).
    pub fn run_id(mut self, run_id: impl Into<String>) -> Self {
        self.session.identity_mut().run_id = run_id.into();
        self
    }

    /// Writes the run's trace to `path` in `format` (default: no trace). The file is
    /// created when the run starts, with the columns of the env's spec and the config then
    /// in force (see [`Harness::open_trace`]); an error creating it is the run's error.
    pub fn trace(
        mut self,
        path: impl Into<std::path::PathBuf>,
        format: crate::trace::TraceFormat,
    ) -> Self {
        self.pending_trace = Some((path.into(), format));
        self
    }

    /// How often a window's flush cuts a part of a Parquet trace and its events table (1 s
    /// by default; zero cuts one at every window). Other formats ignore it.
    pub fn part_interval(mut self, every: std::time::Duration) -> Self {
        self.part_interval = Some(every);
        self
    }

    /// Opens a trace file for this run: a new one, or with `append_at` the file cut back to
    /// that many bytes (a resumed run; see [`crate::trace::append`]), after checking that
    /// the file still ends with the checkpoint's last row, when one is given. The run's
    /// events table ([`crate::trace::events_path`]) is opened with it, in the same format,
    /// and a resumed run's is cut back to the length its checkpoint recorded. The identity, the
    /// component and payout columns and whether transitions are recorded come from the
    /// harness, its env's spec and its config, so they cannot disagree with the rows.
    ///
    /// # Errors
    ///
    /// The file cannot be created or is not the trace the checkpoint describes.
    pub fn open_trace(
        &mut self,
        path: &std::path::Path,
        format: crate::trace::TraceFormat,
        append_at: Option<(u64, Option<&str>)>,
    ) -> Result<(), TraceError> {
        self.session.open_trace(
            path,
            format,
            append_at,
            self.events_at.unwrap_or(0),
            self.part_interval,
        )
    }

    /// Calls `f(steps_done)` every few thousand steps and at the end, e.g. for a progress bar.
    pub fn on_progress(mut self, f: impl FnMut(u64) + 'static) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// The run's identity columns.
    pub fn identity(&self) -> &RunIdentity {
        self.session.identity()
    }

    /// The env (e.g. to read its spec or state after a run).
    pub fn env(&self) -> &E {
        self.session.env()
    }

    /// The agent.
    pub fn agent(&self) -> &A {
        &self.agent
    }

    /// The scheduler, e.g. to call [`Scheduler::shift_to`] between runs of a manual plan.
    pub fn scheduler_mut(&mut self) -> &mut Scheduler {
        self.session.scheduler_mut()
    }

    /// Runs until the step budget is spent or, with `auto_reset` off, the first episode
    /// ends. Flushes the trace at every window boundary and at the end.
    ///
    /// # Errors
    ///
    /// The env refused a step, returned a non-finite reward, a regime could not be applied,
    /// or the trace could not be written. Every complete row before the failure is flushed.
    pub fn run(mut self) -> Result<RunSummary, HarnessError> {
        let advanced = self.advance(u64::MAX).map(|_| ());
        let closed = self.close_run();
        self.end(advanced.and(closed))
    }

    /// Runs at most `steps` more steps (within the budget) and returns whether the run can
    /// go on. Between two calls the experimenter may, e.g., call
    /// [`Scheduler::shift_to`] through [`Harness::scheduler_mut`].
    ///
    /// # Errors
    ///
    /// As [`Harness::run`]; the run cannot go on after an error.
    pub fn advance(&mut self, steps: u64) -> Result<bool, HarnessError> {
        let result = self.advance_inner(steps);
        if result.is_err() {
            self.state.stopped = true;
            // Keep every complete row: the error is what the caller needs to see.
            let _ = self.flush_trace();
        }
        result
    }

    /// Ends the run: hands the agent its last, partial window, flushes the trace and
    /// returns the summary.
    ///
    /// # Errors
    ///
    /// The trace could not be flushed.
    pub fn finish(mut self) -> Result<RunSummary, HarnessError> {
        let closed = self.close_run();
        self.end(closed)
    }

    /// Hands the agent its last, partial window and closes the trace.
    fn close_run(&mut self) -> Result<(), HarnessError> {
        if !self.state.window.is_empty() {
            self.agent.update(&self.state.window);
            let w = &self.state.window;
            let step = w.start_step + w.len() as u64 - 1;
            self.record_plasticity(step)
                .map_err(|source| HarnessError::TraceAt { step, source })?;
        }
        self.close_label();
        if let Some(p) = self.progress.as_mut() {
            p(self.state.summary.steps);
        }
        self.session.close()?;
        Ok(())
    }

    /// Ends the run manifest (when the run has one) with how the run ended, and returns
    /// the summary or the run's error.
    fn end(mut self, result: Result<(), HarnessError>) -> Result<RunSummary, HarnessError> {
        let end = match &result {
            Err(e) => RunEnd::Failed(e.to_string()),
            Ok(()) if self.state.summary.stop == StopReason::Interrupted => RunEnd::Interrupted,
            Ok(()) => RunEnd::Completed,
        };
        let ended = self.session.end_manifest(&end, self.state.summary.steps);
        result?;
        ended?;
        Ok(self.state.summary)
    }

    /// The summary so far.
    pub fn summary(&self) -> &RunSummary {
        &self.state.summary
    }

    fn flush_trace(&mut self) -> Result<(), TraceError> {
        self.session.flush()
    }

    /// Writes the agent's diagnostics of the update just made (if it has any) to the events
    /// table, as an event of the window's last step `step`.
    fn record_plasticity(&mut self, step: u64) -> Result<(), TraceError> {
        let Some(p) = self.agent.plasticity() else {
            return Ok(());
        };
        let run_id = self.session.identity().run_id.clone();
        match self.session.events_mut() {
            Some(events) => events.write(EventRow::plasticity(&run_id, step, &p)),
            None => Ok(()),
        }
    }

    fn close_label(&mut self) {
        let totals = std::mem::take(&mut self.state.label_totals);
        let entry = self
            .state
            .summary
            .labels
            .entry(self.session.scheduler().label().to_string())
            .or_default();
        entry.steps += totals.steps;
        entry.reward += totals.reward;
    }

    fn start(&mut self) -> Result<(), HarnessError> {
        if let Some((path, format)) = self.pending_trace.take() {
            self.open_trace(&path, format, None)?;
        }
        // Bounded: a huge window grows as it fills instead of failing to allocate at once.
        self.state
            .window
            .reserve(self.config.window_steps.clamp(1, 1 << 16));
        self.session.start()?;
        self.publish_label();
        self.state
            .summary
            .labels
            .entry(self.session.scheduler().label().to_string())
            .or_default();
        if self.checkpoint.is_some() {
            // At once, not at the first checkpoint hours into the run.
            let env = self.session.env();
            env.save_state()
                .map_err(|source| CheckpointError::WorldUnsaveable {
                    world: env.spec().id.to_string(),
                    source,
                })?;
            self.agent
                .save_state()
                .map_err(|message| CheckpointError::AgentUnsaveable {
                    agent: self.agent.algorithm_id().to_string(),
                    message,
                })?;
        }
        Ok(())
    }

    fn advance_inner(&mut self, steps: u64) -> Result<bool, HarnessError> {
        if self.state.stopped {
            return Ok(false);
        }
        if self.session.observation().is_none() {
            self.start()?;
        }
        let end = self
            .steps_done()
            .saturating_add(steps)
            .min(self.config.steps);
        while self.steps_done() < end {
            if !self.before_step()? {
                return Ok(false);
            }
            let Some(obs) = self.session.observation() else {
                return Ok(false);
            };
            let action = self.agent.act(obs);
            if !self.take_step(action)?.go_on {
                return Ok(false);
            }
        }
        Ok(self.steps_done() < self.config.steps)
    }

    /// Takes one step with an action the caller chose instead of the agent: the same path
    /// [`Harness::run`] takes (scheduler before the step, env step, counters, trace row,
    /// the agent's `update` at window ends, auto-reset with the episode's seed,
    /// checkpoints), so an externally driven run writes the same bytes as `perennial run`
    /// given the same actions. The agent's `act` is not called; its `update` still is, so
    /// pass an agent that learns nothing (e.g. [`crate::agents::RandomAgent`]) when the
    /// caller does the learning. At a notify level other than `none` the agent's `notify`
    /// is called at shifts as in [`Harness::run`]. Read the observation to act on with
    /// [`Harness::observation`].
    ///
    /// # Errors
    ///
    /// As [`Harness::run`]; [`HarnessError::Stopped`] once the budget is spent or the run
    /// stopped (an episode ended with `auto_reset` off, or an earlier error).
    pub fn step_with(&mut self, action: E::Action) -> Result<StepOutcome<E::Obs>, HarnessError> {
        if self.state.stopped || self.steps_done() >= self.config.steps {
            return Err(HarnessError::Stopped {
                step: self.steps_done(),
            });
        }
        let result = self.step_with_inner(action);
        if result.is_err() {
            self.state.stopped = true;
            let _ = self.flush_trace();
        }
        result
    }

    fn step_with_inner(&mut self, action: E::Action) -> Result<StepOutcome<E::Obs>, HarnessError> {
        if self.session.observation().is_none() {
            self.start()?;
        }
        if !self.before_step()? {
            return Err(HarnessError::Stopped {
                step: self.steps_done(),
            });
        }
        self.take_step(action)
    }

    /// The observation the next action answers: the env's last, or after an episode end the
    /// first of the next episode. `None` before the first step of a new run.
    pub fn observation(&self) -> Option<&E::Obs> {
        self.session.observation()
    }

    /// Polls the stop flag, then lets the scheduler shift the regime before the step at the
    /// current index. `false`: the flag is raised; the run is checkpointed (when it has a
    /// checkpoint plan) and stopped as interrupted, and no step is taken.
    fn before_step(&mut self) -> Result<bool, HarnessError> {
        if let Some(flag) = &self.interrupt
            && flag.load(Ordering::Relaxed)
        {
            // Checkpointed before it is marked stopped, so the resumed run goes on.
            if self.checkpoint.is_some() {
                self.write_checkpoint()?;
            }
            self.state.summary.stop = StopReason::Interrupted;
            self.state.stopped = true;
            return Ok(false);
        }
        if self.session.shift_pending() {
            self.close_label();
            if let Some(shift) = self.session.before_step()? {
                self.publish_label();
                self.state.summary.shifts += 1;
                if let Some(n) = shift.notification {
                    self.agent.notify(&n);
                }
            }
            self.state
                .summary
                .labels
                .entry(self.session.scheduler().label().to_string())
                .or_default();
        }
        Ok(true)
    }

    /// Steps the session with `action` and does what the agent loop adds around it: the
    /// summary, the window (and the agent's `update` at its end), progress, auto-reset and
    /// checkpoints.
    fn take_step(&mut self, action: E::Action) -> Result<StepOutcome<E::Obs>, HarnessError> {
        let step = self.steps_done();
        // `before_step` made the shift due, if any.
        let t = self.session.step_shifted(&action)?;
        let done = t.done();
        let st = &mut self.state;
        st.summary.steps += 1;
        st.summary.total_reward += t.reward;
        st.label_totals.steps += 1;
        st.label_totals.reward += t.reward;

        let w = &mut st.window;
        w.obs.push(t.acted_on);
        w.actions.push(action);
        w.rewards.push(t.reward);
        w.terminated.push(t.terminated);
        w.truncated.push(t.truncated);
        if let Some(next) = self.session.observation() {
            w.next_obs.push(next.clone());
        }
        if w.len() >= self.config.window_steps.max(1) {
            self.agent.update(&self.state.window);
            self.record_plasticity(step)
                .map_err(|source| HarnessError::TraceAt { step, source })?;
            self.state.window.clear(step + 1);
            self.flush_trace()
                .map_err(|source| HarnessError::TraceAt { step, source })?;
        }
        if (step + 1).is_multiple_of(PROGRESS_EVERY)
            && let Some(p) = self.progress.as_mut()
        {
            p(step + 1);
        }

        let mut stepped = StepOutcome {
            reward: t.reward,
            terminated: t.terminated,
            truncated: t.truncated,
            final_observation: None,
            go_on: true,
        };
        if done {
            self.state.summary.episodes_ended += 1;
            if !self.config.auto_reset {
                stepped.final_observation = self.session.take_observation();
                self.state.summary.stop = StopReason::EpisodeEnded;
                self.state.stopped = true;
                stepped.go_on = false;
                return Ok(stepped);
            }
            stepped.final_observation = self.session.next_episode();
        }
        if let Some(plan) = &self.checkpoint
            && self.steps_done().is_multiple_of(plan.every.max(1))
        {
            self.write_checkpoint()?;
        }
        stepped.go_on = self.steps_done() < self.config.steps;
        Ok(stepped)
    }
}

/// The world seed of episode `episode` of a run with seed `run_seed`: the harness resets
/// the env with it at the run's start (episode 0) and after each episode end with
/// `auto_reset` on. It is [`seed::derive`]`(run_seed, Stream::World, episode)`, so an
/// externally driven run that resets with `episode_seed(seed, k)` builds the same worlds as
/// `perennial run --seed seed --auto-reset`.
pub fn episode_seed(run_seed: u64, episode: u64) -> u64 {
    seed::derive(run_seed, Stream::World, episode)
}

/// What one [`Harness::step_with`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct StepOutcome<O> {
    /// The step's reward.
    pub reward: f64,
    /// The world reached a terminal state.
    pub terminated: bool,
    /// The env cut the episode off.
    pub truncated: bool,
    /// When the episode ended: its last observation (the harness has already reset the env
    /// if `auto_reset` is on; [`Harness::observation`] is the new episode's first).
    pub final_observation: Option<O>,
    /// The run can take another step (budget left, not stopped).
    pub go_on: bool,
}

/// A saved run's parts, put in place by [`Harness::continued`].
pub(super) struct Continued<O, A> {
    /// The session: world, scheduler, identity, counters, observation.
    pub(super) session: SessionState,
    pub(super) config: HarnessConfig,
    pub(super) window: Window<O, A>,
    pub(super) summary: RunSummary,
    pub(super) label_totals: LabelSummary,
    pub(super) stopped: bool,
    /// The events table's length recorded with the saved run.
    pub(super) events_at: Option<u64>,
}

/// Where a run stands between two calls to [`Harness::advance`].
struct RunState<O, A> {
    window: Window<O, A>,
    summary: RunSummary,
    label_totals: LabelSummary,
    stopped: bool,
}

impl<O, A> Default for RunState<O, A> {
    fn default() -> Self {
        RunState {
            window: Window::default(),
            summary: RunSummary::at(0),
            label_totals: LabelSummary::default(),
            stopped: false,
        }
    }
}

/// A harness whose env and agent types are erased: what a registry builds from a world file
/// and a caller (the CLI, sweeps) drives without knowing the world's Rust type.
pub trait DynHarness {
    /// The run's identity columns.
    fn identity(&self) -> &RunIdentity;
    /// Steps done so far.
    fn steps_done(&self) -> u64;
    /// See [`Harness::open_trace`].
    ///
    /// # Errors
    ///
    /// As [`Harness::open_trace`].
    fn open_trace(
        &mut self,
        path: &std::path::Path,
        format: crate::trace::TraceFormat,
        append_at: Option<(u64, Option<&str>)>,
    ) -> Result<(), TraceError>;
    /// See [`Harness::stop_when`].
    fn set_stop_flag(&mut self, flag: &'static AtomicBool);
    /// See [`Harness::run_id`]; call it before the trace is opened.
    fn set_run_id(&mut self, run_id: String);
    /// See [`Harness::part_interval`]; call it before the trace is opened.
    fn set_part_interval(&mut self, every: std::time::Duration);
    /// See [`Session::begin_manifest`]: the run writes `manifest` at `path` now, keeps it
    /// under `lock` and rewrites it when the run ends.
    ///
    /// # Errors
    ///
    /// The manifest cannot be written.
    fn begin_manifest(
        &mut self,
        path: &std::path::Path,
        manifest: crate::trace::Manifest,
        lock: crate::output::OutputLock,
    ) -> Result<(), TraceError>;
    /// See [`Harness::checkpoint`].
    fn set_checkpoint(&mut self, plan: CheckpointPlan);
    /// See [`Harness::on_progress`].
    fn set_progress(&mut self, f: Box<dyn FnMut(u64)>);
    /// See [`Harness::run`].
    ///
    /// # Errors
    ///
    /// As [`Harness::run`].
    fn run_boxed(self: Box<Self>) -> Result<RunSummary, HarnessError>;
}

impl<E: Env + Shiftable, A: Agent<E>> DynHarness for Harness<E, A> {
    fn identity(&self) -> &RunIdentity {
        self.session.identity()
    }

    fn steps_done(&self) -> u64 {
        Harness::steps_done(self)
    }

    fn open_trace(
        &mut self,
        path: &std::path::Path,
        format: crate::trace::TraceFormat,
        append_at: Option<(u64, Option<&str>)>,
    ) -> Result<(), TraceError> {
        Harness::open_trace(self, path, format, append_at)
    }

    fn set_stop_flag(&mut self, flag: &'static AtomicBool) {
        self.interrupt = Some(flag);
    }

    fn set_run_id(&mut self, run_id: String) {
        self.session.identity_mut().run_id = run_id;
    }

    fn set_part_interval(&mut self, every: std::time::Duration) {
        self.part_interval = Some(every);
    }

    fn begin_manifest(
        &mut self,
        path: &std::path::Path,
        manifest: crate::trace::Manifest,
        lock: crate::output::OutputLock,
    ) -> Result<(), TraceError> {
        self.session.begin_manifest(path, manifest, lock)
    }

    fn set_checkpoint(&mut self, plan: CheckpointPlan) {
        self.checkpoint = Some(plan);
    }

    fn set_progress(&mut self, f: Box<dyn FnMut(u64)>) {
        self.progress = Some(f);
    }

    fn run_boxed(self: Box<Self>) -> Result<RunSummary, HarnessError> {
        (*self).run()
    }
}
