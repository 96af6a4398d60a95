//! Transcripts: what a language model saw and said in a run, one JSON object per model call.
//!
//! The format is specified in `docs/llm-agents.md` ("Transcripts"). [`TranscriptReader`]
//! reads one file line by line, each line at most [`MAX_TRANSCRIPT_LINE_BYTES`], and checks
//! every key and the order of the calls; an error names the file, the line and the field.
//! A transcript is untrusted input: nothing in it can make the reader allocate beyond its
//! line limit or panic.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use crate::limits::MAX_TRANSCRIPT_LINE_BYTES;

/// Why a transcript line was refused: the file, the 1-based line, the key when one is at
/// fault, and what is wrong.
#[derive(Debug)]
pub struct TranscriptError {
    /// The transcript.
    pub path: PathBuf,
    /// 1-based line number (0: the file as a whole).
    pub line: u64,
    /// The key at fault, e.g. `tool_calls[2].function.name`.
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
    /// The I/O error, when reading failed.
    pub source: Option<std::io::Error>,
}

impl TranscriptError {
    fn at(path: &Path, line: u64, field: Option<&str>, message: impl Into<String>) -> Self {
        TranscriptError {
            path: path.to_path_buf(),
            line,
            field: field.map(str::to_string),
            message: message.into(),
            source: None,
        }
    }

    pub(super) fn io(path: &Path, line: u64, source: std::io::Error) -> Self {
        TranscriptError {
            path: path.to_path_buf(),
            line,
            field: None,
            message: source.to_string(),
            source: Some(source),
        }
    }
}

impl fmt::Display for TranscriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        match &self.field {
            Some(field) => write!(f, ": `{field}`: {}", self.message),
            None => write!(f, ": {}", self.message),
        }
    }
}

impl std::error::Error for TranscriptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// One tool call of an assistant message, in OpenAI chat format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedToolCall {
    /// The call's id, which its reply and tool message name.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them: a JSON string, not necessarily valid.
    pub arguments: String,
}

impl RecordedToolCall {
    /// The call as an assistant message writes it:
    /// `{"id", "type": "function", "function": {"name", "arguments"}}`.
    pub fn to_openai(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        })
    }
}

/// One model call of a transcript (one line).
#[derive(Clone, Debug, PartialEq)]
pub struct TranscriptCall {
    /// The trace's run id.
    pub run_id: String,
    /// The call's index in the run, from 0.
    pub call: u64,
    /// The trace step it was made at: the rows already written when it was sent.
    pub step: u64,
    /// The hours (trace rows) its tool calls let pass.
    pub hours: u64,
    /// The model's name.
    pub model: String,
    /// The messages new since the previous call, each a JSON object with a `role`.
    pub messages: Vec<Value>,
    /// The assistant message's text.
    pub content: Option<String>,
    /// The model's reasoning, when the endpoint returned it.
    pub reasoning: Option<String>,
    /// The assistant message's tool calls.
    pub tool_calls: Vec<RecordedToolCall>,
    /// One reply envelope per tool call, in order.
    pub replies: Vec<Value>,
    /// Why the model stopped.
    pub finish_reason: Option<String>,
    /// Token usage as the endpoint reported it.
    pub usage: Option<Value>,
}

/// The roles a message may have.
const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

impl TranscriptCall {
    /// The assistant message of this call: `{role: assistant, content, tool_calls}`.
    pub fn assistant_message(&self) -> Value {
        let mut m = Map::new();
        m.insert("role".into(), Value::from("assistant"));
        m.insert(
            "content".into(),
            self.content.clone().map_or(Value::Null, Value::from),
        );
        if !self.tool_calls.is_empty() {
            let calls = self.tool_calls.iter().map(RecordedToolCall::to_openai);
            m.insert("tool_calls".into(), Value::from_iter(calls));
        }
        Value::Object(m)
    }

    /// Whether this call starts a conversation: its first new message is a system (or
    /// developer) prompt.
    pub fn starts_conversation(&self) -> bool {
        self.messages.first().is_some_and(|m| {
            matches!(
                m.get("role").and_then(Value::as_str),
                Some("system" | "developer")
            )
        })
    }

    /// The content of the last user or tool message before the call: what it observed.
    pub fn observation(&self) -> Option<&Value> {
        self.messages
            .iter()
            .rev()
            .find(|m| matches!(m.get("role").and_then(Value::as_str), Some("user" | "tool")))
            .and_then(|m| m.get("content"))
    }

    /// The call as one line of a transcript (without the newline).
    pub fn to_json(&self) -> Value {
        let opt = |v: &Option<String>| v.clone().map_or(Value::Null, Value::from);
        serde_json::json!({
            "run_id": self.run_id,
            "call": self.call,
            "step": self.step,
            "hours": self.hours,
            "model": self.model,
            "messages": self.messages,
            "content": opt(&self.content),
            "reasoning": opt(&self.reasoning),
            "tool_calls": self.tool_calls.iter().map(RecordedToolCall::to_openai).collect::<Vec<_>>(),
            "replies": self.replies,
            "finish_reason": opt(&self.finish_reason),
            "usage": self.usage.clone().unwrap_or(Value::Null),
        })
    }

    /// Parses and checks one line's JSON object.
    fn parse(value: Value, check: &Check<'_>) -> Result<Self, TranscriptError> {
        let Value::Object(mut o) = value else {
            return Err(check.err(
                None,
                "the line is not a JSON object; each line is one model call",
            ));
        };
        let mut take = |key: &str| o.remove(key);
        let run_id = check.string(take("run_id"), "run_id")?;
        crate::limits::check_id("run_id", &run_id).map_err(|m| check.err(Some("run_id"), m))?;
        let call = check.count(take("call"), "call")?;
        let step = check.count(take("step"), "step")?;
        let hours = check.count(take("hours"), "hours")?;
        let model = check.string(take("model"), "model")?;
        let messages = match take("messages") {
            Some(Value::Array(list)) => list,
            other => return Err(check.wrong("messages", "an array of messages", other.as_ref())),
        };
        for (i, m) in messages.iter().enumerate() {
            let field = format!("messages[{i}]");
            let Some(obj) = m.as_object() else {
                return Err(check.wrong(&field, "a message object", Some(m)));
            };
            match obj.get("role").and_then(Value::as_str) {
                Some(role) if ROLES.contains(&role) => {}
                other => {
                    return Err(check.err(
                        Some(&format!("{field}.role")),
                        format!(
                            "is {}; use one of {}",
                            other.map_or_else(
                                || "missing".to_string(),
                                |r| format!("`{}`", quote(r))
                            ),
                            ROLES.join(", ")
                        ),
                    ));
                }
            }
        }
        let content = check.opt_string(take("content"), "content")?;
        let reasoning = check.opt_string(take("reasoning"), "reasoning")?;
        let tool_calls = match take("tool_calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list
                .into_iter()
                .enumerate()
                .map(|(i, c)| check.tool_call(c, i))
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => return Err(check.wrong("tool_calls", "an array", Some(&other))),
        };
        let replies = match take("replies") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list,
            Some(other) => return Err(check.wrong("replies", "an array", Some(&other))),
        };
        if replies.len() != tool_calls.len() {
            return Err(check.err(
                Some("replies"),
                format!(
                    "holds {} replies for {} tool calls; write one reply envelope per tool call, in order",
                    replies.len(),
                    tool_calls.len()
                ),
            ));
        }
        for (i, r) in replies.iter().enumerate() {
            if !r.is_object() {
                return Err(check.wrong(
                    &format!("replies[{i}]"),
                    "a reply envelope object",
                    Some(r),
                ));
            }
        }
        let finish_reason = check.opt_string(take("finish_reason"), "finish_reason")?;
        let usage = match take("usage") {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v),
            Some(other) => return Err(check.wrong("usage", "an object or null", Some(&other))),
        };
        Ok(TranscriptCall {
            run_id,
            call,
            step,
            hours,
            model,
            messages,
            content,
            reasoning,
            tool_calls,
            replies,
            finish_reason,
            usage,
        })
    }
}

/// At most this many characters of a caller's text are quoted in a message.
const QUOTED: usize = 40;

fn quote(s: &str) -> String {
    let mut out: String = s.chars().take(QUOTED).collect();
    if s.chars().nth(QUOTED).is_some() {
        out.push('…');
    }
    out
}

fn kind_of(v: Option<&Value>) -> String {
    match v {
        None => "missing".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::Bool(b)) => format!("the boolean {b}"),
        Some(Value::Number(n)) => format!("the number {}", quote(&n.to_string())),
        Some(Value::String(s)) => format!("the string \"{}\"", quote(s)),
        Some(Value::Array(_)) => "an array".into(),
        Some(Value::Object(_)) => "an object".into(),
    }
}

/// Where a line is, for its errors.
struct Check<'a> {
    path: &'a Path,
    line: u64,
}

impl Check<'_> {
    fn err(&self, field: Option<&str>, message: impl Into<String>) -> TranscriptError {
        TranscriptError::at(self.path, self.line, field, message)
    }

    fn wrong(&self, field: &str, want: &str, found: Option<&Value>) -> TranscriptError {
        self.err(
            Some(field),
            format!("is {}; it must be {want}", kind_of(found)),
        )
    }

    fn string(&self, v: Option<Value>, field: &str) -> Result<String, TranscriptError> {
        match v {
            Some(Value::String(s)) => Ok(s),
            other => Err(self.wrong(field, "a string", other.as_ref())),
        }
    }

    fn opt_string(&self, v: Option<Value>, field: &str) -> Result<Option<String>, TranscriptError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(field, "a string or null", Some(&other))),
        }
    }

    fn count(&self, v: Option<Value>, field: &str) -> Result<u64, TranscriptError> {
        match v.as_ref().and_then(Value::as_u64) {
            Some(n) => Ok(n),
            None => Err(self.wrong(field, "a non-negative integer", v.as_ref())),
        }
    }

    fn tool_call(&self, v: Value, i: usize) -> Result<RecordedToolCall, TranscriptError> {
        let at = format!("tool_calls[{i}]");
        let Value::Object(mut o) = v else {
            return Err(self.wrong(&at, "a tool call object", Some(&v)));
        };
        // Some local endpoints leave the id out; the call's position names it then.
        let id = match o.remove("id") {
            None | Some(Value::Null) => format!("call_{i}"),
            other => self.string(other, &format!("{at}.id"))?,
        };
        match o.remove("type") {
            None => {}
            Some(Value::String(t)) if t == "function" => {}
            Some(other) => {
                return Err(self.wrong(
                    &format!("{at}.type"),
                    "the string \"function\"",
                    Some(&other),
                ));
            }
        }
        let Some(Value::Object(mut f)) = o.remove("function") else {
            return Err(self.err(
                Some(&format!("{at}.function")),
                "is missing or not an object; write {\"name\": ..., \"arguments\": \"...\"}",
            ));
        };
        let name = self.string(f.remove("name"), &format!("{at}.function.name"))?;
        // The model writes a JSON string; an endpoint that parsed it already gives the
        // object, kept as its compact text.
        let arguments = match f.remove("arguments") {
            Some(Value::String(text)) => text,
            Some(v @ Value::Object(_)) => v.to_string(),
            other => {
                return Err(self.wrong(
                    &format!("{at}.function.arguments"),
                    "a JSON string (or an arguments object)",
                    other.as_ref(),
                ));
            }
        };
        Ok(RecordedToolCall {
            id,
            name,
            arguments,
        })
    }
}

/// Reads a transcript, one [`TranscriptCall`] per line, checking each and the order of
/// them all: one run id throughout, calls numbered 0, 1, 2, ..., steps that never go back
/// and never overlap the hours of the call before (`step ≥` the previous call's
/// `step + hours`). After an error the reader stops.
pub struct TranscriptReader {
    path: PathBuf,
    reader: BufReader<File>,
    line: u64,
    buf: Vec<u8>,
    previous: Option<(String, u64, u64)>,
    stopped: bool,
}

impl TranscriptReader {
    /// Opens the transcript at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be opened, or is not a regular file.
    pub fn open(path: &Path) -> Result<Self, TranscriptError> {
        let file = File::open(path).map_err(|e| TranscriptError::io(path, 0, e))?;
        let meta = file
            .metadata()
            .map_err(|e| TranscriptError::io(path, 0, e))?;
        if !meta.is_file() {
            return Err(TranscriptError::at(
                path,
                0,
                None,
                "is not a regular file; pass the transcript file (<run-id>.transcript.jsonl)",
            ));
        }
        Ok(TranscriptReader {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(1 << 16, file),
            line: 0,
            buf: Vec::new(),
            previous: None,
            stopped: false,
        })
    }

    /// The transcript's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The line last read (1-based; 0 before the first).
    pub fn line(&self) -> u64 {
        self.line
    }

    fn read_line(&mut self) -> Option<Result<TranscriptCall, TranscriptError>> {
        loop {
            self.buf.clear();
            let limit = MAX_TRANSCRIPT_LINE_BYTES;
            let n = match (&mut self.reader)
                .take(limit as u64 + 1)
                .read_until(b'\n', &mut self.buf)
            {
                Ok(n) => n,
                Err(e) => return Some(Err(TranscriptError::io(&self.path, self.line + 1, e))),
            };
            if n == 0 {
                return None;
            }
            self.line += 1;
            if n > limit {
                return Some(Err(TranscriptError::at(
                    &self.path,
                    self.line,
                    None,
                    format!(
                        "the line is longer than {limit} bytes, the limit for one model call; is it a transcript?"
                    ),
                )));
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let check = Check {
                path: &self.path,
                line: self.line,
            };
            let value: Value = match serde_json::from_slice(&self.buf) {
                Ok(v) => v,
                Err(e) => {
                    return Some(Err(check.err(
                        None,
                        format!(
                            "not JSON ({e}); each line must be one model call as a JSON object"
                        ),
                    )));
                }
            };
            return Some(TranscriptCall::parse(value, &check).and_then(|c| self.in_order(c)));
        }
    }

    /// Checks `call` against the call before it.
    fn in_order(&mut self, call: TranscriptCall) -> Result<TranscriptCall, TranscriptError> {
        let check = Check {
            path: &self.path,
            line: self.line,
        };
        let end = call.step.checked_add(call.hours).ok_or_else(|| {
            check.err(
                Some("hours"),
                "step + hours overflows; the numbers are not a run's",
            )
        })?;
        match &self.previous {
            None if call.call != 0 => {
                return Err(check.err(
                    Some("call"),
                    format!("is {}; a transcript's first call is call 0", call.call),
                ));
            }
            Some((run_id, _, _)) if *run_id != call.run_id => {
                return Err(check.err(
                    Some("run_id"),
                    format!(
                        "is `{}` but the lines before are of run `{run_id}`; a transcript holds one run",
                        call.run_id
                    ),
                ));
            }
            Some((_, index, _)) if call.call != index + 1 => {
                return Err(check.err(
                    Some("call"),
                    format!(
                        "is {} after call {index}; calls are numbered in order",
                        call.call
                    ),
                ));
            }
            Some((_, index, prev_end)) if call.step < *prev_end => {
                return Err(check.err(
                    Some("step"),
                    format!(
                        "is {} but call {index} let hours pass up to step {prev_end}; steps never go back",
                        call.step
                    ),
                ));
            }
            _ => {}
        }
        self.previous = Some((call.run_id.clone(), call.call, end));
        Ok(call)
    }
}

impl Iterator for TranscriptReader {
    type Item = Result<TranscriptCall, TranscriptError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped {
            return None;
        }
        let item = self.read_line();
        if matches!(item, Some(Err(_)) | None) {
            self.stopped = true;
        }
        item
    }
}

/// Writes a transcript, one call per line, each line flushed as it is written, so a
/// process killed mid-run leaves every complete call in the file.
pub struct TranscriptWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl TranscriptWriter {
    /// Creates (or truncates) the transcript at `path`; refuses a path that is not a
    /// regular file.
    ///
    /// # Errors
    ///
    /// The path is not a regular file, or the file cannot be created.
    pub fn create(path: &Path) -> Result<Self, TranscriptError> {
        crate::output::check_output(path)
            .map_err(|e| TranscriptError::at(path, 0, None, e.to_string()))?;
        crate::output::create_parent(path)
            .map_err(|e| TranscriptError::at(path, 0, None, e.to_string()))?;
        let file = File::create(path).map_err(|e| TranscriptError::io(path, 0, e))?;
        Ok(TranscriptWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        })
    }

    /// The transcript's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one call as a line and flushes it.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn write(&mut self, call: &TranscriptCall) -> Result<(), TranscriptError> {
        let io = |e| TranscriptError::io(&self.path, call.call + 1, e);
        serde_json::to_writer(&mut self.out, &call.to_json()).map_err(|e| io(e.into()))?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(io)
    }

    /// Flushes and syncs the file.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn finish(mut self) -> Result<(), TranscriptError> {
        self.out
            .flush()
            .map_err(|e| TranscriptError::io(&self.path, 0, e))?;
        self.out
            .get_ref()
            .sync_all()
            .map_err(|e| TranscriptError::io(&self.path, 0, e))
    }
}

/// A conversation: the chat messages a model call saw, and its own reply, in order.
///
/// Each call's Step holds the whole conversation up to it; the calls of a run share one
/// chain of turns, so holding a Step per call costs memory linear in the transcript, not
/// quadratic. Serializes as a JSON array of message objects (rLLM's `chat_completions`).
#[derive(Clone, Default)]
pub struct Conversation {
    last: Option<Arc<Turn>>,
}

struct Turn {
    before: Option<Arc<Turn>>,
    messages: Vec<Value>,
}

impl Conversation {
    /// The empty conversation.
    pub fn new() -> Self {
        Conversation::default()
    }

    /// This conversation with `messages` after it.
    pub fn then(&self, messages: Vec<Value>) -> Self {
        Conversation {
            last: Some(Arc::new(Turn {
                before: self.last.clone(),
                messages,
            })),
        }
    }

    /// The messages, in order.
    pub fn messages(&self) -> Vec<&Value> {
        let mut turns = Vec::new();
        let mut at = self.last.as_deref();
        while let Some(turn) = at {
            turns.push(turn);
            at = turn.before.as_deref();
        }
        turns.iter().rev().flat_map(|t| t.messages.iter()).collect()
    }

    /// Whether it holds no message.
    pub fn is_empty(&self) -> bool {
        self.messages().is_empty()
    }
}

impl From<Vec<Value>> for Conversation {
    fn from(messages: Vec<Value>) -> Self {
        if messages.is_empty() {
            return Conversation::new();
        }
        Conversation::new().then(messages)
    }
}

impl fmt::Debug for Conversation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.messages()).finish()
    }
}

impl PartialEq for Conversation {
    fn eq(&self, other: &Self) -> bool {
        self.messages() == other.messages()
    }
}

impl Serialize for Conversation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let messages = self.messages();
        let mut seq = serializer.serialize_seq(Some(messages.len()))?;
        for m in messages {
            seq.serialize_element(m)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Conversation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Value>::deserialize(deserializer).map(Conversation::from)
    }
}

#[cfg(test)]
mod tests;
