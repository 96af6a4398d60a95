//! `CartPoleVec`: N CartPoles in structure-of-arrays form, stepped in one tight loop.

use std::sync::{Mutex, PoisonError};

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cartpole::{CartPoleParams, Integrator};
use crate::env::{EnvError, Space};
use crate::regime::{ParamInfo, RegimeError, Scheduler, Shiftable};

use super::helper::Helper;
use super::{
    AutoresetMode, CopyRegime, VecError, VecStep, VectorEnv, check_batch, check_copy, check_count,
    copy_seeds, no_copy,
};

/// N Gymnasium CartPole-v1 copies in one structure-of-arrays state, stepped in one loop.
///
/// Bit-identical to N independent [`CartPole`](crate::cartpole::CartPole)s: copy `i`'s
/// episode `e` starts as `CartPole::reset(episode_seed(seed, i, e))` does, and each step
/// performs CartPole's floating-point operations in CartPole's order (no fused
/// multiply-adds, no reciprocals), so every observation, reward and flag agrees to the
/// bit. Parameters are shared by all copies or set per copy, and each copy may have its own
/// regime [`Scheduler`] ([`CartPoleVec::scheduler`]), applied as [`VecEnv`](super::VecEnv)
/// applies it, so a copy with a scheduler is the CartPole that scheduler drives. The
/// autoreset modes and rules are those of the [module docs](super).
///
/// A vector of at least 1,024 copies steps on two threads: the calling thread and a helper
/// thread of its own, which spins briefly after each batch, then parks until the next one,
/// and which dropping the vector joins. The copies are cut into chunks that either thread
/// claims, so a helper the OS does not run in time leaves its share to the caller.
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
/// use perennial::vector::{AutoresetMode, CartPoleVec, VectorEnv};
///
/// let mut envs = CartPoleVec::new(2, CartPoleParams::default(), AutoresetMode::NextStep);
/// envs.reset(0).unwrap();
/// envs.set_state(1, [0.0, 0.0, 0.2094, 5.0]);
/// let step = envs.step(&[0, 1]).unwrap();
/// assert_eq!(step.terminated(), &[false, true]);
/// let step = envs.step(&[0, 1]).unwrap();
/// assert_eq!((step.rewards()[1], step.terminated()[1]), (0.0, false), "the reset step");
/// assert_eq!(envs.episode(1), 1);
/// ```
#[derive(Clone, Debug)]
pub struct CartPoleVec {
    params: ParamSet,
    state: State,
    mode: AutoresetMode,
    started: bool,
    out: VecStep,
    /// Copy `i`'s scheduler, if it has one.
    regimes: Vec<Option<CopyRegime>>,
    /// Env steps of each copy since `reset(seed)`: the schedulers' step axis.
    steps: Vec<u64>,
    /// The second thread of a vector of at least [`SPLIT_FROM`] copies.
    helper: Helper,
}

/// A copy's parameters as a [`Shiftable`] world, so that regimes apply to them as they
/// apply to a [`CartPole`](crate::cartpole::CartPole).
struct ParamsWorld(CartPoleParams);

impl Shiftable for ParamsWorld {
    fn parameters(&self) -> Vec<ParamInfo> {
        CartPoleParams::PARAMETERS.to_vec()
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.0.get(name)
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        self.0.set(name, value)
    }
}

/// Parameters with CartPole's derived quantities, computed as CartPole computes them.
#[derive(Clone, Debug, PartialEq)]
struct Physics {
    p: CartPoleParams,
    total_mass: f64,
    polemass_length: f64,
}

impl Physics {
    fn new(p: CartPoleParams) -> Self {
        Physics {
            total_mass: p.masspole + p.masscart,
            polemass_length: p.masspole * p.length,
            p,
        }
    }
}

/// Copies stepped per block; their sines and cosines live on the stack between passes.
const BLOCK: usize = 64;

/// Vectors of this many copies or more step on two threads, the calling thread and a
/// [`Helper`]; smaller batches take less time than handing half of them over.
const SPLIT_FROM: usize = 1024;

/// The chunks a split batch is cut into: enough that a thread that falls behind leaves the
/// rest to the other, few enough that a chunk is worth a claim.
const CHUNKS: usize = 16;

/// The parameters a step reads: borrowed from a [`ParamSet`].
#[derive(Clone, Copy)]
enum Params<'a> {
    Shared(&'a Physics),
    PerCopy(&'a [Physics]),
}

impl<'a> Params<'a> {
    /// The parameters of the copies in `range`, as a step of those copies alone reads them.
    fn range(self, range: std::ops::Range<usize>) -> Self {
        match self {
            Params::Shared(ph) => Params::Shared(ph),
            Params::PerCopy(v) => Params::PerCopy(&v[range]),
        }
    }
}

#[derive(Clone, Debug)]
enum ParamSet {
    Shared(Physics),
    PerCopy(Vec<Physics>),
}

/// The per-copy state, one array per quantity.
#[derive(Clone, Debug, Default)]
struct State {
    x: Vec<f64>,
    x_dot: Vec<f64>,
    theta: Vec<f64>,
    theta_dot: Vec<f64>,
    episode_step: Vec<u64>,
    episode: Vec<u64>,
    /// The episode ended and the copy has not been reset since.
    ended: Vec<bool>,
    /// Each copy's episode-seed stream, positioned at its next episode.
    seeds: Vec<ChaCha8Rng>,
}

impl CartPoleVec {
    /// `num_envs` copies sharing `params`. Call [`VectorEnv::reset`] before the first step.
    pub fn new(num_envs: usize, params: CartPoleParams, mode: AutoresetMode) -> Self {
        Self::build(num_envs, ParamSet::Shared(Physics::new(params)), mode)
    }

    /// One copy per element of `params`, copy `i` with `params[i]`.
    pub fn per_copy(params: Vec<CartPoleParams>, mode: AutoresetMode) -> Self {
        let n = params.len();
        Self::build(
            n,
            ParamSet::PerCopy(params.into_iter().map(Physics::new).collect()),
            mode,
        )
    }

    fn build(n: usize, params: ParamSet, mode: AutoresetMode) -> Self {
        CartPoleVec {
            params,
            state: State {
                x: vec![0.0; n],
                x_dot: vec![0.0; n],
                theta: vec![0.0; n],
                theta_dot: vec![0.0; n],
                episode_step: vec![0; n],
                episode: vec![0; n],
                ended: vec![false; n],
                seeds: Vec::new(),
            },
            mode,
            started: false,
            out: VecStep::new(n, 4, mode),
            regimes: vec![None; n],
            steps: vec![0; n],
            helper: Helper::default(),
        }
    }

    /// Attaches `scheduler` to copy `i`, as [`VecEnv::scheduler`](super::VecEnv::scheduler)
    /// does: its regimes are checked against CartPole's parameters now, the copy's current
    /// parameters become its baseline, and it comes into force at the next
    /// [`VectorEnv::reset`]. It is asked before each of the copy's env steps, on the copy's
    /// own step count, and a shift sets the copy's parameters ([`CartPoleVec::set_params`]).
    ///
    /// # Errors
    ///
    /// [`VecError::Build`] for a copy that does not exist, [`VecError::Regime`] for a regime
    /// naming an unknown parameter or an out-of-range value.
    pub fn scheduler(mut self, i: usize, scheduler: Scheduler) -> Result<Self, VecError> {
        if i >= self.num_envs() {
            return Err(no_copy(i, self.num_envs()));
        }
        let world = ParamsWorld(self.params(i).clone());
        self.regimes[i] = Some(CopyRegime::attach(i, &world, scheduler)?);
        Ok(self)
    }

    /// Copy `i`'s parameters. Panics when `i >= num_envs()`.
    pub fn params(&self, i: usize) -> &CartPoleParams {
        match &self.params {
            ParamSet::Shared(ph) => {
                assert!(i < self.num_envs(), "no copy {i}");
                &ph.p
            }
            ParamSet::PerCopy(v) => &v[i].p,
        }
    }

    /// Sets copy `i`'s parameters from its next step on; nothing ends. Panics when
    /// `i >= num_envs()`.
    pub fn set_params(&mut self, i: usize, params: CartPoleParams) {
        let n = self.num_envs();
        assert!(i < n, "no copy {i}");
        if let ParamSet::Shared(ph) = &self.params {
            self.params = ParamSet::PerCopy(vec![ph.clone(); n]);
        }
        if let ParamSet::PerCopy(v) = &mut self.params {
            v[i] = Physics::new(params);
        }
    }

    /// Sets every copy's parameters from the next step on; nothing ends.
    pub fn set_all_params(&mut self, params: CartPoleParams) {
        self.params = ParamSet::Shared(Physics::new(params));
    }

    /// Copy `i`'s full `f64` state `[x, x_dot, theta, theta_dot]`. Panics when
    /// `i >= num_envs()`.
    pub fn state(&self, i: usize) -> [f64; 4] {
        let s = &self.state;
        [s.x[i], s.x_dot[i], s.theta[i], s.theta_dot[i]]
    }

    /// Places copy `i`'s cart and pole in `state`, as [`CartPole::set_state`] does: the
    /// episode step count is kept and the episode is live again. The buffers are not
    /// touched. Panics when `i >= num_envs()`.
    ///
    /// [`CartPole::set_state`]: crate::cartpole::CartPole::set_state
    pub fn set_state(&mut self, i: usize, state: [f64; 4]) {
        let s = &mut self.state;
        [s.x[i], s.x_dot[i], s.theta[i], s.theta_dot[i]] = state;
        s.ended[i] = false;
    }

    /// Steps taken in copy `i`'s current episode. Panics when `i >= num_envs()`.
    pub fn episode_step(&self, i: usize) -> u64 {
        self.state.episode_step[i]
    }

    fn start_all(&mut self) -> Result<&[f32], VecError> {
        self.started = false;
        for i in 0..self.num_envs() {
            if let Some(mut r) = self.regimes[i].take() {
                let mut world = ParamsWorld(self.params(i).clone());
                let applied = r.restart(i, &mut world);
                self.regimes[i] = Some(r);
                applied?;
                self.set_params(i, world.0);
            }
        }
        self.steps.fill(0);
        let mut lanes = Lanes::of(&mut self.state, &mut self.out);
        for i in 0..lanes.x.len() {
            lanes.episode[i] = 0;
            lanes.start_episode(i);
        }
        self.out.clear_results();
        self.started = true;
        Ok(&self.out.obs)
    }

    /// Consults every scheduler before its copy's env step (copies due for a `NextStep`
    /// reset take none) and puts the regime of a shift in force.
    fn advance_schedulers(&mut self) -> Result<(), VecError> {
        for i in 0..self.num_envs() {
            if self.state.ended[i] {
                continue;
            }
            if let Some(mut r) = self.regimes[i].take() {
                let mut world = ParamsWorld(self.params(i).clone());
                let shifted = r.before_step(i, self.steps[i], &mut world);
                self.regimes[i] = Some(r);
                if shifted? {
                    self.set_params(i, world.0);
                }
            }
            self.steps[i] += 1;
        }
        Ok(())
    }
}

impl VectorEnv for CartPoleVec {
    /// 0 pushes the cart left, 1 right.
    type Action = usize;

    fn reset(&mut self, seed: u64) -> Result<&[f32], VecError> {
        let n = self.num_envs();
        self.state.seeds = (0..n).map(|i| copy_seeds(seed, i)).collect();
        self.start_all()
    }

    fn reset_runs(&mut self, seeds: &[u64]) -> Result<&[f32], VecError> {
        check_count(self.num_envs(), seeds.len())?;
        self.state.seeds = seeds
            .iter()
            .map(|&s| crate::seed::rng(s, crate::seed::Stream::World))
            .collect();
        self.start_all()
    }

    fn reset_copy(&mut self, i: usize) -> Result<&[f32], VecError> {
        check_copy(self.started, i, self.num_envs())?;
        let mut lanes = Lanes::of(&mut self.state, &mut self.out);
        lanes.episode[i] += 1;
        lanes.start_episode(i);
        Ok(self.out.obs_of(i))
    }

    fn step(&mut self, actions: &[usize]) -> Result<&VecStep, VecError> {
        check_batch(
            self.started,
            self.mode,
            actions,
            self.num_envs(),
            |_, &a| (a > 1).then(|| EnvError::invalid_action(&a, &Space::Discrete { n: 2 })),
            self.state.ended.iter().copied(),
        )?;
        if self.regimes.iter().any(Option::is_some) {
            self.advance_schedulers()?;
        }
        let params = match &self.params {
            ParamSet::Shared(ph) => Params::Shared(ph),
            ParamSet::PerCopy(v) => Params::PerCopy(v),
        };
        let mut lanes = Lanes::of(&mut self.state, &mut self.out);
        let n = actions.len();
        if n < SPLIT_FROM {
            lanes.step(params, actions, self.mode);
            return Ok(&self.out);
        }
        // Disjoint chunks, each behind an (uncontended) lock so either thread may take it.
        let chunk = n.div_ceil(CHUNKS).next_multiple_of(BLOCK);
        let mut rest = Some(lanes);
        let parts: [Option<Mutex<Lanes<'_>>>; CHUNKS] = std::array::from_fn(|_| {
            let lanes = rest.take()?;
            if lanes.x.len() <= chunk {
                return Some(Mutex::new(lanes));
            }
            let (this, next) = lanes.split_at(chunk);
            rest = Some(next);
            Some(Mutex::new(this))
        });
        let mode = self.mode;
        self.helper.run(n.div_ceil(chunk), &|c| {
            let Some(part) = &parts[c] else { return };
            let mut lanes = part.lock().unwrap_or_else(PoisonError::into_inner);
            let range = c * chunk..c * chunk + lanes.x.len();
            lanes.step(params.range(range.clone()), &actions[range], mode);
        });
        Ok(&self.out)
    }

    fn last(&self) -> &VecStep {
        &self.out
    }

    fn num_envs(&self) -> usize {
        self.state.x.len()
    }

    fn episode(&self, i: usize) -> u64 {
        self.state.episode[i]
    }

    fn scheduler_of(&self, i: usize) -> Option<&Scheduler> {
        self.regimes[i].as_ref().map(|r| &r.scheduler)
    }
}

/// CartPole's reset, draw for draw: each state element uniform in `[-0.05, 0.05)` from a
/// ChaCha8 stream seeded with `seed`.
fn reset_state(seed: u64) -> [f64; 4] {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    std::array::from_fn(|_| rng.random_range(-0.05..0.05))
}

/// `(theta.sin(), theta.cos())`, bit for bit, in one library call where the C library has
/// one (glibc's `sincos` shares the argument reduction and returns the same bits).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[inline(always)]
fn sin_cos(theta: f64) -> (f64, f64) {
    unsafe extern "C" {
        safe fn sincos(x: f64, sin: &mut f64, cos: &mut f64);
    }
    let (mut sin, mut cos) = (0.0, 0.0);
    sincos(theta, &mut sin, &mut cos);
    (sin, cos)
}

/// `(theta.sin(), theta.cos())`.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
#[inline(always)]
fn sin_cos(theta: f64) -> (f64, f64) {
    (theta.sin(), theta.cos())
}

/// Mutable views of every per-copy array and of the output buffers.
struct Lanes<'a> {
    x: &'a mut [f64],
    x_dot: &'a mut [f64],
    theta: &'a mut [f64],
    theta_dot: &'a mut [f64],
    episode_step: &'a mut [u64],
    episode: &'a mut [u64],
    ended: &'a mut [bool],
    seeds: &'a mut [ChaCha8Rng],
    obs: &'a mut [f32],
    rewards: &'a mut [f64],
    terminated: &'a mut [bool],
    truncated: &'a mut [bool],
    /// Empty unless the mode is `SameStep`.
    final_obs: &'a mut [f32],
}

impl<'a> Lanes<'a> {
    fn of(s: &'a mut State, out: &'a mut VecStep) -> Self {
        Lanes {
            x: &mut s.x,
            x_dot: &mut s.x_dot,
            theta: &mut s.theta,
            theta_dot: &mut s.theta_dot,
            episode_step: &mut s.episode_step,
            episode: &mut s.episode,
            ended: &mut s.ended,
            seeds: &mut s.seeds,
            obs: &mut out.obs,
            rewards: &mut out.rewards,
            terminated: &mut out.terminated,
            truncated: &mut out.truncated,
            final_obs: &mut out.final_obs,
        }
    }

    /// The views of copies `..mid` and `mid..`.
    fn split_at(self, mid: usize) -> (Self, Self) {
        fn split<T>(v: &mut [T], at: usize) -> (&mut [T], &mut [T]) {
            // `final_obs` is empty unless the mode is `SameStep`.
            v.split_at_mut(at.min(v.len()))
        }
        let (x, x2) = split(self.x, mid);
        let (x_dot, x_dot2) = split(self.x_dot, mid);
        let (theta, theta2) = split(self.theta, mid);
        let (theta_dot, theta_dot2) = split(self.theta_dot, mid);
        let (episode_step, episode_step2) = split(self.episode_step, mid);
        let (episode, episode2) = split(self.episode, mid);
        let (ended, ended2) = split(self.ended, mid);
        let (seeds, seeds2) = split(self.seeds, mid);
        let (obs, obs2) = split(self.obs, mid * 4);
        let (rewards, rewards2) = split(self.rewards, mid);
        let (terminated, terminated2) = split(self.terminated, mid);
        let (truncated, truncated2) = split(self.truncated, mid);
        let (final_obs, final_obs2) = split(self.final_obs, mid * 4);
        (
            Lanes {
                x,
                x_dot,
                theta,
                theta_dot,
                episode_step,
                episode,
                ended,
                seeds,
                obs,
                rewards,
                terminated,
                truncated,
                final_obs,
            },
            Lanes {
                x: x2,
                x_dot: x_dot2,
                theta: theta2,
                theta_dot: theta_dot2,
                episode_step: episode_step2,
                episode: episode2,
                ended: ended2,
                seeds: seeds2,
                obs: obs2,
                rewards: rewards2,
                terminated: terminated2,
                truncated: truncated2,
                final_obs: final_obs2,
            },
        )
    }

    /// Builds local copy `j`'s next episode, from the next seed of its stream (the one
    /// [`episode_seed`](super::episode_seed) gives for `episode[j]`), and writes its first
    /// observation.
    fn start_episode(&mut self, j: usize) {
        let s = reset_state(self.seeds[j].next_u64());
        [self.x[j], self.x_dot[j], self.theta[j], self.theta_dot[j]] = s;
        self.episode_step[j] = 0;
        self.ended[j] = false;
        self.obs[j * 4..j * 4 + 4].copy_from_slice(&s.map(|v| v as f32));
        self.rewards[j] = 0.0;
        self.terminated[j] = false;
        self.truncated[j] = false;
    }

    /// One step of every copy in the run: CartPole's `step`, operation for operation.
    ///
    /// Blocks of [`BLOCK`] copies go through three passes: the sines and cosines (the only
    /// library calls, so that the next pass has none and vectorizes), the physics and the
    /// step results of every copy, then the rare episode ends and resets. Copies due for a
    /// `NextStep` reset go through the physics too, and the reset then overwrites them.
    fn step(&mut self, params: Params<'_>, actions: &[usize], mode: AutoresetMode) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, as checked just above.
            return unsafe { self.step_avx2(params, actions, mode) };
        }
        self.step_blocks(params, actions, mode);
    }

    /// [`Lanes::step`] compiled for AVX2, four copies to an instruction. AVX2 without FMA:
    /// the compiler fuses no multiply-add, so every operation rounds as CartPole's does.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn step_avx2(&mut self, params: Params<'_>, actions: &[usize], mode: AutoresetMode) {
        self.step_blocks(params, actions, mode);
    }

    /// The body of [`Lanes::step`], inlined into each of its instruction-set versions.
    #[inline(always)]
    fn step_blocks(&mut self, params: Params<'_>, actions: &[usize], mode: AutoresetMode) {
        let n = self.x.len();
        let mut cos = [0.0; BLOCK];
        let mut sin = [0.0; BLOCK];
        for start in (0..n).step_by(BLOCK) {
            let end = (start + BLOCK).min(n);
            for (k, &theta) in self.theta[start..end].iter().enumerate() {
                (sin[k], cos[k]) = sin_cos(theta);
            }
            let (cos, sin) = (&cos[..end - start], &sin[..end - start]);
            match params {
                Params::Shared(ph) => {
                    // A local copy, so the compiler sees the parameters cannot change
                    // while the state arrays are written, and keeps them in registers.
                    let ph = ph.clone();
                    match ph.p.integrator {
                        Integrator::Euler => {
                            self.advance(start, actions, cos, sin, |_| &ph, |_| false)
                        }
                        Integrator::SemiImplicitEuler => {
                            self.advance(start, actions, cos, sin, |_| &ph, |_| true)
                        }
                    }
                }
                Params::PerCopy(v) => self.advance(
                    start,
                    actions,
                    cos,
                    sin,
                    |j| &v[j],
                    |j| v[j].p.integrator == Integrator::SemiImplicitEuler,
                ),
            }
            self.settle(start, end, mode);
        }
    }

    /// CartPole's physics and step results for the copies `start..start + cos.len()`, given
    /// their cosines and sines. `params(j)` and `semi(j)` take a local copy index.
    #[inline(always)]
    fn advance<'p>(
        &mut self,
        start: usize,
        actions: &[usize],
        cos: &[f64],
        sin: &[f64],
        params: impl Fn(usize) -> &'p Physics,
        semi: impl Fn(usize) -> bool,
    ) {
        let len = cos.len();
        let end = start + len;
        let (x, x_dot) = (&mut self.x[start..end], &mut self.x_dot[start..end]);
        let (theta, theta_dot) = (&mut self.theta[start..end], &mut self.theta_dot[start..end]);
        let episode_step = &mut self.episode_step[start..end];
        let rewards = &mut self.rewards[start..end];
        let (terminated, truncated) = (
            &mut self.terminated[start..end],
            &mut self.truncated[start..end],
        );
        let obs = &mut self.obs[start * 4..end * 4];
        let actions = &actions[start..end];
        for k in 0..len {
            let ph = params(start + k);
            let p = &ph.p;
            let force = if actions[k] == 1 {
                p.force_mag
            } else {
                -p.force_mag
            };
            let (costheta, sintheta) = (cos[k], sin[k]);
            let temp = (force + ph.polemass_length * (theta_dot[k] * theta_dot[k]) * sintheta)
                / ph.total_mass;
            let thetaacc = (p.gravity * sintheta - costheta * temp)
                / (p.length * (4.0 / 3.0 - p.masspole * (costheta * costheta) / ph.total_mass));
            let xacc = temp - ph.polemass_length * thetaacc * costheta / ph.total_mass;
            let s = if semi(start + k) {
                let x_dot = x_dot[k] + p.tau * xacc;
                let theta_dot = theta_dot[k] + p.tau * thetaacc;
                [
                    x[k] + p.tau * x_dot,
                    x_dot,
                    theta[k] + p.tau * theta_dot,
                    theta_dot,
                ]
            } else {
                [
                    x[k] + p.tau * x_dot[k],
                    x_dot[k] + p.tau * xacc,
                    theta[k] + p.tau * theta_dot[k],
                    theta_dot[k] + p.tau * thetaacc,
                ]
            };
            [x[k], x_dot[k], theta[k], theta_dot[k]] = s;
            let steps = episode_step[k] + 1;
            episode_step[k] = steps;
            // Non-short-circuit `|` and `&`: no branches on the thresholds.
            let fell = (s[0] < -p.x_threshold)
                | (s[0] > p.x_threshold)
                | (s[2] < -p.theta_threshold_radians)
                | (s[2] > p.theta_threshold_radians);
            terminated[k] = fell;
            truncated[k] = (p.max_episode_steps > 0) & (steps >= p.max_episode_steps);
            rewards[k] = match (p.sutton_barto_reward, fell) {
                (false, _) => 1.0,
                (true, false) => 0.0,
                (true, true) => -1.0,
            };
            obs[k * 4..k * 4 + 4].copy_from_slice(&s.map(|v| v as f32));
        }
    }

    /// Episode ends and resets for the copies `start..end`, after their physics.
    fn settle(&mut self, start: usize, end: usize, mode: AutoresetMode) {
        for j in start..end {
            if self.ended[j] {
                // Only `NextStep` gets here: `Disabled` refused the batch, and `SameStep`
                // never leaves a copy ended. The reset replaces what the physics computed.
                self.episode[j] += 1;
                self.start_episode(j);
            } else if self.terminated[j] | self.truncated[j] {
                if mode == AutoresetMode::SameStep {
                    self.final_obs[j * 4..j * 4 + 4].copy_from_slice(&self.obs[j * 4..j * 4 + 4]);
                    let results = (self.rewards[j], self.terminated[j], self.truncated[j]);
                    self.episode[j] += 1;
                    self.start_episode(j);
                    (self.rewards[j], self.terminated[j], self.truncated[j]) = results;
                } else {
                    self.ended[j] = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cartpole::CartPole;
    use crate::env::Env;

    #[test]
    fn reset_state_is_cartpole_reset() {
        let mut env = CartPole::new(CartPoleParams::default());
        for seed in [0, 1, 99, u64::MAX] {
            env.reset(seed);
            assert_eq!(
                env.state().map(f64::to_bits),
                reset_state(seed).map(f64::to_bits)
            );
        }
    }

    #[test]
    fn sin_cos_is_sin_and_cos_bit_for_bit() {
        for i in -200_000..=200_000 {
            let theta = f64::from(i) * 3.7e-6;
            let (sin, cos) = sin_cos(theta);
            assert_eq!(
                (sin.to_bits(), cos.to_bits()),
                (theta.sin().to_bits(), theta.cos().to_bits()),
                "theta = {theta}"
            );
        }
    }

    #[test]
    fn set_params_on_one_copy_leaves_the_others_shared() {
        let mut v = CartPoleVec::new(3, CartPoleParams::default(), AutoresetMode::NextStep);
        v.set_params(
            1,
            CartPoleParams {
                gravity: 12.0,
                ..CartPoleParams::default()
            },
        );
        assert_eq!(v.params(0).gravity, 9.8);
        assert_eq!(v.params(1).gravity, 12.0);
        v.set_all_params(CartPoleParams::default());
        assert_eq!(v.params(1).gravity, 9.8);
    }

    #[test]
    fn reset_runs_seeds_each_copy_as_a_single_run() {
        use crate::seed::{Stream, derive};
        let seeds = [40, 41, 42];
        let mut v = CartPoleVec::new(3, CartPoleParams::default(), AutoresetMode::SameStep);
        v.reset_runs(&seeds).unwrap();
        let mut singles: Vec<CartPole> = seeds
            .iter()
            .map(|&s| {
                let mut e = CartPole::new(CartPoleParams::default());
                e.reset(derive(s, Stream::World, 0));
                e
            })
            .collect();
        let mut episodes = [0u64; 3];
        let mut ends = 0;
        for t in 0..400usize {
            let actions: Vec<usize> = (0..3).map(|i| (i + t) % 3 % 2).collect();
            v.step(&actions).unwrap();
            for (i, e) in singles.iter_mut().enumerate() {
                if e.step(&actions[i]).unwrap().done() {
                    ends += 1;
                    episodes[i] += 1;
                    e.reset(derive(seeds[i], Stream::World, episodes[i]));
                }
                assert_eq!(v.state(i).map(f64::to_bits), e.state().map(f64::to_bits));
            }
        }
        assert!(ends > 3, "the runs must cross episode ends");
        assert!(v.reset_runs(&[1, 2]).is_err(), "one seed per copy");
    }
}
