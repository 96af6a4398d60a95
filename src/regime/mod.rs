//! Regimes: labelled world conditions, the `Shiftable` trait, and the scheduler that shifts them.
//!
//! A [`Regime`] is a label plus [`Conditions`] (named parameter overrides such as
//! `gravity = 12.0` or `demand_rate = 2.0`). A world that implements [`Shiftable`] lists the
//! parameters it accepts, with their ranges, and applies conditions. The [`Scheduler`]
//! decides before each step whether the regime changes; a shift changes what the agent
//! observes and how it is scored, **and ends nothing**: no episode ends, the agent is not
//! told (unless the run's [`NotifyLevel`] says otherwise, see [`Notification`]), and every
//! trace row records the label in force and its [`Origin`].
//!
//! A regime's conditions are absolute: when a regime comes into force, every parameter it
//! does not name returns to the world's baseline value (the value it had when the scheduler
//! was attached), so the world under a label is the same every time that label recurs.

mod notify;
mod probe;
mod scheduler;
mod shiftable;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use notify::{Change, Notification, NotifyLevel};
pub use probe::RegimeProbe;
pub use scheduler::{Plan, Scheduler, Shift};
pub use shiftable::{
    ParamInfo, ParamValue, Shiftable, apply_conditions, apply_over_baseline, check_parameter,
    validate_conditions,
};

/// Named parameter values, ordered by name.
pub type Conditions = BTreeMap<String, f64>;

/// A label plus the conditions in force under it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    /// The label written in the trace's `regime` column.
    pub label: String,
    /// Parameter overrides relative to the world's baseline.
    pub conditions: Conditions,
}

impl Regime {
    /// A regime with the given label and overrides.
    pub fn new(label: impl Into<String>, conditions: &[(&str, f64)]) -> Self {
        Regime {
            label: label.into(),
            conditions: conditions
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        }
    }
}

/// Why the label in force is in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The run's first regime.
    Initial,
    /// Set by a `fixed` or `cycle` plan.
    Scheduled,
    /// Set by the `stochastic` plan's asynchronous controller.
    Stochastic,
    /// Set by the experimenter through [`Scheduler::shift_to`].
    Manual,
}

impl Origin {
    /// The name written in the trace's `regime_origin` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Initial => "initial",
            Origin::Scheduled => "scheduled",
            Origin::Stochastic => "stochastic",
            Origin::Manual => "manual",
        }
    }

    /// The origin named `text` in a trace's `regime_origin` column; `None` for any other
    /// text.
    pub fn parse(text: &str) -> Option<Origin> {
        match text {
            "initial" => Some(Origin::Initial),
            "scheduled" => Some(Origin::Scheduled),
            "stochastic" => Some(Origin::Stochastic),
            "manual" => Some(Origin::Manual),
            _ => None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A regime or schedule that does not fit the world.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RegimeError {
    /// The world has no parameter of this name.
    UnknownParameter {
        /// The name asked for.
        name: String,
        /// The names the world accepts.
        known: Vec<String>,
    },
    /// The value lies outside the parameter's range (or is not finite, or is a fraction
    /// for an integer parameter).
    OutOfRange {
        /// Parameter name.
        name: String,
        /// Value given.
        value: f64,
        /// Smallest accepted value.
        min: f64,
        /// Largest accepted value.
        max: f64,
    },
    /// A schedule or `shift_to` names a label no regime defines.
    UnknownLabel {
        /// The label.
        label: String,
        /// The labels defined.
        known: Vec<String>,
    },
    /// The schedule itself is malformed (no regimes, a restored cursor out of range).
    BadPlan(String),
    /// The world refused a value its range allows (a world written in Python whose
    /// attribute or `set_parameter` raised, say); nothing was changed.
    Refused {
        /// Parameter name.
        name: String,
        /// What the world said.
        message: String,
    },
    /// One field of the plan is refused: `field` is its name in a world file's
    /// `[schedule]` table, `index` the entry of a list field (a fixed plan's shifts).
    PlanField {
        /// The field: `labels`, `every`, `shifts`, `min_dwell`, `mean_dwell` or `weights`.
        field: &'static str,
        /// The entry of a list field at fault.
        index: Option<usize>,
        /// What is wrong and what is accepted.
        message: String,
    },
}

impl fmt::Display for RegimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegimeError::UnknownParameter { name, known } => write!(
                f,
                "unknown parameter `{name}`; this world accepts: {}",
                known.join(", ")
            ),
            RegimeError::OutOfRange {
                name,
                value,
                min,
                max,
            } if value.is_finite() && value >= min && value <= max => write!(
                // Within range yet refused: a fraction for a whole-number parameter.
                f,
                "parameter `{name}` = {} must be a whole number in [{}, {}]",
                Shown(*value),
                Shown(*min),
                Shown(*max)
            ),
            RegimeError::OutOfRange {
                name,
                value,
                min,
                max,
            } => write!(
                f,
                "parameter `{name}` = {} is out of range; use a value in [{}, {}]",
                Shown(*value),
                Shown(*min),
                Shown(*max)
            ),
            RegimeError::UnknownLabel { label, known } => write!(
                f,
                "no regime is labelled `{label}`; defined labels: {}",
                known.join(", ")
            ),
            RegimeError::BadPlan(msg) => write!(f, "bad schedule: {msg}"),
            RegimeError::Refused { name, message } => {
                write!(f, "parameter `{name}` was refused by the world: {message}")
            }
            RegimeError::PlanField {
                field,
                index: Some(i),
                message,
            } => write!(f, "bad schedule: `{field}` entry {i}: {message}"),
            RegimeError::PlanField { field, message, .. } => {
                write!(f, "bad schedule: `{field}` {message}")
            }
        }
    }
}

impl std::error::Error for RegimeError {}

/// A number as an error message shows it: in scientific notation when it is very large
/// or very small (`1e308` rather than 309 digits), else as written. An infinite one says
/// why: a number written finite but beyond ±1.8e308 (`1e400`) is read as infinite, and
/// "inf" alone would name a value the file does not hold.
pub(crate) struct Shown(pub(crate) f64);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v.is_infinite() {
            let sign = if v < 0.0 { "-" } else { "" };
            write!(
                f,
                "{sign}inf (beyond {sign}1.8e308, the largest a 64-bit float holds, so read as infinite)"
            )
        } else if v.is_finite() && v != 0.0 && !(1e-4..1e15).contains(&v.abs()) {
            write!(f, "{v:e}")
        } else {
            write!(f, "{v}")
        }
    }
}
