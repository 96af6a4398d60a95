//! `VecEnv`: N copies of any shiftable world, each with its own seeds and regime scheduler.

use crate::env::{Action, Env, EnvError, Observation};
use crate::regime::{Conditions, Scheduler, Shiftable, apply_conditions, validate_conditions};

use super::{AutoresetMode, VecError, VecStep, episode_seed};

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
/// use perennial::vector::{AutoresetMode, VecEnv};
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
    /// Per-copy run seeds set by [`VecEnv::reset_runs`]; empty under [`VecEnv::reset`].
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

struct CopyRegime {
    /// The scheduler as attached, so every `reset(seed)` starts it afresh.
    attached: Scheduler,
    scheduler: Scheduler,
    /// The copy's parameters when the scheduler was attached; a regime's conditions
    /// override these, and every parameter a regime does not name returns to them.
    baseline: Conditions,
}

impl<E: Env + Shiftable> VecEnv<E> {
    /// A vector over `envs` (one copy each). Call [`VecEnv::reset`] before the first step.
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
    /// force at the next [`VecEnv::reset`], which starts it from the state it has now.
    ///
    /// # Errors
    ///
    /// [`VecError::Build`] for a copy that does not exist, [`VecError::Regime`] for a regime
    /// naming an unknown parameter or an out-of-range value.
    pub fn scheduler(mut self, i: usize, scheduler: Scheduler) -> Result<Self, VecError> {
        let env = self.envs.get(i).ok_or_else(|| {
            VecError::Build(format!(
                "no copy {i}: the vector has {} copies",
                self.envs.len()
            ))
        })?;
        let params = env.parameters();
        for regime in scheduler.regimes() {
            validate_conditions(&params, &regime.conditions)
                .map_err(|source| VecError::Regime { index: i, source })?;
        }
        self.copies[i].regime = Some(CopyRegime {
            attached: scheduler.clone(),
            scheduler,
            baseline: env.snapshot(),
        });
        Ok(self)
    }

    /// Number of copies.
    pub fn num_envs(&self) -> usize {
        self.envs.len()
    }

    /// Elements in one copy's observation.
    pub fn obs_len(&self) -> usize {
        self.out.obs_len
    }

    /// The autoreset mode.
    pub fn mode(&self) -> AutoresetMode {
        self.mode
    }

    /// Copy `i`'s world. Panics when `i >= num_envs()`.
    pub fn env(&self, i: usize) -> &E {
        &self.envs[i]
    }

    /// Copy `i`'s scheduler, if it has one. Panics when `i >= num_envs()`.
    pub fn scheduler_of(&self, i: usize) -> Option<&Scheduler> {
        self.copies[i].regime.as_ref().map(|r| &r.scheduler)
    }

    /// Copy `i`'s episode index (0 after `reset(seed)`). Panics when `i >= num_envs()`.
    pub fn episode(&self, i: usize) -> u64 {
        self.copies[i].episode
    }

    /// The buffers as the last step or reset left them.
    pub fn last(&self) -> &VecStep {
        &self.out
    }

    /// Starts a run: restarts every scheduler and applies its first regime, destroys every
    /// copy's world and builds episode 0 of copy `i` from `episode_seed(seed, i, 0)`.
    /// Returns the first observations; rewards and flags are cleared.
    ///
    /// # Errors
    ///
    /// [`VecError::Regime`] when a regime's conditions cannot be applied, and
    /// [`VecError::Copy`] when a world's observation does not have the spec's length.
    pub fn reset(&mut self, seed: u64) -> Result<&[f32], VecError> {
        self.seed = seed;
        self.run_seeds.clear();
        self.start_all()
    }

    /// Like [`VecEnv::reset`], but copy `i` is seeded as a single run with seed `seeds[i]`:
    /// its episode `e` is built from
    /// [`seed::derive`](crate::seed::derive)`(seeds[i], Stream::World, e)`, as the harness
    /// (or a single env reset with that seed) builds a run's episodes. This is how a vector
    /// matches N single envs reset with seeds `s, s + 1, ...`, as Gymnasium seeds its
    /// vector envs. Schedulers restart as attached.
    ///
    /// # Errors
    ///
    /// [`VecError::ActionCount`] when `seeds` does not hold one seed per copy (nothing is
    /// reset then), and the errors of [`VecEnv::reset`].
    pub fn reset_runs(&mut self, seeds: &[u64]) -> Result<&[f32], VecError> {
        if seeds.len() != self.envs.len() {
            return Err(VecError::ActionCount {
                expected: self.envs.len(),
                got: seeds.len(),
            });
        }
        self.run_seeds = seeds.to_vec();
        self.start_all()
    }

    fn start_all(&mut self) -> Result<&[f32], VecError> {
        self.started = false;
        for (i, (env, copy)) in self.envs.iter_mut().zip(&mut self.copies).enumerate() {
            if let Some(r) = copy.regime.as_mut() {
                r.scheduler = r.attached.clone();
                apply_regime(env, r).map_err(|source| VecError::Regime { index: i, source })?;
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

    /// Destroys copy `i`'s world and builds its next episode (the only way on from an ended
    /// episode under `Disabled`). Its reward and flags in [`VecEnv::last`] are cleared and
    /// its observation row holds the new first observation, which is also returned. Its
    /// scheduler and step count go on.
    ///
    /// # Errors
    ///
    /// [`VecError::NotReset`] before `reset(seed)`, [`VecError::Build`] for a copy that does
    /// not exist, [`VecError::Copy`] for an observation of the wrong length.
    pub fn reset_copy(&mut self, i: usize) -> Result<&[f32], VecError> {
        if !self.started {
            return Err(VecError::NotReset);
        }
        if i >= self.envs.len() {
            return Err(VecError::Build(format!(
                "no copy {i}: the vector has {} copies",
                self.envs.len()
            )));
        }
        self.reset_one(i)?;
        Ok(self.out.obs_of(i))
    }

    /// Steps every copy once with `actions[i]` for copy `i`, autoresetting as the mode says.
    ///
    /// # Errors
    ///
    /// Before anything moves: [`VecError::NotReset`], [`VecError::ActionCount`], and
    /// [`VecError::Copy`] naming the first copy whose action is outside its space
    /// ([`EnvError::InvalidAction`]) or, under `Disabled`, whose episode ended
    /// ([`EnvError::EpisodeEnded`]). While stepping, an error a world itself returns is
    /// reported as [`VecError::Copy`] with that copy's index; copies before it have then
    /// stepped and the buffers are not a complete step.
    pub fn step(&mut self, actions: &[E::Action]) -> Result<&VecStep, VecError> {
        self.check(actions)?;
        for (i, action) in actions.iter().enumerate() {
            if self.copies[i].ended {
                self.reset_one(i)?;
                continue;
            }
            let (env, copy) = (&mut self.envs[i], &mut self.copies[i]);
            if let Some(r) = copy.regime.as_mut()
                && r.scheduler.next_shift_due(copy.steps)
                && r.scheduler.before_step(copy.steps).is_some()
            {
                apply_regime(env, r).map_err(|source| VecError::Regime { index: i, source })?;
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

    /// Everything that must hold before any copy moves.
    fn check(&self, actions: &[E::Action]) -> Result<(), VecError> {
        if !self.started {
            return Err(VecError::NotReset);
        }
        if actions.len() != self.envs.len() {
            return Err(VecError::ActionCount {
                expected: self.envs.len(),
                got: actions.len(),
            });
        }
        for (i, (env, action)) in self.envs.iter().zip(actions).enumerate() {
            let space = &env.spec().action_space;
            if !action.in_space(space) {
                return Err(VecError::Copy {
                    index: i,
                    source: EnvError::invalid_action(action, space),
                });
            }
        }
        if self.mode == AutoresetMode::Disabled
            && let Some(i) = self.copies.iter().position(|c| c.ended)
        {
            return Err(VecError::Copy {
                index: i,
                source: EnvError::EpisodeEnded,
            });
        }
        Ok(())
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

/// The world seed of copy `i`'s episode `episode`: from its run seed under
/// [`VecEnv::reset_runs`], else from the vector seed.
fn world_seed(run_seeds: &[u64], seed: u64, i: usize, episode: u64) -> u64 {
    match run_seeds.get(i) {
        Some(&s) => crate::seed::derive(s, crate::seed::Stream::World, episode),
        None => episode_seed(seed, i, episode),
    }
}

/// Puts the regime in force on the copy: its baseline, overridden by the regime's conditions.
fn apply_regime<E: Shiftable>(
    env: &mut E,
    r: &CopyRegime,
) -> Result<(), crate::regime::RegimeError> {
    let mut merged = r.baseline.clone();
    merged.extend(
        r.scheduler
            .regime()
            .conditions
            .iter()
            .map(|(k, v)| (k.clone(), *v)),
    );
    apply_conditions(env, &merged)
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
