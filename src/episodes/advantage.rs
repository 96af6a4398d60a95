//! Advantage estimators over groups of trajectories of one task and role.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::model::Episode;

/// Added to GRPO's standard deviation so a group of near-equal rewards does not divide by 0.
pub const GRPO_EPSILON: f64 = 1e-6;

/// How a trajectory's advantage is computed from its group's rewards.
///
/// A group is every trajectory with one key `"{task_id}:{name}"`
/// ([`Episode::group_key`]); n is its size, mean and std the mean and *population*
/// standard deviation of its rewards r.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum AdvantageEstimator {
    /// (r - mean) / (std + 1e-6); a group of one uses mean 0 and std 1.
    Grpo,
    /// Leave-one-out: n / (n - 1) * (r - mean), i.e. r minus the mean of the others; r
    /// for a group of one.
    Rloo,
    /// r itself.
    Reinforce,
}

impl AdvantageEstimator {
    /// The name used on the command line and in JSON, e.g. `grpo`.
    pub fn as_str(self) -> &'static str {
        match self {
            AdvantageEstimator::Grpo => "grpo",
            AdvantageEstimator::Rloo => "rloo",
            AdvantageEstimator::Reinforce => "reinforce",
        }
    }

    /// The advantage of each reward of one group, in order.
    ///
    /// A group of two or more whose rewards are all equal gets exactly 0 from `grpo` and
    /// `rloo`: the formulas give 0 there, but a mean computed in floating point can miss
    /// the common value by an ulp, which GRPO's 1e-6 divisor would blow up to ~1e-11.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::episodes::AdvantageEstimator;
    ///
    /// // mean 2, population std 1
    /// assert_eq!(AdvantageEstimator::Rloo.advantages(&[1.0, 3.0]), vec![-2.0, 2.0]);
    /// let grpo = AdvantageEstimator::Grpo.advantages(&[1.0, 3.0]);
    /// assert!((grpo[0] + 1.0 / (1.0 + 1e-6)).abs() < 1e-15);
    /// ```
    pub fn advantages(self, rewards: &[f64]) -> Vec<f64> {
        let n = rewards.len();
        if self == AdvantageEstimator::Reinforce {
            return rewards.to_vec();
        }
        if n == 1 {
            return match self {
                AdvantageEstimator::Grpo => vec![rewards[0] / (1.0 + GRPO_EPSILON)],
                _ => rewards.to_vec(),
            };
        }
        let flat = rewards.windows(2).all(|w| w[0] == w[1]);
        if flat {
            return vec![0.0; n];
        }
        let mean = rewards.iter().sum::<f64>() / n as f64;
        match self {
            AdvantageEstimator::Grpo => {
                let var = rewards.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / n as f64;
                let scale = var.sqrt() + GRPO_EPSILON;
                rewards.iter().map(|r| (r - mean) / scale).collect()
            }
            _ => {
                let factor = n as f64 / (n - 1) as f64;
                rewards.iter().map(|r| factor * (r - mean)).collect()
            }
        }
    }
}

impl std::fmt::Display for AdvantageEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Trajectory rewards in arrival order, each tagged with its group; holds no steps.
#[derive(Debug, Default)]
pub(crate) struct GroupedRewards {
    keys: Vec<String>,
    index: HashMap<String, usize>,
    members: Vec<(usize, f64)>,
}

impl GroupedRewards {
    /// Records every trajectory of `episode`.
    pub(crate) fn push_episode(&mut self, episode: &Episode) {
        for t in &episode.trajectories {
            let key = episode.group_key(&t.name);
            let g = match self.index.get(&key) {
                Some(&g) => g,
                None => {
                    self.keys.push(key.clone());
                    self.index.insert(key, self.keys.len() - 1);
                    self.keys.len() - 1
                }
            };
            self.members.push((g, t.reward));
        }
    }

    /// Per group key: trajectory count and reward sum.
    pub(crate) fn totals(&self) -> Vec<(&str, u64, f64)> {
        let mut totals: Vec<(&str, u64, f64)> =
            self.keys.iter().map(|k| (k.as_str(), 0, 0.0)).collect();
        for &(g, r) in &self.members {
            totals[g].1 += 1;
            totals[g].2 += r;
        }
        totals
    }

    /// Each recorded trajectory's advantage, in the order they were recorded.
    pub(crate) fn advantages(&self, estimator: AdvantageEstimator) -> Vec<f64> {
        let mut per_group: Vec<Vec<f64>> = vec![Vec::new(); self.keys.len()];
        for &(g, r) in &self.members {
            per_group[g].push(r);
        }
        let per_group: Vec<Vec<f64>> = per_group
            .iter()
            .map(|rewards| estimator.advantages(rewards))
            .collect();
        let mut next = vec![0usize; self.keys.len()];
        self.members
            .iter()
            .map(|&(g, _)| {
                let a = per_group[g][next[g]];
                next[g] += 1;
                a
            })
            .collect()
    }
}

/// Computes advantages for episodes held in memory and broadcasts each to its
/// trajectory's steps. Groups span the whole slice.
///
/// For exports larger than memory, [`export`](super::export) does the same in two
/// streaming passes.
pub fn assign_advantages(episodes: &mut [Episode], estimator: AdvantageEstimator) {
    let mut groups = GroupedRewards::default();
    for e in episodes.iter() {
        groups.push_episode(e);
    }
    let mut advantages = groups.advantages(estimator).into_iter();
    for t in episodes.iter_mut().flat_map(|e| e.trajectories.iter_mut()) {
        if let Some(a) = advantages.next() {
            t.broadcast_advantage(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AdvantageEstimator::{Grpo, Reinforce, Rloo};

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn grpo_standardizes_with_the_population_std() {
        // r = [1, 2, 3, 6]: mean 3; deviations -2, -1, 0, 3; squares 4 + 1 + 0 + 9 = 14;
        // population variance 14 / 4 = 3.5, std = sqrt(3.5) = 1.8708286933869707.
        let s = 3.5f64.sqrt() + 1e-6;
        assert!(close(
            &Grpo.advantages(&[1.0, 2.0, 3.0, 6.0]),
            &[-2.0 / s, -1.0 / s, 0.0, 3.0 / s]
        ));
    }

    #[test]
    fn grpo_group_of_one_uses_mean_zero_std_one() {
        // (5 - 0) / (1 + 1e-6) = 4.999995000005
        assert!(close(&Grpo.advantages(&[5.0]), &[4.999995000005]));
    }

    #[test]
    fn equal_rewards_give_exactly_zero() {
        // 0.1 * 3 sums to 0.30000000000000004, so the computed mean is not 0.1; the
        // formula's true value, 0 / (0 + 1e-6) = 0, is returned exactly.
        assert_eq!(Grpo.advantages(&[0.1, 0.1, 0.1]), vec![0.0; 3]);
        assert_eq!(Rloo.advantages(&[0.1, 0.1, 0.1]), vec![0.0; 3]);
        assert_eq!(Reinforce.advantages(&[0.1, 0.1]), vec![0.1, 0.1]);
    }

    #[test]
    fn rloo_is_reward_minus_the_mean_of_the_others() {
        // r = [1, 2, 6]: mean 3, n / (n - 1) = 1.5.
        // 1.5 * (1 - 3) = -3 = 1 - (2 + 6) / 2; 1.5 * (2 - 3) = -1.5; 1.5 * (6 - 3) = 4.5.
        assert!(close(
            &Rloo.advantages(&[1.0, 2.0, 6.0]),
            &[-3.0, -1.5, 4.5]
        ));
        // a group of one: r itself
        assert_eq!(Rloo.advantages(&[-2.5]), vec![-2.5]);
    }

    #[test]
    fn reinforce_is_the_reward() {
        assert_eq!(Reinforce.advantages(&[3.0, -1.0]), vec![3.0, -1.0]);
        assert_eq!(Reinforce.advantages(&[7.0]), vec![7.0]);
    }
}
