//! An event's row ([`EventRow`]), the table's columns and where a trace's table lives.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::env::WorldEvent;
use crate::regime::{Origin, Scheduler};
use crate::trace::TraceFormat;

/// The columns of the events table, in order.
pub const EVENT_COLUMNS: [&str; 13] = [
    "run_id",
    "step",
    "event",
    "from_regime",
    "to_regime",
    "origin",
    "kind",
    "target",
    "start",
    "duration",
    "episode",
    "terminated",
    "truncated",
];

/// `event` of a regime shift.
pub const REGIME_SHIFT: &str = "regime_shift";
/// `event` of an injected failure.
pub const FAILURE: &str = "failure";
/// `event` of an episode end.
pub const EPISODE_END: &str = "episode_end";
/// `event` of a fork's first step: `kind` is the run it was forked from, `start` the
/// step, `target` the rollout's index in the fork.
pub const FORK: &str = "fork";
/// `event` of a neural agent's plasticity diagnostics after the update at the end of a
/// rollout window (its last step): `kind` holds the four numbers of [`Plasticity`] as
/// `name=value` pairs ([`EventRow::plasticity`]).
pub const PLASTICITY: &str = "plasticity";

/// What a neural agent's network looks like after an update, against loss of plasticity
/// (Sokar et al. 2023; Kumar et al. 2021; Dohare et al. 2024).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plasticity {
    /// Fraction of the hidden units that are τ-dormant on the window's inputs: a unit whose
    /// mean absolute activation is at most τ times its layer's average.
    pub dormant_fraction: f64,
    /// Effective rank `srank_δ` of the last hidden layer's activations over the window: the
    /// fewest singular values that sum to `1 − δ` of their total.
    pub effective_rank: f64,
    /// L2 norm of the network's weights and biases.
    pub weight_norm: f64,
    /// L2 norm of the loss gradient, the mean over the update's minibatches.
    pub grad_norm: f64,
}

impl Plasticity {
    /// The names of the four numbers, in the order of the fields.
    pub const NAMES: [&str; 4] = [
        "dormant_fraction",
        "effective_rank",
        "weight_norm",
        "grad_norm",
    ];

    /// The four numbers, in the order of [`Plasticity::NAMES`].
    pub fn values(&self) -> [f64; 4] {
        [
            self.dormant_fraction,
            self.effective_rank,
            self.weight_norm,
            self.grad_norm,
        ]
    }

    fn from_values(v: [f64; 4]) -> Self {
        Plasticity {
            dormant_fraction: v[0],
            effective_rank: v[1],
            weight_norm: v[2],
            grad_norm: v[3],
        }
    }
}

/// One row of the events table; the columns that do not apply to `event` are `None`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventRow {
    /// The run.
    pub run_id: String,
    /// The trace row the event belongs to.
    pub step: u64,
    /// [`REGIME_SHIFT`], [`FAILURE`], [`EPISODE_END`] or [`FORK`].
    pub event: String,
    /// Shift: the label before.
    pub from_regime: Option<String>,
    /// Shift: the label after.
    pub to_regime: Option<String>,
    /// Shift: what caused it (`scheduled`, `stochastic`, `manual`).
    pub origin: Option<String>,
    /// Failure: its kind (e.g. `dock_breakdown`). Fork: the source run id.
    pub kind: Option<String>,
    /// Failure: the id of the thing hit; `None` for a failure of the whole world. Fork:
    /// the rollout's index.
    pub target: Option<u64>,
    /// Failure: world time it started (the enterprise world's hour). Fork: the step.
    pub start: Option<u64>,
    /// Failure: how long it lasts, in world time.
    pub duration: Option<u64>,
    /// Episode end: the episode that ended.
    pub episode: Option<u64>,
    /// Episode end: the env said terminal.
    pub terminated: Option<bool>,
    /// Episode end: the env imposed a cutoff.
    pub truncated: Option<bool>,
}

impl EventRow {
    pub(super) fn blank(run_id: &str, step: u64, event: &str) -> Self {
        EventRow {
            run_id: run_id.to_string(),
            step,
            event: event.to_string(),
            from_regime: None,
            to_regime: None,
            origin: None,
            kind: None,
            target: None,
            start: None,
            duration: None,
            episode: None,
            terminated: None,
            truncated: None,
        }
    }

    /// A regime shift from `from` to `to` before the step `step`.
    pub fn shift(run_id: &str, step: u64, from: &str, to: &str, origin: Origin) -> Self {
        EventRow {
            from_regime: Some(from.to_string()),
            to_regime: Some(to.to_string()),
            origin: Some(origin.as_str().to_string()),
            ..Self::blank(run_id, step, REGIME_SHIFT)
        }
    }

    /// The shift `scheduler` has just made from the label `from`, before the step `step`.
    pub fn shift_made(run_id: &str, step: u64, from: &str, scheduler: &Scheduler) -> Self {
        Self::shift(run_id, step, from, scheduler.label(), scheduler.origin())
    }

    /// A failure the world injected during the step `step`.
    pub fn failure(run_id: &str, step: u64, e: &WorldEvent) -> Self {
        EventRow {
            kind: Some(e.kind.clone()),
            target: e.target,
            start: Some(e.start),
            duration: Some(e.duration),
            ..Self::blank(run_id, step, FAILURE)
        }
    }

    /// The end of episode `episode` on the step `step`.
    pub fn episode_end(
        run_id: &str,
        step: u64,
        episode: u64,
        terminated: bool,
        truncated: bool,
    ) -> Self {
        EventRow {
            episode: Some(episode),
            terminated: Some(terminated),
            truncated: Some(truncated),
            ..Self::blank(run_id, step, EPISODE_END)
        }
    }

    /// The first step `step` of run `run_id`, rollout `k` of a fork of run
    /// `source_run_id` at that step.
    pub fn fork(run_id: &str, step: u64, source_run_id: &str, k: u64) -> Self {
        EventRow {
            kind: Some(source_run_id.to_string()),
            target: Some(k),
            start: Some(step),
            ..Self::blank(run_id, step, FORK)
        }
    }

    /// A neural agent's diagnostics after the update that ended at step `step`. The numbers
    /// are written in `kind` as `name=value` pairs, shortest round-trip decimals, so the
    /// table keeps its columns (and every other run's table its bytes).
    ///
    /// ```
    /// use perennial::trace::{EventRow, Plasticity};
    ///
    /// let p = Plasticity { dormant_fraction: 0.125, effective_rank: 37.0, weight_norm: 12.5, grad_norm: 0.25 };
    /// let row = EventRow::plasticity("run", 255, &p);
    /// assert_eq!(row.kind.as_deref(), Some("dormant_fraction=0.125 effective_rank=37 weight_norm=12.5 grad_norm=0.25"));
    /// assert_eq!(row.plasticity_values(), Some(p));
    /// ```
    pub fn plasticity(run_id: &str, step: u64, p: &Plasticity) -> Self {
        let text = Plasticity::NAMES
            .iter()
            .zip(p.values())
            .map(|(name, v)| format!("{name}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        EventRow {
            kind: Some(text),
            ..Self::blank(run_id, step, PLASTICITY)
        }
    }

    /// The diagnostics of a [`PLASTICITY`] row; `None` for another event, or a `kind` that
    /// does not hold the four numbers.
    pub fn plasticity_values(&self) -> Option<Plasticity> {
        if self.event != PLASTICITY {
            return None;
        }
        let mut values = [0.0; 4];
        let mut pairs = self.kind.as_deref()?.split(' ');
        for (name, v) in Plasticity::NAMES.iter().zip(&mut values) {
            let (key, text) = pairs.next()?.split_once('=')?;
            if key != *name {
                return None;
            }
            *v = text.parse().ok()?;
        }
        pairs
            .next()
            .is_none()
            .then(|| Plasticity::from_values(values))
    }

    /// What the row says besides its step, in a few words (for tables).
    pub fn detail(&self) -> String {
        let s = |o: &Option<String>| o.as_deref().unwrap_or("-").to_string();
        match self.event.as_str() {
            REGIME_SHIFT => format!(
                "{} -> {} ({})",
                s(&self.from_regime),
                s(&self.to_regime),
                s(&self.origin)
            ),
            FAILURE => format!(
                "{} target {} start {} duration {}",
                s(&self.kind),
                self.target.map_or("-".into(), |t| t.to_string()),
                self.start.map_or("-".into(), |t| t.to_string()),
                self.duration.map_or("-".into(), |t| t.to_string()),
            ),
            PLASTICITY => s(&self.kind),
            FORK => format!(
                "rollout {} of {} at step {}",
                self.target.map_or("-".into(), |t| t.to_string()),
                s(&self.kind),
                self.start.map_or("-".into(), |t| t.to_string()),
            ),
            _ => format!(
                "episode {} terminated {} truncated {}",
                self.episode.map_or("-".into(), |t| t.to_string()),
                self.terminated.unwrap_or(false),
                self.truncated.unwrap_or(false),
            ),
        }
    }
}

/// Where the events table of the run traced to `trace` in `format` lives: beside the
/// trace, named after it, `<trace-stem>.events.<extension>`; for the default trace path
/// `runs/<run-id>.<format>` that is `runs/<run-id>.events.<format>`. Named after the trace
/// rather than the run id, so two traces of one run id in one folder never share a table.
pub fn events_path(trace: &Path, format: TraceFormat) -> PathBuf {
    let stem = trace
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    trace.with_file_name(format!("{stem}.events.{}", format.extension()))
}

/// The events table beside `trace`, if there is one: in the trace's own format first, then
/// in the others.
pub fn find_events(trace: &Path) -> Option<PathBuf> {
    let own = TraceFormat::from_path(trace);
    [
        own,
        TraceFormat::Jsonl,
        TraceFormat::Csv,
        TraceFormat::Parquet,
    ]
    .into_iter()
    .map(|f| events_path(trace, f))
    // A FIFO or device there would block or never end: only a file or a Parquet folder.
    .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() || m.is_dir()))
}

/// Whether `path` is named as an events table (`*.events.jsonl`, `.csv`, `.parquet`).
pub fn is_events_table(path: &Path) -> bool {
    path.file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.ends_with(".events"))
        && path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            ["jsonl", "csv", "parquet"]
                .iter()
                .any(|k| e.eq_ignore_ascii_case(k))
        })
}

/// An event borrowed: what [`EventWriter`] writes, whether from an [`EventRow`] or from
/// the harness's arguments, so an event written in a hot loop allocates nothing. It
/// serializes as [`EventRow`] does.
#[derive(Serialize)]
pub(super) struct EventView<'a> {
    pub(super) run_id: &'a str,
    pub(super) step: u64,
    pub(super) event: &'a str,
    pub(super) from_regime: Option<&'a str>,
    pub(super) to_regime: Option<&'a str>,
    pub(super) origin: Option<&'a str>,
    pub(super) kind: Option<&'a str>,
    pub(super) target: Option<u64>,
    pub(super) start: Option<u64>,
    pub(super) duration: Option<u64>,
    pub(super) episode: Option<u64>,
    pub(super) terminated: Option<bool>,
    pub(super) truncated: Option<bool>,
}

impl EventRow {
    pub(super) fn view(&self) -> EventView<'_> {
        EventView {
            run_id: &self.run_id,
            step: self.step,
            event: &self.event,
            from_regime: self.from_regime.as_deref(),
            to_regime: self.to_regime.as_deref(),
            origin: self.origin.as_deref(),
            kind: self.kind.as_deref(),
            target: self.target,
            start: self.start,
            duration: self.duration,
            episode: self.episode,
            terminated: self.terminated,
            truncated: self.truncated,
        }
    }
}
