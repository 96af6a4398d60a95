//! A results file: one agent on one suite and track, its references and its per-seed
//! scores, sealed with a digest of its content.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::BenchError;
use super::suite::ReferenceKind;
use crate::eval::RunReport;
use crate::regime::NotifyLevel;
use crate::trace::Plasticity;

/// The `format` every results file carries; another is refused.
pub const RESULTS_FORMAT: &str = "perennial-bench-results/1";

/// The smoothing window of the eval behind every number: the score's mean is over blocks
/// of this many steps.
pub const WINDOW: u64 = 100;

/// One reference of a suite, per seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// `random`, `best-fixed`, `oracle` or `ceiling`.
    pub kind: String,
    /// The agent behind it (for `best-fixed`, the chosen policy's); `null` for `ceiling`.
    pub agent: Option<String>,
    /// The agent's options (`KEY=VALUE`).
    pub options: Vec<String>,
    /// Per seed (in the results' seed order), the run's mean reward as the score reads it.
    pub means: Vec<f64>,
    /// `best-fixed` only: every policy it chose among, with its mean over the seeds.
    pub candidates: Vec<Candidate>,
}

/// A fixed policy the best-fixed reference chose among.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// The agent.
    pub agent: String,
    /// Its options.
    pub options: Vec<String>,
    /// Its mean reward, averaged over the seeds.
    pub mean: f64,
}

/// One seed's run of the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResult {
    /// The seed.
    pub seed: u64,
    /// Mean of x (the reward without payouts) over the run: the mean of its 100-step block
    /// means.
    pub mean_reward: f64,
    /// (mean_reward − random) / (top − random) with the same seed's references; `null`
    /// when the two references are equal.
    pub score: Option<f64>,
    /// top − mean_reward: the regret against the oracle (or the ceiling).
    pub regret: f64,
    /// Steps per episode: the run's steps over its episodes (the last one unfinished).
    pub episode_length: f64,
    /// Mean over the run's intervals of the adaptation steps A_k.
    pub adaptation_steps: Option<f64>,
    /// Mean over the intervals that recovered of the recovery steps R_k; `null` when none
    /// did.
    pub recovery_steps: Option<f64>,
    /// Mean over the recurring intervals of the forgetting F_k.
    pub forgetting: Option<f64>,
    /// Mean over the intervals of the stability (std of block means).
    pub stability_std: Option<f64>,
    /// Step-weighted mean over the intervals of the gap to the bound (or ceiling).
    pub gap: Option<f64>,
    /// A neural agent's plasticity diagnostics after its last update (the last
    /// `plasticity` row of the run's events table); absent for an agent without a network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plasticity: Option<Plasticity>,
}

/// A results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Results {
    /// [`RESULTS_FORMAT`].
    pub format: String,
    /// The suite's name.
    pub suite: String,
    /// The suite's version (the folder holding it: `v1`).
    pub version: String,
    /// The suite's identity: the hash of its files when the results were computed.
    pub suite_hash: String,
    /// The suite's folder when the results were computed.
    pub suite_dir: PathBuf,
    /// The notify track.
    pub track: NotifyLevel,
    /// The agent.
    pub agent: String,
    /// Its options (`KEY=VALUE`), sorted.
    pub agent_options: Vec<String>,
    /// Step budget of every run.
    pub steps: u64,
    /// The seeds run.
    pub seeds: Vec<u64>,
    /// Whether the suite was shrunk (`--seeds`, `--steps`): a smoke run, never combined
    /// with full runs.
    pub smoke: bool,
    /// The suite's references.
    pub references: Vec<Reference>,
    /// One per seed, in seed order.
    pub runs: Vec<RunResult>,
    /// [`content_hash`](crate::output::content_hash) of this file's JSON with `digest`
    /// empty.
    pub digest: String,
}

/// The mean reward the score reads from a run: the mean of its 100-step block means of x.
pub fn run_mean(run: &RunReport) -> f64 {
    if run.blocks.is_empty() {
        // Fewer than 100 steps: the whole run, from its intervals.
        let steps: u64 = run.intervals.iter().map(|i| i.steps).sum();
        let sum: f64 = run
            .intervals
            .iter()
            .map(|i| i.mean_reward * i.steps as f64)
            .sum();
        return sum / steps.max(1) as f64;
    }
    run.blocks.iter().sum::<f64>() / run.blocks.len() as f64
}

/// The mean per-step ceiling (or bound) of a run: the top of the normalized score where
/// the suite's top reference is `ceiling`; `None` when its trace has neither.
pub fn run_ceiling(run: &RunReport) -> Option<f64> {
    let mut sum = 0.0;
    let mut steps = 0u64;
    for i in &run.intervals {
        sum += (i.gap? + i.mean_reward) * i.steps as f64;
        steps += i.steps;
    }
    (steps > 0).then(|| sum / steps as f64)
}

fn mean_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

/// The normalized score: (agent − floor) / (top − floor); `None` when top = floor.
pub fn normalized(agent: f64, floor: f64, top: f64) -> Option<f64> {
    (top != floor).then(|| (agent - floor) / (top - floor))
}

/// One seed's result from its run's report, its end-of-run plasticity diagnostics (when
/// its agent has a network) and the seed's references.
pub fn run_result(
    run: &RunReport,
    plasticity: Option<Plasticity>,
    floor: f64,
    top: f64,
) -> RunResult {
    let mean_reward = run_mean(run);
    let iv = &run.intervals;
    let gap_steps: u64 = iv.iter().filter(|i| i.gap.is_some()).map(|i| i.steps).sum();
    RunResult {
        seed: run.seed,
        mean_reward,
        score: normalized(mean_reward, floor, top),
        regret: top - mean_reward,
        episode_length: run.steps as f64 / run.episodes.max(1) as f64,
        adaptation_steps: mean_of(iv.iter().map(|i| i.adaptation_steps as f64)),
        recovery_steps: mean_of(iv.iter().filter_map(|i| i.recovery_steps).map(|r| r as f64)),
        forgetting: mean_of(iv.iter().filter_map(|i| i.forgetting)),
        stability_std: mean_of(iv.iter().map(|i| i.stability_std)),
        gap: (gap_steps > 0).then(|| {
            iv.iter()
                .filter_map(|i| Some(i.gap? * i.steps as f64))
                .sum::<f64>()
                / gap_steps as f64
        }),
        plasticity,
    }
}

impl Results {
    /// The digest of this content (`digest` itself left out).
    pub fn compute_digest(&self) -> String {
        let mut body = self.clone();
        body.digest.clear();
        let bytes = serde_json::to_vec(&body).expect("results are strings and numbers");
        crate::output::content_hash(&bytes)
    }

    /// The file's JSON, digest filled in.
    pub fn to_json(&self) -> String {
        let mut sealed = self.clone();
        sealed.digest = self.compute_digest();
        let mut s = serde_json::to_string_pretty(&sealed).expect("results are strings and numbers");
        s.push('\n');
        s
    }

    /// The reference of `kind`, when the results hold it.
    pub fn reference(&self, kind: ReferenceKind) -> Option<&Reference> {
        self.references.iter().find(|r| r.kind == kind.as_str())
    }

    /// `suite+track+agent[+options]`: what identifies a row of the table.
    pub fn arm(&self) -> String {
        let mut s = self.agent.clone();
        if !self.agent_options.is_empty() {
            s.push('[');
            s.push_str(&self.agent_options.join(","));
            s.push(']');
        }
        s
    }

    /// Reads and checks a results file: its format, digest, references and the consistency
    /// of its numbers. The suite it names is checked by the report.
    ///
    /// # Errors
    ///
    /// [`BenchError::Results`] naming the file and what is wrong.
    pub fn read(path: &Path) -> Result<Self, BenchError> {
        let bytes =
            crate::limits::read_regular(path, crate::limits::MAX_SIDE_FILE_BYTES, "a results file")
                .map_err(|m| BenchError::results(path, m))?;
        let r: Results = serde_json::from_slice(&bytes).map_err(|e| {
            BenchError::results(path, format!("not a bench results file ({e}); give the files `perennial bench run` wrote under OUT/results/"))
        })?;
        if r.format != RESULTS_FORMAT {
            return Err(BenchError::results(
                path,
                format!(
                    "format `{}`, this perennial reads `{RESULTS_FORMAT}`",
                    r.format
                ),
            ));
        }
        let digest = r.compute_digest();
        if digest != r.digest {
            return Err(BenchError::results(
                path,
                format!(
                    "the file was changed after it was written (its digest says {}, its content hashes to {digest}); rerun `perennial bench run` to write it again",
                    r.digest
                ),
            ));
        }
        r.check().map_err(|m| BenchError::results(path, m))?;
        Ok(r)
    }

    /// The numbers agree with each other: a run per seed, a mean per seed in every
    /// reference, known references, scores and regrets as the references give them.
    fn check(&self) -> Result<(), String> {
        if self.seeds.is_empty() {
            return Err("the results hold no seeds".into());
        }
        let seeds: Vec<u64> = self.runs.iter().map(|r| r.seed).collect();
        if seeds != self.seeds {
            return Err(format!(
                "its runs' seeds {seeds:?} are not its seeds {:?}",
                self.seeds
            ));
        }
        let known = [
            ReferenceKind::Random,
            ReferenceKind::BestFixed,
            ReferenceKind::Oracle,
            ReferenceKind::Ceiling,
        ];
        for r in &self.references {
            if !known.iter().any(|k| k.as_str() == r.kind) {
                return Err(format!(
                    "unknown reference `{}`; a results file holds random, best-fixed, oracle or ceiling",
                    r.kind
                ));
            }
            if r.means.len() != self.seeds.len() {
                return Err(format!(
                    "reference `{}` has {} means for {} seeds",
                    r.kind,
                    r.means.len(),
                    self.seeds.len()
                ));
            }
        }
        let floor = self
            .reference(ReferenceKind::Random)
            .ok_or("it has no `random` reference (the floor of the score)")?;
        let top = self
            .reference(ReferenceKind::Oracle)
            .or_else(|| self.reference(ReferenceKind::Ceiling))
            .ok_or("it has no `oracle` or `ceiling` reference (the top of the score)")?;
        for (k, run) in self.runs.iter().enumerate() {
            let numbers = [Some(run.mean_reward), run.score, Some(run.regret)];
            let diagnostics = run.plasticity.iter().flat_map(Plasticity::values);
            if numbers
                .into_iter()
                .flatten()
                .chain(diagnostics)
                .any(|v| !v.is_finite())
            {
                return Err(format!("seed {}: a number is not finite", run.seed));
            }
            let score = normalized(run.mean_reward, floor.means[k], top.means[k]);
            if score != run.score || top.means[k] - run.mean_reward != run.regret {
                return Err(format!(
                    "seed {}: its score or regret is not what its references give",
                    run.seed
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> Results {
        Results {
            format: RESULTS_FORMAT.into(),
            suite: "s".into(),
            version: "v1".into(),
            suite_hash: "00".into(),
            suite_dir: PathBuf::from("/s"),
            track: NotifyLevel::None,
            agent: "a".into(),
            agent_options: vec![],
            steps: 100,
            seeds: vec![0],
            smoke: true,
            references: vec![
                Reference {
                    kind: "random".into(),
                    agent: Some("random".into()),
                    options: vec![],
                    means: vec![-1.0],
                    candidates: vec![],
                },
                Reference {
                    kind: "ceiling".into(),
                    agent: None,
                    options: vec![],
                    means: vec![0.0],
                    candidates: vec![],
                },
            ],
            runs: vec![RunResult {
                seed: 0,
                mean_reward: -0.5,
                score: Some(0.5),
                regret: 0.5,
                episode_length: 10.0,
                adaptation_steps: None,
                recovery_steps: None,
                forgetting: None,
                stability_std: None,
                gap: None,
                plasticity: None,
            }],
            digest: String::new(),
        }
    }

    #[test]
    fn a_written_file_reads_back_and_an_edited_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("perennial-results-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        std::fs::write(&path, results().to_json()).unwrap();
        let back = Results::read(&path).unwrap();
        assert_eq!(back.runs, results().runs);
        let edited = results()
            .to_json()
            .replace("\"mean_reward\": -0.5", "\"mean_reward\": -0.25");
        std::fs::write(&path, edited).unwrap();
        let e = Results::read(&path).unwrap_err().to_string();
        assert!(e.contains("changed after it was written"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn end_of_run_plasticity_is_sealed_by_the_digest() {
        let dir = std::env::temp_dir().join(format!("perennial-plasticity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        let mut r = results();
        r.runs[0].plasticity = Some(Plasticity {
            dormant_fraction: 0.25,
            effective_rank: 12.0,
            weight_norm: 3.5,
            grad_norm: 0.125,
        });
        std::fs::write(&path, r.to_json()).unwrap();
        assert_eq!(Results::read(&path).unwrap().runs, r.runs);
        for (from, to) in [
            ("\"dormant_fraction\": 0.25", "\"dormant_fraction\": 0.0"),
            ("\"grad_norm\": 0.125", "\"grad_norm\": 0.125, \"extra\": 1"),
        ] {
            let edited = r.to_json().replace(from, to);
            assert_ne!(edited, r.to_json());
            std::fs::write(&path, edited).unwrap();
            assert!(Results::read(&path).is_err(), "{to} was not refused");
        }
        // An agent without a network: no `plasticity` key at all.
        assert!(!results().to_json().contains("plasticity"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unknown_reference_is_named() {
        let mut r = results();
        r.references[1].kind = "median".into();
        assert!(
            r.check()
                .unwrap_err()
                .contains("unknown reference `median`")
        );
    }
}
