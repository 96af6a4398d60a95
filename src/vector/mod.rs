//! Vectorized environments: N copies of a world stepped in one call, with batched buffers.
//!
//! Two vectors implement one trait, [`VectorEnv`], with one output type, [`VecStep`], one
//! error type, [`VecError`], and one set of rules:
//!
//! - [`VecEnv`] holds N copies of any [`Env`](crate::env::Env) + [`Shiftable`] world, each
//!   with its own optional regime [`Scheduler`];
//! - [`CartPoleVec`] is CartPole specialised: structure-of-arrays state, one tight loop, no
//!   per-copy dynamic calls, each copy with its own optional regime scheduler too. It is
//!   bit-identical to N independent [`CartPole`](crate::cartpole::CartPole)s given the same
//!   seeds, actions and schedulers.
//!
//! # Buffers
//!
//! A step writes into buffers owned by the vector and returns them as a [`VecStep`]: the
//! observations in **one contiguous `Vec<f32>`** of `num_envs × obs_len` elements, copy `i`
//! in `obs[i * obs_len..(i + 1) * obs_len]`; rewards as `f64`; `terminated` and `truncated`
//! as `bool`s, one per copy. Nothing is allocated per step.
//!
//! # Autoreset
//!
//! What happens to a copy whose episode ended is explicit and named as in Gymnasium
//! ([`AutoresetMode`]). "Ends" means the copy returned `terminated` or `truncated` (or both).
//!
//! | mode | the step on which copy `i` ends | copy `i`'s next step |
//! |---|---|---|
//! | `NextStep` (default, Gymnasium's default) | returns the final obs, the reward and the flags; the world is left as it ended | resets copy `i` with its next episode seed; **the action is ignored** (it is still checked against the space); returns the reset obs, reward `0.0`, both flags `false`; no env step is taken, so the copy's scheduler does not advance |
//! | `SameStep` | steps, then resets copy `i` at once: `obs` holds the **new** episode's first obs, the reward and flags are the ending step's, and the final obs is kept in [`VecStep::final_obs`] | an ordinary step of the new episode |
//! | `Disabled` | returns the final obs, the reward and the flags | an error, [`VecError::Copy`] with [`EnvError::EpisodeEnded`] naming the copy, until the caller resets it with `reset_copy(i)`; no copy is stepped |
//!
//! # Rules
//!
//! - **The vector never resets a copy except as its autoreset mode says** (or when the caller
//!   asks, through `reset` or `reset_copy`). Every reset destroys that copy's world, as
//!   [`Env::reset`](crate::env::Env::reset) does.
//! - **A copy's regime shift ends nothing.** Each copy's scheduler is consulted before each
//!   of that copy's env steps, on that copy's own step count; a shift changes the copy's
//!   parameters from that step on, and no flag, reset or reward reports it.
//! - **A bad batch steps nothing.** The action count, every action (against its copy's
//!   action space) and, under `Disabled`, every copy's liveness are checked before any copy
//!   moves; the error names the first offending copy.
//! - **Seeds are per copy and per episode.** Copy `i`'s episode `e` (counted from 0 at
//!   `reset(seed)`, one more at every reset of that copy) is built with
//!   [`episode_seed`]`(seed, i, e)`, so a copy's worlds depend neither on the number of
//!   copies nor on what the other copies do.
//!
//! # Examples
//!
//! ```
//! use perennial::prelude::*;
//! use perennial::vector::{AutoresetMode, CartPoleVec, VectorEnv};
//!
//! let mut envs = CartPoleVec::new(8, CartPoleParams::default(), AutoresetMode::NextStep);
//! let obs = envs.reset(42).unwrap();
//! assert_eq!(obs.len(), 8 * 4);
//! let step = envs.step(&[1; 8]).unwrap();
//! assert_eq!(step.rewards(), &[1.0; 8]);
//! assert_eq!(step.obs_of(3).len(), 4);
//! ```

mod cartpole;
mod generic;
mod helper;

use std::fmt;

use rand_chacha::ChaCha8Rng;

use crate::env::EnvError;
use crate::regime::RegimeError;

pub use cartpole::CartPoleVec;
pub use generic::VecEnv;

use crate::regime::{
    Conditions, NotifyLevel, Scheduler, Shiftable, apply_over_baseline, validate_conditions,
};

/// What every vector of environments offers: [`VecEnv`] and [`CartPoleVec`] implement it
/// with the same rules and the same errors, so code written against it runs on either.
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
/// use perennial::vector::{AutoresetMode, CartPoleVec, VecEnv, VectorEnv};
///
/// fn rewards(v: &mut impl VectorEnv<Action = usize>) -> f64 {
///     v.reset(3).unwrap();
///     let actions = vec![1; v.num_envs()];
///     (0..20).map(|_| v.step(&actions).unwrap().rewards().iter().sum::<f64>()).sum()
/// }
///
/// let mut soa = CartPoleVec::new(4, CartPoleParams::default(), AutoresetMode::NextStep);
/// let envs = vec![CartPole::new(CartPoleParams::default()); 4];
/// let mut generic = VecEnv::new(envs, AutoresetMode::NextStep).unwrap();
/// assert_eq!(rewards(&mut soa), rewards(&mut generic));
/// ```
pub trait VectorEnv {
    /// One copy's action.
    type Action;

    /// Starts a run: restarts every scheduler and applies its first regime, destroys every
    /// copy's world and builds episode 0 of copy `i` from [`episode_seed`]`(seed, i, 0)`.
    /// Returns the first observations; rewards and flags are cleared.
    ///
    /// # Errors
    ///
    /// [`VecError::Regime`] when a regime's conditions cannot be applied, and
    /// [`VecError::Copy`] when a world's observation does not have the spec's length.
    fn reset(&mut self, seed: u64) -> Result<&[f32], VecError>;

    /// Like [`VectorEnv::reset`], but copy `i` is seeded as a single run with seed
    /// `seeds[i]`: its episode `e` is built from
    /// [`seed::derive`](crate::seed::derive)`(seeds[i], Stream::World, e)`, as the harness
    /// (or a single env reset with that seed) builds a run's episodes. This is how a vector
    /// matches N single envs reset with seeds `s, s + 1, ...`, as Gymnasium seeds its
    /// vector envs. Schedulers restart as attached.
    ///
    /// # Errors
    ///
    /// [`VecError::ActionCount`] when `seeds` does not hold one seed per copy (nothing is
    /// reset then), and the errors of [`VectorEnv::reset`].
    fn reset_runs(&mut self, seeds: &[u64]) -> Result<&[f32], VecError>;

    /// Destroys copy `i`'s world and builds its next episode (the only way on from an ended
    /// episode under `Disabled`). Its reward and flags in [`VectorEnv::last`] are cleared and
    /// its observation row holds the new first observation, which is also returned. Its
    /// scheduler and step count go on.
    ///
    /// # Errors
    ///
    /// [`VecError::NotReset`] before `reset(seed)`, [`VecError::Build`] for a copy that does
    /// not exist, [`VecError::Copy`] for an observation of the wrong length.
    fn reset_copy(&mut self, i: usize) -> Result<&[f32], VecError>;

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
    fn step(&mut self, actions: &[Self::Action]) -> Result<&VecStep, VecError>;

    /// The buffers as the last step or reset left them.
    fn last(&self) -> &VecStep;

    /// Number of copies.
    fn num_envs(&self) -> usize {
        self.last().num_envs()
    }

    /// Elements in one copy's observation.
    fn obs_len(&self) -> usize {
        self.last().obs_len()
    }

    /// The autoreset mode.
    fn mode(&self) -> AutoresetMode {
        self.last().mode
    }

    /// Copy `i`'s episode index (0 after `reset(seed)`). Panics when `i >= num_envs()`.
    fn episode(&self, i: usize) -> u64;

    /// Copy `i`'s scheduler, if it has one. Panics when `i >= num_envs()`.
    fn scheduler_of(&self, i: usize) -> Option<&Scheduler>;
}

/// One copy's regime scheduler, as a vector keeps it.
#[derive(Clone, Debug)]
struct CopyRegime {
    /// The scheduler as attached, so every `reset(seed)` starts it afresh.
    attached: Scheduler,
    scheduler: Scheduler,
    /// The copy's parameters when the scheduler was attached; a regime's conditions
    /// override these, and every parameter a regime does not name returns to them.
    baseline: Conditions,
}

impl CopyRegime {
    /// Attaches `scheduler` to copy `i`, whose world is `world`: its regimes are checked
    /// against the world's parameters and the world's current values become the baseline.
    fn attach(i: usize, world: &impl Shiftable, scheduler: Scheduler) -> Result<Self, VecError> {
        let params = world.parameters();
        for regime in scheduler.regimes() {
            validate_conditions(&params, &regime.conditions)
                .map_err(|source| VecError::Regime { index: i, source })?;
        }
        Ok(CopyRegime {
            attached: scheduler.clone(),
            scheduler,
            baseline: world.snapshot(),
        })
    }

    /// Restarts the scheduler as attached and puts its first regime in force on copy `i`.
    fn restart(&mut self, i: usize, world: &mut impl Shiftable) -> Result<(), VecError> {
        self.scheduler = self.attached.clone();
        self.apply(i, world)
    }

    /// Before copy `i`'s env step number `steps`: applies a shift that falls due there.
    /// Returns whether the regime changed.
    fn before_step(
        &mut self,
        i: usize,
        steps: u64,
        world: &mut impl Shiftable,
    ) -> Result<bool, VecError> {
        // A vector tells no agent of shifts: the notify level is the run's, not the copy's.
        let shifted = crate::session::shift_due(
            &mut self.scheduler,
            world,
            &self.baseline,
            steps,
            NotifyLevel::None,
        )
        .map_err(|source| VecError::Regime { index: i, source })?;
        Ok(shifted.is_some())
    }

    fn apply(&self, i: usize, world: &mut impl Shiftable) -> Result<(), VecError> {
        apply_over_baseline(world, &self.baseline, self.scheduler.regime())
            .map_err(|source| VecError::Regime { index: i, source })
    }
}

/// The error for a copy index past the end of a vector of `n` copies.
fn no_copy(i: usize, n: usize) -> VecError {
    VecError::Build(format!("no copy {i}: the vector has {n} copies"))
}

/// The checks `reset_copy(i)` makes on a vector of `n` copies before it touches anything.
fn check_copy(started: bool, i: usize, n: usize) -> Result<(), VecError> {
    if !started {
        return Err(VecError::NotReset);
    }
    if i >= n {
        return Err(no_copy(i, n));
    }
    Ok(())
}

/// The error for `got` seeds, actions or the like given to a vector of `expected` copies.
fn check_count(expected: usize, got: usize) -> Result<(), VecError> {
    if got != expected {
        return Err(VecError::ActionCount { expected, got });
    }
    Ok(())
}

/// Everything a step checks before any copy moves, given each action's fit to its copy's
/// space (`invalid(i, a)` returns the error of copy `i`'s action `a`, if any) and which
/// copies ended.
fn check_batch<A>(
    started: bool,
    mode: AutoresetMode,
    actions: &[A],
    n: usize,
    invalid: impl Fn(usize, &A) -> Option<EnvError>,
    mut ended: impl Iterator<Item = bool>,
) -> Result<(), VecError> {
    if !started {
        return Err(VecError::NotReset);
    }
    check_count(n, actions.len())?;
    if let Some((index, source)) = actions
        .iter()
        .enumerate()
        .find_map(|(i, a)| invalid(i, a).map(|e| (i, e)))
    {
        return Err(VecError::Copy { index, source });
    }
    if mode == AutoresetMode::Disabled
        && let Some(index) = ended.position(|e| e)
    {
        return Err(VecError::Copy {
            index,
            source: EnvError::EpisodeEnded,
        });
    }
    Ok(())
}

/// What a vector does with a copy whose episode ended, named as in Gymnasium.
///
/// See the [module docs](self) for the table of what each mode returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoresetMode {
    /// The step after the end resets the copy, ignores its action, and returns the reset
    /// observation with reward 0 and both flags false. Gymnasium's default.
    #[default]
    NextStep,
    /// The ending step resets the copy at once: `obs` holds the new episode's first
    /// observation and the final one is kept in [`VecStep::final_obs`].
    SameStep,
    /// No automatic reset: stepping an ended copy is an error until `reset_copy(i)`.
    Disabled,
}

/// The ChaCha stream numbers of vector copies: a tag far from the run streams of
/// [`crate::seed::Stream`] (1 to 3), with the copy index in the low bits.
const COPY_STREAM_TAG: u64 = 0x7665_6300_0000_0000;

/// The world seed of episode `episode` of copy `copy` in a vector reset with `seed`.
///
/// It is the `episode`-th `u64` of a ChaCha8 stream keyed by `seed`, on a stream number
/// reserved for copy `copy` (copies below 2^40), as [`crate::seed::derive`] does for a
/// single run. A copy's seeds therefore depend on neither the number of copies nor the
/// other copies' episodes.
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
/// use perennial::vector::{episode_seed, AutoresetMode, CartPoleVec, VectorEnv};
///
/// let mut envs = CartPoleVec::new(4, CartPoleParams::default(), AutoresetMode::NextStep);
/// envs.reset(9).unwrap();
/// let mut single = CartPole::new(CartPoleParams::default());
/// single.reset(episode_seed(9, 2, 0));
/// assert_eq!(envs.state(2), single.state());
/// ```
pub fn episode_seed(seed: u64, copy: usize, episode: u64) -> u64 {
    crate::seed::nth_u64(copy_seeds(seed, copy), episode)
}

/// Copy `copy`'s stream of episode seeds: its `e`-th `u64` is `episode_seed(seed, copy, e)`.
/// A vector that keeps it and reads it in order pays for one ChaCha block set per 32
/// episodes instead of one per reset.
fn copy_seeds(seed: u64, copy: usize) -> ChaCha8Rng {
    crate::seed::stream_rng(seed, COPY_STREAM_TAG | copy as u64)
}

/// The batched result of one vector step (or reset), borrowed from the vector's buffers.
#[derive(Clone, Debug, PartialEq)]
pub struct VecStep {
    obs_len: usize,
    mode: AutoresetMode,
    obs: Vec<f32>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    final_obs: Vec<f32>,
}

impl VecStep {
    fn new(num_envs: usize, obs_len: usize, mode: AutoresetMode) -> Self {
        let final_len = if mode == AutoresetMode::SameStep {
            num_envs * obs_len
        } else {
            0
        };
        VecStep {
            obs_len,
            mode,
            obs: vec![0.0; num_envs * obs_len],
            rewards: vec![0.0; num_envs],
            terminated: vec![false; num_envs],
            truncated: vec![false; num_envs],
            final_obs: vec![0.0; final_len],
        }
    }

    /// Number of copies.
    pub fn num_envs(&self) -> usize {
        self.rewards.len()
    }

    /// Elements in one copy's observation.
    pub fn obs_len(&self) -> usize {
        self.obs_len
    }

    /// Every copy's observation, copy `i` in `[i * obs_len, (i + 1) * obs_len)`.
    pub fn obs(&self) -> &[f32] {
        &self.obs
    }

    /// Copy `i`'s observation. Panics when `i >= num_envs()`.
    pub fn obs_of(&self, i: usize) -> &[f32] {
        &self.obs[i * self.obs_len..(i + 1) * self.obs_len]
    }

    /// Every copy's reward.
    pub fn rewards(&self) -> &[f64] {
        &self.rewards
    }

    /// Whether each copy reached a genuine terminal state on this step.
    pub fn terminated(&self) -> &[bool] {
        &self.terminated
    }

    /// Whether each copy's env imposed a cutoff on this step.
    pub fn truncated(&self) -> &[bool] {
        &self.truncated
    }

    /// Whether copy `i`'s episode ended on this step (`terminated || truncated`).
    pub fn done(&self, i: usize) -> bool {
        self.terminated[i] || self.truncated[i]
    }

    /// Under `SameStep`, the final observations, laid out as [`VecStep::obs`]; a copy's row
    /// is meaningful only when that copy ended on this step (see [`VecStep::final_obs_of`]).
    /// Empty under the other modes, whose `obs` already holds the final observation.
    pub fn final_obs(&self) -> &[f32] {
        &self.final_obs
    }

    /// Under `SameStep`, copy `i`'s final observation when its episode ended on this step;
    /// `None` otherwise and under the other modes.
    pub fn final_obs_of(&self, i: usize) -> Option<&[f32]> {
        (self.mode == AutoresetMode::SameStep && self.done(i))
            .then(|| &self.final_obs[i * self.obs_len..(i + 1) * self.obs_len])
    }

    /// A reset writes first observations and clears the step results.
    fn clear_results(&mut self) {
        self.rewards.fill(0.0);
        self.terminated.fill(false);
        self.truncated.fill(false);
    }
}

/// What can go wrong when driving a vector of environments.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum VecError {
    /// Copy `index` refused the step or the action: an action outside its space, a step
    /// after its episode ended under `Disabled`, or a world failure.
    Copy {
        /// The copy's index.
        index: usize,
        /// What the copy's env reported.
        source: EnvError,
    },
    /// The batch does not hold one action per copy.
    ActionCount {
        /// Number of copies.
        expected: usize,
        /// Actions given.
        got: usize,
    },
    /// `step` was called before the first `reset`.
    NotReset,
    /// Copy `index`'s regime conditions could not be applied.
    Regime {
        /// The copy's index.
        index: usize,
        /// The cause.
        source: RegimeError,
    },
    /// The vector could not be built as asked.
    Build(String),
}

impl fmt::Display for VecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VecError::Copy {
                index,
                source: EnvError::EpisodeEnded,
            } => write!(
                f,
                "copy {index}: its episode has ended; no copy was stepped: call reset_copy({index}) to build its next world first"
            ),
            VecError::Copy { index, source } => {
                write!(f, "copy {index}: {source}; no copy was stepped")
            }
            VecError::ActionCount { expected, got } => write!(
                f,
                "got {got} actions for {expected} copies; pass exactly one action per copy"
            ),
            VecError::NotReset => {
                write!(f, "step called before reset; call reset(seed) first")
            }
            VecError::Regime { index, source } => write!(f, "copy {index}: {source}"),
            VecError::Build(msg) => write!(f, "cannot build the vector: {msg}"),
        }
    }
}

impl std::error::Error for VecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            VecError::Copy { source, .. } => Some(source),
            VecError::Regime { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::{self, Stream};
    use rand::Rng;

    #[test]
    fn episode_seeds_differ_by_copy_and_episode_and_from_run_streams() {
        let seeds = [
            episode_seed(5, 0, 0),
            episode_seed(5, 1, 0),
            episode_seed(5, 0, 1),
            episode_seed(6, 0, 0),
            seed::derive(5, Stream::World, 0),
        ];
        for (i, a) in seeds.iter().enumerate() {
            for b in &seeds[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(episode_seed(5, 3, 7), episode_seed(5, 3, 7));
    }

    #[test]
    fn episode_seed_is_the_copy_stream_read_in_order() {
        let mut rng = copy_seeds(11, 4);
        for episode in 0..10 {
            assert_eq!(rng.next_u64(), episode_seed(11, 4, episode));
        }
    }

    #[test]
    fn final_obs_is_only_kept_under_same_step() {
        let mut s = VecStep::new(2, 3, AutoresetMode::SameStep);
        assert_eq!(s.final_obs().len(), 6);
        s.truncated[1] = true;
        assert!(s.final_obs_of(0).is_none());
        assert_eq!(s.final_obs_of(1), Some(&[0.0f32; 3][..]));
        let s = VecStep::new(2, 3, AutoresetMode::NextStep);
        assert!(s.final_obs().is_empty() && s.final_obs_of(1).is_none());
    }
}
