//! The streaming trace reader: one or many files, constant memory, tolerant of a torn tail.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::error::{TornTail, TraceError};
use super::parquet_reader::ParquetSource;
use super::row::TraceRow;
use crate::regime::{NotifyLevel, Origin};

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

/// Reads rows from one or more trace files in order, one line in memory at a time.
///
/// A Parquet trace (a directory of part files, see [`crate::trace`]) is read batch by
/// batch: [`TraceReader::next_ref`] reads only the metric columns, the owned iterator also
/// `obs` and `action`. There a row's `line` is its 1-based row within its part file, and a
/// part the writer never finished is reported as a torn tail. Formats can be mixed.
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
    csv_row: Option<TraceRow>,
    prefix: scan::Prefix,
    failed: bool,
    parquet: Option<ParquetSource>,
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
            csv_row: None,
            prefix: scan::Prefix::default(),
            failed: false,
            parquet: None,
        }
    }

    /// The torn tails met so far, one per file at most.
    pub fn torn_tails(&self) -> &[TornTail] {
        &self.torn
    }

    /// The next row, borrowed from the reader: no allocation for a JSON Lines row whose
    /// strings need no unescaping. Same rows, same errors and same torn-tail handling as
    /// the owned iterator; `obs` and `action` are checked for presence only.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use perennial::trace::TraceReader;
    ///
    /// let mut reader = TraceReader::open(&["runs/a.jsonl"]);
    /// let mut total = 0.0;
    /// while let Some(at) = reader.next_ref() {
    ///     total += at?.row.reward;
    /// }
    /// # Ok::<(), perennial::trace::TraceError>(())
    /// ```
    pub fn next_ref(&mut self) -> Option<Result<Located<'_>, TraceError>> {
        if self.failed {
            return None;
        }
        'files: loop {
            match self.parquet_step(false) {
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
                Ok(true) => {
                    let row = self.parquet.as_ref()?.row_ref();
                    self.failed = row.is_err();
                    return Some(row);
                }
                Ok(false) => {}
            }
            let Some(line) = self.next_line() else {
                if self.next_is_parquet() {
                    continue 'files;
                }
                return None;
            };
            match line {
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
                Ok(line) if line.complete => break,
                Ok(line) => {
                    // Only a file's unterminated last line gets here, so parsing it twice
                    // (to tell a torn tail from a row) costs nothing.
                    let file = self.current.as_ref()?;
                    let ok = match file.format {
                        TraceFormat::Jsonl => parse_jsonl_ref(
                            trim_newline(&self.line),
                            &mut self.prefix,
                            &file.path,
                            file.line_no,
                        )
                        .is_ok(),
                        TraceFormat::Csv => self.parse_csv_current().is_ok(),
                        TraceFormat::Parquet => false,
                    };
                    if ok {
                        break;
                    }
                    self.tear(line.start);
                }
            }
        }
        let file = self.current.as_ref()?;
        let row = match file.format {
            TraceFormat::Jsonl => parse_jsonl_ref(
                trim_newline(&self.line),
                &mut self.prefix,
                &file.path,
                file.line_no,
            ),
            TraceFormat::Csv | TraceFormat::Parquet => match self.parse_csv_current() {
                Ok(row) => Ok(RowRef::from_owned(self.csv_row.insert(row))),
                Err(e) => Err(e),
            },
        };
        if row.is_err() {
            self.failed = true;
        }
        Some(row.map(|row| Located {
            path: &file.path,
            line: file.line_no,
            row,
        }))
    }

    fn parse_csv_current(&self) -> Result<TraceRow, TraceError> {
        let file = self
            .current
            .as_ref()
            .ok_or_else(|| TraceError::parse(Path::new(""), 0, "no open file"))?;
        parse_csv(
            trim_newline(&self.line),
            file.csv_header.as_deref().unwrap_or_default(),
            &file.path,
            file.line_no,
        )
    }

    /// Records the current file's unterminated last line as torn and moves to the next file.
    fn tear(&mut self, byte_offset: u64) {
        if let Some(file) = self.current.take() {
            self.torn.push(TornTail {
                path: file.path,
                line: file.line_no,
                byte_offset,
            });
        }
    }

    /// True when the next file to open is a Parquet trace.
    fn next_is_parquet(&self) -> bool {
        self.current.is_none()
            && self
                .pending
                .as_slice()
                .first()
                .is_some_and(|p| TraceFormat::from_path(p) == TraceFormat::Parquet)
    }

    /// Moves the Parquet trace being read, or the next one to read, to its next row:
    /// `Ok(true)` when a Parquet row is current, `Ok(false)` when the next rows (if any)
    /// come from a line file.
    fn parquet_step(&mut self, transitions: bool) -> Result<bool, TraceError> {
        loop {
            if let Some(source) = self.parquet.as_mut() {
                let step = source.advance();
                self.torn.extend(source.take_torn());
                match step {
                    Some(Ok(())) => return Ok(true),
                    Some(Err(e)) => return Err(e),
                    None => self.parquet = None,
                }
            }
            if !self.next_is_parquet() {
                return Ok(false);
            }
            if let Some(path) = self.pending.next() {
                self.parquet = Some(ParquetSource::open(path, transitions));
            }
        }
    }

    /// Reads the next data line of the current or next line file into `self.line`, skipping
    /// blank lines and taking in a CSV header; `None` at the end or before a Parquet trace.
    fn next_line(&mut self) -> Option<Result<LineRead, TraceError>> {
        loop {
            if self.next_is_parquet() {
                return None;
            }
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
            // Bounded, so a file without newlines (`/dev/zero`) is an error, not a line
            // grown until memory runs out.
            let limit = crate::limits::MAX_TRACE_LINE_BYTES;
            let n = match std::io::Read::take(&mut file.reader, limit as u64 + 1)
                .read_until(b'\n', &mut self.line)
            {
                Ok(n) => n,
                Err(e) => return Some(Err(TraceError::io(&file.path, e))),
            };
            if n > limit {
                let line = file.line_no + 1;
                let path = file.path.clone();
                self.current = None;
                return Some(Err(TraceError::parse(
                    &path,
                    line,
                    format!(
                        "the line is longer than {limit} bytes, the limit for a trace row; is it a trace?"
                    ),
                )));
            }
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
                if !complete {
                    self.current = None;
                }
                continue;
            }
            if file.format == TraceFormat::Csv && file.csv_header.is_none() && file.line_no == 1 {
                match csv_fields(text) {
                    Ok(h) if complete => file.csv_header = Some(h),
                    _ if !complete => self.tear(start),
                    _ => {
                        return Some(Err(TraceError::parse(
                            &file.path,
                            file.line_no,
                            "the CSV header line is incomplete",
                        )));
                    }
                }
                continue;
            }
            return Some(Ok(LineRead { complete, start }));
        }
    }

    fn next_row(&mut self) -> Option<Result<TraceRow, TraceError>> {
        loop {
            match self.parquet_step(true) {
                Err(e) => return Some(Err(e)),
                Ok(true) => return Some(self.parquet.as_ref()?.row_owned()),
                Ok(false) => {}
            }
            let line = match self.next_line() {
                Some(Ok(line)) => line,
                Some(Err(e)) => return Some(Err(e)),
                None if self.next_is_parquet() => continue,
                None => return None,
            };
            let file = self.current.as_ref()?;
            let parsed = match file.format {
                TraceFormat::Jsonl => {
                    parse_jsonl(trim_newline(&self.line), &file.path, file.line_no)
                }
                TraceFormat::Csv | TraceFormat::Parquet => self.parse_csv_current(),
            };
            match parsed {
                Err(_) if !line.complete => self.tear(line.start),
                other => return Some(other),
            }
        }
    }
}

/// Where the line just read sits.
struct LineRead {
    /// The line ends with its newline.
    complete: bool,
    /// Byte offset of its start.
    start: u64,
}

/// A row borrowed from [`TraceReader::next_ref`], with the file and line it came from.
#[derive(Debug)]
pub struct Located<'a> {
    /// The file.
    pub path: &'a Path,
    /// 1-based line number.
    pub line: u64,
    /// The row.
    pub row: RowRef<'a>,
}

/// The trace columns of one row, borrowed from the line they were read from.
///
/// The fields mean what [`TraceRow`]'s fields mean; the maps keep the file's order.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowRef<'a> {
    /// Unique per run.
    #[serde(borrow)]
    pub run_id: Cow<'a, str>,
    /// Run seed.
    pub seed: u64,
    /// The agent's id.
    #[serde(borrow)]
    pub algorithm_id: Cow<'a, str>,
    /// World or task id.
    #[serde(borrow)]
    pub task: Cow<'a, str>,
    /// The run's notify level (`none` when the column is absent).
    #[serde(default)]
    pub notify: NotifyLevel,
    /// Global step index.
    pub step: u64,
    /// Env episode index.
    pub episode: u64,
    /// Step index within the episode.
    pub episode_step: u64,
    /// Total reward of the step.
    pub reward: f64,
    /// Per-step reward terms.
    #[serde(borrow)]
    pub components: Terms<'a>,
    /// Episode-end terms.
    #[serde(borrow)]
    pub payout: Terms<'a>,
    /// Label in force.
    #[serde(borrow)]
    pub regime: Cow<'a, str>,
    /// Why that label is in force.
    pub regime_origin: Origin,
    /// The env said terminal.
    pub terminated: bool,
    /// The env imposed a cutoff.
    pub truncated: bool,
    /// Configuration-specific upper bound for this step's reward.
    pub ceiling: Option<f64>,
    #[serde(default, rename = "obs")]
    pub(super) _obs: Option<IgnoredAny>,
    #[serde(default, rename = "action")]
    pub(super) _action: Option<IgnoredAny>,
}

impl<'a> RowRef<'a> {
    fn from_owned(row: &'a TraceRow) -> Self {
        let terms = |m: &'a BTreeMap<String, f64>| {
            Terms(
                m.iter()
                    .map(|(k, &v)| (Cow::Borrowed(k.as_str()), v))
                    .collect(),
            )
        };
        RowRef {
            run_id: Cow::Borrowed(&row.run_id),
            seed: row.seed,
            algorithm_id: Cow::Borrowed(&row.algorithm_id),
            task: Cow::Borrowed(&row.task),
            notify: row.notify,
            step: row.step,
            episode: row.episode,
            episode_step: row.episode_step,
            reward: row.reward,
            components: terms(&row.components),
            payout: terms(&row.payout),
            regime: Cow::Borrowed(&row.regime),
            regime_origin: row.regime_origin,
            terminated: row.terminated,
            truncated: row.truncated,
            ceiling: row.ceiling,
            _obs: row.obs.as_ref().map(|_| IgnoredAny),
            _action: row.action.as_ref().map(|_| IgnoredAny),
        }
    }

    /// The reward without episode-end payouts: `reward - sum(payout)`.
    pub fn reward_without_payout(&self) -> f64 {
        self.reward - self.payout.sum()
    }
}

/// A name -> value map of reward terms, borrowed and in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Terms<'a>(pub(super) Vec<(Cow<'a, str>, f64)>);

impl Terms<'_> {
    /// The `(name, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), *v))
    }

    /// The sum of the values.
    pub fn sum(&self) -> f64 {
        self.0.iter().map(|(_, v)| v).sum()
    }

    /// True when there is no term.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Terms<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for MapVisitor<'a> {
            type Value = Terms<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of term names to numbers")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Terms<'a>, M::Error> {
                let mut terms = Vec::new();
                while let Some((Name(k), v)) = map.next_entry::<Name<'a>, f64>()? {
                    terms.push((k, v));
                }
                Ok(Terms(terms))
            }
        }
        deserializer.deserialize_map(MapVisitor(std::marker::PhantomData))
    }
}

/// A map key, borrowed when the text needs no unescaping.
struct Name<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Name<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
            type Value = Name<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a term name")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Name<'a>, E> {
                Ok(Name(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Name<'a>, E> {
                Ok(Name(Cow::Owned(v.to_string())))
            }
        }
        deserializer.deserialize_str(StrVisitor(std::marker::PhantomData))
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

fn parse_jsonl(text: &[u8], path: &Path, line: u64) -> Result<TraceRow, TraceError> {
    check_object(text, path, line)?;
    let row: TraceRow =
        serde_json::from_slice(text).map_err(|e| TraceError::parse(path, line, row_error(&e)))?;
    check_finite(&row, path, line)?;
    Ok(row)
}

fn parse_jsonl_ref<'a>(
    text: &'a [u8],
    prefix: &mut scan::Prefix,
    path: &Path,
    line: u64,
) -> Result<RowRef<'a>, TraceError> {
    if let Some(row) = scan::row(text, prefix) {
        return Ok(row);
    }
    check_object(text, path, line)?;
    let row: RowRef<'a> =
        serde_json::from_slice(text).map_err(|e| TraceError::parse(path, line, row_error(&e)))?;
    let bad = !row.reward.is_finite()
        || row.components.iter().any(|(_, v)| !v.is_finite())
        || row.payout.iter().any(|(_, v)| !v.is_finite())
        || row.ceiling.is_some_and(|c| !c.is_finite());
    if bad {
        return Err(not_finite(path, line, row.step));
    }
    Ok(row)
}

fn check_finite(row: &TraceRow, path: &Path, line: u64) -> Result<(), TraceError> {
    let bad = !row.reward.is_finite()
        || row.components.values().any(|v| !v.is_finite())
        || row.payout.values().any(|v| !v.is_finite())
        || row.ceiling.is_some_and(|c| !c.is_finite());
    if bad {
        return Err(not_finite(path, line, row.step));
    }
    Ok(())
}

fn not_finite(path: &Path, line: u64, step: u64) -> TraceError {
    TraceError::parse(
        path,
        line,
        format!("step {step}: a reward, component, payout or ceiling is not a finite number"),
    )
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
    let notify = match header.iter().position(|h| h == "notify") {
        None => NotifyLevel::None,
        Some(i) => fields[i]
            .parse()
            .map_err(|e: String| err(format!("column `notify`: {e}")))?,
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
        notify,
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

/// A hand-rolled scanner for trace rows, several times faster than serde on the rows the
/// writers produce.
///
/// It accepts a strict subset of what the serde path accepts (every column exactly once, in
/// any order, strings without escapes, no `obs` / `action`) and gives the value serde would
/// give: numbers follow the JSON grammar and are parsed by the standard library, which rounds
/// correctly as `serde_json`'s `float_roundtrip` does. Anything else returns `None` and goes
/// through serde, which then yields the same row or the error message.
mod scan {
    use std::borrow::Cow;

    use super::{RowRef, Terms};
    use crate::regime::{NotifyLevel, Origin};
    use crate::trace::COLUMNS;

    /// The index of the first `"`, `\\` or control byte at or after `i`: eight bytes at a
    /// time, since string scanning dominates parsing. (The lowest flagged byte of each word
    /// is exact; borrows can only flag bytes above it.)
    fn special(b: &[u8], mut i: usize) -> Option<usize> {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
        while let Some(chunk) = b.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let w = u64::from_le_bytes(word);
            let hits = zero(w ^ (ONES * u64::from(b'"')))
                | zero(w ^ (ONES * u64::from(b'\\')))
                | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
            if hits != 0 {
                return Some(i + (hits.trailing_zeros() / 8) as usize);
            }
            i += 8;
        }
        b[i..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
            .map(|p| i + p)
    }

    /// A cursor over a line already checked to be UTF-8, so every slice between ASCII
    /// delimiters is a `str` without another check.
    struct Scan<'a> {
        text: &'a str,
        b: &'a [u8],
        i: usize,
        /// Where the last string read lies.
        last: (usize, usize),
    }

    /// The identity columns a run repeats on every row, with the bytes they were read from:
    /// a line that starts with the same bytes has the same values at the same offsets, so
    /// the scanner skips them.
    #[derive(Debug, Default)]
    pub(super) struct Prefix {
        bytes: Vec<u8>,
        seed: u64,
        /// `run_id`, `algorithm_id` and `task`.
        spans: [(usize, usize); 3],
    }

    impl<'a> Scan<'a> {
        fn ws(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
                self.i += 1;
            }
        }

        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.b.get(self.i).copied()
        }

        fn byte(&mut self, c: u8) -> Option<()> {
            (self.peek()? == c).then(|| self.i += 1)
        }

        fn str(&mut self) -> Option<&'a str> {
            self.byte(b'"')?;
            let start = self.i;
            self.i = special(self.b, start)?;
            if self.b[self.i] != b'"' {
                return None;
            }
            let s = self.text.get(start..self.i)?;
            self.last = (start, self.i);
            self.i += 1;
            Some(s)
        }

        fn digits(&mut self) -> usize {
            let start = self.i;
            while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            self.i - start
        }

        fn number(&mut self) -> Option<(&'a str, bool)> {
            self.ws();
            let start = self.i;
            if self.b.get(self.i) == Some(&b'-') {
                self.i += 1;
            }
            match *self.b.get(self.i)? {
                b'0' => self.i += 1,
                b'1'..=b'9' => {
                    self.digits();
                }
                _ => return None,
            }
            let mut integer = true;
            if self.b.get(self.i) == Some(&b'.') {
                self.i += 1;
                integer = false;
                if self.digits() == 0 {
                    return None;
                }
            }
            if let Some(b'e' | b'E') = self.b.get(self.i) {
                self.i += 1;
                integer = false;
                if let Some(b'+' | b'-') = self.b.get(self.i) {
                    self.i += 1;
                }
                if self.digits() == 0 {
                    return None;
                }
            }
            Some((self.text.get(start..self.i)?, integer))
        }

        fn u64(&mut self) -> Option<u64> {
            match self.number()? {
                (text, true) => text.parse().ok(),
                _ => None,
            }
        }

        fn f64(&mut self) -> Option<f64> {
            let v: f64 = self.number()?.0.parse().ok()?;
            v.is_finite().then_some(v)
        }

        fn literal(&mut self, word: &[u8]) -> bool {
            self.ws();
            let found = self.b[self.i..].starts_with(word);
            if found {
                self.i += word.len();
            }
            found
        }

        fn bool(&mut self) -> Option<bool> {
            if self.literal(b"true") {
                Some(true)
            } else if self.literal(b"false") {
                Some(false)
            } else {
                None
            }
        }

        fn terms(&mut self) -> Option<Terms<'a>> {
            self.byte(b'{')?;
            let mut terms = Vec::new();
            if self.peek()? == b'}' {
                self.i += 1;
                return Some(Terms(terms));
            }
            loop {
                let name = self.str()?;
                self.byte(b':')?;
                terms.push((Cow::Borrowed(name), self.f64()?));
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        return Some(Terms(terms));
                    }
                    _ => return None,
                }
            }
        }
    }

    /// The row in `text`, or `None` to let serde decide.
    pub(super) fn row<'a>(line: &'a [u8], prefix: &mut Prefix) -> Option<RowRef<'a>> {
        let text = std::str::from_utf8(line).ok()?;
        let mut s = Scan {
            text,
            b: line,
            i: 0,
            last: (0, 0),
        };
        let mut seen = 0u16;
        let (mut run_id, mut algorithm_id, mut task, mut regime) = ("", "", "", "");
        let (mut seed, mut step, mut episode, mut episode_step) = (0, 0, 0, 0);
        let mut reward = 0.0;
        let (mut components, mut payout) = (Terms::default(), Terms::default());
        let mut origin = Origin::Initial;
        let (mut terminated, mut truncated) = (false, false);
        let mut ceiling = None;
        let mut notify = None;
        let mut next = 0;
        let mut spans = [(0, 0); 3];
        // True while the columns come in DESIGN order from the line's start.
        let mut in_order;
        if !prefix.bytes.is_empty() && line.starts_with(&prefix.bytes) {
            let span = |k: usize| text.get(prefix.spans[k].0..prefix.spans[k].1);
            (run_id, algorithm_id, task) = (span(0)?, span(1)?, span(2)?);
            seed = prefix.seed;
            seen = 0b1111;
            next = 4;
            s.i = prefix.bytes.len();
            in_order = false;
        } else {
            s.byte(b'{')?;
            in_order = true;
        }
        loop {
            let key = s.str()?;
            s.byte(b':')?;
            // Writers emit the columns in DESIGN order: one comparison finds the key.
            let bit = if COLUMNS.get(next).is_some_and(|c| {
                c.len() == key.len() && c.bytes().zip(key.bytes()).all(|(a, b)| a == b)
            }) {
                next
            } else if key == "notify" {
                // Optional, written after `task` only when not `none`; outside COLUMNS.
                if notify.is_some() {
                    return None;
                }
                notify = Some(match s.str()? {
                    "none" => NotifyLevel::None,
                    "flag" => NotifyLevel::Flag,
                    "delta" => NotifyLevel::Delta,
                    "label" => NotifyLevel::Label,
                    _ => return None,
                });
                match s.peek()? {
                    b',' => s.i += 1,
                    _ => return None,
                }
                continue;
            } else {
                COLUMNS.iter().position(|c| *c == key)?
            };
            in_order &= bit == next;
            next = bit + 1;
            match bit {
                0 => {
                    run_id = s.str()?;
                    spans[0] = s.last;
                }
                1 => seed = s.u64()?,
                2 => {
                    algorithm_id = s.str()?;
                    spans[1] = s.last;
                }
                3 => {
                    task = s.str()?;
                    spans[2] = s.last;
                }
                4 => step = s.u64()?,
                5 => episode = s.u64()?,
                6 => episode_step = s.u64()?,
                7 => reward = s.f64()?,
                8 => components = s.terms()?,
                9 => payout = s.terms()?,
                10 => regime = s.str()?,
                11 => {
                    origin = match s.str()? {
                        "initial" => Origin::Initial,
                        "scheduled" => Origin::Scheduled,
                        "stochastic" => Origin::Stochastic,
                        "manual" => Origin::Manual,
                        _ => return None,
                    }
                }
                12 => terminated = s.bool()?,
                13 => truncated = s.bool()?,
                _ => {
                    ceiling = if s.literal(b"null") {
                        None
                    } else {
                        Some(s.f64()?)
                    }
                }
            }
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            match s.peek()? {
                b',' => s.i += 1,
                b'}' => {
                    s.i += 1;
                    break;
                }
                _ => return None,
            }
            if in_order && bit == 3 {
                prefix.bytes.clear();
                prefix.bytes.extend_from_slice(&line[..s.i]);
                prefix.seed = seed;
                prefix.spans = spans;
            }
        }
        s.ws();
        if s.i != text.len() || seen != (1 << COLUMNS.len()) - 1 {
            return None;
        }
        Some(RowRef {
            run_id: Cow::Borrowed(run_id),
            seed,
            algorithm_id: Cow::Borrowed(algorithm_id),
            task: Cow::Borrowed(task),
            notify: notify.unwrap_or_default(),
            step,
            episode,
            episode_step,
            reward,
            components,
            payout,
            regime: Cow::Borrowed(regime),
            regime_origin: origin,
            terminated,
            truncated,
            ceiling,
            _obs: None,
            _action: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_row(text: &str) -> Option<RowRef<'_>> {
        serde_json::from_str(text).ok()
    }

    const ROW: &str = r#"{"run_id":"r","seed":7,"algorithm_id":"a","task":"t","step":12,"episode":1,"episode_step":3,"reward":0.9805358363714054,"components":{"progress":1.040191854464891,"cost":-5e-3},"payout":{"bonus":10},"regime":"calm","regime_origin":"scheduled","terminated":true,"truncated":false,"ceiling":13.0}"#;

    #[test]
    fn scanner_reads_writer_rows_exactly_as_serde_does() {
        let fast = scan::row(ROW.as_bytes(), &mut scan::Prefix::default()).unwrap();
        assert_eq!(Some(fast.clone()), serde_row(ROW));
        assert!(matches!(fast.run_id, Cow::Borrowed(_)));
        let spaced = ROW.replace(',', " ,\t").replace(':', ": ");
        let fresh = || scan::Prefix::default();
        assert_eq!(
            scan::row(spaced.as_bytes(), &mut fresh()),
            serde_row(&spaced)
        );
        let null_ceiling = ROW.replace("13.0", "null");
        let row = scan::row(null_ceiling.as_bytes(), &mut fresh()).unwrap();
        assert_eq!(row.ceiling, None);
    }

    #[test]
    fn scanner_reuses_a_run_prefix_only_while_it_matches() {
        let mut prefix = scan::Prefix::default();
        let rows = [
            ROW.to_string(),
            ROW.replace(r#""step":12"#, r#""step":13"#),
            ROW.replace(r#""run_id":"r""#, r#""run_id":"s""#),
            ROW.replace(r#""task":"t""#, r#""task":"tt""#),
            ROW.replace(r#""seed":7"#, r#""seed":8"#),
            ROW.replace(r#"{"run_id":"r","seed":7,"#, r#"{"seed":7,"run_id":"r","#),
            ROW.to_string(),
        ];
        for row in &rows {
            assert_eq!(
                scan::row(row.as_bytes(), &mut prefix),
                serde_row(row),
                "{row}"
            );
        }
    }

    #[test]
    fn scanner_leaves_everything_unusual_to_serde() {
        let cases = [
            ROW.replace(r#""r""#, r#""r\u00e9""#),
            ROW.replace(r#""step":12"#, r#""step":12.0"#),
            ROW.replace(r#""step":12"#, r#""step":012"#),
            ROW.replace(r#""reward":0.98"#, r#""reward":1e999"#),
            ROW.replace(r#""reward":0.98"#, r#""reward":null"#),
            ROW.replace(r#""seed":7,"#, ""),
            ROW.replace(r#""seed":7"#, r#""seed":7,"seed":7"#),
            ROW.replace(r#""ceiling""#, r#""obs":[1],"action":0,"ceiling""#),
            ROW.replace(r#""ceiling""#, r#""extra":1,"ceiling""#),
            ROW.replace("scheduled", "whenever"),
            format!("{ROW} x"),
        ];
        for case in &cases {
            let mut prefix = scan::Prefix::default();
            assert!(scan::row(ROW.as_bytes(), &mut prefix).is_some());
            assert!(scan::row(case.as_bytes(), &mut prefix).is_none(), "{case}");
        }
        assert!(serde_row(&cases[0]).is_some());
        assert!(serde_row(&cases[7]).is_some());
        for case in &cases[1..7] {
            assert!(serde_row(case).is_none(), "{case}");
        }
    }
}
