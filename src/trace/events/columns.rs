//! A Parquet events table's buffered rows ([`EventColumns`]) and how a part of them is
//! written.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::row::EventView;
use crate::trace::TraceError;
use crate::trace::parquet::layout::part_name;
use crate::trace::parquet::pages::zstd_level;
use crate::trace::parquet::thread::{place_part, sync_parts};

/// Rows a Parquet part holds at most.
pub(super) const PART_ROWS: usize = 1 << 16;

pub(super) fn schema() -> Schema {
    let s = |n: &str| Field::new(n, DataType::Utf8, true);
    let u = |n: &str| Field::new(n, DataType::UInt64, true);
    let b = |n: &str| Field::new(n, DataType::Boolean, true);
    Schema::new(vec![
        Field::new("run_id", DataType::Utf8, false),
        Field::new("step", DataType::UInt64, false),
        Field::new("event", DataType::Utf8, false),
        s("from_regime"),
        s("to_regime"),
        s("origin"),
        s("kind"),
        u("target"),
        u("start"),
        u("duration"),
        u("episode"),
        b("terminated"),
        b("truncated"),
    ])
}

/// One part of a Parquet events table on its way to the part thread.
pub(super) struct EventPart {
    pub(super) rows: Box<EventColumns>,
    pub(super) index: usize,
    /// Fsynced, with the parts before it ([`place_part`]).
    pub(super) durable: bool,
}

/// No text: a null cell.
pub(super) const NO_TEXT: u32 = u32::MAX;

/// One buffered event, its texts as keys into [`EventColumns::texts`].
pub(super) struct Compact {
    pub(super) step: u64,
    /// `run_id`, `event`, `from_regime`, `to_regime`, `origin`, `kind`.
    pub(super) texts: [u32; 6],
    /// `target`, `start`, `duration`, `episode`.
    pub(super) numbers: [Option<u64>; 4],
    /// `terminated`, `truncated`.
    pub(super) flags: [Option<bool>; 2],
}

/// A Parquet events table's buffered rows: each distinct text is held once, so an event
/// costs no allocation (a random CartPole agent ends an episode every 22 steps or so).
#[derive(Default)]
pub(super) struct EventColumns {
    pub(super) rows: Vec<Compact>,
    pub(super) texts: Vec<String>,
    pub(super) keys: HashMap<String, u32>,
    /// Each text column's last key.
    pub(super) last: [u32; 6],
}

impl EventColumns {
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.rows.clear();
        self.texts.clear();
        self.keys.clear();
        self.last = [NO_TEXT; 6];
    }

    /// The key of `text` in column `column`: the column's last key when it holds the same
    /// text (the run id, and the event name of a run of episode ends), else hashed.
    pub(super) fn key(&mut self, column: usize, text: Option<&str>) -> u32 {
        let Some(text) = text else {
            return NO_TEXT;
        };
        let last = self.last[column];
        if self.text(last) == Some(text) {
            return last;
        }
        let k = match self.keys.get(text) {
            Some(&k) => k,
            None => {
                let k = self.texts.len() as u32;
                self.texts.push(text.to_string());
                self.keys.insert(text.to_string(), k);
                k
            }
        };
        self.last[column] = k;
        k
    }

    pub(super) fn push(&mut self, row: &EventView<'_>) {
        let texts = [
            self.key(0, Some(row.run_id)),
            self.key(1, Some(row.event)),
            self.key(2, row.from_regime),
            self.key(3, row.to_regime),
            self.key(4, row.origin),
            self.key(5, row.kind),
        ];
        self.rows.push(Compact {
            step: row.step,
            texts,
            numbers: [row.target, row.start, row.duration, row.episode],
            flags: [row.terminated, row.truncated],
        });
    }

    pub(super) fn text(&self, k: u32) -> Option<&str> {
        self.texts.get(k as usize).map(String::as_str)
    }
}

/// Writes `part` into the table `dir` as its part file (temp file and rename, fsynced
/// when the part is durable: [`place_part`]), returns the rows written and leaves the
/// part's buffer empty.
pub(super) fn write_part(
    dir: &Path,
    schema: &SchemaRef,
    part: &mut EventPart,
    unsynced: &mut Vec<PathBuf>,
) -> Result<u64, TraceError> {
    if part.rows.is_empty() {
        return if part.durable {
            sync_parts(dir, unsynced).map(|()| 0)
        } else {
            Ok(0)
        };
    }
    let name = part_name(part.index);
    let tmp = dir.join(format!(".{name}.tmp"));
    let err =
        |e: &dyn std::fmt::Display| TraceError::io(&tmp, std::io::Error::other(e.to_string()));
    let batch = to_batch(schema, &part.rows).map_err(|e| err(&e))?;
    let n = part.rows.len() as u64;
    part.rows.clear();
    // Nothing reads the statistics of an events table.
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(zstd_level()))
        .set_statistics_enabled(EnabledStatistics::None)
        .build();
    let mut file = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
    let mut writer =
        ArrowWriter::try_new(&mut file, schema.clone(), Some(props)).map_err(|e| err(&e))?;
    writer.write(&batch).map_err(|e| err(&e))?;
    writer.close().map_err(|e| err(&e))?;
    place_part(dir, file, &tmp, &dir.join(&name), part.durable, unsynced)?;
    Ok(n)
}

pub(super) fn to_batch(
    schema: &SchemaRef,
    cols: &EventColumns,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let rows = &cols.rows;
    let text = |i: usize| -> ArrayRef {
        Arc::new(
            rows.iter()
                .map(|r| cols.text(r.texts[i]))
                .collect::<StringArray>(),
        )
    };
    let num = |i: usize| -> ArrayRef {
        Arc::new(rows.iter().map(|r| r.numbers[i]).collect::<UInt64Array>())
    };
    let flag = |i: usize| -> ArrayRef {
        Arc::new(rows.iter().map(|r| r.flags[i]).collect::<BooleanArray>())
    };
    RecordBatch::try_new(
        schema.clone(),
        vec![
            text(0),
            Arc::new(rows.iter().map(|r| r.step).collect::<UInt64Array>()),
            text(1),
            text(2),
            text(3),
            text(4),
            text(5),
            num(0),
            num(1),
            num(2),
            num(3),
            flag(0),
            flag(1),
        ],
    )
}
