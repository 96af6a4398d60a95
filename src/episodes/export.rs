//! Trace rows to episodes, streaming: one episode in memory at a time.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::advantage::{AdvantageEstimator, GroupedRewards};
use super::calls::Calls;
use super::error::EpisodeError;
use super::model::{Episode, Step, TerminationReason, trajectory};
use super::roles::{RoleSteps, role_actions, role_trajectories};
use super::summary::{ExportSummary, GroupSummary};
use crate::trace::{RecordedObs, TornTail, TraceReader, TraceRow};

/// The trajectory name of a perennial run's single agent.
pub const AGENT_NAME: &str = "agent";

/// Reads traces written with `--record-transitions` and yields their episodes in order.
///
/// One [`Episode`] per env episode per run, or, with `chunk_steps`, one per chunk of at
/// most that many steps (a chunk the env did not end is `unknown`). Rows are read in the
/// order the files are given; a run's rows must be whole and in step order (a run may
/// continue from one file into the next). Rollout indices count the episodes of each task
/// across all the files, from 0.
///
/// Memory holds the episode being built and one `(run_id, episode)` pair per episode seen
/// (to catch a trace given twice), never the steps of earlier episodes.
pub struct EpisodeReader {
    files: std::vec::IntoIter<PathBuf>,
    source: Option<Source>,
    chunk_steps: Option<u64>,
    cursor: Option<Cursor>,
    pending: Option<Pending>,
    ready: VecDeque<Episode>,
    seen: HashSet<(String, u64)>,
    rollouts: HashMap<String, u64>,
    /// The fork rollouts whose episode was started, to refuse a second.
    fork_runs: HashSet<String>,
    torn: Vec<TornTail>,
    stopped: bool,
    /// With transcripts: the model calls that become the Steps, in place of the rows.
    calls: Option<Calls>,
}

struct Source {
    path: PathBuf,
    reader: TraceReader,
    row: u64,
    /// The `fork` event of the file's events table, when the trace is a fork's rollout.
    fork: Option<ForkOrigin>,
    /// The run's roles in role order with their action counts, from the world file its
    /// manifest records: read at the first row with role rewards (`None` until then;
    /// `Some(None)` when no manifest names an enterprise world).
    roles: Option<Option<Vec<(String, usize)>>>,
}

/// Where a fork's rollout came from: its group and its index in it.
#[derive(Clone, Debug)]
struct ForkOrigin {
    run_id: String,
    step: u64,
    k: u64,
}

impl ForkOrigin {
    /// The `fork` event of `trace`'s events table, if it has one.
    fn of(trace: &Path) -> Option<Self> {
        let events = crate::trace::find_events(trace)?;
        crate::trace::EventReader::open(events)
            .find(|e| e.event == crate::trace::FORK)
            .and_then(|e| {
                Some(ForkOrigin {
                    run_id: e.run_id,
                    step: e.start?,
                    k: e.target?,
                })
            })
    }
}

/// Where the env episode being read stands.
struct Cursor {
    run_id: String,
    episode: u64,
    next_step: u64,
    next_episode_step: u64,
    ended: bool,
    chunks: u64,
}

/// The episode (or chunk) being built.
struct Pending {
    run_id: String,
    seed: u64,
    algorithm_id: String,
    task: String,
    episode: u64,
    chunk: u64,
    first_step: u64,
    first_episode_step: u64,
    /// Trace rows read into it.
    rows: u64,
    steps: Vec<Step>,
    signals: BTreeMap<String, f64>,
    regimes: Vec<String>,
    fork: Option<ForkOrigin>,
    /// Per Step, each role's own reward (empty maps in a run without roles).
    role_rewards: Vec<BTreeMap<String, f64>>,
    /// The roles and their action counts, when the run's world file was found.
    roles: Option<Vec<(String, usize)>>,
}

impl EpisodeReader {
    /// A reader over `traces`, cutting episodes into chunks of `chunk_steps` steps if given.
    ///
    /// # Errors
    ///
    /// `chunk_steps` is 0.
    pub fn open<P: AsRef<Path>>(
        traces: &[P],
        chunk_steps: Option<u64>,
    ) -> Result<Self, EpisodeError> {
        Self::with_transcripts::<P, P>(traces, &[], chunk_steps)
    }

    /// A reader whose Steps are the model calls of `transcripts` (one per run, matched by
    /// run id) instead of the trace rows, when any are given: one Step per call, grouped
    /// into episodes and chunks by the trace row of its last hour. The rows need no `obs`
    /// and `action` columns then.
    ///
    /// # Errors
    ///
    /// `chunk_steps` is 0, or a transcript cannot be opened, holds no call or shares its
    /// run with another.
    pub fn with_transcripts<P: AsRef<Path>, Q: AsRef<Path>>(
        traces: &[P],
        transcripts: &[Q],
        chunk_steps: Option<u64>,
    ) -> Result<Self, EpisodeError> {
        if chunk_steps == Some(0) {
            return Err(EpisodeError::InvalidArgument(
                "--chunk-steps must be at least 1".into(),
            ));
        }
        Ok(EpisodeReader {
            files: crate::trace::path_queue(traces),
            source: None,
            chunk_steps,
            cursor: None,
            pending: None,
            ready: VecDeque::new(),
            seen: HashSet::new(),
            rollouts: HashMap::new(),
            fork_runs: HashSet::new(),
            torn: Vec::new(),
            stopped: false,
            calls: if transcripts.is_empty() {
                None
            } else {
                Some(Calls::open(transcripts)?)
            },
        })
    }

    /// Calls made after their run's last row, left out of the Steps.
    pub fn calls_after_end(&self) -> u64 {
        self.calls.as_ref().map_or(0, |c| c.after_end)
    }

    /// Queues the episode `p` makes, unless it holds no Step (a chunk whose hours all
    /// belong to calls that end in the next one).
    fn complete(&mut self, p: Pending, reason: TerminationReason) {
        if p.steps.is_empty() && self.calls.is_some() {
            return;
        }
        let e = finish(p, reason, &mut self.rollouts);
        self.ready.push_back(e);
    }

    /// The torn trace tails (killed writers) met so far; their complete rows were used.
    pub fn torn_tails(&self) -> &[TornTail] {
        &self.torn
    }

    fn next_row(&mut self) -> Option<Result<TraceRow, EpisodeError>> {
        loop {
            if self.source.is_none() {
                let path = self.files.next()?;
                self.source = Some(Source {
                    reader: TraceReader::open(&[&path]),
                    fork: ForkOrigin::of(&path),
                    roles: None,
                    path,
                    row: 0,
                });
            }
            let source = self.source.as_mut()?;
            match source.reader.next() {
                Some(Ok(row)) => {
                    source.row += 1;
                    return Some(Ok(row));
                }
                Some(Err(e)) => return Some(Err(e.into())),
                None => {
                    self.torn.extend_from_slice(source.reader.torn_tails());
                    self.source = None;
                }
            }
        }
    }

    fn inconsistent(&self, message: String) -> EpisodeError {
        let (path, row) = self
            .source
            .as_ref()
            .map(|s| (s.path.clone(), s.row))
            .unwrap_or_default();
        EpisodeError::Inconsistent { path, row, message }
    }

    fn take_row(&mut self, mut row: TraceRow) -> Result<(), EpisodeError> {
        let transition = match (row.obs.take(), row.action.take()) {
            (Some(obs), Some(action)) => Some((obs, action)),
            _ => None,
        };
        if transition.is_none() && self.calls.is_none() {
            let (path, row_no) = self
                .source
                .as_ref()
                .map(|s| (s.path.clone(), s.row))
                .unwrap_or_default();
            return Err(EpisodeError::MissingTransitions {
                path,
                row: row_no,
                step: row.step,
            });
        }
        if row.task.contains(':') {
            let message = format!(
                "task `{}` contains `:`; rLLM takes an episode's task id up to the first `:`, so its groups would be wrong: rename the world's task",
                row.task
            );
            return Err(self.inconsistent(message));
        }
        let continues = self
            .cursor
            .as_ref()
            .is_some_and(|c| c.run_id == row.run_id && c.episode == row.episode);
        if continues {
            if let Some(message) = self.cursor.as_ref().and_then(|c| gap(c, &row)) {
                return Err(self.inconsistent(message));
            }
        } else {
            if let Some(p) = self.pending.take() {
                self.complete(p, TerminationReason::Unknown);
            }
            if let Some(c) = &self.cursor
                && c.run_id == row.run_id
                && c.next_step != row.step
            {
                let message = format!(
                    "run `{}` jumps from step {} to step {}; pass each run's trace files whole and in order",
                    row.run_id,
                    c.next_step.saturating_sub(1),
                    row.step
                );
                return Err(self.inconsistent(message));
            }
            if !self.seen.insert((row.run_id.clone(), row.episode)) {
                let message = format!(
                    "run `{}` episode {} was already read; is a trace given twice?",
                    row.run_id, row.episode
                );
                return Err(self.inconsistent(message));
            }
            self.cursor = Some(Cursor {
                run_id: row.run_id.clone(),
                episode: row.episode,
                next_step: row.step,
                next_episode_step: row.episode_step,
                ended: false,
                chunks: 0,
            });
        }
        let fork = self
            .source
            .as_ref()
            .and_then(|s| s.fork.clone())
            .filter(|f| f.run_id == row.run_id);
        if let Some(f) = &fork
            && self.pending.is_none()
            && !self.fork_runs.insert(row.run_id.clone())
        {
            let message = format!(
                "fork rollout `{}` (k = {}) has more than one episode (its world ended an episode, or --chunk-steps cut it); a fork's group compares whole rollouts: export it without --chunk-steps, or fork fewer --steps",
                row.run_id, f.k
            );
            return Err(self.inconsistent(message));
        }
        let call_steps = match self.calls.as_mut() {
            Some(calls) => Some(calls.row(&row)?),
            None => None,
        };
        let Some(cursor) = self.cursor.as_mut() else {
            return Ok(());
        };
        cursor.next_step = row.step + 1;
        cursor.next_episode_step = row.episode_step + 1;
        let done = row.terminated || row.truncated;
        let reason = TerminationReason::from_flags(row.terminated, row.truncated);
        let roles = match self.source.as_mut() {
            Some(s) if !row.role_rewards.is_empty() => {
                s.roles.get_or_insert_with(|| role_actions(&s.path)).clone()
            }
            _ => None,
        };
        let pending = self
            .pending
            .get_or_insert_with(|| Pending::start(&row, cursor.chunks, fork));
        if pending.roles.is_none() {
            pending.roles = roles;
        }
        match (call_steps, transition) {
            (Some(steps), _) => {
                pending.note(&row);
                pending.steps.extend(steps);
            }
            (None, Some((obs, action))) => pending.push(row, obs, action),
            (None, None) => {}
        }
        let full = self.chunk_steps.is_some_and(|n| pending.rows >= n);
        if done || full {
            cursor.ended = done;
            cursor.chunks += 1;
            if let Some(p) = self.pending.take() {
                self.complete(p, reason);
            }
        }
        Ok(())
    }
}

/// Why `row` cannot be the next row of the episode at `c`, if it cannot.
fn gap(c: &Cursor, row: &TraceRow) -> Option<String> {
    if c.ended {
        return Some(format!(
            "run `{}` episode {} has rows after the step that ended it; is a trace given twice, or do two runs share a run id?",
            c.run_id, c.episode
        ));
    }
    (row.step != c.next_step || row.episode_step != c.next_episode_step).then(|| {
        format!(
            "run `{}` episode {}: expected step {} (episode step {}), found step {} (episode step {}); pass each run's trace files whole and in order",
            c.run_id, c.episode, c.next_step, c.next_episode_step, row.step, row.episode_step
        )
    })
}

impl Pending {
    fn start(row: &TraceRow, chunk: u64, fork: Option<ForkOrigin>) -> Self {
        Pending {
            run_id: row.run_id.clone(),
            seed: row.seed,
            algorithm_id: row.algorithm_id.clone(),
            task: row.task.clone(),
            episode: row.episode,
            chunk,
            first_step: row.step,
            first_episode_step: row.episode_step,
            rows: 0,
            steps: Vec::new(),
            signals: BTreeMap::new(),
            regimes: Vec::new(),
            fork,
            role_rewards: Vec::new(),
            roles: None,
        }
    }

    /// Counts `row` in the episode: its reward terms and its regime.
    fn note(&mut self, row: &TraceRow) {
        self.rows += 1;
        for (name, v) in row.components.iter().chain(&row.payout) {
            *self.signals.entry(name.clone()).or_insert(0.0) += v;
        }
        if !self.regimes.contains(&row.regime) {
            self.regimes.push(row.regime.clone());
        }
    }

    /// Counts `row` in the episode and adds its Step.
    fn push(&mut self, mut row: TraceRow, obs: RecordedObs, action: Value) {
        self.note(&row);
        self.role_rewards
            .push(std::mem::take(&mut row.role_rewards));
        let mut info = BTreeMap::new();
        info.insert("step".to_string(), Value::from(row.step));
        info.insert("episode_step".into(), Value::from(row.episode_step));
        info.insert("regime".into(), Value::from(row.regime));
        info.insert(
            "regime_origin".into(),
            Value::from(row.regime_origin.as_str()),
        );
        info.insert("terminated".into(), Value::from(row.terminated));
        info.insert("truncated".into(), Value::from(row.truncated));
        info.insert("ceiling".into(), Value::from(row.ceiling));
        if !row.components.is_empty() {
            info.insert("components".into(), Value::from_iter(row.components));
        }
        if !row.payout.is_empty() {
            info.insert("payout".into(), Value::from_iter(row.payout));
        }
        self.steps.push(Step {
            id: format!("{}:{}", row.run_id, row.step),
            input: serde_json::to_value(obs).unwrap_or_default(),
            output: Value::Null,
            action,
            reward: row.reward,
            done: row.terminated || row.truncated,
            mc_return: 0.0,
            advantage: None,
            metadata: info,
            chat_completions: Default::default(),
            thought: String::new(),
            model_response: String::new(),
        });
    }
}

fn finish(
    mut p: Pending,
    reason: TerminationReason,
    rollouts: &mut HashMap<String, u64>,
) -> Episode {
    // A fork's rollouts are one group, `<task>@s<step>`, indexed by their k.
    let (task_id, rollout_idx) = match &p.fork {
        Some(f) => (crate::fork::fork_task(&p.task, f.step), f.k),
        None => {
            let next = rollouts.entry(p.task.clone()).or_insert(0);
            let idx = *next;
            *next += 1;
            (p.task.clone(), idx)
        }
    };
    let reward: f64 = p.steps.iter().map(|s| s.reward).sum();
    let n = p.steps.len() as u64;
    let task = Value::from(p.task.as_str());
    let uid = format!("{}:{}:{}", p.run_id, p.episode, p.first_step);
    let metadata = BTreeMap::from([("algorithm_id".into(), Value::from(p.algorithm_id.as_str()))]);
    let trajectories = if p.role_rewards.iter().all(BTreeMap::is_empty) {
        vec![trajectory(
            uid,
            AGENT_NAME.into(),
            &task,
            std::mem::take(&mut p.steps),
            std::mem::take(&mut p.signals),
            metadata,
        )]
    } else {
        let steps = RoleSteps {
            roles: p.roles.as_deref(),
            steps: &p.steps,
            role_rewards: &p.role_rewards,
            signals: &p.signals,
        };
        role_trajectories(steps, &uid, &task, &metadata)
    };
    let mut metadata = BTreeMap::from([
        ("run_id".to_string(), Value::from(p.run_id.as_str())),
        ("seed".into(), Value::from(p.seed)),
        ("algorithm_id".into(), Value::from(p.algorithm_id)),
        ("env_episode".into(), Value::from(p.episode)),
        ("chunk".into(), Value::from(p.chunk)),
        ("first_step".into(), Value::from(p.first_step)),
        (
            "last_step".into(),
            Value::from(p.first_step + p.rows.saturating_sub(1)),
        ),
        (
            "first_episode_step".into(),
            Value::from(p.first_episode_step),
        ),
        ("regimes".into(), Value::from(p.regimes)),
    ]);
    if let Some(f) = &p.fork {
        metadata.insert("fork_step".into(), Value::from(f.step));
        metadata.insert("fork_rollout".into(), Value::from(f.k));
    }
    Episode {
        id: Episode::make_id(&task_id, rollout_idx),
        task,
        termination_reason: reason,
        is_correct: false,
        session_id: Some(p.run_id),
        trajectories,
        artifacts: BTreeMap::new(),
        metrics: BTreeMap::from([("steps".to_string(), n as f64), ("reward".into(), reward)]),
        metadata,
    }
}

impl Iterator for EpisodeReader {
    type Item = Result<Episode, EpisodeError>;

    /// The next episode; after an error the reader stops.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some(Ok(e));
            }
            if self.stopped {
                return None;
            }
            match self.next_row() {
                Some(Ok(row)) => {
                    if let Err(e) = self.take_row(row) {
                        self.stopped = true;
                        self.ready.clear();
                        return Some(Err(e));
                    }
                }
                Some(Err(e)) => {
                    self.stopped = true;
                    self.ready.clear();
                    return Some(Err(e));
                }
                None => {
                    self.stopped = true;
                    if let Some(p) = self.pending.take() {
                        self.complete(p, TerminationReason::Unknown);
                    }
                    if let Some(Err(e)) = self.calls.as_mut().map(Calls::finish) {
                        self.ready.clear();
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}

/// How [`export`] cuts and scores episodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// Cut each episode into chunks of at most this many steps (off): for a persistent
    /// world, whose run is one long episode.
    pub chunk_steps: Option<u64>,
    /// Estimate advantages per group and broadcast them to the steps (off: `advantage`
    /// stays null).
    pub advantage: Option<AdvantageEstimator>,
}

/// Exports the episodes of `traces` to `out` as JSON Lines, one [`Episode`] per line.
///
/// With an advantage estimator the traces are read twice: once for the trajectory rewards
/// of every group, once to write. Either way only one episode's steps are in memory. The
/// lines go to `out` with `.partial` appended and the file is renamed to `out` once
/// complete, so a failed export never leaves a half-written file under the name asked
/// for, nor destroys one already there.
///
/// # Errors
///
/// No trace given, `out` is one of the traces, a trace cannot be read, lacks the `obs` and
/// `action` columns (run without `--record-transitions`) or has runs out of order, or
/// `out` cannot be written.
pub fn export<P: AsRef<Path>>(
    traces: &[P],
    out: &Path,
    options: &ExportOptions,
) -> Result<ExportSummary, EpisodeError> {
    export_calls::<P, P>(traces, &[], out, options)
}

/// As [`export`], with one Step per model call of `transcripts` (one transcript per run,
/// matched by run id; see [`EpisodeReader::with_transcripts`]) in place of one per row.
/// Without transcripts it is [`export`].
///
/// # Errors
///
/// As [`export`]; or a transcript cannot be read, is `out`, does not fit its trace (its
/// run is in no trace, a call's hours lie past the trace), naming its file and line.
pub fn export_calls<P: AsRef<Path>, Q: AsRef<Path>>(
    traces: &[P],
    transcripts: &[Q],
    out: &Path,
    options: &ExportOptions,
) -> Result<ExportSummary, EpisodeError> {
    if traces.is_empty() {
        return Err(EpisodeError::InvalidArgument(
            "no trace given; pass one or more trace files written with --record-transitions".into(),
        ));
    }
    let unsafe_out = |e: crate::output::OutputError| EpisodeError::InvalidArgument(e.to_string());
    crate::output::check_output(out).map_err(unsafe_out)?;
    let inputs: Vec<(&str, &Path)> = traces
        .iter()
        .map(|t| ("a trace", t.as_ref()))
        .chain(transcripts.iter().map(|t| ("a transcript", t.as_ref())))
        .collect();
    crate::output::check_distinct(&inputs, &[("--out", out)]).map_err(unsafe_out)?;
    crate::trace::check_not_companion("--out", out, traces)
        .map_err(EpisodeError::InvalidArgument)?;
    let advantages = match options.advantage {
        Some(estimator) => {
            let mut groups = GroupedRewards::default();
            for episode in
                EpisodeReader::with_transcripts(traces, transcripts, options.chunk_steps)?
            {
                groups.push_episode(&episode?);
            }
            Some(groups.advantages(estimator))
        }
        None => None,
    };
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    crate::output::check_output(&partial).map_err(unsafe_out)?;
    crate::output::create_parent(out).map_err(unsafe_out)?;
    match write_episodes(
        traces,
        transcripts,
        &partial,
        options,
        advantages.as_deref(),
    ) {
        Ok(summary) => {
            // The SQLite way: synced before the rename, the folder synced after, and the
            // target checked again in case something else appeared there meanwhile.
            File::open(&partial)
                .and_then(|f| f.sync_all())
                .map_err(|e| EpisodeError::io(&partial, e))?;
            crate::output::check_output(out).map_err(unsafe_out)?;
            std::fs::rename(&partial, out).map_err(|e| EpisodeError::io(out, e))?;
            crate::output::sync_parent(out);
            Ok(summary)
        }
        Err(e) => {
            // Best effort: the error being returned matters more than a leftover file.
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

fn write_episodes<P: AsRef<Path>, Q: AsRef<Path>>(
    traces: &[P],
    transcripts: &[Q],
    path: &Path,
    options: &ExportOptions,
    advantages: Option<&[f64]>,
) -> Result<ExportSummary, EpisodeError> {
    let mut reader = EpisodeReader::with_transcripts(traces, transcripts, options.chunk_steps)?;
    let file = File::create(path).map_err(|e| EpisodeError::io(path, e))?;
    let mut out = BufWriter::new(file);
    let mut groups = GroupedRewards::default();
    let mut summary = ExportSummary {
        traces: traces.len(),
        reasons: TerminationReason::ALL.iter().map(|&r| (r, 0)).collect(),
        advantage: options.advantage,
        ..ExportSummary::default()
    };
    let mut next_advantage = advantages.map(|a| a.iter());
    for episode in &mut reader {
        let mut episode = episode?;
        if let Some(next) = next_advantage.as_mut() {
            for t in &mut episode.trajectories {
                let a = next.next().ok_or(EpisodeError::TracesChanged)?;
                t.broadcast_advantage(*a);
            }
        }
        groups.push_episode(&episode);
        summary.episodes += 1;
        summary.steps += episode
            .trajectories
            .iter()
            .map(|t| t.steps.len() as u64)
            .sum::<u64>();
        *summary
            .reasons
            .entry(episode.termination_reason)
            .or_insert(0) += 1;
        serde_json::to_writer(&mut out, &episode).map_err(|e| EpisodeError::io(path, e.into()))?;
        out.write_all(b"\n")
            .map_err(|e| EpisodeError::io(path, e))?;
    }
    if next_advantage.is_some_and(|mut rest| rest.next().is_some()) {
        return Err(EpisodeError::TracesChanged);
    }
    out.flush().map_err(|e| EpisodeError::io(path, e))?;
    summary.groups = groups
        .totals()
        .into_iter()
        .map(|(key, n, sum)| {
            let g = GroupSummary {
                trajectories: n,
                mean_reward: sum / n.max(1) as f64,
            };
            (key.to_string(), g)
        })
        .collect();
    summary.torn_tails = reader.torn_tails().to_vec();
    summary.calls_after_end = reader.calls_after_end();
    Ok(summary)
}

/// Reads an episodes file written by [`export`], one [`Episode`] per line, streaming.
///
/// # Errors
///
/// The file cannot be opened; each item is an error when a line cannot be read or is not
/// an episode (naming the file and line).
pub fn read_episodes(
    path: &Path,
) -> Result<impl Iterator<Item = Result<Episode, EpisodeError>>, EpisodeError> {
    let file = File::open(path).map_err(|e| EpisodeError::io(path, e))?;
    let path = path.to_path_buf();
    Ok(BufReader::new(file)
        .lines()
        .zip(1u64..)
        .filter_map(move |(line, number)| match line {
            Err(e) => Some(Err(EpisodeError::io(&path, e))),
            Ok(text) if text.trim().is_empty() => None,
            Ok(text) => Some(
                serde_json::from_str(&text).map_err(|e| EpisodeError::Parse {
                    path: path.clone(),
                    line: number,
                    message: e.to_string(),
                }),
            ),
        }))
}
