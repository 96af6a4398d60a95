//! `perennial play`: a person (or any program on stdin and stdout) runs the enterprise world through its tools.
//!
//! In a terminal it shows the hour's text rendering and reads commands (`reorder 3 100`,
//! `wait 5`, `query_orders purchase 2 10`, `help`, `tools`, `quit`); with `--json` it reads
//! one call per line (`{"name", "arguments"}` or `{"path", "method", "body"}`) and writes
//! one reply envelope per line. Every call goes to a [`Desk`] over a session of the world,
//! so the trace, its manifest and the transcript are what any run of the world writes.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::Failure;
use super::render::{Replay, system_prompt};
use crate::episodes::{DeskLog, TranscriptWriter};
use crate::morpheus::api::{
    CallError, Desk, DeskOptions, Reply, ToolCall, render_json, render_text,
};
use crate::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use crate::regime::NotifyLevel;
use crate::registry::Registry;
use crate::seed::{self, Stream};
use crate::session::Session;
use crate::trace::{Manifest, RunIdentity, TraceFormat};
use crate::world_file::TomlFile;
use crate::world_file::WorldFile;

/// Longest input line, in bytes (1 MiB); a longer one gets an error reply.
const MAX_LINE_BYTES: usize = 1 << 20;

/// `perennial play WORLD_FILE [--seed S] [--hours N] [--trace FILE] [--json]`
#[derive(Clone, Debug, clap::Args)]
pub struct PlayArgs {
    /// An enterprise-world (`kind = "morpheus"`) world file.
    pub world_file: PathBuf,
    /// Run seed [default: the world file's, else 0].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Hours to play; the session ends when they are spent [default: 168].
    #[arg(long)]
    pub hours: Option<u64>,
    /// Trace file (JSON Lines) [default: runs/<run-id>.jsonl].
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Transcript file [default: <run-id>.transcript.jsonl beside the trace].
    #[arg(long)]
    pub transcript: Option<PathBuf>,
    /// Run id [default: <task>-play-seed<seed>, or <task>-stdio-seed<seed> with --json].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Speak JSON lines: one call in, one reply envelope out.
    #[arg(long)]
    pub json: bool,
}

const HELP: &str = "Commands: a tool and its arguments in order, e.g.
  reorder 3 100              buy 100 units of SKU 3 (ends the hour)
  choose_carrier 1 | expedite 2 | repair_dock 0   (each ends the hour)
  wait 5                     let 5 hours pass (1 to 24; `wait` is 1)
  query_inventory [sku]      stock (all SKUs without one)
  query_orders customer|purchase|shipment [sku|all] [limit]
  query_ledger | query_carriers
  show (the hour again), tools (their schemas), help, quit";

/// Runs `perennial play`.
pub(super) fn play(registry: &Registry, args: &PlayArgs) -> Result<(), Failure> {
    let world = WorldFile::load_with(&args.world_file, registry).map_err(Failure::input)?;
    let Some(config) = world.params::<MorpheusConfig>() else {
        return Err(Failure::input(format!(
            "{}: the world is of kind `{}`; perennial play plays the enterprise world (`morpheus`)",
            args.world_file.display(),
            world.kind()
        )));
    };
    let seed = args.seed.or(world.harness.seed).unwrap_or(0);
    let hours = args.hours.unwrap_or(168);
    let model = if args.json { "stdio" } else { "human" };
    let run_id = match &args.run_id {
        Some(id) => id.clone(),
        None => format!(
            "{}-{}-seed{seed}",
            config.task,
            if args.json { "stdio" } else { "play" }
        ),
    };
    crate::limits::check_run_id("--run-id", &run_id).map_err(Failure::input)?;
    let absolute = super::run::absolute;
    let trace = absolute(
        &args
            .trace
            .clone()
            .unwrap_or_else(|| PathBuf::from("runs").join(format!("{run_id}.jsonl"))),
    );
    let transcript = absolute(&args.transcript.clone().unwrap_or_else(|| {
        trace
            .parent()
            .unwrap_or(Path::new(""))
            .join(format!("{run_id}.transcript.jsonl"))
    }));
    let manifest_path = Manifest::path_for(&trace);
    let events = crate::trace::events_path(&trace, TraceFormat::Jsonl);
    crate::output::check_distinct(
        &[("the world file", args.world_file.as_path())],
        &[
            ("--trace", trace.as_path()),
            ("--transcript", transcript.as_path()),
            ("the trace's events table", events.as_path()),
            ("the run's manifest", manifest_path.as_path()),
        ],
    )
    .map_err(Failure::input)?;
    for p in [&trace, &transcript] {
        crate::output::check_output(p).map_err(Failure::input)?;
        crate::output::create_parent(p).map_err(Failure::input)?;
    }
    let reward = world.reward_spec().unwrap_or_else(default_reward_spec);
    let env = Morpheus::new(config.clone(), reward).map_err(Failure::input)?;
    let scheduler = world
        .scheduler(seed::derive(seed, Stream::Scheduler, 0))
        .map_err(Failure::input)?;
    let identity = RunIdentity {
        run_id: run_id.clone(),
        seed,
        algorithm_id: model.into(),
        task: config.task.clone(),
        notify: NotifyLevel::None,
    };
    let mut session = Session::new(env, scheduler, identity);
    session.set_record_transitions(true);
    session
        .open_trace(&trace, TraceFormat::Jsonl, None, 0, None)
        .map_err(Failure::input)?;
    let mut manifest = Manifest {
        schema_version: crate::trace::TRACE_SCHEMA_VERSION,
        perennial_version: crate::VERSION.to_string(),
        run_id: run_id.clone(),
        task: config.task.clone(),
        world_file: Some(crate::trace::WorldFileRecord {
            path: absolute(&args.world_file),
            hash: crate::trace::content_hash(world.text()),
            text: world.text().to_string(),
        }),
        seed,
        agent: model.into(),
        agent_options: json!({}),
        trace: Some(trace.clone()),
        options: json!({"hours": hours, "json": args.json, "transcript": transcript}),
        argv: std::env::args().collect(),
        started_at: crate::trace::utc_now(),
        resumed_at: Vec::new(),
        ended_at: None,
        steps_done: 0,
        exit_status: "running".into(),
    };
    let manifest_lock = Manifest::lock(&manifest_path).map_err(Failure::input)?;
    manifest.write(&manifest_path).map_err(Failure::input)?;
    if let Some(sink) = session.sink_mut() {
        sink.attach_manifest(&serde_json::to_string(&manifest).map_err(Failure::run)?);
    }
    session.start().map_err(Failure::run)?;
    let writer = TranscriptWriter::create(&transcript).map_err(Failure::input)?;
    let desk = Desk::new(config, DeskOptions::default());
    let mut log = DeskLog::new(writer, run_id, model.into());
    log.carry(json!({"role": "system", "content": system_prompt(desk.catalogue())}));
    log.carry(json!({"role": "user", "content": render_text(session.env())}));
    let mut game = Game {
        desk,
        session,
        log,
        hours,
        json: args.json,
        reward: 0.0,
    };
    let stdin = std::io::stdin();
    let result = game.play(&mut stdin.lock());
    let closed = game.session.close().map_err(Failure::run);
    let finished = game.log.finish().map_err(Failure::run);
    manifest.ended_at = Some(crate::trace::utc_now());
    manifest.steps_done = game.session.counters().step;
    manifest.exit_status = match &result {
        Ok(()) => "completed".into(),
        Err(e) => format!("failed: {}", e.message),
    };
    manifest.write(&manifest_path).map_err(Failure::run)?;
    drop(manifest_lock);
    result.and(closed).and(finished)?;
    eprintln!(
        "played {} hours, reward {:.2}; {} calls ({} invalid, {} malformed). Trace {}, transcript {}.",
        game.session.counters().step,
        game.reward,
        game.desk.counts().calls,
        game.desk.counts().invalid_calls,
        game.desk.counts().malformed_calls,
        trace.display(),
        transcript.display()
    );
    Ok(())
}

/// One session of play.
struct Game {
    desk: Desk,
    session: Session<Morpheus>,
    log: DeskLog,
    hours: u64,
    json: bool,
    reward: f64,
}

/// What one input line asks for.
enum Input {
    /// A call for the desk, the text typed (text mode) kept as the call's content.
    Call(Result<ToolCall, CallError>, String, Value, Option<String>),
    /// Print this and go on.
    Say(String),
    /// Stop.
    Quit,
}

fn say(out: &mut impl Write, text: &str) -> Result<(), Failure> {
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::run(format!("stdout: {e}")))
}

impl Game {
    fn done(&self) -> bool {
        self.session.counters().step >= self.hours || self.session.episode_ended()
    }

    fn play(&mut self, input: &mut impl BufRead) -> Result<(), Failure> {
        let mut out = std::io::stdout().lock();
        if !self.json {
            say(&mut out, &render_text(self.session.env()))?;
            say(&mut out, "Type `help` for the commands.")?;
        }
        let mut line = Vec::new();
        while !self.done() {
            if !self.json {
                write!(out, "> ")
                    .and_then(|()| out.flush())
                    .map_err(Failure::run)?;
            }
            line.clear();
            let n = std::io::Read::take(&mut *input, MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .map_err(|e| Failure::run(format!("stdin: {e}")))?;
            if n == 0 {
                break;
            }
            let parsed = if n > MAX_LINE_BYTES {
                // Skip the rest of the long line.
                let mut rest = Vec::new();
                while !rest.ends_with(b"\n") {
                    rest.clear();
                    let m = std::io::Read::take(&mut *input, MAX_LINE_BYTES as u64)
                        .read_until(b'\n', &mut rest)
                        .map_err(|e| Failure::run(format!("stdin: {e}")))?;
                    if m == 0 {
                        break;
                    }
                }
                let message = format!("the line is longer than {MAX_LINE_BYTES} bytes");
                Input::Call(
                    Err(CallError::Malformed { message }),
                    "input".into(),
                    Value::Null,
                    None,
                )
            } else {
                let text = String::from_utf8_lossy(&line).trim().to_string();
                if text.is_empty() {
                    continue;
                }
                if self.json {
                    self.json_input(&text)
                } else {
                    self.text_input(&text)
                }
            };
            match parsed {
                Input::Quit => break,
                Input::Say(text) => say(&mut out, &text)?,
                Input::Call(call, name, arguments, typed) => {
                    let reply = self.call(call, &name, &arguments, typed)?;
                    if self.json {
                        say(&mut out, &reply.to_json())?;
                    } else {
                        match &reply.error {
                            None => say(&mut out, &format!("ok: {}", reply.data))?,
                            Some(e) => say(&mut out, &format!("error {}: {e}", reply.status))?,
                        }
                        if reply
                            .data
                            .get("hours_passed")
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                            > 0
                        {
                            say(&mut out, &render_text(self.session.env()))?;
                        }
                    }
                }
            }
        }
        if !self.json {
            let why = if self.session.episode_ended() {
                "the episode has ended"
            } else if self.session.counters().step >= self.hours {
                "the hours are spent"
            } else {
                "bye"
            };
            say(&mut out, why)?;
        }
        Ok(())
    }

    /// A typed command: a tool name and its arguments in order.
    fn text_input(&self, text: &str) -> Input {
        let mut words = text.split_whitespace();
        let name = words.next().unwrap_or_default().to_string();
        match name.as_str() {
            "quit" | "exit" => return Input::Quit,
            "help" | "?" => return Input::Say(HELP.into()),
            "show" => return Input::Say(render_text(self.session.env())),
            "tools" => {
                let lines: Vec<String> = self
                    .desk
                    .catalogue()
                    .openai()
                    .iter()
                    .map(Value::to_string)
                    .collect();
                return Input::Say(lines.join("\n"));
            }
            _ => {}
        }
        let mut arguments = Map::new();
        if let Some(tool) = crate::morpheus::api::ToolName::parse(&name)
            .and_then(|tool| self.desk.catalogue().get(tool))
        {
            let mut words = words.peekable();
            for arg in &tool.args {
                let value = match words.next() {
                    Some("all" | "null" | "-") => Value::Null,
                    Some(w) => w
                        .parse::<u64>()
                        .map_or_else(|_| Value::from(w), Value::from),
                    None => match arg.name {
                        "hours" => Value::from(1),
                        "limit" => Value::from(10),
                        _ if matches!(
                            arg.kind,
                            crate::morpheus::api::ArgKind::Index { nullable: true, .. }
                        ) =>
                        {
                            Value::Null
                        }
                        _ => continue,
                    },
                };
                arguments.insert(arg.name.into(), value);
            }
            if let Some(extra) = words.next() {
                arguments.insert(format!("extra:{extra}"), Value::from(extra));
            }
        }
        let arguments = Value::Object(arguments);
        let parsed = self.desk.catalogue().parse_value(&name, &arguments);
        Input::Call(parsed, name, arguments, Some(text.to_string()))
    }

    /// A JSON line: a call, a request, or the `render` and `tools` pseudo-tools.
    fn json_input(&self, text: &str) -> Input {
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                let message = format!("the line is not JSON ({e}); send one call per line");
                return Input::Call(
                    Err(CallError::Malformed { message }),
                    "input".into(),
                    Value::Null,
                    None,
                );
            }
        };
        if !value.is_object() {
            let message = "the line is not a JSON object; send {\"name\", \"arguments\"} or {\"path\", \"method\", \"body\"}".to_string();
            return Input::Call(
                Err(CallError::Malformed { message }),
                "input".into(),
                Value::Null,
                None,
            );
        }
        if value.get("path").is_some() {
            let parsed = self.desk.catalogue().parse_request(&value);
            let name = parsed
                .as_ref()
                .map_or_else(|_| "request".to_string(), |c| c.tool().as_str().to_string());
            let arguments = parsed.as_ref().map_or(Value::Null, ToolCall::arguments);
            return Input::Call(parsed, name, arguments, None);
        }
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let arguments = match value.get("arguments") {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
            Some(v) => v.clone(),
            None => json!({}),
        };
        match name.as_str() {
            "render" => {
                let format = arguments
                    .get("format")
                    .and_then(Value::as_str)
                    .unwrap_or("text");
                let data = match format {
                    "text" => json!({"format": "text", "text": render_text(self.session.env())}),
                    "json" => json!({"format": "json", "hour": render_json(self.session.env())}),
                    _ => {
                        let r = Reply::failed(
                            422,
                            "render: argument `format` must be \"text\" or \"json\"",
                            Value::Null,
                        );
                        return Input::Say(r.to_json());
                    }
                };
                Input::Say(Reply::ok(data).to_json())
            }
            "tools" => Input::Say(Reply::ok(Value::from(self.desk.catalogue().openai())).to_json()),
            _ => {
                let parsed = match &arguments {
                    Value::String(s) => self.desk.catalogue().parse(&name, s),
                    v => self.desk.catalogue().parse_value(&name, v),
                };
                Input::Call(parsed, name, arguments, None)
            }
        }
    }

    /// Answers one call at the desk (a `wait` cut to the hours left) and writes it to the
    /// transcript.
    fn call(
        &mut self,
        call: Result<ToolCall, CallError>,
        name: &str,
        arguments: &Value,
        typed: Option<String>,
    ) -> Result<Reply, Failure> {
        let left = self.hours.saturating_sub(self.session.counters().step);
        let call = match call {
            Ok(ToolCall::Wait { hours }) if u64::from(hours) > left => Ok(ToolCall::Wait {
                hours: u32::try_from(left).unwrap_or(u32::MAX).max(1),
            }),
            other => other,
        };
        let step = self.session.counters().step;
        let mut stepper = Replay {
            session: &mut self.session,
            stepped: None,
        };
        let reply = self.desk.answer(&mut stepper, call).map_err(Failure::run)?;
        let passed = self.session.counters().step - step;
        if let Some(r) = reply.data.get("reward").and_then(Value::as_f64) {
            self.reward += r;
        }
        let arguments = match arguments {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        self.log
            .write(step, passed, typed, name, arguments, &reply)
            .map_err(Failure::run)?;
        if passed > 0 {
            let hour = render_text(self.session.env());
            self.log.carry(json!({"role": "user", "content": hour}));
        }
        Ok(reply)
    }
}
