//! The shipped MORPHEUS world files parse, build a world, and define valid regimes and schedules.

use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;
use perennial::regime::{Conditions, validate_conditions};
use perennial::reward::Term;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldFile {
    world: WorldSection,
    regimes: Vec<RegimeSection>,
    schedule: Plan,
    reward: Option<RewardSection>,
    harness: HarnessSection,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldSection {
    kind: String,
    description: String,
    params: MorpheusConfig,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegimeSection {
    label: String,
    conditions: Conditions,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RewardSection {
    terms: Vec<Term>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HarnessSection {
    steps: u64,
    window_steps: u64,
}

fn check(path: &str, task: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let file: WorldFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(file.world.kind, "morpheus");
    assert!(!file.world.description.is_empty());
    assert_eq!(file.world.params.task, task);
    let reward = file
        .reward
        .map_or_else(default_reward_spec, |r| RewardSpec { terms: r.terms });
    let mut env =
        Morpheus::new(file.world.params, reward).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(file.regimes.len() >= 4, "{path}: at least four regimes");
    let regimes: Vec<Regime> = file
        .regimes
        .into_iter()
        .map(|r| {
            validate_conditions(&env.parameters(), &r.conditions)
                .unwrap_or_else(|e| panic!("{path}: regime {}: {e}", r.label));
            Regime {
                label: r.label,
                conditions: r.conditions,
            }
        })
        .collect();
    let Plan::Cycle { labels, every } = &file.schedule else {
        panic!("{path}: the shipped worlds cycle");
    };
    assert!(
        *every > 0 && labels.len() > regimes.len(),
        "{path}: labels recur"
    );
    assert!(file.harness.steps > 0 && file.harness.window_steps > 0);
    Scheduler::new(regimes.clone(), file.schedule.clone(), 0)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    env.reset(1);
    for regime in &regimes {
        perennial::regime::apply_conditions(&mut env, &regime.conditions).unwrap();
        for _ in 0..20 {
            let t = env.step(&1).unwrap();
            assert!(t.reward <= env.ceiling().unwrap().step);
        }
    }
}

#[test]
fn warehouse_world_file_is_valid() {
    check("worlds/warehouse.toml", "warehouse");
}

#[test]
fn logistics_world_file_is_valid() {
    check("worlds/logistics.toml", "logistics");
}
