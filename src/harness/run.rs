//! The run loop: scheduler, agent, env and trace, one step at a time.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::agent::{Agent, Window};
use crate::env::{Env, EnvError, Observation};
use crate::regime::{Conditions, RegimeError, Scheduler, Shiftable, apply_conditions};
use crate::seed::{self, Stream};
use crate::trace::{NoTrace, RowRecord, RunIdentity, TraceError, TraceSink};

/// How the harness drives a run. Build with `Default` and struct update syntax.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HarnessConfig {
    /// Steps per rollout window: the agent's `update` is called every `window_steps` steps
    /// (256). Windows end nothing and are not recorded.
    pub window_steps: usize,
    /// Reset the env when it ends an episode and go on (off). With it off, the run stops at
    /// the first episode end. The harness never resets for any other reason.
    pub auto_reset: bool,
    /// Step budget: the run stops after this many steps (100,000).
    pub steps: u64,
    /// Write the `obs` and `action` columns (off).
    pub record_transitions: bool,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            window_steps: 256,
            auto_reset: false,
            steps: 100_000,
            record_transitions: false,
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The step budget was spent.
    Budget,
    /// The env ended an episode and `auto_reset` is off.
    EpisodeEnded,
}

/// Reward earned under one label.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LabelSummary {
    /// Steps under the label.
    pub steps: u64,
    /// Sum of rewards under the label.
    pub reward: f64,
}

/// What a finished run reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Steps taken (rows written).
    pub steps: u64,
    /// Episodes the env ended during the run.
    pub episodes_ended: u64,
    /// Sum of all rewards.
    pub total_reward: f64,
    /// Steps and reward per label, by label name.
    pub labels: BTreeMap<String, LabelSummary>,
    /// Regime shifts during the run.
    pub shifts: u64,
    /// Why the run stopped.
    pub stop: StopReason,
}

/// A run that could not go on. Every row before the failing step is in the trace.
#[derive(Debug)]
pub enum HarnessError {
    /// The env refused a step (e.g. the agent chose an invalid action).
    Env {
        /// Global step index.
        step: u64,
        /// The env's error.
        source: EnvError,
    },
    /// The env returned a NaN or infinite reward.
    NonFiniteReward {
        /// Global step index.
        step: u64,
        /// The reward.
        reward: f64,
    },
    /// A regime's conditions could not be applied.
    Regime {
        /// Global step index.
        step: u64,
        /// The cause.
        source: RegimeError,
    },
    /// The trace could not be written.
    Trace(TraceError),
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarnessError::Env { step, source } => {
                write!(
                    f,
                    "step {step}: {source}; every row before this step is in the trace"
                )
            }
            HarnessError::NonFiniteReward { step, reward } => write!(
                f,
                "step {step}: the world returned a non-finite reward ({reward}); the run stopped and every row before this step is in the trace"
            ),
            HarnessError::Regime { step, source } => write!(f, "step {step}: {source}"),
            HarnessError::Trace(e) => write!(f, "writing the trace: {e}"),
        }
    }
}

impl std::error::Error for HarnessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HarnessError::Env { source, .. } => Some(source),
            HarnessError::Regime { source, .. } => Some(source),
            HarnessError::Trace(e) => Some(e),
            HarnessError::NonFiniteReward { .. } => None,
        }
    }
}

impl From<TraceError> for HarnessError {
    fn from(e: TraceError) -> Self {
        HarnessError::Trace(e)
    }
}

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
    env: E,
    agent: A,
    scheduler: Scheduler,
    config: HarnessConfig,
    identity: RunIdentity,
    sink: Box<dyn TraceSink>,
    progress: Option<Progress>,
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
        };
        Harness {
            env,
            agent,
            scheduler: Scheduler::stationary("default"),
            config: HarnessConfig::default(),
            identity,
            sink: Box::new(NoTrace),
            progress: None,
        }
    }

    /// Sets the regime scheduler.
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        self.scheduler = scheduler;
        self
    }

    /// Sets the config.
    pub fn config(mut self, config: HarnessConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the run id (default `{task}-{algorithm}-seed{seed}`, so the same run twice
    /// writes the same bytes).
    pub fn run_id(mut self, run_id: impl Into<String>) -> Self {
        self.identity.run_id = run_id.into();
        self
    }

    /// Sets where rows go (default: nowhere).
    pub fn trace(mut self, sink: Box<dyn TraceSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Calls `f(steps_done)` every few thousand steps and at the end, e.g. for a progress bar.
    pub fn on_progress(mut self, f: impl FnMut(u64) + 'static) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// The run's identity columns.
    pub fn identity(&self) -> &RunIdentity {
        &self.identity
    }

    /// The env (e.g. to read its spec or state after a run).
    pub fn env(&self) -> &E {
        &self.env
    }

    /// The agent.
    pub fn agent(&self) -> &A {
        &self.agent
    }

    /// The scheduler, e.g. to call [`Scheduler::shift_to`] between runs of a manual plan.
    pub fn scheduler_mut(&mut self) -> &mut Scheduler {
        &mut self.scheduler
    }

    /// Runs until the step budget is spent or, with `auto_reset` off, the first episode
    /// ends. Flushes the trace at every window boundary and at the end.
    ///
    /// # Errors
    ///
    /// The env refused a step, returned a non-finite reward, a regime could not be applied,
    /// or the trace could not be written. Every complete row before the failure is flushed.
    pub fn run(mut self) -> Result<RunSummary, HarnessError> {
        let result = self.run_loop();
        let flushed = self.sink.flush();
        let summary = result?;
        flushed?;
        Ok(summary)
    }

    fn run_loop(&mut self) -> Result<RunSummary, HarnessError> {
        let seed = self.identity.seed;
        let baseline: Conditions = self.env.snapshot();
        let apply = |env: &mut E, conditions: &Conditions, step: u64| -> Result<(), HarnessError> {
            let mut merged = baseline.clone();
            merged.extend(conditions.iter().map(|(k, v)| (k.clone(), *v)));
            apply_conditions(env, &merged).map_err(|source| HarnessError::Regime { step, source })
        };
        apply(&mut self.env, &self.scheduler.regime().conditions, 0)?;
        let mut obs = self.env.reset(seed::derive(seed, Stream::World, 0));

        let window_steps = self.config.window_steps.max(1);
        let mut window: Window<E::Obs, E::Action> = Window::default();
        let mut summary = RunSummary {
            steps: 0,
            episodes_ended: 0,
            total_reward: 0.0,
            labels: BTreeMap::new(),
            shifts: 0,
            stop: StopReason::Budget,
        };
        let mut label_index = self.label_slot(&mut summary);
        let mut label_totals = LabelSummary::default();
        let mut episode = 0u64;
        let mut episode_step = 0u64;
        let no_payouts: Vec<f64> = Vec::new();
        let mut action_json = String::new();

        for step in 0..self.config.steps {
            if let Some(regime) = self.scheduler.before_step(step) {
                let conditions = regime.conditions.clone();
                apply(&mut self.env, &conditions, step)?;
                summary.shifts += 1;
                self.merge_label(&mut summary, &label_index, &mut label_totals);
                label_index = self.label_slot(&mut summary);
            }
            let action = self.agent.act(&obs);
            let t = self
                .env
                .step(&action)
                .map_err(|source| HarnessError::Env { step, source })?;
            if !t.reward.is_finite() {
                return Err(HarnessError::NonFiniteReward {
                    step,
                    reward: t.reward,
                });
            }
            let done = t.done();
            let ceiling = self.env.ceiling().map(|c| c.applicable(done));
            if self.config.record_transitions {
                action_json.clear();
                action_json
                    .push_str(&serde_json::to_string(&action).unwrap_or_else(|_| "null".into()));
            }
            let (components, payouts) = match &t.breakdown {
                Some(b) => (
                    &b.components[..],
                    if done {
                        &b.payouts[..]
                    } else {
                        &no_payouts[..]
                    },
                ),
                None => (&no_payouts[..], &no_payouts[..]),
            };
            self.sink.write_row(&RowRecord {
                step,
                episode,
                episode_step,
                reward: t.reward,
                components,
                payouts,
                regime: self.scheduler.label(),
                origin: self.scheduler.origin(),
                terminated: t.terminated,
                truncated: t.truncated,
                ceiling,
                obs: self.config.record_transitions.then(|| obs.as_slice()),
                action_json: self
                    .config
                    .record_transitions
                    .then_some(action_json.as_str()),
            })?;
            summary.steps += 1;
            summary.total_reward += t.reward;
            label_totals.steps += 1;
            label_totals.reward += t.reward;
            episode_step += 1;

            window.obs.push(obs);
            window.actions.push(action);
            window.rewards.push(t.reward);
            window.terminated.push(t.terminated);
            window.truncated.push(t.truncated);
            window.next_obs.push(t.observation.clone());
            if window.len() >= window_steps {
                self.agent.update(&window);
                window.clear(step + 1);
                self.sink.flush()?;
            }
            if (step + 1) % PROGRESS_EVERY == 0
                && let Some(p) = self.progress.as_mut()
            {
                p(step + 1);
            }

            if done {
                summary.episodes_ended += 1;
                if !self.config.auto_reset {
                    summary.stop = StopReason::EpisodeEnded;
                    break;
                }
                episode += 1;
                episode_step = 0;
                obs = self.env.reset(seed::derive(seed, Stream::World, episode));
            } else {
                obs = t.observation;
            }
        }
        if !window.is_empty() {
            self.agent.update(&window);
        }
        self.merge_label(&mut summary, &label_index, &mut label_totals);
        if let Some(p) = self.progress.as_mut() {
            p(summary.steps);
        }
        Ok(summary)
    }

    fn label_slot(&self, summary: &mut RunSummary) -> String {
        let label = self.scheduler.label().to_string();
        summary.labels.entry(label.clone()).or_default();
        label
    }

    fn merge_label(&self, summary: &mut RunSummary, label: &str, totals: &mut LabelSummary) {
        if let Some(entry) = summary.labels.get_mut(label) {
            entry.steps += totals.steps;
            entry.reward += totals.reward;
        }
        *totals = LabelSummary::default();
    }
}
