//! The run core: one run of one world, and everything that happens around a step, once.
//!
//! A [`Session`] owns the world, its regime [`Scheduler`] and notify level, the trace sink
//! and events table, and the step / episode / episode-step counters. [`Session::step`] does
//! what a step entails, in this order: the shift due before it (the regime's conditions
//! applied over the world's baseline, the shift event), the world's step, the check that
//! the reward is finite, the trace row, the world's events and the episode end. Every door
//! into a run goes through it: the [`Harness`](crate::harness::Harness) adds an agent loop,
//! rollout windows and checkpoints around it; the Python env is a session over a
//! `Box<dyn DynEnv>`; the vector envs shift their copies through [`shift_due`].
//!
//! A session never resets on its own: the caller decides when the next episode starts
//! ([`Session::next_episode`]), as only the env ends an episode.
//!
//! # Examples
//!
//! ```
//! use perennial::prelude::*;
//! use perennial::regime::Scheduler;
//! use perennial::session::Session;
//! use perennial::regime::NotifyLevel;
//! use perennial::trace::RunIdentity;
//!
//! let env = CartPole::new(CartPoleParams::default());
//! let identity = RunIdentity {
//!     run_id: "cartpole-manual-seed7".into(),
//!     seed: 7,
//!     algorithm_id: "manual".into(),
//!     task: "cartpole".into(),
//!     notify: NotifyLevel::None,
//! };
//! let mut session = Session::new(env, Scheduler::stationary("default"), identity);
//! session.start().unwrap();
//! let stepped = session.step(&1).unwrap();
//! assert_eq!(stepped.reward, 1.0);
//! assert_eq!(session.counters().step, 1);
//! let saved = session.snapshot().unwrap();
//! let a = session.step(&0).unwrap().reward;
//! session.restore(saved).unwrap();
//! assert_eq!(session.counters().step, 1);
//! assert_eq!(session.step(&0).unwrap().reward, a);
//! ```

mod error;
mod manifest;
mod state;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::env::{Env, Observation, WorldEvent};
use crate::regime::{Conditions, RegimeError, Scheduler, Shift, Shiftable, apply_over_baseline};
use crate::reward::Breakdown;
use crate::seed::{self, Stream};
use crate::trace::{
    EventRow, EventWriter, RowRecord, RunIdentity, TraceColumns, TraceError, TraceFormat, TraceSink,
};

pub(crate) use error::reward_text;
pub use error::{RestoreError, StepError};
pub use manifest::RunEnd;
pub use state::{Counters, SessionState};

/// One run of one world: the world, its scheduler, its trace and its counters.
///
/// See the [module docs](self) for the order of a step.
pub struct Session<E: Env + Shiftable> {
    env: E,
    scheduler: Scheduler,
    identity: RunIdentity,
    record_transitions: bool,
    sink: Option<Box<dyn TraceSink>>,
    events: Option<EventWriter>,
    /// The trace [`Session::open_trace`] opened, for a failed run's manifest.
    trace_at: Option<(PathBuf, TraceFormat)>,
    /// The run manifest beside the trace, from [`Session::begin_manifest`] to
    /// [`Session::end_manifest`].
    manifest: Option<manifest::Kept>,
    counters: Counters,
    /// The world's parameters before any regime: a regime's conditions override these.
    baseline: Conditions,
    /// The observation the next action answers; after an episode end, that episode's last.
    obs: Option<E::Obs>,
    /// The last step ended an episode and no next episode has started.
    ended: bool,
    /// The episodes' world seeds, drawn in order.
    world_seeds: seed::Derived,
    /// The world's events of the step just taken, reused from step to step.
    world_events: Vec<WorldEvent>,
    /// The action's JSON, reused from step to step.
    action_json: Vec<u8>,
    /// In a world with roles: each role's recorded observation and action index, reused
    /// from step to step.
    role_views: Vec<Vec<f32>>,
    role_actions: Vec<usize>,
    /// The last step's reward breakdown.
    breakdown: Option<Breakdown>,
}

/// What one [`Session::step`] did. The next observation is [`Session::observation`], the
/// reward's breakdown [`Session::breakdown`]: kept out of it, so a step's result stays a
/// few words to move.
#[derive(Clone, Debug, PartialEq)]
pub struct Stepped<O> {
    /// The observation the action answered.
    pub acted_on: O,
    /// The step's reward.
    pub reward: f64,
    /// The world reached a terminal state.
    pub terminated: bool,
    /// The env cut the episode off.
    pub truncated: bool,
    /// The shift made before this step, when [`Session::before_step`] had not already made
    /// it. Boxed: most steps have none, and an empty box is one word to move and drop.
    pub shift: Option<Box<Shift>>,
}

impl<O> Stepped<O> {
    /// The step ended an episode.
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// Applies the shift that falls due before step `step`: the scheduler moves, and the new
/// regime's conditions are applied to `world` over `baseline`. Returns the shift (with what
/// an agent told at `level` learns of it), `None` when the regime does not change. Every
/// caller that shifts a world goes through this, so a shift means the same thing
/// everywhere.
///
/// # Errors
///
/// The new regime's conditions cannot be applied; the world is unchanged.
pub fn shift_due(
    scheduler: &mut Scheduler,
    world: &mut impl Shiftable,
    baseline: &Conditions,
    step: u64,
    level: crate::regime::NotifyLevel,
) -> Result<Option<Shift>, RegimeError> {
    if !scheduler.next_shift_due(step) {
        return Ok(None);
    }
    let Some(shift) = scheduler.shift_before(step, level, baseline) else {
        return Ok(None);
    };
    apply_over_baseline(world, baseline, scheduler.regime())?;
    Ok(Some(shift))
}

impl<E: Env + Shiftable> Session<E> {
    /// A session of `env` under `scheduler` with `identity` (its seed is the run seed, its
    /// notify level the run's), no trace, not yet started. The world's parameters now are
    /// the baseline every regime is applied over.
    pub fn new(env: E, scheduler: Scheduler, identity: RunIdentity) -> Self {
        let baseline = env.snapshot();
        Session {
            world_seeds: seed::Derived::new(identity.seed, Stream::World),
            env,
            scheduler,
            identity,
            record_transitions: false,
            sink: None,
            events: None,
            trace_at: None,
            manifest: None,
            counters: Counters::default(),
            baseline,
            obs: None,
            ended: false,
            world_events: Vec::new(),
            action_json: Vec::new(),
            role_views: Vec::new(),
            role_actions: Vec::new(),
            breakdown: None,
        }
    }

    /// Whether trace rows carry the `obs` and `action` columns (off). Set it before the
    /// trace is opened, which takes its columns from it.
    pub fn set_record_transitions(&mut self, on: bool) {
        self.record_transitions = on;
    }

    /// Whether trace rows carry the `obs` and `action` columns.
    pub fn record_transitions(&self) -> bool {
        self.record_transitions
    }

    /// Opens the run's trace at `path` in `format` and its events table beside it: new
    /// files, or with `append_at` the trace cut back to that many bytes after checking it
    /// ends with the given last row, and the events table cut back to `events_at` rows (a
    /// resumed run; see [`crate::trace::append`]). The columns come from the world's spec
    /// and [`Session::record_transitions`], so they cannot disagree with the rows.
    ///
    /// # Errors
    ///
    /// The files cannot be created, or are not the trace and events table a checkpoint
    /// describes; nothing is opened.
    pub fn open_trace(
        &mut self,
        path: &Path,
        format: TraceFormat,
        append_at: Option<(u64, Option<&str>)>,
        events_at: u64,
        part_interval: Option<Duration>,
    ) -> Result<(), TraceError> {
        let columns = TraceColumns::for_env(&self.env, self.record_transitions);
        let events = crate::trace::events_path(path, format);
        if append_at.is_some() {
            // Refuse a foreign events table before the trace is cut.
            EventWriter::check_append(&events, format, events_at)?;
        }
        let mut sink = match append_at {
            None => crate::trace::create(path, format, &self.identity, &columns)?,
            Some((bytes, tail)) => {
                crate::trace::append(path, format, &self.identity, &columns, bytes, tail)?
            }
        };
        let mut events = match append_at {
            None => EventWriter::create(&events, format)?,
            Some(_) => EventWriter::append(&events, format, events_at)?,
        };
        if let Some(every) = part_interval {
            sink.set_part_interval(every);
            events.set_part_interval(every);
        }
        self.sink = Some(sink);
        self.events = Some(events);
        self.trace_at = Some((path.to_path_buf(), format));
        Ok(())
    }

    /// Puts `sink` in place of the trace sink (e.g. a trace reopened for a resumed run).
    pub fn replace_sink(&mut self, sink: Option<Box<dyn TraceSink>>) {
        self.sink = sink;
    }

    /// The trace sink, e.g. to attach the run manifest or sync before a checkpoint.
    pub fn sink_mut(&mut self) -> Option<&mut (dyn TraceSink + 'static)> {
        self.sink.as_deref_mut()
    }

    /// The events table, e.g. to sync it before a checkpoint.
    pub fn events_mut(&mut self) -> Option<&mut EventWriter> {
        self.events.as_mut()
    }

    /// Drops the trace and the events table without closing them (their writers flush on
    /// drop); the session records no more rows.
    pub fn detach_trace(&mut self) {
        self.sink = None;
        self.events = None;
        self.trace_at = None;
    }

    /// Drops the kept manifest without ending it and releases its lock (a run that wrote
    /// no row starts afresh); returns where it was written.
    pub fn forget_manifest(&mut self) -> Option<PathBuf> {
        self.manifest.take().map(|kept| kept.path().to_path_buf())
    }

    /// Writes every buffered row of the trace and the events table.
    ///
    /// # Errors
    ///
    /// A file cannot be written.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        if let Some(events) = self.events.as_mut() {
            events.flush()?;
        }
        match self.sink.as_mut() {
            Some(sink) => sink.flush(),
            None => Ok(()),
        }
    }

    /// Flushes and closes the trace and the events table. The trace is closed first, and
    /// both are closed even when one fails.
    ///
    /// # Errors
    ///
    /// A file cannot be written.
    pub fn close(&mut self) -> Result<(), TraceError> {
        let trace = match self.sink.as_mut() {
            Some(sink) => sink.close(),
            None => Ok(()),
        };
        let events = match self.events.as_mut() {
            Some(events) => events.close(),
            None => Ok(()),
        };
        trace.and(events)
    }

    /// Puts the initial regime in force and builds episode 0 from the run seed. Returns
    /// the first observation.
    ///
    /// # Errors
    ///
    /// The initial regime's conditions cannot be applied.
    pub fn start(&mut self) -> Result<&E::Obs, StepError> {
        self.apply(0)?;
        self.counters.episode = 0;
        self.counters.episode_step = 0;
        self.ended = false;
        let seed = self.world_seeds.get(0);
        Ok(self.obs.insert(self.env.reset(seed)))
    }

    /// Destroys the world and builds the next episode from its world seed
    /// ([`crate::harness::episode_seed`]). Returns the observation it replaces (the ended
    /// episode's last); [`Session::observation`] is the new episode's first.
    pub fn next_episode(&mut self) -> Option<E::Obs> {
        self.counters.episode += 1;
        self.counters.episode_step = 0;
        self.ended = false;
        let seed = self.world_seeds.get(self.counters.episode);
        self.obs.replace(self.env.reset(seed))
    }

    /// Forgets the run so far and starts afresh with run seed `seed` and `scheduler`, as a
    /// new session would: counters at zero, not started. The trace, if any, is the
    /// caller's to replace ([`Session::detach_trace`]).
    pub fn restart(&mut self, seed: u64, scheduler: Scheduler) {
        self.identity.seed = seed;
        self.world_seeds = seed::Derived::new(seed, Stream::World);
        self.scheduler = scheduler;
        self.counters = Counters::default();
        self.obs = None;
        self.ended = false;
    }

    /// Whether a shift may fall due before the next step (the scheduler's
    /// [`Scheduler::next_shift_due`]).
    #[inline]
    pub fn shift_pending(&self) -> bool {
        self.scheduler.next_shift_due(self.counters.step)
    }

    /// Makes the shift due before the next step, when one is: the regime's conditions are
    /// applied and the shift event written. [`Session::step`] does this itself; call it
    /// first when whoever chooses the action must hear of the shift before acting.
    ///
    /// # Errors
    ///
    /// The regime cannot be applied or the event cannot be written.
    pub fn before_step(&mut self) -> Result<Option<Shift>, StepError> {
        let step = self.counters.step;
        let level = self.identity.notify;
        let shift = shift_due(
            &mut self.scheduler,
            &mut self.env,
            &self.baseline,
            step,
            level,
        )
        .map_err(|source| StepError::Regime {
            step,
            source: Box::new(source),
        })?;
        if let (Some(shift), Some(events)) = (&shift, self.events.as_mut()) {
            let (run_id, from) = (&self.identity.run_id, &shift.from);
            events
                .write(EventRow::shift_made(run_id, step, from, &self.scheduler))
                .map_err(|source| StepError::Trace {
                    step,
                    source: Box::new(source),
                })?;
        }
        Ok(shift)
    }

    /// Takes one step with `action`: the shift due, the world's step, the reward check,
    /// the trace row, the world's events and the episode end, in that order. After an
    /// episode end the session takes no step until [`Session::next_episode`].
    ///
    /// # Errors
    ///
    /// [`StepError::NotStarted`] before [`Session::start`], [`StepError::EpisodeEnded`]
    /// after an episode end; [`StepError::Env`] when the world refuses the action (the
    /// world and the observation are unchanged); a regime, a non-finite reward or the trace
    /// otherwise. Every row before the failing step is in the trace.
    #[inline]
    pub fn step(&mut self, action: &E::Action) -> Result<Stepped<E::Obs>, StepError> {
        let step = self.counters.step;
        if self.ended {
            return Err(StepError::EpisodeEnded { step });
        }
        if self.obs.is_none() {
            return Err(StepError::NotStarted { step });
        }
        // Most steps have no shift due: no call to build and return an empty one.
        let shift = if self.shift_pending() {
            self.before_step()?.map(Box::new)
        } else {
            None
        };
        self.step_after_shift(action, shift)
    }

    /// [`Session::step`] for a caller that has just called [`Session::before_step`] (the
    /// harness, which hears of the shift before its agent acts): the same step without
    /// asking the scheduler a second time.
    #[inline]
    pub(crate) fn step_shifted(
        &mut self,
        action: &E::Action,
    ) -> Result<Stepped<E::Obs>, StepError> {
        let step = self.counters.step;
        if self.ended {
            return Err(StepError::EpisodeEnded { step });
        }
        debug_assert!(!self.shift_pending(), "before_step was not called");
        self.step_after_shift(action, None)
    }

    /// The step itself, once the shift due before it is made.
    #[inline(always)]
    fn step_after_shift(
        &mut self,
        action: &E::Action,
        shift: Option<Box<Shift>>,
    ) -> Result<Stepped<E::Obs>, StepError> {
        let step = self.counters.step;
        let Some(obs) = self.obs.take() else {
            return Err(StepError::NotStarted { step });
        };
        let t = match self.env.step(action) {
            Ok(t) => t,
            Err(source) => {
                self.obs = Some(obs);
                return Err(StepError::Env {
                    step,
                    source: Box::new(source),
                });
            }
        };
        if !crate::limits::reward_in_range(t.reward) {
            return Err(StepError::NonFiniteReward {
                step,
                reward: t.reward,
            });
        }
        let done = t.done();
        if let Some(sink) = self.sink.as_mut() {
            let record = self.record_transitions;
            let roles = record && !self.env.role_names().is_empty();
            let action_json = &mut self.action_json;
            if roles {
                let (views, actions) = (&mut self.role_views, &mut self.role_actions);
                self.env
                    .role_transition(obs.as_slice(), action, views, actions);
            } else if record {
                action_json.clear();
                if serde_json::to_writer(&mut *action_json, action).is_err() {
                    action_json.clear();
                    action_json.extend(b"null");
                }
            }
            let c = &self.counters;
            let position = (step, c.episode, c.episode_step);
            let (regime, origin) = (self.scheduler.label(), self.scheduler.origin());
            sink.write_row(&RowRecord {
                obs: record.then(|| obs.as_slice()),
                action_json: record.then(|| std::str::from_utf8(action_json).unwrap_or("null")),
                role_obs: if roles { &self.role_views } else { &[] },
                role_actions: if roles { &self.role_actions } else { &[] },
                ..RowRecord::of_step(position, &t, regime, origin, &self.env)
            })
            .map_err(|source| StepError::Trace {
                step,
                source: Box::new(source),
            })?;
        }
        if let Some(events) = self.events.as_mut() {
            self.env.drain_events(&mut self.world_events);
            let run_id = &self.identity.run_id;
            // Most steps of most worlds have none: no drain to build and drop.
            if !self.world_events.is_empty() {
                for e in self.world_events.drain(..) {
                    events
                        .write(EventRow::failure(run_id, step, &e))
                        .map_err(|source| StepError::Trace {
                            step,
                            source: Box::new(source),
                        })?;
                }
            }
            if done {
                let episode = self.counters.episode;
                events
                    .episode_end(run_id, step, episode, t.terminated, t.truncated)
                    .map_err(|source| StepError::Trace {
                        step,
                        source: Box::new(source),
                    })?;
            }
        }
        self.counters.step += 1;
        self.counters.episode_step += 1;
        self.ended = done;
        self.obs = Some(t.observation);
        self.breakdown = t.breakdown;
        Ok(Stepped {
            acted_on: obs,
            reward: t.reward,
            terminated: t.terminated,
            truncated: t.truncated,
            shift,
        })
    }

    /// The observation the next action answers (after an episode end, that episode's
    /// last). `None` before [`Session::start`].
    pub fn observation(&self) -> Option<&E::Obs> {
        self.obs.as_ref()
    }

    /// Takes the observation out, leaving none: the run has ended and takes no more steps
    /// until [`Session::start`].
    pub fn take_observation(&mut self) -> Option<E::Obs> {
        self.obs.take()
    }

    /// The reward's breakdown of the last step [`Session::step`] took, when a reward
    /// specification produced it.
    pub fn breakdown(&self) -> Option<&Breakdown> {
        self.breakdown.as_ref()
    }

    /// The last step ended an episode and the next has not started.
    pub fn episode_ended(&self) -> bool {
        self.ended
    }

    /// The step, episode and episode-step counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The run's identity columns.
    pub fn identity(&self) -> &RunIdentity {
        &self.identity
    }

    /// The run's identity, to change before the trace is opened (e.g. the run id).
    pub fn identity_mut(&mut self) -> &mut RunIdentity {
        &mut self.identity
    }

    /// The world.
    pub fn env(&self) -> &E {
        &self.env
    }

    /// The world, e.g. to read a parameter. Changing its parameters outside a regime makes
    /// the trace lie about the conditions in force.
    pub fn env_mut(&mut self) -> &mut E {
        &mut self.env
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The scheduler, e.g. to call [`Scheduler::shift_to`] under a manual plan.
    pub fn scheduler_mut(&mut self) -> &mut Scheduler {
        &mut self.scheduler
    }

    /// The world's parameters every regime is applied over.
    pub fn baseline(&self) -> &Conditions {
        &self.baseline
    }

    fn apply(&mut self, step: u64) -> Result<(), StepError> {
        apply_over_baseline(&mut self.env, &self.baseline, self.scheduler.regime()).map_err(
            |source| StepError::Regime {
                step,
                source: Box::new(source),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cartpole::{CartPole, CartPoleParams};
    use crate::regime::{Plan, Regime};

    fn two_gravities() -> Scheduler {
        let regimes = vec![
            Regime::new("earth", &[("gravity", 9.8)]),
            Regime::new("moon", &[("gravity", 1.6)]),
        ];
        let plan = Plan::Cycle {
            labels: vec!["earth".into(), "moon".into()],
            every: 5,
        };
        Scheduler::new(regimes, plan, 1).unwrap()
    }

    fn session() -> Session<CartPole> {
        let env = CartPole::new(CartPoleParams::default());
        let identity = RunIdentity {
            run_id: "cartpole-test-seed3".into(),
            seed: 3,
            algorithm_id: "test".into(),
            task: "cartpole".into(),
            notify: crate::regime::NotifyLevel::None,
        };
        Session::new(env, two_gravities(), identity)
    }

    #[test]
    fn shift_lands_mid_episode_without_ending_it() {
        let mut s = session();
        s.start().unwrap();
        let mut shifts = Vec::new();
        for _ in 0..8 {
            let stepped = s.step(&(s.counters().step as usize % 2)).unwrap();
            if let Some(shift) = &stepped.shift {
                shifts.push((s.counters().step - 1, shift.from.clone()));
            }
            assert!(!stepped.done(), "alternating actions keep the pole up");
        }
        assert_eq!(shifts, vec![(5, "earth".to_string())]);
        assert_eq!(s.env().get("gravity"), Some(1.6));
        assert_eq!(s.counters().episode, 0);
        assert_eq!(s.counters().episode_step, 8);
    }

    #[test]
    fn step_after_episode_end_is_an_error_until_the_next_episode() {
        let mut s = session();
        s.start().unwrap();
        while !s.step(&1).unwrap().done() {}
        let step = s.counters().step;
        assert!(matches!(s.step(&1), Err(StepError::EpisodeEnded { step: at }) if at == step));
        s.next_episode();
        assert_eq!(s.counters().episode, 1);
        assert!(s.step(&1).is_ok());
    }

    #[test]
    fn invalid_action_leaves_the_observation_and_counters() {
        let mut s = session();
        let first = *s.start().unwrap();
        assert!(matches!(s.step(&7), Err(StepError::Env { step: 0, .. })));
        assert_eq!(s.observation(), Some(&first));
        assert_eq!(s.counters(), Counters::default());
    }

    #[test]
    fn restore_replays_the_same_future_bit_for_bit() {
        let mut s = session();
        s.start().unwrap();
        for _ in 0..3 {
            s.step(&1).unwrap();
        }
        let saved = s.snapshot().unwrap();
        let future: Vec<u64> = (0..6)
            .map(|i| s.step(&(i % 2)).unwrap().reward.to_bits())
            .collect();
        let obs_after = s.observation().map(|o| o.map(f32::to_bits));
        s.restore(saved).unwrap();
        let again: Vec<u64> = (0..6)
            .map(|i| s.step(&(i % 2)).unwrap().reward.to_bits())
            .collect();
        assert_eq!(future, again);
        assert_eq!(s.observation().map(|o| o.map(f32::to_bits)), obs_after);
        assert_eq!(
            s.env().get("gravity"),
            Some(1.6),
            "the shift at step 5 replayed"
        );
    }
}
