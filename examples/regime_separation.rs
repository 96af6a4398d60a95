//! Do the enterprise world's regimes ask for different decisions? The cross-regime loss
//! table of a world file.
//!
//! For each regime of the file, held fixed, a reference policy is tuned by grid search on
//! training seeds. The policy family is the base-stock agent's: reorder point and target
//! (hours of nominal demand), the carrier, and when to repair dock doors. Then every tuned
//! policy is scored in every regime on other seeds (the same seeds for every policy, so
//! every comparison is paired: the world's random numbers are common to all of them).
//!
//! # Reading the output
//!
//! The loss table has a row per tuned policy and a column per regime: the cell is how much
//! less profit per hour the row's policy makes in the column's regime than the column's
//! best policy, as a fraction of that best (`0.00` on the column's best). Then the targets:
//! the share of off-diagonal cells with a loss of 10% or more (target: at least half),
//! pairs of regimes whose tuned policies are within 2% of each other both ways (target:
//! none), and, over the file's own schedule, the regime-aware policy (playing each
//! regime's tuned policy while it is in force) against the best single fixed policy
//! (target: 10% more profit or better). The tuned parameters are printed as the oracle
//! agent's `[agent.oracle.<label>]` world-file tables, ready to paste (`--agent oracle`
//! plays them, switching with the regime). `--json PATH` writes all of it: the tuned
//! parameters under `tuned`, and the same tables as TOML text under `oracle_tables`.
//!
//! ```sh
//! cargo run --release --example regime_separation -- --world worlds/warehouse.toml --json out.json
//! ```
//!
//! Options: `--train-seeds N` (2), `--test-seeds N` (3), `--hours N` scored per run (4000),
//! `--warmup N` hours not scored (500), `--cycles N` schedule cycles scored (2).

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use perennial::agents::{BaseStockAgent, BaseStockParams};
use perennial::harness::Agent;
use perennial::morpheus::{Morpheus, MorpheusConditions, MorpheusConfig, PARAMETERS};
use perennial::prelude::*;
use perennial::regime::{Plan, Regime};
use perennial::reward::RewardSpec;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;
use serde_json::json;

struct Options {
    world: PathBuf,
    json: Option<PathBuf>,
    train_seeds: u64,
    test_seeds: u64,
    hours: u64,
    warmup: u64,
    cycles: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        world: PathBuf::from("worlds/warehouse.toml"),
        json: None,
        train_seeds: 2,
        test_seeds: 3,
        hours: 4000,
        warmup: 500,
        cycles: 2,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag} {value}: use a whole number of at least 1"))
        };
        match flag.as_str() {
            "--world" => o.world = PathBuf::from(value),
            "--json" => o.json = Some(PathBuf::from(value)),
            "--train-seeds" => o.train_seeds = number()?,
            "--test-seeds" => o.test_seeds = number()?,
            "--hours" => o.hours = number()?,
            "--warmup" => {
                o.warmup = value
                    .parse()
                    .map_err(|_| format!("{flag} {value}: use a whole number"))?
            }
            "--cycles" => o.cycles = number()?,
            _ => return Err(format!("unknown option {flag}; see the example's docs")),
        }
    }
    Ok(o)
}

/// The world of a file, able to put any of its regimes in force.
struct Bench {
    config: MorpheusConfig,
    reward: RewardSpec,
    regimes: Vec<Regime>,
}

impl Bench {
    fn env(&self) -> Result<Morpheus, Box<dyn Error>> {
        Ok(Morpheus::new(self.config.clone(), self.reward.clone())?)
    }

    /// Puts `regime` in force: what it does not name goes back to the baseline.
    fn apply(&self, env: &mut Morpheus, regime: &Regime) -> Result<(), Box<dyn Error>> {
        let base = MorpheusConditions::default();
        for p in PARAMETERS {
            let v = regime
                .conditions
                .get(p.name)
                .copied()
                .or_else(|| base.get(p.name))
                .unwrap_or(p.min);
            env.set(p.name, v)?;
        }
        Ok(())
    }

    /// Mean reward per hour of `params` in `regime` held fixed, over `seeds`.
    fn score(
        &self,
        params: &BaseStockParams,
        regime: &Regime,
        seeds: std::ops::Range<u64>,
        o: &Options,
    ) -> Result<f64, Box<dyn Error>> {
        let mut total = 0.0;
        let n = seeds.end - seeds.start;
        for seed in seeds {
            let mut env = self.env()?;
            self.apply(&mut env, regime)?;
            let mut agent = BaseStockAgent::new(&self.config, params.clone());
            let mut obs = env.reset(seed);
            for h in 0..o.warmup + o.hours {
                let t = env.step(&agent.act(&obs))?;
                if h >= o.warmup {
                    total += t.reward;
                }
                obs = t.observation;
            }
        }
        Ok(total / (n * o.hours) as f64)
    }
}

/// The policy family searched: stock levels, carrier, repairs.
fn grid(config: &MorpheusConfig) -> Vec<BaseStockParams> {
    let last = config.carriers.saturating_sub(1) as u32;
    let mut carriers = vec![0, last / 2, last];
    carriers.dedup();
    let mut out = Vec::new();
    for reorder in [4.0, 10.0, 24.0, 48.0, 96.0] {
        for ratio in [1.5, 3.0] {
            for &carrier in &carriers {
                for repair_at in [0, 1] {
                    out.push(BaseStockParams {
                        reorder_hours: reorder,
                        target_hours: reorder * ratio,
                        carrier: Some(carrier),
                        repair_at,
                        ..BaseStockParams::default()
                    });
                }
            }
        }
    }
    out
}

/// The labels in force over `steps` steps of the file's schedule run with `seed`, one per step.
fn timeline(file: &WorldFile, steps: u64, seed: u64) -> Result<Vec<usize>, Box<dyn Error>> {
    let mut scheduler = file.scheduler(seed)?;
    let index = |label: &str| {
        file.regimes
            .iter()
            .position(|r| r.label == label)
            .unwrap_or(0)
    };
    let mut out = Vec::with_capacity(steps as usize);
    for step in 0..steps {
        scheduler.before_step(step);
        out.push(index(scheduler.label()));
    }
    Ok(out)
}

/// Profit per hour over a schedule timeline, switching policies with the regime when
/// `per_regime` holds one per regime, else playing `per_regime[0]` throughout.
fn schedule_score(
    bench: &Bench,
    per_regime: &[BaseStockParams],
    timeline: &[usize],
    seed: u64,
) -> Result<f64, Box<dyn Error>> {
    let mut env = bench.env()?;
    let pick = |r: usize| per_regime.get(r).unwrap_or(&per_regime[0]).clone();
    let mut current = timeline.first().copied().unwrap_or(0);
    bench.apply(&mut env, &bench.regimes[current])?;
    let mut agent = BaseStockAgent::new(&bench.config, pick(current));
    let mut obs = env.reset(seed);
    let mut total = 0.0;
    for &r in timeline {
        if r != current {
            current = r;
            bench.apply(&mut env, &bench.regimes[r])?;
            if per_regime.len() > 1 {
                agent.set_params(pick(r));
            }
        }
        let t = env.step(&agent.act(&obs))?;
        total += t.reward;
        obs = t.observation;
    }
    Ok(total / timeline.len().max(1) as f64)
}

fn run(o: &Options) -> Result<serde_json::Value, Box<dyn Error>> {
    let file = WorldFile::load(&o.world)?;
    let Some(config) = file.params::<MorpheusConfig>() else {
        return Err(format!("{}: not an enterprise (morpheus) world", o.world.display()).into());
    };
    let bench = Bench {
        config: config.clone(),
        reward: file
            .reward_spec()
            .ok_or("the world file has no reward specification")?,
        regimes: file.regimes.clone(),
    };
    let labels: Vec<&str> = bench.regimes.iter().map(|r| r.label.as_str()).collect();
    let n = labels.len();
    if n < 2 {
        return Err("the world file needs at least two regimes to compare".into());
    }
    let candidates = grid(&bench.config);
    let started = Instant::now();
    let train = 1000..1000 + o.train_seeds;
    let test = 2000..2000 + o.test_seeds;

    // Tuning: every candidate in every regime on the training seeds.
    let mut train_scores = vec![vec![0.0; n]; candidates.len()];
    for (r, regime) in bench.regimes.iter().enumerate() {
        for (g, params) in candidates.iter().enumerate() {
            train_scores[g][r] = bench.score(params, regime, train.clone(), o)?;
        }
        eprintln!(
            "[{:>5.1}s] tuned {} ({} candidates)",
            started.elapsed().as_secs_f64(),
            regime.label,
            candidates.len()
        );
    }
    let best_for = |r: usize| {
        (0..candidates.len())
            .max_by(|&a, &b| train_scores[a][r].total_cmp(&train_scores[b][r]))
            .unwrap_or(0)
    };
    let tuned: Vec<BaseStockParams> = (0..n).map(|r| candidates[best_for(r)].clone()).collect();

    // Cross-regime scores on the test seeds.
    let mut table = vec![vec![0.0; n]; n];
    for (i, params) in tuned.iter().enumerate() {
        for (j, regime) in bench.regimes.iter().enumerate() {
            table[i][j] = bench.score(params, regime, test.clone(), o)?;
        }
    }
    eprintln!(
        "[{:>5.1}s] scored the tuned policies in every regime",
        started.elapsed().as_secs_f64()
    );
    let column_best: Vec<f64> = (0..n)
        .map(|j| {
            (0..n)
                .map(|i| table[i][j])
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    let loss: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| (column_best[j] - table[i][j]) / column_best[j].abs().max(1e-9))
                .collect()
        })
        .collect();
    let off: Vec<f64> = (0..n)
        .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
        .map(|(i, j)| loss[i][j])
        .collect();
    let big = off.iter().filter(|&&l| l >= 0.10).count();
    let mut twins = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if loss[i][j] < 0.02 && loss[j][i] < 0.02 {
                twins.push(format!("{}~{}", labels[i], labels[j]));
            }
        }
    }

    // The file's own schedule: regime-aware against the best single fixed policy.
    let cycle_len = match &file.plan {
        Plan::Cycle { labels, every } => labels.len() as u64 * every,
        _ => 16_000,
    };
    let steps = cycle_len * o.cycles;
    let mut occupancy = vec![0.0; n];
    let timelines: Vec<Vec<usize>> = test
        .clone()
        .map(|seed| timeline(&file, steps, seed))
        .collect::<Result<_, _>>()?;
    for t in &timelines {
        for &r in t {
            occupancy[r] += 1.0;
        }
    }
    let fixed_pick = (0..candidates.len())
        .max_by(|&a, &b| {
            let w = |g: usize| {
                (0..n)
                    .map(|r| occupancy[r] * train_scores[g][r])
                    .sum::<f64>()
            };
            w(a).total_cmp(&w(b))
        })
        .unwrap_or(0);
    let mut fixed: Vec<BaseStockParams> = vec![candidates[fixed_pick].clone()];
    fixed.extend(tuned.iter().cloned());
    let mean_over = |per_regime: &[BaseStockParams]| -> Result<f64, Box<dyn Error>> {
        let mut s = 0.0;
        for (t, seed) in timelines.iter().zip(test.clone()) {
            s += schedule_score(&bench, per_regime, t, seed)?;
        }
        Ok(s / timelines.len() as f64)
    };
    let aware = mean_over(&tuned)?;
    let mut best_fixed = (f64::NEG_INFINITY, 0);
    for (k, p) in fixed.iter().enumerate() {
        let s = mean_over(std::slice::from_ref(p))?;
        if s > best_fixed.0 {
            best_fixed = (s, k);
        }
    }
    eprintln!(
        "[{:>5.1}s] scored the schedule",
        started.elapsed().as_secs_f64()
    );
    let gain = (aware - best_fixed.0) / best_fixed.0.abs().max(1e-9);

    println!("world: {}", o.world.display());
    println!(
        "profit per hour of each tuned policy (row) in each regime (column), test seeds {}..{}:",
        test.start, test.end
    );
    let header = |out: &mut String| {
        out.push_str(&format!("{:>18}", "tuned for \\ in"));
        for l in &labels {
            out.push_str(&format!(" {l:>16}"));
        }
    };
    let mut text = String::new();
    header(&mut text);
    for i in 0..n {
        text.push_str(&format!("\n{:>18}", labels[i]));
        for v in &table[i] {
            text.push_str(&format!(" {v:>16.2}"));
        }
    }
    println!("{text}\n\nloss against the column's best:");
    let mut text = String::new();
    header(&mut text);
    for i in 0..n {
        text.push_str(&format!("\n{:>18}", labels[i]));
        for v in &loss[i] {
            text.push_str(&format!(" {:>15.1}%", 100.0 * v));
        }
    }
    println!("{text}\n");
    let oracle_tables = oracle_tables(&labels, &tuned);
    println!(
        "tuned settings, as the oracle's world-file tables (`--agent oracle`):\n{oracle_tables}"
    );
    println!(
        "\noff-diagonal cells losing 10% or more: {big} of {} (target: at least half) {}",
        off.len(),
        verdict(2 * big >= off.len())
    );
    println!(
        "pairs within 2% both ways: {} (target: none) {}",
        if twins.is_empty() {
            "none".to_string()
        } else {
            twins.join(", ")
        },
        verdict(twins.is_empty())
    );
    println!(
        "schedule ({steps} steps x {} seeds): regime-aware {aware:.2} per hour, best fixed {:.2} ({}), gain {:+.1}% (target: +10%) {}",
        timelines.len(),
        best_fixed.0,
        if best_fixed.1 == 0 {
            "best by training score".to_string()
        } else {
            format!("tuned for {}", labels[best_fixed.1 - 1])
        },
        100.0 * gain,
        verdict(gain >= 0.10)
    );
    println!("{:.1} s", started.elapsed().as_secs_f64());

    Ok(json!({
        "world": o.world.display().to_string(),
        "labels": labels,
        "train_seeds": [train.start, train.end],
        "test_seeds": [test.start, test.end],
        "hours": o.hours,
        "warmup": o.warmup,
        "tuned": labels.iter().zip(&tuned).map(|(l, p)| (l.to_string(), json!(p))).collect::<serde_json::Map<_, _>>(),
        "oracle_tables": oracle_tables,
        "profit": table,
        "loss": loss,
        "share_losing_10pct": big as f64 / off.len() as f64,
        "pairs_within_2pct": twins,
        "schedule": {
            "steps": steps,
            "regime_aware": aware,
            "best_fixed": best_fixed.0,
            "gain": gain,
        },
    }))
}

/// How a target line ends: whether the target is met.
fn verdict(met: bool) -> &'static str {
    if met { "MET" } else { "NOT MET" }
}

/// The tuned settings as `[agent.oracle.<label>]` tables, ready to paste into the world file.
fn oracle_tables(labels: &[&str], tuned: &[BaseStockParams]) -> String {
    let mut out = String::new();
    for (label, p) in labels.iter().zip(tuned) {
        out.push_str(&format!(
            "[agent.oracle.{label}]\nreorder_hours = {:?}\ntarget_hours = {:?}\n",
            p.reorder_hours, p.target_hours
        ));
        if let Some(c) = p.carrier {
            out.push_str(&format!("carrier = {c}\n"));
        }
        out.push_str(&format!("repair_at = {}\n\n", p.repair_at));
    }
    out
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("regime_separation: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(report) => {
            if let Some(path) = &o.json {
                let text = serde_json::to_string_pretty(&report).unwrap_or_default();
                if let Err(e) = std::fs::write(path, text + "\n") {
                    eprintln!("regime_separation: writing {}: {e}", path.display());
                    return ExitCode::from(2);
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("regime_separation: {e}");
            ExitCode::from(2)
        }
    }
}
