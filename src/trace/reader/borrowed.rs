//! Rows borrowed from the line (or Parquet batch) they were read from.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::regime::{NotifyLevel, Origin};
use crate::trace::row::TraceRow;

/// A row borrowed from [`TraceReader::next_ref`](crate::trace::TraceReader::next_ref), with the file and line it came from.
#[derive(Debug)]
pub struct Located<'a> {
    /// The file.
    pub path: &'a Path,
    /// 1-based line number.
    pub line: u64,
    /// The row.
    pub row: RowRef<'a>,
}

/// The trace columns of one row, borrowed from the line they were read from.
///
/// The fields mean what [`TraceRow`]'s fields mean; the maps keep the file's order.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowRef<'a> {
    /// Unique per run.
    #[serde(borrow)]
    pub run_id: Cow<'a, str>,
    /// Run seed.
    pub seed: u64,
    /// The agent's id.
    #[serde(borrow)]
    pub algorithm_id: Cow<'a, str>,
    /// World or task id.
    #[serde(borrow)]
    pub task: Cow<'a, str>,
    /// The run's notify level (`none` when the column is absent).
    #[serde(default)]
    pub notify: NotifyLevel,
    /// Global step index.
    pub step: u64,
    /// Env episode index.
    pub episode: u64,
    /// Step index within the episode.
    pub episode_step: u64,
    /// Total reward of the step.
    pub reward: f64,
    /// Per-step reward terms.
    #[serde(borrow)]
    pub components: Terms<'a>,
    /// Episode-end terms.
    #[serde(borrow)]
    pub payout: Terms<'a>,
    /// Label in force.
    #[serde(borrow)]
    pub regime: Cow<'a, str>,
    /// Why that label is in force.
    pub regime_origin: Origin,
    /// The env said terminal.
    pub terminated: bool,
    /// The env imposed a cutoff.
    pub truncated: bool,
    /// Configuration-specific upper bound for this step's reward.
    pub ceiling: Option<f64>,
    /// The expected-reward bound; absent in traces of worlds without one.
    #[serde(default)]
    pub bound: Option<f64>,
    /// Each role's own reward; empty in traces of worlds without roles.
    #[serde(default, borrow)]
    pub role_rewards: Terms<'a>,
    #[serde(default, rename = "obs")]
    pub(in crate::trace) _obs: Option<IgnoredAny>,
    #[serde(default, rename = "action")]
    pub(in crate::trace) _action: Option<IgnoredAny>,
}

impl<'a> RowRef<'a> {
    pub(super) fn from_owned(row: &'a TraceRow) -> Self {
        let terms = |m: &'a BTreeMap<String, f64>| {
            Terms(
                m.iter()
                    .map(|(k, &v)| (Cow::Borrowed(k.as_str()), v))
                    .collect(),
            )
        };
        RowRef {
            run_id: Cow::Borrowed(&row.run_id),
            seed: row.seed,
            algorithm_id: Cow::Borrowed(&row.algorithm_id),
            task: Cow::Borrowed(&row.task),
            notify: row.notify,
            step: row.step,
            episode: row.episode,
            episode_step: row.episode_step,
            reward: row.reward,
            components: terms(&row.components),
            payout: terms(&row.payout),
            regime: Cow::Borrowed(&row.regime),
            regime_origin: row.regime_origin,
            terminated: row.terminated,
            truncated: row.truncated,
            ceiling: row.ceiling,
            bound: row.bound,
            role_rewards: terms(&row.role_rewards),
            _obs: row.obs.as_ref().map(|_| IgnoredAny),
            _action: row.action.as_ref().map(|_| IgnoredAny),
        }
    }

    /// The reward without episode-end payouts: `reward - sum(payout)`.
    pub fn reward_without_payout(&self) -> f64 {
        self.reward - self.payout.sum()
    }
}

/// A name -> value map of reward terms, borrowed and in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Terms<'a>(pub(in crate::trace) Vec<(Cow<'a, str>, f64)>);

impl Terms<'_> {
    /// The `(name, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), *v))
    }

    /// The sum of the values.
    pub fn sum(&self) -> f64 {
        self.0.iter().map(|(_, v)| v).sum()
    }

    /// True when there is no term.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Terms<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for MapVisitor<'a> {
            type Value = Terms<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of term names to numbers")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Terms<'a>, M::Error> {
                let mut terms = Vec::new();
                while let Some((Name(k), v)) = map.next_entry::<Name<'a>, f64>()? {
                    terms.push((k, v));
                }
                Ok(Terms(terms))
            }
        }
        deserializer.deserialize_map(MapVisitor(std::marker::PhantomData))
    }
}

/// A map key, borrowed when the text needs no unescaping.
#[derive(Deserialize)]
#[serde(transparent)]
struct Name<'a>(#[serde(borrow)] Cow<'a, str>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_names_are_borrowed_unless_escaped() {
        let terms: Terms<'_> = serde_json::from_str(r#"{"cost":-0.5,"late\norders":2}"#).unwrap();
        let read: Vec<_> = terms.iter().collect();
        assert_eq!(read, [("cost", -0.5), ("late\norders", 2.0)]);
        assert!(matches!(terms.0[0].0, Cow::Borrowed(_)));
        assert!(matches!(terms.0[1].0, Cow::Owned(_)));
    }
}
