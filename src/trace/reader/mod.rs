//! The streaming trace reader: one or many files, constant memory, tolerant of a torn tail.
//!
//! One job per private submodule, re-exported flat:
//!
//! - `files`: [`TraceReader`], which walks the files in order (line files and Parquet
//!   traces), reads one line at a time and reports torn tails;
//! - `borrowed`: [`RowRef`], [`Terms`] and [`Located`], the rows `next_ref` lends out;
//! - `scan`: the hand-rolled JSON Lines scanner, the fast path of `next_ref`;
//! - `serde_path`: JSON Lines through serde, for the owned rows and for every line the
//!   scanner leaves alone, with the error messages;
//! - `csv_rows`: CSV records read against their header.

mod borrowed;
mod csv_rows;
mod files;
mod scan;
mod serde_path;

use std::path::Path;

pub use borrowed::{Located, RowRef, Terms};
pub use files::TraceReader;

/// A trace file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// JSON Lines (the default).
    #[default]
    Jsonl,
    /// CSV with a header line.
    Csv,
    /// Parquet: a directory of part files (or one `.parquet` file).
    Parquet,
}

impl TraceFormat {
    /// The extension of this format's traces (`jsonl`, `csv`, `parquet`).
    pub fn extension(self) -> &'static str {
        match self {
            TraceFormat::Jsonl => "jsonl",
            TraceFormat::Csv => "csv",
            TraceFormat::Parquet => "parquet",
        }
    }

    /// The format a path names: `.csv` is CSV, `.parquet` or a directory Parquet, anything
    /// else JSON Lines.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => TraceFormat::Csv,
            Some(e) if e.eq_ignore_ascii_case("parquet") => TraceFormat::Parquet,
            _ if path.is_dir() => TraceFormat::Parquet,
            _ => TraceFormat::Jsonl,
        }
    }
}
