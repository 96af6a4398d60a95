//! `perennial bench report`: results files checked against their suites and each other,
//! combined into the table.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::BenchError;
use super::results::{Results, RunResult};
use super::suite::{ReferenceKind, Suite, suite_hash};
use crate::eval::table::Table as TextTable;
use crate::eval::{Interval, improvement_interval, iqm, median_of, stratified_interval};
use crate::regime::NotifyLevel;

/// Bootstrap resamples behind every interval.
pub const RESAMPLES: usize = 2000;

/// Seed of the bootstrap's generator.
pub const BOOTSTRAP_SEED: u64 = 0;

/// The agent every row's probability of improvement is measured against.
pub const BASELINE: &str = "ppo";

/// The medians over seeds of a row's per-run metrics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Medians {
    /// Mean reward (x, payouts excluded).
    pub mean_reward: Option<f64>,
    /// Adaptation steps.
    pub adaptation_steps: Option<f64>,
    /// Recovery steps (over the intervals that recovered).
    pub recovery_steps: Option<f64>,
    /// Forgetting.
    pub forgetting: Option<f64>,
    /// Stability (std of block means).
    pub stability_std: Option<f64>,
    /// Gap to the bound (or ceiling).
    pub gap: Option<f64>,
    /// Regret against the oracle (or ceiling): top − mean reward.
    pub regret: Option<f64>,
    /// Steps per episode.
    pub episode_length: Option<f64>,
    /// A neural agent's τ-dormant unit fraction after its last update; `null` for an
    /// agent without a network.
    pub dormant_fraction: Option<f64>,
    /// Its effective rank of the last hidden layer after its last update.
    pub effective_rank: Option<f64>,
    /// Its weight norm after its last update.
    pub weight_norm: Option<f64>,
    /// Its gradient norm in its last update.
    pub grad_norm: Option<f64>,
}

/// One row of the table: an agent on a suite's track.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The agent, with its options in brackets when it has some.
    pub agent: String,
    /// Seeds.
    pub runs: usize,
    /// The normalized score of each seed that has one, in seed order.
    pub scores: Vec<f64>,
    /// IQM of the normalized score over the seeds, with its 95% bootstrap CI.
    pub iqm: Option<Interval>,
    /// Medians over the seeds.
    pub medians: Medians,
    /// P(this agent's score > ppo's) on the suite's track, with its CI; `null` without
    /// ppo's results (and on ppo's own row).
    pub p_over_ppo: Option<Interval>,
    /// The `perennial bench run` that wrote the row's results file.
    pub command: String,
}

/// A reference's mean over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReferenceSummary {
    /// Its kind.
    pub kind: String,
    /// Its agent and options, as a row names them; `null` for the ceiling.
    pub policy: Option<String>,
    /// Its mean reward, averaged over the seeds.
    pub mean: f64,
}

/// One suite's track: its references and a row per agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Section {
    /// The suite.
    pub suite: String,
    /// Its version.
    pub version: String,
    /// Its hash.
    pub suite_hash: String,
    /// The track.
    pub track: NotifyLevel,
    /// Steps per run.
    pub steps: u64,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Whether these are smoke results.
    pub smoke: bool,
    /// The world's episode-length cap, when it has one (CartPole's ceiling).
    pub episode_length_ceiling: Option<u64>,
    /// The references.
    pub references: Vec<ReferenceSummary>,
    /// A row per agent, by name.
    pub rows: Vec<Row>,
}

/// An agent over every suite it has results on, per track.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Overall {
    /// The track.
    pub track: NotifyLevel,
    /// The agent.
    pub agent: String,
    /// The suites (strata).
    pub suites: Vec<String>,
    /// IQM of the normalized score over every (suite, seed), CI stratified by suite.
    pub iqm: Option<Interval>,
}

/// The table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table {
    /// What the score is.
    pub score: String,
    /// Bootstrap resamples behind every interval.
    pub resamples: usize,
    /// Per suite and track.
    pub sections: Vec<Section>,
    /// Per track and agent, across suites.
    pub overall: Vec<Overall>,
}

/// The score's definition, as the report states it.
pub const SCORE: &str = "(mean_reward - random) / (top - random) per seed, top = oracle (or ceiling); mean_reward = mean of x (reward without payouts) over the run's 100-step blocks";

/// The results files among `paths`: a file as given, a folder's `results/*.json` (or its
/// own `*.json` when it has no `results/`), sorted.
///
/// # Errors
///
/// A folder cannot be read; no results file is found.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, BenchError> {
    let mut files = Vec::new();
    for p in paths {
        if !p.is_dir() {
            files.push(p.clone());
            continue;
        }
        let dir = if p.join("results").is_dir() {
            p.join("results")
        } else {
            p.clone()
        };
        let mut found = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(BenchError::io(&dir))? {
            let path = e.map_err(BenchError::io(&dir))?.path();
            if path.extension().is_some_and(|x| x == "json") {
                found.push(path);
            }
        }
        found.sort();
        if found.is_empty() {
            return Err(BenchError::Options(format!(
                "{}: holds no results file (*.json); give the --out folder of `perennial bench run`",
                dir.display()
            )));
        }
        files.extend(found);
    }
    if files.is_empty() {
        return Err(BenchError::Options(
            "give at least one results file or folder".into(),
        ));
    }
    Ok(files)
}

/// The folder of the suite a results file was computed on: the folder it recorded, else
/// the shipped suite of its name and version.
fn suite_folder(r: &Results) -> PathBuf {
    if r.suite_dir.join(super::suite::SUITE_FILE).is_file() {
        return r.suite_dir.clone();
    }
    let rel = Path::new("bench").join(&r.version).join(&r.suite);
    if rel.join(super::suite::SUITE_FILE).is_file() {
        return rel;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A suite's name and one agent's scores on it.
type Stratum = (String, Vec<f64>);

fn medians(runs: &[RunResult]) -> Medians {
    let m = |f: &dyn Fn(&RunResult) -> Option<f64>| median_of(runs.iter().filter_map(f).collect());
    Medians {
        mean_reward: m(&|r| Some(r.mean_reward)),
        adaptation_steps: m(&|r| r.adaptation_steps),
        recovery_steps: m(&|r| r.recovery_steps),
        forgetting: m(&|r| r.forgetting),
        stability_std: m(&|r| r.stability_std),
        gap: m(&|r| r.gap),
        regret: m(&|r| Some(r.regret)),
        episode_length: m(&|r| Some(r.episode_length)),
        dormant_fraction: m(&|r| Some(r.plasticity?.dormant_fraction)),
        effective_rank: m(&|r| Some(r.plasticity?.effective_rank)),
        weight_norm: m(&|r| Some(r.plasticity?.weight_norm)),
        grad_norm: m(&|r| Some(r.plasticity?.grad_norm)),
    }
}

fn scores(r: &Results) -> Vec<f64> {
    r.runs.iter().filter_map(|x| x.score).collect()
}

/// Reads, checks and combines results files into the table.
///
/// # Errors
///
/// [`BenchError::Results`] naming the file: unreadable or tampered with, of a suite whose
/// files changed since (both hashes named), smoke and full results mixed, two files of one
/// row, results of one suite and track with other budgets or other references.
pub fn combine(paths: &[PathBuf]) -> Result<Table, BenchError> {
    let files = expand(paths)?;
    let mut loaded: Vec<(PathBuf, Results)> = Vec::new();
    let mut hashes: HashMap<PathBuf, String> = HashMap::new();
    let mut loaded_suites: HashMap<PathBuf, Suite> = HashMap::new();
    for path in &files {
        let r = Results::read(path)?;
        let folder = suite_folder(&r);
        let now = match hashes.get(&folder) {
            Some(h) => h.clone(),
            None => {
                if !folder.join(super::suite::SUITE_FILE).is_file() {
                    return Err(BenchError::results(
                        path,
                        format!(
                            "suite `{}` ({}) is not at {} nor shipped: give the report the suite's folder back",
                            r.suite,
                            r.version,
                            r.suite_dir.display()
                        ),
                    ));
                }
                let h = suite_hash(&folder)?;
                let suite = Suite::load(&folder.to_string_lossy())?;
                loaded_suites.insert(folder.clone(), suite);
                hashes.insert(folder.clone(), h.clone());
                h
            }
        };
        if now != r.suite_hash {
            return Err(BenchError::results(
                path,
                format!(
                    "results of another version of suite `{}`: they were computed on suite hash {}, and its folder {} hashes to {now} now; a changed suite is a new version folder: rerun `perennial bench run` on it, or restore the suite's files",
                    r.suite,
                    r.suite_hash,
                    folder.display()
                ),
            ));
        }
        loaded.push((path.clone(), r));
    }
    if let (Some(smoke), Some(full)) = (
        loaded.iter().find(|(_, r)| r.smoke),
        loaded.iter().find(|(_, r)| !r.smoke),
    ) {
        return Err(BenchError::results(
            &smoke.0,
            format!(
                "smoke results (--seeds/--steps: {} seeds × {} steps) cannot be combined with full ones such as {}; report them separately",
                smoke.1.seeds.len(),
                smoke.1.steps,
                full.0.display()
            ),
        ));
    }
    let mut groups: BTreeMap<(String, String, NotifyLevel), Vec<(PathBuf, Results)>> =
        BTreeMap::new();
    for (path, r) in loaded {
        let group = groups
            .entry((r.version.clone(), r.suite.clone(), r.track))
            .or_default();
        if let Some((first, f)) = group.first() {
            if (f.steps, &f.seeds) != (r.steps, &r.seeds) {
                return Err(BenchError::results(
                    &path,
                    format!(
                        "{} seeds × {} steps, where {} has {} × {}: results of one suite and track are combined only at one budget",
                        r.seeds.len(),
                        r.steps,
                        first.display(),
                        f.seeds.len(),
                        f.steps
                    ),
                ));
            }
            let floor = |x: &Results| x.reference(ReferenceKind::Random).map(|f| f.means.clone());
            if floor(f) != floor(&r) {
                return Err(BenchError::results(
                    &path,
                    format!(
                        "its references differ from those of {} (same suite, track and seeds): they come from other reference runs; run every agent into one --out",
                        first.display()
                    ),
                ));
            }
        }
        if let Some((other, _)) = group.iter().find(|(_, o)| o.arm() == r.arm()) {
            return Err(BenchError::results(
                &path,
                format!(
                    "a second results file of agent `{}` on suite `{}` track {} (the first is {}); give one",
                    r.arm(),
                    r.suite,
                    r.track,
                    other.display()
                ),
            ));
        }
        group.push((path, r));
    }

    let mut sections = Vec::new();
    // Per (track, agent): each suite's scores, a stratum of the across-suites IQM.
    let mut by_arm: BTreeMap<(NotifyLevel, String), Vec<Stratum>> = BTreeMap::new();
    for ((version, suite, track), mut group) in groups {
        group.sort_by_key(|a| a.1.arm());
        let first = &group[0].1;
        let ppo = group
            .iter()
            .find(|(_, r)| r.arm() == BASELINE)
            .map(|(_, r)| scores(r));
        let references = first
            .references
            .iter()
            .map(|x| ReferenceSummary {
                kind: x.kind.clone(),
                policy: x.agent.as_ref().map(|a| {
                    if x.options.is_empty() {
                        a.clone()
                    } else {
                        format!("{a}[{}]", x.options.join(","))
                    }
                }),
                mean: x.means.iter().sum::<f64>() / x.means.len() as f64,
            })
            .collect();
        let suite_now = &loaded_suites[&suite_folder(first)];
        let rows = group
            .iter()
            .map(|(path, r)| {
                let s = scores(r);
                let arm = r.arm();
                by_arm
                    .entry((track, arm.clone()))
                    .or_default()
                    .push((suite.clone(), s.clone()));
                let names = [
                    version.as_str(),
                    suite.as_str(),
                    track.as_str(),
                    arm.as_str(),
                ];
                Row {
                    iqm: stratified_interval(
                        std::slice::from_ref(&s),
                        RESAMPLES,
                        BOOTSTRAP_SEED,
                        &names,
                        iqm,
                    ),
                    p_over_ppo: ppo.as_ref().filter(|_| arm != BASELINE).and_then(|p| {
                        let names = [names[0], names[1], names[2], names[3], BASELINE];
                        improvement_interval(
                            std::slice::from_ref(&s),
                            std::slice::from_ref(p),
                            RESAMPLES,
                            BOOTSTRAP_SEED,
                            &names,
                        )
                    }),
                    agent: arm,
                    runs: r.runs.len(),
                    scores: s,
                    medians: medians(&r.runs),
                    command: command(path, r, suite_now),
                }
            })
            .collect();
        sections.push(Section {
            suite_hash: first.suite_hash.clone(),
            track,
            steps: first.steps,
            seeds: first.seeds.clone(),
            smoke: first.smoke,
            episode_length_ceiling: suite_now.max_episode_steps,
            references,
            rows,
            suite,
            version,
        });
    }
    let overall = by_arm
        .into_iter()
        .map(|((track, agent), columns)| {
            let suites = columns.iter().map(|c| c.0.clone()).collect();
            let matrix: Vec<Vec<f64>> = columns.into_iter().map(|c| c.1).collect();
            Overall {
                iqm: stratified_interval(
                    &matrix,
                    RESAMPLES,
                    BOOTSTRAP_SEED,
                    &["overall", track.as_str(), agent.as_str()],
                    iqm,
                ),
                track,
                agent,
                suites,
            }
        })
        .collect();
    Ok(Table {
        score: SCORE.into(),
        resamples: RESAMPLES,
        sections,
        overall,
    })
}

/// The `perennial bench run` that wrote the results file at `path`: its suite (by name
/// when it is the shipped one), agent and options, the folder holding the file's
/// `results/`, and the smoke flags its budget needs.
fn command(path: &Path, r: &Results, suite: &Suite) -> String {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let name = if same(&super::suite::resolve(&r.suite), &suite.dir) {
        r.suite.clone()
    } else {
        suite.dir.display().to_string()
    };
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let out = match parent.parent() {
        Some(p) if parent.file_name().is_some_and(|n| n == "results") => p,
        _ => parent,
    };
    let out = if out.as_os_str().is_empty() {
        Path::new(".")
    } else {
        out
    };
    let mut c = format!("perennial bench run {name} --agent {}", r.agent);
    for o in &r.agent_options {
        let _ = write!(c, " --agent-opt {o}");
    }
    let _ = write!(c, " --out {}", out.display());
    if r.seeds.len() != suite.seeds.len() {
        let _ = write!(c, " --seeds {}", r.seeds.len());
    }
    if r.steps != suite.steps {
        let _ = write!(c, " --steps {}", r.steps);
    }
    c
}

/// What a table cell shows for a value a row does not have (P(>ppo) on ppo's own row, the
/// plasticity of an agent without a network).
const NONE: &str = "–";

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| NONE.to_string(), |v| format!("{v:.decimals$}"))
}

fn interval(i: Option<Interval>) -> String {
    i.map_or_else(
        || NONE.to_string(),
        |i| format!("{:.3} [{:.3}, {:.3}]", i.estimate, i.ci_low, i.ci_high),
    )
}

/// The columns of a section's rows, in the text and the Markdown table alike.
const COLUMNS: [&str; 15] = [
    "agent",
    "runs",
    "IQM score [95% CI]",
    "reward",
    "adapt",
    "recov",
    "forget",
    "std",
    "gap",
    "regret",
    "ep_len",
    "P(>ppo) [95% CI]",
    "dormant",
    "eff_rank",
    "command",
];

impl Row {
    /// The row's cells, in the order of [`COLUMNS`].
    fn cells(&self) -> Vec<String> {
        let m = &self.medians;
        vec![
            self.agent.clone(),
            self.runs.to_string(),
            interval(self.iqm),
            num(m.mean_reward, 3),
            num(m.adaptation_steps, 0),
            num(m.recovery_steps, 0),
            num(m.forgetting, 3),
            num(m.stability_std, 3),
            num(m.gap, 3),
            num(m.regret, 3),
            num(m.episode_length, 1),
            interval(self.p_over_ppo),
            num(m.dormant_fraction, 3),
            num(m.effective_rank, 1),
            self.command.clone(),
        ]
    }
}

impl Section {
    /// `suite S (v1, hash H)  track T  N seeds × S steps`, and SMOKE for a smoke run.
    fn title(&self, code: &str) -> String {
        format!(
            "{code}{}{code} ({}, hash {code}{}{code})  track {}  {} seeds × {} steps{}",
            self.suite,
            self.version,
            self.suite_hash,
            self.track,
            self.seeds.len(),
            self.steps,
            if self.smoke { "  SMOKE" } else { "" }
        )
    }

    /// The references' mean rewards, and the episode-length ceiling when the world has one.
    fn references_line(&self) -> String {
        let refs: Vec<String> = self
            .references
            .iter()
            .map(|r| match &r.policy {
                Some(p) if r.kind == "best-fixed" => format!("{} {:.4} ({p})", r.kind, r.mean),
                _ => format!("{} {:.4}", r.kind, r.mean),
            })
            .collect();
        let mut line = format!("references (mean reward): {}", refs.join("  "));
        if let Some(c) = self.episode_length_ceiling {
            let _ = write!(line, "  episode-length ceiling {c}");
        }
        line
    }

    /// The rows as a table; the text leaves out the commands (too wide for a terminal; the
    /// JSON and the Markdown have them).
    fn table(&self, commands: bool) -> TextTable {
        let n = if commands {
            COLUMNS.len()
        } else {
            COLUMNS.len() - 1
        };
        let left: Vec<bool> = COLUMNS[..n]
            .iter()
            .map(|c| matches!(*c, "agent" | "command"))
            .collect();
        let mut t = TextTable::new(&COLUMNS[..n], &left);
        for r in &self.rows {
            let mut cells = r.cells();
            cells.truncate(n);
            if commands {
                cells[n - 1] = format!("`{}`", cells[n - 1]);
            }
            t.row(cells);
        }
        t
    }
}

impl Table {
    fn overall_table(&self) -> TextTable {
        let mut t = TextTable::new(
            &["track", "agent", "IQM score [95% CI]", "suites"],
            &[true, true, false, true],
        );
        for o in &self.overall {
            t.row(vec![
                o.track.as_str().into(),
                o.agent.clone(),
                interval(o.iqm),
                o.suites.join(", "),
            ]);
        }
        t
    }

    /// The table as aligned text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "score: {}", self.score);
        let _ = writeln!(
            s,
            "IQM over seeds with its 95% bootstrap CI ({} resamples); metrics are medians over seeds; P(>ppo) = P(score > ppo's score) with its CI; dormant and eff_rank: a neural agent's plasticity after its last update, medians over seeds",
            self.resamples
        );
        for sec in &self.sections {
            let _ = writeln!(s, "\nsuite {}", sec.title(""));
            let _ = writeln!(s, "  {}", sec.references_line());
            sec.table(false).render(&mut s, "  ");
        }
        if !self.overall.is_empty() {
            let _ = writeln!(
                s,
                "\nacross suites: IQM over every (suite, seed) score, CI stratified by suite"
            );
            self.overall_table().render(&mut s, "  ");
        }
        s
    }

    /// The table as Markdown: a heading, the references and a table per section, then the
    /// across-suites table.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "Score: {}.", self.score);
        for sec in &self.sections {
            let _ = writeln!(s, "\n### {}\n", sec.title("`"));
            let _ = writeln!(s, "{}\n", sec.references_line());
            sec.table(true).render_markdown(&mut s);
        }
        if !self.overall.is_empty() {
            let _ = writeln!(
                s,
                "\n### Across suites (IQM over every (suite, seed) score, CI stratified by suite)\n"
            );
            self.overall_table().render_markdown(&mut s);
        }
        s
    }
}
