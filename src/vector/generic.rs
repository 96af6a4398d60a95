//! `VecEnv`: N copies of any shiftable world, each with its own seeds and regime scheduler.

use crate::env::{Action, Env, EnvError, Observation};
use crate::regime::{Scheduler, Shiftable};

use super::{
    AutoresetMode, CopyRegime, VecError, VecStep, VectorEnv, check_batch, check_copy, check_count,
    episode_seed, no_copy,
};

/// N copies of a world stepped in one call, with batched buffers and explicit autoreset.
///
/// Copy `i` is `envs[i]`; its episodes are seeded with [`episode_seed`]`(seed, i, e)`; its
/// optional [`Scheduler`] is asked before each of its env steps, on its own step count
/// (env steps taken since `reset(seed)`; `NextStep` reset steps are not env steps). The
/// rules and the autoreset table are in the [module docs](super).
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
/// use perennial::vector::{AutoresetMode, VecEnv, VectorEnv};
///
/// let envs = (0..3).map(|_| CartPole::new(CartPoleParams::default())).collect();
/// let heavy = vec![Regime::new("earth", &[]), Regime::new("heavy", &[("gravity", 19.6)])];
/// let plan = Plan::Fixed { shifts: vec![(10, "heavy".into())] };
/// let mut v = VecEnv::new(envs, AutoresetMode::SameStep)
///     .unwrap()
///     .scheduler(1, Scheduler::new(heavy, plan, 0).unwrap())
///     .unwrap();
/// v.reset(7).unwrap();
/// for _ in 0..10 {
///     v.step(&[0, 1, 0]).unwrap();
/// }
/// assert_eq!(v.env(1).params().gravity, 9.8);
/// v.step(&[0, 1, 0]).unwrap();
/// assert_eq!(v.env(1).params().gravity, 19.6, "copy 1 shifted before its 11th step");
/// assert_eq!(v.env(0).params().gravity, 9.8);
/// ```
pub struct VecEnv<E: Env + Shiftable> {
    envs: Vec<E>,
    copies: Vec<CopyState>,
    mode: AutoresetMode,
    seed: u64,
    /// Per-copy run seeds set by `reset_runs`; empty under `reset`.
    run_seeds: Vec<u64>,
    started: bool,
    out: VecStep,
}

/// One copy's bookkeeping beside its world.
struct CopyState {
    episode: u64,
    /// Env steps since `reset(seed)`: the scheduler's step axis.
    steps: u64,
    /// The episode ended and the copy has not been reset since (a reset is due under
    /// `NextStep`; stepping is an error under `Disabled`).
    ended: bool,
    regime: Option<CopyRegime>,
}

impl<E: Env + Shiftable> VecEnv<E> {
    /// A vector over `envs` (one copy each). Call [`VectorEnv::reset`] before the first step.
    ///
    /// # Errors
    ///
    /// [`VecError::Build`] for no envs, or envs whose observation spaces differ in length.
    pub fn new(envs: Vec<E>, mode: AutoresetMode) -> Result<Self, VecError> {
        let Some(first) = envs.first() else {
            return Err(VecError::Build("give at least one env".into()));
        };
        let obs_len = first.spec().observation_space.len();
        if let Some(i) = envs
            .iter()
            .position(|e| e.spec().observation_space.len() != obs_len)
        {
            return Err(VecError::Build(format!(
                "env {i} has {} observation elements and env 0 has {obs_len}; every copy needs the same observation length",
                envs[i].spec().observation_space.len()
            )));
        }
        let copies = envs
            .iter()
            .map(|_| CopyState {
                episode: 0,
                steps: 0,
                ended: false,
                regime: None,
            })
            .collect();
        Ok(VecEnv {
            out: VecStep::new(envs.len(), obs_len, mode),
            envs,
            copies,
            mode,
            seed: 0,
            run_seeds: Vec::new(),
            started: false,
        })
    }

    /// Attaches `scheduler` to copy `i`. Its regimes are checked against the copy's
    /// parameters now, and the copy's current parameters become its baseline. It comes into
    /// force at the next [`VectorEnv::reset`], which starts it from the state it has now.
    ///
    /// # Errors
    ///
    /// [`VecError::Build`] for a copy that does not exist, [`VecError::Regime`] for a regime
    /// naming an unknown parameter or an out-of-range value.
    pub fn scheduler(mut self, i: usize, scheduler: Scheduler) -> Result<Self, VecError> {
        let env = self
            .envs
            .get(i)
            .ok_or_else(|| no_copy(i, self.envs.len()))?;
        self.copies[i].regime = Some(CopyRegime::attach(i, env, scheduler)?);
        Ok(self)
    }

    /// Copy `i`'s world. Panics when `i >= num_envs()`.
    pub fn env(&self, i: usize) -> &E {
        &self.envs[i]
    }

    fn start_all(&mut self) -> Result<&[f32], VecError> {
        self.started = false;
        for (i, (env, copy)) in self.envs.iter_mut().zip(&mut self.copies).enumerate() {
            if let Some(r) = copy.regime.as_mut() {
                r.restart(i, env)?;
            }
            copy.episode = 0;
            copy.steps = 0;
            copy.ended = false;
            let obs = env.reset(world_seed(&self.run_seeds, self.seed, i, 0));
            write_row(&mut self.out.obs, self.out.obs_len, i, obs.as_slice())?;
        }
        self.out.clear_results();
        self.started = true;
        Ok(&self.out.obs)
    }

    fn reset_one(&mut self, i: usize) -> Result<(), VecError> {
        let copy = &mut self.copies[i];
        copy.episode += 1;
        copy.ended = false;
        let obs = self.envs[i].reset(world_seed(&self.run_seeds, self.seed, i, copy.episode));
        self.out.rewards[i] = 0.0;
        self.out.terminated[i] = false;
        self.out.truncated[i] = false;
        write_row(&mut self.out.obs, self.out.obs_len, i, obs.as_slice())
    }
}

impl<E: Env + Shiftable> VectorEnv for VecEnv<E> {
    type Action = E::Action;

    fn reset(&mut self, seed: u64) -> Result<&[f32], VecError> {
        self.seed = seed;
        self.run_seeds.clear();
        self.start_all()
    }

    fn reset_runs(&mut self, seeds: &[u64]) -> Result<&[f32], VecError> {
        check_count(self.envs.len(), seeds.len())?;
        self.run_seeds = seeds.to_vec();
        self.start_all()
    }

    fn reset_copy(&mut self, i: usize) -> Result<&[f32], VecError> {
        check_copy(self.started, i, self.envs.len())?;
        self.reset_one(i)?;
        Ok(self.out.obs_of(i))
    }

    fn step(&mut self, actions: &[E::Action]) -> Result<&VecStep, VecError> {
        let envs = &self.envs;
        check_batch(
            self.started,
            self.mode,
            actions,
            envs.len(),
            |i, action| {
                let space = &envs[i].spec().action_space;
                (!action.in_space(space)).then(|| EnvError::invalid_action(action, space))
            },
            self.copies.iter().map(|c| c.ended),
        )?;
        for (i, action) in actions.iter().enumerate() {
            if self.copies[i].ended {
                self.reset_one(i)?;
                continue;
            }
            let (env, copy) = (&mut self.envs[i], &mut self.copies[i]);
            if let Some(r) = copy.regime.as_mut() {
                r.before_step(i, copy.steps, env)?;
            }
            let t = env
                .step(action)
                .map_err(|source| VecError::Copy { index: i, source })?;
            copy.steps += 1;
            self.out.rewards[i] = t.reward;
            self.out.terminated[i] = t.terminated;
            self.out.truncated[i] = t.truncated;
            if t.done() && self.mode == AutoresetMode::SameStep {
                write_row(
                    &mut self.out.final_obs,
                    self.out.obs_len,
                    i,
                    t.observation.as_slice(),
                )?;
                let obs = env.reset(world_seed(&self.run_seeds, self.seed, i, copy.episode + 1));
                copy.episode += 1;
                write_row(&mut self.out.obs, self.out.obs_len, i, obs.as_slice())?;
            } else {
                copy.ended = t.done();
                write_row(
                    &mut self.out.obs,
                    self.out.obs_len,
                    i,
                    t.observation.as_slice(),
                )?;
            }
        }
        Ok(&self.out)
    }

    fn last(&self) -> &VecStep {
        &self.out
    }

    fn episode(&self, i: usize) -> u64 {
        self.copies[i].episode
    }

    fn scheduler_of(&self, i: usize) -> Option<&Scheduler> {
        self.copies[i].regime.as_ref().map(|r| &r.scheduler)
    }
}

/// The world seed of copy `i`'s episode `episode`: from its run seed under
/// [`VectorEnv::reset_runs`], else from the vector seed.
fn world_seed(run_seeds: &[u64], seed: u64, i: usize, episode: u64) -> u64 {
    match run_seeds.get(i) {
        Some(&s) => crate::seed::derive(s, crate::seed::Stream::World, episode),
        None => episode_seed(seed, i, episode),
    }
}

/// Copies one observation into row `i` of a batched buffer of `obs_len`-element rows.
fn write_row(buf: &mut [f32], obs_len: usize, i: usize, obs: &[f32]) -> Result<(), VecError> {
    if obs.len() != obs_len {
        return Err(VecError::Copy {
            index: i,
            source: EnvError::World(format!(
                "the observation has {} elements and the observation space {obs_len}",
                obs.len()
            )),
        });
    }
    buf[i * obs_len..(i + 1) * obs_len].copy_from_slice(obs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cartpole::{CartPole, CartPoleParams};
    use crate::seed::{Stream, derive};

    #[test]
    fn reset_runs_seeds_each_copy_as_a_single_run_across_autoresets() {
        let seeds = [7, 8];
        let envs = vec![CartPole::new(CartPoleParams::default()); 2];
        let mut v = VecEnv::new(envs, AutoresetMode::NextStep).unwrap();
        v.reset_runs(&seeds).unwrap();
        let mut singles = vec![CartPole::new(CartPoleParams::default()); 2];
        let mut episodes = [0u64; 2];
        let mut pending = [false; 2];
        for (i, e) in singles.iter_mut().enumerate() {
            e.reset(derive(seeds[i], Stream::World, 0));
        }
        let mut ends = 0;
        for t in 0..300usize {
            let actions = [t % 2, (t / 3) % 2];
            let step = v.step(&actions).unwrap().clone();
            for (i, e) in singles.iter_mut().enumerate() {
                let obs = if pending[i] {
                    pending[i] = false;
                    episodes[i] += 1;
                    e.reset(derive(seeds[i], Stream::World, episodes[i]))
                } else {
                    let tr = e.step(&actions[i]).unwrap();
                    pending[i] = tr.done();
                    ends += usize::from(tr.done());
                    tr.observation
                };
                assert_eq!(step.obs_of(i), obs.as_slice(), "copy {i}, step {t}");
            }
        }
        assert!(ends > 2, "the runs must cross episode ends");
        assert!(v.reset_runs(&[1]).is_err(), "one seed per copy");
    }
}
