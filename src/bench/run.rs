//! `perennial bench run`: a suite's runs as sweeps (the references' and the agent's), then
//! the agent's results file.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::error::BenchError;
use super::results::{
    Candidate, RESULTS_FORMAT, Reference, Results, run_ceiling, run_mean, run_result,
};
use super::suite::{ReferenceKind, Suite};
use crate::eval::{EvalOptions, RunReport, evaluate, plasticity_paths};
use crate::regime::NotifyLevel;
use crate::registry::Registry;
use crate::sweep::{
    RunExit, RunStatus, SweepError, SweepFile, collect_exits, plan, run_local_until,
};
use crate::trace::{Plasticity, TraceFormat};
use crate::world_file::TomlFile;

/// What to run on every suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// The agent.
    pub agent: String,
    /// Its options, `KEY=VALUE` as `perennial run --agent-opt` takes them.
    pub agent_options: Vec<String>,
    /// Runs at once.
    pub jobs: usize,
    /// The results folder: `runs/` (one sweep folder per suite, track and policy) and
    /// `results/` (one results file per suite, track and agent).
    pub out: PathBuf,
    /// A smoke run: only the first this many seeds of each suite.
    pub seeds: Option<usize>,
    /// A smoke run: this step budget instead of the suite's.
    pub steps: Option<u64>,
}

/// An agent with its options: one policy, one sweep folder.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Policy {
    agent: String,
    options: Vec<String>,
}

impl Policy {
    /// The policy's folder and file name: the agent, with a hash of its options when it has
    /// some.
    fn key(&self) -> String {
        if self.options.is_empty() {
            self.agent.clone()
        } else {
            let hash = crate::output::content_hash(self.options.join("\n").as_bytes());
            format!("{}-{}", self.agent, &hash[..8])
        }
    }
}

/// The results file of `agent` on a suite and track, under `out`.
pub fn results_path(out: &Path, suite: &str, track: NotifyLevel, key: &str) -> PathBuf {
    out.join("results")
        .join(format!("{suite}.{track}.{key}.json"))
}

/// Where the runs of a policy's sweep are made.
#[derive(Clone, Copy)]
enum Runs<'a> {
    /// Here, `jobs` at once; raising the flag stops them (SIGINT, SIGTERM).
    Local(&'a AtomicBool),
    /// Elsewhere (the Python package's Ray backend): how each ended, per sweep folder, and
    /// the folders recorded so far (a folder two roles share is recorded once).
    Collected(
        &'a BTreeMap<PathBuf, BTreeMap<String, RunExit>>,
        &'a RefCell<BTreeSet<PathBuf>>,
    ),
}

/// Runs `options.agent` on every suite (each of its tracks and seeds), with the references
/// each suite needs, and writes one results file per suite and track. Runs already done
/// in `options.out` are kept (each sweep resumes); returns what to print.
///
/// # Errors
///
/// A smoke run into a folder holding full results, a sweep that fails (a run failed, the
/// folder is held, its runs were started with other options), scoring, I/O.
pub fn run(
    registry: &Registry,
    suites: &[Suite],
    options: &RunOptions,
    stop: &AtomicBool,
) -> Result<String, BenchError> {
    run_with(registry, suites, options, Runs::Local(stop))
}

/// What [`run`] would run, as JSON: `{"out": DIR, "results": [...], "sweeps": [...]}`:
/// the results files it writes, and one entry per policy's sweep in the shape of
/// `perennial sweep --plan-json` (its folder, lock and runs, each with the exact
/// `perennial` arguments that start or continue it). Runs nothing. The Python package's
/// Ray backend runs these runs, then calls [`collect`].
///
/// # Errors
///
/// As [`run`] before anything runs: a smoke run into a folder of full results, an agent a
/// suite's world cannot run, a foreign sweep manifest.
pub fn plan_json(
    registry: &Registry,
    suites: &[Suite],
    options: &RunOptions,
) -> Result<String, BenchError> {
    let (out, agent) = prepare(suites, options)?;
    let mut results = Vec::new();
    for suite in suites {
        for &track in &suite.tracks {
            results.push(results_path(&out, &suite.name, track, &agent.key()));
        }
    }
    let sweeps = policy_sweeps(registry, suites, options, &out, &agent)?
        .iter()
        .map(|(sweep, dir)| crate::sweep::plan_document(sweep, dir))
        .collect::<Result<Vec<_>, _>>()?;
    let doc = serde_json::json!({ "out": out, "results": results, "sweeps": sweeps });
    let mut text = serde_json::to_string_pretty(&doc).expect("a plan is strings and numbers");
    text.push('\n');
    Ok(text)
}

/// [`run`] with its runs made elsewhere: `exits` (`{"<sweep folder>": {"<run-id>":
/// {"exit_code": 0, "attempts": 1}}}`) says how each run of [`plan_json`] ended; they are
/// recorded in each sweep's manifest, then the traces are scored into the results files
/// [`run`] writes.
///
/// # Errors
///
/// An unreadable or malformed `exits`, a folder or run it names that the plan has not, a
/// run that failed or is not done, and as [`run`].
pub fn collect(
    registry: &Registry,
    suites: &[Suite],
    options: &RunOptions,
    exits: &Path,
) -> Result<String, BenchError> {
    let bad = |message: String| BenchError::Options(format!("{}: {message}", exits.display()));
    let bytes = crate::limits::read_regular(
        exits,
        crate::limits::MAX_SIDE_FILE_BYTES,
        "a run-exits file",
    )
    .map_err(bad)?;
    let map: BTreeMap<PathBuf, BTreeMap<String, RunExit>> = serde_json::from_slice(&bytes)
        .map_err(|e| bad(format!("not a run-exits file ({e}); expected {{\"<sweep folder>\": {{\"<run-id>\": {{\"exit_code\": 0, \"attempts\": 1}}}}}}")))?;
    let (out, agent) = prepare(suites, options)?;
    let sweeps = policy_sweeps(registry, suites, options, &out, &agent)?;
    let dirs: BTreeSet<&PathBuf> = sweeps.iter().map(|(_, dir)| dir).collect();
    if let Some(dir) = map.keys().find(|d| !dirs.contains(d)) {
        return Err(bad(format!(
            "{} is not the folder of a sweep of this bench run",
            dir.display()
        )));
    }
    let recorded = RefCell::new(BTreeSet::new());
    run_with(registry, suites, options, Runs::Collected(&map, &recorded))
}

/// Every policy's sweep of a bench run and its folder, each folder once (an agent that is
/// also a reference shares its sweep).
fn policy_sweeps(
    registry: &Registry,
    suites: &[Suite],
    options: &RunOptions,
    out: &Path,
    agent: &Policy,
) -> Result<Vec<(SweepFile, PathBuf)>, BenchError> {
    let mut sweeps: Vec<(SweepFile, PathBuf)> = Vec::new();
    for suite in suites {
        let (seeds, steps) = suite.shrunk(options.seeds, options.steps);
        for &track in &suite.tracks {
            for policy in policies(suite, agent) {
                let budget = (seeds.as_slice(), steps);
                let (sweep, dir) = policy_sweep(registry, suite, track, &policy, budget, out)?;
                if !sweeps.iter().any(|(_, d)| *d == dir) {
                    sweeps.push((sweep, dir));
                }
            }
        }
    }
    Ok(sweeps)
}

/// The results folder made absolute, and the agent as a policy; refuses a smoke run into a
/// folder of full results before anything runs.
fn prepare(suites: &[Suite], options: &RunOptions) -> Result<(PathBuf, Policy), BenchError> {
    let out = std::path::absolute(&options.out).unwrap_or_else(|_| options.out.clone());
    crate::output::check_unicode("bench --out", &out)?;
    let mut agent_options = options.agent_options.clone();
    agent_options.sort();
    let agent = Policy {
        agent: options.agent.clone(),
        options: agent_options,
    };
    for suite in suites {
        let (seeds, steps) = suite.shrunk(options.seeds, options.steps);
        let smoke = seeds != suite.seeds || steps != suite.steps;
        for &track in &suite.tracks {
            let path = results_path(&out, &suite.name, track, &agent.key());
            if smoke && path.is_file() && Results::read(&path).is_ok_and(|r| !r.smoke) {
                return Err(BenchError::Options(format!(
                    "{} holds full results of suite `{}`; a smoke run (--seeds, --steps) would replace them: give it another --out",
                    path.display(),
                    suite.name
                )));
            }
        }
    }
    Ok((out, agent))
}

fn run_with(
    registry: &Registry,
    suites: &[Suite],
    options: &RunOptions,
    runs: Runs<'_>,
) -> Result<String, BenchError> {
    let (out, agent) = prepare(suites, options)?;
    let mut summary = String::new();
    for suite in suites {
        for &track in &suite.tracks {
            let results = run_track(registry, suite, track, &agent, options, &out, runs)?;
            let path = results_path(&out, &suite.name, track, &agent.key());
            crate::output::write_atomic(&path, results.to_json().as_bytes())?;
            let scores: Vec<f64> = results.runs.iter().filter_map(|r| r.score).collect();
            let mean = scores.iter().sum::<f64>() / scores.len().max(1) as f64;
            let _ = writeln!(
                summary,
                "{:<18} {:<6} {:<22} {} seeds × {} steps{}  mean score {mean:.4}\n  results {}",
                suite.name,
                track.as_str(),
                results.arm(),
                results.seeds.len(),
                results.steps,
                if results.smoke { " (smoke)" } else { "" },
                path.display()
            );
        }
    }
    Ok(summary)
}

fn plain(agent: &str) -> Policy {
    Policy {
        agent: agent.into(),
        options: Vec::new(),
    }
}

/// Every policy a suite's track runs: the references' (random, each fixed policy of
/// best-fixed, the oracle) and the agent's.
fn policies(suite: &Suite, agent: &Policy) -> Vec<Policy> {
    let mut all = vec![plain("random")];
    if suite.references.contains(&ReferenceKind::BestFixed) {
        all.extend(suite.best_fixed.iter().map(|f| Policy {
            agent: f.agent.clone(),
            options: f.options.clone(),
        }));
    }
    if suite.top() == ReferenceKind::Oracle {
        all.push(plain("oracle"));
    }
    all.push(agent.clone());
    all
}

/// One policy's seeds on a suite's track as a sweep, and its folder.
fn policy_sweep(
    registry: &Registry,
    suite: &Suite,
    track: NotifyLevel,
    policy: &Policy,
    (seeds, steps): (&[u64], u64),
    out: &Path,
) -> Result<(SweepFile, PathBuf), BenchError> {
    let name = format!("bench-{}-{}-{}", suite.name, track.as_str(), policy.key());
    let mut def = toml::Table::new();
    let mut t = toml::Table::new();
    t.insert("name".into(), name.into());
    t.insert(
        "worlds".into(),
        vec![toml::Value::from(
            suite.world.to_string_lossy().into_owned(),
        )]
        .into(),
    );
    t.insert(
        "agents".into(),
        vec![toml::Value::from(policy.agent.clone())].into(),
    );
    let seed_values: Vec<toml::Value> = seeds
        .iter()
        .map(|&s| toml::Value::Integer(i64::try_from(s).unwrap_or(i64::MAX)))
        .collect();
    t.insert("seeds".into(), seed_values.into());
    t.insert(
        "steps".into(),
        toml::Value::Integer(i64::try_from(steps).unwrap_or(i64::MAX)),
    );
    t.insert("format".into(), "parquet".into());
    def.insert("sweep".into(), t.into());
    let text = toml::to_string(&def).expect("a table of strings and numbers");
    let suite_file = suite.dir.join(super::suite::SUITE_FILE);
    let mut sweep = SweepFile::parse_with(&text, &suite_file, registry).map_err(|e| {
        BenchError::Options(format!(
            "suite `{}` ({}): agent `{}`: {}",
            suite.name,
            suite.world.display(),
            policy.agent,
            e.message
        ))
    })?;
    debug_assert_eq!(sweep.format, TraceFormat::Parquet);
    sweep.agent_options.clone_from(&policy.options);
    sweep.notify = Some(track);
    let dir = out
        .join("runs")
        .join(&suite.name)
        .join(track.as_str())
        .join(policy.key());
    Ok((sweep, dir))
}

/// A seed's run: its report, and its agent's plasticity diagnostics after the last update
/// (`None` for an agent without a network).
type SeedRun = (RunReport, Option<Plasticity>);

/// Runs one policy's seeds on a suite's track as a sweep in its own folder (or records
/// runs made elsewhere) and returns each seed's run, in seed order.
#[allow(clippy::too_many_arguments)]
fn sweep_policy(
    registry: &Registry,
    suite: &Suite,
    track: NotifyLevel,
    policy: &Policy,
    budget: (&[u64], u64),
    options: &RunOptions,
    out: &Path,
    runs: Runs<'_>,
) -> Result<Vec<SeedRun>, BenchError> {
    let seeds = budget.0;
    let (sweep, dir) = policy_sweep(registry, suite, track, policy, budget, out)?;
    let outcome = match runs {
        Runs::Local(stop) => run_local_until(
            &sweep,
            &dir,
            options.jobs,
            &crate::sweep::perennial_program()?,
            stop,
        )?,
        Runs::Collected(exits, recorded) => {
            let none = BTreeMap::new();
            let first = recorded.borrow_mut().insert(dir.clone());
            let exits = exits.get(&dir).filter(|_| first).unwrap_or(&none);
            collect_exits(&sweep, &dir, exits)?
        }
    };
    let failed = outcome.failures();
    if !failed.is_empty() {
        return Err(BenchError::Sweep(SweepError::RunsFailed { failed }));
    }
    if let Some(r) = outcome
        .manifest
        .runs
        .iter()
        .find(|r| r.status != RunStatus::Done)
    {
        return Err(BenchError::Options(format!(
            "{}: run `{}` is not done ({:?}); run the same bench run again to finish it",
            dir.display(),
            r.run_id,
            r.status
        )));
    }
    let traces: Vec<PathBuf> = plan(&sweep, &dir).into_iter().map(|r| r.trace).collect();
    let report = evaluate(&traces, &EvalOptions::default())?;
    // The events tables hold a neural agent's diagnostics; another agent's have none.
    let (rows, _) = crate::eval::read_events(&traces, &report.runs);
    let mut ends: BTreeMap<String, Plasticity> = plasticity_paths(&report.runs, &rows)
        .into_iter()
        .filter(|p| p.end.values().iter().all(|v| v.is_finite()))
        .map(|p| (p.run_id, p.end))
        .collect();
    let mut by_seed: BTreeMap<u64, RunReport> =
        report.runs.into_iter().map(|r| (r.seed, r)).collect();
    seeds
        .iter()
        .map(|s| {
            let run = by_seed.remove(s).ok_or_else(|| {
                BenchError::Options(format!(
                    "{}: no run of seed {s} in its traces",
                    dir.display()
                ))
            })?;
            let end = ends.remove(&run.run_id);
            Ok((run, end))
        })
        .collect()
}

/// One suite and track: the references' runs and the agent's, scored into results.
fn run_track(
    registry: &Registry,
    suite: &Suite,
    track: NotifyLevel,
    agent: &Policy,
    options: &RunOptions,
    out: &Path,
    made: Runs<'_>,
) -> Result<Results, BenchError> {
    let (seeds, steps) = suite.shrunk(options.seeds, options.steps);
    let budget = (seeds.as_slice(), steps);
    let sweep = |p: &Policy| sweep_policy(registry, suite, track, p, budget, options, out, made);
    let means = |runs: &[SeedRun]| runs.iter().map(|r| run_mean(&r.0)).collect::<Vec<f64>>();
    let random_runs = sweep(&plain("random"))?;
    let floor = means(&random_runs);
    let mut references = vec![Reference {
        kind: ReferenceKind::Random.as_str().into(),
        agent: Some("random".into()),
        options: Vec::new(),
        means: floor.clone(),
        candidates: Vec::new(),
    }];
    if suite.references.contains(&ReferenceKind::BestFixed) {
        let mut candidates = Vec::new();
        let mut best: Option<(f64, usize, Vec<f64>)> = None;
        for (i, fixed) in suite.best_fixed.iter().enumerate() {
            let p = Policy {
                agent: fixed.agent.clone(),
                options: fixed.options.clone(),
            };
            let m = means(&sweep(&p)?);
            let mean = m.iter().sum::<f64>() / m.len() as f64;
            candidates.push(Candidate {
                agent: p.agent,
                options: p.options,
                mean,
            });
            if best.as_ref().is_none_or(|b| mean > b.0) {
                best = Some((mean, i, m));
            }
        }
        let (_, i, m) = best.expect("a suite with best-fixed lists its policies");
        references.push(Reference {
            kind: ReferenceKind::BestFixed.as_str().into(),
            agent: Some(suite.best_fixed[i].agent.clone()),
            options: suite.best_fixed[i].options.clone(),
            means: m,
            candidates,
        });
    }
    let top: Vec<f64> = match suite.top() {
        ReferenceKind::Oracle => means(&sweep(&plain("oracle"))?),
        _ => random_runs
            .iter()
            .map(|r| {
                run_ceiling(&r.0).ok_or_else(|| {
                    BenchError::Options(format!(
                        "suite `{}`: its world's trace has no ceiling, so `ceiling` cannot be its top reference; list `oracle`",
                        suite.name
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
    };
    references.push(Reference {
        kind: suite.top().as_str().into(),
        agent: (suite.top() == ReferenceKind::Oracle).then(|| "oracle".into()),
        options: Vec::new(),
        means: top.clone(),
        candidates: Vec::new(),
    });
    let runs = sweep(agent)?;
    let runs = runs
        .iter()
        .enumerate()
        .map(|(k, (r, plasticity))| run_result(r, *plasticity, floor[k], top[k]))
        .collect();
    let mut results = Results {
        format: RESULTS_FORMAT.into(),
        suite: suite.name.clone(),
        version: suite.version.clone(),
        suite_hash: suite.hash.clone(),
        suite_dir: suite.dir.clone(),
        track,
        agent: agent.agent.clone(),
        agent_options: agent.options.clone(),
        steps,
        smoke: seeds != suite.seeds || steps != suite.steps,
        seeds,
        references,
        runs,
        digest: String::new(),
    };
    results.digest = results.compute_digest();
    Ok(results)
}
