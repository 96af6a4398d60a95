//! `ppo-ewc`: online elastic weight consolidation over stretches the agent finds itself.

use serde::{Deserialize, Serialize};

use super::loss::softmax;
use super::net::{Cache, Mlp};
use super::params::PpoParams;

/// Hyper-parameters of `ppo-ewc`, with their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EwcParams {
    /// Plain PPO's parameters (`[agent.ppo-ewc.ppo]`, or `ppo.KEY=VALUE`).
    pub ppo: PpoParams,
    /// Strength λ of the pull `λ/2 Σ F_i (θ_i - θ*_i)²` (1.0). The Fisher diagonal is scaled
    /// to mean 1 at each consolidation, so λ is the stiffness of an average weight.
    pub lambda: f32,
    /// Online EWC's decay γ of the old Fisher information at each consolidation (0.9).
    pub decay: f32,
    /// Change-point threshold h of the two-sided CUSUM on window mean rewards, in standard
    /// deviations (8.0).
    pub threshold: f64,
    /// CUSUM drift allowance k, in standard deviations (0.5).
    pub drift: f64,
    /// Windows a stretch lasts at least before a change can end it (8); the reward
    /// statistics restart with every stretch.
    pub min_windows: u64,
    /// Smoothing rate of the reward statistics per window (0.05).
    pub rate: f64,
}

impl Default for EwcParams {
    fn default() -> Self {
        EwcParams {
            ppo: PpoParams::default(),
            lambda: 1.0,
            decay: 0.9,
            threshold: 8.0,
            drift: 0.5,
            min_windows: 8,
            rate: 0.05,
        }
    }
}

/// A two-sided CUSUM on a stream of window mean rewards, standardised by exponentially
/// weighted estimates of their mean and variance.
///
/// Learning itself moves the reward, so a steady improvement can also cut a stretch; that
/// only consolidates more often, which costs little.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeDetector {
    threshold: f64,
    drift: f64,
    min_windows: u64,
    rate: f64,
    windows: u64,
    mean: f64,
    var: f64,
    up: f64,
    down: f64,
}

impl ChangeDetector {
    /// A detector with threshold `h`, drift `k` (both in standard deviations), at least
    /// `min_windows` windows per stretch and smoothing `rate`.
    pub fn new(threshold: f64, drift: f64, min_windows: u64, rate: f64) -> Self {
        ChangeDetector {
            threshold,
            drift,
            min_windows: min_windows.max(2),
            rate,
            windows: 0,
            mean: 0.0,
            var: 0.0,
            up: 0.0,
            down: 0.0,
        }
    }

    /// Feeds one window's mean reward; true when it signals a change point, after which the
    /// statistics restart from this window.
    pub fn observe(&mut self, x: f64) -> bool {
        if !x.is_finite() {
            return false;
        }
        self.windows += 1;
        if self.windows == 1 {
            self.mean = x;
            self.var = 0.0;
            return false;
        }
        // The standard deviation has a floor relative to the level, so a reward that never
        // varied does not turn the first tiny change into an alarm.
        let sd = self.var.sqrt().max(1e-3 * (1.0 + self.mean.abs()));
        let z = (x - self.mean) / sd;
        let warm = self.windows > self.min_windows;
        if warm {
            self.up = (self.up + z - self.drift).max(0.0);
            self.down = (self.down - z - self.drift).max(0.0);
        }
        let d = x - self.mean;
        let rate = self.rate.max(1.0 / self.windows as f64);
        self.mean += rate * d;
        self.var = (1.0 - rate) * (self.var + rate * d * d);
        if warm && (self.up > self.threshold || self.down > self.threshold) {
            self.windows = 1;
            self.mean = x;
            self.up = 0.0;
            self.down = 0.0;
            return true;
        }
        false
    }
}

/// The anchor θ*, the accumulated Fisher diagonal F and the change detector.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Ewc {
    lambda: f32,
    decay: f32,
    detector: ChangeDetector,
    anchor: Vec<f32>,
    fisher: Vec<f32>,
    consolidations: u64,
}

impl Ewc {
    pub(super) fn new(p: &EwcParams) -> Result<Self, String> {
        if !(p.lambda.is_finite() && p.lambda >= 0.0) {
            return Err(format!("lambda is {}; give a finite number >= 0", p.lambda));
        }
        if !(p.decay.is_finite() && (0.0..=1.0).contains(&p.decay)) {
            return Err(format!("decay is {}; give a number in [0, 1]", p.decay));
        }
        for (name, v) in [("threshold", p.threshold), ("drift", p.drift)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} is {v}; give a finite number >= 0"));
            }
        }
        if !(p.rate.is_finite() && p.rate > 0.0 && p.rate <= 1.0) {
            return Err(format!("rate is {}; give a number in (0, 1]", p.rate));
        }
        Ok(Ewc {
            lambda: p.lambda,
            decay: p.decay,
            detector: ChangeDetector::new(p.threshold, p.drift, p.min_windows, p.rate),
            anchor: Vec::new(),
            fisher: Vec::new(),
            consolidations: 0,
        })
    }

    pub(super) fn consolidations(&self) -> u64 {
        self.consolidations
    }

    pub(super) fn valid(&self, params: usize) -> bool {
        self.anchor.len() == self.fisher.len()
            && (self.anchor.is_empty() || self.anchor.len() == params)
    }

    pub(super) fn observe_reward(&mut self, mean_reward: f64) -> bool {
        self.detector.observe(mean_reward)
    }

    /// Ends a stretch: the anchor becomes the current policy, and the Fisher diagonal
    /// (the mean squared gradient of `ln π(a|s)` over the window's states and actions,
    /// scaled to mean 1) is added to the decayed old one.
    pub(super) fn consolidate(
        &mut self,
        policy: &Mlp,
        inputs: &[f32],
        actions: &[usize],
        n_actions: usize,
    ) {
        let width = policy.input_dim();
        let n = actions.len().min(inputs.len() / width.max(1));
        let mut fresh = vec![0.0f32; policy.len()];
        let mut grad = vec![0.0f32; policy.len()];
        let mut cache = Cache::default();
        let mut probs = vec![0.0; n_actions];
        let mut d = vec![0.0; n_actions];
        // Per-sample gradients are needed for squares; at most 256 samples keep this cheap.
        let stride = n.div_ceil(256).max(1);
        let mut used = 0;
        for i in (0..n).step_by(stride) {
            policy.forward_batch(&inputs[i * width..(i + 1) * width], 1, &mut cache);
            softmax(cache.output(), &mut probs);
            for j in 0..n_actions {
                let onehot = if j == actions[i] { 1.0 } else { 0.0 };
                d[j] = onehot - probs[j];
            }
            grad.fill(0.0);
            policy.backward_batch(&mut cache, &d, &mut grad);
            for (f, g) in fresh.iter_mut().zip(&grad) {
                *f += g * g;
            }
            used += 1;
        }
        let mean = fresh.iter().sum::<f32>() / fresh.len().max(1) as f32;
        if used > 0 && mean > 0.0 && mean.is_finite() {
            for f in &mut fresh {
                *f /= mean;
            }
        }
        if self.fisher.len() != fresh.len() {
            self.fisher = vec![0.0; fresh.len()];
        }
        for (f, new) in self.fisher.iter_mut().zip(&fresh) {
            *f = self.decay * *f + new;
        }
        self.anchor = policy.params.clone();
        self.consolidations += 1;
    }

    /// `λ/2 Σ F (θ - θ*)²` (0 before the first consolidation).
    pub(super) fn penalty(&self, params: &[f32]) -> f64 {
        self.anchor
            .iter()
            .zip(&self.fisher)
            .zip(params)
            .map(|((a, f), p)| f64::from(*f) * f64::from(p - a).powi(2))
            .sum::<f64>()
            * f64::from(self.lambda)
            / 2.0
    }

    /// Adds the penalty's gradient `λ F (θ - θ*)` to `grad`; returns the penalty.
    pub(super) fn add_gradient(&self, params: &[f32], grad: &mut [f32]) -> f64 {
        if self.anchor.len() != params.len() {
            return 0.0;
        }
        for (((g, a), f), p) in grad
            .iter_mut()
            .zip(&self.anchor)
            .zip(&self.fisher)
            .zip(params)
        {
            *g += self.lambda * f * (p - a);
        }
        self.penalty(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detector_stays_quiet_on_a_stationary_noisy_reward() {
        let mut d = ChangeDetector::new(8.0, 0.5, 8, 0.05);
        let fired = (0..2000)
            .map(|i| 1.0 + 0.1 * ((i as f64) * 1.7).sin())
            .filter(|&x| d.observe(x))
            .count();
        assert_eq!(fired, 0);
    }

    #[test]
    fn detector_signals_a_drop_in_reward_within_a_few_windows() {
        let mut d = ChangeDetector::new(8.0, 0.5, 8, 0.05);
        for i in 0..100 {
            assert!(!d.observe(1.0 + 0.1 * ((i as f64) * 1.7).sin()));
        }
        let after = (0..20)
            .position(|i| d.observe(0.5 + 0.1 * ((i as f64) * 1.7).sin()))
            .expect("a drop of five standard deviations is detected");
        assert!(after < 5, "detected only after {after} windows");
    }
}
