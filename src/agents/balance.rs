//! A hand-written CartPole controller: push towards the side the pole is falling to.

use crate::cartpole::CartPole;
use crate::harness::Agent;

/// Pushes right when `theta + k * theta_dot > 0`, left otherwise. It never learns.
///
/// With the default gain `k = 0.5` it keeps CartPole-v1's pole up for the full 500 steps
/// from most starts; it is the upper reference for CartPole experiments. Under heavier
/// gravity or a longer pole its fixed gain is no longer right, which is the point of a
/// regime experiment.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct BalanceAgent {
    /// Weight of the angular velocity against the angle (0.5).
    pub gain: f32,
}

impl Default for BalanceAgent {
    fn default() -> Self {
        BalanceAgent { gain: 0.5 }
    }
}

impl Agent<CartPole> for BalanceAgent {
    fn algorithm_id(&self) -> &str {
        "balance"
    }

    fn act(&mut self, obs: &[f32; 4]) -> usize {
        usize::from(obs[2] + self.gain * obs[3] > 0.0)
    }

    crate::serde_agent_state!();
}
