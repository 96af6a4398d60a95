//! The `Agent` trait and the rollout window it learns from.

use crate::env::Env;
use crate::regime::Notification;
use crate::trace::Plasticity;

/// An agent the harness drives.
///
/// # Rules for implementors
///
/// - `act` chooses an action for the observation; it must be inside the env's action space
///   (an action outside it stops the run with an error naming the step).
/// - `update` is called at every window boundary with the steps since the previous one. A
///   window ends nothing: the episode goes on, the world is not reset, and nothing about
///   the window is recorded in the trace.
/// - By default the agent is never told about regime shifts; it may only notice them
///   through what it observes and earns. A run with a [`NotifyLevel`](crate::regime::NotifyLevel)
///   other than `none` calls [`Agent::notify`] at the first step of each new regime (not for
///   the initial regime), before `act` on that step; the observation is unchanged.
/// - Draw randomness from a generator seeded from the run's agent stream
///   ([`crate::seed::Stream::Agent`]), so the world's random events do not depend on the agent.
pub trait Agent<E: Env + ?Sized> {
    /// The id written in the trace's `algorithm_id` column.
    fn algorithm_id(&self) -> &str;

    /// Chooses the action for `obs`.
    fn act(&mut self, obs: &E::Obs) -> E::Action;

    /// Hears about a regime shift: called once per shift, before [`Agent::act`] on the
    /// first step the new regime is in force, with as much as the run's notify level tells
    /// (see [`Notification`]). Never called at level `none`, nor for the initial regime.
    /// The default ignores it.
    fn notify(&mut self, notification: &Notification) {
        let _ = notification;
    }

    /// Learns from the last rollout window. The default does nothing.
    fn update(&mut self, window: &Window<E::Obs, E::Action>) {
        let _ = window;
    }

    /// A neural agent's diagnostics of its network after the last [`Agent::update`], which
    /// the harness writes to the events table as a `plasticity` event of the window's last
    /// step. The default (an agent without a network, or one that does not measure them)
    /// is `None`, and its events table is unchanged.
    fn plasticity(&self) -> Option<Plasticity> {
        None
    }

    /// Replaces the agent's random stream with the one of the run seeded with `seed`
    /// (as if built with that seed), keeping everything it learned: a fork's rollouts of
    /// one saved agent then draw different actions. An agent that draws randomness
    /// implements it; the default does nothing (a deterministic agent).
    fn reseed(&mut self, seed: u64) {
        let _ = seed;
    }

    /// Everything needed to continue this agent exactly (weights, random stream), for
    /// checkpoints. The default says the agent has no checkpoints. Build the value with
    /// [`to_finite_value`](super::to_finite_value), not `serde_json::to_value`: JSON has no
    /// NaN, so a diverged weight would be saved as `null` and the resume would refuse it.
    ///
    /// # Errors
    ///
    /// A message saying why the agent cannot be saved.
    fn save_state(&self) -> Result<serde_json::Value, String> {
        Err(format!(
            "agent `{}` does not support checkpoints; implement Agent::save_state and Agent::load_state",
            self.algorithm_id()
        ))
    }

    /// Restores what [`Agent::save_state`] saved.
    ///
    /// # Errors
    ///
    /// A message saying why the state does not fit this agent.
    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        let _ = state;
        Err(format!(
            "agent `{}` does not support checkpoints",
            self.algorithm_id()
        ))
    }
}

/// Implements the checkpoint hooks of [`Agent`] with serde, for agents whose whole state
/// is their serde form.
///
/// Name the fields that describe what the agent was built for (its action space, its
/// input size) and a saved state is refused unless they equal the running agent's:
/// `serde_agent_state!(space, weights.len())`. Without them a checkpoint edited to another space would
/// load and the agent would act outside the world's space.
#[macro_export]
macro_rules! serde_agent_state {
    ($($first:ident $(. $rest:ident $(($($arg:tt)*))?)*),* $(,)?) => {
        fn save_state(
            &self,
        ) -> ::std::result::Result<$crate::__private::serde_json::Value, String> {
            $crate::harness::to_finite_value(self)
        }

        fn load_state(
            &mut self,
            state: $crate::__private::serde_json::Value,
        ) -> ::std::result::Result<(), String> {
            let loaded: Self =
                $crate::__private::serde_json::from_value(state).map_err(|e| e.to_string())?;
            $(
                if loaded.$first $(.$rest $(($($arg)*))?)* != self.$first $(.$rest $(($($arg)*))?)* {
                    return Err(format!(
                        "the saved `{}` is {:?}; this run's agent has {:?}",
                        stringify!($first $(.$rest $(($($arg)*))?)*),
                        loaded.$first $(.$rest $(($($arg)*))?)*,
                        self.$first $(.$rest $(($($arg)*))?)*,
                    ));
                }
            )*
            *self = loaded;
            Ok(())
        }
    };
}

/// The steps of one rollout window, in order.
///
/// `obs[i]` is the observation the agent acted on with `actions[i]`; `next_obs[i]` the
/// observation that step produced (for a step that ended an episode, the final observation
/// of that episode, not the first of the next).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window<O, A> {
    /// Global step index of the window's first step.
    pub start_step: u64,
    /// Observations acted on.
    pub obs: Vec<O>,
    /// Actions taken.
    pub actions: Vec<A>,
    /// Rewards earned.
    pub rewards: Vec<f64>,
    /// Observations produced.
    pub next_obs: Vec<O>,
    /// Terminated flags.
    pub terminated: Vec<bool>,
    /// Truncated flags.
    pub truncated: Vec<bool>,
}

impl<O, A> Default for Window<O, A> {
    fn default() -> Self {
        Window {
            start_step: 0,
            obs: Vec::new(),
            actions: Vec::new(),
            rewards: Vec::new(),
            next_obs: Vec::new(),
            terminated: Vec::new(),
            truncated: Vec::new(),
        }
    }
}

impl<O, A> Window<O, A> {
    /// Number of steps in the window.
    pub fn len(&self) -> usize {
        self.rewards.len()
    }

    /// True when the window holds no step.
    pub fn is_empty(&self) -> bool {
        self.rewards.is_empty()
    }

    pub(crate) fn reserve(&mut self, steps: usize) {
        self.obs.reserve(steps);
        self.actions.reserve(steps);
        self.rewards.reserve(steps);
        self.next_obs.reserve(steps);
        self.terminated.reserve(steps);
        self.truncated.reserve(steps);
    }

    pub(crate) fn clear(&mut self, start_step: u64) {
        self.start_step = start_step;
        self.obs.clear();
        self.actions.clear();
        self.rewards.clear();
        self.next_obs.clear();
        self.terminated.clear();
        self.truncated.clear();
    }
}

impl<E: Env + ?Sized, A: Agent<E> + ?Sized> Agent<E> for Box<A> {
    fn algorithm_id(&self) -> &str {
        (**self).algorithm_id()
    }

    fn act(&mut self, obs: &E::Obs) -> E::Action {
        (**self).act(obs)
    }

    fn notify(&mut self, notification: &Notification) {
        (**self).notify(notification)
    }

    fn update(&mut self, window: &Window<E::Obs, E::Action>) {
        (**self).update(window)
    }

    fn plasticity(&self) -> Option<Plasticity> {
        (**self).plasticity()
    }

    fn reseed(&mut self, seed: u64) {
        (**self).reseed(seed)
    }

    fn save_state(&self) -> Result<serde_json::Value, String> {
        (**self).save_state()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        (**self).load_state(state)
    }
}
