//! `ppo-context`: the networks also see a statistical summary of the last `k` transitions.

use serde::{Deserialize, Serialize};

use super::params::PpoParams;

/// Hyper-parameters of `ppo-context`, with their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextParams {
    /// Plain PPO's parameters (`[agent.ppo-context.ppo]`, or `ppo.KEY=VALUE`).
    pub ppo: PpoParams,
    /// Transitions the summary covers (32).
    pub k: usize,
}

impl Default for ContextParams {
    fn default() -> Self {
        ContextParams {
            ppo: PpoParams::default(),
            k: 32,
        }
    }
}

/// The latent context: over the last `k` transitions, the mean and the mean absolute value
/// of the change in the normalised observation, per dimension (`2 × obs_dim` numbers).
///
/// How the observation moves from step to step is how a shift in a world's dynamics shows
/// itself (heavier gravity makes the pole's angular velocity change faster), and it is known
/// when the agent acts, unlike the reward, which arrives with the window. The env's
/// observation is unchanged; the summary is appended to the network input only. A reset
/// between episodes counts as one ordinary transition, since the agent cannot tell it apart.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Context {
    k: usize,
    dim: usize,
    prev: Vec<f32>,
    /// The last `k` changes, a ring of `k × dim`.
    ring: Vec<f32>,
    next: usize,
    filled: usize,
    sum: Vec<f64>,
    abs_sum: Vec<f64>,
    current: Vec<f32>,
    /// The context each step of the current window was acted on with, row by row, so the
    /// update sees exactly what the policy saw.
    log: Vec<f32>,
}

impl Context {
    pub(super) fn new(p: &ContextParams, dim: usize) -> Result<Self, String> {
        if p.k == 0 || p.k > 100_000 {
            return Err(format!("k is {}; give 1 to 100,000 transitions", p.k));
        }
        Ok(Context {
            k: p.k,
            dim,
            prev: Vec::new(),
            ring: vec![0.0; p.k * dim],
            next: 0,
            filled: 0,
            sum: vec![0.0; dim],
            abs_sum: vec![0.0; dim],
            current: vec![0.0; 2 * dim],
            log: Vec::new(),
        })
    }

    pub(super) fn width(&self) -> usize {
        2 * self.dim
    }

    pub(super) fn valid(&self) -> bool {
        self.ring.len() == self.k * self.dim
            && self.sum.len() == self.dim
            && self.abs_sum.len() == self.dim
            && self.current.len() == 2 * self.dim
            && self.log.len().is_multiple_of((2 * self.dim).max(1))
            && self.next < self.k.max(1)
            && (self.prev.is_empty() || self.prev.len() == self.dim)
    }

    pub(super) fn current(&self) -> &[f32] {
        &self.current
    }

    pub(super) fn logged(&self, step: usize) -> &[f32] {
        let w = self.width();
        self.log
            .get(step * w..(step + 1) * w)
            .unwrap_or(&self.current)
    }

    /// Takes in the normalised observation about to be acted on.
    pub(super) fn observe(&mut self, obs: &[f32]) {
        if self.prev.len() == self.dim {
            let slot = &mut self.ring[self.next * self.dim..(self.next + 1) * self.dim];
            for j in 0..self.dim {
                let delta = obs[j] - self.prev[j];
                if self.filled == self.k {
                    self.sum[j] -= f64::from(slot[j]);
                    self.abs_sum[j] -= f64::from(slot[j].abs());
                }
                slot[j] = delta;
                self.sum[j] += f64::from(delta);
                self.abs_sum[j] += f64::from(delta.abs());
            }
            self.next = (self.next + 1) % self.k;
            self.filled = (self.filled + 1).min(self.k);
            let n = self.filled as f64;
            for j in 0..self.dim {
                self.current[j] = (self.sum[j] / n) as f32;
                self.current[self.dim + j] = (self.abs_sum[j] / n) as f32;
            }
        }
        self.prev.clear();
        self.prev.extend_from_slice(obs);
    }

    pub(super) fn log_current(&mut self) {
        self.log.extend_from_slice(&self.current);
    }

    pub(super) fn clear_log(&mut self) {
        self.log.clear();
    }
}
