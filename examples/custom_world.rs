//! A world of your own in under 90 lines, run and scored exactly like the built-in ones,
//! and given the whole `perennial` command line.
//!
//! `Thermostat` is a room heated by a three-level heater, one step a minute. The indoor
//! temperature leaks towards the outdoor one, the heater adds heat, and a little noise drifts
//! it. The reward is comfort (minus the distance to 20 °C, in tens of degrees) plus an energy
//! cost per heater level, reported as two components; the world knows its ceiling (0: exactly
//! 20 °C with the heater off). The pipes freeze below 0 °C, a genuine terminal state
//! (`terminated`); the heating day ends after 1,440 steps, a cutoff the world imposes
//! (`truncated`); both are true when the pipes freeze on the last minute. Two parameters can
//! shift mid-episode: the outdoor temperature `ambient` and the heat `leak`. The world is
//! the section between the two `-- world` rules below: `Env`, its parameter table
//! ([`perennial::param_table!`]), its spec (`EnvSpec::new`) and its checkpoints
//! ([`perennial::serde_env_state!`]), with the public API only.
//!
//! # With arguments: the `perennial` command line over this world
//!
//! The example registers the world as kind `thermostat` (with the `bang-bang` controller
//! as one of its agents) and hands the registry to `perennial::cli::main_with`, so
//! `run`, `check`, `eval`, checkpoints and sweeps work on world files of that kind:
//!
//! ```sh
//! cargo run --release --example custom_world -- run examples/thermostat.toml
//! cargo run --release --example custom_world -- check examples/thermostat.toml
//! ```
//!
//! # Without arguments: the library API
//!
//! The example checks the checkpoint and the invalid-action error, then runs the world under
//! the cycle mild, cold_snap, mild, draughty with two agents, perennial's `RandomAgent` and
//! the `bang-bang` controller, writes a JSONL trace per agent and prints their evaluation
//! report.
//!
//! Two lines check the world's contract, one line per run gives its totals and trace path,
//! then comes the evaluation report, one block per agent. Rewards are at most 0; closer to 0
//! is better. Under `cold_snap` even full heat cannot reach 20 °C and the random agent lets
//! the pipes freeze (its `episodes` count grows); under `draughty` the room loses heat three
//! times as fast. `gap` is the mean distance to the ceiling; `components` splits the reward
//! into comfort and energy. The last tables are the two agents as groups of one run.
//!
//! The step budget per agent comes from `PERENNIAL_EXAMPLE_STEPS` (default 40,000, well
//! under a second in release); each regime holds for an eighth of it, so the cycle runs
//! twice and forgetting is measured.
//!
//! ```sh
//! cargo run --release --example custom_world
//! ```

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use perennial::agents::{AgentCtx, AgentError, NoOptions, RandomAgent};
use perennial::env::check_step;
use perennial::eval::{EvalOptions, evaluate};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::regime::check_parameter;
use perennial::registry::{KindFn, Registry};
use perennial::seed::{self, Stream};
use perennial::trace::TraceFormat;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

const DEFAULT_STEPS: u64 = 40_000;

// -- world ---------------------------------------------------------------------------------

const TARGET: f64 = 20.0;
/// Degrees a heater level adds per minute.
const HEAT_PER_LEVEL: f64 = 0.6;
const FREEZE: f64 = 0.0;
const DAY: u64 = 1_440;

/// A heated room. Parameters are configuration and survive `reset`; `room` is the world.
#[derive(Serialize, Deserialize)]
struct Thermostat {
    ambient: f64,
    leak: f64,
    room: Option<Room>,
    #[serde(skip, default = "spec")]
    spec: EnvSpec,
}

#[derive(Serialize, Deserialize)]
struct Room {
    temp: f64,
    level: usize,
    minute: u64,
    ended: bool,
    rng: ChaCha8Rng,
}

perennial::param_table! {
    impl Shiftable for Thermostat {
        ambient: f64 = [-30.0, 40.0], "outdoor temperature, °C";
        leak: f64 = [0.0, 0.5], "share of the indoor-outdoor gap lost per minute";
    }
}

fn spec() -> EnvSpec {
    let observations = Space::box_f32(vec![f64::NEG_INFINITY, 0.0], vec![f64::INFINITY, 1.0]);
    EnvSpec::new("thermostat", observations, Space::Discrete { n: 3 })
        .components(["comfort", "energy"])
}

/// Distance to the target in tens of degrees, and the heater level in [0, 1].
fn observe(room: &Room) -> [f32; 2] {
    let distance = (room.temp - TARGET) / 10.0;
    [distance as f32, room.level as f32 / 2.0]
}

impl Env for Thermostat {
    type Obs = [f32; 2];
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> [f32; 2] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let temp = TARGET + rng.random_range(-2.0..2.0);
        observe(self.room.insert(Room {
            temp,
            level: 0,
            minute: 0,
            ended: false,
            rng,
        }))
    }

    fn step(&mut self, action: &usize) -> Result<Transition<[f32; 2]>, EnvError> {
        let ended = self.room.as_ref().is_none_or(|r| r.ended);
        check_step(self.room.is_some(), ended, action, &self.spec.action_space)?;
        let room = self.room.as_mut().ok_or(EnvError::NotReset)?;
        let noise = room.rng.random_range(-0.3..0.3);
        room.temp +=
            self.leak * (self.ambient - room.temp) + HEAT_PER_LEVEL * *action as f64 + noise;
        (room.level, room.minute) = (*action, room.minute + 1);
        let comfort = -(room.temp - TARGET).abs() / 10.0;
        let energy = -0.05 * *action as f64;
        let (terminated, truncated) = (room.temp < FREEZE, room.minute >= DAY);
        room.ended = terminated || truncated;
        Ok(Transition::new(observe(room), comfort + energy)
            .ended(terminated, truncated)
            .breakdown(Breakdown::of(vec![comfort, energy])))
    }

    fn ceiling(&self) -> Option<Ceiling> {
        Some(Ceiling::constant(0.0))
    }

    perennial::serde_env_state!();
}

// -- world ---------------------------------------------------------------------------------

impl Thermostat {
    fn new(weather: &Weather) -> Self {
        let (ambient, leak, room, spec) = (weather.ambient, weather.leak, None, spec());
        Thermostat {
            ambient,
            leak,
            room,
            spec,
        }
    }
}

/// A world file's `[world.params]` for `kind = "thermostat"`: the weather a run starts in.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Weather {
    ambient: f64,
    leak: f64,
}

impl Default for Weather {
    fn default() -> Self {
        Weather {
            ambient: 10.0,
            leak: 0.05,
        }
    }
}

/// The built-in kinds plus `thermostat`, whose agents are the generic ones and `bang-bang`.
fn registry() -> Registry {
    let bang_bang =
        |ctx: &AgentCtx<'_, Thermostat>| -> Result<Box<dyn Agent<Thermostat>>, AgentError> {
            ctx.options::<NoOptions>()?;
            Ok(Box::new(BangBang))
        };
    let kind = KindFn::new("thermostat", |weather: &Weather| {
        Ok(Thermostat::new(weather))
    });
    Registry::builtin().world_with_agents(kind, vec![("bang-bang", bang_bang)])
}

/// Full heat below 19.5 °C, off above 20.5 °C, low heat in between.
struct BangBang;

impl Agent<Thermostat> for BangBang {
    fn algorithm_id(&self) -> &str {
        "bang-bang"
    }

    fn act(&mut self, obs: &[f32; 2]) -> usize {
        match obs[0] {
            d if d < -0.05 => 2,
            d if d > 0.05 => 0,
            _ => 1,
        }
    }
}

fn main() -> ExitCode {
    if std::env::args_os().len() > 1 {
        return perennial::cli::main_with(registry());
    }
    perennial::example::main_with_steps("custom_world", DEFAULT_STEPS, run)
}

fn run(steps: u64) -> Result<(), Box<dyn Error>> {
    check_contract()?;
    let regimes = vec![
        Regime::new("mild", &[]),
        Regime::new("cold_snap", &[("ambient", -15.0)]),
        Regime::new("draughty", &[("leak", 0.15)]),
    ];
    // Caught here rather than as a failed step mid-run, as world files are checked at load.
    let parameters = Thermostat::new(&Weather::default()).parameters();
    for regime in &regimes {
        for (name, &value) in &regime.conditions {
            check_parameter(&parameters, name, value)?;
        }
    }
    let plan = Plan::cycle(
        &["mild", "cold_snap", "mild", "draughty"],
        (steps / 8).max(1),
    );

    let seed = 0;
    let config = HarnessConfig {
        steps,
        auto_reset: true,
        ..HarnessConfig::default()
    };
    let scheduler = Scheduler::new(regimes, plan, seed::derive(seed, Stream::Scheduler, 0))?;
    let env = Thermostat::new(&Weather::default());
    let random = RandomAgent::new(env.spec().action_space.clone(), seed);
    let traces = vec![
        run_traced(
            Harness::new(env, random, seed)
                .scheduler(scheduler.clone())
                .config(config.clone()),
        )?,
        run_traced(
            Harness::new(Thermostat::new(&Weather::default()), BangBang, seed)
                .scheduler(scheduler)
                .config(config),
        )?,
    ];
    println!();
    print!("{}", evaluate(&traces, &EvalOptions::default())?.to_text());
    Ok(())
}

/// A restored checkpoint must repeat the saved world step for step, and a bad action must
/// be refused without touching the world.
fn check_contract() -> Result<(), Box<dyn Error>> {
    let mut saved = Thermostat::new(&Weather::default());
    saved.reset(7);
    for _ in 0..5 {
        saved.step(&2)?;
    }
    let mut restored = Thermostat::new(&Weather::default());
    restored.load_state(saved.save_state()?)?;
    for action in [0, 1, 2, 2, 0] {
        if saved.step(&action)? != restored.step(&action)? {
            return Err("the restored thermostat diverged from the saved one".into());
        }
    }
    println!("checkpoint: the restored world repeats the saved one step for step");
    let Err(refused) = restored.step(&3) else {
        return Err("action 3 was accepted; the action space is Discrete(3)".into());
    };
    println!("action 3: {refused}");
    Ok(())
}

fn run_traced<A: Agent<Thermostat>>(
    harness: Harness<Thermostat, A>,
) -> Result<PathBuf, Box<dyn Error>> {
    let dir = perennial::example::output_dir("perennial-examples")?;
    let id = harness.identity().clone();
    let path = dir.join(format!("{}.jsonl", id.run_id));
    let summary = harness.trace(&path, TraceFormat::Jsonl).run()?;
    println!(
        "{:<28} {} steps, {} episodes ended, reward per step {:.4}; trace: {}",
        id.run_id,
        summary.steps,
        summary.episodes_ended,
        summary.total_reward / summary.steps.max(1) as f64,
        path.display()
    );
    Ok(path)
}
