//! The layout of a Parquet trace directory: part file names, the keys of each part's
//! metadata, listing the parts and reading a part's row count. The writer and the reader
//! both build on it.

use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::trace::error::TraceError;

/// The key under which each part's file metadata holds the run manifest (JSON).
pub const MANIFEST_KEY: &str = "perennial.manifest";

/// The key under which each part's file metadata says how `action` reads back: `scalar`
/// (one number per row) or `array`.
pub const ACTION_KEY: &str = "perennial.action";

/// The file name of part `index`.
pub(crate) fn part_name(index: usize) -> String {
    format!("part-{index:05}.parquet")
}

/// The part files of a trace directory, in part order, and any temp files a killed writer
/// left behind.
pub(crate) struct Parts {
    pub(crate) parts: Vec<PathBuf>,
    pub(crate) temps: Vec<PathBuf>,
}

/// Lists the `*.parquet` files of `dir` (ordered by the number in `part-N`, then by name)
/// and the hidden `.part-*.tmp` files.
pub(crate) fn list_parts(dir: &Path) -> Result<Parts, TraceError> {
    let mut parts = Vec::new();
    let mut temps = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| TraceError::io(dir, e))? {
        let path = entry.map_err(|e| TraceError::io(dir, e))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with(".part-") && name.ends_with(".tmp") {
            temps.push(path);
        } else if !name.starts_with(['.', '_']) && name.ends_with(".parquet") && path.is_file() {
            parts.push(path);
        }
    }
    let key = |p: &PathBuf| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let number = name
            .strip_prefix("part-")
            .and_then(|r| r.strip_suffix(".parquet"))
            .and_then(|n| n.parse::<u64>().ok());
        (number.is_none(), number, name)
    };
    parts.sort_by_key(key);
    temps.sort();
    Ok(Parts { parts, temps })
}

/// The number `N` of a part named `part-N.parquet`.
pub(crate) fn part_number(path: &Path) -> Option<u64> {
    path.file_name()?
        .to_str()?
        .strip_prefix("part-")?
        .strip_suffix(".parquet")?
        .parse()
        .ok()
}

/// The number of rows in a part, from its footer.
pub(crate) fn part_rows(path: &Path) -> Result<u64, TraceError> {
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| not_parquet(path, &e))?;
    Ok(reader.metadata().file_metadata().num_rows().max(0) as u64)
}

pub(crate) fn not_parquet(path: &Path, e: &dyn std::fmt::Display) -> TraceError {
    TraceError::parse(
        path,
        0,
        format!(
            "not a readable Parquet file ({e}); a Parquet trace is a directory of part files written by `perennial run --format parquet`"
        ),
    )
}
