//! Baseline agents: random, a hand-written CartPole controller, and a learner.
//!
//! | name (`--agent`) | type | worlds | learns |
//! |---|---|---|---|
//! | `random` | [`RandomAgent`] | any | no |
//! | `balance` | [`BalanceAgent`] | CartPole | no |
//! | `actor-critic` | [`ActorCritic`] | any with a `Discrete` action space | yes, on every window |

mod actor_critic;
mod balance;
mod random;

pub use actor_critic::{ActorCritic, ActorCriticParams};
pub use balance::BalanceAgent;
pub use random::RandomAgent;
