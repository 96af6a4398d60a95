//! The scheduler: decides before each step whether the regime changes, and why.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{Conditions, Notification, NotifyLevel, Origin, Regime, RegimeError};

/// How the scheduler moves between regimes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "plan", rename_all = "snake_case", deny_unknown_fields)]
pub enum Plan {
    /// An explicit list of `(step, label)` shifts. A shift at step 0 sets the initial label.
    Fixed {
        /// Shifts in increasing step order.
        shifts: Vec<(u64, String)>,
    },
    /// Labels in order, each held for `every` steps, repeating forever, so every
    /// configuration recurs and forgetting can be measured.
    Cycle {
        /// The labels, in order; the first is the initial label.
        labels: Vec<String>,
        /// Steps per label.
        every: u64,
    },
    /// An asynchronous controller: after each shift it draws a dwell time
    /// `min_dwell + round(Exp(mean_dwell - min_dwell))` from its own seeded stream, then
    /// moves to another label drawn by `weights` (the current label excluded).
    Stochastic {
        /// Candidate labels; the first is the initial label.
        labels: Vec<String>,
        /// Relative weight of each label (default: equal).
        #[serde(default)]
        weights: Vec<f64>,
        /// Shortest dwell, in steps (at least 1).
        min_dwell: u64,
        /// Mean dwell, in steps (at least `min_dwell`).
        mean_dwell: f64,
    },
    /// No automatic shifts: the experimenter calls [`Scheduler::shift_to`] between steps.
    Manual,
}

impl Plan {
    /// [`Plan::Cycle`] over `labels`, each held for `every` steps.
    ///
    /// ```
    /// use perennial::regime::Plan;
    ///
    /// let plan = Plan::cycle(&["calm", "heavy"], 50);
    /// assert_eq!(plan, Plan::Cycle { labels: vec!["calm".into(), "heavy".into()], every: 50 });
    /// ```
    pub fn cycle(labels: &[&str], every: u64) -> Self {
        Plan::Cycle {
            labels: labels.iter().map(|l| l.to_string()).collect(),
            every,
        }
    }
}

/// A shift [`Scheduler::shift_before`] made.
#[derive(Clone, Debug, PartialEq)]
pub struct Shift {
    /// The label in force before it.
    pub from: String,
    /// What the agent is told, at a notify level other than `none`.
    pub notification: Option<Notification>,
}

/// Decides, before each step, which regime is in force.
///
/// # Examples
///
/// ```
/// use perennial::regime::{Origin, Plan, Regime, Scheduler};
///
/// let regimes = vec![Regime::new("calm", &[]), Regime::new("heavy", &[("gravity", 12.0)])];
/// let plan = Plan::cycle(&["calm", "heavy"], 50);
/// let mut s = Scheduler::new(regimes, plan, 0).unwrap();
/// assert!(s.before_step(0).is_none());
/// assert_eq!((s.label(), s.origin()), ("calm", Origin::Initial));
/// assert_eq!(s.before_step(50).map(|r| r.label.as_str()), Some("heavy"));
/// assert_eq!(s.origin(), Origin::Scheduled);
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scheduler {
    regimes: Vec<Regime>,
    plan: Plan,
    current: usize,
    origin: Origin,
    pending: Option<usize>,
    next_shift: Option<u64>,
    fixed_cursor: usize,
    rng: ChaCha8Rng,
}

impl Scheduler {
    /// Builds a scheduler over `regimes` following `plan`, its random stream seeded from
    /// `seed` (use [`crate::seed::Stream::Scheduler`]'s seed for the run's scheduler).
    ///
    /// # Errors
    ///
    /// An empty regime list, a plan naming an undefined label, or a malformed plan.
    pub fn new(regimes: Vec<Regime>, plan: Plan, seed: u64) -> Result<Self, RegimeError> {
        if regimes.is_empty() {
            return Err(RegimeError::BadPlan(
                "the regime list is empty; define at least one regime".into(),
            ));
        }
        // A map, not a scan per label: a plan naming every one of 80,000 regimes stays
        // near-linear to load.
        let positions = label_positions(&regimes);
        let find = |label: &str| -> Result<usize, RegimeError> {
            positions
                .get(label)
                .copied()
                .ok_or_else(|| RegimeError::UnknownLabel {
                    label: label.to_string(),
                    known: regimes.iter().map(|r| r.label.clone()).collect(),
                })
        };
        // A cycle's or a stochastic plan's labels: at least one, each defined; the first.
        let first_of = |labels: &[String]| -> Result<usize, RegimeError> {
            let Some(first) = labels.first() else {
                let message = "is empty; name at least one regime label".into();
                return Err(field("labels", None, message));
            };
            for label in labels {
                find(label)?;
            }
            find(first)
        };
        let mut current = 0;
        let mut next_shift = None;
        let mut fixed_cursor = 0;
        match &plan {
            Plan::Fixed { shifts } => {
                for (i, (step, label)) in shifts.iter().enumerate() {
                    find(label)?;
                    if i > 0 && *step <= shifts[i - 1].0 {
                        return Err(field(
                            "shifts",
                            Some(i),
                            format!(
                                "shift steps must increase; step {step} follows step {}",
                                shifts[i - 1].0
                            ),
                        ));
                    }
                }
                if let Some((0, label)) = shifts.first() {
                    current = find(label)?;
                    fixed_cursor = 1;
                }
                next_shift = shifts.get(fixed_cursor).map(|(s, _)| *s);
            }
            Plan::Cycle { labels, every } => {
                current = first_of(labels)?;
                if *every == 0 {
                    return Err(field("every", None, "must be at least 1 step".into()));
                }
                next_shift = Some(*every);
            }
            Plan::Stochastic {
                labels,
                weights,
                min_dwell,
                mean_dwell,
            } => {
                current = first_of(labels)?;
                if *min_dwell == 0 {
                    return Err(field("min_dwell", None, "must be at least 1 step".into()));
                }
                if !(mean_dwell.is_finite() && *mean_dwell >= *min_dwell as f64) {
                    return Err(field(
                        "mean_dwell",
                        None,
                        "must be a finite number of steps, at least `min_dwell`".into(),
                    ));
                }
                let sum = weights.iter().sum::<f64>();
                if !weights.is_empty()
                    && (weights.len() != labels.len()
                        || weights.iter().any(|w| !(w.is_finite() && *w >= 0.0))
                        || sum <= 0.0
                        || !sum.is_finite())
                {
                    return Err(field(
                        "weights",
                        None,
                        "give one finite, non-negative weight per label, not all zero, with a finite sum"
                            .into(),
                    ));
                }
            }
            Plan::Manual => {}
        }
        let mut scheduler = Scheduler {
            regimes,
            plan,
            current,
            origin: Origin::Initial,
            pending: None,
            next_shift,
            fixed_cursor,
            rng: ChaCha8Rng::seed_from_u64(seed),
        };
        if matches!(scheduler.plan, Plan::Stochastic { .. }) {
            scheduler.next_shift = Some(scheduler.draw_dwell());
        }
        Ok(scheduler)
    }

    /// This (new) scheduler as it stands before step `step` of a run that followed its plan
    /// from step 0: every planned shift before `step` taken in order, so a stochastic
    /// plan's random stream is where that run's would be. `was` is the scheduler the run
    /// actually had: a label it shifted to by hand stays in force when this scheduler's
    /// regimes define it. A resume that follows an edited world file starts here.
    pub fn replayed_to(mut self, step: u64, was: &Scheduler) -> Self {
        while let Some(s) = self.next_shift.filter(|&s| s < step) {
            self.before_step(s);
            if self.next_shift == Some(s) {
                // A plan that does not move on (it cannot happen for a valid plan) must
                // not loop.
                break;
            }
        }
        if was.origin == Origin::Manual
            && let Some(index) = self.regimes.iter().position(|r| r.label == was.label())
        {
            self.current = index;
            self.origin = Origin::Manual;
        }
        self
    }

    /// A scheduler with one regime and no shifts: a stationary world.
    pub fn stationary(label: impl Into<String>) -> Self {
        Scheduler {
            regimes: vec![Regime::new(label, &[])],
            plan: Plan::Manual,
            current: 0,
            origin: Origin::Initial,
            pending: None,
            next_shift: None,
            fixed_cursor: 0,
            rng: ChaCha8Rng::seed_from_u64(0),
        }
    }

    /// The label in force.
    pub fn label(&self) -> &str {
        &self.regimes[self.current].label
    }

    /// The regime in force.
    pub fn regime(&self) -> &Regime {
        &self.regimes[self.current]
    }

    /// Why the label in force is in force.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Every regime, in definition order.
    pub fn regimes(&self) -> &[Regime] {
        &self.regimes
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Asks for a shift to `label` before the next step (origin `manual`). Works with
    /// every plan; the plan's own shifts carry on from their timetable.
    ///
    /// # Errors
    ///
    /// [`RegimeError::UnknownLabel`] when no regime has that label.
    pub fn shift_to(&mut self, label: &str) -> Result<(), RegimeError> {
        let index = self
            .regimes
            .iter()
            .position(|r| r.label == label)
            .ok_or_else(|| RegimeError::UnknownLabel {
                label: label.to_string(),
                known: self.regimes.iter().map(|r| r.label.clone()).collect(),
            })?;
        self.pending = Some(index);
        Ok(())
    }

    /// Whether [`Scheduler::before_step`] may shift at `step` (a planned shift is due or a
    /// manual one is pending). Lets a hot loop skip the call on most steps.
    pub fn next_shift_due(&self, step: u64) -> bool {
        self.pending.is_some() || self.next_shift == Some(step)
    }

    /// Called before step `step` (global, from 0). Returns the new regime when the label
    /// changes at this step, `None` otherwise. A shift to the label already in force
    /// changes nothing.
    pub fn before_step(&mut self, step: u64) -> Option<&Regime> {
        let mut shift: Option<(usize, Origin)> = None;
        if self.next_shift == Some(step) {
            shift = self.planned_shift(step);
        }
        if let Some(index) = self.pending.take() {
            shift = Some((index, Origin::Manual));
        }
        match shift {
            Some((index, origin)) if index != self.current => {
                self.current = index;
                self.origin = origin;
                Some(&self.regimes[index])
            }
            _ => None,
        }
    }

    /// [`Scheduler::before_step`] as a run takes it: the shift made before `step`, with the
    /// label it left and what an agent told at `level` learns of it (the delta measured
    /// over `baseline`, the conditions the world was built with); `None` when the label
    /// does not change. The harness and the Python envs both shift through this.
    pub fn shift_before(
        &mut self,
        step: u64,
        level: NotifyLevel,
        baseline: &Conditions,
    ) -> Option<Shift> {
        let from = self.current;
        self.before_step(step)?;
        let (from, to) = (&self.regimes[from], &self.regimes[self.current]);
        Some(Shift {
            from: from.label.clone(),
            notification: level.at_shift(step, from, to, baseline),
        })
    }

    fn planned_shift(&mut self, step: u64) -> Option<(usize, Origin)> {
        let index_of =
            |regimes: &[Regime], label: &str| regimes.iter().position(|r| r.label == label);
        match &self.plan {
            Plan::Fixed { shifts } => {
                let label = &shifts[self.fixed_cursor].1;
                let index = index_of(&self.regimes, label)?;
                self.fixed_cursor += 1;
                self.next_shift = shifts.get(self.fixed_cursor).map(|(s, _)| *s);
                Some((index, Origin::Scheduled))
            }
            Plan::Cycle { labels, every } => {
                let label = &labels[((step / every) % labels.len() as u64) as usize];
                let index = index_of(&self.regimes, label)?;
                // Saturating: a shift that would fall past u64::MAX never comes.
                self.next_shift = Some(step.saturating_add(*every));
                Some((index, Origin::Scheduled))
            }
            Plan::Stochastic {
                labels, weights, ..
            } => {
                let current_label = self.regimes[self.current].label.clone();
                let candidates: Vec<(usize, f64)> = labels
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| **l != current_label)
                    .map(|(i, _)| (i, if weights.is_empty() { 1.0 } else { weights[i] }))
                    .filter(|(_, w)| *w > 0.0)
                    .collect();
                let total: f64 = candidates.iter().map(|(_, w)| w).sum();
                let chosen = if candidates.is_empty() {
                    None
                } else {
                    let mut u = self.rng.random::<f64>() * total;
                    let mut pick = candidates[candidates.len() - 1].0;
                    for &(i, w) in &candidates {
                        if u < w {
                            pick = i;
                            break;
                        }
                        u -= w;
                    }
                    Some(pick)
                };
                let label = chosen.map(|i| labels[i].clone());
                self.next_shift = Some(step.saturating_add(self.draw_dwell()));
                let index = index_of(&self.regimes, &label?)?;
                Some((index, Origin::Stochastic))
            }
            Plan::Manual => None,
        }
    }

    fn draw_dwell(&mut self) -> u64 {
        let Plan::Stochastic {
            min_dwell,
            mean_dwell,
            ..
        } = self.plan
        else {
            return u64::MAX;
        };
        let u: f64 = self.rng.random::<f64>();
        let extra = -(1.0 - u).ln() * (mean_dwell - min_dwell as f64);
        // `as` saturates a huge draw at u64::MAX; the add must saturate too, or a huge
        // `mean_dwell` wraps to a dwell below `min_dwell`.
        min_dwell.saturating_add(extra.round() as u64)
    }

    /// Checks a scheduler restored from a checkpoint (or any deserialized one): its plan is
    /// valid for its regimes and its cursors point inside them, so a tampered file is an
    /// error here instead of a panic mid-run.
    ///
    /// # Errors
    ///
    /// [`RegimeError::BadPlan`] naming the field that is out of range.
    pub fn check_restored(&self) -> Result<(), RegimeError> {
        Scheduler::new(self.regimes.clone(), self.plan.clone(), 0)?;
        let n = self.regimes.len();
        let bad = |what: String| Err(RegimeError::BadPlan(what));
        if self.current >= n {
            return bad(format!(
                "`current` is {} but there are {n} regimes",
                self.current
            ));
        }
        if let Some(p) = self.pending
            && p >= n
        {
            return bad(format!("`pending` is {p} but there are {n} regimes"));
        }
        if let Plan::Fixed { shifts } = &self.plan {
            if self.fixed_cursor > shifts.len() {
                return bad(format!(
                    "`fixed_cursor` is {} but the plan has {} shifts",
                    self.fixed_cursor,
                    shifts.len()
                ));
            }
            if self.next_shift != shifts.get(self.fixed_cursor).map(|(s, _)| *s) {
                return bad("`next_shift` does not match the fixed plan's cursor".into());
            }
        }
        Ok(())
    }
}

fn field(field: &'static str, index: Option<usize>, message: String) -> RegimeError {
    RegimeError::PlanField {
        field,
        index,
        message,
    }
}

/// Each label's first position.
fn label_positions(regimes: &[Regime]) -> std::collections::HashMap<&str, usize> {
    let mut map = std::collections::HashMap::with_capacity(regimes.len());
    for (i, r) in regimes.iter().enumerate() {
        map.entry(r.label.as_str()).or_insert(i);
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regimes() -> Vec<Regime> {
        vec![
            Regime::new("a", &[]),
            Regime::new("b", &[("gravity", 12.0)]),
            Regime::new("c", &[("gravity", 5.0)]),
        ]
    }

    fn labels(s: &mut Scheduler, steps: u64) -> Vec<(String, Origin)> {
        (0..steps)
            .map(|t| {
                s.before_step(t);
                (s.label().to_string(), s.origin())
            })
            .collect()
    }

    #[test]
    fn cycle_repeats_labels_in_order() {
        let plan = Plan::cycle(&["a", "b", "c"], 2);
        let mut s = Scheduler::new(regimes(), plan, 0).unwrap();
        let got: Vec<String> = labels(&mut s, 8).into_iter().map(|x| x.0).collect();
        assert_eq!(got, ["a", "a", "b", "b", "c", "c", "a", "a"]);
    }

    #[test]
    fn fixed_plan_follows_its_timetable_with_scheduled_origin() {
        let plan = Plan::Fixed {
            shifts: vec![(0, "b".into()), (3, "c".into()), (5, "b".into())],
        };
        let mut s = Scheduler::new(regimes(), plan, 0).unwrap();
        let got = labels(&mut s, 6);
        assert_eq!(got[0], ("b".to_string(), Origin::Initial));
        assert_eq!(got[3], ("c".to_string(), Origin::Scheduled));
        assert_eq!(got[5], ("b".to_string(), Origin::Scheduled));
    }

    #[test]
    fn stochastic_dwell_respects_the_minimum_and_is_seeded() {
        let plan = Plan::Stochastic {
            labels: vec!["a".into(), "b".into(), "c".into()],
            weights: vec![],
            min_dwell: 10,
            mean_dwell: 40.0,
        };
        let mut s1 = Scheduler::new(regimes(), plan.clone(), 9).unwrap();
        let mut s2 = Scheduler::new(regimes(), plan.clone(), 9).unwrap();
        let run1 = labels(&mut s1, 5000);
        assert_eq!(run1, labels(&mut s2, 5000));
        let mut shifts = vec![0];
        for t in 1..run1.len() {
            if run1[t].0 != run1[t - 1].0 {
                assert_eq!(run1[t].1, Origin::Stochastic);
                shifts.push(t);
            }
        }
        assert!(shifts.len() > 50, "{} shifts", shifts.len());
        assert!(shifts.windows(2).all(|w| w[1] - w[0] >= 10));
        let mean = (shifts[shifts.len() - 1] - shifts[0]) as f64 / (shifts.len() - 1) as f64;
        assert!((mean - 40.0).abs() < 8.0, "mean dwell {mean}");
        let mut s3 = Scheduler::new(regimes(), plan, 10).unwrap();
        assert_ne!(run1, labels(&mut s3, 5000));
    }

    #[test]
    fn shift_before_names_the_label_left_and_tells_what_the_level_allows() {
        let mut s = Scheduler::new(regimes(), Plan::Manual, 0).unwrap();
        let baseline = Conditions::new();
        assert!(s.shift_before(0, NotifyLevel::Label, &baseline).is_none());
        s.shift_to("c").unwrap();
        let shift = s.shift_before(1, NotifyLevel::Label, &baseline).unwrap();
        assert_eq!(shift.from, "a");
        let told = shift.notification.unwrap();
        assert_eq!((told.step, told.label.as_deref()), (1, Some("c")));
        s.shift_to("b").unwrap();
        let shift = s.shift_before(2, NotifyLevel::None, &baseline).unwrap();
        assert_eq!((shift.from.as_str(), shift.notification), ("c", None));
        // A shift to the label in force is no shift.
        s.shift_to("b").unwrap();
        assert!(s.shift_before(3, NotifyLevel::Flag, &baseline).is_none());
    }

    #[test]
    fn manual_shift_applies_before_the_next_step() {
        let mut s = Scheduler::new(regimes(), Plan::Manual, 0).unwrap();
        assert!(s.before_step(0).is_none());
        s.shift_to("c").unwrap();
        assert_eq!(s.before_step(1).map(|r| r.label.clone()), Some("c".into()));
        assert_eq!(s.origin(), Origin::Manual);
        assert!(s.shift_to("zzz").is_err());
    }

    #[test]
    fn undefined_label_in_a_plan_is_rejected() {
        let plan = Plan::cycle(&["a", "nope"], 5);
        let err = Scheduler::new(regimes(), plan, 0).unwrap_err();
        assert!(err.to_string().contains("nope"));
    }

    #[test]
    fn a_huge_mean_dwell_never_shifts_before_min_dwell() {
        let plan = Plan::Stochastic {
            labels: vec!["a".into(), "b".into()],
            weights: vec![],
            min_dwell: 1_000,
            mean_dwell: 1e300,
        };
        let mut s = Scheduler::new(regimes(), plan, 3).unwrap();
        let shifted = labels(&mut s, 5_000).iter().any(|(l, _)| l != "a");
        assert!(!shifted, "a dwell of at least 1000 steps wrapped");
    }

    #[test]
    fn weights_whose_sum_is_infinite_are_rejected() {
        let plan = Plan::Stochastic {
            labels: vec!["a".into(), "b".into(), "c".into()],
            weights: vec![1e308, 1e308, 1e308],
            min_dwell: 1,
            mean_dwell: 2.0,
        };
        let err = Scheduler::new(regimes(), plan, 0).unwrap_err().to_string();
        assert!(err.contains("finite sum"), "{err}");
    }

    #[test]
    fn a_tampered_restored_scheduler_is_an_error_not_a_panic() {
        let plan = Plan::cycle(&["a", "b"], 5);
        let s = Scheduler::new(regimes(), plan, 0).unwrap();
        assert!(s.check_restored().is_ok());
        let mut v = serde_json::to_value(&s).unwrap();
        v["current"] = serde_json::json!(7);
        let bad: Scheduler = serde_json::from_value(v.clone()).unwrap();
        assert!(
            bad.check_restored()
                .unwrap_err()
                .to_string()
                .contains("current")
        );
        v["current"] = serde_json::json!(0);
        v["plan"]["every"] = serde_json::json!(0);
        let bad: Scheduler = serde_json::from_value(v).unwrap();
        assert!(bad.check_restored().is_err());
    }
}
