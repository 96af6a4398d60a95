//! Proximal policy optimisation and four continual-learning families built on it.
//!
//! [`Ppo`] is one agent type; its family decides what it adds to plain PPO:
//!
//! | name | adds | params |
//! |---|---|---|
//! | `ppo` | nothing: clipped PPO with GAE, minibatch epochs, normalised advantages, an entropy bonus and running observation normalisation | [`PpoParams`] |
//! | `ppo-replay` | a reservoir of past observations with the policy's action distribution at the time, and a behaviour-cloning (KL) term towards them (CLEAR) | [`ReplayParams`] |
//! | `ppo-ewc` | online EWC: a Fisher-weighted pull towards the policy at the end of each past stretch, the stretches cut by a change-point detector on its own reward | [`EwcParams`] |
//! | `ppo-context` | a statistical summary of the last `k` transitions appended to the network input | [`ContextParams`] |
//! | `ppo-plastic` | shrink-and-perturb after every update, against loss of plasticity | [`PlasticParams`] |
//!
//! The networks are small tanh MLPs in `f32` with a hand-written backward pass ([`net`]); no
//! tensor library is involved. The policy and the value function are separate networks with
//! separate Adam optimisers.
//!
//! # Learning on windows
//!
//! The harness calls [`Agent::update`] once per rollout window, and that is PPO's rollout:
//! the agent merges the window's observations into its running statistics, computes
//! generalised advantage estimates (bootstrapping with the value network where the window
//! or a truncated episode cuts the return short, with 0 after a terminal state), and then
//! runs `epochs` passes of shuffled minibatches. The old log-probabilities are recomputed at
//! the start of the update with the refreshed normaliser, so every update starts at ratio 1.
//! Nothing about a window ends an episode or touches the world.
//!
//! # Plasticity diagnostics
//!
//! With `diagnostics` on (the default), the end of every update runs the policy network
//! once more over the window's inputs and keeps its [`Plasticity`]: the τ-dormant fraction
//! of its hidden units, the effective rank of its last hidden layer, its weight norm, and
//! the mean gradient norm of the update; [`Agent::plasticity`] hands them to the harness,
//! which writes them to the events table. They draw no randomness and change no weight.
//!
//! # Determinism and checkpoints
//!
//! All randomness (action sampling, minibatch order, reservoir choices, perturbations) comes
//! from one `ChaCha8Rng` seeded from the run's agent stream. The saved state holds the
//! networks, both Adam optimisers, the normaliser, the family's state and the generator, so a
//! resumed run continues byte for byte.

mod context;
mod diagnostics;
mod ewc;
mod kernel;
mod loss;
pub mod net;
mod normalizer;
mod params;
mod plastic;
mod replay;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize};

use crate::env::{Env, Observation};
use crate::harness::{Agent, Window};
use crate::seed::{self, Stream};
use crate::trace::Plasticity;

pub use context::ContextParams;
pub use ewc::{ChangeDetector, EwcParams};
pub use loss::{PolicyLoss, cloning_loss, log_prob, policy_loss, softmax};
pub use net::{Adam, ForwardWeights, Mlp};
pub use normalizer::{Normalizer, ReturnScale};
pub use params::PpoParams;
pub use plastic::PlasticParams;
pub use replay::ReplayParams;

use context::Context;
use ewc::Ewc;
use net::Cache;
use plastic::Plastic;
use replay::Replay;

/// The names of PPO and its families, as `--agent` takes them.
pub const FAMILIES: [&str; 5] = ["ppo", "ppo-replay", "ppo-ewc", "ppo-context", "ppo-plastic"];

/// What the last update measured (means over its minibatches), for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UpdateStats {
    /// Clipped surrogate loss.
    pub policy_loss: f64,
    /// `½ (V - return)²`.
    pub value_loss: f64,
    /// Policy entropy.
    pub entropy: f64,
    /// Estimated KL divergence between the rollout policy and the updated one.
    pub approx_kl: f64,
    /// Fraction of samples whose ratio was clipped.
    pub clip_fraction: f64,
    /// `ppo-replay`: the behaviour-cloning KL on replayed states (0 for other families).
    pub replay_loss: f64,
    /// `ppo-ewc`: the penalty `λ/2 Σ F (θ - θ*)²` (0 for other families).
    pub ewc_penalty: f64,
    /// A warm start's behaviour cloning: the mean cross-entropy `-ln π(a)` of the teacher's
    /// actions on the rows a teacher acted in (0 when none did; see [`Ppo::learn_taught`]).
    #[serde(default)]
    pub bc_loss: f64,
    /// L2 norm of the policy's gradient before clipping (family terms included).
    #[serde(default)]
    pub grad_norm: f64,
}

/// What a family adds to plain PPO, with its state.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Family {
    Plain,
    Replay(Replay),
    Ewc(Ewc),
    Context(Context),
    Plastic(Plastic),
}

/// Buffers reused across steps and updates; never saved.
#[derive(Clone, Debug, Default)]
struct Scratch {
    input: Vec<f32>,
    layers: [Vec<f32>; 2],
    out: Vec<f32>,
    cache: Cache,
    /// The policy's forward weights, rebuilt after every update (empty after a load).
    policy_fw: ForwardWeights,
}

/// What an update fits, row by row of its window.
struct Targets<'a> {
    /// The actions taken.
    actions: &'a [usize],
    /// Rows `0..taught` were acted in by a teacher: behaviour cloning, not the PPO ratio.
    taught: usize,
    /// The rollout policy's log-probabilities of the actions.
    old_logp: &'a [f32],
    /// GAE advantages.
    adv: &'a [f32],
    /// The value network's targets.
    returns: &'a [f32],
}

/// PPO, or one of its continual families, for any world with a `Discrete` action space and a
/// flat `f32` observation. See the [module docs](self).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ppo {
    id: String,
    params: PpoParams,
    obs_dim: usize,
    n_actions: usize,
    policy: Mlp,
    value: Mlp,
    policy_opt: Adam,
    value_opt: Adam,
    norm: Normalizer,
    /// The return statistics for `scale_rewards` (untouched when it is off).
    #[serde(default)]
    reward_scale: ReturnScale,
    family: Family,
    rng: ChaCha8Rng,
    stats: UpdateStats,
    /// The policy's diagnostics after the last update (`None` before one, after a load,
    /// or with `diagnostics` off).
    #[serde(skip)]
    plasticity: Option<Plasticity>,
    #[serde(skip)]
    scratch: Scratch,
}

impl Ppo {
    fn build(
        id: &str,
        obs_dim: usize,
        n_actions: usize,
        params: PpoParams,
        extra_inputs: usize,
        family: Family,
        seed: u64,
    ) -> Result<Self, String> {
        params.check()?;
        if n_actions == 0 {
            return Err(format!("{id} needs at least one action"));
        }
        let mut rng = seed::rng(seed, Stream::Agent);
        let input = obs_dim + extra_inputs;
        let sizes = |out: usize| {
            let mut s = vec![input];
            s.extend(&params.hidden);
            s.push(out);
            s
        };
        // A near-zero policy head starts near uniform; the value head starts at unit scale.
        let policy = Mlp::new(&sizes(n_actions), 0.01, &mut rng);
        let value = Mlp::new(&sizes(1), 1.0, &mut rng);
        Ok(Ppo {
            id: id.to_string(),
            policy_opt: Adam::new(policy.len()),
            value_opt: Adam::new(value.len()),
            policy,
            value,
            norm: Normalizer::new(obs_dim),
            reward_scale: ReturnScale::default(),
            params,
            obs_dim,
            n_actions,
            family,
            rng,
            stats: UpdateStats::default(),
            plasticity: None,
            scratch: Scratch::default(),
        })
    }

    /// Plain PPO for observations of length `obs_dim` and `n_actions` actions, in the run
    /// seeded with `seed` (it draws from the agent stream).
    ///
    /// # Errors
    ///
    /// A message naming the parameter that is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::agents::{Ppo, PpoParams};
    /// use perennial::harness::{Harness, HarnessConfig};
    /// use perennial::prelude::*;
    ///
    /// let agent = Ppo::new(4, 2, PpoParams::default(), 7).unwrap();
    /// let config = HarnessConfig { steps: 1_000, auto_reset: true, ..HarnessConfig::default() };
    /// let summary = Harness::new(CartPole::new(CartPoleParams::default()), agent, 7)
    ///     .config(config)
    ///     .run()
    ///     .unwrap();
    /// assert_eq!(summary.steps, 1_000);
    /// ```
    pub fn new(
        obs_dim: usize,
        n_actions: usize,
        params: PpoParams,
        seed: u64,
    ) -> Result<Self, String> {
        Self::build("ppo", obs_dim, n_actions, params, 0, Family::Plain, seed)
    }

    /// `ppo-replay`: PPO with a reservoir of past states and a behaviour-cloning term.
    ///
    /// # Errors
    ///
    /// A message naming the parameter that is out of range.
    pub fn replay(
        obs_dim: usize,
        n_actions: usize,
        params: ReplayParams,
        seed: u64,
    ) -> Result<Self, String> {
        let family = Family::Replay(Replay::new(&params, obs_dim, n_actions)?);
        Self::build(
            "ppo-replay",
            obs_dim,
            n_actions,
            params.ppo,
            0,
            family,
            seed,
        )
    }

    /// `ppo-ewc`: PPO with online elastic weight consolidation over self-detected stretches.
    ///
    /// # Errors
    ///
    /// A message naming the parameter that is out of range.
    pub fn ewc(
        obs_dim: usize,
        n_actions: usize,
        params: EwcParams,
        seed: u64,
    ) -> Result<Self, String> {
        let family = Family::Ewc(Ewc::new(&params)?);
        Self::build("ppo-ewc", obs_dim, n_actions, params.ppo, 0, family, seed)
    }

    /// `ppo-context`: PPO whose networks also see a summary of the last `k` transitions.
    ///
    /// # Errors
    ///
    /// A message naming the parameter that is out of range.
    pub fn context(
        obs_dim: usize,
        n_actions: usize,
        params: ContextParams,
        seed: u64,
    ) -> Result<Self, String> {
        let ctx = Context::new(&params, obs_dim)?;
        let extra = ctx.width();
        Self::build(
            "ppo-context",
            obs_dim,
            n_actions,
            params.ppo,
            extra,
            Family::Context(ctx),
            seed,
        )
    }

    /// `ppo-plastic`: PPO with shrink-and-perturb after every update.
    ///
    /// # Errors
    ///
    /// A message naming the parameter that is out of range.
    pub fn plastic(
        obs_dim: usize,
        n_actions: usize,
        params: PlasticParams,
        seed: u64,
    ) -> Result<Self, String> {
        let family = Family::Plastic(Plastic::new(&params)?);
        Self::build(
            "ppo-plastic",
            obs_dim,
            n_actions,
            params.ppo,
            0,
            family,
            seed,
        )
    }

    /// The agent called `name` (one of [`FAMILIES`]), its parameters read from `options`
    /// (a table of the family's params struct; missing fields keep their defaults, unknown
    /// ones are an error). `Ok(None)` when `name` is not a PPO family.
    ///
    /// # Errors
    ///
    /// The deserializer's error for a bad option, or a message naming the parameter that is
    /// out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::agents::Ppo;
    ///
    /// let opts: toml::Table = toml::from_str("bc_weight = 2.0\nppo.lr = 1e-3").unwrap();
    /// let agent = Ppo::by_name("ppo-replay", 4, 2, opts, 0).unwrap().unwrap();
    /// assert_eq!(perennial::harness::Agent::<perennial::cartpole::CartPole>::algorithm_id(&agent), "ppo-replay");
    /// ```
    pub fn by_name<'de, D: Deserializer<'de>>(
        name: &str,
        obs_dim: usize,
        n_actions: usize,
        options: D,
        seed: u64,
    ) -> Result<Option<Self>, String> {
        fn with<'de, P: Deserialize<'de>, D: Deserializer<'de>>(
            options: D,
            make: impl FnOnce(P) -> Result<Ppo, String>,
        ) -> Result<Ppo, String> {
            make(P::deserialize(options).map_err(|e| e.to_string())?)
        }
        let (o, a) = (obs_dim, n_actions);
        let agent = match name {
            "ppo" => with(options, |p| Self::new(o, a, p, seed)),
            "ppo-replay" => with(options, |p| Self::replay(o, a, p, seed)),
            "ppo-ewc" => with(options, |p| Self::ewc(o, a, p, seed)),
            "ppo-context" => with(options, |p| Self::context(o, a, p, seed)),
            "ppo-plastic" => with(options, |p| Self::plastic(o, a, p, seed)),
            _ => return Ok(None),
        };
        agent.map(Some)
    }

    /// The plain-PPO parameters in use.
    pub fn params(&self) -> &PpoParams {
        &self.params
    }

    /// What the last update measured.
    pub fn last_update(&self) -> UpdateStats {
        self.stats
    }

    /// The policy network.
    pub fn policy(&self) -> &Mlp {
        &self.policy
    }

    /// The value network.
    pub fn value(&self) -> &Mlp {
        &self.value
    }

    /// `ppo-ewc`: how many stretches have been consolidated so far (`None` for other
    /// families).
    pub fn consolidations(&self) -> Option<u64> {
        match &self.family {
            Family::Ewc(e) => Some(e.consolidations()),
            _ => None,
        }
    }

    /// `ppo-ewc`: consolidates now, as a detected change point would (anchor at the current
    /// policy, Fisher information from `window`). Returns false for other families.
    pub fn consolidate<O: Observation>(&mut self, window: &Window<O, usize>) -> bool {
        let inputs = self.inputs(window);
        let Family::Ewc(e) = &mut self.family else {
            return false;
        };
        e.consolidate(&self.policy, &inputs, &window.actions, self.n_actions);
        true
    }

    /// `ppo-ewc`: the penalty `λ/2 Σ F (θ - θ*)²` at the current policy (`None` for other
    /// families).
    pub fn ewc_penalty(&self) -> Option<f64> {
        match &self.family {
            Family::Ewc(e) => Some(e.penalty(&self.policy.params)),
            _ => None,
        }
    }

    /// `ppo-context`: the context part of the input the next action would see (`None` for
    /// other families).
    pub fn context_features(&self) -> Option<&[f32]> {
        match &self.family {
            Family::Context(c) => Some(c.current()),
            _ => None,
        }
    }

    /// `ppo-replay`: how many states the reservoir holds (`None` for other families).
    pub fn replay_len(&self) -> Option<usize> {
        match &self.family {
            Family::Replay(r) => Some(r.len()),
            _ => None,
        }
    }

    /// The action probabilities for `obs` under the current policy (the context family uses
    /// its current context). Does not advance any state.
    pub fn action_probs(&mut self, obs: &[f32]) -> Vec<f32> {
        let mut input = Vec::with_capacity(self.policy.input_dim());
        self.norm.apply(obs, self.params.obs_clip, &mut input);
        if let Family::Context(c) = &self.family {
            input.extend_from_slice(c.current());
        }
        let mut logits = Vec::new();
        self.refresh_forward_weights();
        let s = &mut self.scratch;
        self.policy
            .forward_one(&s.policy_fw, &input, &mut s.layers, &mut logits);
        let mut probs = vec![0.0; self.n_actions];
        softmax(&logits, &mut probs);
        probs
    }

    /// Builds the policy's forward weights when a load or a clone left them empty (every
    /// update rebuilds them).
    fn refresh_forward_weights(&mut self) {
        if !self.scratch.policy_fw.fits(&self.policy) {
            self.policy.forward_weights(&mut self.scratch.policy_fw);
        }
    }

    /// What a step on `obs` records besides the action: the normalised input into the
    /// scratch buffer, and the context family's summary (updated and logged for the update).
    fn record_input(&mut self, obs: &[f32]) {
        let s = &mut self.scratch;
        s.input.clear();
        self.norm.apply(
            &obs[..obs.len().min(self.obs_dim)],
            self.params.obs_clip,
            &mut s.input,
        );
        if let Family::Context(c) = &mut self.family {
            c.observe(&s.input[..self.obs_dim]);
            s.input.extend_from_slice(c.current());
            c.log_current();
        }
    }

    /// Sees `obs` without choosing an action, on a step another agent (a warm start's
    /// teacher) acts in: the context family records the step as [`Agent::act`] would, so the
    /// update sees the context the step was taken in. Draws nothing from the generator.
    pub fn follow(&mut self, obs: &[f32]) {
        if let Family::Context(_) = self.family {
            self.record_input(obs);
        }
    }

    /// Learns from `window`, whose first `taught` rows a teacher acted in (see
    /// [`crate::agents::WarmStart`]), with Adam step size `lr` for both networks. On those
    /// rows the policy is trained by behaviour cloning, the cross-entropy `-ln π(a)` of the
    /// teacher's action, and not by the clipped ratio, which assumes the actions were drawn
    /// from the policy itself; the other rows, the value network and the normaliser learn as
    /// in [`Agent::update`] (which is `learn_taught(window, 0, lr)` with the `lr` option).
    /// `ppo-replay` stores the teacher's action on those rows as a one-hot distribution, the
    /// behaviour policy there.
    pub fn learn_taught<O: Observation>(
        &mut self,
        window: &Window<O, usize>,
        taught: usize,
        lr: f32,
    ) {
        self.learn(window, taught.min(window.len()), lr);
    }

    fn sample(&mut self, obs: &[f32]) -> usize {
        self.refresh_forward_weights();
        self.record_input(obs);
        let s = &mut self.scratch;
        self.policy
            .forward_one(&s.policy_fw, &s.input, &mut s.layers, &mut s.out);
        let max = s.out.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        for z in s.out.iter_mut() {
            *z -= max;
        }
        kernel::exp_in_place(&mut s.out);
        let total: f32 = s.out.iter().sum();
        let u: f32 = self.rng.random::<f32>() * total;
        let mut acc = 0.0;
        for (a, e) in s.out.iter().enumerate() {
            acc += e;
            if u < acc {
                return a;
            }
        }
        self.n_actions - 1
    }

    /// The network inputs of a window's steps, row by row, with the current normaliser.
    fn inputs<O: Observation>(&self, window: &Window<O, usize>) -> Vec<f32> {
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

    fn learn<O: Observation>(&mut self, window: &Window<O, usize>, taught: usize, lr: f32) {
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
    fn consistent(&self) -> bool {
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

impl<E> Agent<E> for Ppo
where
    E: Env<Action = usize> + ?Sized,
{
    fn algorithm_id(&self) -> &str {
        &self.id
    }

    fn act(&mut self, obs: &E::Obs) -> usize {
        self.sample(obs.as_slice())
    }

    fn update(&mut self, window: &Window<E::Obs, usize>) {
        self.learn(window, 0, self.params.lr);
    }

    fn plasticity(&self) -> Option<Plasticity> {
        self.plasticity
    }

    fn reseed(&mut self, seed: u64) {
        self.rng = crate::seed::rng(seed, crate::seed::Stream::Agent);
    }

    fn save_state(&self) -> Result<serde_json::Value, String> {
        crate::harness::to_finite_value(self).map_err(|e| {
            format!(
                "{e}; its updates diverged: lower `lr` (now {}), or keep `max_grad_norm` above 0 (now {})",
                self.params.lr, self.params.max_grad_norm
            )
        })
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), String> {
        let loaded: Ppo =
            serde_json::from_value(state).map_err(|e| format!("{} state: {e}", self.id))?;
        if loaded.id != self.id
            || loaded.obs_dim != self.obs_dim
            || loaded.n_actions != self.n_actions
            || loaded.policy.len() != self.policy.len()
            || loaded.value.len() != self.value.len()
            || !loaded.consistent()
        {
            return Err(format!(
                "the checkpoint holds a `{}` for {} inputs and {} actions; this run has a `{}` for {} and {}",
                loaded.id, loaded.obs_dim, loaded.n_actions, self.id, self.obs_dim, self.n_actions
            ));
        }
        *self = loaded;
        Ok(())
    }
}
