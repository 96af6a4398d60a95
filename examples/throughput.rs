//! Steps per second of the built-in worlds, bare and through the harness, on this machine.
//!
//! Every workload takes uniformly random actions from `RandomAgent` and is timed once with a
//! wall clock (build it with `--release`; a debug build is 10 to 50 times slower):
//!
//! - `cartpole env`: CartPole-v1 stepped through the `Env` trait, reset when an episode ends;
//! - `cartpole harness, no trace`: the same through the `Harness` (scheduler, windows,
//!   summary), auto-reset on, no trace;
//! - `cartpole harness, jsonl trace`: the same, writing a JSONL trace under the temp dir
//!   (removed afterwards: it takes about 270 bytes a step);
//! - `cartpole vector, N envs`: `CartPoleVec` (structure of arrays, one thread, next-step
//!   autoreset) with N = 64 and 4096, actions drawn per batch from a seeded generator; the
//!   steps column counts env-steps (N per batch);
//! - `enterprise env, default layout`: the persistent enterprise world (8 SKUs, 4 docks,
//!   3 carriers, the default reward) through the `Env` trait;
//! - `enterprise env, layout x10`: the same with `MorpheusConfig::scaled(10)` (80 SKUs,
//!   40 docks).
//!
//! # Reading the output
//!
//! One row per workload: the steps taken, the seconds they took and their ratio, steps per
//! second. The gap between the first two rows is the harness's own cost per step; the third
//! row adds serializing and writing one trace row per step. The enterprise rows show the
//! cost of a richer world, and how it grows with the layout. A single timed pass on a shared
//! machine varies by several percent from run to run; `cargo bench` gives medians.
//!
//! `PERENNIAL_EXAMPLE_STEPS` sets the budget of the two untraced CartPole rows (default
//! 20,000,000); the traced row takes a tenth of it, the enterprise world, whose steps cost far
//! more, a hundredth with the default layout and a thousandth with the layout ten times
//! larger. The whole run takes a few seconds in release.
//!
//! ```sh
//! cargo run --release --example throughput
//! ```

use std::error::Error;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use perennial::agents::RandomAgent;
use perennial::harness::{Harness, HarnessConfig};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;
use perennial::trace::TraceFormat;
use perennial::vector::{AutoresetMode, CartPoleVec};
use rand::Rng;

const DEFAULT_STEPS: u64 = 20_000_000;
const SEED: u64 = 0;

fn main() -> ExitCode {
    perennial::example::main_with_steps("throughput", DEFAULT_STEPS, run)
}

fn run(steps: u64) -> Result<(), Box<dyn Error>> {
    let traced = (steps / 10).max(1);
    let enterprise = (steps / 100).max(1);
    let enterprise_x10 = (steps / 1000).max(1);
    let dir = perennial::example::output_dir("perennial-examples")?;
    let trace_path = dir.join("throughput-cartpole.jsonl");
    let (small, large) = (enterprise_world(1)?, enterprise_world(10)?);

    let rows = [
        (
            "cartpole env",
            steps,
            time(|| env_loop(CartPole::new(CartPoleParams::default()), steps))?,
        ),
        (
            "cartpole harness, no trace",
            steps,
            time(|| cartpole_harness(steps, None))?,
        ),
        (
            "cartpole harness, jsonl trace",
            traced,
            time(|| cartpole_harness(traced, Some(&trace_path)))?,
        ),
        (
            "cartpole vector, 64 envs",
            batches(steps, 64),
            time(|| vector_loop(64, steps))?,
        ),
        (
            "cartpole vector, 4096 envs",
            batches(steps, 4096),
            time(|| vector_loop(4096, steps))?,
        ),
        (
            "enterprise env, default layout",
            enterprise,
            time(|| env_loop(small, enterprise))?,
        ),
        (
            "enterprise env, layout x10",
            enterprise_x10,
            time(|| env_loop(large, enterprise_x10))?,
        ),
    ];

    println!(
        "{:<32} {:>10} {:>9} {:>14}",
        "workload", "steps", "seconds", "steps/s"
    );
    for (workload, steps, seconds) in rows {
        println!(
            "{workload:<32} {steps:>10} {seconds:>9.3} {:>14.0}",
            steps as f64 / seconds
        );
    }
    // At a few hundred bytes a row the trace is large, and only its writing was of interest.
    let bytes = std::fs::metadata(&trace_path)?.len();
    std::fs::remove_file(&trace_path)?;
    println!(
        "\nthe jsonl trace ({:.0} MB) was written to {} and removed",
        bytes as f64 / 1e6,
        trace_path.display()
    );
    Ok(())
}

/// Env-steps a vector of `n` envs takes for at least `steps`: whole batches.
fn batches(steps: u64, n: u64) -> u64 {
    steps.div_ceil(n) * n
}

/// Steps `n` vectorized CartPoles for at least `steps` env-steps with random actions.
fn vector_loop(n: usize, steps: u64) -> Result<(), Box<dyn Error>> {
    let mut envs = CartPoleVec::new(n, CartPoleParams::default(), AutoresetMode::NextStep);
    envs.reset(SEED)?;
    let mut rng = perennial::seed::rng(SEED, perennial::seed::Stream::Agent);
    let mut actions = vec![0usize; n];
    for _ in 0..batches(steps, n as u64) / n as u64 {
        for chunk in actions.chunks_mut(64) {
            let bits = rng.next_u64();
            for (i, a) in chunk.iter_mut().enumerate() {
                *a = ((bits >> i) & 1) as usize;
            }
        }
        black_box(envs.step(&actions)?.rewards()[0]);
    }
    Ok(())
}

/// Seconds `f` took.
fn time(f: impl FnOnce() -> Result<(), Box<dyn Error>>) -> Result<f64, Box<dyn Error>> {
    let started = Instant::now();
    f()?;
    Ok(started.elapsed().as_secs_f64())
}

fn enterprise_world(scale: usize) -> Result<Morpheus, Box<dyn Error>> {
    Ok(Morpheus::new(
        MorpheusConfig::default().scaled(scale),
        default_reward_spec(),
    )?)
}

/// `steps` random steps through the `Env` trait alone, resetting when an episode ends.
fn env_loop<E: Env<Action = usize>>(mut env: E, steps: u64) -> Result<(), Box<dyn Error>> {
    black_box(perennial::example::random_loop(&mut env, steps, SEED)?);
    Ok(())
}

fn cartpole_harness(steps: u64, trace: Option<&std::path::Path>) -> Result<(), Box<dyn Error>> {
    let env = CartPole::new(CartPoleParams::default());
    let agent = RandomAgent::new(env.spec().action_space.clone(), SEED);
    let config = HarnessConfig {
        steps,
        auto_reset: true,
        ..HarnessConfig::default()
    };
    let mut harness = Harness::new(env, agent, SEED).config(config);
    if let Some(path) = trace {
        harness = harness.trace(path, TraceFormat::Jsonl);
    }
    black_box(harness.run()?);
    Ok(())
}
