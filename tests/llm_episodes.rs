//! A language model's run as rLLM Steps: a transcript met with its trace (`--transcripts`),
//! and a numeric agent's trace told as tool calls (`--render text`).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::traced::Traced;
use common::{Scratch, fails_with, path, run, text};
use perennial::agents::{BaseStockAgent, BaseStockParams};
use perennial::episodes::{
    AdvantageEstimator, Episode, ExportOptions, RecordedToolCall, TranscriptCall, TranscriptReader,
    TranscriptWriter, export, export_calls, read_episodes,
};
use perennial::harness::{Agent, Harness, HarnessConfig};
use perennial::morpheus::api::{Desk, DeskOptions, Stepper, ToolCall, render_text};
use perennial::morpheus::{Morpheus, MorpheusConfig, Op, default_reward_spec};
use perennial::trace::{TraceFormat, TraceReader};
use serde_json::{Value, json};

/// [`scripted_run`] into `llm.jsonl` and `llm.transcript.jsonl` in `dir`: the trace, the
/// transcript and the number of calls.
fn scripted(dir: &Scratch, hours: u64) -> (PathBuf, PathBuf, u64) {
    let (trace, transcript) = (dir.join("llm.jsonl"), dir.join("llm.transcript.jsonl"));
    let calls = scripted_run(&trace, &transcript, hours);
    (trace, transcript, calls)
}

/// A scripted model for `hours` hours: base-stock's decisions as tool calls, with a query,
/// a bad call and a three-hour wait now and then, its transcript written as an LLM run
/// writes one. Returns the number of calls.
fn scripted_run(trace: &Path, transcript: &Path, hours: u64) -> u64 {
    let cfg = MorpheusConfig::default();
    let config = HarnessConfig {
        steps: hours,
        window_steps: 64,
        auto_reset: false,
        record_transitions: false,
    };
    let env = Morpheus::new(cfg.clone(), default_reward_spec()).unwrap();
    let agent = BaseStockAgent::new(&cfg, BaseStockParams::default());
    let harness = Harness::new(env, agent, 5)
        .config(config)
        .run_id("llm")
        .trace(trace, TraceFormat::Jsonl);
    let mut traced = Traced(harness);
    traced.0.advance(0).unwrap();
    let mut chooser = BaseStockAgent::new(&cfg, BaseStockParams::default());
    let mut desk = Desk::new(&cfg, DeskOptions::default());
    let mut writer = TranscriptWriter::create(transcript).unwrap();
    let mut carried = vec![json!({"role": "system", "content": "You run a warehouse."})];
    let (mut step, mut call) = (0u64, 0u64);
    while step < hours {
        let (name, args) = match call % 7 {
            1 => ("query_ledger".to_string(), json!({})),
            3 => ("reorder".to_string(), json!({"sku": 99, "quantity": 5})),
            5 if step + 3 <= hours => ("wait".to_string(), json!({"hours": 3})),
            _ => {
                let action = chooser.act(traced.0.observation().unwrap());
                match ToolCall::from_op(Op::decode(action, &cfg).unwrap(), &cfg) {
                    Some(c) => (c.tool().as_str().to_string(), c.arguments()),
                    None => ("wait".to_string(), json!({"hours": 1})),
                }
            }
        };
        let mut messages = std::mem::take(&mut carried);
        messages.push(json!({"role": "user", "content": render_text(traced.world())}));
        let reply = desk.call_value(&mut traced, &name, &args).unwrap();
        let passed = reply.data["hours_passed"].as_u64().unwrap_or(0);
        let id = format!("t{call}");
        let mut envelope = serde_json::to_value(&reply).unwrap();
        envelope["tool_call_id"] = Value::from(id.as_str());
        writer
            .write(&TranscriptCall {
                run_id: "llm".into(),
                call,
                step,
                hours: passed,
                model: "scripted".into(),
                messages,
                content: Some(format!("turn {call}")),
                reasoning: (call % 2 == 0).then(|| format!("thinking {call}")),
                tool_calls: vec![RecordedToolCall {
                    id: id.clone(),
                    name,
                    arguments: args.to_string(),
                }],
                replies: vec![envelope],
                finish_reason: Some("tool_calls".into()),
                usage: Some(
                    json!({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}),
                ),
            })
            .unwrap();
        carried.push(json!({"role": "tool", "tool_call_id": id, "content": reply.to_json()}));
        step += passed;
        call += 1;
    }
    writer.finish().unwrap();
    drop(traced);
    call
}

fn steps_of(episodes: &[Episode]) -> Vec<&perennial::episodes::Step> {
    episodes
        .iter()
        .flat_map(|e| e.trajectories.iter().flat_map(|t| t.steps.iter()))
        .collect()
}

fn read(out: &Path) -> Vec<Episode> {
    read_episodes(out)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn trace_rewards(trace: &Path) -> BTreeMap<u64, f64> {
    TraceReader::open(&[trace])
        .map(|r| r.map(|r| (r.step, r.reward)).unwrap())
        .collect()
}

#[test]
fn each_model_call_is_one_step_with_the_conversation_up_to_it() {
    let dir = Scratch::new("llm-episodes-calls");
    let (trace, transcript, calls) = scripted(&dir, 120);
    let out = dir.join("episodes.jsonl");
    let summary = export_calls(&[&trace], &[&transcript], &out, &ExportOptions::default()).unwrap();
    assert_eq!(summary.steps, calls);
    let episodes = read(&out);
    assert_eq!(episodes.len(), 1, "a persistent world's run is one episode");
    let steps = steps_of(&episodes);
    let lines: Vec<TranscriptCall> = TranscriptReader::open(&transcript)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let rewards = trace_rewards(&trace);
    let mut conversation: Vec<Value> = Vec::new();
    for (step, line) in steps.iter().zip(&lines) {
        conversation.extend(line.messages.iter().cloned());
        conversation.push(line.assistant_message());
        let chat: Vec<&Value> = step.chat_completions.messages();
        assert_eq!(chat, conversation.iter().collect::<Vec<_>>());
        let last = chat.last().unwrap();
        assert_eq!(last["role"], "assistant");
        assert_eq!(
            last["tool_calls"][0]["function"]["name"],
            line.tool_calls[0].name.as_str()
        );
        assert_eq!(step.model_response, format!("turn {}", line.call));
        assert_eq!(step.thought, line.reasoning.clone().unwrap_or_default());
        assert_eq!(step.action[0]["name"], line.tool_calls[0].name.as_str());
        assert_eq!(step.input, line.messages.last().unwrap()["content"]);
        let want: f64 = (line.step..line.step + line.hours)
            .map(|s| rewards[&s])
            .sum();
        assert_eq!(step.reward, want, "call {}", line.call);
        for key in [
            "step",
            "hours",
            "model",
            "finish_reason",
            "usage",
            "replies",
        ] {
            assert!(step.metadata.contains_key(key), "info has {key}");
        }
    }
    assert!(lines.iter().any(|l| l.hours == 0) && lines.iter().any(|l| l.hours == 3));
    let total: f64 = rewards.values().sum();
    let got: f64 = steps.iter().map(|s| s.reward).sum();
    assert!(
        (total - got).abs() < 1e-6 * total.abs().max(1.0),
        "{total} {got}"
    );
}

#[test]
fn chunks_and_advantages_group_calls_by_the_row_of_their_last_hour() {
    let dir = Scratch::new("llm-episodes-chunks");
    let (trace, transcript, calls) = scripted(&dir, 200);
    let out = dir.join("episodes.jsonl");
    let options = ExportOptions {
        chunk_steps: Some(50),
        advantage: Some(AdvantageEstimator::Grpo),
    };
    let summary = export_calls(&[&trace], &[&transcript], &out, &options).unwrap();
    assert_eq!(summary.steps, calls);
    let episodes = read(&out);
    assert_eq!(episodes.len(), 4);
    for e in &episodes {
        let (first, last) = (
            e.metadata["first_step"].as_u64().unwrap(),
            e.metadata["last_step"].as_u64().unwrap(),
        );
        assert_eq!(last - first + 1, 50);
        for s in &e.trajectories[0].steps {
            let (step, hours) = (
                s.metadata["step"].as_u64().unwrap(),
                s.metadata["hours"].as_u64().unwrap(),
            );
            let end = step + hours.saturating_sub(1);
            assert!(
                first <= end && end <= last,
                "call at {step}+{hours} in {first}..={last}"
            );
            assert!(s.advantage.is_some());
        }
    }
    // The conversation runs on across chunks: a chunk's first Step still holds the calls before it.
    let second = &episodes[1].trajectories[0].steps[0];
    assert!(second.chat_completions.messages().len() > 50);
}

#[test]
fn a_transcript_of_another_run_or_past_the_trace_names_its_file_and_line() {
    let dir = Scratch::new("llm-episodes-errors");
    let (trace, transcript, _) = scripted(&dir, 30);
    let out = dir.join("episodes.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // Writes `lines` as the transcript `name` and exports the trace with it.
    let export_with = |name: &str, lines: &[String]| {
        let path = dir.join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        export_calls(&[&trace], &[&path], &out, &ExportOptions::default())
    };
    let renamed: Vec<String> = lines
        .iter()
        .map(|l| l.replace("\"run_id\":\"llm\"", "\"run_id\":\"someone-else\""))
        .collect();
    let e = export_with("other.transcript.jsonl", &renamed)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("run `llm` of the traces has no transcript"),
        "{e}"
    );
    assert!(!out.exists());

    let more = with_call_after(&lines, 30, 2);
    let e = export_with("long.transcript.jsonl", &more)
        .unwrap_err()
        .to_string();
    let at = format!("long.transcript.jsonl:{}: `step`", more.len());
    assert!(e.contains(&at) && e.contains("past the trace"), "{e}");

    let mut broken = lines.clone();
    broken[2] = broken[2].replace("\"hours\":", "\"hours\":\"x\",\"_\":");
    let e = export_with("bad.transcript.jsonl", &broken)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.transcript.jsonl:3: `hours`"), "{e}");

    // A query after the last hour earns nothing and is left out, counted.
    let summary = export_with("after.transcript.jsonl", &with_call_after(&lines, 30, 0)).unwrap();
    assert_eq!(summary.calls_after_end, 1);
    assert_eq!(summary.steps as usize, lines.len());
}

/// The transcript `lines` with one more call after the last: at `step`, waiting `hours`.
fn with_call_after(lines: &[String], step: u64, hours: u64) -> Vec<String> {
    let mut call: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    call["call"] = Value::from(call["call"].as_u64().unwrap() + 1);
    call["step"] = Value::from(step);
    call["hours"] = Value::from(hours);
    let mut more = lines.to_vec();
    more.push(call.to_string());
    more
}

/// The keys and types rLLM's `Step.from_dict`, `Trajectory.from_dict` and
/// `Episode.from_dict` read (rllm/types.py): required keys indexed directly, the pydantic
/// types of the fields they fill.
fn assert_rllm_reads(line: &str) {
    let e: Value = serde_json::from_str(line).unwrap();
    for key in ["id", "task", "is_correct", "trajectories"] {
        assert!(e.get(key).is_some(), "episode has {key}");
    }
    assert!(e["id"].is_string() && e["is_correct"].is_boolean());
    for t in e["trajectories"].as_array().unwrap() {
        assert!(t["name"].is_string() && t.get("task").is_some() && t["reward"].is_number());
        for s in t["steps"].as_array().unwrap() {
            for key in [
                "prompt_ids",
                "response_ids",
                "logprobs",
                "chat_completions",
                "observation",
                "thought",
                "action",
                "model_response",
                "reward",
                "done",
                "mc_return",
            ] {
                assert!(s.get(key).is_some(), "step has {key}");
            }
            assert!(
                s["chat_completions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(Value::is_object)
            );
            assert!(s["thought"].is_string() && s["model_response"].is_string());
            assert!(
                s["reward"].is_number() && s["done"].is_boolean() && s["mc_return"].is_number()
            );
            assert!(s["info"].is_object());
        }
    }
}

fn base_stock_trace(dir: &Scratch, steps: &str) -> PathBuf {
    let trace = dir.join("base.jsonl");
    run(&[
        "run",
        "worlds/warehouse.toml",
        "--agent",
        "base-stock",
        "--seed",
        "4",
        "--steps",
        steps,
        "--record-transitions",
        "--run-id",
        "base",
        "--trace",
        path(&trace),
    ]);
    trace
}

/// `perennial episodes TRACE --render text --out OUT`, as arguments.
fn render<'a>(trace: &'a Path, out: &'a Path) -> [&'a str; 6] {
    [
        "episodes",
        path(trace),
        "--render",
        "text",
        "--out",
        path(out),
    ]
}

#[test]
fn render_text_tells_a_base_stock_run_as_tool_calls() {
    let dir = Scratch::new("llm-episodes-render");
    let trace = base_stock_trace(&dir, "400");
    let (out, transcript) = (dir.join("sft.jsonl"), dir.join("base.transcript.jsonl"));
    let o = run(&[
        &render(&trace, &out)[..],
        &[
            "--transcript-out",
            path(&transcript),
            "--chunk-steps",
            "100",
        ],
    ]
    .concat());
    assert!(
        text(&o.stdout).contains("4 episodes (400 steps)"),
        "{}",
        text(&o.stdout)
    );
    let cfg = MorpheusConfig::default();
    let rows: Vec<_> = TraceReader::open(&[&trace]).map(Result::unwrap).collect();
    let episodes = read(&out);
    let steps = steps_of(&episodes);
    assert_eq!(steps.len(), rows.len());
    for (s, row) in steps.iter().zip(&rows) {
        assert_eq!(s.reward, row.reward, "step {}", row.step);
        let action = row.action.as_ref().unwrap().as_u64().unwrap() as usize;
        let name = match ToolCall::from_op(Op::decode(action, &cfg).unwrap(), &cfg) {
            Some(c) => c.tool().as_str(),
            None => "wait",
        };
        assert_eq!(s.action[0]["name"], name);
        let chat = s.chat_completions.messages();
        assert_eq!(chat[0]["role"], "system");
        assert_eq!(
            chat.last().unwrap()["tool_calls"][0]["function"]["name"],
            name
        );
        assert!(
            s.input
                .as_str()
                .unwrap()
                .starts_with(&format!("Hour {}", row.step))
        );
    }
    assert!(steps.iter().any(|s| s.action[0]["name"] == "reorder"));
    for line in std::fs::read_to_string(&out).unwrap().lines() {
        assert_rllm_reads(line);
    }
    let calls: Vec<TranscriptCall> = TranscriptReader::open(&transcript)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(calls.len(), 400);
    // The transcript exported again gives the same episodes.
    let again = dir.join("again.jsonl");
    let options = ExportOptions {
        chunk_steps: Some(100),
        advantage: None,
    };
    export_calls(&[&trace], &[&transcript], &again, &options).unwrap();
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&out).unwrap());
}

#[test]
fn a_replay_that_does_not_reproduce_the_trace_names_the_step() {
    let dir = Scratch::new("llm-episodes-mismatch");
    let trace = base_stock_trace(&dir, "50");
    let text_of = std::fs::read_to_string(&trace).unwrap();
    let mut lines: Vec<String> = text_of.lines().map(str::to_string).collect();
    let mut row: Value = serde_json::from_str(&lines[17]).unwrap();
    row["reward"] = Value::from(row["reward"].as_f64().unwrap() + 1.0);
    lines[17] = row.to_string();
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let out = dir.join("sft.jsonl");
    let err = fails_with(&render(&trace, &out), 2, "step 17");
    assert!(err.contains("base.jsonl"), "{err}");
    assert!(!out.exists());
    // The trace, its events table and its manifest (and the manifest's lock file).
    let left = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".lock")
        })
        .count();
    assert_eq!(left, 3, "no transcript left behind");
}

#[test]
fn render_refuses_a_trace_without_a_manifest_or_actions() {
    let dir = Scratch::new("llm-episodes-refusals");
    let trace = base_stock_trace(&dir, "20");
    let out = dir.join("sft.jsonl");
    std::fs::remove_file(dir.join("base.manifest.json")).unwrap();
    fails_with(&render(&trace, &out), 2, "no run manifest");
    let bare = dir.join("bare.jsonl");
    run(&[
        "run",
        "worlds/warehouse.toml",
        "--agent",
        "base-stock",
        "--steps",
        "5",
        "--run-id",
        "bare",
        "--trace",
        path(&bare),
    ]);
    fails_with(&render(&bare, &out), 2, "--record-transitions");
}

#[test]
fn a_numeric_export_is_unchanged_by_the_conversation_fields() {
    let dir = Scratch::new("llm-episodes-numeric");
    let trace = base_stock_trace(&dir, "30");
    let out = dir.join("episodes.jsonl");
    export(&[&trace], &out, &ExportOptions::default()).unwrap();
    let line = std::fs::read_to_string(&out).unwrap();
    assert!(line.contains(r#""chat_completions":[],"thought":"","model_response":"","#));
    assert_rllm_reads(line.lines().next().unwrap());
}
