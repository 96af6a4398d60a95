//! Reward specifications: named world signals weighted into per-step terms and episode-end payouts.
//!
//! A world exposes named signals each step (`orders_shipped`, `holding_cost`,
//! `ledger_balance`, ...). A [`RewardSpec`] is a list of [`Term`]s `{ name, signal, weight,
//! when }`: `when = "step"` terms pay every step, `when = "episode_end"` terms pay once, on
//! the episode's last step (terminated or truncated), and land in the payout part of the
//! [`Breakdown`]. Given per-signal bounds under a regime, the spec also yields the
//! [`Ceiling`]: the largest reward an ordinary step and a final step can earn.

use std::fmt;

use serde::{Deserialize, Serialize};

/// When a term pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// Every step.
    Step,
    /// Once, on the episode's last step.
    EpisodeEnd,
}

/// One weighted term of a reward specification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// Component name, as written in the trace (`c.<name>` / `p.<name>`).
    pub name: String,
    /// Name of the world signal the term reads.
    pub signal: String,
    /// Multiplier applied to the signal.
    pub weight: f64,
    /// When the term pays (default: every step).
    #[serde(default = "default_when")]
    pub when: When,
}

fn default_when() -> When {
    When::Step
}

/// A list of reward terms.
///
/// # Examples
///
/// ```
/// use perennial::reward::{RewardSpec, Term, When};
///
/// let spec = RewardSpec {
///     terms: vec![
///         Term { name: "shipped".into(), signal: "orders_shipped".into(), weight: 2.0, when: When::Step },
///         Term { name: "settle".into(), signal: "cash".into(), weight: 0.001, when: When::EpisodeEnd },
///     ],
/// };
/// let bound = spec.bind(&["orders_shipped", "cash"]).unwrap();
/// let mut out = Default::default();
/// assert_eq!(bound.evaluate(&[3.0, 1000.0], false, &mut out), 6.0);
/// assert_eq!(bound.evaluate(&[3.0, 1000.0], true, &mut out), 7.0);
/// assert_eq!(out.payouts, vec![1.0]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RewardSpec {
    /// The terms, in breakdown order within their kind.
    pub terms: Vec<Term>,
}

/// A reward specification resolved against a world's signal list.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundSpec {
    step: Vec<(usize, f64)>,
    payout: Vec<(usize, f64)>,
    step_names: Vec<String>,
    payout_names: Vec<String>,
}

/// A reward split into its per-step components and its episode-end payouts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    /// Per-step term values, in the order of [`EnvSpec::components`](crate::env::EnvSpec).
    pub components: Vec<f64>,
    /// Payout term values, in the order of [`EnvSpec::payouts`](crate::env::EnvSpec); all
    /// zero except on an episode's last step.
    pub payouts: Vec<f64>,
}

/// The configuration-specific upper bound on one step's reward.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// The largest reward an ordinary step can earn.
    pub step: f64,
    /// The largest reward an episode's final step can earn (ordinary ceiling plus payouts).
    pub final_step: f64,
}

impl Breakdown {
    /// Per-step components and no payouts.
    pub fn of(components: Vec<f64>) -> Self {
        Breakdown {
            components,
            payouts: Vec::new(),
        }
    }
}

impl Ceiling {
    /// The same bound on every step, final or not (a world without payouts).
    pub const fn constant(bound: f64) -> Self {
        Ceiling {
            step: bound,
            final_step: bound,
        }
    }

    /// The bound that applies to a step, given whether the episode ends on it.
    pub fn applicable(&self, episode_end: bool) -> f64 {
        if episode_end {
            self.final_step
        } else {
            self.step
        }
    }
}

/// A reward specification that does not fit the world's signals.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RewardError {
    /// A term names a signal the world does not expose.
    UnknownSignal {
        /// The term.
        term: String,
        /// The signal it asked for.
        signal: String,
        /// The signals the world exposes.
        known: Vec<String>,
    },
    /// Two terms share a name.
    DuplicateTerm(String),
    /// A weight is NaN or infinite.
    BadWeight(String),
}

impl fmt::Display for RewardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewardError::UnknownSignal {
                term,
                signal,
                known,
            } => write!(
                f,
                "reward term `{term}` reads signal `{signal}`, which this world does not expose; known signals: {}",
                known.join(", ")
            ),
            RewardError::DuplicateTerm(name) => {
                write!(
                    f,
                    "reward term `{name}` is defined twice; give each term its own name"
                )
            }
            RewardError::BadWeight(name) => {
                write!(
                    f,
                    "reward term `{name}` has a non-finite weight; use a finite number"
                )
            }
        }
    }
}

impl std::error::Error for RewardError {}

impl RewardSpec {
    /// Resolves every term's signal against the world's signal names.
    ///
    /// # Errors
    ///
    /// An unknown signal, a duplicate term name or a non-finite weight.
    pub fn bind(&self, signals: &[&str]) -> Result<BoundSpec, RewardError> {
        let mut bound = BoundSpec {
            step: Vec::new(),
            payout: Vec::new(),
            step_names: Vec::new(),
            payout_names: Vec::new(),
        };
        for (i, term) in self.terms.iter().enumerate() {
            if self.terms[..i].iter().any(|t| t.name == term.name) {
                return Err(RewardError::DuplicateTerm(term.name.clone()));
            }
            if !term.weight.is_finite() {
                return Err(RewardError::BadWeight(term.name.clone()));
            }
            let index = signals
                .iter()
                .position(|s| *s == term.signal)
                .ok_or_else(|| RewardError::UnknownSignal {
                    term: term.name.clone(),
                    signal: term.signal.clone(),
                    known: signals.iter().map(|s| s.to_string()).collect(),
                })?;
            match term.when {
                When::Step => {
                    bound.step.push((index, term.weight));
                    bound.step_names.push(term.name.clone());
                }
                When::EpisodeEnd => {
                    bound.payout.push((index, term.weight));
                    bound.payout_names.push(term.name.clone());
                }
            }
        }
        Ok(bound)
    }
}

impl BoundSpec {
    /// Names of the per-step terms, in breakdown order.
    pub fn component_names(&self) -> &[String] {
        &self.step_names
    }

    /// Names of the payout terms, in breakdown order.
    pub fn payout_names(&self) -> &[String] {
        &self.payout_names
    }

    /// Computes the reward of one step from the world's signal values, filling `out`, and
    /// returns the total. Payout terms pay only when `episode_end` is true.
    pub fn evaluate(&self, signals: &[f64], episode_end: bool, out: &mut Breakdown) -> f64 {
        out.components.clear();
        out.payouts.clear();
        let mut total = 0.0;
        for &(i, w) in &self.step {
            let v = w * signals[i];
            out.components.push(v);
            total += v;
        }
        for &(i, w) in &self.payout {
            let v = if episode_end { w * signals[i] } else { 0.0 };
            out.payouts.push(v);
            total += v;
        }
        total
    }

    /// The ceiling implied by per-signal bounds `(low, high)` (in the world's signal order).
    /// A term's largest value is `max(w * low, w * high)`.
    pub fn ceiling(&self, bounds: &[(f64, f64)]) -> Ceiling {
        let best = |terms: &[(usize, f64)]| -> f64 {
            terms
                .iter()
                .map(|&(i, w)| {
                    let (lo, hi) = bounds[i];
                    (w * lo).max(w * hi)
                })
                .sum()
        };
        let step = best(&self.step);
        Ceiling {
            step,
            final_step: step + best(&self.payout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RewardSpec {
        RewardSpec {
            terms: vec![
                Term {
                    name: "ship".into(),
                    signal: "a".into(),
                    weight: 1.0,
                    when: When::Step,
                },
                Term {
                    name: "cost".into(),
                    signal: "b".into(),
                    weight: -0.5,
                    when: When::Step,
                },
                Term {
                    name: "settle".into(),
                    signal: "c".into(),
                    weight: 0.1,
                    when: When::EpisodeEnd,
                },
            ],
        }
    }

    #[test]
    fn reward_is_the_sum_of_components_and_payouts() {
        let bound = spec().bind(&["a", "b", "c"]).unwrap();
        let mut out = Breakdown::default();
        let r = bound.evaluate(&[4.0, 2.0, 50.0], true, &mut out);
        assert_eq!(out.components, vec![4.0, -1.0]);
        assert_eq!(out.payouts, vec![5.0]);
        assert_eq!(r, 8.0);
        let r = bound.evaluate(&[4.0, 2.0, 50.0], false, &mut out);
        assert_eq!(out.payouts, vec![0.0]);
        assert_eq!(r, 3.0);
    }

    #[test]
    fn ceiling_takes_the_best_end_of_each_bound() {
        let bound = spec().bind(&["a", "b", "c"]).unwrap();
        let c = bound.ceiling(&[(0.0, 10.0), (0.0, 4.0), (-100.0, 200.0)]);
        assert_eq!(c.step, 10.0);
        assert_eq!(c.final_step, 30.0);
    }

    #[test]
    fn unknown_signal_names_the_term_and_the_known_signals() {
        let err = spec().bind(&["a", "b"]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("settle") && msg.contains("`c`") && msg.contains("a, b"),
            "{msg}"
        );
    }
}
