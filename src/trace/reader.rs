//! The streaming trace reader: one or many files, constant memory, tolerant of a torn tail.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::error::{TornTail, TraceError};
use super::row::TraceRow;
use crate::regime::Origin;

/// A trace file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// JSON Lines (the default).
    #[default]
    Jsonl,
    /// CSV with a header line.
    Csv,
}

impl TraceFormat {
    /// The format a path's extension names (`.csv` is CSV, anything else JSON Lines).
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => TraceFormat::Csv,
            _ => TraceFormat::Jsonl,
        }
    }
}

/// Reads rows from one or more trace files in order, one line in memory at a time.
///
/// A last line without its newline that does not parse is a torn tail (a writer killed
/// mid-row): it is skipped and reported by [`TraceReader::torn_tails`]; every complete row
/// before it is returned. Any other bad line is an error naming the file and line.
///
/// # Examples
///
/// ```no_run
/// use perennial::trace::TraceReader;
///
/// let mut reader = TraceReader::open(&["runs/a.jsonl", "runs/b.jsonl"]);
/// for row in &mut reader {
///     let row = row?;
///     println!("{} {} {}", row.run_id, row.step, row.reward);
/// }
/// for torn in reader.torn_tails() {
///     eprintln!("warning: {torn}");
/// }
/// # Ok::<(), perennial::trace::TraceError>(())
/// ```
pub struct TraceReader {
    pending: std::vec::IntoIter<PathBuf>,
    current: Option<OpenFile>,
    torn: Vec<TornTail>,
    line: Vec<u8>,
    failed: bool,
}

struct OpenFile {
    path: PathBuf,
    reader: BufReader<File>,
    format: TraceFormat,
    line_no: u64,
    offset: u64,
    csv_header: Option<Vec<String>>,
}

impl TraceReader {
    /// A reader over `paths`, read in the order given.
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Self {
        TraceReader {
            pending: paths
                .iter()
                .map(|p| p.as_ref().to_path_buf())
                .collect::<Vec<_>>()
                .into_iter(),
            current: None,
            torn: Vec::new(),
            line: Vec::with_capacity(512),
            failed: false,
        }
    }

    /// The torn tails met so far, one per file at most.
    pub fn torn_tails(&self) -> &[TornTail] {
        &self.torn
    }

    fn next_row(&mut self) -> Option<Result<TraceRow, TraceError>> {
        loop {
            if self.current.is_none() {
                let path = self.pending.next()?;
                let file = match File::open(&path) {
                    Ok(f) => f,
                    Err(e) => return Some(Err(TraceError::io(&path, e))),
                };
                self.current = Some(OpenFile {
                    format: TraceFormat::from_path(&path),
                    path,
                    reader: BufReader::with_capacity(1 << 16, file),
                    line_no: 0,
                    offset: 0,
                    csv_header: None,
                });
            }
            let file = self.current.as_mut()?;
            self.line.clear();
            let n = match file.reader.read_until(b'\n', &mut self.line) {
                Ok(n) => n,
                Err(e) => return Some(Err(TraceError::io(&file.path, e))),
            };
            if n == 0 {
                self.current = None;
                continue;
            }
            file.line_no += 1;
            let start = file.offset;
            file.offset += n as u64;
            let complete = self.line.last() == Some(&b'\n');
            let text = trim_newline(&self.line);
            if text.iter().all(u8::is_ascii_whitespace) {
                if complete {
                    continue;
                }
                self.current = None;
                continue;
            }
            let parsed = match file.format {
                TraceFormat::Jsonl => parse_jsonl(text, &file.path, file.line_no),
                TraceFormat::Csv if file.csv_header.is_none() && file.line_no == 1 => {
                    match csv_fields(text) {
                        Ok(h) if complete => {
                            file.csv_header = Some(h);
                            continue;
                        }
                        Ok(_) | Err(_) => Err(TraceError::parse(
                            &file.path,
                            file.line_no,
                            "the CSV header line is incomplete",
                        )),
                    }
                }
                TraceFormat::Csv => parse_csv(
                    text,
                    file.csv_header.as_deref().unwrap_or_default(),
                    &file.path,
                    file.line_no,
                ),
            };
            match parsed {
                Err(_) if !complete => {
                    self.torn.push(TornTail {
                        path: file.path.clone(),
                        line: file.line_no,
                        byte_offset: start,
                    });
                    self.current = None;
                }
                other => return Some(other),
            }
        }
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceRow, TraceError>;

    /// The next row; after an error the reader stops.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.next_row();
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn parse_jsonl(text: &[u8], path: &Path, line: u64) -> Result<TraceRow, TraceError> {
    let row: TraceRow = serde_json::from_slice(text).map_err(|e| {
        TraceError::parse(
            path,
            line,
            format!("not a valid trace row ({e}); each line must be one JSON object with the trace columns"),
        )
    })?;
    check_finite(&row, path, line)?;
    Ok(row)
}

fn check_finite(row: &TraceRow, path: &Path, line: u64) -> Result<(), TraceError> {
    let bad = !row.reward.is_finite()
        || row.components.values().any(|v| !v.is_finite())
        || row.payout.values().any(|v| !v.is_finite())
        || row.ceiling.is_some_and(|c| !c.is_finite());
    if bad {
        return Err(TraceError::parse(
            path,
            line,
            format!(
                "step {}: a reward, component, payout or ceiling is not a finite number",
                row.step
            ),
        ));
    }
    Ok(())
}

fn csv_fields(text: &[u8]) -> Result<Vec<String>, csv::Error> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text);
    let mut record = csv::StringRecord::new();
    reader.read_record(&mut record)?;
    Ok(record.iter().map(str::to_string).collect())
}

fn parse_csv(
    text: &[u8],
    header: &[String],
    path: &Path,
    line: u64,
) -> Result<TraceRow, TraceError> {
    let err = |m: String| TraceError::parse(path, line, m);
    let fields = csv_fields(text).map_err(|e| err(format!("not a valid CSV record: {e}")))?;
    if fields.len() != header.len() {
        return Err(err(format!(
            "the record has {} fields but the header has {}",
            fields.len(),
            header.len()
        )));
    }
    let get = |name: &str| -> Result<&str, TraceError> {
        header
            .iter()
            .position(|h| h == name)
            .map(|i| fields[i].as_str())
            .ok_or_else(|| {
                err(format!(
                    "the CSV header has no `{name}` column; is this a perennial trace?"
                ))
            })
    };
    let num = |name: &str| -> Result<u64, TraceError> {
        get(name)?
            .parse()
            .map_err(|_| err(format!("column `{name}` must be a non-negative integer")))
    };
    let real = |name: &str, v: &str| -> Result<f64, TraceError> {
        v.parse()
            .map_err(|_| err(format!("column `{name}` must be a number, found `{v}`")))
    };
    let flag = |name: &str| -> Result<bool, TraceError> {
        get(name)?
            .parse()
            .map_err(|_| err(format!("column `{name}` must be true or false")))
    };
    let mut components = BTreeMap::new();
    let mut payout = BTreeMap::new();
    for (h, v) in header.iter().zip(&fields) {
        if let Some(name) = h.strip_prefix("c.") {
            components.insert(name.to_string(), real(h, v)?);
        } else if let Some(name) = h.strip_prefix("p.")
            && !v.is_empty()
        {
            payout.insert(name.to_string(), real(h, v)?);
        }
    }
    let origin = match get("regime_origin")? {
        "initial" => Origin::Initial,
        "scheduled" => Origin::Scheduled,
        "stochastic" => Origin::Stochastic,
        "manual" => Origin::Manual,
        other => {
            return Err(err(format!(
                "column `regime_origin` must be initial, scheduled, stochastic or manual, found `{other}`"
            )));
        }
    };
    let ceiling = match get("ceiling")? {
        "" => None,
        v => Some(real("ceiling", v)?),
    };
    let json = |name: &str| -> Result<Option<serde_json::Value>, TraceError> {
        match header.iter().position(|h| h == name) {
            None => Ok(None),
            Some(i) => serde_json::from_str(&fields[i])
                .map(Some)
                .map_err(|e| err(format!("column `{name}` must be JSON: {e}"))),
        }
    };
    let obs = match json("obs")? {
        None => None,
        Some(v) => Some(
            serde_json::from_value(v)
                .map_err(|e| err(format!("column `obs` must be an array of numbers: {e}")))?,
        ),
    };
    let row = TraceRow {
        run_id: get("run_id")?.to_string(),
        seed: num("seed")?,
        algorithm_id: get("algorithm_id")?.to_string(),
        task: get("task")?.to_string(),
        step: num("step")?,
        episode: num("episode")?,
        episode_step: num("episode_step")?,
        reward: real("reward", get("reward")?)?,
        components,
        payout,
        regime: get("regime")?.to_string(),
        regime_origin: origin,
        terminated: flag("terminated")?,
        truncated: flag("truncated")?,
        ceiling,
        obs,
        action: json("action")?,
    };
    check_finite(&row, path, line)?;
    Ok(row)
}
