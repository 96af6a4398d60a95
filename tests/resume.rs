//! A run killed with SIGKILL after a checkpoint and resumed writes the same trace, byte for
//! byte, as a run that was never interrupted.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn perennial() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perennial"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null());
    cmd
}

/// A folder of the test's own under the target's temp dir, removed when the test passes
/// (a failing test leaves it to look at).
struct Folder(PathBuf);

impl Folder {
    fn new(test: &str) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("resume-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Folder(dir)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `world` uninterrupted and again killed after its first checkpoint then resumed,
/// and compares the two traces.
fn killed_and_resumed_matches_uninterrupted(world: &str, agent: &str, steps: u64, every: u64) {
    let world_name = world
        .trim_start_matches("worlds/")
        .trim_end_matches(".toml");
    let name = format!("{world_name}-{agent}");
    let folder = Folder::new(&name);
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
        let mut child = perennial()
            .args(common)
            .args([
                "--trace",
                path(&cut),
                "--checkpoint-every",
                &every.to_string(),
                "--checkpoint",
                path(&ckpt),
            ])
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !ckpt.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "no checkpoint appeared"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
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

    let out = perennial()
        .args(["run", "--resume", path(&ckpt)])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let folder = Folder::new("bogus");
    let bogus = folder.join("bogus.ckpt.json");
    std::fs::write(&bogus, "{\"hello\": 1}").unwrap();
    let out = perennial()
        .args(["run", "--resume", path(&bogus)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(path(&bogus)) && err.contains("not a perennial checkpoint"),
        "{err}"
    );
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
