//! The events table: one row per exogenous event of a run, written beside its trace.
//!
//! A run's trace says what the agent saw and earned; its events table says what happened
//! to it from outside, as rows of their own rather than something to infer from labels:
//! regime shifts (the scheduler), injected failures (the world, through
//! [`Env::drain_events`](crate::env::Env::drain_events)) and episode ends (the env); and,
//! for a neural agent, its [`Plasticity`] diagnostics after each window's update. It is
//! `<trace-stem>.events.<format>` beside the trace ([`events_path`]; for the default trace
//! path `runs/<run-id>.<format>` that is `runs/<run-id>.events.<format>`), in the trace's
//! format: JSON Lines, CSV, or a directory of Parquet part files like the trace's. Every
//! row has every column ([`EVENT_COLUMNS`]); the ones that do not apply to its `event`
//! are null (empty in CSV).
//!
//! `step` is the trace row the event belongs to: a shift's first row under the new label,
//! the row of the step that injected a failure, an episode's last row, a window's last row.
//! Rows are in step order; within a step a shift comes first, then failures in the world's
//! order, then the episode end, then the plasticity diagnostics.
//!
//! The writer keeps whole rows only, flushes with the trace and is synced at every
//! checkpoint; a checkpoint records its length (bytes, or rows for Parquet) and `--resume`
//! cuts the table back to it, so a killed and resumed run writes the same events as an
//! uninterrupted one. [`EventReader`] streams a table back and reports what it cannot read
//! (a torn last line, a half-written part, a line that is not an event) instead of failing.

mod columns;
mod reader;
mod row;
mod writer;

pub use reader::EventReader;
pub use row::{
    EPISODE_END, EVENT_COLUMNS, EventRow, FAILURE, FORK, PLASTICITY, Plasticity, REGIME_SHIFT,
    events_path, find_events, is_events_table,
};
pub use writer::EventWriter;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::WorldEvent;
    use crate::output::Scratch;
    use crate::regime::Origin;
    use crate::trace::TraceFormat;

    fn rows() -> Vec<EventRow> {
        let failure = WorldEvent {
            kind: "dock_breakdown".into(),
            target: Some(2),
            start: 5,
            duration: 3,
        };
        vec![
            EventRow::shift("r,1", 3, "calm", "storm \"x\"", Origin::Scheduled),
            EventRow::failure("r,1", 5, &failure),
            EventRow::episode_end("r,1", 9, 0, false, true),
        ]
    }

    #[test]
    fn every_format_reads_back_the_rows_written() {
        for format in [TraceFormat::Jsonl, TraceFormat::Csv, TraceFormat::Parquet] {
            let (_dir, path) = Scratch::file(&format!("rt.events.{}", format.extension()));
            let mut w = EventWriter::create(&path, format).unwrap();
            for r in rows() {
                w.write(r).unwrap();
            }
            w.close().unwrap();
            drop(w);
            let mut reader = EventReader::open(&path);
            let back: Vec<EventRow> = (&mut reader).collect();
            assert!(reader.problems().is_empty(), "{:?}", reader.problems());
            assert_eq!(back, rows(), "{format:?}");
        }
    }

    #[test]
    fn append_cuts_back_to_the_recorded_length() {
        for format in [TraceFormat::Jsonl, TraceFormat::Csv, TraceFormat::Parquet] {
            let (_dir, path) = Scratch::file(&format!("cut.events.{}", format.extension()));
            let mut w = EventWriter::create(&path, format).unwrap();
            let all = rows();
            w.write(all[0].clone()).unwrap();
            let at = w.sync().unwrap();
            w.write(all[1].clone()).unwrap();
            w.close().unwrap();
            drop(w);
            let mut w = EventWriter::append(&path, format, at).unwrap();
            w.write(all[2].clone()).unwrap();
            w.close().unwrap();
            drop(w);
            let back: Vec<EventRow> = EventReader::open(&path).collect();
            assert_eq!(back, vec![all[0].clone(), all[2].clone()], "{format:?}");
        }
    }

    #[test]
    fn a_torn_last_line_is_reported_and_earlier_events_are_kept() {
        let (_dir, path) = Scratch::file("torn.events.jsonl");
        let mut w = EventWriter::create(&path, TraceFormat::Jsonl).unwrap();
        for r in rows() {
            w.write(r).unwrap();
        }
        w.close().unwrap();
        drop(w);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 10);
        std::fs::write(&path, bytes).unwrap();
        let mut reader = EventReader::open(&path);
        assert_eq!((&mut reader).count(), 2);
        assert!(
            reader.problems()[0].contains("line 3 is torn"),
            "{:?}",
            reader.problems()
        );
    }
}
