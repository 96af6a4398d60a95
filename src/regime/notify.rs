//! Notification of regime shifts: how much an agent is told when the regime changes.
//!
//! Whether the agent is told about a shift is an experimental variable (as in NS-Gym). The
//! level is set per run (a world file's `[notify] level`, or `perennial run --notify`) and
//! is one of:
//!
//! | level | the agent learns, at the first step of a new regime |
//! |---|---|
//! | `none` (default) | nothing: [`Agent::notify`](crate::harness::Agent::notify) is never called |
//! | `flag` | that some shift happened at this step |
//! | `delta` | which parameters changed, each with its value before and after |
//! | `label` | the new regime's label |
//!
//! The notification travels beside the observation, never in it: the observation layout
//! is the same at every level. The initial regime is not notified (nothing changed; the
//! agent starts in it), and neither is a shift to the label already in force (the scheduler
//! reports none). A shift between two labels with the same conditions is notified at every
//! level but `none`; at `delta` its parameter map is empty.
//!
//! Parameter values are the regime's effective conditions: the world's baseline with the
//! regime's overrides on top (regimes are absolute, see [the module docs](super)), so
//! `delta` lists exactly the parameters whose value the shift changed.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{Conditions, Regime};

/// How much an agent is told about regime shifts.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum NotifyLevel {
    /// Not told (the default): shifts are noticed only through observations and rewards.
    #[default]
    None,
    /// Told that something changed at this step.
    Flag,
    /// Told which parameters changed, from and to which values.
    Delta,
    /// Told the new regime's label.
    Label,
}

impl NotifyLevel {
    /// Every level, in order of how much the agent is told.
    pub const ALL: [NotifyLevel; 4] = [
        NotifyLevel::None,
        NotifyLevel::Flag,
        NotifyLevel::Delta,
        NotifyLevel::Label,
    ];

    /// The name used in world files, on the command line and in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyLevel::None => "none",
            NotifyLevel::Flag => "flag",
            NotifyLevel::Delta => "delta",
            NotifyLevel::Label => "label",
        }
    }

    /// True for [`NotifyLevel::None`] (used to leave the level out of traces and
    /// checkpoints, so a run that tells nothing writes the bytes it always wrote).
    pub fn is_none(&self) -> bool {
        *self == NotifyLevel::None
    }

    /// The notification of a shift from `from` to `to` before step `step`, with the
    /// world's `baseline` conditions; `None` at level `none`.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::regime::{Conditions, NotifyLevel, Regime};
    ///
    /// let baseline: Conditions = [("gravity".to_string(), 9.8), ("length".to_string(), 0.5)].into();
    /// let (earth, heavy) = (Regime::new("earth", &[]), Regime::new("heavy", &[("gravity", 15.0)]));
    /// let n = NotifyLevel::Delta.at_shift(50, &earth, &heavy, &baseline).unwrap();
    /// assert_eq!(n.step, 50);
    /// assert_eq!(n.label, None);
    /// let delta = n.delta.unwrap();
    /// assert_eq!(delta.len(), 1);
    /// assert_eq!((delta["gravity"].from, delta["gravity"].to), (9.8, 15.0));
    ///
    /// let n = NotifyLevel::Label.at_shift(50, &earth, &heavy, &baseline).unwrap();
    /// assert_eq!(n.label.as_deref(), Some("heavy"));
    /// assert!(NotifyLevel::None.at_shift(50, &earth, &heavy, &baseline).is_none());
    /// ```
    pub fn at_shift(
        self,
        step: u64,
        from: &Regime,
        to: &Regime,
        baseline: &Conditions,
    ) -> Option<Notification> {
        let delta = match self {
            NotifyLevel::None => return None,
            NotifyLevel::Delta => Some(delta(baseline, &from.conditions, &to.conditions)),
            NotifyLevel::Flag | NotifyLevel::Label => None,
        };
        Some(Notification {
            step,
            level: self,
            label: (self == NotifyLevel::Label).then(|| to.label.clone()),
            delta,
        })
    }
}

/// The parameters whose effective value differs between two regimes' conditions over
/// `baseline`.
fn delta(baseline: &Conditions, from: &Conditions, to: &Conditions) -> BTreeMap<String, Change> {
    let value = |c: &Conditions, name: &str| c.get(name).or_else(|| baseline.get(name)).copied();
    from.keys()
        .chain(to.keys())
        .filter_map(|name| {
            let (a, b) = (value(from, name)?, value(to, name)?);
            (a.to_bits() != b.to_bits()).then(|| (name.clone(), Change { from: a, to: b }))
        })
        .collect()
}

impl fmt::Display for NotifyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NotifyLevel {
    type Err = String;

    /// Parses a level name; the error lists the allowed ones.
    fn from_str(s: &str) -> Result<Self, String> {
        NotifyLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown notify level `{s}`; use one of: {}",
                    NotifyLevel::ALL.map(NotifyLevel::as_str).join(", ")
                )
            })
    }
}

/// What an agent is told at the first step of a new regime (see [`NotifyLevel`] for what each level tells).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// The global step the new regime is first in force at: the step the agent is about
    /// to act on.
    pub step: u64,
    /// The run's level (never [`NotifyLevel::None`]).
    pub level: NotifyLevel,
    /// At level `label`: the new regime's label.
    pub label: Option<String>,
    /// At level `delta`: each parameter whose value changed, by name.
    pub delta: Option<BTreeMap<String, Change>>,
}

/// A parameter's value before and after a shift.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The value under the previous regime.
    pub from: f64,
    /// The value under the new regime.
    pub to: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_round_trips_through_its_name_and_an_unknown_one_lists_the_allowed() {
        for level in NotifyLevel::ALL {
            assert_eq!(level.as_str().parse::<NotifyLevel>(), Ok(level));
        }
        let err = "loud".parse::<NotifyLevel>().unwrap_err();
        assert_eq!(
            err,
            "unknown notify level `loud`; use one of: none, flag, delta, label"
        );
    }

    #[test]
    fn delta_lists_a_parameter_returning_to_its_baseline() {
        let baseline: Conditions = [("g".to_string(), 1.0), ("m".to_string(), 2.0)].into();
        let from = Regime::new("a", &[("g", 3.0), ("m", 2.0)]);
        let to = Regime::new("b", &[("m", 5.0)]);
        let n = NotifyLevel::Delta
            .at_shift(7, &from, &to, &baseline)
            .unwrap();
        let d = n.delta.unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d["g"], Change { from: 3.0, to: 1.0 });
        assert_eq!(d["m"], Change { from: 2.0, to: 5.0 });
    }

    #[test]
    fn flag_tells_neither_label_nor_parameters() {
        let n = NotifyLevel::Flag
            .at_shift(
                3,
                &Regime::new("a", &[]),
                &Regime::new("b", &[]),
                &Conditions::new(),
            )
            .unwrap();
        assert_eq!((n.step, n.label, n.delta), (3, None, None));
    }
}
