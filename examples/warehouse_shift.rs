//! Which policy runs the warehouse best through supply shocks, and how sure we can be: four
//! agents on the same three seeds, compared per regime with bootstrap confidence intervals.
//!
//! The world is `worlds/warehouse.toml`: the persistent enterprise world (one step is one
//! simulated hour, no episode ever ends) whose market, supply chain and costs shift every
//! 2,000 steps in the cycle baseline, peak_season, baseline, supplier_crisis, baseline,
//! dock_meltdown, baseline, cost_shock. The agents are `random`, the fixed `base-stock`
//! policy, `adaptive-base-stock` (the same policy tuning its stock levels on every window)
//! and the linear `actor-critic` learner. Every agent runs on every seed; the world's and the
//! scheduler's seeds derive from the run seed and each agent draws from its own stream, so
//! on one seed all four meet exactly the same demand and the same failures. One JSONL trace
//! is written per (agent, seed), then all of them are evaluated together.
//!
//! # Reading the output
//!
//! One line per run (steps, seconds, mean reward per step, trace path), then one line per
//! agent: its mean reward per step over the seeds, and the per-seed values. Then the
//! cross-run comparison, one table per agent: a column per regime label, a row per metric,
//! each cell `mean [low, high]`: the mean over the seeds and its 95% percentile-bootstrap
//! confidence interval. `mean_reward` is the reward per step under the label (higher is
//! better); `adaptation_steps` and `recovery_steps` are how long the agent took to settle
//! and to get back to the previous interval's level after a shift (`recovered_fraction` is
//! how often it got back at all); `forgetting` is how much worse a label's interval started
//! than its previous one ended; `gap` and `normalized_gap` are the distance to the world's
//! ceiling (a loose bound: only relative differences mean much). With three seeds the
//! intervals are wide; overlapping intervals mean the data do not separate the agents.
//!
//! Last, the aggregate table of Agarwal et al. (2021): per agent, the interquartile mean,
//! mean, median and optimality gap of the per-(seed, regime) mean rewards, each with a 95%
//! stratified bootstrap CI (seeds resampled within each regime), then P(X > Y), the
//! probability that agent X earns more than agent Y on a regime, for every pair. A P(X > Y)
//! whose CI excludes 0.5 separates the two agents.
//!
//! The step budget per run comes from `PERENNIAL_EXAMPLE_STEPS` (default 32,000: two passes
//! through the cycle, so every label recurs and forgetting is measured; the twelve runs take
//! a few seconds in release).
//!
//! ```sh
//! cargo run --release --example warehouse_shift
//! ```

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use perennial::agents::{
    ActorCritic, ActorCriticParams, AdaptiveBaseStock, AdaptiveParams, BaseStockAgent,
    BaseStockParams, RandomAgent,
};
use perennial::eval::{EvalOptions, comparison_text, evaluate};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;
use perennial::seed::{self, Stream};
use perennial::trace::TraceFormat;

const DEFAULT_STEPS: u64 = 32_000;
const SEEDS: [u64; 3] = [0, 1, 2];
const AGENTS: [&str; 4] = [
    "random",
    "base-stock",
    "adaptive-base-stock",
    "actor-critic",
];

fn main() -> ExitCode {
    perennial::example::main_with_steps("warehouse_shift", DEFAULT_STEPS, run)
}

fn run(steps: u64) -> Result<(), Box<dyn Error>> {
    let world = perennial::example::shipped_world("warehouse.toml")?;
    let Some(layout) = world.params::<MorpheusConfig>() else {
        return Err(format!("{} is not an enterprise world", world.path.display()).into());
    };
    let reward = world.reward_spec().unwrap_or_else(default_reward_spec);
    let config = HarnessConfig {
        window_steps: world.harness.window_steps.unwrap_or(256),
        steps,
        ..HarnessConfig::default()
    };
    let dir = perennial::example::output_dir("perennial-examples")?;

    let mut traces = Vec::new();
    let mut per_agent: Vec<(&str, Vec<f64>)> = AGENTS.iter().map(|&a| (a, Vec::new())).collect();
    for seed in SEEDS {
        for (name, rewards) in &mut per_agent {
            let env = Morpheus::new(layout.clone(), reward.clone())?;
            let agent = make_agent(name, &env, seed);
            let harness = Harness::new(env, agent, seed)
                .scheduler(world.scheduler(seed::derive(seed, Stream::Scheduler, 0))?)
                .config(config.clone());
            let (path, mean) = run_traced(harness, &dir)?;
            rewards.push(mean);
            traces.push(path);
        }
    }

    println!();
    for (name, rewards) in &per_agent {
        let mean = rewards.iter().sum::<f64>() / rewards.len() as f64;
        let each: Vec<String> = rewards.iter().map(|r| format!("{r:.4}")).collect();
        println!(
            "{name:<20} mean reward per step over {} seeds: {mean:>8.4}  (per seed: {})",
            SEEDS.len(),
            each.join(", ")
        );
    }
    println!();
    let report = evaluate(&traces, &EvalOptions::default())?;
    print!("{}", comparison_text(&report.groups));
    println!();
    print!("{}", report.aggregate.to_text());
    for w in &report.warnings {
        println!("warning: {w}");
    }
    Ok(())
}

fn make_agent(name: &str, env: &Morpheus, seed: u64) -> Box<dyn Agent<Morpheus>> {
    let spec = env.spec();
    match name {
        "base-stock" => Box::new(BaseStockAgent::new(
            env.config(),
            BaseStockParams::default(),
        )),
        "adaptive-base-stock" => Box::new(AdaptiveBaseStock::new(
            env.config(),
            AdaptiveParams::default(),
            seed,
        )),
        "actor-critic" => Box::new(ActorCritic::new(
            spec.observation_space.len(),
            env.config().action_count(),
            ActorCriticParams::default(),
            seed,
        )),
        _ => Box::new(RandomAgent::new(spec.action_space.clone(), seed)),
    }
}

/// Runs one (agent, seed) with a JSONL trace under `dir`; returns the trace's path and the
/// run's mean reward per step.
fn run_traced(
    harness: Harness<Morpheus, Box<dyn Agent<Morpheus>>>,
    dir: &Path,
) -> Result<(PathBuf, f64), Box<dyn Error>> {
    let id = harness.identity().clone();
    let path = dir.join(format!("{}.jsonl", id.run_id));
    let started = Instant::now();
    let summary = harness.trace(&path, TraceFormat::Jsonl).run()?;
    let mean = summary.total_reward / summary.steps.max(1) as f64;
    println!(
        "{:<38} {} steps in {:>5.2} s, mean reward per step {mean:>8.4}; trace: {}",
        id.run_id,
        summary.steps,
        started.elapsed().as_secs_f64(),
        path.display()
    );
    Ok((path, mean))
}
