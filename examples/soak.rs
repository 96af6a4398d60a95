//! Soak test of checkpoints: kills a warehouse run at 20 random moments, resumes it each
//! time, and checks that the final trace is byte-identical to an uninterrupted run's; then
//! does the same with SIGTERM, which the run must answer by finishing its step, writing a
//! checkpoint and exiting with 143.
//!
//! `cargo run --release --example soak [-- STEPS [KILLS]]` (defaults 200000 and 20). Each
//! signal aims at one of 20 points drawn uniformly over the run's steps, sorted. It
//! drives the `perennial` binary of the same build folder, building it first if needed.
//! Output: one line per campaign with the kills made, the resumes and whether the traces
//! match; the exit code is non-zero when one does not.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The `perennial` binary next to this example's build folder, built when absent.
fn binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot locate the build folder")?;
    let bin = dir.join("perennial");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "--bin", "perennial"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .map_err(|e| format!("cannot build perennial: {e}"))?;
        if !status.success() {
            return Err("building perennial failed".into());
        }
    }
    Ok(bin)
}

/// The step a checkpoint was saved at, or 0 when there is none (yet).
fn saved_step(ckpt: &Path) -> u64 {
    std::fs::read(ckpt)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["step"].as_u64())
        .unwrap_or(0)
}

fn run() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let steps: u64 = args
        .first()
        .map_or(Ok(200_000), |s| s.parse())
        .map_err(|e| format!("STEPS: {e}"))?;
    let kills: u32 = args
        .get(1)
        .map_or(Ok(20), |s| s.parse())
        .map_err(|e| format!("KILLS: {e}"))?;
    let bin = binary()?;
    let dir = std::env::temp_dir().join(format!("perennial-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let world = perennial::example::shipped_world_path("warehouse.toml");
    let steps_arg = steps.to_string();
    let common = |trace: &Path| -> Vec<String> {
        vec![
            "run".into(),
            world.display().to_string(),
            "--agent".into(),
            "adaptive-base-stock".into(),
            "--steps".into(),
            steps_arg.clone(),
            "--seed".into(),
            "3".into(),
            "--trace".into(),
            trace.display().to_string(),
        ]
    };
    let reference = dir.join("reference.jsonl");
    let started = Instant::now();
    let status = Command::new(&bin)
        .args(common(&reference))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("the uninterrupted run failed".into());
    }
    let whole = started.elapsed();
    let expected = std::fs::read(&reference).map_err(|e| e.to_string())?;
    println!(
        "uninterrupted: {steps} steps in {:.2} s, {} bytes",
        whole.as_secs_f64(),
        expected.len()
    );
    let mut all_ok = true;
    for (name, signal) in [("SIGKILL", libc::SIGKILL), ("SIGTERM", libc::SIGTERM)] {
        let trace = dir.join(format!("{name}.jsonl"));
        let ckpt = dir.join(format!("{name}.ckpt.json"));
        let _ = std::fs::remove_file(&trace);
        let _ = std::fs::remove_file(&ckpt);
        let mut rng = ChaCha8Rng::seed_from_u64(u64::from(signal as u32));
        let (mut signalled, mut resumes, mut clean_exits) = (0u32, 0u32, 0u32);
        let mut resumed_from = Vec::new();
        let mut points: Vec<u64> = (0..kills).map(|_| rng.random_range(0..steps)).collect();
        points.sort_unstable();
        loop {
            let mut cmd = Command::new(&bin);
            if ckpt.exists() {
                cmd.arg("run").arg("--resume").arg(&ckpt);
                resumes += 1;
            } else {
                cmd.args(common(&trace))
                    .args(["--checkpoint-every", "5000", "--checkpoint"])
                    .arg(&ckpt);
            }
            let mut child = cmd
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| e.to_string())?;
            if signalled < kills {
                // Aim at the next of the campaign's random points, spread uniformly over
                // the run: sleep for the time the steps from the checkpoint to that point
                // should take, plus a random part of process start-up.
                let done = saved_step(&ckpt).min(steps);
                let target = points[signalled as usize].max(done);
                let per_step = whole.as_secs_f64() * 1000.0 / steps.max(1) as f64;
                let ms = 5 + ((target - done) as f64 * per_step) as u64;
                std::thread::sleep(Duration::from_millis(ms));
                // SAFETY: signalling our own child by its pid.
                unsafe {
                    libc::kill(child.id() as libc::pid_t, signal);
                }
            }
            let status = child.wait().map_err(|e| e.to_string())?;
            if status.code() != Some(0) {
                resumed_from.push(saved_step(&ckpt));
            }
            match status.code() {
                Some(0) => break,
                Some(143) if signal == libc::SIGTERM => {
                    signalled += 1;
                    clean_exits += 1;
                }
                None => signalled += 1,
                other => return Err(format!("{name}: the run exited with {other:?}")),
            }
        }
        let got = std::fs::read(&trace).map_err(|e| e.to_string())?;
        let same = got == expected;
        all_ok &= same;
        println!(
            "{name}: {signalled} signals, {resumes} resumes, {clean_exits} clean exits (143); final trace {} ({} bytes)",
            if same { "byte-identical" } else { "DIFFERS" },
            got.len()
        );
        println!("  steps resumed from: {resumed_from:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(all_ok)
}
