//! Baseline agents: random, hand-written policies for each built-in world, and a learner.
//!
//! | name (`--agent`) | type | worlds | learns |
//! |---|---|---|---|
//! | `random` | [`RandomAgent`] | any | no |
//! | `balance` | [`BalanceAgent`] | CartPole | no |
//! | `base-stock` | [`BaseStockAgent`] | enterprise world | no |
//! | `adaptive-base-stock` | [`AdaptiveBaseStock`] | enterprise world | yes, its stock levels, on every window |
//! | `actor-critic` | [`ActorCritic`] | any with a `Discrete` action space | yes, on every window |
//! | `ppo`, `ppo-replay`, `ppo-ewc`, `ppo-context`, `ppo-plastic` | [`Ppo`] | any with a `Discrete` action space | yes, on every window (see [`ppo`]) |

mod actor_critic;
mod balance;
mod base_stock;
pub mod ppo;
mod random;

pub use actor_critic::{ActorCritic, ActorCriticParams};
pub use balance::BalanceAgent;
pub use base_stock::{AdaptiveBaseStock, AdaptiveParams, BaseStockAgent, BaseStockParams};
pub use ppo::{ContextParams, EwcParams, PlasticParams, Ppo, PpoParams, ReplayParams, UpdateStats};
pub use random::RandomAgent;
