//! The harness as a researcher relies on it: shifts and windows end nothing, resets only
//! when asked, determinism, origins in the trace.

use std::path::PathBuf;

use perennial::agents::{BalanceAgent, RandomAgent};
use perennial::harness::{Agent, Harness, HarnessConfig, StopReason};
use perennial::prelude::*;
use perennial::seed::{self, Stream};
use perennial::trace::{TraceFormat, TraceReader, TraceRow};

mod common;
use common::{Still, read_rows, temp};

fn gravity_cycle(every: u64) -> Scheduler {
    let regimes = vec![
        Regime::new("earth", &[]),
        Regime::new("heavy", &[("gravity", 20.0)]),
    ];
    let plan = Plan::cycle(&["earth", "heavy"], every);
    Scheduler::new(regimes, plan, 0).unwrap()
}

/// Runs `harness` into a JSONL trace at `path` and returns the rows.
fn traced<A: Agent<CartPole>>(
    harness: Harness<CartPole, A>,
    path: &PathBuf,
) -> (Vec<TraceRow>, StopReason) {
    let summary = harness.trace(path, TraceFormat::Jsonl).run().unwrap();
    (read_rows(&[path]), summary.stop)
}

#[test]
fn shift_does_not_end_episode_and_dynamics_follow_the_new_gravity() {
    let path = temp("shift.jsonl");
    let config = HarnessConfig {
        steps: 400,
        record_transitions: true,
        ..HarnessConfig::default()
    };
    let harness = Harness::new(
        CartPole::new(CartPoleParams::default()),
        BalanceAgent::default(),
        11,
    )
    .scheduler(gravity_cycle(50))
    .config(config);
    let (rows, stop) = traced(harness, &path);
    assert_eq!(
        stop,
        StopReason::Budget,
        "the balancer keeps the pole up for 400 steps"
    );
    assert_eq!(rows.len(), 400);
    for w in rows.windows(2) {
        if w[0].regime != w[1].regime {
            assert_eq!(w[1].step % 50, 0);
            assert_eq!(
                w[0].episode, w[1].episode,
                "a shift at step {} ended nothing",
                w[1].step
            );
            assert_eq!(w[1].episode_step, w[0].episode_step + 1);
            assert!(!w[0].terminated && !w[0].truncated);
        }
    }
    assert!(rows.iter().all(|r| r.episode == 0));

    // Replay the recorded actions in a fresh CartPole, switching gravity where the trace
    // says the regime changed: it reproduces every observation exactly. A replay that keeps
    // earth gravity does not.
    let replay = |follow: bool| -> usize {
        let mut env = CartPole::new(CartPoleParams::default());
        env.reset(seed::derive(11, Stream::World, 0));
        let mut matching = 0;
        for (i, row) in rows.iter().enumerate() {
            if follow {
                env.set("gravity", if row.regime == "heavy" { 20.0 } else { 9.8 })
                    .unwrap();
            }
            let obs: Vec<f32> = env.state().iter().map(|&v| v as f32).collect();
            let Some(perennial::trace::RecordedObs::Flat(recorded)) = &row.obs else {
                panic!("step {}: no observation", row.step);
            };
            let recorded: Vec<f32> = recorded.iter().map(|&v| v as f32).collect();
            if obs == recorded {
                matching = i + 1;
            } else {
                break;
            }
            let action = row.action.as_ref().and_then(|a| a.as_u64()).unwrap() as usize;
            env.step(&action).unwrap();
        }
        matching
    };
    assert_eq!(replay(true), 400);
    let diverged = replay(false);
    assert!(
        (50..60).contains(&diverged),
        "without the new gravity the replay leaves the trace at step {diverged}"
    );
}

#[test]
fn windows_are_invisible_in_the_trace() {
    let bytes: Vec<Vec<u8>> = [1usize, 7, 1000]
        .iter()
        .map(|&w| {
            let path = temp(&format!("window-{w}.jsonl"));
            let env = CartPole::new(CartPoleParams::default());
            let agent = RandomAgent::new(env.spec().action_space.clone(), 5);
            let config = HarnessConfig {
                steps: 3000,
                window_steps: w,
                auto_reset: true,
                ..HarnessConfig::default()
            };
            traced(
                Harness::new(env, agent, 5)
                    .scheduler(gravity_cycle(100))
                    .config(config),
                &path,
            );
            std::fs::read(&path).unwrap()
        })
        .collect();
    assert!(bytes[0].len() > 100_000);
    assert_eq!(bytes[0], bytes[1]);
    assert_eq!(bytes[0], bytes[2]);
}

#[test]
fn auto_reset_off_stops_at_the_first_episode_end() {
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), 1);
    let (rows, stop) = traced(Harness::new(env, agent, 1), &temp("off.jsonl"));
    assert_eq!(stop, StopReason::EpisodeEnded);
    let last = rows.last().unwrap();
    assert!(last.terminated || last.truncated);
    assert!(
        rows[..rows.len() - 1]
            .iter()
            .all(|r| !r.terminated && !r.truncated)
    );
    assert!(rows.iter().all(|r| r.episode == 0));
}

#[test]
fn auto_reset_on_runs_many_episodes_with_fresh_worlds() {
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), 1);
    let config = HarnessConfig {
        steps: 5000,
        auto_reset: true,
        ..HarnessConfig::default()
    };
    let (rows, stop) = traced(
        Harness::new(env, agent, 1).config(config),
        &temp("on.jsonl"),
    );
    assert_eq!(stop, StopReason::Budget);
    assert_eq!(rows.len(), 5000);
    let episodes = rows.last().unwrap().episode;
    assert!(episodes > 100, "{episodes} episodes");
    for w in rows.windows(2) {
        assert_eq!(w[1].step, w[0].step + 1);
        if w[0].terminated || w[0].truncated {
            assert_eq!((w[1].episode, w[1].episode_step), (w[0].episode + 1, 0));
        } else {
            assert_eq!(
                (w[1].episode, w[1].episode_step),
                (w[0].episode, w[0].episode_step + 1)
            );
        }
    }
}

fn seeded_trace(seed: u64, name: &str) -> Vec<u8> {
    let path = temp(name);
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), seed);
    let config = HarnessConfig {
        steps: 2000,
        auto_reset: true,
        record_transitions: true,
        ..HarnessConfig::default()
    };
    let regimes = vec![Regime::new("a", &[]), Regime::new("b", &[("length", 0.8)])];
    let plan = Plan::Stochastic {
        labels: vec!["a".into(), "b".into()],
        weights: vec![],
        min_dwell: 20,
        mean_dwell: 100.0,
    };
    let scheduler =
        Scheduler::new(regimes, plan, seed::derive(seed, Stream::Scheduler, 0)).unwrap();
    traced(
        Harness::new(env, agent, seed)
            .scheduler(scheduler)
            .config(config),
        &path,
    );
    std::fs::read(&path).unwrap()
}

#[test]
fn same_seed_gives_the_same_trace_bit_for_bit() {
    let a = seeded_trace(42, "seed-a.jsonl");
    let b = seeded_trace(42, "seed-b.jsonl");
    let c = seeded_trace(43, "seed-c.jsonl");
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn origins_are_recorded_for_all_four_plans() {
    let regimes = || {
        vec![
            Regime::new("a", &[]),
            Regime::new("b", &[("gravity", 11.0)]),
        ]
    };
    let origins =
        |scheduler: Scheduler, manual_at: Option<u64>, name: &str| -> Vec<(String, String)> {
            let path = temp(name);
            let config = HarnessConfig {
                steps: 300,
                ..HarnessConfig::default()
            };
            let mut h = Harness::new(
                CartPole::new(CartPoleParams::default()),
                BalanceAgent::default(),
                3,
            )
            .scheduler(scheduler)
            .config(config);
            h = h.trace(&path, TraceFormat::Jsonl);
            if let Some(at) = manual_at {
                h.advance(at).unwrap();
                h.scheduler_mut().shift_to("b").unwrap();
            }
            h.advance(u64::MAX).unwrap();
            h.finish().unwrap();
            TraceReader::open(&[&path])
                .map(|r| {
                    let r = r.unwrap();
                    (r.regime, r.regime_origin.as_str().to_string())
                })
                .collect()
        };
    let pair = |l: &str, o: &str| (l.to_string(), o.to_string());

    let fixed = Plan::Fixed {
        shifts: vec![(0, "a".into()), (100, "b".into())],
    };
    let cycle = Plan::cycle(&["a", "b"], 150);
    for (plan, shift, name) in [(fixed, 100, "fixed.jsonl"), (cycle, 150, "cycle.jsonl")] {
        let rows = origins(Scheduler::new(regimes(), plan, 0).unwrap(), None, name);
        assert_eq!(
            (rows[shift - 1].clone(), rows[shift].clone()),
            (pair("a", "initial"), pair("b", "scheduled")),
            "{name}"
        );
    }

    let stochastic = Plan::Stochastic {
        labels: vec!["a".into(), "b".into()],
        weights: vec![],
        min_dwell: 10,
        mean_dwell: 50.0,
    };
    let rows = origins(
        Scheduler::new(regimes(), stochastic, 4).unwrap(),
        None,
        "stochastic.jsonl",
    );
    assert_eq!(rows[0], pair("a", "initial"));
    let first_shift = rows.iter().position(|r| r.0 == "b").unwrap();
    assert!(first_shift >= 10);
    assert!(rows[first_shift..].iter().all(|r| r.1 == "stochastic"));

    let rows = origins(
        Scheduler::new(regimes(), Plan::Manual, 0).unwrap(),
        Some(120),
        "manual.jsonl",
    );
    assert_eq!(
        (rows[119].clone(), rows[120].clone()),
        (pair("a", "initial"), pair("b", "manual"))
    );
    assert!(rows[120..].iter().all(|r| *r == pair("b", "manual")));
}

/// Runs `env` under `agent` with the JSON Lines trace `name` until the run fails; checks
/// that the error starts with `message` and that the trace keeps the `rows` rows before it.
fn fails_keeping_rows<E: Env + Shiftable, A: Agent<E>>(
    env: E,
    agent: A,
    name: &str,
    message: &str,
    rows: usize,
) {
    let path = temp(name);
    let err = Harness::new(env, agent, 0)
        .trace(&path, TraceFormat::Jsonl)
        .run()
        .unwrap_err();
    assert!(err.to_string().starts_with(message), "{err}");
    assert_eq!(read_rows(&[&path]).len(), rows);
}

#[test]
fn an_invalid_action_stops_the_run_with_the_step_and_keeps_earlier_rows() {
    struct Bad(u64);
    impl Agent<CartPole> for Bad {
        fn algorithm_id(&self) -> &str {
            "bad"
        }
        fn act(&mut self, _obs: &[f32; 4]) -> usize {
            self.0 += 1;
            if self.0 > 5 { 9 } else { 0 }
        }
    }
    let env = CartPole::new(CartPoleParams::default());
    fails_keeping_rows(env, Bad(0), "bad.jsonl", "step 5: invalid action 9", 5);
}

#[test]
fn a_world_returning_a_nan_reward_stops_the_run_with_the_step_and_keeps_earlier_rows() {
    let spec = EnvSpec::new(
        "leaky",
        Space::box_f32(vec![0.0], vec![f64::INFINITY]),
        Space::Discrete { n: 1 },
    )
    .persistent(true);
    // A user world with a bug: its reward turns NaN on step 7.
    let env = Still::new(spec, |t| if t == 7 { f64::NAN } else { 1.0 });
    let agent = RandomAgent::new(Space::Discrete { n: 1 }, 0);
    let message = "step 7: the world returned a non-finite reward (NaN)";
    fails_keeping_rows(env, agent, "leaky.jsonl", message, 7);
}

/// A world without checkpoints under a harness told to write them fails before its first
/// step, not at the first checkpoint.
#[test]
fn checkpoints_of_a_world_that_cannot_save_fail_before_the_first_step() {
    let spec = EnvSpec::new(
        "still",
        Space::box_f32(vec![0.0], vec![0.0]),
        Space::Discrete { n: 1 },
    );
    let ckpt = temp("still.ckpt.json");
    let plan = perennial::harness::CheckpointPlan {
        path: (&ckpt).into(),
        every: 1_000_000,
        meta: serde_json::Value::Null,
    };
    let err = Harness::new(
        Still::new(spec, |_| 1.0),
        RandomAgent::new(Space::Discrete { n: 1 }, 0),
        0,
    )
    .checkpoint(plan)
    .run()
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("checkpoints are on, but world `still` cannot be saved"),
        "{text}"
    );
}
