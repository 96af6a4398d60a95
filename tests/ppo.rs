//! PPO and its continual families through the public API: learning, checkpoints that resume
//! byte for byte, and what each family adds to plain PPO.

use std::path::{Path, PathBuf};

use perennial::agents::{
    BalanceAgent, ContextParams, EwcParams, PlasticParams, Ppo, PpoParams, RandomAgent,
    ReplayParams, WarmStart,
};
use perennial::harness::{Agent, Checkpoint, CheckpointPlan, Harness, HarnessConfig, Window};
use perennial::prelude::*;
use perennial::trace::TraceFormat;

mod common;
use common::auto_reset_config as config;

fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ppo-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the target tmp dir is writable");
    dir
}

fn cartpole() -> CartPole {
    CartPole::new(CartPoleParams::default())
}

/// Small networks and few epochs keep the tests quick; the code paths are the same.
fn quick() -> PpoParams {
    PpoParams {
        hidden: vec![16, 16],
        epochs: 2,
        ..PpoParams::default()
    }
}

fn family(name: &str, seed: u64) -> Ppo {
    match name {
        "ppo" => Ppo::new(4, 2, quick(), seed),
        "ppo-scaled-rewards" => Ppo::new(
            4,
            2,
            PpoParams {
                scale_rewards: true,
                ..quick()
            },
            seed,
        ),
        "ppo-replay" => Ppo::replay(
            4,
            2,
            ReplayParams {
                ppo: quick(),
                capacity: 300,
                ..ReplayParams::default()
            },
            seed,
        ),
        "ppo-ewc" => Ppo::ewc(
            4,
            2,
            EwcParams {
                ppo: quick(),
                min_windows: 2,
                threshold: 0.5,
                ..EwcParams::default()
            },
            seed,
        ),
        "ppo-context" => Ppo::context(4, 2, ContextParams { ppo: quick(), k: 8 }, seed),
        "ppo-plastic" => Ppo::plastic(
            4,
            2,
            PlasticParams {
                ppo: quick(),
                ..PlasticParams::default()
            },
            seed,
        ),
        other => panic!("no family {other}"),
    }
    .expect("valid parameters")
}

fn traced<A: Agent<CartPole>>(harness: Harness<CartPole, A>, path: &Path) -> Harness<CartPole, A> {
    harness.trace(path, TraceFormat::Jsonl)
}

fn resume_is_byte_identical(name: &str) {
    agent_resumes_byte_for_byte(name, || family(name, 9));
}

/// Runs the agent `make` builds straight through, and again with checkpoints (every 300
/// steps, so the last one falls mid-window) resumed from the last checkpoint; the traces and
/// the final agent states must match byte for byte.
fn agent_resumes_byte_for_byte<A: Agent<CartPole>>(name: &str, make: impl Fn() -> A) {
    let dir = temp_dir(&format!("resume-{name}"));
    let steps = 1_000;
    let whole_path = dir.join("whole.jsonl");
    let mut whole = traced(
        Harness::new(cartpole(), make(), 9).config(config(steps)),
        &whole_path,
    );
    whole.advance(steps).expect("the run goes on");
    let whole_state = Agent::<CartPole>::save_state(whole.agent()).expect("ppo saves its state");
    whole.finish().expect("the run finishes");

    let cut_path = dir.join("cut.jsonl");
    let ckpt_path = dir.join("run.ckpt.json");
    let mut cut = traced(
        Harness::new(cartpole(), make(), 9).config(config(steps)),
        &cut_path,
    )
    .checkpoint(CheckpointPlan {
        path: ckpt_path.clone(),
        every: 300,
        meta: serde_json::Value::Null,
    });
    cut.advance(steps).expect("the run goes on");
    cut.finish().expect("the run finishes");

    let ckpt = Checkpoint::read(&ckpt_path).expect("a checkpoint was written");
    assert_eq!(ckpt.step, 900, "the last checkpoint falls inside a window");
    let bytes = ckpt
        .trace_bytes
        .expect("the checkpoint knows the trace length");
    let tail = ckpt.trace_tail.clone();
    let mut resumed = Harness::resume(cartpole(), make(), ckpt, None).expect("it resumes");
    resumed
        .open_trace(
            &cut_path,
            TraceFormat::Jsonl,
            Some((bytes, tail.as_deref())),
        )
        .expect("the trace reopens");
    resumed.advance(steps).expect("the run goes on");
    assert_eq!(
        Agent::<CartPole>::save_state(resumed.agent()).expect("ppo saves its state"),
        whole_state,
        "{name}: the resumed agent differs"
    );
    resumed.finish().expect("the run finishes");
    let (a, b) = (
        std::fs::read(&whole_path).unwrap(),
        std::fs::read(&cut_path).unwrap(),
    );
    assert!(
        a == b,
        "{name}: the resumed trace differs from the uninterrupted one"
    );
    let events = |p: &str| std::fs::read(dir.join(p)).expect("the events table is written");
    let whole_events = events("whole.events.jsonl");
    assert!(
        whole_events == events("cut.events.jsonl"),
        "{name}: the resumed events table differs from the uninterrupted one"
    );
    assert!(
        String::from_utf8_lossy(&whole_events).contains("\"plasticity\""),
        "{name}: no plasticity diagnostics"
    );
}

#[test]
fn ppo_resumes_from_a_checkpoint_byte_for_byte() {
    resume_is_byte_identical("ppo");
}

#[test]
fn ppo_with_scaled_rewards_resumes_from_a_checkpoint_byte_for_byte() {
    resume_is_byte_identical("ppo-scaled-rewards");
}

#[test]
fn ppo_replay_resumes_from_a_checkpoint_byte_for_byte() {
    resume_is_byte_identical("ppo-replay");
}

#[test]
fn ppo_ewc_resumes_from_a_checkpoint_byte_for_byte() {
    resume_is_byte_identical("ppo-ewc");
}

#[test]
fn ppo_context_resumes_from_a_checkpoint_byte_for_byte() {
    resume_is_byte_identical("ppo-context");
}

#[test]
fn ppo_plastic_resumes_from_a_checkpoint_byte_for_byte() {
    resume_is_byte_identical("ppo-plastic");
}

#[test]
fn a_warm_start_resumes_from_a_checkpoint_byte_for_byte() {
    // The checkpoint at step 900 falls while the teacher acts, and the handover at 950 in
    // the middle of a window; the random teacher has a generator to restore.
    agent_resumes_byte_for_byte("ppo-random-teacher", || {
        let teacher = RandomAgent::new(Space::Discrete { n: 2 }, 9);
        WarmStart::new(family("ppo", 9), Box::new(teacher), "random", 950).teacher_lr(3e-3)
    });
    // A context family, whose summary follows the teacher's steps, handed over before it.
    agent_resumes_byte_for_byte("ppo-context-balance-teacher", || {
        let teacher = BalanceAgent::default();
        WarmStart::new(family("ppo-context", 9), Box::new(teacher), "balance", 400)
    });
}

#[test]
fn ppo_learns_cartpole_well_above_random() {
    // Default networks and hyper-parameters, as a user gets them from `--agent ppo`.
    let agent = Ppo::new(4, 2, PpoParams::default(), 1).expect("defaults are valid");
    let config = HarnessConfig {
        window_steps: 256,
        ..config(15_000)
    };
    let mut harness = Harness::new(cartpole(), agent, 1).config(config);
    harness.advance(10_000).expect("the run goes on");
    let before = harness.summary().episodes_ended;
    harness.advance(5_000).expect("the run goes on");
    let episodes = harness.summary().episodes_ended - before;
    // A random policy averages about 22 steps per episode: some 230 episodes in 5,000 steps.
    let mean_length = 5_000.0 / episodes.max(1) as f64;
    assert!(
        mean_length > 100.0,
        "mean episode length {mean_length:.1} over the last 5,000 steps ({episodes} episodes)"
    );
}

#[test]
fn same_seed_gives_the_same_agent_and_another_seed_does_not() {
    let run = |seed| {
        let mut h = Harness::new(cartpole(), family("ppo", seed), seed).config(config(600));
        h.advance(600).expect("the run goes on");
        Agent::<CartPole>::save_state(h.agent()).expect("ppo saves its state")
    };
    assert_eq!(run(4), run(4));
    assert_ne!(run(4), run(5));
}

/// `n` CartPole steps under alternating actions, as the harness would hand them over.
fn window(n: usize, flip: bool) -> Window<[f32; 4], usize> {
    let mut env = cartpole();
    let mut obs = env.reset(3);
    let mut w = Window::default();
    for i in 0..n {
        let action = (i % 3 == 0) as usize ^ flip as usize;
        let t = env.step(&action).expect("valid action");
        w.obs.push(obs);
        w.actions.push(action);
        w.rewards.push(t.reward);
        w.next_obs.push(t.observation);
        w.terminated.push(t.terminated);
        w.truncated.push(t.truncated);
        obs = if t.terminated || t.truncated {
            env.reset(4 + i as u64)
        } else {
            t.observation
        };
    }
    w
}

fn update(agent: &mut Ppo, w: &Window<[f32; 4], usize>) {
    Agent::<CartPole>::update(agent, w);
}

#[test]
fn replay_term_is_zero_for_plain_ppo_and_positive_once_the_reservoir_fills() {
    let w = window(256, false);
    let mut plain = family("ppo", 2);
    let mut replay = family("ppo-replay", 2);
    assert_eq!(replay.replay_len(), Some(0));
    update(&mut plain, &w);
    update(&mut replay, &w);
    assert_eq!(
        replay.last_update().replay_loss,
        0.0,
        "nothing to replay yet"
    );
    assert_eq!(replay.replay_len(), Some(256));
    // The policy now moves away from the distributions stored for those states.
    let w2 = window(256, true);
    update(&mut plain, &w2);
    update(&mut replay, &w2);
    assert_eq!(
        replay.replay_len(),
        Some(300),
        "the reservoir keeps its capacity"
    );
    assert!(
        replay.last_update().replay_loss > 0.0,
        "{:?}",
        replay.last_update()
    );
    assert_eq!(plain.last_update().replay_loss, 0.0);
    assert_ne!(plain.policy().params, replay.policy().params);
}

fn distance(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn ewc_penalty_pulls_the_policy_towards_the_consolidated_parameters() {
    let make = |lambda| {
        Ppo::ewc(
            4,
            2,
            EwcParams {
                ppo: quick(),
                lambda,
                // No change point fires here: the test consolidates by hand.
                threshold: 1e9,
                ..EwcParams::default()
            },
            6,
        )
        .expect("valid parameters")
    };
    let (mut loose, mut stiff) = (make(0.0), make(50.0));
    let first = window(256, false);
    for agent in [&mut loose, &mut stiff] {
        update(agent, &first);
        assert!(agent.consolidate(&first));
        assert_eq!(agent.consolidations(), Some(1));
        assert_eq!(
            agent.ewc_penalty(),
            Some(0.0),
            "the anchor is the current policy"
        );
    }
    assert_eq!(loose.policy().params, stiff.policy().params);
    let anchor = stiff.policy().params.clone();
    let second = window(256, true);
    for _ in 0..5 {
        update(&mut loose, &second);
        update(&mut stiff, &second);
    }
    let (d_loose, d_stiff) = (
        distance(&loose.policy().params, &anchor),
        distance(&stiff.policy().params, &anchor),
    );
    assert!(
        d_stiff < 0.8 * d_loose,
        "stiff {d_stiff} vs loose {d_loose}"
    );
    assert!(stiff.last_update().ewc_penalty > 0.0);
    assert_eq!(family("ppo", 6).ewc_penalty(), None);
}

#[test]
fn ewc_cuts_a_stretch_when_its_reward_drops() {
    let mut agent = family("ppo-ewc", 8);
    let good = window(128, false);
    let mut bad = good.clone();
    for r in &mut bad.rewards {
        *r -= 5.0;
    }
    for _ in 0..6 {
        update(&mut agent, &good);
    }
    assert_eq!(agent.consolidations(), Some(0));
    for _ in 0..3 {
        update(&mut agent, &bad);
    }
    assert!(
        agent.consolidations() >= Some(1),
        "no change point after the drop"
    );
}

#[test]
fn context_input_follows_the_recent_transitions() {
    let mut agent = family("ppo-context", 1);
    assert_eq!(
        agent.policy().input_dim(),
        4 + 8,
        "observation plus its summary"
    );
    assert_eq!(agent.context_features(), Some(&[0.0; 8][..]));
    let mut act = |o: [f32; 4]| Agent::<CartPole>::act(&mut agent, &o);
    act([0.0; 4]);
    act([0.1, 0.0, -0.2, 0.0]);
    let after_motion = agent.context_features().expect("context family").to_vec();
    assert!((after_motion[0] - 0.1).abs() < 1e-6, "{after_motion:?}");
    assert!((after_motion[2] + 0.2).abs() < 1e-6, "{after_motion:?}");
    assert!((after_motion[6] - 0.2).abs() < 1e-6, "{after_motion:?}");
    for _ in 0..8 {
        Agent::<CartPole>::act(&mut agent, &[0.1, 0.0, -0.2, 0.0]);
    }
    // After k still steps, the motion has left the summary.
    assert_eq!(agent.context_features(), Some(&[0.0; 8][..]));
    assert_eq!(family("ppo", 1).context_features(), None);
}

#[test]
fn plasticity_shrinks_the_weights_plain_ppo_would_have() {
    let w = window(256, false);
    let mut plain = family("ppo", 3);
    let mut plastic = Ppo::plastic(
        4,
        2,
        PlasticParams {
            ppo: quick(),
            shrink: 0.5,
            noise: 0.0,
        },
        3,
    )
    .expect("valid parameters");
    update(&mut plain, &w);
    update(&mut plastic, &w);
    let halved: Vec<f32> = plain.policy().params.iter().map(|w| w * 0.5).collect();
    assert_eq!(plastic.policy().params, halved);
    let noisy = |noise| {
        let mut a = Ppo::plastic(
            4,
            2,
            PlasticParams {
                ppo: quick(),
                shrink: 0.0,
                noise,
            },
            3,
        )
        .expect("valid parameters");
        update(&mut a, &w);
        a.policy().params.clone()
    };
    let (still, perturbed) = (noisy(0.0), noisy(0.01));
    assert_eq!(still, plain.policy().params);
    let d = distance(&still, &perturbed);
    assert!(
        d > 0.0 && d < 0.05 * (still.len() as f64).sqrt(),
        "perturbation of {d}"
    );
}

#[test]
fn options_set_a_family_and_bad_ones_name_the_field() {
    let opts: toml::Table = toml::from_str("k = 4\nppo.hidden = [8]").unwrap();
    let agent = Ppo::by_name("ppo-context", 4, 2, opts, 0).unwrap().unwrap();
    assert_eq!(agent.policy().input_dim(), 12);
    assert_eq!(agent.params().hidden, vec![8]);
    let bad: toml::Table = toml::from_str("bc_wieght = 2.0").unwrap();
    let err = Ppo::by_name("ppo-replay", 4, 2, bad.clone(), 0).unwrap_err();
    assert!(err.contains("bc_wieght"), "{err}");
    let env = perennial::cartpole::CartPole::new(Default::default());
    let ctx = perennial::agents::AgentCtx::new("ppo-replay", &env, &bad, 0);
    let build = perennial::agents::by_name("ppo-replay").unwrap();
    let err = build(&ctx).err().unwrap().to_string();
    assert!(
        err.contains("bc_wieght") && err.contains("ppo-replay"),
        "{err}"
    );
    let out_of_range: toml::Table = toml::from_str("ppo.gamma = 1.5").unwrap();
    let err = Ppo::by_name("ppo", 4, 2, out_of_range, 0).unwrap_err();
    assert!(err.contains("gamma"), "{err}");
    assert!(
        Ppo::by_name("dqn", 4, 2, toml::Table::new(), 0)
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_state_of_another_shape_is_refused() {
    let mut small = family("ppo", 0);
    let big = Ppo::new(4, 2, PpoParams::default(), 0).unwrap();
    let state = Agent::<CartPole>::save_state(&big).unwrap();
    let err = Agent::<CartPole>::load_state(&mut small, state).unwrap_err();
    assert!(err.contains("checkpoint"), "{err}");
    let replay = Agent::<CartPole>::save_state(&family("ppo-replay", 0)).unwrap();
    assert!(Agent::<CartPole>::load_state(&mut small, replay).is_err());
}
