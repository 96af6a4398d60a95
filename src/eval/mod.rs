//! Evaluation: continual-RL metrics of a run computed from its trace alone.
//!
//! # Units
//!
//! Rows are grouped by `run_id` and read in `step` order. Only one unit segments the
//! metrics: the **configuration interval**, a maximal run of rows with one `regime` label.
//! Episode ends are counted (`episodes` is the number of distinct `episode` values met) but,
//! like rollout windows, which traces do not record, they change no metric: rewriting a
//! trace's `episode`, `episode_step`, `terminated` and `truncated` columns leaves every
//! number below unchanged.
//!
//! # Definitions
//!
//! - r_t is the row's `reward`. x_t = r_t - sum(payout_t), the reward without episode-end
//!   payouts, unless `include_payout` is set, in which case x_t = r_t.
//! - Interval k = [s_k, e_k] (steps), n_k = e_k - s_k + 1 steps, label c_k, k from 0 within
//!   the run.
//! - W is the smoothing window (default 100); w_k = min(W, n_k).
//! - The rolling mean m_k(t) = mean of x over [t - w_k + 1, t], defined for
//!   t >= s_k + w_k - 1. It never reaches back across an interval's start.
//! - Head H_k = m_k(s_k + w_k - 1), the mean of x over the first w_k steps; tail
//!   P_k = m_k(e_k), the mean over the last w_k steps. When n_k < W both are the mean of x
//!   over the whole interval.
//!
//! # The six metrics
//!
//! 1. **Per-configuration reward.** Per interval `mean_reward` = mean of r. Per label
//!    (`configurations`): `mean_reward` = sum of r under the label / steps under the label,
//!    and `components[name]` = sum of that component under the label / steps under the label.
//! 2. **Adaptation speed** `adaptation_steps` A_k: with target = H_k + 0.9 (P_k - H_k),
//!    A_k = (first t with m_k(t) >= target) - s_k + 1. Always in [w_k, n_k]: A_k = w_k when
//!    P_k <= H_k, and A_k = n_k when n_k < W.
//! 3. **Recovery time** `recovery_steps` R_k, for k >= 1: with B_k = P_{k-1} (the previous
//!    interval's tail, whatever its label), R_k = (first t with m_k(t) >= B_k) - s_k + 1 and
//!    `recovered = true`. When m_k never reaches B_k the value is **censored**:
//!    `recovery_steps = null`, `recovered = false`. For k = 0 both are null.
//! 4. **Forgetting** `forgetting` F_k, when c_k appeared before in the run: with j the most
//!    recent earlier interval of label c_k, F_k = P_j - H_k (positive = the agent forgot).
//!    Null on a label's first interval. Per label, `mean_forgetting` is the mean of its F_k
//!    (null if the label never recurred).
//! 5. **Stability.** The interval is cut into B = floor(n_k / w_k) blocks of w_k steps from
//!    s_k (the remainder is dropped); b are the block means. `stability_std` = population
//!    standard deviation of b (0 for one block); `cvar05` = mean of the lowest
//!    ceil(0.05 B) = ceil(B / 20) block means.
//! 6. **Gap to the upper bound.** Over the rows with a `ceiling` (per interval, and per
//!    label): `gap` = mean of (ceiling - r), `normalized_gap` = sum(ceiling - r) /
//!    sum(ceiling). Both null when no row has a ceiling; `normalized_gap` is also null when
//!    the ceilings sum to 0.
//!
//! Sums are compensated (TwoSum), and H_k, P_k and every m_k(t) come from the same rolling
//! sum, so a crossing happens exactly where the arithmetic on paper puts it.
//!
//! # Across runs
//!
//! Runs are grouped by `(task, algorithm_id)`. Per group, label and metric, each run
//! contributes one number (the configuration's value, or for interval metrics the mean over
//! the label's intervals that have one; `recovered_fraction` is the share of the label's
//! intervals with k >= 1 that recovered), and the group reports their mean over runs (seeds)
//! with a 95% percentile-bootstrap confidence interval: `bootstrap_resamples` resamples
//! (2000) of the runs with replacement, drawn with ChaCha8 from `bootstrap_seed` (0) mixed
//! with the estimate's name. A group of one run has CI = [mean, mean]. See [`compare`].
//!
//! # Output
//!
//! [`Report`] serializes to exactly the DESIGN JSON (`runs` with its keys; fields that do
//! not apply are `null`) plus two top-level keys:
//!
//! - `"groups"`: one object per `(task, algorithm_id)`: `{"task", "algorithm_id", "runs",
//!   "seeds", "run_ids", "configurations": {LABEL: {"runs", "mean_reward",
//!   "adaptation_steps", "recovery_steps", "recovered_fraction", "forgetting",
//!   "stability_std", "cvar05", "gap", "normalized_gap"}}}`, each metric
//!   `{"mean", "ci_low", "ci_high", "n"}` (`n` = runs with a value) or `null`.
//! - `"warnings"`: an array of strings, one per torn tail (a file whose last line was cut
//!   off by a killed writer; every complete row before it was used). Empty when none.
//!
//! [`Report::to_text`] prints the same as aligned tables; [`plot_svg`] draws the run-wide
//! rolling mean of x (window W) over steps with the first run's intervals shaded and
//! labelled.
//!
//! # Streaming
//!
//! Memory is bounded by the number of runs and intervals, not rows. The files are parsed
//! once (pass 1): it finds intervals, heads, tails, sums, block statistics and the recovery
//! crossings (B_k is known when interval k starts), and writes every x_t (8 bytes a row) to
//! an unnamed temporary file. Pass 2 replays those x_t, exactly as read, for the intervals
//! whose adaptation target lies strictly inside them (P_k > H_k: the first crossing needs
//! P_k, known only at e_k) or with more than 20 blocks (cvar05 then needs the
//! ceil(B/20) > 1 lowest block means, kept in a heap of that size while the interval is
//! replayed: one number per 20 W rows of the interval being replayed, freed at its end),
//! and stops as soon as nothing is left to compute. The plot keeps at most about 2000 points
//! per run. Replaying x_t rather than
//! re-reading the traces costs a few percent of parsing them, and a trace still being
//! written evaluates consistently.
//!
//! # Examples
//!
//! ```no_run
//! use perennial::eval::{evaluate, EvalOptions};
//!
//! let report = evaluate(&["runs/cartpole.jsonl".into()], &EvalOptions::default())?;
//! print!("{}", report.to_text());
//! println!("{}", serde_json::to_string_pretty(&report).unwrap());
//! # Ok::<(), perennial::eval::EvalError>(())
//! ```

mod cli;
mod compare;
mod error;
mod plot;
mod report;
mod run;
mod spill;
mod sum;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

pub use cli::{EvalArgs, run_cli};
pub use compare::{
    Comparison, Estimate, LabelComparison, METRICS, bootstrap, compare, comparison_text,
};
pub use error::EvalError;
pub use plot::{plot_svg, svg};
pub use report::{ConfigurationReport, IntervalReport, Report, RunReport};

use crate::trace::TraceReader;
use run::RunScan;
use spill::Spill;

/// How to evaluate. Build with `Default` and struct update syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalOptions {
    /// The smoothing window W (100). At least 1.
    pub window: usize,
    /// Count episode-end payouts in x_t (off: x_t = reward - sum(payout)).
    pub include_payout: bool,
    /// Bootstrap resamples for the cross-run CIs (2000).
    pub bootstrap_resamples: usize,
    /// Seed of the bootstrap's ChaCha8 generator (0).
    pub bootstrap_seed: u64,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            window: 100,
            include_payout: false,
            bootstrap_resamples: 2000,
            bootstrap_seed: 0,
        }
    }
}

/// Evaluates the runs in `paths` (JSON Lines or CSV, by extension), read in the order given.
///
/// A run may span several files (give them in step order) and may start at any step; a
/// file may hold several runs one after another.
///
/// # Errors
///
/// A file cannot be read or has a bad row (missing column, bad value, NaN), a run's steps are
/// not contiguous, a run's rows resume after another run's in the same file, no file holds a
/// complete row, or `window` is 0. Each names the file and line. The temporary file of x_t
/// cannot be written or read back ([`EvalError::Io`]). A torn last line is not an error: it
/// is listed in [`Report::warnings`].
pub fn evaluate(paths: &[PathBuf], options: &EvalOptions) -> Result<Report, EvalError> {
    if options.window == 0 || options.window > crate::limits::MAX_EVAL_WINDOW {
        return Err(EvalError::InvalidOptions(format!(
            "the smoothing window is {}; use 1 to {} steps",
            options.window,
            crate::limits::MAX_EVAL_WINDOW
        )));
    }
    let mut runs: Vec<RunScan> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut warnings = Vec::new();
    // Which run each stretch of rows belonged to, in reading order: at most one entry per
    // run and file, since a run's rows are contiguous within a file.
    let mut segments: Vec<(usize, u64)> = Vec::new();
    let mut spill = Spill::create()?;
    // Runs already warned of a reward above its ceiling.
    let mut above_ceiling: HashSet<usize> = HashSet::new();

    for path in paths {
        let mut reader = TraceReader::open(std::slice::from_ref(path));
        let mut current: Option<usize> = None;
        let mut seen_here: HashSet<usize> = HashSet::new();
        while let Some(at) = reader.next_ref() {
            let at = at?;
            let row = &at.row;
            let r = match current {
                Some(r) if runs[r].run_id == row.run_id => r,
                _ => {
                    let r = *index.entry(row.run_id.to_string()).or_insert_with(|| {
                        runs.push(RunScan::new(row, options.window));
                        runs.len() - 1
                    });
                    if !seen_here.insert(r) {
                        return Err(EvalError::Interleaved {
                            path: at.path.to_path_buf(),
                            line: at.line,
                            run_id: row.run_id.to_string(),
                            after: current.map(|c| runs[c].run_id.clone()).unwrap_or_default(),
                        });
                    }
                    current = Some(r);
                    segments.push((r, 0));
                    r
                }
            };
            let run = &mut runs[r];
            let refuse = |message: String| {
                EvalError::Trace(crate::trace::TraceError::parse(at.path, at.line, message))
            };
            if let Some(column) = run.identity_change(row) {
                return Err(refuse(format!(
                    "run `{}` changes its `{column}` mid-run; a run's identity columns must be the same on every row (give distinct runs distinct run ids)",
                    run.run_id
                )));
            }
            if row.step == u64::MAX {
                return Err(refuse(format!(
                    "run `{}` reaches step {}, the last representable one; the next step would wrap",
                    run.run_id,
                    u64::MAX
                )));
            }
            if run.rows > 0 && row.step != run.next_step {
                return Err(EvalError::NonContiguous {
                    path: at.path.to_path_buf(),
                    line: at.line,
                    run_id: run.run_id.clone(),
                    expected: run.next_step,
                    found: row.step,
                });
            }
            if let Some(c) = row.ceiling
                && row.reward > c
                && above_ceiling.insert(r)
            {
                warnings.push(format!(
                    "{}:{}: run `{}` step {}: reward {} is above its ceiling {}; the gap metrics assume a ceiling bounds the reward (only the first such row of a run is reported)",
                    at.path.display(),
                    at.line,
                    run.run_id,
                    row.step,
                    row.reward,
                    c
                ));
            }
            let x = if options.include_payout {
                row.reward
            } else {
                row.reward_without_payout()
            };
            run.push(row, x);
            spill.push(x)?;
            if let Some(last) = segments.last_mut() {
                last.1 += 1;
            }
        }
        warnings.extend(reader.torn_tails().iter().map(ToString::to_string));
    }
    if runs.is_empty() {
        return Err(EvalError::NoRows {
            paths: paths.to_vec(),
        });
    }

    let mut pending = 0;
    for run in &mut runs {
        run.finish_pass1();
        pending += run.pending;
    }
    if pending > 0 {
        let mut xs = spill.replay()?;
        'rows: for (r, rows) in segments {
            for _ in 0..rows {
                let x = xs.next()?;
                let run = &mut runs[r];
                if run.pending > 0 && run.replay(x) {
                    pending -= 1;
                    if pending == 0 {
                        break 'rows;
                    }
                }
            }
        }
    }

    let runs: Vec<RunReport> = runs.into_iter().map(RunScan::into_report).collect();
    let groups = compare(&runs, options.bootstrap_resamples, options.bootstrap_seed);
    Ok(Report {
        runs,
        groups,
        warnings,
        window: options.window,
        include_payout: options.include_payout,
    })
}
