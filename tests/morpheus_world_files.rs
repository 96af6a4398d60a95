//! The shipped enterprise world files load, build a world, and define valid regimes and
//! schedules in which labels recur.

use perennial::morpheus::Morpheus;
use perennial::morpheus::MorpheusConfig;
use perennial::prelude::*;
use perennial::regime::apply_conditions;
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;

fn check(path: &str, task: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let file = WorldFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(!file.description.is_empty());
    let Some(config) = file.params::<MorpheusConfig>().cloned() else {
        panic!("{}: an enterprise world", path.display());
    };
    assert_eq!(config.task, task);
    let reward = file
        .reward_spec()
        .expect("the enterprise world always has a reward spec");
    let mut env =
        Morpheus::new(config, reward).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        file.regimes.len() >= 4,
        "{}: at least four regimes",
        path.display()
    );
    let Plan::Cycle { labels, every } = &file.plan else {
        panic!("{}: the shipped worlds cycle", path.display());
    };
    // Every label recurs within the default run: the cycle comes round at least twice.
    let steps = file.harness.steps.unwrap_or(0);
    assert!(
        *every > 0
            && labels.len() >= file.regimes.len()
            && steps >= 2 * labels.len() as u64 * every,
        "{}: labels recur",
        path.display()
    );
    file.scheduler(0)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    env.reset(1);
    for regime in &file.regimes {
        apply_conditions(&mut env, &regime.conditions).unwrap();
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
