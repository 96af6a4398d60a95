//! Vectors against independent envs: bitwise equivalence per autoreset mode, the modes'
//! semantics, errors that name the copy and step nothing, per-copy regime shifts.

use perennial::prelude::*;
use perennial::regime::apply_over_baseline;
use perennial::vector::{AutoresetMode, CartPoleVec, VecEnv, VecError, VecStep, episode_seed};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEED: u64 = 2024;
const MODES: [AutoresetMode; 3] = [
    AutoresetMode::NextStep,
    AutoresetMode::SameStep,
    AutoresetMode::Disabled,
];

/// Per-copy parameters that reach every branch: both integrators, both rewards, short
/// truncations, shifted physics.
fn varied_params(n: usize) -> Vec<CartPoleParams> {
    (0..n)
        .map(|i| CartPoleParams {
            gravity: 9.8 + i as f64 * 0.3,
            length: 0.5 + (i % 3) as f64 * 0.1,
            integrator: if i % 2 == 0 {
                Integrator::Euler
            } else {
                Integrator::SemiImplicitEuler
            },
            sutton_barto_reward: i % 4 == 3,
            max_episode_steps: if i % 5 == 0 { 7 } else { 500 },
            ..CartPoleParams::default()
        })
        .collect()
}

/// One independent CartPole driven the way a mode says a copy is driven.
struct Reference {
    env: CartPole,
    copy: usize,
    episode: u64,
    ended: bool,
}

/// What the reference says one copy's step returns: obs, reward, flags, final obs.
type Expected = ([f32; 4], f64, bool, bool, Option<[f32; 4]>);

impl Reference {
    fn new(params: CartPoleParams, copy: usize) -> Self {
        let mut env = CartPole::new(params);
        env.reset(episode_seed(SEED, copy, 0));
        Reference {
            env,
            copy,
            episode: 0,
            ended: false,
        }
    }

    fn next_episode(&mut self) -> [f32; 4] {
        self.episode += 1;
        self.ended = false;
        self.env.reset(episode_seed(SEED, self.copy, self.episode))
    }

    fn step(&mut self, mode: AutoresetMode, action: usize) -> Expected {
        if self.ended && mode == AutoresetMode::NextStep {
            return (self.next_episode(), 0.0, false, false, None);
        }
        let t = self.env.step(&action).expect("reference steps are valid");
        if t.done() && mode == AutoresetMode::SameStep {
            let first = self.next_episode();
            return (
                first,
                t.reward,
                t.terminated,
                t.truncated,
                Some(t.observation),
            );
        }
        self.ended = t.done();
        (t.observation, t.reward, t.terminated, t.truncated, None)
    }
}

/// The error of copy `index` of a CartPole vector given `action`.
fn invalid_action_of_copy(index: usize, action: &str) -> VecError {
    VecError::Copy {
        index,
        source: EnvError::InvalidAction {
            action: action.into(),
            space: "Discrete(2)".into(),
        },
    }
}

fn bits(obs: &[f32]) -> Vec<u32> {
    obs.iter().map(|v| v.to_bits()).collect()
}

fn assert_matches(step: &VecStep, refs: &[Expected], t: usize) {
    for (i, (obs, reward, terminated, truncated, final_obs)) in refs.iter().enumerate() {
        let at = format!("copy {i}, step {t}");
        assert_eq!(bits(step.obs_of(i)), bits(obs), "obs, {at}");
        assert_eq!(
            step.rewards()[i].to_bits(),
            reward.to_bits(),
            "reward, {at}"
        );
        assert_eq!(step.terminated()[i], *terminated, "terminated, {at}");
        assert_eq!(step.truncated()[i], *truncated, "truncated, {at}");
        assert_eq!(
            step.final_obs_of(i).map(bits),
            final_obs.as_ref().map(|o| bits(o)),
            "final obs, {at}"
        );
    }
}

/// Steps a vector and independent references with the same random actions for `steps`
/// steps, comparing every output bit. Under `Disabled`, ended copies are reset by hand on
/// both sides. Returns the number of episode ends seen.
fn compare(
    mode: AutoresetMode,
    params: &[CartPoleParams],
    steps: usize,
    vector: &mut impl VectorEnv<Action = usize>,
) -> usize {
    let n = params.len();
    let mut refs: Vec<Reference> = params
        .iter()
        .enumerate()
        .map(|(i, p)| Reference::new(p.clone(), i))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut ends = 0;
    for t in 0..steps {
        let actions: Vec<usize> = (0..n).map(|_| rng.random_range(0..2)).collect();
        let out = vector.step(&actions).expect("valid batch").clone();
        let expected: Vec<Expected> = refs
            .iter_mut()
            .zip(&actions)
            .map(|(r, &a)| r.step(mode, a))
            .collect();
        assert_matches(&out, &expected, t);
        for (i, r) in refs.iter_mut().enumerate() {
            if out.done(i) {
                ends += 1;
                if mode == AutoresetMode::Disabled {
                    let first = vector.reset_copy(i).expect("copy exists");
                    assert_eq!(bits(first), bits(&r.next_episode()));
                }
            }
        }
    }
    ends
}

/// [`compare`] for `n` copies with parameters varied per copy ([`varied_params`]);
/// returns the number of episode ends seen.
fn compare_varied(mode: AutoresetMode, n: usize, steps: usize) -> usize {
    let params = varied_params(n);
    let mut v = CartPoleVec::per_copy(params.clone(), mode);
    v.reset(SEED).unwrap();
    compare(mode, &params, steps, &mut v)
}

/// [`compare`] for `n` copies that share the default parameters.
fn compare_shared(mode: AutoresetMode, n: usize, steps: usize) {
    let params = vec![CartPoleParams::default(); n];
    let mut v = CartPoleVec::new(n, CartPoleParams::default(), mode);
    v.reset(SEED).unwrap();
    compare(mode, &params, steps, &mut v);
}

#[test]
fn cartpole_vec_is_bit_identical_to_independent_cartpoles_in_every_mode() {
    for mode in MODES {
        let ends = compare_varied(mode, 12, 2000);
        assert!(ends > 500, "{mode:?}: only {ends} episode ends");
    }
}

#[test]
fn cartpole_vec_with_shared_params_is_bit_identical() {
    for mode in MODES {
        compare_shared(mode, 9, 2000);
    }
}

#[test]
fn a_cartpole_vec_of_thousands_of_copies_stays_bit_identical() {
    // 2,500 copies: many blocks of the vectorized passes, per-copy parameters varied.
    for mode in MODES {
        compare_varied(mode, 2500, 60);
        compare_shared(mode, 2500, 60);
    }
}

#[test]
fn generic_vec_env_is_bit_identical_to_independent_cartpoles_in_every_mode() {
    for mode in MODES {
        let params = varied_params(6);
        let envs = params.iter().cloned().map(CartPole::new).collect();
        let mut v = VecEnv::new(envs, mode).expect("six cartpoles");
        v.reset(SEED).expect("no regimes to apply");
        compare(mode, &params, 2000, &mut v);
    }
}

fn falling() -> [f64; 4] {
    [0.0, 0.0, 0.2094, 5.0]
}

#[test]
fn next_step_returns_the_reset_obs_with_zero_reward_and_ignores_the_action() {
    let run = |action: usize| {
        let mut v = CartPoleVec::new(3, CartPoleParams::default(), AutoresetMode::NextStep);
        v.reset(SEED).unwrap();
        v.set_state(1, falling());
        let ending = v.step(&[0, 1, 0]).unwrap();
        assert!(ending.terminated()[1] && !ending.truncated()[1]);
        assert_eq!(ending.rewards()[1], 1.0);
        let ended_obs = ending.obs_of(1).to_vec();
        let after = v.step(&[0, action, 0]).unwrap().clone();
        (ended_obs, after, v.episode(1), v.episode_step(1))
    };
    let (ended_obs, after, episode, episode_step) = run(0);
    let mut fresh = CartPole::new(CartPoleParams::default());
    let first = fresh.reset(episode_seed(SEED, 1, 1));
    assert_eq!(bits(after.obs_of(1)), bits(&first));
    assert_ne!(bits(after.obs_of(1)), bits(&ended_obs));
    assert_eq!(after.rewards()[1], 0.0);
    assert!(!after.terminated()[1] && !after.truncated()[1]);
    assert_eq!((episode, episode_step), (1, 0));
    assert_eq!(after.rewards()[0], 1.0, "the other copies stepped");
    assert_eq!(run(1).1, after, "the action on the reset step is ignored");
}

#[test]
fn same_step_keeps_the_final_obs_apart_and_returns_the_new_first_obs() {
    let mut v = CartPoleVec::new(2, CartPoleParams::default(), AutoresetMode::SameStep);
    v.reset(SEED).unwrap();
    v.set_state(0, falling());
    let mut single = CartPole::new(CartPoleParams::default());
    single.reset(0);
    single.set_state(falling());
    let last = single.step(&1).unwrap();
    let s = v.step(&[1, 1]).unwrap();
    assert!(s.terminated()[0]);
    assert_eq!(s.rewards()[0], 1.0);
    assert_eq!(s.final_obs_of(0).map(bits), Some(bits(&last.observation)));
    assert_eq!(
        bits(s.obs_of(0)),
        bits(&single.reset(episode_seed(SEED, 0, 1)))
    );
    assert!(s.final_obs_of(1).is_none(), "copy 1 did not end");
    assert_eq!(s.final_obs().len(), 2 * 4);
    assert_eq!(v.episode(0), 1);
    assert_eq!(v.episode_step(0), 0);
}

#[test]
fn disabled_refuses_to_step_an_ended_copy_and_names_it() {
    let mut v = CartPoleVec::new(4, CartPoleParams::default(), AutoresetMode::Disabled);
    v.reset(SEED).unwrap();
    v.set_state(2, falling());
    assert!(v.step(&[0; 4]).unwrap().terminated()[2]);
    let before: Vec<[f64; 4]> = (0..4).map(|i| v.state(i)).collect();
    let err = v.step(&[0; 4]).unwrap_err();
    assert_eq!(
        err,
        VecError::Copy {
            index: 2,
            source: EnvError::EpisodeEnded
        }
    );
    assert!(err.to_string().contains("call reset_copy(2)"), "{err}");
    assert_eq!((0..4).map(|i| v.state(i)).collect::<Vec<_>>(), before);
    v.reset_copy(2).unwrap();
    assert_eq!(v.episode(2), 1);
    assert!(v.step(&[0; 4]).is_ok());
}

#[test]
fn disabled_generic_vector_names_the_ended_copy() {
    let envs = (0..3)
        .map(|_| {
            CartPole::new(CartPoleParams {
                max_episode_steps: 2,
                ..CartPoleParams::default()
            })
        })
        .collect();
    let mut v = VecEnv::new(envs, AutoresetMode::Disabled).unwrap();
    v.reset(SEED).unwrap();
    v.step(&[0, 0, 0]).unwrap();
    assert!(v.step(&[0, 0, 0]).unwrap().truncated()[0]);
    let err = v.step(&[0, 0, 0]).unwrap_err();
    assert!(matches!(
        err,
        VecError::Copy {
            index: 0,
            source: EnvError::EpisodeEnded
        }
    ));
}

#[test]
fn an_invalid_action_names_the_copy_and_steps_nothing() {
    let mut v = CartPoleVec::new(4, CartPoleParams::default(), AutoresetMode::NextStep);
    v.reset(SEED).unwrap();
    let before = v.last().clone();
    let states: Vec<[f64; 4]> = (0..4).map(|i| v.state(i)).collect();
    let err = v.step(&[0, 1, 2, 0]).unwrap_err();
    assert_eq!(err, invalid_action_of_copy(2, "2"));
    assert!(err.to_string().contains("copy 2"), "{err}");
    // The episode-ended hint belongs to ended copies only, not to a bad action.
    assert!(!err.to_string().contains("reset_copy"), "{err}");
    assert_eq!((0..4).map(|i| v.state(i)).collect::<Vec<_>>(), states);
    assert_eq!(v.last(), &before);
    assert_eq!(
        v.step(&[0, 1]).unwrap_err(),
        VecError::ActionCount {
            expected: 4,
            got: 2
        }
    );

    let envs = (0..3)
        .map(|_| CartPole::new(CartPoleParams::default()))
        .collect();
    let mut g = VecEnv::new(envs, AutoresetMode::NextStep).unwrap();
    g.reset(SEED).unwrap();
    let states: Vec<[f64; 4]> = (0..3).map(|i| g.env(i).state()).collect();
    let err = g.step(&[0, 5, 1]).unwrap_err();
    assert_eq!(err, invalid_action_of_copy(1, "5"));
    assert_eq!((0..3).map(|i| g.env(i).state()).collect::<Vec<_>>(), states);
    assert!((0..3).all(|i| g.env(i).episode_step() == 0));
}

#[test]
fn stepping_before_reset_is_an_error() {
    let mut v = CartPoleVec::new(2, CartPoleParams::default(), AutoresetMode::NextStep);
    assert_eq!(v.step(&[0, 0]).unwrap_err(), VecError::NotReset);
    assert_eq!(v.reset_copy(0).unwrap_err(), VecError::NotReset);
}

/// CartPole that never ends on its own, so that only a shift could end an episode.
fn endless() -> CartPoleParams {
    CartPoleParams {
        x_threshold: 1e6,
        theta_threshold_radians: 1e3,
        max_episode_steps: 0,
        ..CartPoleParams::default()
    }
}

#[test]
fn per_copy_schedulers_shift_without_ending_episodes() {
    let regimes = vec![
        Regime::new("earth", &[]),
        Regime::new("heavy", &[("gravity", 15.0), ("length", 0.8)]),
    ];
    let plan = Plan::cycle(&["earth", "heavy"], 5);
    let envs = (0..3).map(|_| CartPole::new(endless())).collect();
    let mut v = VecEnv::new(envs, AutoresetMode::NextStep)
        .unwrap()
        .scheduler(1, Scheduler::new(regimes, plan, 0).unwrap())
        .unwrap();
    v.reset(SEED).unwrap();
    // Copy 1 by hand: the same shifts before steps 5, 10, 15...
    let mut by_hand = CartPole::new(endless());
    by_hand.reset(episode_seed(SEED, 1, 0));
    let mut plain = CartPole::new(endless());
    plain.reset(episode_seed(SEED, 0, 0));
    let mut labels = Vec::new();
    for t in 0..40u64 {
        if t % 5 == 0 {
            let heavy = (t / 5) % 2 == 1;
            by_hand
                .set("gravity", if heavy { 15.0 } else { 9.8 })
                .unwrap();
            by_hand
                .set("length", if heavy { 0.8 } else { 0.5 })
                .unwrap();
        }
        let action = (t % 3 % 2) as usize;
        let s = v.step(&[action; 3]).unwrap();
        assert!(
            (0..3).all(|i| !s.done(i)),
            "step {t}: a shift ended nothing"
        );
        assert_eq!(
            bits(s.obs_of(1)),
            bits(&by_hand.step(&action).unwrap().observation)
        );
        assert_eq!(
            bits(s.obs_of(0)),
            bits(&plain.step(&action).unwrap().observation)
        );
        labels.push(v.scheduler_of(1).unwrap().label().to_string());
    }
    assert_eq!((v.episode(1), v.env(1).episode_step()), (0, 40));
    assert_eq!(v.env(0).params().gravity, 9.8, "copy 0 has no scheduler");
    assert!(v.scheduler_of(0).is_none());
    assert_eq!(labels[4..6], ["earth".to_string(), "heavy".to_string()]);

    // A new run restarts the scheduler and the baseline.
    v.reset(SEED).unwrap();
    assert_eq!(v.env(1).params().gravity, 9.8);
    assert_eq!(v.scheduler_of(1).unwrap().label(), "earth");
}

#[test]
fn a_scheduler_naming_an_unknown_parameter_is_refused_when_attached() {
    let regimes = vec![Regime::new("odd", &[("wind", 3.0)])];
    let envs = vec![CartPole::new(CartPoleParams::default())];
    let err = VecEnv::new(envs, AutoresetMode::NextStep)
        .unwrap()
        .scheduler(0, Scheduler::new(regimes, Plan::Manual, 0).unwrap())
        .err()
        .expect("wind is not a CartPole parameter");
    assert!(matches!(err, VecError::Regime { index: 0, .. }), "{err:?}");
}

#[test]
fn observations_lie_in_one_contiguous_buffer_copy_by_copy() {
    let mut v = CartPoleVec::new(5, CartPoleParams::default(), AutoresetMode::NextStep);
    v.reset(SEED).unwrap();
    let s = v.step(&[1, 0, 1, 0, 1]).unwrap().clone();
    assert_eq!((s.num_envs(), s.obs_len(), s.obs().len()), (5, 4, 20));
    for i in 0..5 {
        assert_eq!(s.obs_of(i), &s.obs()[i * 4..i * 4 + 4]);
        assert_eq!(s.obs_of(i), &v.state(i).map(|x| x as f32)[..]);
    }
    assert!(s.final_obs().is_empty(), "only SameStep keeps final obs");

    let envs = (0..5)
        .map(|_| CartPole::new(CartPoleParams::default()))
        .collect();
    let mut g = VecEnv::new(envs, AutoresetMode::NextStep).unwrap();
    let obs = g.reset(SEED).unwrap().to_vec();
    for i in 0..5 {
        assert_eq!(
            &obs[i * 4..i * 4 + 4],
            &g.env(i).state().map(|x| x as f32)[..]
        );
    }
}

#[test]
fn a_copys_worlds_do_not_depend_on_the_number_of_copies() {
    let mut small = CartPoleVec::new(2, CartPoleParams::default(), AutoresetMode::SameStep);
    let mut large = CartPoleVec::new(7, CartPoleParams::default(), AutoresetMode::SameStep);
    small.reset(SEED).unwrap();
    large.reset(SEED).unwrap();
    for t in 0..300 {
        let a = t % 2;
        let s = small.step(&[a; 2]).unwrap().obs_of(1).to_vec();
        assert_eq!(bits(&s), bits(large.step(&[a; 7]).unwrap().obs_of(1)));
    }
}

/// Cycling physics that make CartPole fall at different rates, so runs cross episode ends.
fn cycling_scheduler(every: u64) -> Scheduler {
    let regimes = vec![
        Regime::new("earth", &[]),
        Regime::new("heavy", &[("gravity", 19.6), ("length", 0.8)]),
        Regime::new("light", &[("masscart", 0.5), ("force_mag", 6.0)]),
    ];
    let plan = Plan::cycle(&["earth", "heavy", "light"], every);
    Scheduler::new(regimes, plan, 0).unwrap()
}

#[test]
fn a_cartpole_vec_copy_with_a_scheduler_is_the_cartpole_that_scheduler_drives() {
    let mut v = CartPoleVec::new(3, CartPoleParams::default(), AutoresetMode::NextStep)
        .scheduler(1, cycling_scheduler(7))
        .unwrap();
    v.reset(SEED).unwrap();
    // Copy 1 by hand: a CartPole asking the same scheduler before each of its env steps.
    let mut scheduler = cycling_scheduler(7);
    let mut single = CartPole::new(CartPoleParams::default());
    let baseline = single.snapshot();
    apply_over_baseline(&mut single, &baseline, scheduler.regime()).unwrap();
    single.reset(episode_seed(SEED, 1, 0));
    let (mut env_steps, mut episode, mut pending, mut ends) = (0u64, 0u64, false, 0);
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    for t in 0..1500 {
        let actions: Vec<usize> = (0..3).map(|_| rng.random_range(0..2)).collect();
        let s = v.step(&actions).unwrap().clone();
        let (obs, reward, terminated, truncated) = if pending {
            pending = false;
            episode += 1;
            (
                single.reset(episode_seed(SEED, 1, episode)),
                0.0,
                false,
                false,
            )
        } else {
            if scheduler.next_shift_due(env_steps) && scheduler.before_step(env_steps).is_some() {
                apply_over_baseline(&mut single, &baseline, scheduler.regime()).unwrap();
            }
            env_steps += 1;
            let tr = single.step(&actions[1]).unwrap();
            pending = tr.done();
            ends += usize::from(tr.done());
            (tr.observation, tr.reward, tr.terminated, tr.truncated)
        };
        let at = format!("step {t}");
        assert_eq!(bits(s.obs_of(1)), bits(&obs), "obs, {at}");
        assert_eq!(s.rewards()[1].to_bits(), reward.to_bits(), "reward, {at}");
        assert_eq!(
            (s.terminated()[1], s.truncated()[1]),
            (terminated, truncated),
            "flags, {at}"
        );
        assert_eq!(v.params(1), single.params(), "parameters, {at}");
        assert_eq!(
            v.scheduler_of(1).unwrap().label(),
            scheduler.label(),
            "{at}"
        );
    }
    assert!(ends > 10, "the run must cross episode ends, saw {ends}");
    assert_eq!(
        v.params(0),
        &CartPoleParams::default(),
        "copy 0 has no scheduler"
    );
    assert!(v.scheduler_of(0).is_none());
}

#[test]
fn cartpole_vec_and_vec_env_with_the_same_schedulers_agree_in_every_mode() {
    for mode in MODES {
        let params = varied_params(4);
        let mut soa = CartPoleVec::per_copy(params.clone(), mode);
        let envs = params.iter().cloned().map(CartPole::new).collect();
        let mut generic = VecEnv::new(envs, mode).unwrap();
        for (i, every) in [(0, 3), (2, 11), (3, 50)] {
            soa = soa.scheduler(i, cycling_scheduler(every)).unwrap();
            generic = generic.scheduler(i, cycling_scheduler(every)).unwrap();
        }
        for run in 0..2 {
            let seeds = [run, run + 1, run + 2, run + 3];
            assert_eq!(
                soa.reset_runs(&seeds).unwrap(),
                generic.reset_runs(&seeds).unwrap()
            );
            let mut rng = ChaCha8Rng::seed_from_u64(run);
            for t in 0..600 {
                let actions: Vec<usize> = (0..4).map(|_| rng.random_range(0..2)).collect();
                let a = soa.step(&actions).unwrap().clone();
                assert_eq!(&a, generic.step(&actions).unwrap(), "{mode:?}, step {t}");
                for i in 0..4 {
                    assert_eq!(soa.params(i), generic.env(i).params(), "copy {i}");
                    if mode == AutoresetMode::Disabled && a.done(i) {
                        assert_eq!(soa.reset_copy(i).unwrap(), generic.reset_copy(i).unwrap());
                    }
                }
            }
        }
    }
}

/// The errors every [`VectorEnv`] gives, checked on a vector of 3 copies.
fn assert_vector_errors(v: &mut impl VectorEnv<Action = usize>) {
    assert_eq!(v.step(&[0; 3]).unwrap_err(), VecError::NotReset);
    assert_eq!(v.reset_copy(0).unwrap_err(), VecError::NotReset);
    assert_eq!(
        v.reset_runs(&[1, 2]).unwrap_err(),
        VecError::ActionCount {
            expected: 3,
            got: 2
        }
    );
    v.reset(SEED).unwrap();
    let before = v.last().clone();
    for actions in [&[0, 1][..], &[0, 1, 0, 1][..]] {
        assert_eq!(
            v.step(actions).unwrap_err(),
            VecError::ActionCount {
                expected: 3,
                got: actions.len()
            }
        );
    }
    let err = v.step(&[0, 7, 9]).unwrap_err();
    assert_eq!(err, invalid_action_of_copy(1, "7"));
    let err = v.reset_copy(3).unwrap_err();
    assert_eq!(
        err,
        VecError::Build("no copy 3: the vector has 3 copies".into())
    );
    assert!(err.to_string().contains("no copy 3"), "{err}");
    assert_eq!(v.last(), &before, "refused calls change nothing");
    assert_eq!((v.num_envs(), v.obs_len()), (3, 4));
    assert_eq!(v.mode(), AutoresetMode::Disabled);
    assert_eq!(v.episode(2), 0);
    assert!(v.scheduler_of(0).is_none());
}

#[test]
fn both_vectors_give_the_same_errors_through_the_trait() {
    let mut soa = CartPoleVec::new(3, CartPoleParams::default(), AutoresetMode::Disabled);
    assert_vector_errors(&mut soa);
    let envs = vec![CartPole::new(CartPoleParams::default()); 3];
    let mut generic = VecEnv::new(envs, AutoresetMode::Disabled).unwrap();
    assert_vector_errors(&mut generic);
    for err in [
        CartPoleVec::new(2, CartPoleParams::default(), AutoresetMode::NextStep)
            .scheduler(2, cycling_scheduler(5))
            .err(),
        VecEnv::new(
            vec![CartPole::new(CartPoleParams::default()); 2],
            AutoresetMode::NextStep,
        )
        .unwrap()
        .scheduler(2, cycling_scheduler(5))
        .err(),
    ] {
        assert_eq!(
            err,
            Some(VecError::Build("no copy 2: the vector has 2 copies".into()))
        );
    }
    let odd = || Scheduler::new(vec![Regime::new("odd", &[("wind", 3.0)])], Plan::Manual, 0);
    let err = CartPoleVec::new(1, CartPoleParams::default(), AutoresetMode::NextStep)
        .scheduler(0, odd().unwrap())
        .expect_err("wind is not a CartPole parameter");
    assert!(matches!(err, VecError::Regime { index: 0, .. }), "{err:?}");
}
