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
}
