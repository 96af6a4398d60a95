//! Baseline agents.

mod random;

pub use random::RandomAgent;
