//! Reading an events table back, reporting what cannot be read instead of failing.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::row::{EVENT_COLUMNS, EventRow};
use crate::trace::TraceFormat;

/// Streams an events table back, one row at a time, in any of the three formats (by the
/// path, as [`TraceFormat::from_path`]). What it cannot read is reported by
/// [`EventReader::problems`] and skipped, never an error: a torn last line or a
/// half-written Parquet part (a killed writer), a line that is not an event, a file that
/// is not an events table.
///
/// # Examples
///
/// ```no_run
/// use perennial::trace::EventReader;
///
/// let mut events = EventReader::open("runs/warehouse-random-seed0.events.jsonl");
/// for e in &mut events {
///     println!("{} {} {}", e.step, e.event, e.detail());
/// }
/// for p in events.problems() {
///     eprintln!("warning: {p}");
/// }
/// ```
pub struct EventReader {
    path: PathBuf,
    source: Source,
    problems: Vec<String>,
}

pub(super) enum Source {
    Lines {
        lines: BufReader<File>,
        line: u64,
        csv: Option<csv::StringRecord>,
    },
    Parquet {
        parts: std::collections::VecDeque<PathBuf>,
        batch: Option<(RecordBatch, usize)>,
        reader: Option<(
            PathBuf,
            parquet::arrow::arrow_reader::ParquetRecordBatchReader,
        )>,
    },
    Done,
}

impl EventReader {
    /// Opens the table at `path`; a file that cannot be opened is a problem and yields no
    /// rows.
    pub fn open(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref().to_path_buf();
        let mut problems = Vec::new();
        let source = match TraceFormat::from_path(&path) {
            TraceFormat::Parquet => match crate::trace::parquet::layout::list_parts(&path) {
                Ok(p) => Source::Parquet {
                    parts: p.parts.into(),
                    batch: None,
                    reader: None,
                },
                Err(e) => {
                    problems.push(format!("{e}; no events read"));
                    Source::Done
                }
            },
            format => match File::open(&path) {
                Ok(f) => Source::Lines {
                    lines: BufReader::new(f),
                    line: 0,
                    csv: (format == TraceFormat::Csv).then(csv::StringRecord::new),
                },
                Err(e) => {
                    problems.push(format!("{}: {e}; no events read", path.display()));
                    Source::Done
                }
            },
        };
        EventReader {
            path,
            source,
            problems,
        }
    }

    /// What could not be read so far, one message per problem naming the file (and line).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    fn next_line(&mut self) -> Option<EventRow> {
        let Source::Lines { lines, line, csv } = &mut self.source else {
            return None;
        };
        let limit = crate::limits::MAX_TRACE_LINE_BYTES as u64;
        loop {
            let mut buf = Vec::new();
            let n = match std::io::Read::take(&mut *lines, limit + 1).read_until(b'\n', &mut buf) {
                Ok(n) => n,
                Err(e) => {
                    self.problems.push(format!(
                        "{}: {e}; the events after it were not read",
                        self.path.display()
                    ));
                    self.source = Source::Done;
                    return None;
                }
            };
            if n == 0 {
                self.source = Source::Done;
                return None;
            }
            *line += 1;
            let at = *line;
            let complete = buf.last() == Some(&b'\n');
            if !complete && n as u64 > limit {
                self.problems.push(format!(
                    "{}: line {at} is longer than {limit} bytes; it is not an events table, and the events after it were not read",
                    self.path.display()
                ));
                self.source = Source::Done;
                return None;
            }
            let parsed = match csv {
                Some(header) => parse_csv(&buf, header, at),
                None => serde_json::from_slice::<EventRow>(&buf)
                    .map(Some)
                    .map_err(|e| e.to_string()),
            };
            match parsed {
                Ok(Some(row)) => return Some(row),
                Ok(None) => continue,
                Err(why) if !complete => {
                    self.problems.push(format!(
                        "{}: line {at} is torn (the writer was killed mid-row; {why}); every complete event before it was read",
                        self.path.display()
                    ));
                }
                Err(why) => {
                    self.problems.push(format!(
                        "{}: line {at} is not an event ({why}); it was skipped",
                        self.path.display()
                    ));
                }
            }
        }
    }

    fn next_parquet(&mut self) -> Option<EventRow> {
        loop {
            let Source::Parquet {
                parts,
                batch,
                reader,
            } = &mut self.source
            else {
                return None;
            };
            if let Some((b, i)) = batch {
                if *i < b.num_rows() {
                    let row = row_of(b, *i);
                    *i += 1;
                    match row {
                        Ok(r) => return Some(r),
                        Err(why) => {
                            let part = reader.as_ref().map_or(&self.path, |(p, _)| p);
                            self.problems
                                .push(format!("{}: {why}; this part was skipped", part.display()));
                            *batch = None;
                            *reader = None;
                            continue;
                        }
                    }
                }
                *batch = None;
            }
            if let Some((part, r)) = reader {
                match r.next() {
                    Some(Ok(b)) => {
                        *batch = Some((b, 0));
                        continue;
                    }
                    Some(Err(e)) => {
                        self.problems.push(format!(
                            "{}: {e}; the rest of this part was skipped",
                            part.display()
                        ));
                    }
                    None => {}
                }
                *reader = None;
            }
            let part = parts.pop_front()?;
            let opened = File::open(&part)
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| e.to_string())
                })
                .and_then(|b| b.with_batch_size(8192).build().map_err(|e| e.to_string()));
            match opened {
                Ok(r) => *reader = Some((part, r)),
                Err(why) => self.problems.push(format!(
                    "{}: a torn, half-written or foreign part ({why}); it was skipped and every other part was read",
                    part.display()
                )),
            }
        }
    }
}

impl Iterator for EventReader {
    type Item = EventRow;

    fn next(&mut self) -> Option<EventRow> {
        match self.source {
            Source::Lines { .. } => self.next_line(),
            Source::Parquet { .. } => {
                let row = self.next_parquet();
                if row.is_none() {
                    self.source = Source::Done;
                }
                row
            }
            Source::Done => None,
        }
    }
}

/// One CSV line: `Ok(None)` for the header (which it records), the row otherwise.
pub(super) fn parse_csv(
    line: &[u8],
    header: &mut csv::StringRecord,
    at: u64,
) -> Result<Option<EventRow>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line);
    let mut record = csv::StringRecord::new();
    if !reader.read_record(&mut record).map_err(|e| e.to_string())? {
        return Err("an empty line".into());
    }
    if at == 1 {
        if record.iter().ne(EVENT_COLUMNS) {
            return Err(format!(
                "the header is not the events table's ({})",
                EVENT_COLUMNS.join(",")
            ));
        }
        *header = record;
        return Ok(None);
    }
    if record.len() != EVENT_COLUMNS.len() {
        return Err(format!(
            "{} cells where the events table has {}",
            record.len(),
            EVENT_COLUMNS.len()
        ));
    }
    record
        .deserialize::<EventRow>(Some(header))
        .map(Some)
        .map_err(|e| e.to_string())
}

pub(super) fn row_of(b: &RecordBatch, i: usize) -> Result<EventRow, String> {
    let col = |name: &str| {
        b.column_by_name(name)
            .ok_or_else(|| format!("no `{name}` column; it is not an events table"))
    };
    // The column `name` as an array of type `T`, or an error saying it is not `what`.
    fn typed<'b, T: 'static>(
        c: Result<&'b ArrayRef, String>,
        name: &str,
        what: &str,
    ) -> Result<&'b T, String> {
        c?.as_any()
            .downcast_ref::<T>()
            .ok_or_else(|| format!("column `{name}` is not {what}"))
    }
    let text = |name: &str| -> Result<Option<String>, String> {
        let a = typed::<StringArray>(col(name), name, "text")?;
        Ok(a.is_valid(i).then(|| a.value(i).to_string()))
    };
    let num = |name: &str| -> Result<Option<u64>, String> {
        let a = typed::<UInt64Array>(col(name), name, "an unsigned integer")?;
        Ok(a.is_valid(i).then(|| a.value(i)))
    };
    let flag = |name: &str| -> Result<Option<bool>, String> {
        let a = typed::<BooleanArray>(col(name), name, "boolean")?;
        Ok(a.is_valid(i).then(|| a.value(i)))
    };
    let needed = |v: Option<String>, name: &str| v.ok_or_else(|| format!("a null `{name}`"));
    Ok(EventRow {
        run_id: needed(text("run_id")?, "run_id")?,
        step: num("step")?.ok_or("a null `step`")?,
        event: needed(text("event")?, "event")?,
        from_regime: text("from_regime")?,
        to_regime: text("to_regime")?,
        origin: text("origin")?,
        kind: text("kind")?,
        target: num("target")?,
        start: num("start")?,
        duration: num("duration")?,
        episode: num("episode")?,
        terminated: flag("terminated")?,
        truncated: flag("truncated")?,
    })
}
