//! Which continual-learning family copes best with which shift: PPO and its four continual
//! families against fixed reference policies, on a drifting CartPole and on the warehouse,
//! over several seeds, compared per regime with bootstrap confidence intervals.
//!
//! The agents are `ppo`, `ppo-replay` (reservoir replay with behaviour cloning), `ppo-ewc`
//! (online EWC over self-detected stretches), `ppo-context` (a summary of recent transitions
//! appended to the input) and `ppo-plastic` (shrink-and-perturb), plus `random` and the
//! hand-written references of each world: `balance` on CartPole; `base-stock` and the
//! `oracle` (base-stock tuned per regime, told the regime in force) on the warehouse. Every
//! agent is built by name through the registry, as `perennial run --agent` builds it, with the
//! world file's `[agent.<name>]` options. The oracle's `mean_reward` under a regime is that
//! regime's reference level on the warehouse (`gap` is measured against the world's own
//! ceiling, which is loose there). The worlds are `worlds/cartpole-drift.toml` (gravity, pole length and cart mass
//! cycle every 2,000 steps, Sutton and Barto's reward: 0 per step, -1 per fall) and
//! `worlds/warehouse.toml` (market, supply and cost regimes cycle every 2,000 steps). On one
//! seed every agent meets the same world events; each agent draws from its own stream.
//!
//! # Reading the output
//!
//! One line per run (agent, seed, steps, seconds, mean reward per step, trace path). Then the
//! library's comparison table (`perennial::eval`), one block per (world, agent): a column per
//! regime label, a row per metric, each cell `mean [low, high]` over the seeds with its 95%
//! percentile-bootstrap interval. Higher `mean_reward` is better; `forgetting` is how much
//! worse a label's interval starts than its previous visit ended (positive = forgot);
//! `recovery_steps` is how long the agent took to get back to the previous interval's level
//! after a shift. Last, the `separated` lines list, per world, label and metric, the pairs of
//! PPO families whose intervals do not overlap: the differences the data can vouch for.
//!
//! The step budget per run comes from `PERENNIAL_EXAMPLE_STEPS` (default 12,000: one pass
//! through CartPole's six-interval cycle, so `earth` recurs and forgetting is measured; the
//! warehouse's `baseline` recurs every other interval). Seeds: 0 to `PERENNIAL_EXAMPLE_SEEDS` - 1
//! (default 3 seeds).
//!
//! ```sh
//! cargo run --release --example continual_baselines
//! PERENNIAL_EXAMPLE_STEPS=100000 PERENNIAL_EXAMPLE_SEEDS=5 cargo run --release --example continual_baselines
//! ```

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use perennial::agents::ppo;
use perennial::eval::{Estimate, EvalOptions, comparison_text, evaluate};
use perennial::example::{count_from_env, shipped_world, step_budget};
use perennial::harness::{DynHarness, HarnessConfig};
use perennial::regime::NotifyLevel;
use perennial::registry::{Registry, RunRequest};
use perennial::trace::TraceFormat;
use perennial::world_file::WorldFile;

const DEFAULT_STEPS: u64 = 12_000;
const DEFAULT_SEEDS: u64 = 3;

fn main() -> ExitCode {
    perennial::example::main("continual_baselines", run)
}

fn run() -> Result<(), Box<dyn Error>> {
    let budget = Budget {
        steps: step_budget(DEFAULT_STEPS)?,
        seeds: count_from_env("PERENNIAL_EXAMPLE_SEEDS", DEFAULT_SEEDS)?,
    };
    let dir = perennial::example::output_dir("perennial-continual-baselines")?;

    let drift = shipped_world("cartpole-drift.toml")?;
    let mut traces = run_world(&drift, &["balance"], &budget, &dir)?;
    let warehouse = shipped_world("warehouse.toml")?;
    traces.extend(run_world(
        &warehouse,
        &["base-stock", "oracle"],
        &budget,
        &dir,
    )?);

    println!();
    let report = evaluate(&traces, &EvalOptions::default())?;
    print!("{}", comparison_text(&report.groups));
    for w in &report.warnings {
        println!("warning: {w}");
    }
    println!();
    print_separations(&report.groups);
    Ok(())
}

/// Steps per run and how many seeds (0, 1, ...).
struct Budget {
    steps: u64,
    seeds: u64,
}

/// Runs every PPO family, random and the world's `references` on `world`, once per seed;
/// returns the trace paths.
fn run_world(
    world: &WorldFile,
    references: &[&str],
    budget: &Budget,
    dir: &Path,
) -> Result<Vec<PathBuf>, Box<dyn Error>> {
    let registry = Registry::shared_builtin();
    let kind = registry
        .kind(world.kind())
        .ok_or_else(|| format!("{}: no world kind `{}`", world.path.display(), world.kind()))?;
    let agents: Vec<&str> = ppo::FAMILIES
        .into_iter()
        .chain(["random"])
        .chain(references.iter().copied())
        .collect();
    let mut traces = Vec::new();
    for seed in 0..budget.seeds {
        for &agent in &agents {
            let options = world.agent_options(agent);
            let harness = kind.harness(&RunRequest {
                world,
                agent,
                agent_options: &options,
                seed,
                config: config(world, budget.steps),
                run_id: None,
                notify: NotifyLevel::None,
                follow_world: false,
            })?;
            traces.push(run_traced(harness, dir)?);
        }
    }
    Ok(traces)
}

fn config(world: &WorldFile, steps: u64) -> HarnessConfig {
    HarnessConfig {
        window_steps: world.harness.window_steps.unwrap_or(256),
        auto_reset: world.harness.auto_reset.unwrap_or(false),
        steps,
        ..HarnessConfig::default()
    }
}

/// Runs one (agent, seed) with a JSON Lines trace under `dir`; returns the trace's path.
fn run_traced(mut harness: Box<dyn DynHarness>, dir: &Path) -> Result<PathBuf, Box<dyn Error>> {
    let id = harness.identity().clone();
    let path = dir.join(format!("{}.jsonl", id.run_id));
    harness.open_trace(&path, TraceFormat::Jsonl, None)?;
    let started = Instant::now();
    let summary = harness.run_boxed()?;
    println!(
        "{:<40} {} steps in {:>6.2} s, mean reward per step {:>9.4}; trace: {}",
        id.run_id,
        summary.steps,
        started.elapsed().as_secs_f64(),
        summary.total_reward / summary.steps.max(1) as f64,
        path.display()
    );
    Ok(path)
}

/// Prints the pairs of PPO families whose 95% intervals do not overlap, per world, label and
/// metric.
fn print_separations(groups: &[perennial::eval::Comparison]) {
    let families: Vec<_> = groups
        .iter()
        .filter(|g| ppo::FAMILIES.contains(&g.group.algorithm_id.as_str()))
        .collect();
    let mut found = 0;
    for (i, a) in families.iter().enumerate() {
        for b in &families[i + 1..] {
            if a.group.task != b.group.task {
                continue;
            }
            for (label, ca) in &a.configurations {
                let Some(cb) = b.configurations.get(label) else {
                    continue;
                };
                for ((metric, ea), (_, eb)) in ca.metrics().into_iter().zip(cb.metrics()) {
                    if !matches!(metric, "mean_reward" | "forgetting" | "recovery_steps") {
                        continue;
                    }
                    if let (Some(ea), Some(eb)) = (ea, eb)
                        && disjoint(&ea, &eb)
                    {
                        found += 1;
                        println!(
                            "separated: {} {label} {metric}: {} {:.4} [{:.4}, {:.4}] vs {} {:.4} [{:.4}, {:.4}]",
                            a.group.task,
                            a.group.algorithm_id,
                            ea.mean,
                            ea.ci_low,
                            ea.ci_high,
                            b.group.algorithm_id,
                            eb.mean,
                            eb.ci_low,
                            eb.ci_high
                        );
                    }
                }
            }
        }
    }
    println!("separated pairs (family vs family, disjoint 95% intervals): {found}");
}

fn disjoint(a: &Estimate, b: &Estimate) -> bool {
    a.n > 1 && b.n > 1 && (a.ci_high < b.ci_low || b.ci_high < a.ci_low)
}
