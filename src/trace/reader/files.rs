//! File iteration: the files in order, one line (or one Parquet row) at a time, and the
//! torn tails met on the way.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::TraceFormat;
use super::borrowed::{Located, RowRef};
use super::csv_rows::{csv_fields, parse_csv};
use super::scan;
use super::serde_path::{parse_jsonl, parse_jsonl_ref};
use crate::trace::error::{TornTail, TraceError};
use crate::trace::parquet::batch::Projection;
use crate::trace::parquet::reader::ParquetSource;
use crate::trace::row::COLUMNS;
use crate::trace::row::TraceRow;

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
            pending: crate::trace::path_queue(paths),
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
            match self.parquet_step(Projection::Rows) {
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
                    let ok = match self.current.as_ref()?.format {
                        TraceFormat::Jsonl => self.jsonl_line_parses(),
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

    /// Whether the current line is a whole JSON Lines row.
    fn jsonl_line_parses(&mut self) -> bool {
        let Some(file) = self.current.as_ref() else {
            return false;
        };
        let text = trim_newline(&self.line);
        parse_jsonl_ref(text, &mut self.prefix, &file.path, file.line_no).is_ok()
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
    fn parquet_step(&mut self, projection: Projection) -> Result<bool, TraceError> {
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
                self.parquet = Some(ParquetSource::open(path, projection));
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
                    Ok(h) if complete => {
                        // Checked once here, so the error names the header's line.
                        if let Some(missing) = missing_csv_column(&h) {
                            return Some(Err(TraceError::parse(
                                &file.path,
                                file.line_no,
                                format!(
                                    "the CSV header has no `{missing}` column; is this a perennial trace?"
                                ),
                            )));
                        }
                        file.csv_header = Some(h)
                    }
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
            match self.parquet_step(Projection::Transitions) {
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

pub(super) fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The first trace column a CSV header lacks (components and payouts are spread over
/// `c.`/`p.` columns, so they are not looked for by name).
fn missing_csv_column(header: &[String]) -> Option<&'static str> {
    COLUMNS
        .into_iter()
        .filter(|c| !matches!(*c, "components" | "payout"))
        .find(|c| !header.iter().any(|h| h == c))
}
