//! JSON Lines rows through serde: every owned row, and each line the scanner leaves alone,
//! with the messages that say what is wrong with a bad row.

use std::path::Path;

use super::borrowed::RowRef;
use super::scan;
use crate::trace::error::TraceError;
use crate::trace::row::TraceRow;

/// Says what is wrong with a row, at which column, and what to do.
fn row_error(e: &serde_json::Error) -> String {
    let mut what = e.to_string();
    // serde_json counts lines within the one row; the caller names the file's line.
    if let Some(at) = what.rfind(" at line ") {
        what.truncate(at);
    }
    let hint = if what.contains("invalid type: null") {
        " (a NaN or infinite number is written as null; fix the world that produced it)"
    } else {
        ""
    };
    format!(
        "not a valid trace row: {what} at column {}{hint}; each line must be one JSON object with the trace columns",
        e.column()
    )
}

/// Serde reads a struct from a JSON array too (by position); a trace row is an object.
fn check_object(text: &[u8], path: &Path, line: u64) -> Result<(), TraceError> {
    match text.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Ok(()),
        _ => Err(TraceError::parse(
            path,
            line,
            "not a valid trace row: each line must be one JSON object with the trace columns",
        )),
    }
}

pub(super) fn parse_jsonl(text: &[u8], path: &Path, line: u64) -> Result<TraceRow, TraceError> {
    check_object(text, path, line)?;
    let row: TraceRow =
        serde_json::from_slice(text).map_err(|e| TraceError::parse(path, line, row_error(&e)))?;
    check_finite(&row, path, line)?;
    Ok(row)
}

pub(super) fn parse_jsonl_ref<'a>(
    text: &'a [u8],
    prefix: &mut scan::Prefix,
    path: &Path,
    line: u64,
) -> Result<RowRef<'a>, TraceError> {
    let row = match scan::row(text, prefix) {
        Some(row) => row,
        None => {
            check_object(text, path, line)?;
            serde_json::from_slice(text)
                .map_err(|e| TraceError::parse(path, line, row_error(&e)))?
        }
    };
    let ok = crate::limits::reward_in_range;
    let bad = !ok(row.reward)
        || row.components.iter().any(|(_, v)| !ok(v))
        || row.payout.iter().any(|(_, v)| !ok(v))
        || row.ceiling.is_some_and(|c| !ok(c))
        || row.bound.is_some_and(|c| !ok(c))
        || row.role_rewards.iter().any(|(_, v)| !ok(v));
    if bad {
        return Err(not_finite(path, line, row.step));
    }
    Ok(row)
}

pub(super) fn check_finite(row: &TraceRow, path: &Path, line: u64) -> Result<(), TraceError> {
    let ok = crate::limits::reward_in_range;
    let bad = !ok(row.reward)
        || row.components.values().any(|v| !ok(*v))
        || row.payout.values().any(|v| !ok(*v))
        || row.ceiling.is_some_and(|c| !ok(c))
        || row.bound.is_some_and(|c| !ok(c))
        || row.role_rewards.values().any(|v| !ok(*v));
    if bad {
        return Err(not_finite(path, line, row.step));
    }
    Ok(())
}

fn not_finite(path: &Path, line: u64, step: u64) -> TraceError {
    TraceError::parse(
        path,
        line,
        format!(
            "step {step}: a reward, component, payout, ceiling or bound is not a finite number within ±1e30 (perennial::limits::MAX_REWARD); the file is damaged or was not written by perennial: restore it from a copy or rerun the run"
        ),
    )
}
