//! A run killed with SIGKILL after a checkpoint and resumed writes the same trace, byte for
//! byte, as a run that was never interrupted.

use std::process::Stdio;

mod common;
use common::{Scratch, fails_with, path, perennial, run, spawn_to_checkpoint};

/// Runs `world` uninterrupted and again killed after its first checkpoint then resumed,
/// and compares the two traces.
fn killed_and_resumed_matches_uninterrupted(world: &str, agent: &str, steps: u64, every: u64) {
    let world_name = world
        .trim_start_matches("worlds/")
        .trim_end_matches(".toml");
    let name = format!("{world_name}-{agent}");
    let folder = Scratch::new(&format!("resume-{name}"));
    let (whole, cut, ckpt) = (
        folder.join(&format!("{name}-whole.jsonl")),
        folder.join(&format!("{name}-cut.jsonl")),
        folder.join(&format!("{name}.ckpt.json")),
    );
    let steps_arg = steps.to_string();
    let common = [
        "run", world, "--agent", agent, "--steps", &steps_arg, "--seed", "5",
    ];
    let status = perennial()
        .stdout(Stdio::null())
        .args(common)
        .args(["--trace", path(&whole)])
        .status()
        .unwrap();
    assert!(status.success());

    // The kill must land after the first checkpoint and before the run ends; on a machine
    // quick enough to finish first, try again (a scheduling accident, not a fault).
    let mut killed_mid_way = false;
    for _attempt in 0..3 {
        let _ = std::fs::remove_file(&cut);
        let _ = std::fs::remove_file(&ckpt);
        let mut child = spawn_to_checkpoint(&common, &cut, every, &ckpt);
        let finished_first = child.try_wait().unwrap().is_some();
        child.kill().unwrap();
        child.wait().unwrap();
        let whole_len = std::fs::metadata(&whole).unwrap().len();
        let cut_len = std::fs::metadata(&cut).unwrap().len();
        if !finished_first && cut_len < whole_len {
            killed_mid_way = true;
            break;
        }
    }
    assert!(
        killed_mid_way,
        "the run ended before every kill, three times"
    );

    run(&["run", "--resume", path(&ckpt)]);
    assert!(
        std::fs::read(&whole).unwrap() == std::fs::read(&cut).unwrap(),
        "the resumed trace differs"
    );
}

#[test]
fn cartpole_killed_after_a_checkpoint_resumes_to_the_same_trace() {
    killed_and_resumed_matches_uninterrupted(
        "worlds/cartpole-drift.toml",
        "actor-critic",
        400_000,
        20_000,
    );
}

#[test]
fn resume_refuses_a_file_that_is_not_a_checkpoint() {
    let folder = Scratch::new("resume-bogus");
    let bogus = folder.join("bogus.ckpt.json");
    std::fs::write(&bogus, "{\"hello\": 1}").unwrap();
    let err = fails_with(
        &["run", "--resume", path(&bogus)],
        2,
        "not a perennial checkpoint",
    );
    assert!(err.contains(path(&bogus)), "{err}");
}

#[test]
fn warehouse_killed_after_a_checkpoint_resumes_to_the_same_trace() {
    killed_and_resumed_matches_uninterrupted(
        "worlds/warehouse.toml",
        "adaptive-base-stock",
        150_000,
        10_000,
    );
}

#[test]
fn warehouse_oracle_killed_mid_regime_resumes_to_the_same_trace() {
    // Checkpoints every 7,000 steps land mid-interval (the cycle shifts every 2,000), so
    // the resumed oracle must pick up the regime it was playing without starting over.
    killed_and_resumed_matches_uninterrupted("worlds/warehouse.toml", "oracle", 150_000, 7_000);
}

#[test]
fn warehouse_async_oracle_killed_mid_regime_resumes_to_the_same_trace() {
    // The async file's supplier_crisis settings pause each SKU after a reorder, so the
    // oracle's policy carries hours since each reorder through the checkpoint.
    killed_and_resumed_matches_uninterrupted(
        "worlds/warehouse-async.toml",
        "oracle",
        150_000,
        7_000,
    );
}
