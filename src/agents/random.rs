//! The random agent: uniform actions from the agent's own seeded stream.

use rand_chacha::ChaCha8Rng;

use crate::env::{Action, Env, Space};
use crate::harness::Agent;
use crate::seed::{self, Stream};

/// Picks actions uniformly at random from the action space. It never learns.
///
/// Its generator is the run's agent stream (`seed::rng(seed, Stream::Agent)`), so it does
/// not disturb the world's random events.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RandomAgent {
    space: Space,
    rng: ChaCha8Rng,
}

impl RandomAgent {
    /// A random agent over `space` for the run seeded with `seed`.
    ///
    /// # Panics
    ///
    /// `act` panics when the env's action type cannot live in `space` (e.g. a `usize`
    /// action with a `Box` space): pass the env's own `spec().action_space`.
    pub fn new(space: Space, seed: u64) -> Self {
        RandomAgent {
            space,
            rng: seed::rng(seed, Stream::Agent),
        }
    }
}

impl<E: Env + ?Sized> Agent<E> for RandomAgent {
    fn algorithm_id(&self) -> &str {
        "random"
    }

    fn act(&mut self, _obs: &E::Obs) -> E::Action {
        // The CLI and the world files only pair this agent with spaces its action type can
        // sample; anything else is a programming error worth stopping for.
        E::Action::sample(&self.space, &mut self.rng)
            .expect("the random agent's action type cannot be sampled from this action space")
    }

    fn reseed(&mut self, seed: u64) {
        self.rng = crate::seed::rng(seed, crate::seed::Stream::Agent);
    }

    crate::serde_agent_state!(space);
}
