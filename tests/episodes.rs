//! Episode export end to end: CartPole runs and hand-built traces to rLLM episodes and back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Parser;
use perennial::agents::RandomAgent;
use perennial::episodes::{
    AdvantageEstimator, Episode, EpisodeError, EpisodeReader, EpisodesArgs, ExportOptions,
    TerminationReason, assign_advantages, export, read_episodes, run_cli,
};
use perennial::harness::{Agent, Harness, HarnessConfig, StopReason};
use perennial::prelude::*;
use perennial::trace::{TraceFormat, TraceReader, TraceRow};

/// A fresh directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("episodes")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// Runs `agent` in `env` for `steps` steps with auto-reset, writing a trace to `path`.
fn record<A: Agent<CartPole>>(
    env: CartPole,
    agent: A,
    seed: u64,
    steps: u64,
    path: &Path,
    record_transitions: bool,
) -> perennial::harness::RunSummary {
    let harness = Harness::new(env, agent, seed);
    let config = HarnessConfig {
        steps,
        auto_reset: true,
        record_transitions,
        ..HarnessConfig::default()
    };
    harness
        .trace(path, TraceFormat::from_path(path))
        .config(config)
        .run()
        .expect("run")
}

fn random_cartpole_run(path: &Path, max_episode_steps: u64, steps: u64) {
    let env = CartPole::new(CartPoleParams {
        max_episode_steps,
        ..CartPoleParams::default()
    });
    let agent = RandomAgent::new(env.spec().action_space.clone(), 11);
    record(env, agent, 11, steps, path, true);
}

fn rows(path: &Path) -> Vec<TraceRow> {
    TraceReader::open(&[path])
        .collect::<Result<_, _>>()
        .expect("read the trace")
}

fn episodes_of(traces: &[&Path], chunk_steps: Option<u64>) -> Vec<Episode> {
    EpisodeReader::open(traces, chunk_steps)
        .expect("open")
        .collect::<Result<_, _>>()
        .expect("episodes")
}

/// Keeps the pole up by pushing toward where it is falling, damped by its angular velocity.
struct Balancer;

impl Agent<CartPole> for Balancer {
    fn algorithm_id(&self) -> &str {
        "balancer"
    }

    fn act(&mut self, obs: &[f32; 4]) -> usize {
        usize::from(obs[2] + 0.5 * obs[3] > 0.0)
    }
}

#[test]
fn cartpole_run_exports_one_episode_per_env_episode() {
    let dir = scratch("cartpole");
    let trace = dir.join("run.jsonl");
    random_cartpole_run(&trace, 20, 400);
    let rows = rows(&trace);
    let last = rows.last().expect("rows");
    assert!(
        !(last.terminated || last.truncated),
        "the budget must cut the last episode for this test; change the budget"
    );

    let episodes = episodes_of(&[&trace], None);
    assert_eq!(episodes.len() as u64, last.episode + 1);
    let mut reasons = BTreeMap::new();
    let mut rows = rows.iter();
    for (i, e) in episodes.iter().enumerate() {
        assert_eq!(e.id, format!("cartpole:{i}"));
        assert_eq!(e.rollout_idx(), Some(i as u64));
        assert_eq!(e.task_id(), "cartpole");
        assert_eq!(e.trajectories.len(), 1);
        let t = &e.trajectories[0];
        assert_eq!(t.name, "agent");
        let expected: Vec<&TraceRow> = rows.by_ref().take(t.steps.len()).collect();
        assert!(expected.iter().all(|r| r.episode == i as u64));
        assert_eq!(expected.len(), t.steps.len());
        for (s, r) in t.steps.iter().zip(&expected) {
            assert_eq!(s.input, serde_json::json!(r.obs.as_ref().unwrap()));
            assert_eq!(Some(&s.action), r.action.as_ref());
            assert_eq!(s.reward, r.reward);
            assert_eq!(s.metadata["step"], serde_json::json!(r.step));
        }
        let sum: f64 = expected.iter().map(|r| r.reward).sum();
        assert_eq!(t.reward, sum);
        assert_eq!(t.steps[0].mc_return, sum);
        assert_eq!(e.metrics["steps"], t.steps.len() as f64);
        let end = expected.last().unwrap();
        let reason = if end.terminated || end.truncated {
            TerminationReason::from_flags(end.terminated, end.truncated)
        } else {
            TerminationReason::Unknown
        };
        assert_eq!(e.termination_reason, reason);
        assert_eq!(
            t.steps.iter().filter(|s| s.done).count(),
            usize::from(reason != TerminationReason::Unknown)
        );
        *reasons.entry(reason).or_insert(0) += 1;
    }
    assert!(rows.next().is_none(), "every row is in an episode");
    assert!(reasons[&TerminationReason::EnvDone] > 0, "{reasons:?}");
    assert!(
        reasons[&TerminationReason::MaxTurnsExceeded] > 0,
        "{reasons:?}"
    );
    assert_eq!(
        reasons[&TerminationReason::Unknown],
        1,
        "only the cut-off last one"
    );
    assert_eq!(
        episodes.last().unwrap().termination_reason,
        TerminationReason::Unknown
    );
}

#[test]
fn csv_and_jsonl_traces_give_the_same_episodes() {
    let dir = scratch("csv");
    let jsonl = dir.join("run.jsonl");
    let csv = dir.join("run.csv");
    random_cartpole_run(&jsonl, 20, 120);
    random_cartpole_run(&csv, 20, 120);
    assert_eq!(episodes_of(&[&jsonl], None), episodes_of(&[&csv], None));
}

#[test]
fn persistent_world_is_one_unknown_episode_and_chunks_stay_unknown() {
    let dir = scratch("persistent");
    let trace = dir.join("run.jsonl");
    let env = CartPole::new(CartPoleParams {
        max_episode_steps: 0,
        ..CartPoleParams::default()
    });
    let summary = record(env, Balancer, 5, 300, &trace, true);
    assert_eq!(
        summary.episodes_ended, 0,
        "the balancer must survive the budget"
    );
    assert_eq!(summary.stop, StopReason::Budget);

    let whole = episodes_of(&[&trace], None);
    assert_eq!(whole.len(), 1);
    assert_eq!(whole[0].termination_reason, TerminationReason::Unknown);
    assert_eq!(whole[0].trajectories[0].steps.len(), 300);
    assert!(whole[0].trajectories[0].steps.iter().all(|s| !s.done));

    // 300 = 4 * 64 + 44
    let chunks = episodes_of(&[&trace], Some(64));
    let lengths: Vec<usize> = chunks
        .iter()
        .map(|e| e.trajectories[0].steps.len())
        .collect();
    assert_eq!(lengths, vec![64, 64, 64, 64, 44]);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.termination_reason, TerminationReason::Unknown);
        assert_eq!(c.rollout_idx(), Some(i as u64));
        assert_eq!(c.metadata["chunk"], serde_json::json!(i));
        assert_eq!(c.metadata["env_episode"], serde_json::json!(0));
        assert_eq!(c.metadata["first_step"], serde_json::json!(i * 64));
        let t = &c.trajectories[0];
        assert!(t.steps.iter().all(|s| !s.done));
        assert_eq!(t.reward, t.steps.len() as f64);
    }
    let steps_in_chunks: Vec<_> = chunks
        .iter()
        .flat_map(|c| c.trajectories[0].steps.iter().map(|s| s.id.clone()))
        .collect();
    let steps_whole: Vec<_> = whole[0].trajectories[0]
        .steps
        .iter()
        .map(|s| s.id.clone())
        .collect();
    assert_eq!(steps_in_chunks, steps_whole);
}

/// A hand-built trace row with transitions.
fn row(run: &str, task: &str, step: u64, episode: u64, episode_step: u64, reward: f64) -> TraceRow {
    TraceRow {
        run_id: run.into(),
        seed: 1,
        algorithm_id: "test".into(),
        task: task.into(),
        notify: Default::default(),
        step,
        episode,
        episode_step,
        reward,
        components: BTreeMap::new(),
        payout: BTreeMap::new(),
        regime: "default".into(),
        regime_origin: Origin::Initial,
        terminated: false,
        truncated: false,
        ceiling: None,
        bound: None,
        role_rewards: BTreeMap::new(),
        obs: Some(perennial::trace::RecordedObs::Flat(vec![step as f64, 0.5])),
        action: Some(serde_json::json!(step % 2)),
    }
}

/// Writes one episode per entry of `episodes` (its step rewards), each ended by the env.
fn write_run(path: &Path, run: &str, task: &str, episodes: &[&[f64]]) {
    let mut text = String::new();
    let mut step = 0;
    for (e, rewards) in episodes.iter().enumerate() {
        for (i, &r) in rewards.iter().enumerate() {
            let mut row = row(run, task, step, e as u64, i as u64, r);
            row.terminated = i + 1 == rewards.len();
            text.push_str(&serde_json::to_string(&row).unwrap());
            text.push('\n');
            step += 1;
        }
    }
    std::fs::write(path, text).unwrap();
}

fn step_advantages(e: &Episode) -> Vec<Option<f64>> {
    e.trajectories[0]
        .steps
        .iter()
        .map(|s| s.advantage)
        .collect()
}

#[test]
fn export_broadcasts_hand_computed_advantages_per_group() {
    let dir = scratch("advantages");
    // Task "t-x" has three rollouts over two runs, rewards 1 (= 0.5 + 0.5), 2, 6; task
    // "solo" one rollout, reward 5.
    let a = dir.join("a.jsonl");
    let b = dir.join("b.jsonl");
    write_run(&a, "run-a", "t-x", &[&[0.5, 0.5], &[2.0]]);
    write_run(&b, "run-b", "t-x", &[&[6.0]]);
    let solo = dir.join("solo.jsonl");
    write_run(&solo, "run-s", "solo", &[&[5.0]]);
    let out = dir.join("episodes.jsonl");
    let traces = [&a, &b, &solo];

    let export_with = |estimator| {
        let options = ExportOptions {
            advantage: Some(estimator),
            chunk_steps: None,
        };
        let summary = export(&traces, &out, &options).unwrap();
        assert_eq!(summary.episodes, 4);
        assert_eq!(summary.groups.len(), 2);
        assert_eq!(summary.groups["t-x:agent"].trajectories, 3);
        assert_eq!(summary.groups["t-x:agent"].mean_reward, 3.0);
        let episodes: Vec<Episode> = read_episodes(&out)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let ids: Vec<&str> = episodes.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["t-x:0", "t-x:1", "t-x:2", "solo:0"]);
        assert_eq!(episodes[2].task_id(), "t-x");
        assert_eq!(episodes[2].rollout_idx(), Some(2));
        episodes
    };

    // grpo, group "t-x:agent": r = [1, 2, 6], mean 3, deviations -2, -1, 3, squares
    // 4 + 1 + 9 = 14, population std sqrt(14 / 3) = 2.160246899469287;
    // advantages (r - 3) / (2.160246899469287 + 1e-6).
    // Group "solo:agent" has one member: mean 0, std 1, so 5 / (1 + 1e-6).
    let e = export_with(AdvantageEstimator::Grpo);
    let s = (14.0f64 / 3.0).sqrt() + 1e-6;
    let close = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() < 1e-12;
    assert!(step_advantages(&e[0]).iter().all(|&x| close(x, -2.0 / s)));
    assert_eq!(step_advantages(&e[0]).len(), 2, "broadcast to both steps");
    assert!(close(step_advantages(&e[1])[0], -1.0 / s));
    assert!(close(step_advantages(&e[2])[0], 3.0 / s));
    assert!(close(step_advantages(&e[3])[0], 5.0 / (1.0 + 1e-6)));

    // rloo: n / (n - 1) = 3 / 2; 1.5 * (1 - 3) = -3, 1.5 * (2 - 3) = -1.5,
    // 1.5 * (6 - 3) = 4.5. The group of one keeps its reward: 5.
    let e = export_with(AdvantageEstimator::Rloo);
    assert_eq!(step_advantages(&e[0]), vec![Some(-3.0); 2]);
    assert_eq!(step_advantages(&e[1]), vec![Some(-1.5)]);
    assert_eq!(step_advantages(&e[2]), vec![Some(4.5)]);
    assert_eq!(step_advantages(&e[3]), vec![Some(5.0)]);

    // reinforce: the trajectory reward itself.
    let e = export_with(AdvantageEstimator::Reinforce);
    assert_eq!(step_advantages(&e[0]), vec![Some(1.0); 2]);
    assert_eq!(step_advantages(&e[2]), vec![Some(6.0)]);
    assert_eq!(step_advantages(&e[3]), vec![Some(5.0)]);
}

#[test]
fn equal_rewards_in_a_group_give_zero_advantage() {
    let dir = scratch("flat");
    let a = dir.join("a.jsonl");
    // rewards 0.1 + 0.2 = 0.30000000000000004 three times: zero spread.
    write_run(&a, "run", "flat", &[&[0.1, 0.2], &[0.1, 0.2], &[0.1, 0.2]]);
    let out = dir.join("episodes.jsonl");
    for estimator in [AdvantageEstimator::Grpo, AdvantageEstimator::Rloo] {
        let options = ExportOptions {
            advantage: Some(estimator),
            chunk_steps: None,
        };
        export(&[&a], &out, &options).unwrap();
        for e in read_episodes(&out).unwrap() {
            assert_eq!(step_advantages(&e.unwrap()), vec![Some(0.0); 2]);
        }
    }
}

#[test]
fn episodes_round_trip_and_match_the_in_memory_estimate() {
    let dir = scratch("round_trip");
    let trace = dir.join("run.jsonl");
    random_cartpole_run(&trace, 20, 150);
    let hand = dir.join("hand.jsonl");
    let mut r = row("run-h", "warehouse-north-east", 0, 0, 0, 2.0);
    r.components = BTreeMap::from([("shipped".into(), 3.0), ("holding".into(), -1.0)]);
    let mut last = row("run-h", "warehouse-north-east", 1, 0, 1, 5.0);
    last.components = BTreeMap::from([("shipped".into(), 1.0), ("holding".into(), -0.5)]);
    last.payout = BTreeMap::from([("settle".into(), 4.5)]);
    last.truncated = true;
    last.ceiling = Some(9.0);
    let text = [r, last]
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect::<String>();
    std::fs::write(&hand, text).unwrap();

    let out = dir.join("episodes.jsonl");
    let options = ExportOptions {
        advantage: Some(AdvantageEstimator::Grpo),
        chunk_steps: None,
    };
    export(&[&trace, &hand], &out, &options).unwrap();
    let read: Vec<Episode> = read_episodes(&out)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut expected = episodes_of(&[&trace, &hand], None);
    assign_advantages(&mut expected, AdvantageEstimator::Grpo);
    assert_eq!(read, expected);

    let hand_episode = read.last().unwrap();
    assert_eq!(hand_episode.id, "warehouse-north-east:0");
    assert_eq!(hand_episode.task_id(), "warehouse-north-east");
    assert_eq!(hand_episode.rollout_idx(), Some(0));
    assert_eq!(
        hand_episode.termination_reason,
        TerminationReason::MaxTurnsExceeded
    );
    let t = &hand_episode.trajectories[0];
    // shipped 3 + 1, holding -1 - 0.5, settle 4.5 (payout, last step only)
    assert_eq!(
        t.signals,
        BTreeMap::from([
            ("shipped".into(), 4.0),
            ("holding".into(), -1.5),
            ("settle".into(), 4.5)
        ])
    );
    assert_eq!(t.reward, 7.0);
    assert_eq!(t.steps[1].metadata["ceiling"], serde_json::json!(9.0));

    let line = std::fs::read_to_string(&out).unwrap();
    let json: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    for key in [
        "id",
        "task",
        "termination_reason",
        "is_correct",
        "session_id",
        "trajectories",
        "artifacts",
        "metrics",
        "info",
    ] {
        assert!(json.get(key).is_some(), "episode key {key}");
    }
    let again: Episode = serde_json::from_str(&serde_json::to_string(&read[0]).unwrap()).unwrap();
    assert_eq!(again, read[0]);
}

#[test]
fn a_trace_without_transitions_is_refused_naming_the_file() {
    let dir = scratch("no_transitions");
    let trace = dir.join("bare.jsonl");
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), 2);
    record(env, agent, 2, 30, &trace, false);
    let out = dir.join("episodes.jsonl");

    let err = export(&[&trace], &out, &ExportOptions::default()).unwrap_err();
    assert!(
        matches!(&err, EpisodeError::MissingTransitions { path, row: 1, step: 0 } if path == &trace),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("bare.jsonl") && msg.contains("--record-transitions"),
        "{msg}"
    );
    assert!(!out.exists());
    assert!(!dir.join("episodes.jsonl.partial").exists());
}

#[test]
fn a_trace_given_twice_is_an_error() {
    let dir = scratch("twice");
    let trace = dir.join("run.jsonl");
    write_run(&trace, "run", "t", &[&[1.0]]);
    let out = dir.join("episodes.jsonl");
    let err = export(&[&trace, &trace], &out, &ExportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("given twice"), "{err}");
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    episodes: EpisodesArgs,
}

#[test]
fn cli_writes_episodes_and_summarizes_them() {
    let dir = scratch("cli");
    let trace = dir.join("run.jsonl");
    write_run(&trace, "run", "t", &[&[1.0, 1.0], &[3.0]]);
    let out = dir.join("episodes.jsonl");
    let args = Cli::try_parse_from([
        "episodes".as_ref(),
        trace.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--advantage".as_ref(),
        "rloo".as_ref(),
        "--chunk-steps".as_ref(),
        "1".as_ref(),
    ])
    .unwrap()
    .episodes;
    assert_eq!(args.advantage, Some(AdvantageEstimator::Rloo));

    let summary = run_cli(&args).unwrap();
    // Chunks of one step: [1] (cut, unknown), [1] (ended), [3] (ended).
    assert!(
        summary.contains("3 episodes (3 steps) from 1 trace")
            && summary.contains("2 env_done, 0 max_turns_exceeded, 1 unknown")
            && summary.contains("t:agent (3 trajectories")
            && summary.contains("advantages: rloo"),
        "{summary}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);

    assert!(
        Cli::try_parse_from(["episodes", "run.jsonl"]).is_err(),
        "--out is required"
    );
    assert!(
        Cli::try_parse_from(["episodes", "--out", "x.jsonl"]).is_err(),
        "a trace is required"
    );
    let zero = EpisodesArgs {
        chunk_steps: Some(0),
        ..args
    };
    assert!(
        run_cli(&zero)
            .unwrap_err()
            .to_string()
            .contains("--chunk-steps")
    );
}

#[test]
fn a_task_id_with_a_colon_is_refused_with_exit_2() {
    let dir = scratch("colon");
    let trace = dir.join("run.jsonl");
    write_run(&trace, "run", "ware:house", &[&[1.0, 2.0]]);
    let out = dir.join("episodes.jsonl");
    let err = export(&[&trace], &out, &ExportOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("ware:house") && msg.contains("first `:`"),
        "{msg}"
    );
    let code = perennial::cli::run_with_args(
        &perennial::registry::Registry::builtin(),
        [
            "perennial",
            "episodes",
            trace.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, std::process::ExitCode::from(2));
    assert!(!out.exists(), "nothing is written for a refused export");
}
