//! `perennial play` driven through piped stdin: typed commands, JSON lines, hostile lines,
//! and the trace and transcript it leaves.

mod common;

use std::io::Write;
use std::process::{Output, Stdio};

use common::{Scratch, path, perennial, run, text};
use perennial::episodes::{ExportOptions, TranscriptCall, TranscriptReader, export_calls};
use perennial::trace::{Manifest, TraceReader};
use serde_json::Value;

fn play(args: &[&str], input: &[u8]) -> Output {
    let mut child = perennial()
        .arg("play")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().unwrap();
    // A child that stops reading early (hours spent) closes the pipe: not an error here.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn transcript(p: &std::path::Path) -> Vec<TranscriptCall> {
    TranscriptReader::open(p)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn typed_commands_play_the_world_until_the_hours_are_spent() {
    let dir = Scratch::new("play-text");
    let (trace, tr) = (dir.join("p.jsonl"), dir.join("p.transcript.jsonl"));
    let input = "query_inventory 2\nreorder 3 100\nteleport 1\nreorder 1 7\nhelp\ntools\nquery_orders purchase all 5\nwait 24\nquery_ledger\n";
    let out = play(
        &[
            "worlds/warehouse.toml",
            "--seed",
            "2",
            "--hours",
            "6",
            "--trace",
            path(&trace),
            "--transcript",
            path(&tr),
            "--run-id",
            "me",
        ],
        input.as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("Hour 0 (day 0, 00:00)"), "{stdout}");
    assert!(stdout.contains("error 404: unknown tool `teleport`"));
    assert!(stdout.contains("error 422: reorder: argument `quantity` is 7"));
    assert!(stdout.contains("Commands:") && stdout.contains("\"strict\":true"));
    assert!(
        stdout.contains("\"hours_passed\":5"),
        "wait is cut to the hours left"
    );
    assert!(stdout.trim_end().ends_with("the hours are spent"));
    assert!(
        !stdout.contains("\"revenue\""),
        "input after the last hour is not read"
    );
    let rows: Vec<_> = TraceReader::open(&[&trace]).map(Result::unwrap).collect();
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[0].algorithm_id, "human");
    let calls = transcript(&tr);
    assert_eq!(calls.len(), 6, "help and tools are not calls");
    assert_eq!(calls[1].content.as_deref(), Some("reorder 3 100"));
    assert_eq!(calls[1].hours, 1);
    assert_eq!(calls[0].messages[0]["role"], "system");
    assert_eq!(calls[2].replies[0]["status"], 404);
    let manifest = Manifest::find(&trace, "me").unwrap();
    assert_eq!(
        (manifest.exit_status.as_str(), manifest.steps_done),
        ("completed", 6)
    );

    // The transcript exports against its trace, and the trace renders back to the same hours.
    let episodes = dir.join("episodes.jsonl");
    let summary = export_calls(&[&trace], &[&tr], &episodes, &ExportOptions::default()).unwrap();
    assert_eq!(summary.steps, 6);
    let sft = dir.join("sft.jsonl");
    run(&[
        "episodes",
        path(&trace),
        "--render",
        "text",
        "--out",
        path(&sft),
    ]);
}

#[test]
fn json_lines_get_one_reply_each_whatever_they_hold() {
    let dir = Scratch::new("play-json");
    let trace = dir.join("j.jsonl");
    let huge = format!(
        "{{\"name\": \"wait\", \"arguments\": \"{}\"}}",
        "x".repeat(2 << 20)
    );
    let lines = [
        r#"{"name": "render", "arguments": {"format": "text"}}"#.to_string(),
        r#"{"name": "render", "arguments": {"format": "json"}}"#.into(),
        r#"{"name": "render", "arguments": {"format": "svg"}}"#.into(),
        "not json".into(),
        "[1, 2]".into(),
        r#"{"name": "reorder", "arguments": "{\"sku\": 1, \"quantity\": 50}"}"#.into(),
        r#"{"path": "/inventory", "method": "GET", "body": {"sku": null}}"#.into(),
        r#"{"path": "/nowhere", "method": "DELETE"}"#.into(),
        r#"{"name": "wait", "arguments": {"hours": NaN}}"#.into(),
        r#"{"name": "expedite", "arguments": {"sku": [[[{}]]], "extra": 1}}"#.into(),
        huge,
        r#"{"name": "tools"}"#.into(),
        r#"{"name": "wait", "arguments": {"hours": 2}}"#.into(),
    ];
    let input = lines.join("\n") + "\n";
    let out = play(
        &[
            "worlds/warehouse.toml",
            "--json",
            "--hours",
            "10",
            "--trace",
            path(&trace),
        ],
        input.as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let replies: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every reply is one JSON line"))
        .collect();
    assert_eq!(replies.len(), lines.len());
    let status: Vec<u64> = replies
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(
        status,
        [
            200, 200, 422, 400, 400, 200, 200, 404, 400, 422, 400, 200, 200
        ]
    );
    assert!(
        replies[0]["data"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Hour 0")
    );
    assert!(replies[1]["data"]["hour"].is_object());
    let rows: Vec<_> = TraceReader::open(&[&trace]).map(Result::unwrap).collect();
    assert_eq!(
        rows.len(),
        3,
        "EOF before the hours are spent ends the session, flushed"
    );
    assert_eq!(rows[0].algorithm_id, "stdio");
    let tr = dir.join("warehouse-stdio-seed0.transcript.jsonl");
    let calls = transcript(&tr);
    assert_eq!(calls.len(), 9, "render and tools are not calls");
    assert!(calls.iter().all(|c| c.model == "stdio"));
    assert!(
        text(&out.stderr).contains("2 invalid, 4 malformed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn play_refuses_a_world_that_is_not_the_enterprise_world() {
    let out = play(&["worlds/cartpole.toml"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("plays the enterprise world"),
        "{}",
        text(&out.stderr)
    );
}
