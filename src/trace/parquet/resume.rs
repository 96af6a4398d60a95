//! Resuming a Parquet table at a checkpoint: checking that its parts hold the rows the
//! checkpoint recorded, their digest, and cutting the parts after it back.

use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::ArrowWriter;

use super::layout::{list_parts, part_rows};
use super::schema::properties;
use crate::trace::digest::Digest;
use crate::trace::error::TraceError;

/// The row counts of the first parts of a Parquet table (in order) that hold its first
/// `rows` rows, read from their footers; the parts after them are not read.
///
/// # Errors
///
/// A part cannot be read, or the parts hold fewer than `rows` rows: the table is not the
/// one the checkpoint being resumed recorded. `what` names the table in the message.
fn kept_parts(
    dir: &Path,
    parts: &[PathBuf],
    rows: u64,
    what: &str,
) -> Result<Vec<u64>, TraceError> {
    let mut counts = Vec::new();
    let mut held = 0;
    for path in parts {
        if held >= rows {
            break;
        }
        let n = part_rows(path)?;
        counts.push(n);
        held += n;
    }
    if held < rows {
        return Err(TraceError::io(
            dir,
            std::io::Error::other(format!(
                "the {what} holds {held} rows in finished parts but the checkpoint recorded {rows}; it is not this checkpoint's (it was replaced or shortened since), and it was left untouched"
            )),
        ));
    }
    Ok(counts)
}

/// Checks, reading only, that the Parquet table `dir` holds at least the `rows` rows a
/// checkpoint recorded; `what` names it in the message (`trace`, `events table`).
///
/// # Errors
///
/// As [`cut_back`], without touching anything.
pub(crate) fn check_rows(dir: &Path, rows: u64, what: &str) -> Result<(), TraceError> {
    let parts = list_parts(dir)?;
    kept_parts(dir, &parts.parts, rows, what).map(|_| ())
}

/// The digest of the parts of the Parquet table `dir` that hold exactly its first `rows`
/// rows, reading only: what a checkpoint that recorded `rows` recorded with them.
///
/// # Errors
///
/// A part cannot be read, the parts hold fewer rows, or `rows` falls inside a part (no
/// checkpoint of perennial's does: each one ends a part).
pub(crate) fn parts_digest(dir: &Path, rows: u64, what: &str) -> Result<String, TraceError> {
    let parts = list_parts(dir)?;
    let kept = kept_parts(dir, &parts.parts, rows, what)?;
    if kept.iter().sum::<u64>() != rows {
        return Err(TraceError::io(
            dir,
            std::io::Error::other(format!(
                "the checkpoint recorded {rows} rows of the {what}, which end inside a part; it is not this table's checkpoint (it was edited, or the parts were replaced since), and it was left untouched"
            )),
        ));
    }
    let mut digest = Digest::default();
    digest.add_parts(&parts.parts[..kept.len()])?;
    Ok(digest.hex())
}

/// Prepares `dir` for a run continued from a checkpoint that recorded `rows` rows: parts
/// wholly after that row are removed, the part holding it is rewritten with only the rows
/// before it, leftover temp files are removed. Returns the next part index. The parts are
/// counted before anything is removed, so a table that is not the checkpoint's is left as
/// it was; `what` names it in the message.
///
/// # Errors
///
/// The directory or a part cannot be read or rewritten, or it holds fewer rows than the
/// checkpoint recorded. Returns the digest of the kept parts with the next part index.
pub(crate) fn cut_back(dir: &Path, rows: u64, what: &str) -> Result<(usize, Digest), TraceError> {
    crate::output::check_output_dir(dir)?;
    let parts = list_parts(dir)?;
    let kept = kept_parts(dir, &parts.parts, rows, what)?;
    for tmp in &parts.temps {
        std::fs::remove_file(tmp).map_err(|e| TraceError::io(tmp, e))?;
    }
    let mut start = 0u64;
    for (i, path) in parts.parts.iter().enumerate() {
        let Some(&n) = kept.get(i) else {
            std::fs::remove_file(path).map_err(|e| TraceError::io(path, e))?;
            continue;
        };
        if start + n > rows {
            rewrite_prefix(path, (rows - start) as usize)?;
        }
        start += n.min(rows - start);
    }
    crate::output::sync_folder(dir);
    let mut digest = Digest::default();
    digest.add_parts(&parts.parts[..kept.len()])?;
    Ok((kept.len(), digest))
}

/// Rewrites the part at `path` keeping its first `keep` rows (temp file, fsync, rename).
fn rewrite_prefix(path: &Path, keep: usize) -> Result<(), TraceError> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let err =
        |e: &dyn std::fmt::Display| TraceError::io(path, std::io::Error::other(e.to_string()));
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| err(&e))?;
    let metadata = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|kv| !kv.key.starts_with("ARROW:"))
        .collect();
    let schema = builder.schema().clone();
    let reader = builder.build().map_err(|e| err(&e))?;
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let mut out = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
    let mut writer =
        ArrowWriter::try_new(&mut out, schema, Some(properties(metadata))).map_err(|e| err(&e))?;
    let mut left = keep;
    for batch in reader {
        let batch = batch.map_err(|e| err(&e))?;
        let take = left.min(batch.num_rows());
        if take > 0 {
            writer.write(&batch.slice(0, take)).map_err(|e| err(&e))?;
        }
        left -= take;
    }
    writer.close().map_err(|e| err(&e))?;
    out.sync_all().map_err(|e| TraceError::io(&tmp, e))?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(|e| TraceError::io(path, e))?;
    Ok(())
}
