//! Transcripts: parsing, the file and line of each error, and the conversation form.

use super::*;
use crate::output::Scratch;

/// `lines` in the file `name` of a folder of its own, and the folder's guard.
fn write(name: &str, lines: &[String]) -> (Scratch, PathBuf) {
    let (dir, path) = Scratch::file(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    (dir, path)
}

fn line(call: u64, step: u64, hours: u64) -> Value {
    serde_json::json!({
        "run_id": "r", "call": call, "step": step, "hours": hours, "model": "m",
        "messages": [{"role": "user", "content": format!("hour {step}")}],
        "content": null, "reasoning": null,
        "tool_calls": [{"id": "c0", "type": "function",
                        "function": {"name": "wait", "arguments": "{\"hours\": 1}"}}],
        "replies": [{"tool_call_id": "c0", "status": 200, "success": true, "data": {}, "error": null}],
        "finish_reason": "tool_calls", "usage": null,
    })
}

fn read(name: &str, lines: Vec<Value>) -> Result<Vec<TranscriptCall>, TranscriptError> {
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    let (_dir, path) = write(name, &text);
    TranscriptReader::open(&path)?.collect()
}

#[test]
fn a_good_transcript_reads_back_as_written() {
    let calls = read(
        "good.jsonl",
        vec![line(0, 0, 1), line(1, 1, 0), line(2, 1, 1)],
    )
    .unwrap();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[2].tool_calls[0].name, "wait");
    assert_eq!(calls[1].observation(), Some(&Value::from("hour 1")));
    assert_eq!(calls[0].to_json(), line(0, 0, 1));
    let mut loose = line(0, 0, 1);
    loose["tool_calls"][0]["function"]["arguments"] = serde_json::json!({"hours": 2});
    loose["tool_calls"][0].as_object_mut().unwrap().remove("id");
    let calls = read("loose.jsonl", vec![loose]).unwrap();
    assert_eq!(calls[0].tool_calls[0].arguments, r#"{"hours":2}"#);
    assert_eq!(calls[0].tool_calls[0].id, "call_0");
}

#[test]
fn a_bad_field_is_named_with_its_line() {
    let mut bad = line(1, 1, 1);
    bad["tool_calls"][0]["function"]["name"] = Value::from(3);
    let e = read("bad.jsonl", vec![line(0, 0, 1), bad]).unwrap_err();
    assert_eq!(e.line, 2);
    assert_eq!(e.field.as_deref(), Some("tool_calls[0].function.name"));
    assert!(
        e.to_string()
            .contains("bad.jsonl:2: `tool_calls[0].function.name`"),
        "{e}"
    );
    let mut bad = line(0, 0, 1);
    bad["messages"][0]["role"] = Value::from("robot");
    let e = read("role.jsonl", vec![bad]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("messages[0].role"));
    let mut bad = line(0, 0, 1);
    bad["step"] = Value::from(-1);
    assert_eq!(
        read("neg.jsonl", vec![bad]).unwrap_err().field.as_deref(),
        Some("step")
    );
    let mut bad = line(0, 0, 1);
    bad["replies"] = serde_json::json!([]);
    assert_eq!(
        read("rep.jsonl", vec![bad]).unwrap_err().field.as_deref(),
        Some("replies")
    );
}

#[test]
fn calls_out_of_order_are_refused() {
    let e = read("order.jsonl", vec![line(0, 0, 2), line(1, 1, 1)]).unwrap_err();
    assert_eq!((e.line, e.field.as_deref()), (2, Some("step")));
    let e = read("skip.jsonl", vec![line(0, 0, 1), line(2, 1, 1)]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("call"));
    let e = read("first.jsonl", vec![line(3, 0, 1)]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("call"));
    let mut other = line(1, 1, 1);
    other["run_id"] = Value::from("s");
    let e = read("runs.jsonl", vec![line(0, 0, 1), other]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("run_id"));
}

#[test]
fn junk_and_huge_lines_are_errors_not_panics() {
    let (_dir, path) = write("junk.jsonl", &["{\"run_id\": ".into(), "[1, 2]".into()]);
    let e = TranscriptReader::open(&path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.line, 1);
    let mut huge = vec![b'['; MAX_TRANSCRIPT_LINE_BYTES + 10];
    huge.push(b'\n');
    std::fs::write(&path, huge).unwrap();
    let e = TranscriptReader::open(&path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert!(e.message.contains("longer than"), "{e}");
    assert!(TranscriptReader::open(Path::new("/")).is_err());
}

#[test]
fn a_conversation_shares_its_earlier_turns() {
    let a = Conversation::from(vec![Value::from(1)]);
    let b = a.then(vec![Value::from(2), Value::from(3)]);
    assert_eq!(serde_json::to_string(&b).unwrap(), "[1,2,3]");
    assert_eq!(serde_json::to_string(&a).unwrap(), "[1]");
    let back: Conversation = serde_json::from_str("[1,2,3]").unwrap();
    assert_eq!(back, b);
    assert!(Conversation::new().is_empty());
}
