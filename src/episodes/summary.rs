//! What an export wrote: its counts per termination reason and per group.

use std::collections::BTreeMap;
use std::fmt;

use super::advantage::AdvantageEstimator;
use super::model::TerminationReason;
use crate::trace::TornTail;

/// One advantage group in an [`ExportSummary`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupSummary {
    /// Trajectories in the group.
    pub trajectories: u64,
    /// Their mean reward.
    pub mean_reward: f64,
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportSummary {
    /// Trace files read.
    pub traces: usize,
    /// Episodes written.
    pub episodes: u64,
    /// Steps written, over all episodes.
    pub steps: u64,
    /// Episodes per termination reason (every reason present, 0 included).
    pub reasons: BTreeMap<TerminationReason, u64>,
    /// Per group key `"{task_id}:{name}"`.
    pub groups: BTreeMap<String, GroupSummary>,
    /// The estimator used, if any.
    pub advantage: Option<AdvantageEstimator>,
    /// Torn trace tails met (their complete rows were exported).
    pub torn_tails: Vec<TornTail>,
    /// With transcripts: model calls made after their run's last row (they let no hour
    /// pass and earned nothing), left out of the Steps.
    pub calls_after_end: u64,
}

/// Groups listed by name in the summary paragraph; the rest are counted.
const GROUPS_SHOWN: usize = 4;

impl fmt::Display for ExportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        write!(
            f,
            "{} ({}) from {}: ",
            plural(self.episodes, "episode", "episodes"),
            plural(self.steps, "step", "steps"),
            plural(self.traces as u64, "trace", "traces"),
        )?;
        let reasons: Vec<String> = TerminationReason::ALL
            .iter()
            .map(|r| format!("{} {r}", self.reasons.get(r).copied().unwrap_or(0)))
            .collect();
        write!(
            f,
            "{}; {}",
            reasons.join(", "),
            plural(self.groups.len() as u64, "group", "groups")
        )?;
        let shown: Vec<String> = self
            .groups
            .iter()
            .take(GROUPS_SHOWN)
            .map(|(key, g)| {
                format!(
                    "{key} ({}, mean reward {:.4})",
                    plural(g.trajectories, "trajectory", "trajectories"),
                    g.mean_reward
                )
            })
            .collect();
        if !shown.is_empty() {
            write!(f, ": {}", shown.join(", "))?;
            if self.groups.len() > GROUPS_SHOWN {
                write!(f, " and {} more", self.groups.len() - GROUPS_SHOWN)?;
            }
        }
        match self.advantage {
            Some(a) => write!(f, "; advantages: {a}.")?,
            None => write!(f, "; no advantages (pass --advantage to estimate them).")?,
        }
        if self.calls_after_end > 0 {
            write!(
                f,
                " {} made after the last trace row left out.",
                plural(self.calls_after_end, "model call", "model calls")
            )?;
        }
        for torn in &self.torn_tails {
            write!(f, " Warning: {torn}.")?;
        }
        Ok(())
    }
}
