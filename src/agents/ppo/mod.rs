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
mod update;

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
