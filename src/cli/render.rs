//! `perennial episodes --render`: a numeric agent's enterprise-world trace, replayed and told as tool calls.
//!
//! The run is rebuilt from its manifest (the world file's text and the seed), and each
//! trace row becomes one model call: the hour's rendering as the user message, the row's
//! action as the tool call it stands for (`wait{hours: 1}` for the no-op), answered by a
//! [`Desk`] over the replayed world. The replay must give the trace's reward on every row;
//! the first that differs is an error naming its step. The transcripts then go through
//! the `--transcripts` export: Steps with conversations, ready for supervised fine-tuning.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::Failure;
use crate::episodes::{
    DeskLog, EpisodesArgs, ExportOptions, RenderFormat, TranscriptWriter, export_calls,
};
use crate::morpheus::api::{Catalogue, Desk, DeskOptions, Hour, Stepper, ToolCall};
use crate::morpheus::api::{render_json, render_text};
use crate::morpheus::{Morpheus, MorpheusConfig, Op, default_reward_spec};
use crate::registry::Registry;
use crate::seed::{self, Stream};
use crate::session::{Session, StepError};
use crate::trace::{Manifest, RunIdentity, TraceReader, TraceRow};
use crate::world_file::TomlFile;
use crate::world_file::WorldFile;

/// Runs `perennial episodes`: with `--render`, renders each trace as a transcript first.
pub(super) fn episodes(registry: &Registry, args: &EpisodesArgs) -> Result<String, Failure> {
    let Some(format) = args.render else {
        return crate::episodes::run_cli(args).map_err(Failure::input);
    };
    let traces = crate::episodes::without_their_events_tables(&args.traces);
    if args.transcript_out.is_some() && traces.len() != 1 {
        return Err(Failure::input(format!(
            "--transcript-out writes one transcript, but {} traces are given; render them one at a time",
            traces.len()
        )));
    }
    let destinations: Vec<(PathBuf, bool)> = match &args.transcript_out {
        Some(p) => vec![(p.clone(), false)],
        None => (0..traces.len())
            .map(|i| {
                let mut name = args.out.as_os_str().to_owned();
                name.push(format!(".{i}.transcript.partial"));
                (PathBuf::from(name), true)
            })
            .collect(),
    };
    {
        let inputs: Vec<(&str, &Path)> = traces.iter().map(|t| ("a trace", t.as_path())).collect();
        let mut outputs: Vec<(&str, &Path)> = vec![("--out", args.out.as_path())];
        outputs.extend(
            destinations
                .iter()
                .map(|(p, _)| ("the transcript", p.as_path())),
        );
        crate::output::check_distinct(&inputs, &outputs).map_err(Failure::input)?;
    }
    let result = (|| {
        for (trace, (dest, _)) in traces.iter().zip(&destinations) {
            render_trace(registry, trace, format, dest)?;
        }
        let options = ExportOptions {
            chunk_steps: args.chunk_steps,
            advantage: args.advantage,
        };
        let transcripts: Vec<&PathBuf> = destinations.iter().map(|(p, _)| p).collect();
        let summary =
            export_calls(&traces, &transcripts, &args.out, &options).map_err(Failure::input)?;
        let mut text = format!("Wrote {}: {summary}", args.out.display());
        if let Some(p) = &args.transcript_out {
            text.push_str(&format!(" Transcript: {}.", p.display()));
        }
        Ok(text)
    })();
    for (path, temporary) in &destinations {
        if *temporary {
            // Best effort: the export's own result matters more than a leftover file.
            let _ = std::fs::remove_file(path);
        }
    }
    result
}

/// The system prompt of a rendered transcript: what the world is and its tools, briefly.
pub(crate) fn system_prompt(catalogue: &Catalogue) -> String {
    let mut text = String::from(
        "You run the warehouse of a firm, one simulated hour per turn. Each hour you see its \
         state and answer with tool calls: queries cost no time; one operation, or wait, \
         ends the hour. The firm earns the hour's profit.\nTools:\n",
    );
    for tool in catalogue.tools() {
        let args: Vec<&str> = tool.args.iter().map(|a| a.name).collect();
        let brief = tool
            .description
            .split_once(". ")
            .map_or(tool.description.as_str(), |(first, _)| first)
            .trim_end_matches('.');
        text.push_str(&format!(
            "- {}({}): {brief}.\n",
            tool.name.as_str(),
            args.join(", ")
        ));
    }
    text
}

/// A session as the desk's stepper: it remembers the action and reward of the last hour
/// it stepped (a replay compares them with the trace).
pub(super) struct Replay<'a> {
    pub(super) session: &'a mut Session<Morpheus>,
    pub(super) stepped: Option<(usize, f64)>,
}

impl Stepper for Replay<'_> {
    type Error = StepError;

    fn world(&self) -> &Morpheus {
        self.session.env()
    }

    fn step_hour(&mut self, action: usize) -> Result<Hour, StepError> {
        let s = self.session.step(&action)?;
        self.stepped = Some((action, s.reward));
        Ok(Hour {
            reward: s.reward,
            ended: s.done(),
        })
    }
}

fn at(trace: &Path, message: impl std::fmt::Display) -> Failure {
    Failure::input(format!("{}: {message}", trace.display()))
}

/// The run of `trace`, rebuilt from its manifest: the world, its layout and a session
/// with the run's scheduler and seeds, started.
fn rebuild(
    registry: &Registry,
    trace: &Path,
    first: &TraceRow,
) -> Result<(Session<Morpheus>, MorpheusConfig), Failure> {
    let manifest = Manifest::find(trace, &first.run_id).ok_or_else(|| {
        at(
            trace,
            format!(
                "no run manifest of run `{}` beside it ({}); --render replays the run from its manifest's world file and seed",
                first.run_id,
                Manifest::path_for(trace).display()
            ),
        )
    })?;
    let record = manifest.world_file.ok_or_else(|| {
        at(
            trace,
            "its run manifest records no world file; --render replays runs of `perennial run`",
        )
    })?;
    let world = WorldFile::parse_with(&record.text, &record.path, registry)
        .map_err(|e| at(trace, format!("the world file of its manifest: {e}")))?;
    let Some(config) = world.params::<MorpheusConfig>() else {
        return Err(at(
            trace,
            format!(
                "the run's world is of kind `{}`; --render tells enterprise-world (`morpheus`) runs as tool calls",
                world.kind()
            ),
        ));
    };
    let reward = world.reward_spec().unwrap_or_else(default_reward_spec);
    let env = Morpheus::new(config.clone(), reward).map_err(|e| at(trace, e))?;
    let scheduler = world
        .scheduler(seed::derive(first.seed, Stream::Scheduler, 0))
        .map_err(|e| at(trace, e))?;
    let identity = RunIdentity {
        run_id: first.run_id.clone(),
        seed: first.seed,
        algorithm_id: first.algorithm_id.clone(),
        task: first.task.clone(),
        notify: first.notify,
    };
    let mut session = Session::new(env, scheduler, identity);
    session.start().map_err(|e| at(trace, e))?;
    Ok((session, config.clone()))
}

/// Replays `trace` and writes its transcript to `dest`, one call per row.
fn render_trace(
    registry: &Registry,
    trace: &Path,
    format: RenderFormat,
    dest: &Path,
) -> Result<(), Failure> {
    let mut rows = TraceReader::open(&[trace]);
    let first = match rows.next() {
        Some(row) => row.map_err(Failure::input)?,
        None => return Err(at(trace, "the trace has no rows")),
    };
    if first.step != 0 {
        return Err(at(
            trace,
            format!(
                "its first row is step {}; --render replays a run from its start (step 0)",
                first.step
            ),
        ));
    }
    let (mut session, config) = rebuild(registry, trace, &first)?;
    let mut desk = Desk::new(&config, DeskOptions::default());
    let writer = TranscriptWriter::create(dest).map_err(Failure::input)?;
    let run_id = first.run_id.clone();
    let mut log = DeskLog::new(writer, run_id.clone(), first.algorithm_id.clone());
    log.carry(json!({"role": "system", "content": system_prompt(desk.catalogue())}));
    let mut next = Some(Ok(first));
    let mut index = 0u64;
    while let Some(row) = next {
        let row = row.map_err(Failure::input)?;
        if row.run_id != run_id || row.step != index {
            return Err(at(
                trace,
                format!(
                    "row {} is step {} of run `{}`, expected step {index} of run `{run_id}`; --render takes one whole run per trace",
                    index + 1,
                    row.step,
                    row.run_id
                ),
            ));
        }
        if session.episode_ended() {
            session.next_episode();
            desk.restart();
        }
        let action = row.action.as_ref().and_then(Value::as_u64).ok_or_else(|| {
            at(
                trace,
                format!(
                    "step {}: no numeric action; --render needs a trace written with --record-transitions by a numeric agent",
                    row.step
                ),
            )
        })?;
        let op = usize::try_from(action)
            .ok()
            .and_then(|a| Op::decode(a, &config))
            .ok_or_else(|| {
                at(
                    trace,
                    format!(
                        "step {}: action {action} lies outside the world's actions",
                        row.step
                    ),
                )
            })?;
        let (name, arguments) = match ToolCall::from_op(op, &config) {
            Some(call) => (call.tool().as_str(), call.arguments()),
            None => ("wait", json!({"hours": 1})),
        };
        let prompt = match format {
            RenderFormat::Text => render_text(session.env()),
            RenderFormat::Json => render_json(session.env()).to_string(),
        };
        log.carry(json!({"role": "user", "content": prompt}));
        let mut replay = Replay {
            session: &mut session,
            stepped: None,
        };
        let reply = desk
            .call_value(&mut replay, name, &arguments)
            .map_err(|e| at(trace, e))?;
        match replay.stepped {
            Some((a, reward)) if a as u64 == action && reward == row.reward => {}
            Some((_, reward)) => {
                return Err(at(
                    trace,
                    format!(
                        "step {}: the replayed world earns {reward} where the trace has {}; the world file, the seed or the perennial version is not the run's",
                        row.step, row.reward
                    ),
                ));
            }
            None => {
                return Err(at(
                    trace,
                    format!("step {}: the desk let no hour pass for `{name}`", row.step),
                ));
            }
        }
        log.write(row.step, 1, None, name, arguments.to_string(), &reply)
            .map_err(Failure::input)?;
        index += 1;
        next = rows.next();
    }
    log.finish().map_err(Failure::input)
}
