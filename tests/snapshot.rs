//! Snapshots in the library: a restored run continues exactly where the saved one would
//! have, forks of one snapshot meet the same world, and a tampered snapshot is refused.

mod common;

use common::{Scratch, Still};
use perennial::agents::{BaseStockAgent, RandomAgent};
use perennial::harness::{AgentStart, Harness, HarnessConfig, Snapshot, SnapshotError};
use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use perennial::prelude::*;
use perennial::trace::TraceFormat;

fn warehouse() -> Morpheus {
    Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap()
}

fn cartpole() -> CartPole {
    CartPole::new(CartPoleParams::default())
}

fn config(steps: u64) -> HarnessConfig {
    HarnessConfig {
        steps,
        auto_reset: true,
        record_transitions: true,
        window_steps: 64,
    }
}

/// The trace's lines from the row of step `from` on, with the run id blanked.
fn rows_from(path: &std::path::Path, from: u64, run_id: &str) -> Vec<String> {
    let rows = common::read_rows(&[path]);
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(lines.len(), rows.len());
    rows.iter()
        .zip(lines)
        .filter(|(r, _)| r.step >= from)
        .map(|(_, l)| l.replace(&format!("\"{run_id}\""), "\"RUN\""))
        .collect()
}

/// Runs `steps` steps with a trace, takes a snapshot at `at`, and checks that a restored
/// run writes the same rows after `at`, byte for byte apart from the run id.
fn restored_run_repeats_the_rest<E, A>(env: impl Fn() -> E, agent: impl Fn() -> A, at: u64)
where
    E: Env + Shiftable,
    A: perennial::harness::Agent<E>,
{
    let dir = Scratch::new(&format!("snapshot-{}", env().spec().id));
    let (whole, forked) = (dir.join("whole.jsonl"), dir.join("forked.jsonl"));
    let mut run = Harness::new(env(), agent(), 11)
        .config(config(at + 300))
        .run_id("whole")
        .trace(&whole, TraceFormat::Jsonl);
    run.advance(at).unwrap();
    let snapshot = Snapshot::from_json(&run.snapshot().unwrap().to_json().unwrap()).unwrap();
    assert_eq!(snapshot.step(), at);
    run.run().unwrap();
    let mut restored = Harness::restore(
        env(),
        agent(),
        &snapshot,
        AgentStart::Saved { reseed: None },
    )
    .unwrap()
    .config(config(at + 300))
    .run_id("forked");
    restored
        .open_trace(&forked, TraceFormat::Jsonl, None)
        .unwrap();
    let summary = restored.run().unwrap();
    assert_eq!(summary.steps, at + 300);
    let (a, b) = (
        rows_from(&whole, at, "whole"),
        rows_from(&forked, at, "forked"),
    );
    assert_eq!(a.len(), 300);
    assert_eq!(a, b);
}

#[test]
fn a_restored_cartpole_run_writes_the_same_rows_as_the_saved_one() {
    let space = cartpole().spec().action_space.clone();
    restored_run_repeats_the_rest(cartpole, || RandomAgent::new(space.clone(), 11), 137);
}

#[test]
fn a_restored_warehouse_run_writes_the_same_rows_as_the_saved_one() {
    let space = warehouse().spec().action_space.clone();
    restored_run_repeats_the_rest(warehouse, || RandomAgent::new(space.clone(), 11), 500);
}

/// A snapshot of the warehouse after `at` steps of base-stock.
fn warehouse_snapshot(at: u64) -> Snapshot {
    let cfg = MorpheusConfig::default();
    let agent = BaseStockAgent::new(&cfg, Default::default());
    let mut run = Harness::new(warehouse(), agent, 5).config(config(at + 1));
    run.advance(at).unwrap();
    run.snapshot().unwrap()
}

#[test]
fn random_forks_meet_the_same_demand_and_failures_and_act_differently() {
    let snapshot = warehouse_snapshot(300);
    let space = warehouse().spec().action_space.clone();
    let mut outcomes = Vec::new();
    for k in 0..8u64 {
        let agent = RandomAgent::new(space.clone(), 100 + k);
        let mut fork = Harness::restore(warehouse(), agent, &snapshot, AgentStart::Fresh)
            .unwrap()
            .config(config(500));
        let mut demand = Vec::new();
        while fork.steps_done() < 500 {
            fork.advance(1).unwrap();
            demand.push(fork.env().counters().unwrap().totals.demand_offered);
        }
        let reward = fork.summary().total_reward;
        outcomes.push((demand, fork.env().failure_log(), reward));
    }
    for (demand, failures, reward) in &outcomes[1..] {
        assert_eq!(
            demand, &outcomes[0].0,
            "the demand offered differs between forks"
        );
        assert_eq!(
            failures, &outcomes[0].1,
            "the failures differ between forks"
        );
        assert_ne!(reward.to_bits(), outcomes[0].2.to_bits());
    }
    assert!(
        !outcomes[0].1.is_empty(),
        "no failure in 200 hours: the test shows nothing"
    );
}

#[test]
fn the_content_hash_is_the_hash_of_the_snapshots_json_with_the_hash_empty() {
    let snapshot = warehouse_snapshot(300);
    let json = snapshot.to_json().unwrap();
    let hash = snapshot.content_hash().unwrap();
    let sealed = format!(",\"hash\":\"{hash}\"}}");
    assert!(json.ends_with(&sealed), "the hash is the last field");
    let unhashed = json.replace(&sealed, ",\"hash\":\"\"}");
    assert_eq!(perennial::output::content_hash(unhashed.as_bytes()), hash);
}

#[test]
fn a_snapshot_read_back_writes_the_same_json_as_the_one_taken() {
    // In memory the world and the window are typed; read back they are JSON. Both forms
    // write the same bytes, so the seal of a snapshot never depends on where it was made.
    let snapshot = warehouse_snapshot(300);
    let json = snapshot.to_json().unwrap();
    let read = Snapshot::from_json(&json).unwrap();
    assert_eq!(read.to_json().unwrap(), json);
    let via_serde: Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&via_serde).unwrap(), json);
    let stripped = snapshot.without_agent();
    assert_eq!(stripped.agent_id(), None);
    assert_eq!(
        Snapshot::from_json(&stripped.to_json().unwrap())
            .unwrap()
            .to_json()
            .unwrap(),
        stripped.to_json().unwrap()
    );
}

#[test]
fn a_tampered_snapshot_is_refused_through_serde_too() {
    let json = warehouse_snapshot(50).to_json().unwrap();
    let edited = json.replacen("\"episode_step\":50", "\"episode_step\":7", 1);
    assert_ne!(edited, json);
    let err = serde_json::from_str::<Snapshot>(&edited).unwrap_err();
    assert!(err.to_string().contains("edited or damaged"), "{err}");
}

#[test]
fn a_resealed_snapshot_out_of_range_is_refused_before_it_is_restored() {
    // Someone who recomputes the hash still cannot put the run past its budget.
    let snapshot = warehouse_snapshot(50);
    let json = snapshot.to_json().unwrap();
    let hash = snapshot.content_hash().unwrap();
    let budget = format!("\"steps\":{}", snapshot.config().steps);
    assert!(json.contains(&budget));
    let edited = json
        .replacen(&budget, "\"steps\":10", 1)
        .replace(&format!("\"hash\":\"{hash}\""), "\"hash\":\"\"");
    let resealed = perennial::output::content_hash(edited.as_bytes());
    let edited = edited.replace("\"hash\":\"\"", &format!("\"hash\":\"{resealed}\""));
    let err = Snapshot::from_json(&edited).unwrap_err();
    assert!(err.to_string().contains("step budget"), "{err}");
}

#[test]
fn a_tampered_snapshot_is_refused() {
    let snapshot = warehouse_snapshot(50);
    let json = snapshot.to_json().unwrap();
    let edited = json.replacen("\"step\":50", "\"step\":49", 1);
    assert_ne!(edited, json);
    let err = Snapshot::from_json(&edited).unwrap_err();
    assert!(matches!(err, SnapshotError::Tampered { .. }), "{err}");
    assert!(err.to_string().contains("edited or damaged"), "{err}");
    let truncated = &json[..json.len() / 2];
    assert!(matches!(
        Snapshot::from_json(truncated).unwrap_err(),
        SnapshotError::Format(_)
    ));
}

#[test]
fn a_snapshot_from_another_world_is_refused_before_anything_runs() {
    let snapshot = warehouse_snapshot(20);
    let space = cartpole().spec().action_space.clone();
    let err = Harness::restore(
        cartpole(),
        RandomAgent::new(space, 0),
        &snapshot,
        AgentStart::Fresh,
    )
    .err()
    .expect("a warehouse snapshot does not fit CartPole");
    assert!(
        err.to_string().contains("the saved world does not fit"),
        "{err}"
    );
}

#[test]
fn a_world_without_checkpoints_cannot_be_snapshotted() {
    let env = Still::new(cartpole().spec().clone(), |_| 1.0);
    let space = env.spec().action_space.clone();
    let mut run = Harness::new(env, RandomAgent::new(space, 0), 0).config(config(10));
    run.advance(3).unwrap();
    let err = run.snapshot().unwrap_err();
    assert!(err.to_string().contains("checkpoint"), "{err}");
}

/// Random edits of any field of a written snapshot (a changed value, null, a key removed)
/// are refused when it is read: nothing edited is ever restored.
#[test]
fn random_edits_of_any_snapshot_field_are_refused() {
    use proptest::prelude::*;
    let json = warehouse_snapshot(50).to_json().unwrap();
    let original: serde_json::Value = serde_json::from_str(&json).unwrap();
    let unedited = serde_json::to_string(&original).unwrap();
    assert!(
        Snapshot::from_json(&unedited).is_ok(),
        "the snapshot read back as written"
    );
    let mut paths = Vec::new();
    common::leaves(&original, &mut Vec::new(), &mut paths);
    let config = ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(pick in 0..paths.len(), kind in 0u8..3)| {
        let mut edited = original.clone();
        common::mutate(&mut edited, &paths[pick], kind);
        let text = serde_json::to_string(&edited).unwrap();
        prop_assume!(text != unedited);
        prop_assert!(
            Snapshot::from_json(&text).is_err(),
            "an edit of {:?} was accepted",
            &paths[pick]
        );
    });
}
