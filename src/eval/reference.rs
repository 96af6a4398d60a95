//! Reference and floor runs: each run paired with the run of the same task and seed, regret and
//! state-adjusted forgetting.

use std::collections::HashMap;

use super::error::EvalError;
use super::record::Regret;
use super::report::{ConfigurationAgainst, IntervalAgainst, Paired, RunReport};
use super::sum::mean_of;

/// Per interval of a run, the paired interval's mean reward and forgetting, if matched.
type Matched = Vec<Option<(f64, Option<f64>)>>;

/// Indexes `runs` by `(task, seed)`; two runs with one key are ambiguous.
fn by_task_seed<'a>(
    runs: &'a [RunReport],
    role: &str,
) -> Result<HashMap<(&'a str, u64), &'a RunReport>, EvalError> {
    let mut index: HashMap<(&str, u64), &RunReport> = HashMap::new();
    for run in runs {
        if let Some(other) = index.insert((run.task.as_str(), run.seed), run) {
            return Err(EvalError::InvalidOptions(format!(
                "two {role} runs, `{}` and `{}`, have task `{}` and seed {}; give one {role} run per task and seed",
                other.run_id, run.run_id, run.task, run.seed
            )));
        }
    }
    Ok(index)
}

/// For each of `run`'s intervals, the paired interval's mean reward and forgetting, when the
/// paired run has an interval at the same index with the same label, start and end.
fn matched(run: &RunReport, paired: &RunReport) -> Matched {
    run.intervals
        .iter()
        .map(|i| {
            paired
                .intervals
                .get(i.index)
                .filter(|p| p.regime == i.regime && p.start == i.start && p.end == i.end)
                .map(|p| (p.mean_reward, p.forgetting))
        })
        .collect()
}

/// Names the first interval of `run` that `paired` does not match, for the warning.
fn mismatch(run: &RunReport, paired: &RunReport, role: &str, found: &Matched) -> Option<String> {
    let k = found.iter().position(Option::is_none)?;
    let i = &run.intervals[k];
    Some(format!(
        "run `{}`: its interval {k} ({} [{}, {}]) has no match in {role} run `{}` (same index, label, start and end); values that need it are null. Run both with the same world file, seed and steps",
        run.run_id, i.regime, i.start, i.end, paired.run_id
    ))
}

/// Fills the reference fields of every run in `runs` from `references` and `floors`, and
/// returns one warning per run left without a reference or floor, or only partly matched.
///
/// # Errors
///
/// Two reference (or two floor) runs share a task and seed.
pub(crate) fn pair(
    runs: &mut [RunReport],
    references: &[RunReport],
    floors: &[RunReport],
) -> Result<Vec<String>, EvalError> {
    let refs = by_task_seed(references, "reference")?;
    let flrs = by_task_seed(floors, "floor")?;
    let mut warnings = Vec::new();
    for run in runs.iter_mut() {
        let key = (run.task.as_str(), run.seed);
        let reference = refs.get(&key).copied();
        let floor = flrs.get(&key).copied();
        for (role, given, found) in [
            ("reference", !references.is_empty(), reference),
            ("floor", !floors.is_empty(), floor),
        ] {
            if given && found.is_none() {
                warnings.push(format!(
                    "run `{}` (task `{}`, seed {}) has no {role} run of the same task and seed; its {role}-based values are null",
                    run.run_id, run.task, run.seed
                ));
            }
        }
        let ref_intervals = reference.map(|r| matched(run, r));
        let floor_intervals = floor.map(|f| matched(run, f));
        if let (Some(r), Some(found)) = (reference, &ref_intervals) {
            warnings.extend(mismatch(run, r, "reference", found));
        }
        if let (Some(f), Some(found)) = (floor, &floor_intervals) {
            warnings.extend(mismatch(run, f, "floor", found));
        }
        run.paired = Some(Paired {
            reference_run_id: reference.map(|r| r.run_id.clone()),
            floor_run_id: floor.map(|f| f.run_id.clone()),
        });
        for (k, interval) in run.intervals.iter_mut().enumerate() {
            let reference = ref_intervals.as_ref().and_then(|m| m[k]);
            let floor = floor_intervals.as_ref().and_then(|m| m[k]);
            let means = Regret::new(
                interval.mean_reward,
                reference.map(|r| r.0),
                floor.map(|f| f.0),
            );
            interval.against = Some(IntervalAgainst {
                means,
                adjusted_forgetting: match (interval.forgetting, reference.and_then(|r| r.1)) {
                    (Some(f), Some(g)) => Some(f - g),
                    _ => None,
                },
            });
            if let Some(n) = gap_over_floor(interval.bound, interval.gap, means.floor_mean_r) {
                interval.normalized_gap = n;
            }
        }
        // Per label, only when every interval of the label was matched: otherwise the run and
        // its reference would be averaged over different steps.
        let labels: Vec<String> = run.configurations.keys().cloned().collect();
        for label in labels {
            let of_label = || run.intervals.iter().filter(|i| i.regime == label);
            let all = |paired: Option<&RunReport>, m: &Option<Matched>| {
                let m = m.as_ref()?;
                of_label()
                    .all(|i| m[i.index].is_some())
                    .then(|| paired.and_then(|p| p.configurations.get(&label)))
                    .flatten()
                    .map(|c| c.mean_reward)
            };
            let reference_mean = all(reference, &ref_intervals);
            let floor_mean = all(floor, &floor_intervals);
            let adjusted: Vec<f64> = of_label()
                .filter_map(|i| i.against.and_then(|a| a.adjusted_forgetting))
                .collect();
            let mean_adjusted = mean_of(&adjusted);
            if let Some(config) = run.configurations.get_mut(&label) {
                if let Some(n) = gap_over_floor(config.bound, config.gap, floor_mean) {
                    config.normalized_gap = n;
                }
                config.against = Some(ConfigurationAgainst {
                    means: Regret::new(config.mean_reward, reference_mean, floor_mean),
                    mean_adjusted_forgetting: mean_adjusted,
                });
            }
        }
    }
    Ok(warnings)
}

/// With a bound, a gap to it and a floor: the gap normalized between the floor and the
/// bound, `gap / (bound − floor)` (null when they are equal). `None` (the gap stays
/// normalized by the bound alone) without a bound or a floor.
fn gap_over_floor(bound: Option<f64>, gap: Option<f64>, floor: Option<f64>) -> Option<Option<f64>> {
    let (bound, floor) = (bound?, floor?);
    Some(gap.filter(|_| bound != floor).map(|g| g / (bound - floor)))
}
