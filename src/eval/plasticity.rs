//! The path of a neural agent's plasticity diagnostics across a run's regime intervals.

use serde::Serialize;

use super::RunReport;
use crate::trace::{EventRow, Plasticity};

/// One run's diagnostics: their means over each configuration interval, and the last
/// window's values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlasticityPath {
    /// The run.
    pub run_id: String,
    /// Per configuration interval, in step order.
    pub intervals: Vec<PlasticitySpan>,
    /// The values after the run's last update.
    pub end: Plasticity,
}

/// The diagnostics of the updates that ended inside one configuration interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlasticitySpan {
    /// The interval's index in the run.
    pub index: usize,
    /// Its label.
    pub regime: String,
    /// Updates (windows) that ended inside it; 0 leaves the means at 0.
    pub windows: usize,
    /// The means over those updates.
    #[serde(flatten)]
    pub mean: Plasticity,
}

/// The paths of the runs in `runs` that have `plasticity` events among `rows`, in the
/// order of `runs`.
pub fn plasticity_paths(runs: &[RunReport], rows: &[EventRow]) -> Vec<PlasticityPath> {
    let mut paths = Vec::new();
    for run in runs {
        let values: Vec<(u64, Plasticity)> = rows
            .iter()
            .filter(|r| r.run_id == run.run_id)
            .filter_map(|r| Some((r.step, r.plasticity_values()?)))
            .collect();
        let Some(&(_, end)) = values.last() else {
            continue;
        };
        let intervals = run
            .intervals
            .iter()
            .map(|iv| {
                let inside: Vec<[f64; 4]> = values
                    .iter()
                    .filter(|(step, _)| (iv.start..=iv.end).contains(step))
                    .map(|(_, p)| p.values())
                    .collect();
                let mut sum = [0.0; 4];
                for v in &inside {
                    for (s, x) in sum.iter_mut().zip(v) {
                        *s += x;
                    }
                }
                let k = inside.len().max(1) as f64;
                PlasticitySpan {
                    index: iv.index,
                    regime: iv.regime.clone(),
                    windows: inside.len(),
                    mean: Plasticity {
                        dormant_fraction: sum[0] / k,
                        effective_rank: sum[1] / k,
                        weight_norm: sum[2] / k,
                        grad_norm: sum[3] / k,
                    },
                }
            })
            .collect();
        paths.push(PlasticityPath {
            run_id: run.run_id.clone(),
            intervals,
            end,
        });
    }
    paths
}

/// Intervals shown at each end of a long run's path in the text report (the JSON has all).
const SHOWN: usize = 6;

/// The paths as text: per run, the interval means (the first and last few of a long run)
/// and the end-of-run values.
pub fn plasticity_text(paths: &[PlasticityPath]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if paths.is_empty() {
        return out;
    }
    out.push_str("\nplasticity of the policy network (means over the updates in each interval)\n");
    for p in paths {
        let _ = writeln!(out, "  run {}", p.run_id);
        let _ = writeln!(
            out,
            "    {:>5}  {:16} {:>7}  {:>16}  {:>14}  {:>11}  {:>9}",
            "#",
            "regime",
            "windows",
            "dormant_fraction",
            "effective_rank",
            "weight_norm",
            "grad_norm"
        );
        let n = p.intervals.len();
        for (k, s) in p.intervals.iter().enumerate() {
            if n > 2 * SHOWN && k == SHOWN {
                let _ = writeln!(out, "    {:>5}", "…");
            }
            if n > 2 * SHOWN && (SHOWN..n - SHOWN).contains(&k) {
                continue;
            }
            let _ = writeln!(
                out,
                "    {:>5}  {:16} {:>7}  {:>16.4}  {:>14.2}  {:>11.3}  {:>9.4}",
                s.index,
                s.regime,
                s.windows,
                s.mean.dormant_fraction,
                s.mean.effective_rank,
                s.mean.weight_norm,
                s.mean.grad_norm
            );
        }
        let e = &p.end;
        let _ = writeln!(
            out,
            "    {:>5}  {:16} {:>7}  {:>16.4}  {:>14.2}  {:>11.3}  {:>9.4}",
            "end",
            "(last update)",
            1,
            e.dormant_fraction,
            e.effective_rank,
            e.weight_norm,
            e.grad_norm
        );
    }
    out
}
