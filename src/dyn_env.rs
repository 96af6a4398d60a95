//! Worlds whose Rust type is erased: one object any caller can drive from a world file.
//!
//! The Python package and sweeps build worlds they know only by a world file and a
//! [`Registry`](crate::registry::Registry). [`make`] (or [`crate::registry::Kind::build_env`]) returns a
//! `Box<dyn DynEnv>`: reset, step with an action index, observations as `Vec<f32>`, the
//! spec, regime conditions, and save/load. `Box<dyn DynEnv>` is itself an [`Env`] and a
//! [`Shiftable`], so it goes through the harness and [`crate::vector::VecEnv`] like any
//! world. Every `Env<Action = usize> + Shiftable` is a `DynEnv`.
//!
//! ```
//! use perennial::dyn_env::{DynEnv, make};
//! use perennial::registry::Registry;
//!
//! let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/cartpole.toml");
//! let mut env: Box<dyn DynEnv> = make(&path, Registry::shared_builtin()).unwrap();
//! assert_eq!(env.env_spec().id, "cartpole");
//! let first = env.reset_vec(7);
//! assert_eq!(first.len(), 4);
//! let t = env.step_vec(1).unwrap();
//! assert_eq!(t.reward, 1.0);
//! env.apply_regime(&[("gravity".to_string(), 3.0)].into()).unwrap();
//! assert_eq!(env.parameter("gravity"), Some(3.0));
//! assert!(env.step_vec(2).is_err(), "Discrete(2) has no action 2");
//! ```

use crate::env::{Env, EnvError, EnvSpec, Observation, SavedState, Transition, WorldEvent};
use crate::regime::{Conditions, ParamInfo, RegimeError, Shiftable, apply_conditions};
use crate::reward::Ceiling;

/// Builds a world from a world file: defined in [`crate::registry`], which builds every
/// world, and re-exported here beside the trait it returns.
pub use crate::registry::{build, make};

/// A world driven without knowing its Rust type (object-safe).
///
/// The method names differ from [`Env`]'s so a concrete world with both traits in scope
/// stays unambiguous; `Box<dyn DynEnv>` implements [`Env`] with the usual names.
pub trait DynEnv {
    /// See [`Env::spec`].
    fn env_spec(&self) -> &EnvSpec;
    /// See [`Env::reset`]; the observation as a flat vector.
    fn reset_vec(&mut self, seed: u64) -> Vec<f32>;
    /// See [`Env::step`], with the action as an index.
    ///
    /// # Errors
    ///
    /// As [`Env::step`].
    fn step_vec(&mut self, action: usize) -> Result<Transition<Vec<f32>>, EnvError>;
    /// See [`Env::ceiling`].
    fn reward_ceiling(&self) -> Option<Ceiling>;
    /// See [`Env::expected_bound`].
    fn reward_bound(&self) -> Option<f64>;
    /// See [`Env::role_names`].
    fn role_names_dyn(&self) -> &[String];
    /// See [`Env::role_rewards`].
    fn role_rewards_dyn(&self) -> &[f64];
    /// See [`Env::role_transition`].
    fn role_transition_dyn(
        &self,
        obs: &[f32],
        action: usize,
        views: &mut Vec<Vec<f32>>,
        actions: &mut Vec<usize>,
    );
    /// See [`Env::drain_events`].
    fn drain_world_events(&mut self, out: &mut Vec<WorldEvent>);
    /// See [`Env::save_state`].
    ///
    /// # Errors
    ///
    /// As [`Env::save_state`].
    fn save_world(&self) -> Result<serde_json::Value, EnvError>;
    /// See [`Env::load_state`].
    ///
    /// # Errors
    ///
    /// As [`Env::load_state`].
    fn load_world(&mut self, state: serde_json::Value) -> Result<(), EnvError>;
    /// See [`Env::save_state_typed`].
    ///
    /// # Errors
    ///
    /// As [`Env::save_state_typed`].
    fn save_world_typed(&self) -> Result<SavedState, EnvError>;
    /// See [`Env::load_state_typed`].
    ///
    /// # Errors
    ///
    /// As [`Env::load_state_typed`].
    fn load_world_typed(&mut self, state: &SavedState) -> Result<(), EnvError>;
    /// See [`Shiftable::parameters`].
    fn parameter_list(&self) -> Vec<ParamInfo>;
    /// One parameter's value (see [`Shiftable::get`]).
    fn parameter(&self, name: &str) -> Option<f64>;
    /// See [`Shiftable::set`].
    ///
    /// # Errors
    ///
    /// As [`Shiftable::set`].
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), RegimeError>;
    /// Applies a regime's conditions over the world's current parameters, all or none
    /// (see [`apply_conditions`]).
    ///
    /// # Errors
    ///
    /// A condition names an unknown parameter or is out of range; nothing is changed.
    fn apply_regime(&mut self, conditions: &Conditions) -> Result<(), RegimeError>;
    /// The world itself, to downcast to its Rust type (the enterprise world's tool desk
    /// needs the [`Morpheus`](crate::morpheus::Morpheus) behind a type-erased run).
    fn world_any(&self) -> &dyn std::any::Any;
}

impl<E: Env<Action = usize> + Shiftable + 'static> DynEnv for E {
    fn env_spec(&self) -> &EnvSpec {
        Env::spec(self)
    }

    fn reset_vec(&mut self, seed: u64) -> Vec<f32> {
        Env::reset(self, seed).as_slice().to_vec()
    }

    fn step_vec(&mut self, action: usize) -> Result<Transition<Vec<f32>>, EnvError> {
        let t = Env::step(self, &action)?;
        Ok(Transition {
            observation: t.observation.as_slice().to_vec(),
            reward: t.reward,
            terminated: t.terminated,
            truncated: t.truncated,
            breakdown: t.breakdown,
        })
    }

    fn reward_ceiling(&self) -> Option<Ceiling> {
        Env::ceiling(self)
    }

    fn reward_bound(&self) -> Option<f64> {
        Env::expected_bound(self)
    }

    fn role_names_dyn(&self) -> &[String] {
        Env::role_names(self)
    }

    fn role_rewards_dyn(&self) -> &[f64] {
        Env::role_rewards(self)
    }

    fn role_transition_dyn(
        &self,
        obs: &[f32],
        action: usize,
        views: &mut Vec<Vec<f32>>,
        actions: &mut Vec<usize>,
    ) {
        Env::role_transition(self, obs, &action, views, actions);
    }

    fn drain_world_events(&mut self, out: &mut Vec<WorldEvent>) {
        Env::drain_events(self, out);
    }

    fn save_world(&self) -> Result<serde_json::Value, EnvError> {
        Env::save_state(self)
    }

    fn load_world(&mut self, state: serde_json::Value) -> Result<(), EnvError> {
        Env::load_state(self, state)
    }

    fn save_world_typed(&self) -> Result<SavedState, EnvError> {
        Env::save_state_typed(self)
    }

    fn load_world_typed(&mut self, state: &SavedState) -> Result<(), EnvError> {
        Env::load_state_typed(self, state)
    }

    fn parameter_list(&self) -> Vec<ParamInfo> {
        Shiftable::parameters(self)
    }

    fn parameter(&self, name: &str) -> Option<f64> {
        Shiftable::get(self, name)
    }

    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        Shiftable::set(self, name, value)
    }

    fn apply_regime(&mut self, conditions: &Conditions) -> Result<(), RegimeError> {
        apply_conditions(self, conditions)
    }

    fn world_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Env for Box<dyn DynEnv> {
    type Obs = Vec<f32>;
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        self.as_ref().env_spec()
    }

    fn reset(&mut self, seed: u64) -> Vec<f32> {
        self.as_mut().reset_vec(seed)
    }

    fn step(&mut self, action: &usize) -> Result<Transition<Vec<f32>>, EnvError> {
        self.as_mut().step_vec(*action)
    }

    fn ceiling(&self) -> Option<Ceiling> {
        self.as_ref().reward_ceiling()
    }

    fn expected_bound(&self) -> Option<f64> {
        self.as_ref().reward_bound()
    }

    fn role_names(&self) -> &[String] {
        self.as_ref().role_names_dyn()
    }

    fn role_rewards(&self) -> &[f64] {
        self.as_ref().role_rewards_dyn()
    }

    fn role_transition(
        &self,
        obs: &[f32],
        action: &usize,
        views: &mut Vec<Vec<f32>>,
        actions: &mut Vec<usize>,
    ) {
        self.as_ref()
            .role_transition_dyn(obs, *action, views, actions);
    }

    fn drain_events(&mut self, out: &mut Vec<WorldEvent>) {
        self.as_mut().drain_world_events(out);
    }

    fn save_state(&self) -> Result<serde_json::Value, EnvError> {
        self.as_ref().save_world()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), EnvError> {
        self.as_mut().load_world(state)
    }

    fn save_state_typed(&self) -> Result<SavedState, EnvError> {
        self.as_ref().save_world_typed()
    }

    fn load_state_typed(&mut self, state: &SavedState) -> Result<(), EnvError> {
        self.as_mut().load_world_typed(state)
    }
}

impl Shiftable for Box<dyn DynEnv> {
    fn parameters(&self) -> Vec<ParamInfo> {
        self.as_ref().parameter_list()
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.as_ref().parameter(name)
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        self.as_mut().set_parameter(name, value)
    }
}
