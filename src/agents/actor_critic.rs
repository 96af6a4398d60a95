//! A linear actor-critic that learns from rollout windows: the baseline learner for discrete worlds.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::env::{Env, Observation};
use crate::harness::{Agent, Window};
use crate::seed::{self, Stream};

/// Hyper-parameters of [`ActorCritic`], with their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ActorCriticParams {
    /// Discount factor (0.99).
    pub gamma: f64,
    /// GAE's λ, the bias/variance trade-off of the advantage (0.95).
    pub lambda: f64,
    /// Policy step size (0.2).
    pub actor_lr: f64,
    /// Value step size (0.1).
    pub critic_lr: f64,
    /// Entropy bonus weight, keeps exploring after a shift (0.01).
    pub entropy: f64,
}

impl Default for ActorCriticParams {
    fn default() -> Self {
        ActorCriticParams {
            gamma: 0.99,
            lambda: 0.95,
            actor_lr: 0.2,
            critic_lr: 0.1,
            entropy: 0.01,
        }
    }
}

/// A softmax policy and a state-value critic, both linear in normalised observations.
///
/// Features are the observation, clipped to ±5, plus a bias: worlds should emit observations
/// of order one (CartPole's and the enterprise world's do). Running normalisation was tried
/// and dropped: as the policy improves the observation spread shrinks, the normalised
/// features grow, and the policy it had learned falls apart. At each window boundary the agent computes generalised
/// advantage estimates (GAE) over the window, bootstrapping with the critic where the
/// window or a truncated episode cuts the return short and using 0 after a terminal state,
/// normalises them, and takes one gradient step for the actor (policy gradient with the
/// critic as baseline, plus an entropy bonus) and one for the critic (towards the λ-return).
/// Because it keeps learning on every window and never anneals, it re-adapts after a
/// regime shift. It needs no tensor library.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ActorCritic {
    params: ActorCriticParams,
    n_actions: usize,
    dim: usize,
    /// Policy weights, `n_actions × (dim + 1)`, row-major.
    theta: Vec<f64>,
    /// Critic weights, `dim + 1`.
    w: Vec<f64>,
    rng: ChaCha8Rng,
    #[serde(skip)]
    scratch: Vec<f64>,
}

impl ActorCritic {
    /// A learner for observations of length `obs_dim` and `n_actions` discrete actions, for
    /// the run seeded with `seed` (its sampling uses the agent stream).
    pub fn new(obs_dim: usize, n_actions: usize, params: ActorCriticParams, seed: u64) -> Self {
        ActorCritic {
            params,
            n_actions: n_actions.max(1),
            dim: obs_dim,
            theta: vec![0.0; n_actions.max(1) * (obs_dim + 1)],
            w: vec![0.0; obs_dim + 1],
            rng: seed::rng(seed, Stream::Agent),
            scratch: Vec::new(),
        }
    }

    fn features(&self, obs: &[f32], out: &mut Vec<f64>) {
        out.clear();
        out.extend(
            obs.iter()
                .take(self.dim)
                .map(|&v| f64::from(v).clamp(-5.0, 5.0)),
        );
        out.resize(self.dim, 0.0);
        out.push(1.0);
    }

    fn policy(&self, phi: &[f64], probs: &mut Vec<f64>) {
        probs.clear();
        let stride = self.dim + 1;
        for a in 0..self.n_actions {
            let row = &self.theta[a * stride..(a + 1) * stride];
            probs.push(row.iter().zip(phi).map(|(t, x)| t * x).sum());
        }
        let max = probs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let mut total = 0.0;
        for p in probs.iter_mut() {
            *p = (*p - max).exp();
            total += *p;
        }
        for p in probs.iter_mut() {
            *p /= total;
        }
    }

    fn value(&self, phi: &[f64]) -> f64 {
        self.w.iter().zip(phi).map(|(w, x)| w * x).sum()
    }

    fn sample(&mut self, obs: &[f32]) -> usize {
        let mut phi = std::mem::take(&mut self.scratch);
        self.features(obs, &mut phi);
        let mut probs = Vec::with_capacity(self.n_actions);
        self.policy(&phi, &mut probs);
        self.scratch = phi;
        let u: f64 = self.rng.random();
        let mut acc = 0.0;
        for (a, p) in probs.iter().enumerate() {
            acc += p;
            if u < acc {
                return a;
            }
        }
        self.n_actions - 1
    }

    fn learn<O: Observation>(&mut self, window: &Window<O, usize>) {
        let n = window.len();
        if n == 0 {
            return;
        }
        let p = self.params.clone();
        let mut phis: Vec<Vec<f64>> = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        let mut next_values = Vec::with_capacity(n);
        let mut phi_next = Vec::new();
        for i in 0..n {
            let mut phi = Vec::new();
            self.features(window.obs[i].as_slice(), &mut phi);
            values.push(self.value(&phi));
            phis.push(phi);
            self.features(window.next_obs[i].as_slice(), &mut phi_next);
            next_values.push(if window.terminated[i] {
                0.0
            } else {
                self.value(&phi_next)
            });
        }
        let mut adv = vec![0.0; n];
        let mut gae = 0.0;
        for i in (0..n).rev() {
            let delta = window.rewards[i] + p.gamma * next_values[i] - values[i];
            let cut = window.terminated[i] || window.truncated[i];
            gae = delta + if cut { 0.0 } else { p.gamma * p.lambda * gae };
            adv[i] = gae;
        }
        let returns: Vec<f64> = adv.iter().zip(&values).map(|(a, v)| a + v).collect();
        let mean = adv.iter().sum::<f64>() / n as f64;
        let std = (adv.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let stride = self.dim + 1;
        let mut grad_theta = vec![0.0; self.theta.len()];
        let mut grad_w = vec![0.0; self.w.len()];
        let mut probs = Vec::with_capacity(self.n_actions);
        for i in 0..n {
            let a_taken = window.actions[i].min(self.n_actions - 1);
            let phi = &phis[i];
            self.policy(phi, &mut probs);
            let norm_adv = (adv[i] - mean) / (std + 1e-8);
            let entropy: f64 = -probs
                .iter()
                .map(|q| if *q > 0.0 { q * q.ln() } else { 0.0 })
                .sum::<f64>();
            for a in 0..self.n_actions {
                let indicator = if a == a_taken { 1.0 } else { 0.0 };
                let log_grad = indicator - probs[a];
                let ent_grad = -probs[a] * (probs[a].max(1e-12).ln() + entropy);
                let coeff = norm_adv * log_grad + p.entropy * ent_grad;
                for (g, x) in grad_theta[a * stride..(a + 1) * stride].iter_mut().zip(phi) {
                    *g += coeff * x;
                }
            }
            let err = (returns[i] - values[i]).clamp(-10.0, 10.0);
            for (g, x) in grad_w.iter_mut().zip(phi) {
                *g += err * x;
            }
        }
        let scale = 1.0 / n as f64;
        for (t, g) in self.theta.iter_mut().zip(&grad_theta) {
            *t += p.actor_lr * g * scale;
        }
        for (w, g) in self.w.iter_mut().zip(&grad_w) {
            *w += p.critic_lr * g * scale;
        }
    }
}

impl<E> Agent<E> for ActorCritic
where
    E: Env<Action = usize> + ?Sized,
{
    fn algorithm_id(&self) -> &str {
        "actor-critic"
    }

    fn act(&mut self, obs: &E::Obs) -> usize {
        self.sample(obs.as_slice())
    }

    fn update(&mut self, window: &Window<E::Obs, usize>) {
        self.learn(window);
    }

    fn reseed(&mut self, seed: u64) {
        self.rng = crate::seed::rng(seed, crate::seed::Stream::Agent);
    }

    crate::serde_agent_state!(n_actions, dim, theta.len(), w.len());
}
