//! Pass 1 over the traces: every row checked (run identity, contiguous steps, ceilings)
//! and handed to its run, row by row from any format, or a Parquet batch column by column.
//!
//! The column-wise path exists for speed (issue 17: eval on Parquet at 15 M rows/s) and
//! gives the same report as the row path, bit for bit: it reads only the columns the
//! metrics use ([`Projection::Metrics`]), takes a batch that way only when
//! [`ParquetSource::columns`] vouches that every row of it is valid and of one run, and
//! within it hands each stretch of one regime label (one dictionary key) to
//! [`RunScan::push_span`], which feeds every accumulator in the row order and with the same
//! operations as [`RunScan::push`]. The first row of a batch, each row where the label's
//! key changes and a run's first reward above its ceiling go through the row path, which
//! opens runs and intervals and writes the warnings; so does every row of a batch that is
//! not vouched for, so a bad row's error is the row path's, with its line.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use arrow_array::Array;

use super::error::EvalError;
use super::options::EvalOptions;
use super::run::RunScan;
use super::span::{GapReference, Span};
use super::spill::Spill;
use crate::trace::{Columns, Located, ParquetSource, Projection, Terms, TraceReader};

/// Pass 1's state across files.
pub(crate) struct Pass1<'o> {
    options: &'o EvalOptions,
    pub(crate) runs: Vec<RunScan>,
    index: HashMap<String, usize>,
    pub(crate) warnings: Vec<String>,
    /// Which run each stretch of rows belonged to, in reading order: at most one entry per
    /// run and file, since a run's rows are contiguous within a file.
    pub(crate) segments: Vec<(usize, u64)>,
    pub(crate) spill: Spill,
    /// Runs already warned of a reward above its ceiling.
    above_ceiling: HashSet<usize>,
    /// The run of the previous row in the current file, and the runs met in it.
    current: Option<usize>,
    seen_here: HashSet<usize>,
    /// x of the rows of one span, written to the spill together.
    xs: Vec<f64>,
    /// Each file read and the runs met in it, in reading order.
    pub(crate) files: Vec<(PathBuf, Vec<usize>)>,
}

impl<'o> Pass1<'o> {
    pub(crate) fn new(options: &'o EvalOptions) -> Result<Self, EvalError> {
        Ok(Pass1 {
            options,
            runs: Vec::new(),
            index: HashMap::new(),
            warnings: Vec::new(),
            segments: Vec::new(),
            spill: Spill::create()?,
            above_ceiling: HashSet::new(),
            current: None,
            seen_here: HashSet::new(),
            xs: Vec::new(),
            files: Vec::new(),
        })
    }

    /// Reads every row of the trace at `path`.
    pub(crate) fn file(&mut self, path: &Path) -> Result<(), EvalError> {
        self.read(path)?;
        let mut runs: Vec<usize> = self.seen_here.iter().copied().collect();
        runs.sort_unstable();
        self.files.push((path.to_path_buf(), runs));
        Ok(())
    }

    fn read(&mut self, path: &Path) -> Result<(), EvalError> {
        self.current = None;
        self.seen_here.clear();
        if crate::trace::TraceFormat::from_path(path) == crate::trace::TraceFormat::Parquet {
            return self.parquet(path);
        }
        let mut reader = TraceReader::open(std::slice::from_ref(&path));
        while let Some(at) = reader.next_ref() {
            self.row(&at?)?;
        }
        self.warnings
            .extend(reader.torn_tails().iter().map(ToString::to_string));
        Ok(())
    }

    /// A Parquet trace, batch by batch: column-wise where [`ParquetSource::columns`]
    /// allows, row by row elsewhere.
    fn parquet(&mut self, path: &Path) -> Result<(), EvalError> {
        let mut source = ParquetSource::open(path.to_path_buf(), Projection::Metrics);
        let mut torn = Vec::new();
        loop {
            let step = source.advance_batch();
            torn.extend(source.take_torn());
            match step {
                None => break,
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(())) => {}
            }
            // A role's reward is not among the metric columns: its rows go the row path.
            match source.columns().filter(|_| self.options.role.is_none()) {
                Some(columns) => self.columns(&source, &columns)?,
                None => {
                    for i in 0..source.batch_len() {
                        self.row(&source.row_at(i)?)?;
                    }
                }
            }
        }
        self.warnings.extend(torn.iter().map(ToString::to_string));
        Ok(())
    }

    /// A batch vouched for by [`ParquetSource::columns`].
    fn columns(&mut self, source: &ParquetSource, c: &Columns<'_>) -> Result<(), EvalError> {
        let mut i = 0;
        while i < c.len {
            // The row path opens the run (and its interval) and checks that the batch's
            // identity and first step continue it.
            let at = source.row_at(i)?;
            self.row(&at)?;
            i += 1;
            let Some(r) = self.current else {
                continue;
            };
            let mut end = c.regime_run_end(i);
            // Rows of one run and one label from here on; stop short of a step that does
            // not follow (the row path refuses it) and of the run's first reward above
            // its ceiling (the row path warns of it).
            let next = self.runs[r].next_step;
            if let Some(k) = c.step[i..end]
                .iter()
                .enumerate()
                .position(|(k, &s)| s != next.wrapping_add(k as u64) || s == u64::MAX)
            {
                end = i + k;
            }
            if !self.above_ceiling.contains(&r)
                && let Some(ceiling) = c.ceiling
                && let Some(k) =
                    (i..end).position(|j| ceiling.is_valid(j) && c.reward[j] > ceiling.values()[j])
            {
                end = i + k;
            }
            if end > i {
                self.span(r, c, i, end)?;
                i = end;
            }
        }
        Ok(())
    }

    /// Rows `from..to` of a vouched batch, one run and one interval.
    fn span(&mut self, r: usize, c: &Columns<'_>, from: usize, to: usize) -> Result<(), EvalError> {
        let rewards = &c.reward[from..to];
        // x = reward - sum(payout), the set payouts summed in column order as the row path
        // sums its terms; the reward itself when payouts count or there are none.
        let x_is_reward = self.options.include_payout || c.payouts.is_empty();
        if !x_is_reward {
            self.xs.clear();
            self.xs.extend((from..to).map(|j| {
                let payout: f64 = c
                    .payouts
                    .iter()
                    .filter(|p| p.is_valid(j))
                    .map(|p| p.values()[j])
                    .sum();
                c.reward[j] - payout
            }));
        }
        let xs = if x_is_reward { rewards } else { &self.xs };
        let (sparse, mixed);
        // Each row's gap reference: its bound, else its ceiling.
        let bound_rows = c
            .bound
            .map_or(0, |b| (from..to).filter(|&j| b.is_valid(j)).count());
        let gap_reference = match (c.bound, c.ceiling) {
            (Some(b), _) if bound_rows == to - from => GapReference::Dense(&b.values()[from..to]),
            (Some(b), ceiling) if bound_rows > 0 => {
                mixed = move |k: usize| {
                    let j = from + k;
                    if b.is_valid(j) {
                        Some(b.values()[j])
                    } else {
                        ceiling.filter(|c| c.is_valid(j)).map(|c| c.values()[j])
                    }
                };
                GapReference::Sparse(&mixed)
            }
            (_, Some(col)) if col.null_count() == 0 => GapReference::Dense(&col.values()[from..to]),
            (_, Some(col)) => {
                let values: &[f64] = &col.values()[from..to];
                sparse = move |k: usize| col.is_valid(from + k).then(|| values[k]);
                GapReference::Sparse(&sparse)
            }
            (_, None) => GapReference::Absent,
        };
        let span = Span {
            step: c.step[from],
            episodes: &c.episode[from..to],
            rewards,
            xs,
            x_is_reward,
            components: c
                .components
                .iter()
                .map(|(name, values)| (*name, &values[from..to]))
                .collect(),
            gap_reference,
            bound_rows: bound_rows as u64,
        };
        self.runs[r].push_span(&span);
        self.spill.push_all(xs)?;
        if let Some(last) = self.segments.last_mut() {
            last.1 += (to - from) as u64;
        }
        Ok(())
    }

    /// One row: its run found or opened, its identity, step and ceiling checked. With
    /// [`EvalOptions::role`], the row as that role sees it ([`role_row`]).
    pub(crate) fn row(&mut self, at: &Located<'_>) -> Result<(), EvalError> {
        let own;
        let at = match &self.options.role {
            None => at,
            Some(role) => {
                own = role_row(at, role)?;
                &own
            }
        };
        let row = &at.row;
        let r = match self.current {
            Some(r) if self.runs[r].run_id == row.run_id => r,
            _ => {
                let runs = &mut self.runs;
                let window = self.options.window;
                let r = *self.index.entry(row.run_id.to_string()).or_insert_with(|| {
                    runs.push(RunScan::new(row, window));
                    runs.len() - 1
                });
                if !self.seen_here.insert(r) {
                    return Err(EvalError::Interleaved {
                        path: at.path.to_path_buf(),
                        line: at.line,
                        run_id: row.run_id.to_string(),
                        after: self
                            .current
                            .map(|c| self.runs[c].run_id.clone())
                            .unwrap_or_default(),
                    });
                }
                self.current = Some(r);
                self.segments.push((r, 0));
                r
            }
        };
        let run = &mut self.runs[r];
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
            && self.above_ceiling.insert(r)
        {
            self.warnings.push(format!(
                "{}:{}: run `{}` step {}: reward {} is above its ceiling {}; the gap metrics assume a ceiling bounds the reward (only the first such row of a run is reported)",
                at.path.display(),
                at.line,
                run.run_id,
                row.step,
                row.reward,
                c
            ));
        }
        let x = if self.options.include_payout {
            row.reward
        } else {
            row.reward_without_payout()
        };
        run.push(row, x);
        self.spill.push(x)?;
        if let Some(last) = self.segments.last_mut() {
            last.1 += 1;
        }
        Ok(())
    }
}

/// `at` with role `role`'s own reward as its reward: no components, payouts, ceiling or
/// bound, which are the team's.
///
/// # Errors
///
/// [`EvalError::UnknownRole`] when the row has no reward for `role`.
fn role_row<'a>(at: &Located<'a>, role: &str) -> Result<Located<'a>, EvalError> {
    let row = &at.row;
    let reward = row
        .role_rewards
        .iter()
        .find(|(name, _)| *name == role)
        .map(|(_, v)| v)
        .ok_or_else(|| {
            let mut roles: Vec<String> = row
                .role_rewards
                .iter()
                .map(|(n, _)| n.to_string())
                .collect();
            roles.sort_unstable();
            EvalError::UnknownRole {
                path: at.path.to_path_buf(),
                line: at.line,
                role: role.to_string(),
                roles,
            }
        })?;
    let mut own = row.clone();
    own.reward = reward;
    own.components = Terms::default();
    own.payout = Terms::default();
    own.ceiling = None;
    own.bound = None;
    own.role_rewards = Terms::default();
    Ok(Located {
        path: at.path,
        line: at.line,
        row: own,
    })
}
