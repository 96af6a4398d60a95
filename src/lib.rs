#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

/// This crate's version, as run manifests record it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod agents;
pub mod bench;
mod builtin;
pub mod cartpole;
#[cfg(feature = "cli")]
pub mod cli;
mod config;
pub mod dyn_env;
pub mod env;
pub mod episodes;
mod error_from;
pub mod eval;
pub mod example;
pub mod fork;
pub mod harness;
pub mod limits;
pub mod morpheus;
pub mod output;
pub mod regime;
pub mod registry;
pub mod reward;
pub mod seed;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
pub mod sweep;
pub mod trace;
pub mod vector;
pub mod world_file;

/// What the exported macros name, so their callers need not depend on these crates.
#[doc(hidden)]
pub mod __private {
    pub use serde_json;
}

/// The names most programs need.
pub mod prelude {
    pub use crate::cartpole::{CartPole, CartPoleParams, Integrator};
    pub use crate::env::{Action, Env, EnvError, EnvSpec, Observation, Space, Transition};
    pub use crate::regime::{Origin, Plan, Regime, Scheduler, Shiftable};
    pub use crate::reward::{Breakdown, Ceiling, RewardSpec};
    pub use crate::vector::VectorEnv;
}
