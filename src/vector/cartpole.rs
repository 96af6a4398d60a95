//! `CartPoleVec`: N CartPoles in structure-of-arrays form, stepped in one tight loop.

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cartpole::{CartPoleParams, Integrator};
use crate::env::{EnvError, Space};

use super::{AutoresetMode, VecError, VecStep, copy_seeds};

/// N Gymnasium CartPole-v1 copies in one structure-of-arrays state, stepped in one loop.
///
/// Bit-identical to N independent [`CartPole`](crate::cartpole::CartPole)s: copy `i`'s
/// episode `e` starts as `CartPole::reset(episode_seed(seed, i, e))` does, and each step
/// performs CartPole's floating-point operations in CartPole's order (no fused
/// multiply-adds, no reciprocals), so every observation, reward and flag agrees to the
/// bit. Parameters are shared by all copies or set per copy. The autoreset modes and rules
/// are those of the [module docs](super).
///
/// With [`CartPoleVec::with_threads`] a step splits the copies into contiguous chunks, one
/// per thread; results do not depend on the thread count. The threads are scoped and
/// spawned on every step, so they pay only for many thousands of copies on idle cores: on
/// a busy two-core machine, 4096 copies ran about 3.7 times slower on two threads than on
/// one (`BENCHMARKS.md`).
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
/// use perennial::vector::{AutoresetMode, CartPoleVec};
///
/// let mut envs = CartPoleVec::new(2, CartPoleParams::default(), AutoresetMode::NextStep);
/// envs.reset(0);
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
    threads: usize,
    started: bool,
    out: VecStep,
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

/// The parameters a step reads: borrowed from a [`ParamSet`].
#[derive(Clone, Copy)]
enum Params<'a> {
    Shared(&'a Physics),
    PerCopy(&'a [Physics]),
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
    /// `num_envs` copies sharing `params`. Call [`CartPoleVec::reset`] before the first step.
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
            threads: 1,
            started: false,
            out: VecStep::new(n, 4, mode),
        }
    }

    /// Splits each step over `threads` threads (at least 1; default 1).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Number of copies.
    pub fn num_envs(&self) -> usize {
        self.state.x.len()
    }

    /// The autoreset mode.
    pub fn mode(&self) -> AutoresetMode {
        self.mode
    }

    /// Threads a step is split over.
    pub fn threads(&self) -> usize {
        self.threads
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

    /// Copy `i`'s episode index (0 after `reset(seed)`). Panics when `i >= num_envs()`.
    pub fn episode(&self, i: usize) -> u64 {
        self.state.episode[i]
    }

    /// Steps taken in copy `i`'s current episode. Panics when `i >= num_envs()`.
    pub fn episode_step(&self, i: usize) -> u64 {
        self.state.episode_step[i]
    }

    /// The buffers as the last step or reset left them.
    pub fn last(&self) -> &VecStep {
        &self.out
    }

    /// Destroys every copy's world and builds episode 0 of copy `i` from
    /// `episode_seed(seed, i, 0)`. Returns the first observations; rewards and flags are
    /// cleared.
    pub fn reset(&mut self, seed: u64) -> &[f32] {
        let n = self.num_envs();
        self.state.seeds = (0..n).map(|i| copy_seeds(seed, i)).collect();
        self.start_all()
    }

    /// Like [`CartPoleVec::reset`], but copy `i` is seeded as a single run with seed
    /// `seeds[i]`: its episode `e` starts from
    /// [`seed::derive`](crate::seed::derive)`(seeds[i], Stream::World, e)`, exactly as the
    /// harness (or a single env reset with that seed) builds a run's episodes. This is how a
    /// vector matches N single envs reset with seeds `s, s + 1, ...`, as Gymnasium seeds
    /// its vector envs.
    ///
    /// # Errors
    ///
    /// [`VecError::ActionCount`] when `seeds` does not hold one seed per copy; nothing is
    /// reset then.
    pub fn reset_runs(&mut self, seeds: &[u64]) -> Result<&[f32], VecError> {
        if seeds.len() != self.num_envs() {
            return Err(VecError::ActionCount {
                expected: self.num_envs(),
                got: seeds.len(),
            });
        }
        self.state.seeds = seeds
            .iter()
            .map(|&s| crate::seed::rng(s, crate::seed::Stream::World))
            .collect();
        Ok(self.start_all())
    }

    fn start_all(&mut self) -> &[f32] {
        let n = self.num_envs();
        let mut lanes = Lanes::of(&mut self.state, &mut self.out);
        for i in 0..n {
            lanes.episode[i] = 0;
            lanes.start_episode(i);
        }
        self.out.clear_results();
        self.started = true;
        &self.out.obs
    }

    /// Destroys copy `i`'s world and builds its next episode (the only way on from an ended
    /// episode under `Disabled`). Its reward and flags in [`CartPoleVec::last`] are cleared
    /// and its observation row holds the new first observation, which is also returned.
    ///
    /// # Errors
    ///
    /// [`VecError::NotReset`] before `reset(seed)`, [`VecError::Build`] for a copy that does
    /// not exist.
    pub fn reset_copy(&mut self, i: usize) -> Result<&[f32], VecError> {
        if !self.started {
            return Err(VecError::NotReset);
        }
        if i >= self.num_envs() {
            return Err(VecError::Build(format!(
                "no copy {i}: the vector has {} copies",
                self.num_envs()
            )));
        }
        let mut lanes = Lanes::of(&mut self.state, &mut self.out);
        lanes.episode[i] += 1;
        lanes.start_episode(i);
        Ok(self.out.obs_of(i))
    }

    /// Steps every copy once, action `actions[i]` (0 pushes left, 1 right) for copy `i`,
    /// autoresetting as the mode says.
    ///
    /// # Errors
    ///
    /// Before anything moves: [`VecError::NotReset`], [`VecError::ActionCount`], and
    /// [`VecError::Copy`] naming the first copy whose action is not 0 or 1
    /// ([`EnvError::InvalidAction`]) or, under `Disabled`, whose episode ended
    /// ([`EnvError::EpisodeEnded`]).
    pub fn step(&mut self, actions: &[usize]) -> Result<&VecStep, VecError> {
        self.check(actions)?;
        let mode = self.mode;
        let lanes = Lanes::of(&mut self.state, &mut self.out);
        let chunk = lanes.x.len().div_ceil(self.threads).max(1);
        let params = &self.params;
        run_chunks(lanes, actions, chunk, &|lanes, actions| {
            let params = match params {
                ParamSet::Shared(ph) => Params::Shared(ph),
                ParamSet::PerCopy(v) => {
                    Params::PerCopy(&v[lanes.first..lanes.first + lanes.x.len()])
                }
            };
            lanes.step(params, actions, mode)
        });
        Ok(&self.out)
    }

    /// Everything that must hold before any copy moves.
    fn check(&self, actions: &[usize]) -> Result<(), VecError> {
        if !self.started {
            return Err(VecError::NotReset);
        }
        if actions.len() != self.num_envs() {
            return Err(VecError::ActionCount {
                expected: self.num_envs(),
                got: actions.len(),
            });
        }
        if let Some(i) = actions.iter().position(|&a| a > 1) {
            return Err(VecError::Copy {
                index: i,
                source: EnvError::invalid_action(&actions[i], &Space::Discrete { n: 2 }),
            });
        }
        if self.mode == AutoresetMode::Disabled
            && let Some(i) = self.state.ended.iter().position(|&e| e)
        {
            return Err(VecError::Copy {
                index: i,
                source: EnvError::EpisodeEnded,
            });
        }
        Ok(())
    }
}

/// CartPole's reset, draw for draw: each state element uniform in `[-0.05, 0.05)` from a
/// ChaCha8 stream seeded with `seed`.
fn reset_state(seed: u64) -> [f64; 4] {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    std::array::from_fn(|_| rng.random_range(-0.05..0.05))
}

/// A contiguous run of copies: mutable views of every per-copy array, so that chunks can
/// be stepped on different threads.
struct Lanes<'a> {
    /// Index of the first copy of the run in the whole vector (for per-copy parameters).
    first: usize,
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
            first: 0,
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

    /// The first `mid` copies and the rest.
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (x0, x1) = self.x.split_at_mut(mid);
        let (xd0, xd1) = self.x_dot.split_at_mut(mid);
        let (t0, t1) = self.theta.split_at_mut(mid);
        let (td0, td1) = self.theta_dot.split_at_mut(mid);
        let (es0, es1) = self.episode_step.split_at_mut(mid);
        let (ep0, ep1) = self.episode.split_at_mut(mid);
        let (en0, en1) = self.ended.split_at_mut(mid);
        let (sd0, sd1) = self.seeds.split_at_mut(mid);
        let (o0, o1) = self.obs.split_at_mut(mid * 4);
        let (r0, r1) = self.rewards.split_at_mut(mid);
        let (te0, te1) = self.terminated.split_at_mut(mid);
        let (tr0, tr1) = self.truncated.split_at_mut(mid);
        let (f0, f1) = self
            .final_obs
            .split_at_mut((mid * 4).min(self.final_obs.len()));
        (
            Lanes {
                first: self.first,
                x: x0,
                x_dot: xd0,
                theta: t0,
                theta_dot: td0,
                episode_step: es0,
                episode: ep0,
                ended: en0,
                seeds: sd0,
                obs: o0,
                rewards: r0,
                terminated: te0,
                truncated: tr0,
                final_obs: f0,
            },
            Lanes {
                first: self.first + mid,
                x: x1,
                x_dot: xd1,
                theta: t1,
                theta_dot: td1,
                episode_step: es1,
                episode: ep1,
                ended: en1,
                seeds: sd1,
                obs: o1,
                rewards: r1,
                terminated: te1,
                truncated: tr1,
                final_obs: f1,
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
        let n = self.x.len();
        let mut cos = [0.0; BLOCK];
        let mut sin = [0.0; BLOCK];
        for start in (0..n).step_by(BLOCK) {
            let end = (start + BLOCK).min(n);
            for (k, theta) in self.theta[start..end].iter().enumerate() {
                cos[k] = theta.cos();
                sin[k] = theta.sin();
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

/// Runs `f` on consecutive chunks of `chunk` copies, the first on this thread and the others
/// on scoped threads.
fn run_chunks<F>(lanes: Lanes<'_>, actions: &[usize], chunk: usize, f: &F)
where
    F: Fn(&mut Lanes<'_>, &[usize]) + Sync,
{
    if lanes.x.len() <= chunk {
        let mut lanes = lanes;
        f(&mut lanes, actions);
        return;
    }
    std::thread::scope(|scope| {
        let (mut head, mut rest) = lanes.split_at(chunk);
        let (head_actions, mut rest_actions) = actions.split_at(chunk);
        while !rest.x.is_empty() {
            let mid = chunk.min(rest.x.len());
            let (mut part, tail) = rest.split_at(mid);
            let (part_actions, tail_actions) = rest_actions.split_at(mid);
            scope.spawn(move || f(&mut part, part_actions));
            (rest, rest_actions) = (tail, tail_actions);
        }
        f(&mut head, head_actions);
    });
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
    fn thread_count_does_not_change_results() {
        let run = |threads| {
            let mut v = CartPoleVec::new(37, CartPoleParams::default(), AutoresetMode::SameStep)
                .with_threads(threads);
            v.reset(3);
            let mut log = Vec::new();
            for t in 0..300usize {
                let actions: Vec<usize> = (0..37).map(|i| (i * 7 + t * 3) % 5 % 2).collect();
                let s = v.step(&actions).unwrap();
                log.extend(s.obs().iter().map(|o| o.to_bits() as u64));
                log.extend(s.final_obs().iter().map(|o| o.to_bits() as u64));
                log.extend(s.terminated().iter().map(|&b| u64::from(b)));
            }
            log
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(5));
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
