//! Open registries: a kind defined outside the crate runs through the library's CLI, and
//! agent names and options are checked against the kind's agents.

use std::path::Path;
use std::process::ExitCode;

use perennial::agents::AgentBuilder;
use perennial::cli::run_with_args;
use perennial::prelude::*;
use perennial::registry::{KindFn, ParamError, Registry};
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;

mod common;
use common::Scratch;

/// CartPole under a kind name the crate does not know, which refuses a gravity above 100.
fn pole(params: &CartPoleParams) -> Result<CartPole, ParamError> {
    if params.gravity > 100.0 {
        return Err(ParamError::field("gravity", "this pole breaks above 100"));
    }
    Ok(CartPole::new(params.clone()))
}

fn registry() -> Registry {
    let lean: AgentBuilder<CartPole> = |_| Ok(Box::new(perennial::agents::BalanceAgent::default()));
    Registry::builtin().world_with_agents(KindFn::new("pole", pole), vec![("lean", lean)])
}

fn cli(registry: &Registry, args: &[&str]) -> ExitCode {
    run_with_args(
        registry,
        std::iter::once("perennial").chain(args.iter().copied()),
    )
}

const POLE: &str =
    "[world]\nkind = \"pole\"\n[world.params]\ngravity = 9.8\n\n[[regimes]]\nlabel = \"a\"\n";

#[test]
fn a_kind_registered_outside_the_crate_runs_through_the_cli() {
    let dir = Scratch::new("registry-outside");
    let world = dir.write("pole.toml", POLE);
    let trace = dir.join("pole.jsonl");
    let code = cli(
        &registry(),
        &[
            "run",
            world.to_str().unwrap(),
            "--agent",
            "lean",
            "--steps",
            "300",
            "--auto-reset",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(code, ExitCode::SUCCESS);
    let rows = std::fs::read_to_string(&trace).unwrap().lines().count();
    assert_eq!(rows, 300);
    assert_eq!(
        cli(&registry(), &["check", world.to_str().unwrap()]),
        ExitCode::SUCCESS
    );
}

#[test]
fn the_builtin_registry_does_not_know_an_outside_kind() {
    let dir = Scratch::new("registry-unknown-kind");
    let world = dir.write("pole.toml", POLE);
    let err = WorldFile::load(&world).unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
    assert!(
        err.message.contains("cartpole, enterprise, morpheus"),
        "{err}"
    );
    assert_eq!(
        cli(&Registry::builtin(), &["check", world.to_str().unwrap()]),
        ExitCode::from(2)
    );
}

#[test]
fn a_kind_rejects_its_own_params_with_file_line_and_field() {
    let dir = Scratch::new("registry-params");
    let world = dir.write("pole.toml", &POLE.replace("9.8", "200.0"));
    let err = WorldFile::load_with(&world, &registry()).unwrap_err();
    assert_eq!(err.line, Some(4), "{err}");
    assert_eq!(err.field.as_deref(), Some("world.params.gravity"));
    assert!(err.message.contains("breaks above 100"), "{err}");
}

#[test]
fn a_world_file_error_keeps_its_file_line_and_field_through_the_build() {
    let dir = Scratch::new("registry-build-error");
    let world = dir.write("pole.toml", &POLE.replace("9.8", "200.0"));
    let err = match perennial::dyn_env::make(&world, &registry()) {
        Err(e) => e,
        Ok(_) => panic!("a gravity of 200 built"),
    };
    let perennial::registry::BuildError::World(e) = &err else {
        panic!("not a world-file error: {err}");
    };
    assert_eq!(e.path, world);
    assert_eq!(e.line, Some(4), "{err}");
    assert_eq!(e.field.as_deref(), Some("world.params.gravity"));
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn an_agent_the_kind_does_not_have_is_an_error_at_load() {
    let dir = Scratch::new("registry-agent-name");
    let world = dir.write(
        "w.toml",
        "[world]\nkind = \"cartpole\"\n[harness]\nagent = \"base-stock\"\n",
    );
    let err = WorldFile::load(&world).unwrap_err();
    assert_eq!(err.line, Some(4), "{err}");
    assert_eq!(err.field.as_deref(), Some("harness.agent"));
    assert!(err.message.contains("balance"), "{err}");
    let world = dir.write(
        "t.toml",
        "[world]\nkind = \"cartpole\"\n[agent.lean]\nx = 1\n",
    );
    let err = WorldFile::load(&world).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("agent.lean"), "{err}");
    assert!(
        WorldFile::load_with(&world, &registry()).is_err(),
        "lean is the pole's, not cartpole's"
    );
}

#[test]
fn agent_options_come_from_the_world_file_and_the_command_line() {
    let dir = Scratch::new("registry-options");
    let good = "[world]\nkind = \"cartpole\"\n[harness]\nagent = \"actor-critic\"\n[agent.actor-critic]\nactor_lr = 0.01\n";
    let world = dir.write("good.toml", good);
    let reg = Registry::builtin();
    assert_eq!(
        cli(&reg, &["check", world.to_str().unwrap()]),
        ExitCode::SUCCESS
    );
    let bad = dir.write("bad.toml", &good.replace("actor_lr", "actor_rl"));
    assert_eq!(
        cli(&reg, &["check", bad.to_str().unwrap()]),
        ExitCode::from(2)
    );

    let trace = dir.join("t.jsonl");
    let run = |opt: &str| {
        cli(
            &reg,
            &[
                "run",
                world.to_str().unwrap(),
                "--steps",
                "20",
                "--agent-opt",
                opt,
                "--trace",
                trace.to_str().unwrap(),
            ],
        )
    };
    assert_eq!(run("critic_lr=0.02"), ExitCode::SUCCESS);
    assert!(trace.exists());
    std::fs::remove_file(&trace).unwrap();
    assert_eq!(run("critic_rl=0.02"), ExitCode::from(2));
    assert!(
        !trace.exists(),
        "a bad option is refused before anything is written"
    );
}

#[test]
fn usage_errors_return_two_and_help_returns_zero() {
    let reg = Registry::builtin();
    assert_eq!(cli(&reg, &["run", "--no-such-flag"]), ExitCode::from(2));
    assert_eq!(cli(&reg, &["--help"]), ExitCode::SUCCESS);
    assert_eq!(
        cli(
            &reg,
            &["check", Path::new("/nonexistent/w.toml").to_str().unwrap()]
        ),
        ExitCode::from(2)
    );
}
