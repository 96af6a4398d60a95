//! CartPole, identical to Gymnasium's CartPole-v1, and shiftable mid-episode.
//!
//! The dynamics are Gymnasium's, operation for operation, so trajectories agree to the last
//! bit (the golden tests check 1e-12 against fixtures generated with `gymnasium` 1.4):
//!
//! - state `[x, x_dot, theta, theta_dot]` in `f64`; the observation is that state cast to `f32`;
//! - action `0` pushes left with `force_mag`, `1` pushes right;
//! - Euler integration by default (positions from the old velocities), or semi-implicit
//!   Euler (velocities first) with [`Integrator::SemiImplicitEuler`];
//! - `terminated` when `|x| > x_threshold` or `|theta| > theta_threshold_radians`, strict
//!   inequalities on the post-update state;
//! - reward 1.0 per step, including the terminating step; with `sutton_barto_reward`, 0.0
//!   per step and -1.0 on the terminating step;
//! - `reset(seed)` draws each state element uniformly in `[-0.05, 0.05)` from a ChaCha8
//!   stream seeded with `seed`;
//! - `truncated` when the episode reaches `max_episode_steps` (500), imposed by the env
//!   itself rather than by a wrapper. When the pole falls on that very step, **both flags
//!   are true**, as with Gymnasium's `TimeLimit`.
//!
//! Every parameter can change mid-episode through [`Shiftable`]; the derived quantities
//! (total mass, pole mass-length) are recomputed on every change, so changing `masscart`
//! really changes the dynamics. The spec follows the parameters in force too: its
//! observation bounds are twice `x_threshold` and `theta_threshold_radians`, as
//! Gymnasium's, also after a shift changes them.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::env::{Dtype, Env, EnvError, EnvSpec, Space, Transition, check_step};
use crate::regime::{ParamInfo, RegimeError, Shiftable};
use crate::reward::Ceiling;

/// How the state is integrated over one time step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Integrator {
    /// Gymnasium's default `"euler"`: positions advance with the old velocities.
    #[default]
    Euler,
    /// Gymnasium's `"semi-implicit euler"`: velocities first, then positions with the new ones.
    SemiImplicitEuler,
}

/// CartPole's physical constants, thresholds and episode settings.
///
/// `Default` is Gymnasium's CartPole-v1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CartPoleParams {
    /// Gravitational acceleration, m/s² (9.8).
    pub gravity: f64,
    /// Cart mass, kg (1.0).
    pub masscart: f64,
    /// Pole mass, kg (0.1).
    pub masspole: f64,
    /// Half the pole's length, m (0.5).
    pub length: f64,
    /// Magnitude of the push, N (10.0).
    pub force_mag: f64,
    /// Seconds per step (0.02).
    pub tau: f64,
    /// Cart position beyond which the episode terminates, m (2.4).
    pub x_threshold: f64,
    /// Pole angle beyond which the episode terminates, rad (12° = 0.2094...).
    pub theta_threshold_radians: f64,
    /// Steps after which the env truncates the episode (500); 0 means never.
    pub max_episode_steps: u64,
    /// Integration scheme (Euler).
    pub integrator: Integrator,
    /// Sutton and Barto's reward: 0 per step, -1 when the pole falls (off).
    pub sutton_barto_reward: bool,
}

impl Default for CartPoleParams {
    fn default() -> Self {
        CartPoleParams {
            gravity: 9.8,
            masscart: 1.0,
            masspole: 0.1,
            length: 0.5,
            force_mag: 10.0,
            tau: 0.02,
            x_threshold: 2.4,
            theta_threshold_radians: 12.0 * 2.0 * std::f64::consts::PI / 360.0,
            max_episode_steps: 500,
            integrator: Integrator::Euler,
            sutton_barto_reward: false,
        }
    }
}

crate::param_table! {
    impl CartPoleParams {
        gravity: f64 = [0.0, 1000.0], "gravitational acceleration, m/s²";
        masscart: f64 = [1e-6, 1e6], "cart mass, kg";
        masspole: f64 = [1e-6, 1e6], "pole mass, kg";
        length: f64 = [1e-6, 1e6], "half the pole's length, m";
        force_mag: f64 = [0.0, 1e6], "push magnitude, N";
        tau: f64 = [1e-6, 1.0], "seconds per step";
        x_threshold: f64 = [0.0, 1e6], "cart position limit, m";
        theta_threshold_radians: f64 = [0.0, 1e3], "pole angle limit, rad";
        max_episode_steps: u64 = [0.0, 1e15], "truncation step count (0 = never)";
    }
}

/// Gymnasium's CartPole-v1 as a perennial [`Env`].
///
/// # Examples
///
/// ```
/// use perennial::prelude::*;
///
/// let mut env = CartPole::new(CartPoleParams::default());
/// env.reset(0);
/// env.set_state([0.0, 0.0, 0.1, 0.0]);
/// let t = env.step(&0).unwrap();
/// assert!(env.state()[1] < 0.0, "pushed left");
/// assert!(!t.terminated);
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CartPole {
    params: CartPoleParams,
    total_mass: f64,
    polemass_length: f64,
    state: [f64; 4],
    episode_step: u64,
    ended: bool,
    started: bool,
    /// Built from the parameters in force (see [`CartPole::recompute_derived`]).
    #[serde(skip, default = "default_spec")]
    spec: EnvSpec,
}

fn default_spec() -> EnvSpec {
    cartpole_spec(&CartPoleParams::default())
}

/// Gymnasium's spaces for these parameters: the observation bound is twice the
/// termination thresholds (as `float32`), infinite for the velocities.
fn cartpole_spec(d: &CartPoleParams) -> EnvSpec {
    let high = [
        d.x_threshold * 2.0,
        f64::INFINITY,
        d.theta_threshold_radians * 2.0,
        f64::INFINITY,
    ]
    .map(|v| v as f32 as f64);
    EnvSpec {
        id: "cartpole".into(),
        observation_space: Space::Box {
            low: high.iter().map(|h| -h).collect(),
            high: high.to_vec(),
            dtype: Dtype::F32,
        },
        action_space: Space::Discrete { n: 2 },
        persistent: false,
        components: Vec::new(),
        payouts: Vec::new(),
    }
}

impl CartPole {
    /// A CartPole with these parameters. Call [`Env::reset`] before the first step.
    pub fn new(params: CartPoleParams) -> Self {
        let mut env = CartPole {
            params,
            total_mass: 0.0,
            polemass_length: 0.0,
            state: [0.0; 4],
            episode_step: 0,
            ended: false,
            started: false,
            spec: default_spec(),
        };
        env.recompute_derived();
        env
    }

    /// The parameters in force.
    pub fn params(&self) -> &CartPoleParams {
        &self.params
    }

    /// Replaces every parameter at once; derived quantities are recomputed.
    pub fn set_params(&mut self, params: CartPoleParams) {
        self.params = params;
        self.recompute_derived();
    }

    /// The full `f64` state `[x, x_dot, theta, theta_dot]`.
    pub fn state(&self) -> [f64; 4] {
        self.state
    }

    /// Places the cart and pole in `state`, as Gymnasium's `env.unwrapped.state = ...` does.
    ///
    /// This is an experimenter's tool (golden tests, controlled starts), not a reset: the
    /// episode step count is kept, and the episode is live again, so stepping from a state
    /// beyond the thresholds is allowed (the next step reports `terminated`).
    pub fn set_state(&mut self, state: [f64; 4]) {
        self.state = state;
        self.ended = false;
        self.started = true;
    }

    /// Steps taken in the current episode.
    pub fn episode_step(&self) -> u64 {
        self.episode_step
    }

    /// Recomputes what follows from the parameters: the total mass, the pole's mass-length
    /// and the spec, whose observation bounds follow `x_threshold` and
    /// `theta_threshold_radians` (also after a regime shift changes them).
    fn recompute_derived(&mut self) {
        self.total_mass = self.params.masspole + self.params.masscart;
        self.polemass_length = self.params.masspole * self.params.length;
        self.spec = cartpole_spec(&self.params);
    }

    #[inline]
    fn observation(&self) -> [f32; 4] {
        self.state.map(|v| v as f32)
    }

    /// One Gymnasium physics update; the operation order is Gymnasium's, for bitwise agreement.
    #[inline]
    fn integrate(&mut self, action: usize) {
        let p = &self.params;
        let [x, x_dot, theta, theta_dot] = self.state;
        let force = if action == 1 {
            p.force_mag
        } else {
            -p.force_mag
        };
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let temp =
            (force + self.polemass_length * (theta_dot * theta_dot) * sintheta) / self.total_mass;
        let thetaacc = (p.gravity * sintheta - costheta * temp)
            / (p.length * (4.0 / 3.0 - p.masspole * (costheta * costheta) / self.total_mass));
        let xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass;
        self.state = match p.integrator {
            Integrator::Euler => [
                x + p.tau * x_dot,
                x_dot + p.tau * xacc,
                theta + p.tau * theta_dot,
                theta_dot + p.tau * thetaacc,
            ],
            Integrator::SemiImplicitEuler => {
                let x_dot = x_dot + p.tau * xacc;
                let theta_dot = theta_dot + p.tau * thetaacc;
                [
                    x + p.tau * x_dot,
                    x_dot,
                    theta + p.tau * theta_dot,
                    theta_dot,
                ]
            }
        };
    }
}

impl Env for CartPole {
    type Obs = [f32; 4];
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> [f32; 4] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        self.state = std::array::from_fn(|_| rng.random_range(-0.05..0.05));
        self.episode_step = 0;
        self.ended = false;
        self.started = true;
        self.observation()
    }

    // Inlined into the harness loop: the transition is then built in place, not returned
    // through memory and copied.
    #[inline(always)]
    fn step(&mut self, action: &usize) -> Result<Transition<[f32; 4]>, EnvError> {
        check_step(self.started, self.ended, action, &self.spec.action_space)?;
        self.integrate(*action);
        self.episode_step += 1;
        let [x, _, theta, _] = self.state;
        let p = &self.params;
        let terminated = x < -p.x_threshold
            || x > p.x_threshold
            || theta < -p.theta_threshold_radians
            || theta > p.theta_threshold_radians;
        let truncated = p.max_episode_steps > 0 && self.episode_step >= p.max_episode_steps;
        let reward = match (p.sutton_barto_reward, terminated) {
            (false, _) => 1.0,
            (true, false) => 0.0,
            (true, true) => -1.0,
        };
        self.ended = terminated || truncated;
        Ok(Transition {
            observation: self.observation(),
            reward,
            terminated,
            truncated,
            breakdown: None,
        })
    }

    crate::serde_env_state!(; then recompute_derived);

    #[inline]
    fn ceiling(&self) -> Option<Ceiling> {
        let best = if self.params.sutton_barto_reward {
            0.0
        } else {
            1.0
        };
        Some(Ceiling {
            step: best,
            final_step: best,
        })
    }
}

impl Shiftable for CartPole {
    fn parameters(&self) -> Vec<ParamInfo> {
        CartPoleParams::PARAMETERS.to_vec()
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.params.get(name)
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        self.params.set(name, value)?;
        self.recompute_derived();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> CartPole {
        let mut env = CartPole::new(CartPoleParams::default());
        env.reset(3);
        env
    }

    fn bounds(env: &CartPole) -> (f64, f64) {
        match &env.spec().observation_space {
            Space::Box { high, .. } => (high[0], high[2]),
            other => panic!("expected a Box space, got {other:?}"),
        }
    }

    #[test]
    fn the_spec_follows_the_thresholds_in_force_also_after_a_shift() {
        let default = CartPole::new(CartPoleParams::default());
        assert_eq!(
            bounds(&default),
            (
                4.8f32 as f64,
                (2.0 * 12.0 * 2.0 * std::f64::consts::PI / 360.0) as f32 as f64
            )
        );
        let wide = CartPole::new(CartPoleParams {
            x_threshold: 5.0,
            ..CartPoleParams::default()
        });
        assert_eq!(bounds(&wide).0, 10.0);
        let mut shifted = env();
        shifted.set("x_threshold", 3.0).unwrap();
        assert_eq!(bounds(&shifted).0, 6.0);
        let mut restored = CartPole::new(CartPoleParams::default());
        restored.load_state(shifted.save_state().unwrap()).unwrap();
        assert_eq!(bounds(&restored).0, 6.0);
    }

    #[test]
    fn reset_draws_within_five_hundredths_and_is_seeded() {
        let mut a = CartPole::new(CartPoleParams::default());
        let mut b = CartPole::new(CartPoleParams::default());
        for seed in 0..50 {
            let oa = a.reset(seed);
            assert_eq!(oa, b.reset(seed));
            assert!(a.state().iter().all(|v| (-0.05..0.05).contains(v)));
        }
        assert_ne!(a.reset(1), a.reset(2));
    }

    #[test]
    fn invalid_action_is_an_error_and_leaves_the_state_unchanged() {
        let mut env = env();
        let before = env.state();
        let err = env.step(&2).unwrap_err();
        assert!(matches!(err, EnvError::InvalidAction { .. }), "{err}");
        assert_eq!(env.state(), before);
        assert_eq!(env.episode_step(), 0);
    }

    #[test]
    fn stepping_after_termination_is_an_error_until_reset() {
        let mut env = env();
        env.set_state([0.0, 0.0, 0.2094, 5.0]);
        let t = env.step(&1).unwrap();
        assert!(t.terminated && !t.truncated);
        let before = env.state();
        assert_eq!(env.step(&1).unwrap_err(), EnvError::EpisodeEnded);
        assert_eq!(env.state(), before);
        env.reset(4);
        assert!(env.step(&1).is_ok());
    }

    #[test]
    fn stepping_before_reset_is_an_error() {
        let mut env = CartPole::new(CartPoleParams::default());
        assert_eq!(env.step(&0).unwrap_err(), EnvError::NotReset);
    }

    /// A CartPole reset from seed 0 whose episodes are cut after `steps` steps.
    fn reset_with_limit(steps: u64) -> CartPole {
        let mut env = CartPole::new(CartPoleParams {
            max_episode_steps: steps,
            ..CartPoleParams::default()
        });
        env.reset(0);
        env
    }

    #[test]
    fn truncates_at_the_step_limit() {
        let mut env = reset_with_limit(3);
        env.set_state([0.0; 4]);
        let flags: Vec<(bool, bool)> = (0..3)
            .map(|i| {
                let t = env.step(&(i % 2)).unwrap();
                (t.terminated, t.truncated)
            })
            .collect();
        assert_eq!(flags, [(false, false), (false, false), (false, true)]);
    }

    #[test]
    fn pole_falling_on_the_last_step_sets_both_flags() {
        let mut env = reset_with_limit(5);
        for _ in 0..4 {
            env.set_state([0.0; 4]);
            env.step(&0).unwrap();
        }
        env.set_state([0.0, 0.0, 0.2094, 5.0]);
        let t = env.step(&1).unwrap();
        assert!(t.terminated && t.truncated);
    }

    #[test]
    fn sutton_barto_reward_pays_minus_one_on_the_fall() {
        let mut env = CartPole::new(CartPoleParams {
            sutton_barto_reward: true,
            ..CartPoleParams::default()
        });
        env.reset(0);
        assert_eq!(env.step(&0).unwrap().reward, 0.0);
        env.set_state([0.0, 0.0, 0.2094, 5.0]);
        assert_eq!(env.step(&1).unwrap().reward, -1.0);
    }

    #[test]
    fn changing_masscart_mid_episode_changes_the_next_states() {
        let mut light = env();
        let mut heavy = env();
        for _ in 0..5 {
            light.step(&1).unwrap();
            heavy.step(&1).unwrap();
        }
        assert_eq!(light.state(), heavy.state());
        heavy.set("masscart", 5.0).unwrap();
        light.step(&1).unwrap();
        heavy.step(&1).unwrap();
        let (l, h) = (light.state(), heavy.state());
        assert!(
            h[1] - l[1] < -0.1,
            "a heavier cart accelerates less: {l:?} vs {h:?}"
        );
        assert_eq!(heavy.get("masscart"), Some(5.0));
    }

    #[test]
    fn out_of_range_and_unknown_parameters_are_rejected() {
        let mut env = env();
        assert!(matches!(
            env.set("masscart", 0.0),
            Err(RegimeError::OutOfRange { .. })
        ));
        assert!(matches!(
            env.set("max_episode_steps", 2.5),
            Err(RegimeError::OutOfRange { .. })
        ));
        assert!(matches!(
            env.set("mass", 1.0),
            Err(RegimeError::UnknownParameter { .. })
        ));
        assert_eq!(env.params(), &CartPoleParams::default());
    }
}
