//! `ppo-replay`: a reservoir of past states and a behaviour-cloning term (CLEAR-style).

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::loss::softmax;
use super::net::{Cache, Mlp};
use super::normalizer::Normalizer;
use super::params::PpoParams;

/// Hyper-parameters of `ppo-replay`, with their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayParams {
    /// Plain PPO's parameters (`[agent.ppo-replay.ppo]`, or `ppo.KEY=VALUE`).
    pub ppo: PpoParams,
    /// States the reservoir keeps (20,000). Every state seen has the same chance of being
    /// in it (reservoir sampling), so it spans the whole run, not just the recent past.
    pub capacity: usize,
    /// Weight of the behaviour-cloning term (1.0): the KL divergence from the stored action
    /// distribution to the current one, on a replayed minibatch as large as the PPO one.
    pub bc_weight: f32,
}

impl Default for ReplayParams {
    fn default() -> Self {
        ReplayParams {
            ppo: PpoParams::default(),
            capacity: 20_000,
            bc_weight: 1.0,
        }
    }
}

/// The reservoir: raw observations and the action distributions the policy had for them.
///
/// Raw observations are kept, and normalised with the statistics in force when replayed,
/// because the target is the old policy's behaviour in that world state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Replay {
    capacity: usize,
    bc_weight: f32,
    dim: usize,
    n_actions: usize,
    seen: u64,
    obs: Vec<f32>,
    probs: Vec<f32>,
}

impl Replay {
    pub(super) fn new(p: &ReplayParams, dim: usize, n_actions: usize) -> Result<Self, String> {
        if p.capacity == 0 || p.capacity > 10_000_000 {
            return Err(format!(
                "capacity is {}; give 1 to 10,000,000 states",
                p.capacity
            ));
        }
        if !(p.bc_weight.is_finite() && p.bc_weight >= 0.0) {
            return Err(format!(
                "bc_weight is {}; give a finite number >= 0",
                p.bc_weight
            ));
        }
        Ok(Replay {
            capacity: p.capacity,
            bc_weight: p.bc_weight,
            dim,
            n_actions,
            seen: 0,
            obs: Vec::new(),
            probs: Vec::new(),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.obs.len() / self.dim.max(1)
    }

    pub(super) fn valid(&self) -> bool {
        self.obs.len() == self.len() * self.dim
            && self.probs.len() == self.len() * self.n_actions
            && self.len() <= self.capacity
    }

    /// Algorithm R: the `k`-th state seen replaces a random slot with probability
    /// `capacity / k`.
    pub(super) fn insert(&mut self, obs: &[f32], probs: &[f32], rng: &mut ChaCha8Rng) {
        self.seen += 1;
        let padded = obs
            .iter()
            .copied()
            .chain(std::iter::repeat(0.0))
            .take(self.dim);
        if self.len() < self.capacity {
            self.obs.extend(padded);
            self.probs.extend_from_slice(probs);
            return;
        }
        let slot = rng.random_range(0..self.seen);
        if let Ok(slot) = usize::try_from(slot)
            && slot < self.capacity
        {
            for (dst, src) in self.obs[slot * self.dim..(slot + 1) * self.dim]
                .iter_mut()
                .zip(padded)
            {
                *dst = src;
            }
            self.probs[slot * self.n_actions..(slot + 1) * self.n_actions].copy_from_slice(probs);
        }
    }

    /// Adds the gradient of `bc_weight · mean KL(stored ‖ current)` over `batch` replayed
    /// states to `grad`; returns that loss (0 while the reservoir is empty).
    #[expect(
        clippy::too_many_arguments,
        reason = "the pieces of the agent this term reads"
    )]
    pub(super) fn add_gradient(
        &self,
        policy: &Mlp,
        norm: &Normalizer,
        obs_clip: f32,
        batch: usize,
        rng: &mut ChaCha8Rng,
        cache: &mut Cache,
        grad: &mut [f32],
    ) -> f64 {
        let len = self.len();
        if len == 0 || self.bc_weight == 0.0 {
            return 0.0;
        }
        let na = self.n_actions;
        let mut x = Vec::with_capacity(batch * policy.input_dim());
        let mut picked = Vec::with_capacity(batch);
        for _ in 0..batch {
            let k = rng.random_range(0..len);
            norm.apply(
                &self.obs[k * self.dim..(k + 1) * self.dim],
                obs_clip,
                &mut x,
            );
            picked.push(k);
        }
        policy.forward_batch(&x, batch, cache);
        let mut d = vec![0.0; batch * na];
        let mut current = vec![0.0; na];
        let mut loss = 0.0f64;
        let scale = self.bc_weight / batch as f32;
        for (s, &k) in picked.iter().enumerate() {
            softmax(&cache.output()[s * na..(s + 1) * na], &mut current);
            let old = &self.probs[k * na..(k + 1) * na];
            for j in 0..na {
                if old[j] > 0.0 {
                    loss += f64::from(old[j] * (old[j].ln() - current[j].max(1e-30).ln()));
                }
                // d KL(old ‖ softmax(z)) / dz = softmax(z) - old.
                d[s * na + j] = scale * (current[j] - old[j]);
            }
        }
        policy.backward_batch(cache, &d, grad);
        f64::from(self.bc_weight) * loss / batch as f64
    }
}
