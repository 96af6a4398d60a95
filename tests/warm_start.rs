//! A PPO family warmed up by a teacher: the policy imitates the teacher, and bad teacher
//! options are errors naming the option (`tests/ppo.rs` resumes one from a checkpoint).

use perennial::agents::{
    self, AgentBuilder, AgentCtx, AgentError, BalanceAgent, Ppo, PpoParams, WarmStart,
};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::trace::TraceFormat;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;

mod common;
use common::{Scratch, Still, auto_reset_config as config};

fn cartpole() -> CartPole {
    CartPole::new(CartPoleParams::default())
}

/// The agents the registry gives CartPole: the generic ones and `balance`.
fn cartpole_agents() -> Vec<(&'static str, AgentBuilder<CartPole>)> {
    let mut list = agents::generic::<CartPole>();
    list.extend(agents::for_cartpole());
    list
}

/// Builds `name` on CartPole from the options in `toml`, as the registry would.
fn build(name: &str, toml: &str) -> Result<Box<dyn Agent<CartPole>>, AgentError> {
    let env = cartpole();
    let options: toml::Table = toml::from_str(toml).expect("valid TOML");
    let list = cartpole_agents();
    let ctx = AgentCtx {
        agents: &list,
        ..AgentCtx::new(name, &env, &options, 3)
    };
    let builder = list
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a known agent")
        .1;
    builder(&ctx)
}

/// The field of an option error, and its message.
fn option_error(name: &str, toml: &str) -> (String, String) {
    match build(name, toml).err().expect("the options are refused") {
        AgentError::Option { field, message, .. } => (field, message),
        other => panic!("not an option error: {other}"),
    }
}

/// States from a run of `balance` (every third), with the action it took in each.
fn balance_states() -> Vec<([f32; 4], usize)> {
    let mut env = cartpole();
    let mut teacher = BalanceAgent::default();
    let mut obs = env.reset(11);
    let mut states = Vec::new();
    for t in 0..3_000 {
        let action = teacher.act(&obs);
        if t % 3 == 0 {
            states.push((obs, action));
        }
        let step = env.step(&action).expect("a valid action");
        obs = if step.terminated || step.truncated {
            env.reset(11 + t)
        } else {
            step.observation
        };
    }
    states
}

/// How often the policy's most likely action is the teacher's, and the mean probability
/// it gives the teacher's action.
fn agreement(ppo: &Ppo, states: &[([f32; 4], usize)]) -> (f64, f64) {
    let mut ppo = ppo.clone();
    let (mut agree, mut prob) = (0usize, 0.0f64);
    for (obs, action) in states {
        let p = ppo.action_probs(obs);
        let best = usize::from(p[1] > p[0]);
        agree += usize::from(best == *action);
        prob += f64::from(p[*action]);
    }
    let n = states.len() as f64;
    (agree as f64 / n, prob / n)
}

fn warm(teacher: Box<dyn Agent<CartPole>>, teacher_steps: u64) -> WarmStart<CartPole> {
    let params = PpoParams {
        hidden: vec![16, 16],
        epochs: 2,
        ..PpoParams::default()
    };
    let ppo = Ppo::new(4, 2, params, 5).expect("valid parameters");
    WarmStart::new(ppo, teacher, "teacher", teacher_steps).teacher_lr(3e-3)
}

#[test]
fn behaviour_cloning_makes_the_policy_follow_its_teacher() {
    let states = balance_states();
    let teaching = 20_000;
    let mut harness = Harness::new(
        cartpole(),
        warm(Box::new(BalanceAgent::default()), teaching),
        5,
    )
    .config(config(teaching));
    let (agree_before, prob_before) = agreement(harness.agent().ppo(), &states);
    harness.advance(teaching).expect("the run goes on");
    let warm = harness.agent();
    assert!(!warm.teaching(), "the teacher's steps are over");
    let (agree_after, prob_after) = agreement(warm.ppo(), &states);
    assert!(
        agree_after > 0.9,
        "the policy's most likely action is balance's on {agree_after:.3} of the states (before: {agree_before:.3})"
    );
    assert!(
        prob_after > prob_before + 0.2,
        "the probability of balance's action went from {prob_before:.3} to {prob_after:.3}"
    );
    let stats = warm.ppo().last_update();
    assert!(
        stats.bc_loss > 0.0 && stats.bc_loss < 0.5,
        "the last update's cross-entropy of the teacher's actions is {}",
        stats.bc_loss
    );
}

#[test]
fn the_teacher_acts_for_its_steps_and_ppo_after() {
    // `balance` pushes right exactly when theta + 0.5 theta_dot > 0; count the steps where
    // the trace's action is another, before and after the handover.
    let dir = Scratch::new("warm-handover");
    let path = dir.join("run.jsonl");
    let teaching = 300;
    let config = HarnessConfig {
        record_transitions: true,
        ..config(600)
    };
    let mut harness = Harness::new(
        cartpole(),
        warm(Box::new(BalanceAgent::default()), teaching),
        5,
    )
    .config(config)
    .trace(&path, TraceFormat::Jsonl);
    harness.advance(600).expect("the run goes on");
    harness.finish().expect("the run finishes");
    let mut differ = [0usize; 2];
    for (step, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let obs: Vec<f32> = serde_json::from_value(row["obs"].clone()).unwrap();
        let action = row["action"].as_u64().unwrap() as usize;
        let teacher = usize::from(obs[2] + 0.5 * obs[3] > 0.0);
        differ[usize::from(step >= teaching as usize)] += usize::from(action != teacher);
    }
    assert_eq!(
        differ[0], 0,
        "the teacher acts in the first {teaching} steps"
    );
    assert!(differ[1] > 0, "PPO, barely trained, acts after them");
}

#[test]
fn teacher_options_are_read_and_bad_ones_name_the_option() {
    let agent = build(
        "ppo",
        "teacher = \"balance\"\nteacher_steps = 10\nlr = 1e-3",
    )
    .unwrap();
    assert_eq!(agent.algorithm_id(), "ppo");
    let replay = build("ppo-replay", "teacher = \"random\"\nppo.lr = 1e-3").unwrap();
    assert_eq!(replay.algorithm_id(), "ppo-replay");

    let (field, message) = option_error("ppo", "teacher = \"base-stock\"");
    assert_eq!(field, "teacher");
    assert!(
        message.contains("base-stock") && message.contains("balance"),
        "{message}"
    );
    let (field, message) = option_error("ppo-ewc", "teacher = \"ppo\"");
    assert_eq!(field, "teacher");
    assert!(message.contains("PPO family"), "{message}");
    let (field, _) = option_error("ppo", "teacher = 3");
    assert_eq!(field, "teacher");
    let (field, message) = option_error("ppo", "teacher_steps = 100");
    assert_eq!(field, "teacher_steps");
    assert!(message.contains("`teacher`"), "{message}");
    let (field, _) = option_error("ppo", "teacher = \"balance\"\nteacher_steps = -1");
    assert_eq!(field, "teacher_steps");
    let (field, message) = option_error("ppo", "teacher = \"balance\"\nteacher_lr = 0.0");
    assert_eq!(field, "teacher_lr");
    assert!(message.contains("positive"), "{message}");
    let (field, _) = option_error("ppo", "teacher_lr = 0.01");
    assert_eq!(field, "teacher_lr");
    // The family's own options are still checked.
    let err = build("ppo", "teacher = \"balance\"\nlr_typo = 1.0")
        .err()
        .unwrap();
    assert!(err.to_string().contains("lr_typo"), "{err}");
}

#[test]
fn a_teacher_on_a_world_without_discrete_actions_is_an_option_error() {
    let space = Space::Box {
        low: vec![-1.0],
        high: vec![1.0],
        dtype: perennial::env::Dtype::F32,
    };
    let env = Still::new(EnvSpec::new("continuous", space.clone(), space), |_| 0.0);
    let options: toml::Table = toml::from_str("teacher = \"random\"").unwrap();
    let ctx = AgentCtx::new("ppo", &env, &options, 0);
    let build = agents::by_name::<Still>("ppo").unwrap();
    match build(&ctx).err().expect("refused") {
        AgentError::Option { field, message, .. } => {
            assert_eq!(field, "teacher");
            assert!(message.contains("Discrete"), "{message}");
        }
        other => panic!("not an option error: {other}"),
    }
}

#[test]
fn a_world_files_teacher_is_checked_when_the_file_loads() {
    let dir = Scratch::new("warm-world-file");
    let text = "[world]\nkind = \"cartpole\"\n[harness]\nagent = \"ppo\"\n[agent.ppo]\nteacher = \"TEACHER\"\n";
    let good = dir.write("good.toml", &text.replace("TEACHER", "balance"));
    WorldFile::load(&good).expect("balance teaches on CartPole");
    let bad = dir.write("bad.toml", &text.replace("TEACHER", "base-stock"));
    let err = WorldFile::load(&bad).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("agent.ppo.teacher"), "{err}");
    assert_eq!(err.line, Some(6), "{err}");
}

#[test]
fn a_checkpoint_of_another_warm_start_is_refused() {
    let saved =
        Agent::<CartPole>::save_state(&warm(Box::new(BalanceAgent::default()), 10)).unwrap();
    let mut other = warm(Box::new(BalanceAgent::default()), 20);
    let err = Agent::<CartPole>::load_state(&mut other, saved.clone()).unwrap_err();
    assert!(
        err.contains("for 10 steps") && err.contains("for 20"),
        "{err}"
    );
    let mut plain = Ppo::new(4, 2, PpoParams::default(), 0).unwrap();
    assert!(Agent::<CartPole>::load_state(&mut plain, saved).is_err());
}
