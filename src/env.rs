//! The `Env` contract: spaces, specs, transitions, and the rules every world keeps.

use std::fmt;

use rand::RngExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::reward::{Breakdown, Ceiling};

mod check;
mod saved;
pub use check::{CheckFailure, CheckOptions, CheckReport, Rule, check};
pub use saved::SavedState;

/// A reinforcement-learning environment whose world may never end.
///
/// # Rules for implementors
///
/// - **`reset(seed)` destroys the world** and builds a new one from `seed`. It is never a
///   rewind: nothing of the old world (stock, queues, random-stream positions, counters)
///   may survive it. Parameters set through [`Shiftable`](crate::regime::Shiftable) are
///   configuration, not world state, and are kept.
/// - **Only the environment ends an episode**, by returning `terminated` (a genuine terminal
///   state of the world) or `truncated` (a cutoff the environment itself imposes, such as a
///   time limit). Both may be true on the same step. A persistent world never sets either
///   unless it was given a horizon.
/// - **Errors, not panics.** An action outside the action space returns
///   [`EnvError::InvalidAction`] and leaves the world unchanged. A `step` after the episode
///   ended and before the next `reset` returns [`EnvError::EpisodeEnded`].
/// - **All randomness comes from the seed** given to `reset`, so the same seed and the same
///   actions produce bit-identical transitions.
/// - When a reward specification produced the reward, `Transition::breakdown` holds its
///   per-step components and episode-end payouts, and `reward` equals the sum of both.
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
///
/// let mut env = CartPole::new(CartPoleParams::default());
/// let first = env.reset(7);
/// assert_eq!(first.len(), 4);
/// let t = env.step(&1).expect("action 1 is in the space");
/// assert_eq!(t.reward, 1.0);
/// assert!(!t.terminated && !t.truncated);
/// ```
pub trait Env {
    /// The observation handed to an agent.
    type Obs: Observation;
    /// The action an agent returns.
    type Action: Action;

    /// Static description: id, spaces, persistence, reward components.
    fn spec(&self) -> &EnvSpec;

    /// Destroys the current world, builds a new one from `seed`, and returns the first
    /// observation of the new episode.
    fn reset(&mut self, seed: u64) -> Self::Obs;

    /// Advances the world by one step.
    ///
    /// # Errors
    ///
    /// [`EnvError::InvalidAction`] for an action outside the space (the world is unchanged),
    /// [`EnvError::EpisodeEnded`] when the episode already ended, [`EnvError::NotReset`]
    /// before the first `reset`.
    fn step(&mut self, action: &Self::Action) -> Result<Transition<Self::Obs>, EnvError>;

    /// The configuration-specific upper bound on a step's reward under the conditions now in
    /// force, if the world knows one.
    fn ceiling(&self) -> Option<Ceiling> {
        None
    }

    /// The expected-reward bound: an upper bound on the long-run average reward per step
    /// that *any* policy can earn under the conditions now in force, if the world knows
    /// one. The trace writes it in the `bound` column and the gap metric is measured
    /// against it; a world without one (the default) is measured against its
    /// [`Env::ceiling`].
    ///
    /// # Rules for implementors
    ///
    /// It must hold for every policy, averaged over the world's randomness (a relaxation
    /// of the problem, not a policy's score), and it should be as low as that allows: a
    /// bound far above what any policy earns makes every gap look alike. Return the same
    /// value for the same conditions; it is read after every step.
    fn expected_bound(&self) -> Option<f64> {
        None
    }

    /// The roles of a world run by several agents at once (one joint action, one index
    /// per role), in role order; empty (the default) for a world with one agent. A trace
    /// of a world with roles writes a `role_rewards` column.
    fn role_names(&self) -> &[String] {
        &[]
    }

    /// The last step's own reward per role, in [`Env::role_names`] order (empty by
    /// default). The team reward stays the transition's `reward`.
    fn role_rewards(&self) -> &[f64] {
        &[]
    }

    /// With roles: each role's observation of `obs` (its view, as its agent sees it) into
    /// `views` and its index of the joint `action` into `actions`, in [`Env::role_names`]
    /// order: the `obs` and `action` of a roles trace recorded with
    /// `--record-transitions`. Nothing by default.
    fn role_transition(
        &self,
        _obs: &[f32],
        _action: &Self::Action,
        _views: &mut Vec<Vec<f32>>,
        _actions: &mut Vec<usize>,
    ) {
    }

    /// Moves the exogenous events the world injected during the last [`Env::step`]
    /// (failures, outages, demand spikes) into `out`, oldest first, leaving none behind.
    /// The harness calls it after every step when a trace is written and records them in
    /// the run's events table. The default injects nothing.
    ///
    /// # Rules for implementors
    ///
    /// Hand out each event once, in the step that injected it, and keep at most one
    /// step's events: a world that is never drained must not grow.
    fn drain_events(&mut self, out: &mut Vec<WorldEvent>) {
        let _ = out;
    }

    /// Everything needed to continue this world exactly where it is (state, parameters,
    /// random streams), for checkpoints. The default says the world has no checkpoints.
    ///
    /// # Errors
    ///
    /// [`EnvError::World`] when the world cannot be saved.
    fn save_state(&self) -> Result<serde_json::Value, EnvError> {
        Err(EnvError::World(format!(
            "world `{}` does not support checkpoints; implement Env::save_state and Env::load_state",
            self.spec().id
        )))
    }

    /// Restores what [`Env::save_state`] saved; afterwards the world continues exactly as
    /// the saved one would have.
    ///
    /// # Errors
    ///
    /// [`EnvError::World`] when the state does not belong to this world.
    fn load_state(&mut self, state: serde_json::Value) -> Result<(), EnvError> {
        let _ = state;
        Err(EnvError::World(format!(
            "world `{}` does not support checkpoints; implement Env::save_state and Env::load_state",
            self.spec().id
        )))
    }

    /// [`Env::save_state`], kept typed: what a snapshot taken and restored in one process
    /// (a fork) holds, so the world's state is not written as JSON unless the snapshot
    /// leaves the process. The default wraps [`Env::save_state`].
    ///
    /// # Rules for implementors
    ///
    /// Override it together with [`Env::load_state_typed`], and only with a value whose
    /// JSON is what [`Env::save_state`] returns.
    ///
    /// # Errors
    ///
    /// As [`Env::save_state`].
    fn save_state_typed(&self) -> Result<SavedState, EnvError> {
        self.save_state().map(SavedState::json)
    }

    /// Restores what [`Env::save_state_typed`] saved, or a state read as JSON, exactly as
    /// [`Env::load_state`] would. The default loads the state's JSON.
    ///
    /// # Errors
    ///
    /// As [`Env::load_state`].
    fn load_state_typed(&mut self, state: &SavedState) -> Result<(), EnvError> {
        let json = state
            .to_json()
            .map_err(|e| EnvError::World(format!("the saved world cannot be read: {e}")))?;
        self.load_state(json)
    }
}

/// An exogenous event a world injected during a step (see [`Env::drain_events`]): what
/// happened, to what, from when and for how long, in the world's own time unit (the
/// enterprise world's hours).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldEvent {
    /// What happened, in snake case (e.g. `dock_breakdown`).
    pub kind: String,
    /// Which thing of that kind was hit (a dock, carrier, supplier or SKU id); `None` for
    /// an event of the whole world (a system outage).
    pub target: Option<u64>,
    /// World time at which it started.
    pub start: u64,
    /// How long it lasts, in world time.
    pub duration: u64,
}

/// An observation: a flat vector of `f32` as far as traces and generic agents are concerned.
pub trait Observation:
    Clone + fmt::Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The observation as a flat slice.
    fn as_slice(&self) -> &[f32];
}

/// Fixed-size observations, for the array lengths serde supports.
macro_rules! array_observations {
    ($($n:literal)*) => {$(
        impl Observation for [f32; $n] {
            fn as_slice(&self) -> &[f32] {
                self
            }
        }
    )*};
}

array_observations!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);

impl Observation for Vec<f32> {
    fn as_slice(&self) -> &[f32] {
        self
    }
}

/// An action: something a space can sample and check, and a trace can record.
///
/// # Rules for implementors
///
/// `in_space` must be true exactly for the actions the env's `step` accepts, so that a
/// batch checked up front (as [`VecEnv`](crate::vector::VecEnv) does, so a bad action for
/// one copy leaves every copy unchanged) never meets [`EnvError::InvalidAction`].
pub trait Action:
    Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Draws a uniformly random action from `space`, or `None` when this action type cannot
    /// live in that space.
    fn sample<R: rand::Rng + ?Sized>(space: &Space, rng: &mut R) -> Option<Self>;

    /// Whether this action lies in `space`.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::env::{Action, Space};
    ///
    /// assert!(1usize.in_space(&Space::Discrete { n: 2 }));
    /// assert!(!2usize.in_space(&Space::Discrete { n: 2 }));
    /// ```
    fn in_space(&self, space: &Space) -> bool;
}

impl Action for usize {
    fn sample<R: rand::Rng + ?Sized>(space: &Space, rng: &mut R) -> Option<Self> {
        match space {
            Space::Discrete { n } if *n > 0 => Some(rng.random_range(0..*n)),
            _ => None,
        }
    }

    fn in_space(&self, space: &Space) -> bool {
        space.contains_index(*self)
    }
}

impl Action for Vec<usize> {
    fn sample<R: rand::Rng + ?Sized>(space: &Space, rng: &mut R) -> Option<Self> {
        match space {
            Space::MultiDiscrete { nvec } if nvec.iter().all(|&n| n > 0) => {
                Some(nvec.iter().map(|&n| rng.random_range(0..n)).collect())
            }
            _ => None,
        }
    }

    fn in_space(&self, space: &Space) -> bool {
        matches!(space, Space::MultiDiscrete { nvec }
            if nvec.len() == self.len() && self.iter().zip(nvec).all(|(a, n)| a < n))
    }
}

impl Action for Vec<f32> {
    fn sample<R: rand::Rng + ?Sized>(space: &Space, rng: &mut R) -> Option<Self> {
        match space {
            Space::Box { low, high, .. } => Some(
                low.iter()
                    .zip(high)
                    .map(|(&lo, &hi)| {
                        let (lo, hi) = (lo.max(-1e6), hi.min(1e6));
                        (lo + (hi - lo) * rng.random::<f64>()) as f32
                    })
                    .collect(),
            ),
            _ => None,
        }
    }

    fn in_space(&self, space: &Space) -> bool {
        matches!(space, Space::Box { low, high, .. }
            if low.len() == self.len()
                && self
                    .iter()
                    .zip(low.iter().zip(high))
                    .all(|(&a, (&lo, &hi))| (lo..=hi).contains(&f64::from(a))))
    }
}

/// Element type of a [`Space::Box`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
}

/// An observation or action space.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Space {
    /// Integers `0..n`.
    Discrete {
        /// Number of choices.
        n: usize,
    },
    /// A vector of integers, element `i` in `0..nvec[i]`.
    MultiDiscrete {
        /// Number of choices per element.
        nvec: Vec<usize>,
    },
    /// A box of reals with per-element bounds (infinite bounds allowed).
    Box {
        /// Lower bounds.
        low: Vec<f64>,
        /// Upper bounds.
        high: Vec<f64>,
        /// Element type.
        dtype: Dtype,
    },
}

/// Gymnasium's way of printing spaces: `Discrete(2)`, `MultiDiscrete([3 4])`,
/// `Box(-1.0, 1.0, (3,), float32)` (bounds printed once when every element shares them).
impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(v: &[impl fmt::Display]) -> String {
            let items: Vec<String> = v.iter().map(ToString::to_string).collect();
            format!("[{}]", items.join(" "))
        }
        fn bound(v: &[f64]) -> String {
            match v.first() {
                Some(first)
                    if v.iter()
                        .all(|x| x == first || (x.is_nan() && first.is_nan())) =>
                {
                    format!("{first:?}")
                }
                _ => list(v),
            }
        }
        match self {
            Space::Discrete { n } => write!(f, "Discrete({n})"),
            Space::MultiDiscrete { nvec } => write!(f, "MultiDiscrete({})", list(nvec)),
            Space::Box { low, high, dtype } => {
                let dtype = match dtype {
                    Dtype::F32 => "float32",
                    Dtype::F64 => "float64",
                };
                write!(
                    f,
                    "Box({}, {}, ({},), {dtype})",
                    bound(low),
                    bound(high),
                    low.len()
                )
            }
        }
    }
}

impl Space {
    /// A `float32` box with per-dimension bounds (infinite allowed), the usual observation
    /// space of a world that observes `[f32; N]`.
    pub fn box_f32(low: Vec<f64>, high: Vec<f64>) -> Self {
        Space::Box {
            low,
            high,
            dtype: Dtype::F32,
        }
    }

    /// Number of scalar elements (1 for `Discrete`).
    pub fn len(&self) -> usize {
        match self {
            Space::Discrete { .. } => 1,
            Space::MultiDiscrete { nvec } => nvec.len(),
            Space::Box { low, .. } => low.len(),
        }
    }

    /// True for a zero-element space.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a discrete action index lies in this space.
    pub fn contains_index(&self, a: usize) -> bool {
        matches!(self, Space::Discrete { n } if a < *n)
    }
}

/// Static description of an environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnvSpec {
    /// World or task id, e.g. `cartpole` or `warehouse`; written in the trace's `task` column.
    pub id: String,
    /// Observation space.
    pub observation_space: Space,
    /// Action space.
    pub action_space: Space,
    /// True for a world with no terminal state: a run is one long episode.
    pub persistent: bool,
    /// Names of the per-step reward components, in [`Breakdown::components`] order
    /// (empty when the world has no reward specification).
    pub components: Vec<String>,
    /// Names of the episode-end payout terms, in [`Breakdown::payouts`] order.
    pub payouts: Vec<String>,
}

impl EnvSpec {
    /// A spec with the required fields: not persistent, no reward components or payouts;
    /// add them with the builder methods.
    ///
    /// ```
    /// use perennial::prelude::*;
    ///
    /// let spec = EnvSpec::new("queue", Space::Discrete { n: 4 }, Space::Discrete { n: 2 })
    ///     .persistent(true)
    ///     .components(["served", "waiting"]);
    /// assert_eq!(spec.components, ["served", "waiting"]);
    /// assert!(spec.payouts.is_empty());
    /// ```
    pub fn new(id: impl Into<String>, observation_space: Space, action_space: Space) -> Self {
        EnvSpec {
            id: id.into(),
            observation_space,
            action_space,
            persistent: false,
            components: Vec::new(),
            payouts: Vec::new(),
        }
    }

    /// Sets whether the world has no terminal state.
    pub fn persistent(mut self, persistent: bool) -> Self {
        self.persistent = persistent;
        self
    }

    /// Names the per-step reward components, in [`Breakdown::components`] order.
    pub fn components<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.components = names.into_iter().map(Into::into).collect();
        self
    }

    /// Names the episode-end payout terms, in [`Breakdown::payouts`] order.
    pub fn payouts<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.payouts = names.into_iter().map(Into::into).collect();
        self
    }
}

/// Implements [`Env::save_state`] and [`Env::load_state`] with serde, for worlds whose
/// whole state is their serde form; the caller needs `serde`'s derives, not `serde_json`.
///
/// Inside `impl Env for MyWorld { ... }`, write `perennial::serde_env_state!();`. Name
/// fields that describe what the world was built for, as in
/// [`serde_agent_state!`](crate::serde_agent_state), and a saved state whose fields differ
/// is refused; `then method` calls `self.method()` on the loaded world before it replaces
/// this one (to recompute what is not saved): `serde_env_state!(n_items; then rebuild)`.
#[macro_export]
macro_rules! serde_env_state {
    ($($first:ident $(. $rest:ident)*),* $(; then $hook:ident)?) => {
        fn save_state(
            &self,
        ) -> ::std::result::Result<$crate::__private::serde_json::Value, $crate::env::EnvError> {
            $crate::__private::serde_json::to_value(self).map_err(|e| {
                $crate::env::EnvError::World(format!(
                    "saving `{}`: {e}",
                    <Self as $crate::env::Env>::spec(self).id
                ))
            })
        }

        fn load_state(
            &mut self,
            state: $crate::__private::serde_json::Value,
        ) -> ::std::result::Result<(), $crate::env::EnvError> {
            #[allow(unused_mut)]
            let mut loaded: Self = $crate::__private::serde_json::from_value(state).map_err(|e| {
                $crate::env::EnvError::World(format!(
                    "not a `{}` state: {e}",
                    <Self as $crate::env::Env>::spec(self).id
                ))
            })?;
            $(
                if loaded.$first $(.$rest)* != self.$first $(.$rest)* {
                    return Err($crate::env::EnvError::World(format!(
                        "the saved `{}` is {:?}; this world has {:?}",
                        stringify!($first $(.$rest)*),
                        loaded.$first $(.$rest)*,
                        self.$first $(.$rest)*,
                    )));
                }
            )*
            $(loaded.$hook();)?
            *self = loaded;
            Ok(())
        }
    };
}

/// What one `step` returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Transition<O> {
    /// Observation after the step.
    pub observation: O,
    /// Total reward of the step (per-step components plus payouts).
    pub reward: f64,
    /// The world reached a genuine terminal state.
    pub terminated: bool,
    /// The environment imposed a cutoff (e.g. a time limit).
    pub truncated: bool,
    /// Per-component reward, when a reward specification produced it.
    pub breakdown: Option<Breakdown>,
}

impl<O> Transition<O> {
    /// A step that ended nothing and carries no breakdown; add those with
    /// [`Transition::ended`] and [`Transition::breakdown`].
    ///
    /// ```
    /// use perennial::prelude::*;
    ///
    /// let t = Transition::new([0.5f32], -1.5)
    ///     .ended(true, false)
    ///     .breakdown(Breakdown::of(vec![-1.0, -0.5]));
    /// assert!(t.terminated && t.done());
    /// ```
    pub fn new(observation: O, reward: f64) -> Self {
        Transition {
            observation,
            reward,
            terminated: false,
            truncated: false,
            breakdown: None,
        }
    }

    /// Sets the two end flags: a genuine terminal state, a cutoff the environment imposed.
    pub fn ended(mut self, terminated: bool, truncated: bool) -> Self {
        self.terminated = terminated;
        self.truncated = truncated;
        self
    }

    /// Attaches the per-component reward.
    pub fn breakdown(mut self, breakdown: Breakdown) -> Self {
        self.breakdown = Some(breakdown);
        self
    }

    /// True when the episode ended on this step.
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// What can go wrong when driving an environment.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum EnvError {
    /// The action is outside the action space; the world is unchanged.
    InvalidAction {
        /// The offending action, formatted.
        action: String,
        /// The action space, formatted.
        space: String,
    },
    /// `step` was called after the episode ended; call `reset(seed)` first.
    EpisodeEnded,
    /// `step` was called before the first `reset`.
    NotReset,
    /// The world itself failed (e.g. a user world produced a non-finite reward).
    World(String),
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvError::InvalidAction { action, space } => write!(
                f,
                "invalid action {action}: it is outside the action space {space}; the world is unchanged"
            ),
            EnvError::EpisodeEnded => write!(
                f,
                "step called after the episode ended; call reset(seed) to build a new world first"
            ),
            EnvError::NotReset => write!(f, "step called before reset; call reset(seed) first"),
            EnvError::World(msg) => write!(f, "world error: {msg}"),
        }
    }
}

impl std::error::Error for EnvError {}

impl EnvError {
    /// [`EnvError::InvalidAction`] for `action` outside `space`, both formatted the one way
    /// every world and vector env uses (`Discrete(2)`, as Gymnasium prints it).
    pub fn invalid_action(action: &impl fmt::Debug, space: &Space) -> Self {
        EnvError::InvalidAction {
            action: format!("{action:?}"),
            space: space.to_string(),
        }
    }
}

/// The checks every [`Env::step`] starts with, in order: the env was reset
/// ([`EnvError::NotReset`]), its episode has not ended ([`EnvError::EpisodeEnded`]), and the
/// action lies in the action space ([`EnvError::InvalidAction`]).
///
/// # Examples
///
/// ```
/// use perennial::env::{check_step, EnvError, Space};
///
/// let space = Space::Discrete { n: 2 };
/// assert_eq!(check_step(false, false, &0usize, &space), Err(EnvError::NotReset));
/// assert_eq!(check_step(true, true, &0usize, &space), Err(EnvError::EpisodeEnded));
/// let err = check_step(true, false, &2usize, &space).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid action 2: it is outside the action space Discrete(2); the world is unchanged"
/// );
/// assert!(check_step(true, false, &1usize, &space).is_ok());
/// ```
///
/// # Errors
///
/// The first check that fails.
#[inline]
pub fn check_step<A: Action>(
    started: bool,
    ended: bool,
    action: &A,
    space: &Space,
) -> Result<(), EnvError> {
    if !started {
        Err(EnvError::NotReset)
    } else if ended {
        Err(EnvError::EpisodeEnded)
    } else if !action.in_space(space) {
        Err(EnvError::invalid_action(action, space))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn spaces_print_as_gymnasium_prints_them() {
        assert_eq!(Space::Discrete { n: 48 }.to_string(), "Discrete(48)");
        assert_eq!(
            Space::MultiDiscrete { nvec: vec![3, 4] }.to_string(),
            "MultiDiscrete([3 4])"
        );
        let uniform = Space::Box {
            low: vec![-1.0; 3],
            high: vec![1.0; 3],
            dtype: Dtype::F32,
        };
        assert_eq!(uniform.to_string(), "Box(-1.0, 1.0, (3,), float32)");
        let mixed = Space::Box {
            low: vec![-4.8, f64::NEG_INFINITY],
            high: vec![4.8, f64::INFINITY],
            dtype: Dtype::F64,
        };
        assert_eq!(
            mixed.to_string(),
            "Box([-4.8 -inf], [4.8 inf], (2,), float64)"
        );
    }

    #[test]
    fn discrete_sampling_stays_in_the_space() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let space = Space::Discrete { n: 3 };
        for _ in 0..100 {
            let a = usize::sample(&space, &mut rng).expect("discrete space");
            assert!(space.contains_index(a));
        }
        assert!(Vec::<usize>::sample(&space, &mut rng).is_none());
    }

    #[test]
    fn multi_discrete_membership_checks_length_and_every_element() {
        let space = Space::MultiDiscrete { nvec: vec![2, 3] };
        assert!(vec![1, 2].in_space(&space));
        assert!(!vec![1, 3].in_space(&space));
        assert!(!vec![1].in_space(&space));
        assert!(!vec![1usize, 2].in_space(&Space::Discrete { n: 3 }));
    }

    #[test]
    fn box_membership_checks_length_bounds_and_nan() {
        let space = Space::Box {
            low: vec![-1.0, 0.0],
            high: vec![1.0, f64::INFINITY],
            dtype: Dtype::F32,
        };
        assert!(vec![0.5f32, 1e30].in_space(&space));
        assert!(!vec![1.5f32, 0.0].in_space(&space));
        assert!(!vec![f32::NAN, 0.0].in_space(&space));
        assert!(!vec![0.0f32].in_space(&space));
    }

    #[test]
    fn box_sampling_respects_bounds() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let space = Space::Box {
            low: vec![-1.0, 0.0],
            high: vec![1.0, 0.5],
            dtype: Dtype::F32,
        };
        let a = Vec::<f32>::sample(&space, &mut rng).expect("box space");
        assert!((-1.0..=1.0).contains(&a[0]) && (0.0..=0.5).contains(&a[1]));
    }
}
