//! Why GRPO groups should be forks: K rollouts of one saved warehouse state against K
//! chunks of one long run.
//!
//! The warehouse (`worlds/warehouse.toml`) runs with `base-stock` for 5,000 hours; its state
//! is then saved ([`Harness::snapshot`]) and forked: 16 rollouts of 24 hours each, for each
//! of `random`, `base-stock` and `oracle`, every rollout restored from the same snapshot
//! ([`perennial::fork::run_rollouts`]). All 16 meet the same demand, failures and delays;
//! only the agent's draws differ (rollout k's agent seed derives from the fork seed and k).
//!
//! For contrast, the same agent then runs 16 × 24 hours on from the same snapshot in one
//! run, cut into 16 chunks of 24 hours: the groups `perennial episodes` makes from one long
//! run. Those chunks start from 16 different world states.
//!
//! # Reading the output
//!
//! Per agent, two lines: `fork` (the 16 rollouts' returns over 24 hours) and `chunks` (the
//! 16 chunks' returns), each with the group's mean, its spread (standard deviation) and the
//! GRPO advantages `(R - mean) / std` of its first members. Last, `world share`: how much of
//! the chunk returns' variance the world state explains, `1 - var(fork) / var(chunks)`. A
//! deterministic agent's fork has no spread at all (every advantage 0: there is nothing to
//! learn from the group), while its chunks still spread widely: a chunk advantage then
//! measures which day had more demand, not which behaviour was better.
//!
//! `PERENNIAL_EXAMPLE_STEPS` sets the source run's length (default 5,000 hours); the whole
//! example takes about a second in release.
//!
//! ```sh
//! cargo run --release --example fork_groups
//! ```

use std::error::Error;
use std::path::Path;

use std::process::ExitCode;

use perennial::agents::{BaseStockAgent, BaseStockParams};
use perennial::fork::{ForkPlan, run_rollouts};
use perennial::harness::{Harness, HarnessConfig, Snapshot};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::registry::Registry;
use perennial::seed::{self, Stream};
use perennial::trace::TraceFormat;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;

const DEFAULT_STEPS: u64 = 5_000;
const ROLLOUTS: u64 = 16;
const HOURS: u64 = 24;
const SEED: u64 = 0;
const AGENTS: [&str; 3] = ["random", "base-stock", "oracle"];

fn main() -> ExitCode {
    perennial::example::main_with_steps("fork_groups", DEFAULT_STEPS, run)
}

fn run(steps: u64) -> Result<(), Box<dyn Error>> {
    let registry = Registry::builtin();
    let world = WorldFile::load_with(
        &perennial::example::shipped_world_path("warehouse.toml"),
        &registry,
    )?;
    let kind = registry
        .kind(world.kind())
        .ok_or("the warehouse's kind is not registered")?;
    let snapshot = source(&world, steps)?;
    let dir = perennial::example::output_dir("perennial-fork-groups")?;
    let jobs = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    println!(
        "source     warehouse, base-stock, seed {SEED}, {} hours; forks of {ROLLOUTS} x {HOURS} hours",
        snapshot.step()
    );
    println!();
    println!(
        "{:<12} {:<7} {:>10} {:>9}  GRPO advantages (first 6)",
        "agent", "group", "mean", "spread"
    );
    for agent in AGENTS {
        for sub in ["fork", "chunks"] {
            let old = dir.join(format!("{agent}-{sub}"));
            if old.exists() {
                std::fs::remove_dir_all(&old)?;
            }
        }
        let options = world.agent_options(agent);
        let (fork_dir, chunk_dir) = (
            dir.join(format!("{agent}-fork")),
            dir.join(format!("{agent}-chunks")),
        );
        std::fs::create_dir_all(&fork_dir)?;
        std::fs::create_dir_all(&chunk_dir)?;
        let forks = ForkPlan {
            snapshot: &snapshot,
            world: &world,
            agent,
            agent_options: &options,
            saved_agent: false,
            seed: SEED,
            rollouts: ROLLOUTS,
            steps: HOURS,
            format: TraceFormat::Jsonl,
            record_transitions: false,
            dir: &fork_dir,
            jobs,
        };
        let fork: Vec<f64> = run_rollouts(kind, &forks)?
            .iter()
            .map(|r| r.summary.total_reward)
            .collect();
        // One run of K x H hours from the same state, cut into K chunks of H hours.
        let long = ForkPlan {
            rollouts: 1,
            steps: ROLLOUTS * HOURS,
            dir: &chunk_dir,
            ..forks.clone()
        };
        run_rollouts(kind, &long)?;
        let chunks = chunk_returns(&long.trace_path(0), HOURS)?;
        line(agent, "fork", &fork);
        line("", "chunks", &chunks);
        let (vf, vc) = (variance(&fork), variance(&chunks));
        let share = if vc > 0.0 {
            (1.0 - vf / vc).clamp(0.0, 1.0)
        } else {
            0.0
        };
        println!(
            "{:<12} world share {:>5.1}% of the chunk returns' variance (fork variance {vf:.0}, chunk variance {vc:.0})",
            "",
            100.0 * share
        );
    }
    println!();
    println!("traces     {}", dir.display());
    Ok(())
}

/// Runs the warehouse with base-stock for `steps` hours and saves its state.
fn source(world: &WorldFile, steps: u64) -> Result<Snapshot, Box<dyn Error>> {
    let Some(layout) = world.params::<MorpheusConfig>() else {
        return Err(format!("{} is not an enterprise world", world.path.display()).into());
    };
    let reward = world.reward_spec().unwrap_or_else(default_reward_spec);
    let env = Morpheus::new(layout.clone(), reward)?;
    let agent = BaseStockAgent::new(env.config(), BaseStockParams::default());
    let mut harness = Harness::new(env, agent, SEED)
        .scheduler(world.scheduler(seed::derive(SEED, Stream::Scheduler, 0))?)
        .config(HarnessConfig {
            window_steps: world.harness.window_steps.unwrap_or(256),
            steps,
            ..HarnessConfig::default()
        });
    harness.advance(steps)?;
    Ok(harness.snapshot()?)
}

/// The sums of a JSON Lines trace's rewards over consecutive chunks of `hours` rows.
fn chunk_returns(trace: &Path, hours: u64) -> Result<Vec<f64>, Box<dyn Error>> {
    let text = std::fs::read_to_string(trace)?;
    let rewards: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| -> Result<f64, Box<dyn Error>> {
            let row: serde_json::Value = serde_json::from_str(l)?;
            row["reward"]
                .as_f64()
                .ok_or_else(|| format!("{}: a row without a reward", trace.display()).into())
        })
        .collect::<Result<_, _>>()?;
    let hours = usize::try_from(hours)?;
    Ok(rewards
        .chunks(hours)
        .filter(|c| c.len() == hours)
        .map(|c| c.iter().sum())
        .collect())
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn variance(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len().max(1) as f64
}

/// GRPO's advantages: each return against its group's mean, in units of its spread (0 for
/// a group with no spread).
fn advantages(xs: &[f64]) -> Vec<f64> {
    let (m, s) = (mean(xs), variance(xs).sqrt());
    xs.iter()
        .map(|x| if s > 1e-12 { (x - m) / s } else { 0.0 })
        .collect()
}

fn line(agent: &str, group: &str, returns: &[f64]) {
    let shown: Vec<String> = advantages(returns)
        .iter()
        .take(6)
        .map(|a| format!("{a:+.2}"))
        .collect();
    println!(
        "{agent:<12} {group:<7} {:>10.3} {:>9.3}  {}",
        mean(returns),
        variance(returns).sqrt(),
        shown.join(" ")
    );
}
