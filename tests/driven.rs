//! An externally driven run (actions from the caller, as the Python package does) writes the
//! same trace bytes as the harness's own loop, and a type-erased world runs like its type.

use perennial::agents::RandomAgent;
use perennial::dyn_env::{self, DynEnv};
use perennial::harness::{Agent, Harness, HarnessConfig, episode_seed};
use perennial::prelude::*;
use perennial::registry::Registry;
use perennial::seed::{self, Stream};
use perennial::trace::TraceFormat;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;

mod common;
use common::temp;

fn world(name: &str) -> WorldFile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("worlds")
        .join(name);
    WorldFile::load(&path).unwrap()
}

fn config() -> HarnessConfig {
    HarnessConfig {
        steps: 3_000,
        window_steps: 64,
        auto_reset: true,
        record_transitions: true,
    }
}

/// Runs `world` with a seeded random agent, once in the harness loop and once with the
/// same actions chosen outside it, and returns both traces' bytes.
fn both_ways(file: &WorldFile, seed: u64, tag: &str) -> (Vec<u8>, Vec<u8>) {
    let registry = Registry::builtin();
    let make = || dyn_env::build(file, &registry).unwrap();
    let scheduler = || {
        file.scheduler(seed::derive(seed, Stream::Scheduler, 0))
            .unwrap()
    };
    let (own, driven) = (
        temp(&format!("own-{tag}-{seed}.jsonl")),
        temp(&format!("driven-{tag}-{seed}.jsonl")),
    );

    let env = make();
    let agent = RandomAgent::new(env.env_spec().action_space.clone(), seed);
    Harness::new(env, agent, seed)
        .scheduler(scheduler())
        .config(config())
        .trace(&own, TraceFormat::Jsonl)
        .run()
        .unwrap();

    let env = make();
    let space = env.env_spec().action_space.clone();
    let mut chooser = RandomAgent::new(space.clone(), seed);
    let mut harness = Harness::new(env, RandomAgent::new(space, seed), seed)
        .scheduler(scheduler())
        .config(config())
        .trace(&driven, TraceFormat::Jsonl);
    let mut go_on = true;
    let mut steps = 0;
    while go_on {
        // The first call starts the run; an observation exists from then on.
        let obs = harness.observation().cloned().unwrap_or_default();
        let action = <RandomAgent as Agent<Box<dyn DynEnv>>>::act(&mut chooser, &obs);
        go_on = harness.step_with(action).unwrap().go_on;
        steps += 1;
    }
    assert_eq!(steps, 3_000);
    assert!(harness.step_with(0).is_err(), "the budget is spent");
    drop(harness);
    (
        std::fs::read(&own).unwrap(),
        std::fs::read(&driven).unwrap(),
    )
}

#[test]
fn a_driven_run_writes_the_same_bytes_as_the_harness_loop() {
    for name in ["cartpole-drift.toml", "warehouse.toml"] {
        let (own, driven) = both_ways(&world(name), 4, name);
        assert!(own.len() > 1_000, "{name}");
        assert!(own == driven, "{name}: the two traces differ");
    }
}

#[test]
fn a_type_erased_world_writes_the_same_trace_as_its_type() {
    let file = world("cartpole-drift.toml");
    let params = file.params::<CartPoleParams>().unwrap().clone();
    let path = temp("typed.jsonl");
    let agent = RandomAgent::new(Space::Discrete { n: 2 }, 4);
    Harness::new(CartPole::new(params), agent, 4)
        .scheduler(
            file.scheduler(seed::derive(4, Stream::Scheduler, 0))
                .unwrap(),
        )
        .config(config())
        .trace(&path, TraceFormat::Jsonl)
        .run()
        .unwrap();
    let typed = std::fs::read(&path).unwrap();
    let (erased, _) = both_ways(&file, 4, "erased");
    assert!(typed == erased, "erasing the type changed the trace");
}

#[test]
fn episode_seeds_are_the_world_stream_by_episode() {
    assert_eq!(episode_seed(9, 3), seed::derive(9, Stream::World, 3));
    let mut env = dyn_env::make(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/cartpole.toml"),
        Registry::shared_builtin(),
    )
    .unwrap();
    let a = env.reset_vec(episode_seed(9, 3));
    let mut typed = CartPole::new(CartPoleParams::default());
    assert_eq!(a, typed.reset(episode_seed(9, 3)).to_vec());
}
