//! How a learner copes with CartPole physics that cycle mid-episode: how fast it adapts after
//! each shift, whether it gets back to where it was, and what it forgets.
//!
//! The world is `worlds/cartpole-drift.toml`: CartPole-v1 with Sutton and Barto's reward (0 per
//! step, -1 when the pole falls), whose gravity, pole length and cart mass change every 2,000
//! steps in the cycle earth, heavy_gravity, earth, long_pole, earth, heavy_cart. The learner is
//! the linear [`ActorCritic`], updated every 128-step rollout window; episodes end only when
//! the pole falls or the 500-step limit is reached, and the harness then resets the world
//! (auto-reset). The run is written to a JSONL trace and scored from that trace alone.
//!
//! # Reading the output
//!
//! First a line with the run's totals and the trace's path (`perennial eval PATH` prints the
//! same report again). Then the evaluation report. A step's reward is 0 or -1, so every
//! `mean_r`, `head` and `tail` is minus the rate of falls per step: closer to 0 is better.
//! In the `intervals` table each line is one stretch under one label: `head` and `tail` are
//! the mean reward over its first and last 100 steps, `adapt` the steps it took to close 90%
//! of the way from head to tail, `recov` the steps until the rolling mean got back to the
//! previous interval's tail (`never` if it did not), and `forget` how much worse the interval
//! started than the label's previous interval ended (positive = forgotten). `gap` is the
//! mean distance to the best reward a step can earn, 0 here, so it is the rate of falls. The
//! `configurations` table sums the same per label. The last table is the run as a group of
//! one (its confidence intervals collapse to the value). Watch the falls thin out as the
//! learner goes round the cycle.
//!
//! The step budget comes from `PERENNIAL_EXAMPLE_STEPS` (default 48,000: four passes through
//! the cycle, a fraction of a second in release).
//!
//! ```sh
//! cargo run --release --example cartpole_regimes
//! ```

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

use perennial::agents::{ActorCritic, ActorCriticParams};
use perennial::eval::{EvalOptions, evaluate};
use perennial::harness::{Harness, HarnessConfig};
use perennial::prelude::*;
use perennial::seed::{self, Stream};
use perennial::trace::TraceFormat;

const DEFAULT_STEPS: u64 = 48_000;
const SEED: u64 = 0;

fn main() -> ExitCode {
    perennial::example::main_with_steps("cartpole_regimes", DEFAULT_STEPS, run)
}

fn run(steps: u64) -> Result<(), Box<dyn Error>> {
    let world = perennial::example::shipped_world("cartpole-drift.toml")?;
    let Some(params) = world.params::<CartPoleParams>().cloned() else {
        return Err(format!("{} is not a CartPole world", world.path.display()).into());
    };
    let env = CartPole::new(params);
    let Space::Discrete { n } = env.spec().action_space else {
        return Err("CartPole's action space is expected to be Discrete".into());
    };
    let agent = ActorCritic::new(
        env.spec().observation_space.len(),
        n,
        ActorCriticParams::default(),
        SEED,
    );
    let config = HarnessConfig {
        window_steps: 128,
        auto_reset: true,
        steps,
        ..HarnessConfig::default()
    };
    let harness = Harness::new(env, agent, SEED)
        .scheduler(world.scheduler(seed::derive(SEED, Stream::Scheduler, 0))?)
        .config(config);

    let dir = perennial::example::output_dir("perennial-examples")?;
    let id = harness.identity().clone();
    let path = dir.join(format!("{}.jsonl", id.run_id));
    let started = Instant::now();
    let summary = harness.trace(&path, TraceFormat::Jsonl).run()?;
    println!(
        "{} steps, {} episodes ended (falls and time limits), {} regime shifts in {:.2} s; trace: {}\n",
        summary.steps,
        summary.episodes_ended,
        summary.shifts,
        started.elapsed().as_secs_f64(),
        path.display()
    );
    let report = evaluate(&[path], &EvalOptions::default())?;
    print!("{}", report.to_text());
    Ok(())
}
