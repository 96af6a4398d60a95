//! Running observation statistics (mean and variance), for normalising inputs.

use serde::{Deserialize, Serialize};

/// Per-dimension running mean and variance, merged a batch at a time (Chan et al.'s parallel
/// update), in `f64` so long runs do not drift.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Normalizer {
    count: f64,
    mean: Vec<f64>,
    m2: Vec<f64>,
    /// `1 / std` per dimension, cached in `f32` for the per-step path.
    inv_std: Vec<f32>,
    mean_f32: Vec<f32>,
}

impl Normalizer {
    /// Statistics for `dim` dimensions; until the first update it leaves inputs unchanged.
    pub fn new(dim: usize) -> Self {
        Normalizer {
            count: 0.0,
            mean: vec![0.0; dim],
            m2: vec![0.0; dim],
            inv_std: vec![1.0; dim],
            mean_f32: vec![0.0; dim],
        }
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// Merges `rows` (each of length `dim`) into the statistics.
    pub fn update<'a>(&mut self, rows: impl Iterator<Item = &'a [f32]>) {
        let dim = self.mean.len();
        let mut n = 0.0;
        let mut mean = vec![0.0; dim];
        let mut m2 = vec![0.0; dim];
        for row in rows {
            n += 1.0;
            for (k, &x) in row.iter().take(dim).enumerate() {
                let x = f64::from(x);
                let d = x - mean[k];
                mean[k] += d / n;
                m2[k] += d * (x - mean[k]);
            }
        }
        if n == 0.0 {
            return;
        }
        let total = self.count + n;
        for k in 0..dim {
            let d = mean[k] - self.mean[k];
            self.mean[k] += d * n / total;
            self.m2[k] += m2[k] + d * d * self.count * n / total;
            let var = self.m2[k] / total;
            self.inv_std[k] = (1.0 / (var + 1e-8).sqrt()) as f32;
            self.mean_f32[k] = self.mean[k] as f32;
        }
        self.count = total;
    }

    /// Writes the normalised `x`, clipped to ±`clip`, into `out` (appending).
    pub fn apply(&self, x: &[f32], clip: f32, out: &mut Vec<f32>) {
        out.extend(
            x.iter()
                .zip(&self.mean_f32)
                .zip(&self.inv_std)
                .map(|((x, m), s)| ((x - m) * s).clamp(-clip, clip)),
        );
        // A short observation is padded so the network's input width never changes.
        out.extend(std::iter::repeat_n(
            0.0,
            self.mean.len().saturating_sub(x.len()),
        ));
    }
}

/// The running variance of the discounted return `G ← γ G + r` (restarted after each
/// episode), for dividing rewards by its standard deviation, as Gymnasium's
/// `NormalizeReward` does: the rewards keep their sign and their ratios, and the value
/// targets stay near unit scale whatever the world's reward units.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReturnScale {
    count: f64,
    mean: f64,
    m2: f64,
    ret: f64,
}

/// Scaled rewards are clipped to ±this.
const REWARD_CLIP: f64 = 10.0;

impl ReturnScale {
    /// Merges the discounted returns of `rewards` (`ends(i)`: an episode ends at step `i`)
    /// into the statistics, then writes `rewards / std`, clipped to ±10, into `out`.
    pub fn scale(
        &mut self,
        rewards: &[f64],
        ends: impl Fn(usize) -> bool,
        gamma: f64,
        out: &mut Vec<f64>,
    ) {
        for (i, &r) in rewards.iter().enumerate() {
            self.ret = self.ret * gamma + r;
            self.count += 1.0;
            let d = self.ret - self.mean;
            self.mean += d / self.count;
            self.m2 += d * (self.ret - self.mean);
            if ends(i) {
                self.ret = 0.0;
            }
        }
        let var = if self.count > 1.0 {
            self.m2 / self.count
        } else {
            1.0
        };
        let inv = 1.0 / (var + 1e-8).sqrt();
        out.clear();
        out.extend(
            rewards
                .iter()
                .map(|r| (r * inv).clamp(-REWARD_CLIP, REWARD_CLIP)),
        );
    }

    /// Whether the statistics are numbers a run could have produced.
    pub fn valid(&self) -> bool {
        [self.count, self.mean, self.m2, self.ret]
            .iter()
            .all(|v| v.is_finite())
            && self.count >= 0.0
            && self.m2 >= 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_statistics_equal_the_statistics_of_all_rows() {
        let rows: Vec<[f32; 2]> = (0..50)
            .map(|i| [i as f32, (i as f32 * 0.3).sin() * 4.0 + 1.0])
            .collect();
        let mut whole = Normalizer::new(2);
        whole.update(rows.iter().map(|r| r.as_slice()));
        let mut parts = Normalizer::new(2);
        parts.update(rows[..17].iter().map(|r| r.as_slice()));
        parts.update(rows[17..].iter().map(|r| r.as_slice()));
        for k in 0..2 {
            assert!((whole.mean[k] - parts.mean[k]).abs() < 1e-9);
            assert!((whole.m2[k] - parts.m2[k]).abs() < 1e-6);
        }
        let mut out = Vec::new();
        whole.apply(&[24.5, 1.0], 10.0, &mut out);
        assert!(out[0].abs() < 1e-5, "{out:?}");
    }

    #[test]
    fn scaled_rewards_keep_their_sign_and_have_a_unit_scale_return() {
        // Returns of a reward of 100 per step over episodes of 10 steps, γ = 0.9.
        let rewards = vec![100.0; 1000];
        let mut scale = ReturnScale::default();
        let mut out = Vec::new();
        scale.scale(&rewards, |i| i % 10 == 9, 0.9, &mut out);
        let returns: Vec<f64> = (0..10)
            .map(|k| 100.0 * (1.0 - 0.9f64.powi(k + 1)) / 0.1)
            .collect();
        let mean = returns.iter().sum::<f64>() / 10.0;
        let var = returns.iter().map(|g| (g - mean) * (g - mean)).sum::<f64>() / 10.0;
        assert!((out[0] - 100.0 / var.sqrt()).abs() < 1e-9, "{}", out[0]);
        assert!(out.iter().all(|&r| r == out[0]));
        scale.scale(&[-1e12], |_| true, 0.9, &mut out);
        assert_eq!(out, [-REWARD_CLIP]);
        assert!(scale.valid());
    }
}
