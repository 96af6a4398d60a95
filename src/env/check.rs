//! The contract checker: runs the [`Env`] rules on any world and names the first one broken.

use std::fmt;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{Action, Env, EnvError, Observation, Space, Transition};
use crate::regime::Shiftable;

/// A rule of the [`Env`] contract that [`check`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// Every world the checker asks for builds (the same description builds every time).
    Builds,
    /// Observations have the observation space's length, rewards are finite, and a
    /// breakdown has the spec's components and payouts and sums to the reward.
    SpacesMatchSpec,
    /// `reset(seed)` twice on two fresh worlds, and the same actions, give bit-identical
    /// transitions.
    ResetIsDeterministic,
    /// `reset(seed)` on a world that has been stepped builds the same world as a fresh one:
    /// nothing of the previous episode survives.
    ResetDestroys,
    /// A step after an episode end (without a reset) is an error.
    StepAfterEndIsError,
    /// An invalid action is an error and leaves the world unchanged.
    InvalidActionChangesNothing,
    /// Setting a parameter mid-episode (a regime shift) ends no episode.
    ShiftEndsNoEpisode,
    /// A saved state, loaded into a fresh world, gives the same future.
    RestoreGivesSameFuture,
}

impl Rule {
    /// Every rule, in the order [`check`] runs them.
    pub const ALL: [Rule; 8] = [
        Rule::Builds,
        Rule::SpacesMatchSpec,
        Rule::ResetIsDeterministic,
        Rule::ResetDestroys,
        Rule::StepAfterEndIsError,
        Rule::InvalidActionChangesNothing,
        Rule::ShiftEndsNoEpisode,
        Rule::RestoreGivesSameFuture,
    ];

    /// The rule's name, as failures print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Builds => "builds",
            Rule::SpacesMatchSpec => "spaces-match-spec",
            Rule::ResetIsDeterministic => "reset-is-deterministic",
            Rule::ResetDestroys => "reset-destroys",
            Rule::StepAfterEndIsError => "step-after-end-is-error",
            Rule::InvalidActionChangesNothing => "invalid-action-changes-nothing",
            Rule::ShiftEndsNoEpisode => "shift-ends-no-episode",
            Rule::RestoreGivesSameFuture => "restore-gives-same-future",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parameter ranges wider than this are treated as unbounded: the shift rule moves the
/// value by a quarter instead of to the middle of the range.
const NUDGE_SPAN: f64 = 1e9;

/// How [`check`] drives the world. `Default`: seed 0, 500 steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// The world seed every rule resets with, and the seed of the action sequence.
    pub seed: u64,
    /// Steps per trajectory (each rule stops earlier at an episode end).
    pub steps: u64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            seed: 0,
            steps: 500,
        }
    }
}

/// A broken rule: which, at which step of the rule's trajectory, and what was seen.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckFailure {
    /// The rule.
    pub rule: Rule,
    /// The step (from 0 after `reset`) at which it broke.
    pub step: u64,
    /// What was seen, and what the rule asks for.
    pub message: String,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rule `{}` broken at step {}: {}",
            self.rule, self.step, self.message
        )
    }
}

impl std::error::Error for CheckFailure {}

/// What [`check`] ran: the rules that passed and those it could not exercise, with why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    /// Rules run and kept.
    pub passed: Vec<Rule>,
    /// Rules the world gave no occasion for (no episode end within the steps, no
    /// parameters, no saved state), with the reason.
    pub skipped: Vec<(Rule, String)>,
}

/// Runs the contract on worlds `make` builds (each rule on fresh ones), stopping at the
/// first broken rule. `make` returns the world or why it cannot be built.
///
/// # Errors
///
/// The first broken rule, with the step it broke at.
///
/// # Examples
///
/// ```
/// use perennial::cartpole::{CartPole, CartPoleParams};
/// use perennial::env::{CheckOptions, check};
///
/// let make = || Ok::<_, String>(CartPole::new(CartPoleParams::default()));
/// let report = check(make, &CheckOptions::default()).unwrap();
/// assert_eq!(report.passed.len() + report.skipped.len(), 8);
/// ```
pub fn check<E, X, F>(mut build: F, options: &CheckOptions) -> Result<CheckReport, CheckFailure>
where
    E: Env<Action = usize> + Shiftable,
    X: fmt::Display,
    F: FnMut() -> Result<E, X>,
{
    let mut make = || {
        build().map_err(|e| CheckFailure {
            rule: Rule::Builds,
            step: 0,
            message: format!("the world cannot be built: {e}"),
        })
    };
    let mut report = CheckReport {
        passed: vec![Rule::Builds],
        skipped: Vec::new(),
    };
    let actions = action_sequence(&make()?.spec().action_space, options);
    let first = trajectory(&mut make()?, options.seed, &actions)?;
    report.passed.push(Rule::SpacesMatchSpec);

    let second = trajectory(&mut make()?, options.seed, &actions)?;
    same_future(Rule::ResetIsDeterministic, &first, &second, 0)?;
    report.passed.push(Rule::ResetIsDeterministic);

    let mut used = make()?;
    trajectory(&mut used, options.seed.wrapping_add(1), &actions)?;
    let again = trajectory(&mut used, options.seed, &actions)?;
    same_future(Rule::ResetDestroys, &first, &again, 0)?;
    report.passed.push(Rule::ResetDestroys);

    match first.iter().position(Step::done) {
        Some(end) => {
            let mut env = make()?;
            env.reset(options.seed);
            // `first[0]` is the reset: the episode ends on action `end - 1`.
            for a in &actions[..end] {
                let _ = env.step(a);
            }
            if env.step(&actions[0]).is_ok() {
                return Err(CheckFailure {
                    rule: Rule::StepAfterEndIsError,
                    step: end as u64,
                    message: "step after the episode ended returned Ok; it must be an error (EnvError::EpisodeEnded) until reset".into(),
                });
            }
            report.passed.push(Rule::StepAfterEndIsError);
        }
        None => report.skipped.push((
            Rule::StepAfterEndIsError,
            format!("no episode ended within {} steps", first.len()),
        )),
    }

    let mut probe = Probe {
        make: &mut make,
        options,
        actions: &actions,
        first: &first,
        report: &mut report,
    };
    probe.invalid_action()?;
    probe.shift()?;
    probe.restore()?;
    Ok(report)
}

/// One step as the checker compares it: bits of the observation and reward, the flags.
#[derive(Clone, Debug, PartialEq)]
struct Step {
    obs: Vec<u32>,
    reward: u64,
    terminated: bool,
    truncated: bool,
}

impl Step {
    fn of<O: Observation>(t: &Transition<O>) -> Self {
        Step {
            obs: bits(t.observation.as_slice()),
            reward: t.reward.to_bits(),
            terminated: t.terminated,
            truncated: t.truncated,
        }
    }

    fn done(&self) -> bool {
        self.terminated || self.truncated
    }

    /// Appends the step of `t` to `out`; true when it ended the episode.
    fn push<O: Observation>(out: &mut Vec<Step>, t: &Transition<O>) -> bool {
        let step = Step::of(t);
        let done = step.done();
        out.push(step);
        done
    }
}

fn bits(obs: &[f32]) -> Vec<u32> {
    obs.iter().map(|x| x.to_bits()).collect()
}

fn action_sequence(space: &Space, options: &CheckOptions) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    (0..options.steps.max(1))
        .map(|_| usize::sample(space, &mut rng).unwrap_or(0))
        .collect()
}

/// Resets with `seed`, steps `actions` until an episode end, checking every observation and
/// reward against the spec.
fn trajectory<E: Env<Action = usize>>(
    env: &mut E,
    seed: u64,
    actions: &[usize],
) -> Result<Vec<Step>, CheckFailure> {
    let spec = env.spec().clone();
    let fail = |step: usize, message: String| CheckFailure {
        rule: Rule::SpacesMatchSpec,
        step: step as u64,
        message,
    };
    let want = spec.observation_space.len();
    let first = env.reset(seed);
    if first.as_slice().len() != want {
        return Err(fail(
            0,
            format!(
                "reset returned {} observation elements; the observation space has {want}",
                first.as_slice().len()
            ),
        ));
    }
    let mut out = vec![Step {
        obs: bits(first.as_slice()),
        reward: 0,
        terminated: false,
        truncated: false,
    }];
    for (i, a) in actions.iter().enumerate() {
        let t = env
            .step(a)
            .map_err(|e| fail(i, format!("step with the in-space action {a} failed: {e}")))?;
        let got = t.observation.as_slice().len();
        if got != want {
            return Err(fail(
                i,
                format!(
                    "step returned {got} observation elements; the observation space has {want}"
                ),
            ));
        }
        if !t.reward.is_finite() {
            return Err(fail(
                i,
                format!("the reward is {}; it must be finite", t.reward),
            ));
        }
        if let Some(b) = &t.breakdown {
            if b.components.len() != spec.components.len() || b.payouts.len() != spec.payouts.len()
            {
                return Err(fail(
                    i,
                    format!(
                        "the breakdown has {} components and {} payouts; the spec names {} and {}",
                        b.components.len(),
                        b.payouts.len(),
                        spec.components.len(),
                        spec.payouts.len()
                    ),
                ));
            }
            let sum: f64 = b.components.iter().chain(&b.payouts).sum();
            if (sum - t.reward).abs() > 1e-9 * t.reward.abs().max(1.0) {
                return Err(fail(
                    i,
                    format!("the breakdown sums to {sum}; the reward is {}", t.reward),
                ));
            }
        }
        if Step::push(&mut out, &t) {
            break;
        }
    }
    Ok(out)
}

/// `got` must equal `want` from index `from` on (index 0 is the reset's observation).
fn same_future(rule: Rule, want: &[Step], got: &[Step], from: usize) -> Result<(), CheckFailure> {
    for (i, (w, g)) in want[from..].iter().zip(got).enumerate() {
        if w != g {
            let at = from + i;
            return Err(CheckFailure {
                rule,
                step: at.saturating_sub(1) as u64,
                message: format!(
                    "{} differs: expected {w:?}, got {g:?}",
                    if at == 0 {
                        "the reset observation"
                    } else {
                        "the transition"
                    }
                ),
            });
        }
    }
    if got.len() != want.len() - from {
        return Err(CheckFailure {
            rule,
            step: (from + got.len().min(want.len() - from)) as u64,
            message: format!(
                "the episode lasted {} steps; it should last {}",
                got.len(),
                want.len() - from
            ),
        });
    }
    Ok(())
}

/// Steps `actions` from the world as it stands, until an episode end.
fn steps_from<E: Env<Action = usize>>(
    env: &mut E,
    actions: &[usize],
    rule: Rule,
    offset: usize,
) -> Result<Vec<Step>, CheckFailure> {
    let mut out = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        let t = env.step(a).map_err(|e| CheckFailure {
            rule,
            step: (offset + i) as u64,
            message: format!("step with the in-space action {a} failed: {e}"),
        })?;
        if Step::push(&mut out, &t) {
            break;
        }
    }
    Ok(out)
}

/// The checks after the trajectories: each builds its own worlds with `make` and compares
/// them with `first`, the trajectory of `actions` from `options.seed`.
struct Probe<'a, E> {
    make: &'a mut dyn FnMut() -> Result<E, CheckFailure>,
    options: &'a CheckOptions,
    actions: &'a [usize],
    first: &'a [Step],
    report: &'a mut CheckReport,
}

impl<E: Env<Action = usize> + Shiftable> Probe<'_, E> {
    fn invalid_action(&mut self) -> Result<(), CheckFailure> {
        let mut env = (self.make)()?;
        let Space::Discrete { n } = env.spec().action_space else {
            self.report.skipped.push((
                Rule::InvalidActionChangesNothing,
                "the action space is not Discrete".into(),
            ));
            return Ok(());
        };
        let k = self.to_midway(&mut env);
        match env.step(&n) {
            Err(EnvError::InvalidAction { .. }) => {}
            Err(e) => {
                return Err(CheckFailure {
                    rule: Rule::InvalidActionChangesNothing,
                    step: k as u64,
                    message: format!(
                        "action {n} (outside Discrete({n})) failed with `{e}`; it must be EnvError::InvalidAction"
                    ),
                });
            }
            Ok(_) => {
                return Err(CheckFailure {
                    rule: Rule::InvalidActionChangesNothing,
                    step: k as u64,
                    message: format!(
                        "action {n} is outside Discrete({n}) but the step returned Ok; it must be EnvError::InvalidAction"
                    ),
                });
            }
        }
        self.goes_on_as_first(&mut env, k, Rule::InvalidActionChangesNothing)
    }

    fn shift(&mut self) -> Result<(), CheckFailure> {
        let mut env = (self.make)()?;
        let Some(p) = env.parameters().into_iter().find(|p| p.max > p.min) else {
            self.report.skipped.push((
                Rule::ShiftEndsNoEpisode,
                "the world has no parameter with a range".into(),
            ));
            return Ok(());
        };
        env.reset(self.options.seed);
        let t = env.step(&self.actions[0]).map_err(|e| CheckFailure {
            rule: Rule::ShiftEndsNoEpisode,
            step: 0,
            message: format!(
                "step with the in-space action {} failed: {e}",
                self.actions[0]
            ),
        })?;
        if t.done() {
            self.report.skipped.push((
                Rule::ShiftEndsNoEpisode,
                "the first episode ended at its first step".into(),
            ));
            return Ok(());
        }
        let now = env.get(p.name).unwrap_or(p.min);
        let mut to = if p.max - p.min <= NUDGE_SPAN {
            if now < p.max {
                (now + p.max) / 2.0
            } else {
                (now + p.min) / 2.0
            }
        } else {
            // An unbounded parameter (a Python world's attribute): a shift a world could meet,
            // a quarter up (or 1 from zero), not half the largest float.
            let up = if now == 0.0 {
                1.0
            } else {
                now + now.abs() / 4.0
            };
            if up <= p.max {
                up
            } else {
                now - now.abs() / 4.0
            }
        };
        if p.integer {
            to = to.round();
        }
        env.set(p.name, to).map_err(|e| CheckFailure {
            rule: Rule::ShiftEndsNoEpisode,
            step: 1,
            message: format!(
                "setting `{}` to {to} (in its range {}..={}) failed: {e}",
                p.name, p.min, p.max
            ),
        })?;
        let a = self.actions.get(1).copied().unwrap_or(self.actions[0]);
        let shifted = match env.step(&a) {
            Ok(t) => t,
            Err(e) => {
                return Err(CheckFailure {
                    rule: Rule::ShiftEndsNoEpisode,
                    step: 1,
                    message: format!(
                        "after `{}` was set to {to} mid-episode, the next step failed: {e}; a shift must not end the episode",
                        p.name
                    ),
                });
            }
        };
        // The same two steps without the shift: an episode the shift ended would have gone on.
        let mut twin = (self.make)()?;
        twin.reset(self.options.seed);
        let unshifted = twin.step(&self.actions[0]).and_then(|_| twin.step(&a));
        if shifted.done() && unshifted.is_ok_and(|t| !t.done()) {
            return Err(CheckFailure {
                rule: Rule::ShiftEndsNoEpisode,
                step: 1,
                message: format!(
                    "after `{}` was set to {to} mid-episode, the next step ended the episode \
                     (terminated {}, truncated {}) where the same step without the shift did not; \
                     a shift must not end the episode",
                    p.name, shifted.terminated, shifted.truncated
                ),
            });
        }
        self.report.passed.push(Rule::ShiftEndsNoEpisode);
        Ok(())
    }

    fn restore(&mut self) -> Result<(), CheckFailure> {
        let mut env = (self.make)()?;
        let k = self.to_midway(&mut env);
        let saved = match env.save_state() {
            Ok(s) => s,
            Err(e) => {
                self.report.skipped.push((
                    Rule::RestoreGivesSameFuture,
                    format!("the world cannot be saved: {e}"),
                ));
                return Ok(());
            }
        };
        let mut fresh = (self.make)()?;
        fresh.reset(self.options.seed.wrapping_add(1));
        fresh.load_state(saved).map_err(|e| CheckFailure {
            rule: Rule::RestoreGivesSameFuture,
            step: k as u64,
            message: format!("the world refused its own saved state: {e}"),
        })?;
        self.goes_on_as_first(&mut fresh, k, Rule::RestoreGivesSameFuture)
    }

    /// Resets `env` and steps it midway through the first trajectory, where the world has
    /// a state worth keeping; returns the number of actions taken.
    fn to_midway(&self, env: &mut E) -> usize {
        env.reset(self.options.seed);
        let k = (self.first.len() - 1) / 2;
        for a in &self.actions[..k] {
            let _ = env.step(a);
        }
        k
    }

    /// Steps `env`, which stands where the first trajectory stood after `k` actions, with
    /// the rest of the actions, and passes `rule` when it goes on as the first trajectory
    /// did.
    fn goes_on_as_first(&mut self, env: &mut E, k: usize, rule: Rule) -> Result<(), CheckFailure> {
        let rest = steps_from(env, &self.actions[k..], rule, k)?;
        same_future(rule, self.first, &rest, k + 1)?;
        self.report.passed.push(rule);
        Ok(())
    }
}
