//! The contract checker: the built-in worlds keep every rule, and a world that breaks one
//! rule is caught by that rule, at the step it breaks.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use perennial::cartpole::{CartPole, CartPoleParams};
use perennial::dyn_env::make;
use perennial::env::{
    CheckOptions, Env, EnvError, EnvSpec, Rule, Space, Transition, check, check_step,
};
use perennial::regime::{ParamInfo, RegimeError, Shiftable};
use perennial::registry::Registry;

/// Resets of every [`Walk`] with [`Fault::ResetCountsResets`], in this process.
static RESETS: AtomicU32 = AtomicU32::new(0);

/// The one rule a [`Walk`] breaks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    None,
    ObservationTooLong,
    ResetCountsResets,
    ResetKeepsPosition,
    StepsAfterEnd,
    InvalidActionMoves,
    ShiftEndsEpisode,
    SavesOnlyPosition,
}

/// A walk on a line: twenty steps an episode, `drift` added to every move.
struct Walk {
    spec: EnvSpec,
    fault: Fault,
    pos: f32,
    t: u32,
    drift: f64,
    ended: bool,
    started: bool,
}

impl Walk {
    fn new(fault: Fault) -> Self {
        Walk {
            spec: EnvSpec {
                id: "walk".into(),
                observation_space: Space::box_f32(vec![-100.0; 2], vec![100.0; 2]),
                action_space: Space::Discrete { n: 2 },
                persistent: false,
                components: Vec::new(),
                payouts: Vec::new(),
            },
            fault,
            pos: 0.0,
            t: 0,
            drift: 0.0,
            ended: false,
            started: false,
        }
    }

    fn obs(&self) -> Vec<f32> {
        let mut obs = vec![self.pos, self.t as f32];
        if self.fault == Fault::ObservationTooLong && self.t == 3 {
            obs.push(0.0);
        }
        obs
    }
}

impl Env for Walk {
    type Obs = Vec<f32>;
    type Action = usize;

    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Vec<f32> {
        self.pos = (seed % 3) as f32;
        if self.fault == Fault::ResetKeepsPosition {
            // The previous episode's length survives the reset.
            self.pos += self.t as f32;
        }
        if self.fault == Fault::ResetCountsResets {
            // A count shared by every world: no two resets build the same world.
            self.pos += RESETS.fetch_add(1, Ordering::Relaxed) as f32;
        }
        self.t = 0;
        self.ended = false;
        self.started = true;
        self.obs()
    }

    fn step(&mut self, action: &usize) -> Result<Transition<Vec<f32>>, EnvError> {
        let allowed = check_step(self.started, self.ended, action, &self.spec.action_space);
        if let Err(e) = allowed {
            let after_end = matches!(e, EnvError::EpisodeEnded);
            let invalid = matches!(e, EnvError::InvalidAction { .. });
            if invalid && self.fault == Fault::InvalidActionMoves {
                self.pos += 1.0;
            }
            if !(after_end && self.fault == Fault::StepsAfterEnd) {
                return Err(e);
            }
        }
        self.pos += *action as f32 - 0.5 + self.drift as f32;
        self.t += 1;
        self.ended = self.t >= 20;
        Ok(Transition {
            observation: self.obs(),
            reward: f64::from(self.pos),
            terminated: self.ended,
            truncated: false,
            breakdown: None,
        })
    }

    fn save_state(&self) -> Result<serde_json::Value, EnvError> {
        let t = if self.fault == Fault::SavesOnlyPosition {
            0
        } else {
            self.t
        };
        Ok(serde_json::json!({ "pos": self.pos, "t": t }))
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<(), EnvError> {
        let pos = state["pos"]
            .as_f64()
            .ok_or(EnvError::World("no pos".into()))?;
        let t = state["t"].as_u64().ok_or(EnvError::World("no t".into()))?;
        self.pos = pos as f32;
        self.t = t as u32;
        self.ended = false;
        self.started = true;
        Ok(())
    }
}

impl Shiftable for Walk {
    fn parameters(&self) -> Vec<ParamInfo> {
        vec![ParamInfo {
            name: "drift",
            min: 0.0,
            max: 1.0,
            doc: "added to every move",
            integer: false,
        }]
    }

    fn get(&self, name: &str) -> Option<f64> {
        (name == "drift").then_some(self.drift)
    }

    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        perennial::regime::check_parameter(&self.parameters(), name, value)?;
        self.drift = value;
        if self.fault == Fault::ShiftEndsEpisode {
            self.ended = true;
        }
        Ok(())
    }
}

fn broken(fault: Fault) -> (Rule, u64) {
    let failure = check(
        || Ok::<_, String>(Walk::new(fault)),
        &CheckOptions::default(),
    )
    .expect_err("the broken rule is caught");
    (failure.rule, failure.step)
}

#[test]
fn a_world_that_keeps_the_contract_passes_every_rule() {
    let report = check(
        || Ok::<_, String>(Walk::new(Fault::None)),
        &CheckOptions::default(),
    )
    .unwrap();
    assert_eq!(report.passed, Rule::ALL.to_vec());
    assert!(report.skipped.is_empty());
}

#[test]
fn each_broken_rule_is_named_with_its_step() {
    // The step is checked where the fault fixes it.
    for (fault, rule, step) in [
        (Fault::ObservationTooLong, Rule::SpacesMatchSpec, Some(2)),
        (Fault::ResetCountsResets, Rule::ResetIsDeterministic, None),
        (Fault::ResetKeepsPosition, Rule::ResetDestroys, None),
        (Fault::StepsAfterEnd, Rule::StepAfterEndIsError, Some(20)),
        (
            Fault::InvalidActionMoves,
            Rule::InvalidActionChangesNothing,
            Some(10),
        ),
        (Fault::ShiftEndsEpisode, Rule::ShiftEndsNoEpisode, Some(1)),
        (Fault::SavesOnlyPosition, Rule::RestoreGivesSameFuture, None),
    ] {
        let (got, at) = broken(fault);
        assert_eq!(got, rule, "{fault:?}");
        if let Some(step) = step {
            assert_eq!(at, step, "{fault:?}");
        }
    }
}

#[test]
fn a_world_that_cannot_be_built_breaks_the_first_rule() {
    let failure = check(|| Err::<Walk, _>("no such world"), &CheckOptions::default()).unwrap_err();
    assert_eq!(failure.rule, Rule::Builds);
    assert!(failure.to_string().contains("no such world"), "{failure}");
}

#[test]
fn the_built_in_worlds_keep_the_contract() {
    let report = check(
        || Ok::<_, String>(CartPole::new(CartPoleParams::default())),
        &CheckOptions::default(),
    )
    .unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "worlds/cartpole-drift.toml",
        "worlds/warehouse.toml",
        "worlds/logistics.toml",
    ] {
        let path = root.join(file);
        let options = CheckOptions {
            steps: 200,
            ..CheckOptions::default()
        };
        let report = check(|| make(&path, Registry::shared_builtin()), &options)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            report.passed.contains(&Rule::RestoreGivesSameFuture),
            "{file}: {report:?}"
        );
    }
}
