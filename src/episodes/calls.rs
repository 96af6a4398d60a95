//! Model calls as Steps: a run's transcript met with its trace rows, one Step per call.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::error::EpisodeError;
use super::model::Step;
use super::transcript::{Conversation, TranscriptCall, TranscriptError, TranscriptReader};
use crate::trace::TraceRow;

/// The transcripts of an export, each matched to its run by run id, and the calls of the
/// run being read, turned into Steps as the rows they let pass arrive.
///
/// A call belongs to the row of its last hour (`step + hours - 1`; `step` for a call that
/// let no hour pass), so it lands in the episode or chunk where its reward is earned, and
/// its reward is the sum of the rewards of rows `step` to `step + hours - 1`.
pub(super) struct Calls {
    /// Every transcript with the run id of its first line, and whether its run was read.
    files: Vec<(PathBuf, String, bool)>,
    run: Option<RunCalls>,
    /// Calls made after their run's last row (queries, or calls refused because the run
    /// had ended): no row, no reward, left out.
    pub(super) after_end: u64,
}

/// The calls of one run, as they are turned into Steps.
struct RunCalls {
    run_id: String,
    reader: TranscriptReader,
    /// The next call not yet turned into a Step, and its line.
    next: Option<(TranscriptCall, u64)>,
    conversation: Conversation,
    /// Rows from the next call's step on: (step, reward, ended the episode).
    rows: VecDeque<(u64, f64, bool)>,
    /// The last row's step.
    last_row: Option<u64>,
}

impl Calls {
    /// Opens every transcript and reads the run id of its first call.
    ///
    /// # Errors
    ///
    /// A transcript cannot be read, holds no call, or has the run id of one before it.
    pub(super) fn open<P: AsRef<Path>>(transcripts: &[P]) -> Result<Self, EpisodeError> {
        let mut files: Vec<(PathBuf, String, bool)> = Vec::new();
        for path in transcripts {
            let path = path.as_ref();
            let mut reader = TranscriptReader::open(path)?;
            let first = match reader.next() {
                Some(call) => call?,
                None => {
                    return Err(transcript_error(
                        path,
                        0,
                        None,
                        "holds no model call; pass the transcript the run wrote".into(),
                    ));
                }
            };
            if let Some((earlier, _, _)) = files.iter().find(|(_, id, _)| *id == first.run_id) {
                return Err(transcript_error(
                    path,
                    reader.line(),
                    Some("run_id"),
                    format!(
                        "is `{}`, the run of {} too; pass one transcript per run",
                        first.run_id,
                        earlier.display()
                    ),
                ));
            }
            files.push((path.to_path_buf(), first.run_id, false));
        }
        Ok(Calls {
            files,
            run: None,
            after_end: 0,
        })
    }

    /// The Steps of the calls whose last hour is `row`.
    ///
    /// # Errors
    ///
    /// The run has no transcript, a transcript line is bad, or a call's hours lie before
    /// the run's first row.
    pub(super) fn row(&mut self, row: &TraceRow) -> Result<Vec<Step>, EpisodeError> {
        if self.run.as_ref().is_none_or(|r| r.run_id != row.run_id) {
            self.end_run()?;
            self.run = Some(self.start_run(&row.run_id)?);
        }
        let Some(run) = self.run.as_mut() else {
            return Ok(Vec::new());
        };
        run.last_row = Some(row.step);
        run.rows
            .push_back((row.step, row.reward, row.terminated || row.truncated));
        let mut steps = Vec::new();
        while let Some((call, line)) = &run.next {
            let last = call.step + call.hours.saturating_sub(1);
            if last > row.step {
                break;
            }
            if last < row.step || run.rows.front().is_none_or(|(s, _, _)| *s > call.step) {
                return Err(transcript_error(
                    run.reader.path(),
                    *line,
                    Some("step"),
                    format!(
                        "is {} (hours {}), but the trace of run `{}` has no row there; the rows around it start at step {}",
                        call.step,
                        call.hours,
                        run.run_id,
                        run.rows.front().map_or(row.step, |r| r.0)
                    ),
                ));
            }
            let after = call.step + call.hours;
            let covered = run
                .rows
                .iter()
                .filter(|(s, _, _)| *s >= call.step && *s < after);
            let reward: f64 = covered.clone().map(|r| r.1).sum();
            let done = covered.clone().next_back().is_some_and(|r| r.2);
            if let Some((call, _)) = run.next.take() {
                steps.push(step_of(
                    &run.run_id,
                    call,
                    &mut run.conversation,
                    reward,
                    done,
                ));
            }
            run.next = next_call(&mut run.reader)?;
            while run.rows.front().is_some_and(|(s, _, _)| *s < after) {
                run.rows.pop_front();
            }
        }
        // Rows no call will let pass are not kept.
        match &run.next {
            Some((call, _)) => {
                while run.rows.front().is_some_and(|(s, _, _)| *s < call.step) {
                    run.rows.pop_front();
                }
            }
            None => run.rows.clear(),
        }
        Ok(steps)
    }

    /// Checks that every run's calls were all met and every transcript's run was read.
    ///
    /// # Errors
    ///
    /// A call lies past its run's trace, or a transcript's run is in none of the traces.
    pub(super) fn finish(&mut self) -> Result<(), EpisodeError> {
        self.end_run()?;
        match self.files.iter().find(|(_, _, read)| !read) {
            Some((path, run_id, _)) => Err(transcript_error(
                path,
                1,
                Some("run_id"),
                format!(
                    "is `{run_id}`, which none of the traces holds; pass the trace of this run, or the transcript of the trace's run"
                ),
            )),
            None => Ok(()),
        }
    }

    fn start_run(&mut self, run_id: &str) -> Result<RunCalls, EpisodeError> {
        let Some(entry) = self.files.iter_mut().find(|(_, id, _)| id == run_id) else {
            let known: Vec<String> = self
                .files
                .iter()
                .map(|(p, id, _)| format!("{} (run `{id}`)", p.display()))
                .collect();
            return Err(EpisodeError::InvalidArgument(format!(
                "run `{run_id}` of the traces has no transcript; the transcripts given are {}; pass the run's <run-id>.transcript.jsonl",
                known.join(", ")
            )));
        };
        if entry.2 {
            return Err(EpisodeError::InvalidArgument(format!(
                "the rows of run `{run_id}` come in two places of the traces; pass each run's trace files whole and in order"
            )));
        }
        entry.2 = true;
        let mut reader = TranscriptReader::open(&entry.0)?;
        let next = next_call(&mut reader)?;
        Ok(RunCalls {
            run_id: run_id.to_string(),
            reader,
            next,
            conversation: Conversation::new(),
            rows: VecDeque::new(),
            last_row: None,
        })
    }

    /// Reads the rest of the current run's calls: those after its last row that let no
    /// hour pass are left out and counted; any other is past the trace.
    fn end_run(&mut self) -> Result<(), EpisodeError> {
        let Some(mut run) = self.run.take() else {
            return Ok(());
        };
        let end = run.last_row.map_or(0, |s| s + 1);
        while let Some((call, line)) = run.next.take() {
            if call.step != end || call.hours != 0 {
                return Err(transcript_error(
                    run.reader.path(),
                    line,
                    Some("step"),
                    format!(
                        "is {} with {} hours, past the trace of run `{}`, which ends at step {}; pass the whole trace, or the transcript of this trace",
                        call.step,
                        call.hours,
                        run.run_id,
                        end.saturating_sub(1)
                    ),
                ));
            }
            self.after_end += 1;
            run.next = next_call(&mut run.reader)?;
        }
        Ok(())
    }
}

fn next_call(reader: &mut TranscriptReader) -> Result<Option<(TranscriptCall, u64)>, EpisodeError> {
    match reader.next() {
        Some(Ok(call)) => Ok(Some((call, reader.line()))),
        Some(Err(e)) => Err(e.into()),
        None => Ok(None),
    }
}

fn transcript_error(path: &Path, line: u64, field: Option<&str>, message: String) -> EpisodeError {
    EpisodeError::Transcript(TranscriptError {
        path: path.to_path_buf(),
        line,
        field: field.map(str::to_string),
        message,
        source: None,
    })
}

/// The Step of one model call: the conversation up to and including its assistant
/// message, what it observed last, its text and reasoning, its tool calls as the action.
fn step_of(
    run_id: &str,
    call: TranscriptCall,
    conversation: &mut Conversation,
    reward: f64,
    done: bool,
) -> Step {
    if call.starts_conversation() {
        *conversation = Conversation::new();
    }
    let observation = call
        .observation()
        .cloned()
        .unwrap_or_else(|| Value::from(""));
    let action = Value::from_iter(
        call.tool_calls
            .iter()
            .map(|t| json!({"name": t.name, "arguments": t.arguments})),
    );
    let assistant = call.assistant_message();
    let info = [
        ("call", Value::from(call.call)),
        ("step", Value::from(call.step)),
        ("hours", Value::from(call.hours)),
        ("model", Value::from(call.model.as_str())),
        (
            "finish_reason",
            call.finish_reason.clone().map_or(Value::Null, Value::from),
        ),
        ("usage", call.usage.clone().unwrap_or(Value::Null)),
        ("replies", Value::from(call.replies)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut messages = call.messages;
    messages.push(assistant);
    *conversation = conversation.then(messages);
    Step {
        id: format!("{run_id}:c{}", call.call),
        input: observation,
        output: Value::Null,
        action,
        reward,
        done,
        mc_return: 0.0,
        advantage: None,
        metadata: info,
        chat_completions: conversation.clone(),
        thought: call.reasoning.unwrap_or_default(),
        model_response: call.content.unwrap_or_default(),
    }
}
