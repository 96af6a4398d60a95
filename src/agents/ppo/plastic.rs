//! `ppo-plastic`: shrink-and-perturb after every update, against loss of plasticity.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::params::PpoParams;

/// Hyper-parameters of `ppo-plastic`, with their defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlasticParams {
    /// Plain PPO's parameters (`[agent.ppo-plastic.ppo]`, or `ppo.KEY=VALUE`).
    pub ppo: PpoParams,
    /// Fraction each weight shrinks towards zero after every update (1e-3): over 1,000
    /// windows the weights keep about 37% of what they would otherwise have.
    pub shrink: f32,
    /// Standard deviation of the noise added to each weight after every update (1e-3).
    pub noise: f32,
}

impl Default for PlasticParams {
    fn default() -> Self {
        PlasticParams {
            ppo: PpoParams::default(),
            shrink: 1e-3,
            noise: 1e-3,
        }
    }
}

/// Shrink-and-perturb (Ash and Adams 2020), applied a little on every window rather than at
/// task boundaries, since the agent is not told where those are.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Plastic {
    shrink: f32,
    noise: f32,
    applied: u64,
}

impl Plastic {
    pub(super) fn new(p: &PlasticParams) -> Result<Self, String> {
        if !(p.shrink.is_finite() && (0.0..1.0).contains(&p.shrink)) {
            return Err(format!("shrink is {}; give a number in [0, 1)", p.shrink));
        }
        if !(p.noise.is_finite() && p.noise >= 0.0) {
            return Err(format!("noise is {}; give a finite number >= 0", p.noise));
        }
        Ok(Plastic {
            shrink: p.shrink,
            noise: p.noise,
            applied: 0,
        })
    }

    /// `θ ← (1 - shrink) θ + noise · ε`, with ε of unit variance (uniform on ±√3).
    pub(super) fn apply(&mut self, params: &mut [f32], rng: &mut ChaCha8Rng) {
        self.applied += 1;
        let keep = 1.0 - self.shrink;
        let bound = 3f32.sqrt();
        for w in params.iter_mut() {
            *w *= keep;
            if self.noise > 0.0 {
                *w += self.noise * rng.random_range(-bound..=bound);
            }
        }
    }
}
