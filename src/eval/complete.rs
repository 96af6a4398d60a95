//! Whether a trace holds the whole of each run in it: its rows against the run manifest
//! perennial wrote beside it.
//!
//! A Parquet trace whose numbered parts skip a number or do not start at `part-00000`, or
//! that holds a part of another run, is refused as it is read (the part is named). What
//! only the manifest can tell is checked here, for a run whose manifest names the trace
//! evaluated:
//!
//! - a run that completed more steps than its trace holds: a Parquet trace's last part
//!   was deleted (an error naming the missing part, since one run's trace is one
//!   directory); a JSON Lines or CSV file was cut or continues in another file (a
//!   warning: a run's rows may be split over files given one by one);
//! - a run whose rows do not start at step 0: the start is missing (a warning: a trace
//!   written from a restored snapshot starts later on purpose).
//!
//! The metrics then cover the rows there are; a run still running or that failed is not
//! compared with its manifest's step count.

use std::path::{Path, PathBuf};

use super::error::EvalError;
use super::run::RunScan;
use crate::trace::{Manifest, TraceError};

/// The warnings for runs the traces hold only part of; an error when a Parquet trace's last
/// part is missing. `files` are the files read, each with the runs met in it, in reading
/// order: a run's start is checked in its first file, its end in its last.
pub(crate) fn check(
    files: &[(PathBuf, Vec<usize>)],
    runs: &[RunScan],
) -> Result<Vec<String>, EvalError> {
    let mut first_file = vec![None; runs.len()];
    let mut last_file = vec![None; runs.len()];
    for (i, (_, met)) in files.iter().enumerate() {
        for &r in met {
            if first_file[r].is_none() {
                first_file[r] = Some(i);
            }
            last_file[r] = Some(i);
        }
    }
    let mut warnings = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        let (Some(head), Some(tail)) = (first_file[r], last_file[r]) else {
            continue;
        };
        let first = run.next_step - run.rows;
        let last = run.next_step.saturating_sub(1);
        if first > 0
            && let Some(path) = described(&files[head].0, &run.run_id).map(|_| &files[head].0)
        {
            warnings.push(format!(
                "{}: run `{}` starts at step {first}, not 0: the rows before it are not in this trace (a deleted first part, lines cut from its head, or a trace begun from a snapshot); its metrics cover steps {first} to {last} only",
                path.display(),
                run.run_id
            ));
        }
        let path = &files[tail].0;
        let Some(manifest) = described(path, &run.run_id) else {
            continue;
        };
        if manifest.exit_status == "completed" && run.next_step < manifest.steps_done {
            let short = format!(
                "the trace ends at step {last} but its manifest says run `{}` completed {} steps",
                run.run_id, manifest.steps_done
            );
            if path.is_dir() {
                let missing = path.join(format!(
                    "part-{:05}.parquet",
                    crate::trace::parquet_parts(path)
                ));
                return Err(EvalError::Trace(TraceError::parse(
                    &missing,
                    0,
                    format!(
                        "this part is missing: {short}; restore the trace's last parts from a copy, or rerun the run"
                    ),
                )));
            }
            warnings.push(format!(
                "{}: {short}: the rows after step {last} are not in this file (it was cut, or the run continues in another file); its metrics cover steps {first} to {last} only",
                path.display()
            ));
        }
    }
    Ok(warnings)
}

/// The manifest of run `run_id` that names `trace` as its trace, if there is one.
fn described(trace: &Path, run_id: &str) -> Option<Manifest> {
    Manifest::find(trace, run_id)
        .filter(|m| m.trace.as_deref().is_some_and(|t| same_file(t, trace)))
}

/// True when `a` and `b` name one file (both exist and canonicalize alike).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
