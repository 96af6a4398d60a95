//! Perennial's side of the peer comparison in `benches/peers/compare.sh`: CartPole-v1 env-steps
//! per second on one thread, in the workload the Gymnasium and EnvPool runs use.
//!
//! Every workload takes uniformly random actions drawn inside the timed loop from a seeded
//! ChaCha8 generator, and resets each episode when the env ends it (terminated or truncated
//! at 500 steps): the single env by `reset` with the next episode's seed, the vectors by
//! `NextStep` autoreset, Gymnasium's default. A short untimed warm-up runs first, then each
//! workload runs REPEATS times (default 5) and the median time is reported, because one
//! run of a fast workload lasts a few tens of milliseconds and a busy machine skews it.
//!
//! ```sh
//! cargo run --release --example peer_workload -- 1000000 5
//! ```
//!
//! prints one line per workload, `NAME ENV_STEPS steps SECONDS s`, e.g.
//! `perennial_vec_4096 1003520 steps 0.0270 s`: SECONDS is the median over the repeats, and
//! the vector workloads round ENV_STEPS up to whole batches. Env-steps/s is
//! ENV_STEPS / SECONDS.

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

use perennial::prelude::*;
use perennial::seed::{self, Stream};
use perennial::vector::{AutoresetMode, CartPoleVec, VecEnv};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SEED: u64 = 0;

fn main() -> ExitCode {
    perennial::example::main("peer_workload", run)
}

fn run() -> Result<(), Box<dyn Error>> {
    let steps: u64 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|e| format!("ENV_STEPS must be a whole number, got `{arg}`: {e}"))?,
        None => 1_000_000,
    };
    let warm_up = (steps / 50).max(1);
    single(warm_up)?;
    report("perennial_single", steps, single(steps)?);
    for num_envs in [64, 4096] {
        let batches = steps.div_ceil(num_envs as u64);
        cartpole_vec(num_envs, batches.div_ceil(50))?;
        let secs = cartpole_vec(num_envs, batches)?;
        report(
            &format!("perennial_vec_{num_envs}"),
            batches * num_envs as u64,
            secs,
        );
    }
    let batches = steps.div_ceil(4096);
    vec_env(4096, batches.div_ceil(50))?;
    report(
        "perennial_vecenv_4096",
        batches * 4096,
        vec_env(4096, batches)?,
    );
    Ok(())
}

fn report(name: &str, env_steps: u64, secs: f64) {
    println!("{name} {env_steps} steps {secs:.6} s");
}

/// One CartPole through the `Env` trait, actions sampled from its action space.
fn single(steps: u64) -> Result<f64, EnvError> {
    let mut env = CartPole::new(CartPoleParams::default());
    let space = env.spec().action_space.clone();
    let mut rng = seed::rng(SEED, Stream::Agent);
    let mut episode = 0;
    env.reset(seed::derive(SEED, Stream::World, episode));
    let start = Instant::now();
    for _ in 0..steps {
        let action = usize::sample(&space, &mut rng).ok_or(EnvError::World(
            "CartPole's action space is Discrete(2)".into(),
        ))?;
        if env.step(&action)?.done() {
            episode += 1;
            env.reset(seed::derive(SEED, Stream::World, episode));
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Fills `actions` with uniform random 0/1 actions, one random bit each.
fn sample(rng: &mut ChaCha8Rng, actions: &mut [usize]) {
    for chunk in actions.chunks_mut(64) {
        let bits = rng.next_u64();
        for (k, a) in chunk.iter_mut().enumerate() {
            *a = ((bits >> k) & 1) as usize;
        }
    }
}

/// `CartPoleVec` on one thread.
fn cartpole_vec(num_envs: usize, batches: u64) -> Result<f64, Box<dyn Error>> {
    let envs = CartPoleVec::new(num_envs, CartPoleParams::default(), AutoresetMode::NextStep);
    timed(envs, batches)
}

/// The generic `VecEnv<CartPole>`: one `Env::step` call per copy.
fn vec_env(num_envs: usize, batches: u64) -> Result<f64, Box<dyn Error>> {
    let copies = (0..num_envs)
        .map(|_| CartPole::new(CartPoleParams::default()))
        .collect();
    timed(VecEnv::new(copies, AutoresetMode::NextStep)?, batches)
}

/// Seconds `batches` steps of `envs` take, with random actions sampled in the timed loop.
fn timed(mut envs: impl VectorEnv<Action = usize>, batches: u64) -> Result<f64, Box<dyn Error>> {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut actions = vec![0; envs.num_envs()];
    envs.reset(SEED)?;
    let start = Instant::now();
    for _ in 0..batches {
        sample(&mut rng, &mut actions);
        envs.step(&actions)?;
    }
    Ok(start.elapsed().as_secs_f64())
}
