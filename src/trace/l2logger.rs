//! Export to the L2Logger log layout, so DARPA's `l2metrics` scores a perennial run
//! unchanged (`python -m l2metrics -l OUT/<run-id> -p reward --no-plot`).
//!
//! # The mapping
//!
//! - One run is one L2Logger scenario: `OUT/<run-id>/` with `logger_info.json`
//!   (`metrics_columns` = `reward` and one `c_<name>` per reward component, log format
//!   version 1.1) and `scenario_info.json` (the run's identity, and its manifest when one
//!   is found).
//! - The worker is the run (`worker_id` = the run id with characters L2Logger refuses
//!   replaced by `_`).
//! - Each configuration interval (a maximal run of rows with one regime label, the unit
//!   perennial's metrics segment by) is one block: `block_num` = the interval index,
//!   folder `<block_num>-train/data-log.tsv`, `task_name` = the regime label (l2metrics
//!   lowercases it), `task_params` = `{"origin": …, "start": …, "end": …}`.
//! - Every block is a `train` block (`block_subtype` `wake`): a perennial run has no
//!   frozen-policy evaluation phase, every step is experience the agent learns from, so
//!   l2metrics' train-based metrics (performance recovery, average train performance,
//!   forgetting between recurring tasks) apply and its test-based ones do not. To evaluate
//!   a frozen policy, run it as its own run and export that.
//! - One experience is one step by default (`exp_num` = the global step, `reward` its
//!   reward); `steps_per_exp` > 1 averages that many steps of one interval into one
//!   experience (`exp_num` = its first step), which keeps a long run's logs small.
//! - `exp_status` is `complete`; `timestamp` is the run's start time from its manifest
//!   (else the export time), since a step has no wall-clock time of its own.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{Manifest, TraceError, TraceReader};

/// How to export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L2LoggerOptions {
    /// Steps averaged into one experience (1: one experience per step). At least 1.
    pub steps_per_exp: u64,
}

impl Default for L2LoggerOptions {
    fn default() -> Self {
        L2LoggerOptions { steps_per_exp: 1 }
    }
}

/// What an export wrote: one entry per run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportedRun {
    /// The run id.
    pub run_id: String,
    /// Its scenario folder (`OUT/<run-id>`), the `-l` argument of l2metrics.
    pub dir: PathBuf,
    /// Blocks written (its configuration intervals).
    pub blocks: u64,
    /// Experiences written.
    pub experiences: u64,
}

/// A run id or label as an L2Logger worker id: `[0-9a-zA-Z_.-]`, others become `_`.
fn worker_id(run_id: &str) -> String {
    run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A TSV field as Python's `csv` module writes it with `delimiter="\t"`.
fn tsv_field(s: &str) -> String {
    if s.contains(['\t', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

struct Block {
    out: BufWriter<File>,
    path: PathBuf,
    prefix: String,
    suffix: String,
    sums: Vec<f64>,
    n: u64,
    first: u64,
}

struct Scenario {
    run_id: String,
    tmp: PathBuf,
    dir: PathBuf,
    worker: String,
    timestamp: String,
    components: Vec<String>,
    block: Option<Block>,
    blocks: u64,
    experiences: u64,
    regime: String,
}

impl Scenario {
    fn flush_exp(&mut self) -> Result<(), TraceError> {
        let Some(b) = self.block.as_mut() else {
            return Ok(());
        };
        if b.n == 0 {
            return Ok(());
        }
        let mut line = format!("{}\t{}\t{}", b.prefix, b.first, b.suffix);
        for s in &b.sums {
            line.push('\t');
            line.push_str(ryu::Buffer::new().format(s / b.n as f64));
        }
        line.push('\n');
        b.out
            .write_all(line.as_bytes())
            .map_err(|e| TraceError::io(&b.path, e))?;
        b.n = 0;
        b.sums.iter_mut().for_each(|s| *s = 0.0);
        self.experiences += 1;
        Ok(())
    }

    fn close_block(&mut self) -> Result<(), TraceError> {
        self.flush_exp()?;
        if let Some(mut b) = self.block.take() {
            b.out.flush().map_err(|e| TraceError::io(&b.path, e))?;
            b.out
                .get_ref()
                .sync_all()
                .map_err(|e| TraceError::io(&b.path, e))?;
        }
        Ok(())
    }

    fn open_block(&mut self, regime: &str, origin: &str, start: u64) -> Result<(), TraceError> {
        self.close_block()?;
        let k = self.blocks;
        let folder = self.tmp.join(&self.worker).join(format!("{k}-train"));
        std::fs::create_dir_all(&folder).map_err(|e| TraceError::io(&folder, e))?;
        let path = folder.join("data-log.tsv");
        let mut out = BufWriter::new(File::create(&path).map_err(|e| TraceError::io(&path, e))?);
        let mut header = String::from(
            "block_num\texp_num\tworker_id\tblock_type\tblock_subtype\ttask_name\ttask_params\texp_status\ttimestamp",
        );
        let mut extra: Vec<String> = vec!["reward".into()];
        extra.extend(self.components.iter().map(|c| format!("c_{c}")));
        let mut sorted = extra.clone();
        sorted.sort();
        // L2Logger orders extra columns by name; the values follow that order.
        for name in &sorted {
            header.push('\t');
            header.push_str(&tsv_field(name));
        }
        header.push('\n');
        out.write_all(header.as_bytes())
            .map_err(|e| TraceError::io(&path, e))?;
        let params = serde_json::json!({ "origin": origin, "start": start }).to_string();
        self.block = Some(Block {
            out,
            path,
            prefix: k.to_string(),
            suffix: format!(
                "{}\ttrain\twake\t{}\t{}\tcomplete\t{}",
                self.worker,
                tsv_field(regime),
                tsv_field(&params),
                self.timestamp
            ),
            sums: vec![0.0; extra.len()],
            n: 0,
            first: start,
        });
        self.blocks += 1;
        self.regime = regime.to_string();
        Ok(())
    }

    fn finish(mut self) -> Result<ExportedRun, TraceError> {
        self.close_block()?;
        std::fs::rename(&self.tmp, &self.dir).map_err(|e| TraceError::io(&self.dir, e))?;
        if let Some(parent) = self.dir.parent() {
            crate::output::sync_folder(parent);
        }
        Ok(ExportedRun {
            run_id: self.run_id,
            dir: self.dir,
            blocks: self.blocks,
            experiences: self.experiences,
        })
    }
}

/// Column order of the metric values: `reward` and `c_<name>` sorted by name, as
/// L2Logger orders extra columns.
fn value_order(components: &[String]) -> Vec<Option<usize>> {
    let mut names: Vec<(String, Option<usize>)> = vec![("reward".into(), None)];
    names.extend(
        components
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("c_{c}"), Some(i))),
    );
    names.sort();
    names.into_iter().map(|(_, i)| i).collect()
}

/// Exports the runs in `traces` (any trace format) into `out`, one L2Logger scenario
/// folder per run. Each folder is written under a temporary name and renamed when whole.
///
/// # Errors
///
/// A trace cannot be read (see [`TraceReader`]), a scenario folder already exists, or a
/// file cannot be written. Folders of runs exported before the error stay.
pub fn export_l2logger(
    traces: &[PathBuf],
    out: &Path,
    options: &L2LoggerOptions,
) -> Result<Vec<ExportedRun>, TraceError> {
    if options.steps_per_exp == 0 {
        return Err(TraceError::io(
            out,
            std::io::Error::other("--steps-per-exp must be at least 1"),
        ));
    }
    if std::fs::metadata(out).is_ok_and(|m| !m.is_dir()) {
        return Err(TraceError::io(
            out,
            std::io::Error::other(
                "is not a directory; give --out a directory (it is created when missing)",
            ),
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| TraceError::io(out, e))?;
    let mut done = Vec::new();
    let mut seen = HashSet::new();
    let mut current: Option<Scenario> = None;
    let mut order: Vec<Option<usize>> = Vec::new();
    let given: HashSet<&Path> = traces.iter().map(PathBuf::as_path).collect();
    let mut reader = TraceReader::open(traces);
    while let Some(at) = reader.next_ref() {
        let at = at?;
        let row = &at.row;
        if current.as_ref().is_none_or(|s| s.run_id != row.run_id) {
            if let Some(s) = current.take() {
                done.push(s.finish()?);
            }
            if !seen.insert(row.run_id.to_string()) {
                return Err(TraceError::parse(
                    at.path,
                    at.line,
                    format!(
                        "the rows of run `{}` resume after another run's; give each run's files together",
                        row.run_id
                    ),
                ));
            }
            let name = worker_id(&row.run_id);
            let dir = out.join(&name);
            if dir.exists() {
                return Err(TraceError::io(
                    &dir,
                    std::io::Error::other(
                        "this scenario folder already exists; remove it or choose another --out",
                    ),
                ));
            }
            let tmp = out.join(format!(".{name}.tmp-export"));
            if tmp.exists() {
                std::fs::remove_dir_all(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
            }
            std::fs::create_dir_all(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
            // The manifest beside the trace this row came from (a Parquet row comes from a
            // part inside the trace's folder): one look-up per run, however many traces.
            let trace = if given.contains(at.path) {
                at.path
            } else {
                at.path.parent().unwrap_or(at.path)
            };
            let manifest = Manifest::find(trace, &row.run_id);
            let components: Vec<String> =
                row.components.iter().map(|(k, _)| k.to_string()).collect();
            let mut metrics = vec!["reward".to_string()];
            metrics.extend(components.iter().map(|c| format!("c_{c}")));
            let logger_info = serde_json::json!({
                "metrics_columns": metrics,
                "log_format_version": "1.1",
            });
            let scenario_info = serde_json::json!({
                "author": "perennial",
                "run_id": row.run_id,
                "task": row.task,
                "seed": row.seed,
                "algorithm_id": row.algorithm_id,
                "steps_per_exp": options.steps_per_exp,
                "manifest": manifest,
            });
            for (file, value) in [
                ("logger_info.json", logger_info),
                ("scenario_info.json", scenario_info),
            ] {
                let p = tmp.join(file);
                let text = serde_json::to_string_pretty(&value)
                    .map_err(|e| TraceError::io(&p, std::io::Error::other(e)))?;
                std::fs::write(&p, text).map_err(|e| TraceError::io(&p, e))?;
            }
            let started = manifest
                .as_ref()
                .map_or_else(super::utc_now, |m| m.started_at.clone());
            order = value_order(&components);
            current = Some(Scenario {
                run_id: row.run_id.to_string(),
                tmp,
                dir,
                worker: name,
                timestamp: l2_timestamp(&started),
                components,
                block: None,
                blocks: 0,
                experiences: 0,
                regime: String::new(),
            });
        }
        let Some(s) = current.as_mut() else {
            continue;
        };
        if s.block.is_none() || s.regime != row.regime {
            s.open_block(&row.regime, row.regime_origin.as_str(), row.step)?;
        }
        let full = s
            .block
            .as_ref()
            .is_some_and(|b| b.n >= options.steps_per_exp);
        if full {
            s.flush_exp()?;
        }
        if let Some(b) = s.block.as_mut() {
            if b.n == 0 {
                b.first = row.step;
            }
            let values: Vec<f64> = row.components.iter().map(|(_, v)| v).collect();
            for (slot, which) in b.sums.iter_mut().zip(&order) {
                *slot += match which {
                    None => row.reward,
                    Some(i) => values.get(*i).copied().unwrap_or(0.0),
                };
            }
            b.n += 1;
        }
    }
    if let Some(s) = current.take() {
        done.push(s.finish()?);
    }
    if done.is_empty() {
        return Err(TraceError::parse(
            traces.first().map_or(Path::new(""), PathBuf::as_path),
            0,
            "no complete row to export",
        ));
    }
    Ok(done)
}

/// `2026-11-30T02:30:00Z` as L2Logger's `%Y%m%dT%H%M%S.%f`: `20261130T023000.000000`.
fn l2_timestamp(rfc3339: &str) -> String {
    let digits: String = rfc3339.chars().filter(char::is_ascii_digit).collect();
    if digits.len() >= 14 {
        format!("{}T{}.000000", &digits[..8], &digits[8..14])
    } else {
        "19700101T000000.000000".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_ids_keep_only_what_l2logger_accepts() {
        assert_eq!(
            worker_id("warehouse-random-seed0"),
            "warehouse-random-seed0"
        );
        assert_eq!(worker_id("a b/c"), "a_b_c");
    }

    #[test]
    fn fields_are_quoted_as_python_csv_quotes_them() {
        assert_eq!(tsv_field("calm"), "calm");
        assert_eq!(
            tsv_field(r#"{"origin": "initial"}"#),
            r#""{""origin"": ""initial""}""#
        );
    }

    #[test]
    fn values_follow_the_sorted_column_names() {
        let order = value_order(&["shipped".into(), "holding".into()]);
        // c_holding, c_shipped, reward
        assert_eq!(order, vec![Some(1), Some(0), None]);
        assert_eq!(
            l2_timestamp("2026-11-30T02:30:05Z"),
            "20261130T023005.000000"
        );
    }
}
