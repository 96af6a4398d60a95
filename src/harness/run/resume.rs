//! Saving and resuming a run: the checkpoint a run writes, and a saved run put back in
//! place.

use super::{Continued, Harness, RunState};
use crate::env::{Env, SavedState};
use crate::harness::agent::{Agent, Window};
use crate::harness::checkpoint::{CHECKPOINT_VERSION, Checkpoint};
use crate::harness::error::{CheckpointError, HarnessError};
use crate::regime::Shiftable;
use crate::session::{Counters, SessionState};
use crate::trace::{EventWriter, TraceSink};

impl<E: Env + Shiftable, A: Agent<E>> Harness<E, A> {
    /// A harness that continues the run saved in `checkpoint`, with a freshly built `env`
    /// and `agent` of the same kinds (their saved states are loaded into them) and `sink`
    /// reopened at the checkpoint's trace length (see [`crate::trace::append`]).
    ///
    /// # Errors
    ///
    /// [`HarnessError::Checkpoint`] when a saved part does not fit the env or agent.
    pub fn resume(
        env: E,
        agent: A,
        checkpoint: Checkpoint,
        sink: Option<Box<dyn TraceSink>>,
    ) -> Result<Self, HarnessError> {
        Self::resume_parts(env, agent, checkpoint, sink, true)
    }

    /// [`Harness::resume`]; without `load_agent` the agent is kept as built and the
    /// checkpoint's agent state is not read (a fork with another agent).
    pub(in crate::harness) fn resume_parts(
        env: E,
        agent: A,
        checkpoint: Checkpoint,
        sink: Option<Box<dyn TraceSink>>,
        load_agent: bool,
    ) -> Result<Self, HarnessError> {
        checkpoint.validate()?;
        let window: Window<E::Obs, E::Action> =
            serde_json::from_value(checkpoint.window).map_err(CheckpointError::Window)?;
        let continued = Continued {
            session: SessionState {
                identity: checkpoint.identity,
                counters: Counters {
                    step: checkpoint.step,
                    episode: checkpoint.episode,
                    episode_step: checkpoint.episode_step,
                },
                scheduler: checkpoint.scheduler,
                baseline: checkpoint.baseline,
                env: SavedState::json(checkpoint.env),
                obs: checkpoint.obs,
                // A checkpoint is never written between an episode end and the next
                // episode: with auto-reset off the run has stopped there.
                ended: false,
            },
            config: checkpoint.config,
            window,
            summary: checkpoint.summary,
            label_totals: checkpoint.label_totals,
            stopped: checkpoint.stopped,
            events_at: checkpoint.events_at,
        };
        let mut harness = Self::continued(env, agent, continued, sink)?;
        if load_agent {
            harness
                .agent
                .load_state(checkpoint.agent)
                .map_err(CheckpointError::Agent)?;
        }
        Ok(harness)
    }

    /// A harness over `env` and `agent` (its state already in place) that goes on with
    /// the saved run `continued`.
    pub(in crate::harness) fn continued(
        env: E,
        agent: A,
        continued: Continued<E::Obs, E::Action>,
        sink: Option<Box<dyn TraceSink>>,
    ) -> Result<Self, HarnessError> {
        // Start from a new harness, so the per-run transient parts (progress, probes, the
        // events sink) start as they do in `new`, and put the saved run in place. The
        // session checks the baseline and every regime against the world's parameter table
        // as it restores, so a tampered value is refused before the trace is touched, not
        // many steps into the resumed run.
        let mut harness = Harness::new(env, agent, continued.session.identity.seed);
        harness
            .session
            .restore(continued.session)
            .map_err(CheckpointError::Restore)?;
        harness.config = continued.config;
        harness
            .session
            .set_record_transitions(harness.config.record_transitions);
        harness.events_at = continued.events_at;
        harness.session.replace_sink(sink);
        harness.state = RunState {
            window: continued.window,
            summary: continued.summary,
            label_totals: continued.label_totals,
            stopped: continued.stopped,
        };
        Ok(harness)
    }

    pub(super) fn write_checkpoint(&mut self) -> Result<(), HarnessError> {
        let Some(plan) = self.checkpoint.as_ref() else {
            return Ok(());
        };
        let (meta, path) = (plan.meta.clone(), plan.path.clone());
        let (trace_bytes, trace_tail, trace_digest) = match self.session.sink_mut() {
            Some(sink) => (sink.sync()?, sink.tail()?, sink.digest()),
            None => (None, None, None),
        };
        let events_at = self
            .session
            .events_mut()
            .map(EventWriter::sync)
            .transpose()?;
        let events_digest = self.session.events_mut().map(|e| e.digest());
        let agent = self
            .agent
            .save_state()
            .map_err(|message| HarnessError::AgentState {
                step: self.session.counters().step,
                agent: self.agent.algorithm_id().to_string(),
                message,
            })?;
        let ckpt = Checkpoint {
            trace_bytes,
            trace_tail,
            events_at,
            trace_digest,
            events_digest,
            ..self.to_checkpoint(meta, agent)?
        };
        Ok(ckpt.write(&path)?)
    }

    /// The run as it stands, as a checkpoint without trace positions, holding `agent` as
    /// the agent's state.
    pub(in crate::harness) fn to_checkpoint(
        &self,
        meta: serde_json::Value,
        agent: serde_json::Value,
    ) -> Result<Checkpoint, HarnessError> {
        self.checkpoint_parts(meta, agent, true)
    }

    /// [`Harness::to_checkpoint`], with the window left empty (`Null`) unless `window`.
    pub(in crate::harness) fn checkpoint_parts(
        &self,
        meta: serde_json::Value,
        agent: serde_json::Value,
        window: bool,
    ) -> Result<Checkpoint, HarnessError> {
        let saved = self.session_state()?;
        Ok(Checkpoint {
            version: CHECKPOINT_VERSION,
            meta,
            identity: saved.identity,
            config: self.config.clone(),
            step: saved.counters.step,
            episode: saved.counters.episode,
            episode_step: saved.counters.episode_step,
            obs: saved.obs,
            window: if window {
                serde_json::to_value(&self.state.window).map_err(|source| {
                    CheckpointError::Json {
                        what: "saving the window",
                        source,
                    }
                })?
            } else {
                serde_json::Value::Null
            },
            baseline: saved.baseline,
            summary: self.state.summary.clone(),
            label_totals: self.state.label_totals.clone(),
            stopped: self.state.stopped,
            scheduler: saved.scheduler,
            env: saved
                .env
                .into_json()
                .map_err(|source| CheckpointError::Json {
                    what: "saving the world",
                    source,
                })?,
            agent,
            trace_bytes: None,
            trace_tail: None,
            events_at: None,
            trace_digest: None,
            events_digest: None,
            seal: None,
        })
    }

    /// The session's saved state: with the agent's rollout window and the run's summary,
    /// what a checkpoint or a snapshot is made of.
    pub(in crate::harness) fn session_state(&self) -> Result<SessionState, HarnessError> {
        Ok(self
            .session
            .snapshot()
            .map_err(CheckpointError::SaveWorld)?)
    }
}
