#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod cartpole;
pub mod env;
pub mod morpheus;
pub mod regime;
pub mod reward;
pub mod seed;

/// The names most programs need.
pub mod prelude {
    pub use crate::cartpole::{CartPole, CartPoleParams, Integrator};
    pub use crate::env::{Action, Env, EnvError, EnvSpec, Observation, Space, Transition};
    pub use crate::regime::{Origin, Plan, Regime, Scheduler, Shiftable};
    pub use crate::reward::{Breakdown, Ceiling, RewardSpec};
}
