//! PPO's clipped surrogate objective and the entropy bonus, with their gradients.

use super::kernel;

/// Softmax of `logits` into `probs` (overwritten), computed stably.
pub fn softmax(logits: &[f32], probs: &mut [f32]) {
    let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    for (p, z) in probs.iter_mut().zip(logits) {
        *p = z - max;
    }
    kernel::exp_in_place(probs);
    let total: f32 = probs.iter().sum();
    for p in probs.iter_mut() {
        *p /= total;
    }
}

/// `ln softmax(logits)[a]`, computed stably as `z_a - max - ln Σ e^(z - max)`.
pub fn log_prob(logits: &[f32], a: usize) -> f32 {
    let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = logits.iter().map(|z| kernel::exp(z - max)).sum();
    logits[a] - max - total.ln()
}

/// What one policy loss evaluation measured, summed over the batch (divide by its size for
/// means).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PolicyLoss {
    /// The clipped surrogate loss, `-min(r A, clip(r, 1-ε, 1+ε) A)` summed.
    pub surrogate: f64,
    /// The policy entropy summed.
    pub entropy: f64,
    /// Samples whose ratio left `[1-ε, 1+ε]`.
    pub clipped: usize,
    /// `(r - 1) - ln r` summed: an estimate of KL(old ‖ new) that is never negative.
    pub approx_kl: f64,
}

/// PPO's policy loss on a batch, and its gradient with respect to the logits.
///
/// For sample `i`, with `r = exp(ln π(a_i) - old_logp[i])` and advantage `A = adv[i]`, the
/// loss is `-min(r A, clip(r, 1-ε, 1+ε) A) - entropy_coef · H(π)`, averaged over the batch.
/// `d_logits` (`batch × n_actions`, overwritten) receives the gradient of that mean.
pub fn policy_loss(
    logits: &[f32],
    actions: &[usize],
    old_logp: &[f32],
    adv: &[f32],
    clip: f32,
    entropy_coef: f32,
    d_logits: &mut [f32],
) -> PolicyLoss {
    let batch = actions.len();
    let n = logits.len() / batch.max(1);
    let inv = 1.0 / batch.max(1) as f32;
    let mut out = PolicyLoss::default();
    // The exponentials of the whole batch in one vectorized pass, in `d_logits`, which each
    // row then overwrites with its gradient.
    let d_logits = &mut d_logits[..batch * n];
    for (d, z) in d_logits.chunks_exact_mut(n).zip(logits.chunks_exact(n)) {
        let max = z.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        for (d, z) in d.iter_mut().zip(z) {
            *d = z - max;
        }
    }
    kernel::exp_in_place(d_logits);
    for (i, (d, z)) in d_logits
        .chunks_exact_mut(n)
        .zip(logits.chunks_exact(n))
        .enumerate()
    {
        let max = z.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = d.iter().sum();
        let log_total = total.ln();
        // ln π_j = z_j - max - ln Σ; π_j = e^(z_j - max) / Σ, held in `d` for now.
        for p in d.iter_mut() {
            *p /= total;
        }
        let entropy: f32 = -d
            .iter()
            .zip(z)
            .map(|(p, z)| p * (z - max - log_total))
            .sum::<f32>();
        let a = actions[i];
        let logp = z[a] - max - log_total;
        let ratio = kernel::exp(logp - old_logp[i]);
        let a_i = adv[i];
        let clipped = ratio.clamp(1.0 - clip, 1.0 + clip);
        let (unclipped_obj, clipped_obj) = (ratio * a_i, clipped * a_i);
        out.surrogate -= f64::from(unclipped_obj.min(clipped_obj));
        if ratio != clipped {
            out.clipped += 1;
        }
        out.approx_kl += f64::from((ratio - 1.0) - (logp - old_logp[i]));
        out.entropy += f64::from(entropy);
        // The min picks the unclipped term exactly when its gradient flows.
        let d_logp = if unclipped_obj <= clipped_obj {
            -ratio * a_i
        } else {
            0.0
        };
        for (j, (d, z)) in d.iter_mut().zip(z).enumerate() {
            let p = *d;
            let onehot = if j == a { 1.0 } else { 0.0 };
            let d_ent = -p * (z - max - log_total + entropy);
            *d = (d_logp * (onehot - p) - entropy_coef * d_ent) * inv;
        }
    }
    out
}

/// Behaviour cloning on the rows of a batch where `taught[i]`: the cross-entropy
/// `-ln π(a_i)` of the action a teacher took, averaged over the whole batch (so a row weighs
/// as much as under [`policy_loss`]). Overwrites those rows of `d_logits` (`batch ×
/// n_actions`) with the gradient, `(π - onehot(a_i)) / batch`, and leaves the others.
/// Returns the cross-entropy and the policy entropy, each summed over the taught rows.
pub fn cloning_loss(
    logits: &[f32],
    actions: &[usize],
    taught: &[bool],
    d_logits: &mut [f32],
) -> (f64, f64) {
    let batch = actions.len();
    let n = logits.len() / batch.max(1);
    let inv = 1.0 / batch.max(1) as f32;
    let (mut cross_entropy, mut entropy) = (0.0f64, 0.0f64);
    for (i, (d, z)) in d_logits
        .chunks_exact_mut(n)
        .zip(logits.chunks_exact(n))
        .enumerate()
        .filter(|(i, _)| taught[*i])
    {
        softmax(z, d);
        let a = actions[i];
        cross_entropy -= f64::from(d[a].max(f32::MIN_POSITIVE).ln());
        entropy -= d
            .iter()
            .filter(|&&p| p > 0.0)
            .map(|&p| f64::from(p) * f64::from(p.ln()))
            .sum::<f64>();
        for (j, d) in d.iter_mut().enumerate() {
            let onehot = if j == a { 1.0 } else { 0.0 };
            *d = (*d - onehot) * inv;
        }
    }
    (cross_entropy, entropy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipped_loss_matches_a_hand_computed_batch() {
        // Two actions; logits (0, ln 3) give π = (1/4, 3/4).
        let logits = [0.0, 3f32.ln(), 0.0, 3f32.ln(), 0.0, 3f32.ln()];
        let actions = [1, 1, 0];
        // Old probabilities 1/2, 3/4 and 1/2: ratios 1.5, 1.0 and 0.5.
        let old = [0.5f32.ln(), 0.75f32.ln(), 0.5f32.ln()];
        let adv = [2.0, -1.0, -4.0];
        let mut d = [0.0; 6];
        let loss = policy_loss(&logits, &actions, &old, &adv, 0.2, 0.0, &mut d);
        // Sample 0: min(1.5·2, 1.2·2) = 2.4. Sample 1: min(-1, -1) = -1.
        // Sample 2: min(0.5·-4, 0.8·-4) = -3.2. Loss = -(2.4 - 1 - 3.2) = 1.8.
        assert!((loss.surrogate - 1.8).abs() < 1e-5, "{loss:?}");
        assert_eq!(loss.clipped, 2);
        // Sample 0 is clipped: no gradient. Sample 1: d/dz = -r·A·(onehot - π) / 3.
        assert_eq!(&d[..2], &[0.0, 0.0]);
        assert!(
            (d[2] - (-(1.0) * -1.0 * (0.0 - 0.25) / 3.0)).abs() < 1e-6,
            "{d:?}"
        );
        assert!(
            (d[3] - (-(1.0) * -1.0 * (1.0 - 0.75) / 3.0)).abs() < 1e-6,
            "{d:?}"
        );
        // Sample 2: the unclipped term is the min (-2 < -3.2 is false): clipped, no gradient.
        assert_eq!(&d[4..], &[0.0, 0.0]);
    }

    #[test]
    fn loss_gradient_matches_finite_differences_with_an_entropy_bonus() {
        let logits = [0.3f32, -0.2, 0.5, 1.0, 0.1, -0.7];
        let actions = [2, 0];
        let old = [-1.2f32, -0.9];
        let adv = [0.7f32, -0.4];
        let mut d = [0.0; 6];
        policy_loss(&logits, &actions, &old, &adv, 0.2, 0.05, &mut d);
        let total = |z: &[f32]| {
            let mut scratch = [0.0; 6];
            let l = policy_loss(z, &actions, &old, &adv, 0.2, 0.05, &mut scratch);
            (l.surrogate - 0.05 * l.entropy) / 2.0
        };
        for k in 0..6 {
            let (mut plus, mut minus) = (logits, logits);
            plus[k] += 1e-3;
            minus[k] -= 1e-3;
            let numeric = (total(&plus) - total(&minus)) / 2e-3;
            assert!(
                (numeric - f64::from(d[k])).abs() < 1e-3,
                "logit {k}: numeric {numeric}, analytic {}",
                d[k]
            );
        }
    }
}
