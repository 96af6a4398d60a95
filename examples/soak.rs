//! Soak test of checkpoints: kills a warehouse run at 20 random moments, resumes it each
//! time, and checks that the final trace is byte-identical to an uninterrupted run's; then
//! does the same with SIGTERM, which the run must answer by finishing its step, writing a
//! checkpoint and exiting with 143. Last, a Parquet sweep (2 agents × 2 seeds of
//! STEPS / 10 steps) is stopped at KILLS / 2 random moments (at least 1), alternately by
//! SIGKILL to its whole process group and by SIGTERM to the sweep alone, and rerun each
//! time: its final traces must hold the rows of an uninterrupted sweep's, and no process of
//! the sweep may be left after any stop.
//!
//! `cargo run --release --example soak [-- STEPS [KILLS]]` (defaults 200000 and 20). Each
//! signal aims at one of KILLS points drawn uniformly over the run's steps (the sweep's
//! time), sorted. It drives the `perennial` binary of the same build folder, building it
//! first if needed. Output: one line per campaign with the kills made, the resumes and
//! whether the traces match; the exit code is non-zero when one does not.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod support;

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
    let bin = support::binary()?;
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
    all_ok &= sweep_campaign(&bin, &dir, steps / 10, (kills / 2).max(1))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(all_ok)
}

/// The rows of every trace under `out/traces`, by file name: Parquet part boundaries
/// follow the wall clock, so the rows are compared, not the files.
fn sweep_rows(out: &Path) -> Result<Vec<(String, Vec<perennial::trace::TraceRow>)>, String> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(out.join("traces"))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .filter(|p| !p.to_string_lossy().contains(".events."))
        .collect();
    traces.sort();
    traces
        .iter()
        .map(|p| {
            let rows = perennial::trace::TraceReader::open(&[p])
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Ok((
                p.file_name().unwrap_or_default().to_string_lossy().into(),
                rows,
            ))
        })
        .collect()
}

/// Pids of live processes in process group `pgid` (from `/proc/*/stat`).
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid pgrp ...`; comm may hold spaces, so split after `)`.
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
            })
        })
        .collect()
}

/// The Parquet sweep campaign (see the crate doc); true when the traces match and no
/// process was left.
fn sweep_campaign(bin: &Path, dir: &Path, steps: u64, kills: u32) -> Result<bool, String> {
    let file = dir.join("soak-sweep.toml");
    let world = perennial::example::shipped_world_path("warehouse.toml");
    std::fs::write(
        &file,
        format!(
            "[sweep]\nname = \"soak\"\nworlds = [{:?}]\nagents = [\"random\", \"adaptive-base-stock\"]\n\
             seeds = {{ from = 0, count = 2 }}\nsteps = {steps}\ncheckpoint_every = {}\nformat = \"parquet\"\n",
            world.display().to_string(),
            (steps / 8).max(1)
        ),
    )
    .map_err(|e| e.to_string())?;
    let sweep = |out: &Path| {
        let mut cmd = Command::new(bin);
        cmd.arg("sweep")
            .arg(&file)
            .args(["--jobs", "2", "--out"])
            .arg(out)
            .env_remove("PERENNIAL_BIN")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        cmd
    };
    let whole = dir.join("sweep-whole");
    let started = Instant::now();
    let status = sweep(&whole).status().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("the uninterrupted sweep failed".into());
    }
    let took = started.elapsed();
    let expected = sweep_rows(&whole)?;
    let cut = dir.join("sweep-cut");
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut points: Vec<f64> = (0..kills).map(|_| rng.random_range(0.0..1.0)).collect();
    points.sort_by(f64::total_cmp);
    let (mut stops, mut reruns, mut left) = (0u32, 0u32, 0usize);
    let mut last = 0.0;
    loop {
        let mut child = sweep(&cut).spawn().map_err(|e| e.to_string())?;
        let pgid = child.id() as i32;
        if let Some(&at) = points.get(stops as usize) {
            // The points are fractions of the uninterrupted sweep's time; each rerun
            // resumes from where the last one got, so it aims at the difference.
            std::thread::sleep(took.mul_f64((at - last).max(0.0)) + Duration::from_millis(20));
            last = at;
            let (target, signal) = if stops % 2 == 0 {
                (-pgid, libc::SIGKILL)
            } else {
                (pgid, libc::SIGTERM)
            };
            // SAFETY: signals the sweep this campaign spawned (or its process group).
            unsafe {
                libc::kill(target, signal);
            }
            stops += 1;
        }
        let status = child.wait().map_err(|e| e.to_string())?;
        // A run stopped by SIGTERM to the sweep ends within its step; allow it a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !group_members(pgid).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        left += group_members(pgid).len();
        if status.success() {
            break;
        }
        reruns += 1;
        if reruns > kills + 3 {
            return Err(format!(
                "the sweep did not finish after {reruns} reruns ({status})"
            ));
        }
    }
    let got = sweep_rows(&cut)?;
    let same = got == expected && !expected.is_empty();
    println!(
        "Parquet sweep: {stops} stops, {reruns} reruns, {left} processes left; final traces {} ({} traces, {} rows)",
        if same { "equal" } else { "DIFFER" },
        got.len(),
        got.iter().map(|(_, r)| r.len()).sum::<usize>()
    );
    Ok(same && left == 0)
}
