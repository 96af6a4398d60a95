//! A session's counters and its saved state: everything a run needs to go on, but the trace.

use serde::{Deserialize, Serialize};

use super::{RestoreError, Session};
use crate::env::{Env, SavedState};
use crate::regime::{
    Conditions, RegimeError, Scheduler, Shiftable, apply_over_baseline, validate_conditions,
};
use crate::seed::{self, Stream};
use crate::trace::RunIdentity;

/// Where a run stands on its three axes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Steps taken in the run (the next step's global index).
    pub step: u64,
    /// The episode under way, from 0.
    pub episode: u64,
    /// Steps taken in the episode under way.
    pub episode_step: u64,
}

/// A session's saved state, as plain data: the world (its `save_state`), the scheduler,
/// the identity (seed and notify level), the counters, the baseline and the next
/// observation. The trace is not in it: a restored session writes on to whatever trace it
/// has.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionState {
    /// The run's identity.
    pub identity: RunIdentity,
    /// The counters.
    pub counters: Counters,
    /// The scheduler, mid-plan.
    pub scheduler: Scheduler,
    /// The world's parameters every regime is applied over.
    pub baseline: Conditions,
    /// The world, as its `save_state_typed` saved it (typed in the process that saved
    /// it, JSON when read from outside).
    pub env: SavedState,
    /// The observation the next action answers (`null` before the run started).
    pub obs: serde_json::Value,
    /// The last step ended an episode.
    pub ended: bool,
}

impl<E: Env + Shiftable> Session<E> {
    /// The session's state now, to [`Session::restore`] later (into this session or a new
    /// one over a world of the same kind).
    ///
    /// # Errors
    ///
    /// The world cannot be saved (its `save_state` error, as text).
    pub fn snapshot(&self) -> Result<SessionState, crate::env::EnvError> {
        let obs = serde_json::to_value(&self.obs).map_err(|e| {
            crate::env::EnvError::World(format!("the observation cannot be saved: {e}"))
        })?;
        Ok(SessionState {
            identity: self.identity.clone(),
            counters: self.counters,
            scheduler: self.scheduler.clone(),
            baseline: self.baseline.clone(),
            env: self.env.save_state_typed()?,
            obs,
            ended: self.ended,
        })
    }

    /// Puts a saved state in place: the world loads its saved part, the baseline and every
    /// regime are checked against the world's parameter table (so a tampered value is
    /// refused now, not at a later shift), and the scheduler, identity, counters and next
    /// observation take their saved values. The trace is untouched.
    ///
    /// # Errors
    ///
    /// A part does not fit. The session is unchanged except, when a later part is refused,
    /// the world, which has loaded its saved state.
    pub fn restore(&mut self, state: SessionState) -> Result<(), RestoreError> {
        let bad = |what: &str, message: String| RestoreError {
            what: what.to_string(),
            message,
        };
        self.env
            .load_state_typed(&state.env)
            .map_err(|e| bad("world", e.to_string()))?;
        let params = self.env.parameters();
        validate_conditions(&params, &state.baseline)
            .map_err(|e| bad("baseline", e.to_string()))?;
        for regime in state.scheduler.regimes() {
            validate_conditions(&params, &regime.conditions)
                .map_err(|e| bad(&format!("regime `{}`", regime.label), e.to_string()))?;
        }
        let obs: Option<E::Obs> =
            serde_json::from_value(state.obs).map_err(|e| bad("observation", e.to_string()))?;
        self.world_seeds = seed::Derived::new(state.identity.seed, Stream::World);
        self.identity = state.identity;
        self.counters = state.counters;
        self.scheduler = state.scheduler;
        self.baseline = state.baseline;
        self.obs = obs;
        self.ended = state.ended;
        Ok(())
    }

    /// Puts an edited world file's schedule and parameters in force mid-run: `scheduler`
    /// (positioned at the step the run stands at, [`Scheduler::replayed_to`]) and
    /// `baseline` (the parameters the edited file builds the world with), the regime in
    /// force applied over it now. The world's own state (positions, stock, queues) and the
    /// counters stay as they are.
    ///
    /// # Errors
    ///
    /// The regime in force does not fit the world; the session is then unchanged.
    pub fn follow_world(
        &mut self,
        scheduler: Scheduler,
        baseline: Conditions,
    ) -> Result<(), RegimeError> {
        apply_over_baseline(&mut self.env, &baseline, scheduler.regime())?;
        self.scheduler = scheduler;
        self.baseline = baseline;
        Ok(())
    }
}
