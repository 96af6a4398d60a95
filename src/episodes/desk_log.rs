//! A transcript written as a tool desk answers: one model call per tool call, each line
//! opening with the messages carried since the previous one.

use serde_json::{Value, json};

use super::transcript::{RecordedToolCall, TranscriptCall, TranscriptError, TranscriptWriter};
use crate::morpheus::api::Reply;

/// The transcript of a run whose every model call made one tool call that the desk
/// answered (`perennial play`, `episodes --render`, a served session).
pub(crate) struct DeskLog {
    writer: TranscriptWriter,
    run_id: String,
    model: String,
    calls: u64,
    /// The messages the next call's line opens with.
    carried: Vec<Value>,
}

impl DeskLog {
    /// A log writing to `writer` the calls of run `run_id` made by `model`.
    pub(crate) fn new(writer: TranscriptWriter, run_id: String, model: String) -> Self {
        DeskLog {
            writer,
            run_id,
            model,
            calls: 0,
            carried: Vec::new(),
        }
    }

    /// Adds `message` to those the next call's line opens with.
    pub(crate) fn carry(&mut self, message: Value) {
        self.carried.push(message);
    }

    /// Writes the call made at trace step `step`, with `content` as its text, whose one
    /// tool call `name(arguments)` (`call_<n>`, the name cut to 64 characters) `reply`
    /// answered while `hours` passed; the reply is carried to the next call as a tool
    /// message.
    ///
    /// # Errors
    ///
    /// The transcript cannot be written.
    pub(crate) fn write(
        &mut self,
        step: u64,
        hours: u64,
        content: Option<String>,
        name: &str,
        arguments: String,
        reply: &Reply,
    ) -> Result<(), TranscriptError> {
        let id = format!("call_{}", self.calls);
        let io = |e: serde_json::Error| {
            TranscriptError::io(self.writer.path(), self.calls + 1, e.into())
        };
        let mut envelope = serde_json::to_value(reply).map_err(io)?;
        if let Value::Object(m) = &mut envelope {
            m.insert("tool_call_id".into(), Value::from(id.as_str()));
        }
        self.writer.write(&TranscriptCall {
            run_id: self.run_id.clone(),
            call: self.calls,
            step,
            hours,
            model: self.model.clone(),
            messages: std::mem::take(&mut self.carried),
            content,
            reasoning: None,
            tool_calls: vec![RecordedToolCall {
                id: id.clone(),
                name: name.chars().take(64).collect(),
                arguments,
            }],
            replies: vec![envelope],
            finish_reason: Some("tool_calls".into()),
            usage: None,
        })?;
        self.calls += 1;
        self.carry(json!({"role": "tool", "tool_call_id": id, "content": reply.to_json()}));
        Ok(())
    }

    /// Flushes and syncs the transcript.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub(crate) fn finish(self) -> Result<(), TranscriptError> {
        self.writer.finish()
    }
}
