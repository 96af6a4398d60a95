//! What each role is told at a regime shift: a notify level per role, and whether a
//! `delta` lists every parameter or only those that touch the role's operations.
//!
//! The run has one level (the trace's `notify` column): the highest of the roles' levels
//! (`none` < `flag` < `delta` < `label`), so the harness notifies whenever some role is
//! told something. Each role is then told at its own level, capped at the run's (which
//! `perennial run --notify` may set lower), from what the run's notification carries: a `flag` role learns only that a shift happened; a `delta` role
//! the parameters that changed (computed from the labels when the run's level is
//! `label`); a `label` role the new label; a `none` role nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::OpKind;
use crate::regime::{Change, Notification, NotifyLevel};

/// Which parameters a `delta` notification lists for a role.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaScope {
    /// Every parameter the shift changed (the default).
    #[default]
    All,
    /// Only the parameters that touch the role's operations (see [`touches`]).
    Relevant,
}

impl DeltaScope {
    /// Its name in a world file.
    pub fn as_str(self) -> &'static str {
        match self {
            DeltaScope::All => "all",
            DeltaScope::Relevant => "relevant",
        }
    }
}

/// The per-role part of a world file's `[notify]` table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleNotify {
    /// Each role's level, by role name; a role not named is told at the run's level.
    #[serde(default)]
    pub levels: BTreeMap<String, NotifyLevel>,
    /// Which parameters a `delta` lists.
    #[serde(default)]
    pub delta: DeltaScope,
}

impl RoleNotify {
    /// True when it changes nothing: no role's level given and every delta in full.
    pub fn is_default(&self) -> bool {
        *self == RoleNotify::default()
    }

    /// The run's level: the highest of `default` (the `[notify] level`) and the roles'.
    pub fn run_level(&self, default: NotifyLevel) -> NotifyLevel {
        self.levels
            .values()
            .copied()
            .fold(default, NotifyLevel::max)
    }

    /// Role `role`'s level in a run at level `run`: its own, capped at the run's. The
    /// world file's run level is the highest of the roles', so the cap only bites when
    /// `perennial run --notify` sets the run lower: `--notify flag` tells no role more than
    /// that a shift happened, `--notify none` tells no role anything.
    pub fn level_of(&self, role: &str, run: NotifyLevel) -> NotifyLevel {
        self.levels.get(role).copied().unwrap_or(run).min(run)
    }
}

/// The operation kinds a regime parameter of the enterprise world touches; every kind for
/// one that bears on all of them (a cost multiplier, the daily operation budget, outages)
/// or that this table does not know.
pub fn touches(parameter: &str) -> &'static [OpKind] {
    use OpKind::*;
    match parameter {
        "demand_rate" => &[Reorder, PrioritizeSku, HoldWave],
        "demand_spike_rate" | "price" => &[Reorder, PrioritizeSku],
        "lead_time" | "supplier_delay_rate" => &[Reorder, Expedite],
        "holding_cost" | "stale_rate" | "missing_rate" => &[Reorder],
        "dock_breakdown_rate" => &[RepairDock],
        "dock_capacity" => &[RepairDock, Expedite],
        "failure_rate" => &[RepairDock, ChooseCarrier, Expedite],
        "carrier_no_show_rate" => &[ChooseCarrier],
        "carrier_reliability" => &[ChooseCarrier, HoldWave],
        "late_penalty" | "promise" => &[ChooseCarrier, PrioritizeSku, HoldWave],
        _ => &OpKind::ALL,
    }
}

/// What a role that owns `ops` is told at `level`, from the run's notification `n`, with
/// `delta` the parameters the shift changed when `n` does not list them (a run at level
/// `label`). `None` at level `none`.
pub fn tell(
    level: NotifyLevel,
    scope: DeltaScope,
    ops: &[OpKind],
    n: &Notification,
    delta: impl FnOnce() -> Option<BTreeMap<String, Change>>,
) -> Option<Notification> {
    let base = |level| Notification {
        step: n.step,
        level,
        label: None,
        delta: None,
    };
    match level {
        NotifyLevel::None => None,
        NotifyLevel::Flag => Some(base(NotifyLevel::Flag)),
        NotifyLevel::Label if n.label.is_some() => Some(Notification {
            label: n.label.clone(),
            ..base(NotifyLevel::Label)
        }),
        NotifyLevel::Delta => {
            let Some(mut changed) = n.delta.clone().or_else(delta) else {
                return Some(base(NotifyLevel::Flag));
            };
            if scope == DeltaScope::Relevant {
                changed.retain(|name, _| touches(name).iter().any(|k| ops.contains(k)));
            }
            Some(Notification {
                delta: Some(changed),
                ..base(NotifyLevel::Delta)
            })
        }
        // The run's notification does not carry the label (`--notify` set it lower).
        NotifyLevel::Label => Some(base(NotifyLevel::Flag)),
    }
}
