//! One PPO update on a rollout window: advantages, minibatch epochs, the families' terms, and the diagnostics after it.

use rand::RngExt;

use super::net::Cache;
use super::{
    Family, PolicyLoss, Ppo, Targets, UpdateStats, cloning_loss, diagnostics, kernel, log_prob,
    policy_loss, softmax,
};
use crate::env::Observation;
use crate::harness::Window;
use crate::trace::Plasticity;

impl Ppo {
    /// The network inputs of a window's steps, row by row, with the current normaliser.
    pub(super) fn inputs<O: Observation>(&self, window: &Window<O, usize>) -> Vec<f32> {
        let width = self.policy.input_dim();
        let mut x = Vec::with_capacity(window.len() * width);
        for (i, o) in window.obs.iter().enumerate() {
            let o = o.as_slice();
            self.norm.apply(
                &o[..o.len().min(self.obs_dim)],
                self.params.obs_clip,
                &mut x,
            );
            if let Family::Context(c) = &self.family {
                x.extend_from_slice(c.logged(i));
            }
        }
        x
    }

    pub(super) fn learn<O: Observation>(
        &mut self,
        window: &Window<O, usize>,
        taught: usize,
        lr: f32,
    ) {
        let n = window.len();
        if n == 0 {
            return;
        }
        let dim = self.obs_dim;
        self.norm.update(window.obs.iter().map(|o| {
            let o = o.as_slice();
            &o[..o.len().min(dim)]
        }));
        let x = self.inputs(window);
        let width = self.policy.input_dim();
        let actions: Vec<usize> = window
            .actions
            .iter()
            .map(|&a| a.min(self.n_actions - 1))
            .collect();

        // Values, and the rollout policy's log-probabilities and distributions.
        let mut cache = std::mem::take(&mut self.scratch.cache);
        self.value.forward_batch(&x, n, &mut cache);
        let values: Vec<f32> = cache.output().to_vec();
        self.policy.forward_batch(&x, n, &mut cache);
        let logits = cache.output();
        let old_logp: Vec<f32> = (0..n)
            .map(|i| {
                log_prob(
                    &logits[i * self.n_actions..(i + 1) * self.n_actions],
                    actions[i],
                )
            })
            .collect();
        // The replay family stores the behaviour policy's distributions: the rollout
        // policy's, or the teacher's action as a one-hot on the rows a teacher acted in.
        let mut old_probs = Vec::new();
        if let Family::Replay(_) = self.family {
            old_probs.resize(n * self.n_actions, 0.0);
            for (i, (p, z)) in old_probs
                .chunks_exact_mut(self.n_actions)
                .zip(logits.chunks_exact(self.n_actions))
                .enumerate()
            {
                if i < taught {
                    p[actions[i]] = 1.0;
                } else {
                    softmax(z, p);
                }
            }
        }

        // Where the return is cut short (window end, truncation, or an episode boundary the
        // next row does not continue), bootstrap with V(next_obs); after a terminal, 0.
        let mut bootstrap = vec![0.0f32; n];
        let mut input = Vec::with_capacity(width);
        for i in 0..n {
            if window.terminated[i] {
                continue;
            }
            if i + 1 < n && !window.truncated[i] {
                bootstrap[i] = values[i + 1];
                continue;
            }
            input.clear();
            let o = window.next_obs[i].as_slice();
            self.norm
                .apply(&o[..o.len().min(dim)], self.params.obs_clip, &mut input);
            if let Family::Context(c) = &self.family {
                input.extend_from_slice(c.logged(i));
            }
            self.value.forward_batch(&input, 1, &mut cache);
            bootstrap[i] = cache.output()[0];
        }
        let (gamma, lambda) = (self.params.gamma, self.params.lambda);
        let mut scaled = Vec::new();
        let rewards = if self.params.scale_rewards {
            let ends = |i: usize| window.terminated[i] || window.truncated[i];
            self.reward_scale
                .scale(&window.rewards, ends, gamma, &mut scaled);
            &scaled
        } else {
            &window.rewards
        };
        let mut adv = vec![0.0f32; n];
        let mut gae = 0.0f64;
        for i in (0..n).rev() {
            let delta = rewards[i] + gamma * f64::from(bootstrap[i]) - f64::from(values[i]);
            let cut = window.terminated[i] || window.truncated[i] || i + 1 == n;
            gae = delta + if cut { 0.0 } else { gamma * lambda * gae };
            adv[i] = gae as f32;
        }
        let returns: Vec<f32> = adv.iter().zip(&values).map(|(a, v)| a + v).collect();

        if let Family::Ewc(e) = &mut self.family {
            let mean_reward = window.rewards.iter().sum::<f64>() / n as f64;
            if e.observe_reward(mean_reward) {
                e.consolidate(&self.policy, &x, &actions, self.n_actions);
            }
        }

        let targets = Targets {
            actions: &actions,
            taught,
            old_logp: &old_logp,
            adv: &adv,
            returns: &returns,
        };
        self.stats = self.optimise(&x, &targets, lr, &mut cache);
        self.scratch.cache = cache;

        match &mut self.family {
            Family::Replay(r) => {
                for i in 0..n {
                    let o = window.obs[i].as_slice();
                    r.insert(
                        &o[..o.len().min(dim)],
                        &old_probs[i * self.n_actions..(i + 1) * self.n_actions],
                        &mut self.rng,
                    );
                }
            }
            Family::Context(c) => c.clear_log(),
            Family::Plastic(p) => {
                p.apply(&mut self.policy.params, &mut self.rng);
                p.apply(&mut self.value.params, &mut self.rng);
            }
            Family::Plain | Family::Ewc(_) => {}
        }
        self.policy.forward_weights(&mut self.scratch.policy_fw);
        self.plasticity = self.params.diagnostics.then(|| self.measure(&x, n));
    }

    /// The policy's diagnostics on the window's inputs `x` (`n` rows), as it acts next.
    fn measure(&mut self, x: &[f32], n: usize) -> Plasticity {
        let mut cache = std::mem::take(&mut self.scratch.cache);
        self.policy.forward_batch(x, n, &mut cache);
        let dormant = diagnostics::dormant_fraction(cache.hidden(), n, self.params.dormant_tau);
        let rank = cache.hidden().last().map_or(0.0, |last| {
            diagnostics::effective_rank(last, n, self.params.rank_delta)
        });
        self.scratch.cache = cache;
        let weights = self
            .policy
            .params
            .iter()
            .map(|&w| f64::from(w) * f64::from(w));
        Plasticity {
            dormant_fraction: dormant,
            effective_rank: rank,
            weight_norm: weights.sum::<f64>().sqrt(),
            grad_norm: self.stats.grad_norm,
        }
    }

    /// Whether the parts of a loaded state fit each other, so nothing indexes out of range.
    pub(super) fn consistent(&self) -> bool {
        let family = match &self.family {
            Family::Plain | Family::Plastic(_) => true,
            Family::Replay(r) => r.valid(),
            Family::Ewc(e) => e.valid(self.policy.len()),
            Family::Context(c) => c.valid(),
        };
        family
            && self.policy.consistent()
            && self.value.consistent()
            && self.policy_opt.len() == self.policy.len()
            && self.value_opt.len() == self.value.len()
            && self.norm.dim() == self.obs_dim
            && self.reward_scale.valid()
            && self.params.check().is_ok()
    }

    /// The minibatch epochs of one update.
    fn optimise(&mut self, x: &[f32], t: &Targets<'_>, lr: f32, cache: &mut Cache) -> UpdateStats {
        let n = t.actions.len();
        let width = self.policy.input_dim();
        let na = self.n_actions;
        let p = self.params.clone();
        let mb = p.minibatch.min(n);
        let mut order: Vec<usize> = (0..n).collect();
        let mut mb_x = Vec::with_capacity(mb * width);
        let mut mb_a = Vec::with_capacity(mb);
        let mut mb_logp = Vec::with_capacity(mb);
        let mut mb_adv = Vec::with_capacity(mb);
        let mut mb_taught = Vec::new();
        let mut d_logits = vec![0.0; mb * na];
        let mut d_v = vec![0.0; mb];
        let mut g_pi = vec![0.0; self.policy.len()];
        let mut g_v = vec![0.0; self.value.len()];
        let mut stats = UpdateStats::default();
        let mut batches = 0usize;
        let mut samples = 0usize;
        let mut taught_samples = 0usize;
        for _ in 0..p.epochs {
            // Fisher-Yates with the agent's generator, so the order is reproducible.
            for i in (1..n).rev() {
                let j = self.rng.random_range(0..=i);
                order.swap(i, j);
            }
            for chunk in order.chunks(mb) {
                let b = chunk.len();
                mb_x.clear();
                mb_a.clear();
                mb_logp.clear();
                mb_adv.clear();
                for &i in chunk {
                    mb_x.extend_from_slice(&x[i * width..(i + 1) * width]);
                    mb_a.push(t.actions[i]);
                    mb_logp.push(t.old_logp[i]);
                    mb_adv.push(t.adv[i]);
                }
                // Advantages normalised per minibatch, as in the reference implementations.
                let mean = mb_adv.iter().sum::<f32>() / b as f32;
                let var = mb_adv.iter().map(|a| (a - mean) * (a - mean)).sum::<f32>() / b as f32;
                let inv = 1.0 / (var.sqrt() + 1e-8);
                for a in &mut mb_adv {
                    *a = (*a - mean) * inv;
                }

                self.policy.forward_batch(&mb_x, b, cache);
                mb_taught.clear();
                mb_taught.extend(chunk.iter().map(|&i| i < t.taught));
                let taught = mb_taught.iter().filter(|&&k| k).count();
                let loss = if taught == b {
                    PolicyLoss::default()
                } else {
                    policy_loss(
                        cache.output(),
                        &mb_a,
                        &mb_logp,
                        &mb_adv,
                        p.clip,
                        p.entropy_coef,
                        &mut d_logits[..b * na],
                    )
                };
                if taught > 0 {
                    let (cross_entropy, entropy) =
                        cloning_loss(cache.output(), &mb_a, &mb_taught, &mut d_logits[..b * na]);
                    stats.bc_loss += cross_entropy;
                    if taught == b {
                        // A mixed minibatch's entropy is policy_loss's, over every row.
                        stats.entropy += entropy;
                    }
                    taught_samples += taught;
                }
                g_pi.fill(0.0);
                self.policy
                    .backward_batch(cache, &d_logits[..b * na], &mut g_pi);
                match &mut self.family {
                    Family::Replay(r) => {
                        stats.replay_loss += r.add_gradient(
                            &self.policy,
                            &self.norm,
                            p.obs_clip,
                            b,
                            &mut self.rng,
                            cache,
                            &mut g_pi,
                        );
                    }
                    Family::Ewc(e) => {
                        stats.ewc_penalty += e.add_gradient(&self.policy.params, &mut g_pi);
                    }
                    _ => {}
                }
                stats.grad_norm += f64::from(kernel::sum_squares(&g_pi)).sqrt();
                self.policy_opt
                    .step(&mut self.policy.params, &g_pi, lr, p.max_grad_norm);

                self.value.forward_batch(&mb_x, b, cache);
                let mut value_loss = 0.0f64;
                for (k, &i) in chunk.iter().enumerate() {
                    let err = cache.output()[k] - t.returns[i];
                    value_loss += f64::from(0.5 * err * err);
                    d_v[k] = err / b as f32;
                }
                g_v.fill(0.0);
                self.value.backward_batch(cache, &d_v[..b], &mut g_v);
                self.value_opt
                    .step(&mut self.value.params, &g_v, lr, p.max_grad_norm);

                stats.policy_loss += loss.surrogate / b as f64;
                stats.entropy += loss.entropy;
                stats.approx_kl += loss.approx_kl;
                stats.clip_fraction += loss.clipped as f64;
                stats.value_loss += value_loss / b as f64;
                batches += 1;
                samples += b;
            }
        }
        let (nb, ns) = (batches.max(1) as f64, samples.max(1) as f64);
        UpdateStats {
            policy_loss: stats.policy_loss / nb,
            value_loss: stats.value_loss / nb,
            entropy: stats.entropy / ns,
            approx_kl: stats.approx_kl / ns,
            clip_fraction: stats.clip_fraction / ns,
            replay_loss: stats.replay_loss / nb,
            ewc_penalty: stats.ewc_penalty / nb,
            bc_loss: stats.bc_loss / taught_samples.max(1) as f64,
            grad_norm: stats.grad_norm / nb,
        }
    }
}
