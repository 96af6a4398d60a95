//! `--record-transitions` in a world with roles: the trace's `obs` is `{role: [floats]}`
//! (each role's view, as its agent saw it) and its `action` `{role: index}`, in JSON Lines,
//! CSV and Parquet alike, and they read back.

mod common;

use std::path::{Path, PathBuf};

use common::{Scratch, path};

use perennial::morpheus::roles::EnterpriseEnv;
use perennial::prelude::*;
use perennial::trace::{RecordedObs, TraceReader, TraceRow};
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;

/// 300 hours of the shipped roles world with transitions recorded, traced as `format`;
/// returns the trace's folder (removed when dropped) and path.
fn run(format: &str) -> (Scratch, PathBuf) {
    let dir = Scratch::new(&format!("roles-transitions-{format}"));
    let trace = dir.join(&format!("t.{format}"));
    common::run(&[
        "run",
        "worlds/enterprise.toml",
        "--agent",
        "warehouse=base-stock,logistics=random",
        "--steps",
        "300",
        "--record-transitions",
        "--format",
        format,
        "--trace",
        path(&trace),
    ]);
    (dir, trace)
}

fn rows(trace: &Path) -> Vec<TraceRow> {
    TraceReader::open(&[trace])
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The shipped world, built as the run builds it.
fn world() -> Box<dyn perennial::dyn_env::DynEnv> {
    let w = WorldFile::load(Path::new("worlds/enterprise.toml")).unwrap();
    perennial::registry::build(&w, perennial::registry::Registry::shared_builtin()).unwrap()
}

#[test]
fn each_role_s_view_and_index_are_recorded_and_read_back_alike_in_every_format() {
    let mut env = world();
    let roles = env
        .as_ref()
        .world_any()
        .downcast_ref::<EnterpriseEnv>()
        .unwrap();
    let sizes: Vec<(usize, usize)> = roles
        .layouts()
        .iter()
        .map(|l| (l.seen.len(), l.actions))
        .collect();
    let (_dir, jsonl) = run("jsonl");
    let read = rows(&jsonl);
    assert_eq!(read.len(), 300);
    for row in &read {
        let Some(RecordedObs::Roles(views)) = &row.obs else {
            panic!("step {}: obs is not by role", row.step);
        };
        let action = row.action.as_ref().unwrap();
        for (name, (seen, actions)) in ["warehouse", "logistics"].iter().zip(&sizes) {
            assert_eq!(views[*name].len(), *seen, "step {}", row.step);
            assert!(action[*name].as_u64().unwrap() < *actions as u64);
        }
    }
    // The first row's views are the projections of the world's first observation.
    let first = env.reset(perennial::harness::episode_seed(0, 0));
    let roles = env
        .as_ref()
        .world_any()
        .downcast_ref::<EnterpriseEnv>()
        .unwrap();
    let Some(RecordedObs::Roles(views)) = &read[0].obs else {
        unreachable!()
    };
    for (r, name) in ["warehouse", "logistics"].iter().enumerate() {
        let want: Vec<f64> = roles
            .observe(r, &first)
            .iter()
            .map(|v| v.to_string().parse().unwrap())
            .collect();
        assert_eq!(views[*name], want, "{name}");
    }
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let line = text.lines().next().unwrap();
    assert!(line.contains(r#""obs":{"warehouse":["#), "{line}");
    assert!(line.contains(r#""action":{"warehouse":"#), "{line}");
    for format in ["csv", "parquet"] {
        let (_other_dir, trace) = run(format);
        let other = rows(&trace);
        for (a, b) in read.iter().zip(&other) {
            assert_eq!(
                (&a.obs, &a.action),
                (&b.obs, &b.action),
                "{format} step {}",
                a.step
            );
        }
        common::run(&["eval", "--json", path(&trace)]);
    }
}
