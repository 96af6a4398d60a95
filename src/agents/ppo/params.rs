//! The hyper-parameters of plain PPO, shared by every family, and their checks.

use serde::{Deserialize, Serialize};

/// Hyper-parameters of plain PPO, shared by every family, with their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PpoParams {
    /// Hidden layer widths of both networks ([64, 64]).
    pub hidden: Vec<usize>,
    /// Adam step size of both networks (3e-4).
    pub lr: f32,
    /// Discount factor (0.99).
    pub gamma: f64,
    /// GAE's λ (0.95).
    pub lambda: f64,
    /// PPO's clip range ε (0.2).
    pub clip: f32,
    /// Passes over each window (4). Ten passes learn CartPole in fewer steps but cost 2.5
    /// times as much per step; four reach CartPole's 475 within 300,000 steps on every seed
    /// measured (BENCHMARKS.md).
    pub epochs: usize,
    /// Minibatch size (64); a window shorter than this is one minibatch.
    pub minibatch: usize,
    /// Entropy bonus weight (0.0).
    pub entropy_coef: f32,
    /// Global gradient-norm limit per network (0.5; 0 turns clipping off).
    pub max_grad_norm: f32,
    /// Normalised observations are clipped to ±this (10).
    pub obs_clip: f32,
    /// Divide rewards by the running standard deviation of the discounted return before
    /// computing advantages, clipped to ±10, as Gymnasium's `NormalizeReward` (false: the
    /// world's rewards as they are).
    pub scale_rewards: bool,
    /// Measure the policy network's plasticity after every update, for the events table
    /// (true; see [`crate::trace::Plasticity`]).
    pub diagnostics: bool,
    /// τ of the dormant-unit fraction (0.025).
    pub dormant_tau: f64,
    /// δ of the effective rank `srank_δ` (0.01).
    pub rank_delta: f64,
}

impl Default for PpoParams {
    fn default() -> Self {
        PpoParams {
            hidden: vec![64, 64],
            lr: 3e-4,
            gamma: 0.99,
            lambda: 0.95,
            clip: 0.2,
            epochs: 4,
            minibatch: 64,
            entropy_coef: 0.0,
            max_grad_norm: 0.5,
            obs_clip: 10.0,
            scale_rewards: false,
            diagnostics: true,
            dormant_tau: 0.025,
            rank_delta: 0.01,
        }
    }
}

impl PpoParams {
    pub(super) fn check(&self) -> Result<(), String> {
        let finite_pos = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} is {v}; give a positive finite number"))
            }
        };
        finite_pos("lr", f64::from(self.lr))?;
        finite_pos("clip", f64::from(self.clip))?;
        finite_pos("obs_clip", f64::from(self.obs_clip))?;
        for (name, v) in [("gamma", self.gamma), ("lambda", self.lambda)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{name} is {v}; give a number in [0, 1]"));
            }
        }
        for (name, v) in [
            ("entropy_coef", self.entropy_coef),
            ("max_grad_norm", self.max_grad_norm),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} is {v}; give a finite number >= 0"));
            }
        }
        for (name, v) in [
            ("dormant_tau", self.dormant_tau),
            ("rank_delta", self.rank_delta),
        ] {
            if !(0.0..1.0).contains(&v) {
                return Err(format!("{name} is {v}; give a number in [0, 1)"));
            }
        }
        use crate::limits::{MAX_EPOCHS, MAX_HIDDEN_WEIGHTS};
        if self.epochs == 0 || self.minibatch == 0 {
            return Err("epochs and minibatch must be at least 1".into());
        }
        if self.epochs > MAX_EPOCHS {
            return Err(format!(
                "epochs is {}; use at most {MAX_EPOCHS} passes over each window",
                self.epochs
            ));
        }
        if self.hidden.contains(&0)
            || self.hidden.len() > 8
            || self.hidden.iter().any(|&h| h > 4096)
        {
            return Err(format!(
                "hidden is {:?}; give at most 8 layer widths, each from 1 to 4096",
                self.hidden
            ));
        }
        let weights: usize = self.hidden.windows(2).map(|w| w[0] * w[1]).sum();
        if weights > MAX_HIDDEN_WEIGHTS {
            return Err(format!(
                "hidden is {:?}: {weights} weights between its layers; use at most {MAX_HIDDEN_WEIGHTS} (e.g. [2048, 2048]), or the networks do not fit in memory",
                self.hidden
            ));
        }
        Ok(())
    }
}
