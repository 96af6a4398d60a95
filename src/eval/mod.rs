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
//! 6. **Gap to the upper bound.** A trace carries two upper bounds: `ceiling`, the hard
//!    cap on one step's reward over every action sequence, and `bound`, the world's
//!    expected-reward bound (no policy's long-run average reward exceeds it;
//!    [`Env::expected_bound`](crate::env::Env::expected_bound)), where the world declares
//!    one. The gap uses the tighter one: each row's reference u is its `bound`, else its
//!    `ceiling`. Over the rows with a reference (per interval, and per label): `gap` =
//!    mean of (u - r) (bound − mean_r when every row has a bound), `normalized_gap` =
//!    sum(u - r) / sum(u), a floor of 0. With a bound and a floor run (`floors`, the
//!    random agent's trace of the same task and seed), `normalized_gap` = (bound −
//!    mean_r) / (bound − floor_mean_r): 0 at the bound, 1 at the random agent. Both null
//!    when no row has a reference; `normalized_gap` is also null when its denominator is
//!    0. An interval or configuration measured against a bound reports it (`bound`, its
//!    mean over the rows); without that key its gap is to the ceiling. The text report
//!    says which one each run's gaps use. Metrics 1 to 5 use neither bound; the ceiling
//!    also checks every row (a reward above it is warned of).
//!
//! Sums are compensated (TwoSum), and H_k, P_k and every m_k(t) come from the same rolling
//! sum, so a crossing happens exactly where the arithmetic on paper puts it.
//!
//! # Across runs
//!
//! Runs are grouped by `(task, algorithm_id, notify)` (see below). Per group, label and
//! metric, each run
//! contributes one number (the configuration's value, or for interval metrics the mean over
//! the label's intervals that have one; `recovered_fraction` is the share of the label's
//! intervals with k >= 1 that recovered), and the group reports their mean over runs (seeds)
//! with a 95% percentile-bootstrap confidence interval: `bootstrap_resamples` resamples
//! (2000) of the runs with replacement, drawn with ChaCha8 from `bootstrap_seed` (0) mixed
//! with the estimate's name. A group of one run has CI = [mean, mean]. See [`compare`].
//!
//! # The notify level
//!
//! A trace written with a notify level other than `none` (what the agent was told at
//! regime shifts, see [`crate::regime::Notification`]) carries it in a `notify` column
//! after `task`; traces without the column are level `none`. The level is part of a run's
//! identity: it must be the same on every row of a run, each run reports it as `"notify"`
//! (only when not `none`, so reports on such traces are unchanged), and runs are grouped by
//! `(task, algorithm_id, notify)`, so the settings of one agent compare side by side: the
//! `groups` and reliability groups carry `"notify"` (again only when not `none`), sorted
//! `none`, `flag`, `delta`, `label` within an algorithm, and in the aggregate statistics each
//! setting is an algorithm of its own (`ppo`, `ppo+notify=flag`, …), so probability of
//! improvement compares them. References pair by `(task, seed)` whatever the level.
//!
//! # Against a reference: regret and state-adjusted forgetting
//!
//! With `references` (`--reference REF...`), each run is paired with the reference run of
//! the same `task` and `seed` (an oracle, or any agent the user names; the world's common
//! random numbers make the pairing fair), and with `floors` (`--floor TRACE...`) with a floor
//! run the same way (e.g. a random agent). Interval k of the run is paired with interval k of
//! the reference when the two have the same label, start and end; otherwise its paired values
//! are null and a warning names the first unmatched interval. Per interval:
//!
//! - `reference_mean_r` (and `floor_mean_r`): the paired interval's `mean_reward`;
//! - `regret` = reference_mean_r − mean_reward;
//! - `normalized_regret` = regret / |reference_mean_r − floor_mean_r| (null without a floor,
//!   or when the two are equal);
//! - `adjusted_forgetting` = F_k − F_k(reference): the agent's forgetting minus the
//!   reference's at the same interval (null unless both have one). Inventory, backlog and
//!   goodwill carry over between intervals whatever the agent learned, so a fixed policy's
//!   F_k is not 0; its adjusted forgetting against itself is 0 exactly.
//!
//! Per label (`configurations`), when every interval of the label was matched:
//! `reference_mean_r`, `floor_mean_r`, `regret` and `normalized_regret` by the same formulas
//! on the configuration's `mean_reward`, and `mean_adjusted_forgetting` = the mean of the
//! label's `adjusted_forgetting`. Each run reports `reference_run_id` and `floor_run_id`.
//! Without references every one of these is null. Two reference (or floor) runs with one
//! task and seed are an error.
//!
//! # Aggregate statistics (rliable)
//!
//! `"aggregate"` holds the statistics of Agarwal et al. (2021) across runs and tasks, with
//! their definitions in rliable (`rliable/metrics.py`, `rliable/library.py`); see
//! [`aggregate`](fn@aggregate). The **score** of run n on task column m is, by default, the
//! run's per-label `mean_reward`; the task columns are the `(task, label)` pairs,
//! `"task/label"`. When every run has a reference and a floor with different means for
//! every label, the score is normalized: (mean_reward − floor_mean_r) / (reference_mean_r −
//! floor_mean_r), 0 at the floor, 1 at the reference (`"score": "normalized_score"`).
//! Runs are grouped into algorithms by `algorithm_id`, suffixed `+notify=LEVEL` when the
//! run's notify level is not `none` ([`RunReport::arm`]). Per algorithm: `iqm`, `mean`,
//! `median` and `optimality_gap` (at γ = `gamma`, 1 by default) each
//! `{"estimate", "ci_low", "ci_high"}` with a 95% stratified bootstrap CI over runs within
//! each task column (`bootstrap_resamples` resamples), and `profile`, the performance
//! profile `[{"tau", "fraction", "ci_low", "ci_high"}]` on 51 τ evenly spaced from the
//! lowest to the highest score of any algorithm. `improvement` lists, for every ordered
//! pair of algorithms, `{"x", "y", "tasks", "probability"}` with P(X > Y) over the task
//! columns both have. `--profile-plot FILE.svg` draws the profiles ([`profile_svg`]).
//!
//! # Reliability (Chan et al. 2020)
//!
//! `"reliability": {"runs": [{"run_id", "blocks", "dispersion_across_time",
//! "short_term_risk", "long_term_risk"}], "groups": [{"task", "algorithm_id", "runs",
//! "dispersion_across_runs", "risk_across_runs"}]}`, groups per `(task, algorithm_id,
//! notify)`.
//! The curve is the run's W-step block means b_i (x cut into blocks of W steps from the
//! run's first step, the remainder dropped). Per run: `dispersion_across_time` = the mean,
//! over consecutive windows of 10 first differences d_i = b_i − b_{i−1} (a last shorter window
//! kept when it has at least 2), of the window's IQR (75th − 25th percentile, linear
//! interpolation); `short_term_risk` = CVaR at α = 0.05 of d, the mean of its lowest
//! ceil(α n) values; `long_term_risk` = the mean of the highest ceil(α n) drawdowns
//! D_i = max_{j ≤ i} b_j − b_i. Across runs: `dispersion_across_runs` = the mean over block
//! indices every run reached of the IQR of the runs' b_i (null for one run);
//! `risk_across_runs` = the mean of the lowest ceil(α runs) final performances, a run's final
//! performance being the mean of its last ceil(blocks / 10) blocks. See [`run_reliability`] and
//! [`across_runs`].
//!
//! # l2metrics beside ours
//!
//! In the `"l2metrics"` section, with j the most recent earlier interval of label c_k:
//! per interval `l2_recovery_steps` = (first t with m_k(t) ≥ P_j) − s_k + 1 (null on a
//! label's first interval and when never reached; for n_k < W, n_k when the interval's mean
//! reaches P_j) and `l2_maintenance` = (mean of x over interval k) − P_j; per label
//! `performance_recovery` = −(Theil–Sen slope of the label's non-null recovery times against
//! their order 0, 1, 2, …; [`theil_sen_slope`]), null with fewer than two, and
//! `performance_maintenance` = the mean of its `l2_maintenance`. Where the
//! definitions differ, formula by formula:
//!
//! - **Forgetting.** perennial: F_k = P_j − H_k, the tail (last W steps) of the label's
//!   previous interval minus the head (first W steps) of its recurrence, both on the
//!   reward the agent earned while acting (no separate evaluation). l2metrics (performance
//!   maintenance): the terminal performance of a later *evaluation* block of the task minus
//!   the terminal performance of its most recent *training* block (the opposite sign
//!   convention to F_k: negative = forgot); here `l2_maintenance` = mean of x over the whole recurrence − P_j, since there
//!   are no evaluation blocks. Continual World: F_i = p_i(end of training on task i) −
//!   p_i(end of the whole sequence), success rates from separate evaluation episodes, once per
//!   task, not per recurrence. CORA: for task i, the evaluation return at the end of its
//!   training minus the evaluation return after each later task, averaged over the later
//!   tasks. Only perennial measures in the head of the recurrence, so it sees what the agent
//!   does on the steps right after the shift, state carried over included (hence the
//!   reference-adjusted version above); the others evaluate a frozen policy from fresh
//!   episodes.
//! - **Recovery.** perennial: R_k against the previous interval's tail B_k = P_{k−1},
//!   whatever its label (how long until the agent is back to where it was before the shift).
//!   l2metrics: recovery time against the terminal performance of the *same task's* previous
//!   block (`l2_recovery_steps` here, against P_j), and performance recovery as −(Theil–Sen
//!   slope) of those times over the task's occurrences (positive = recovering faster each
//!   time). Continual World and CORA define no recovery time; their forward transfer compares
//!   areas under training curves with a reference learner's.
//!
//! # Output
//!
//! [`Report`] serializes to exactly the DESIGN JSON (`runs` with its keys; fields that do
//! not apply are `null`) plus two top-level keys:
//!
//! - `"groups"`: one object per `(task, algorithm_id, notify)`: `{"task", "algorithm_id", "runs",
//!   "seeds", "run_ids", "configurations": {LABEL: {"runs", "mean_reward",
//!   "adaptation_steps", "recovery_steps", "recovered_fraction", "forgetting",
//!   "stability_std", "cvar05", "gap", "normalized_gap"}}}`, each metric
//!   `{"mean", "ci_low", "ci_high", "n"}` (`n` = runs with a value) or `null`.
//! - `"aggregate"` and `"reliability"`: see above.
//! - `"warnings"`: an array of strings, one per torn tail (a file whose last line was cut
//!   off by a killed writer; every complete row before it was used), and one per run left
//!   without its reference or floor or only partly matched. Empty when none.
//!
//! - `"l2metrics"`: per run `{"run_id", "intervals": [{"index", "regime",
//!   "l2_recovery_steps", "l2_maintenance"}], "configurations": {LABEL:
//!   {"performance_recovery", "performance_maintenance"}}}`.
//!
//! Without references or floors the `runs` objects have exactly the DESIGN keys, and
//! `bound` in intervals and configurations measured against one. With them,
//! each run also carries `reference_run_id` and `floor_run_id`, each interval
//! `reference_mean_r`, `floor_mean_r`, `regret`, `normalized_regret` and
//! `adjusted_forgetting`, and each configuration `reference_mean_r`, `floor_mean_r`,
//! `regret`, `normalized_regret` and `mean_adjusted_forgetting`; null where they do not
//! apply.
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
//! A Parquet trace is read column by column. Only the columns the metrics use are decoded:
//! not `episode_step`, `terminated` and `truncated` (nor `obs` and `action`), whose
//! presence is still checked but whose nulls are not. A batch whose every row is valid and
//! of one run goes to the accumulators in a loop over its columns, one stretch of one
//! regime label (one dictionary key) at a time, with the same operations in the same order
//! as row by row, so the report is the one the JSON Lines trace of the run gives, bit for
//! bit; any other batch is read row by row, so an error names the part file and row.
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

mod aggregate;
mod cli;
mod compare;
mod complete;
mod curve;
mod error;
mod group;
mod l2;
mod lowest;
mod options;
mod order;
mod pass1;
mod plasticity;
mod plot;
mod record;
mod reference;
mod reliability;
mod report;
mod run;
mod span;
mod spill;
mod sum;
pub(crate) mod table;

use std::path::PathBuf;

pub use aggregate::{
    Aggregate, AlgorithmAggregate, Improvement, Interval, PROFILE_POINTS, ProfilePoint, Scores,
    aggregate, improvement_interval, iqm, mean, median, optimality_gap, probability_of_improvement,
    profile, profile_interval, stratified_interval,
};
pub(crate) use cli::read_events;
pub use cli::{EvalArgs, run_cli};
pub use compare::{
    Comparison, Estimate, LabelComparison, METRICS, bootstrap, compare, comparison_text,
};
pub use error::EvalError;
pub use group::RunGroup;
pub use l2::theil_sen_slope;
pub use options::EvalOptions;
pub use plasticity::{PlasticityPath, PlasticitySpan, plasticity_paths, plasticity_text};
pub use plot::{ProfileCurve, plot_svg, profile_curves_svg, profile_plot_svg, profile_svg, svg};
pub use reliability::{
    GroupReliability, RunReliability, across_runs, cvar_lower, drawdowns, iqr, run_reliability,
};
pub use report::{
    ConfigurationAgainst, ConfigurationReport, IntervalAgainst, IntervalReport, L2Interval,
    L2Label, L2Run, Paired, Regret, Reliability, Report, RunReliabilityEntry, RunReport,
};

pub(crate) use order::median_of;
use pass1::Pass1;
use run::RunScan;

/// Evaluates the runs in `paths` (JSON Lines, CSV or Parquet, by extension; formats can be
/// mixed), read in the order given.
///
/// A run may span several files (give them in step order) and may start at any step; a
/// file may hold several runs one after another.
///
/// # Errors
///
/// A file cannot be read or has a bad row (missing column, bad value, NaN), a run's steps are
/// not contiguous, a run's rows resume after another run's in the same file, no file holds a
/// complete row, or `window` is 0. Each names the file and line. The temporary file of x_t
/// cannot be written or read back ([`EvalError::Io`]). The same for the reference and floor
/// traces, and two reference (or floor) runs share a task and seed. A torn last line is not
/// an error: it is listed in [`Report::warnings`], as is a run left without its reference or
/// floor.
pub fn evaluate(paths: &[PathBuf], options: &EvalOptions) -> Result<Report, EvalError> {
    let (mut runs, mut warnings) = evaluate_runs(paths, options)?;
    let mut paired = |files: &[PathBuf]| -> Result<Vec<RunReport>, EvalError> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let (runs, w) = evaluate_runs(files, options)?;
        warnings.extend(w);
        Ok(runs)
    };
    let references = paired(&options.references)?;
    let floors = paired(&options.floors)?;
    if !options.references.is_empty() || !options.floors.is_empty() {
        warnings.extend(reference::pair(&mut runs, &references, &floors)?);
    }
    let groups = compare(&runs, options.bootstrap_resamples, options.bootstrap_seed);
    let aggregate = aggregate::aggregate(
        &runs,
        options.gamma,
        options.bootstrap_resamples,
        options.bootstrap_seed,
    );
    let reliability = Reliability {
        runs: runs
            .iter()
            .map(|r| RunReliabilityEntry {
                run_id: r.run_id.clone(),
                statistics: r.reliability,
            })
            .collect(),
        groups: report::reliability_groups(&runs),
    };
    let l2metrics = runs.iter().map(L2Run::of).collect();
    Ok(Report {
        role: options.role.clone(),
        runs,
        groups,
        aggregate,
        l2metrics,
        reliability,
        warnings,
        window: options.window,
        include_payout: options.include_payout,
    })
}

/// The per-run reports of `paths` and the torn-tail warnings.
fn evaluate_runs(
    paths: &[PathBuf],
    options: &EvalOptions,
) -> Result<(Vec<RunReport>, Vec<String>), EvalError> {
    if options.window == 0 || options.window > crate::limits::MAX_EVAL_WINDOW {
        return Err(EvalError::InvalidOptions(format!(
            "the smoothing window is {}; use 1 to {} steps",
            options.window,
            crate::limits::MAX_EVAL_WINDOW
        )));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = paths
        .iter()
        .find(|p| p.canonicalize().is_ok_and(|c| !seen.insert(c)))
    {
        return Err(EvalError::InvalidOptions(format!(
            "{} is given twice; give each trace once (a run's rows are read in the order given)",
            twice.display()
        )));
    }
    if let Some(first) = paths.first()
        && paths.iter().all(|p| crate::trace::is_events_table(p))
    {
        return Err(EvalError::InvalidOptions(format!(
            "{} is an events table, not a trace; pass the trace beside it (`eval TRACE --events` reads the table too)",
            first.display()
        )));
    }
    let mut pass1 = Pass1::new(options)?;
    for path in paths {
        // `perennial eval runs/*.jsonl` names the events tables beside the traces too.
        if crate::trace::is_events_table(path) {
            pass1.warnings.push(format!(
                "{}: an events table, not a trace; it was skipped (eval --events reads it beside its trace)",
                path.display()
            ));
            continue;
        }
        pass1.file(path)?;
    }
    let Pass1 {
        mut runs,
        mut warnings,
        segments,
        mut spill,
        files,
        ..
    } = pass1;
    if runs.is_empty() {
        return Err(EvalError::NoRows {
            paths: paths.to_vec(),
        });
    }

    warnings.extend(complete::check(&files, &runs)?);
    let mut pending = 0;
    for run in &mut runs {
        run.finish_pass1();
        pending += run.pending;
    }
    if pending > 0 {
        let mut xs = spill.replay()?;
        let mut chunk = vec![0.0; 1 << 14];
        'rows: for (r, rows) in segments {
            let mut left = rows;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                left -= n as u64;
                xs.read(&mut chunk[..n])?;
                let run = &mut runs[r];
                for &x in &chunk[..n] {
                    if run.pending > 0 && run.replay(x) {
                        pending -= 1;
                        if pending == 0 {
                            break 'rows;
                        }
                    }
                }
            }
        }
    }

    let runs: Vec<RunReport> = runs.into_iter().map(RunScan::into_report).collect();
    warnings.extend(crate::trace::manifest_warnings(paths, &runs));
    Ok((runs, warnings))
}
