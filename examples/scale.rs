//! How the bookkeeping of many runs scales: a sweep's, `perennial eval`'s and
//! `perennial export l2logger`'s time against the number of runs.
//!
//! `cargo run --release --example scale [-- SWEEP_RUNS [TRACES...]]` (defaults 20000, and
//! 1000 and 3000). It drives the `perennial` binary of the same build folder,
//! building it first if needed.
//!
//! - **sweep**: a sweep file of SWEEP_RUNS one-step runs, swept with `--jobs 4` and
//!   `PERENNIAL_BIN=/bin/true`, so each run costs a process start and nothing else: the
//!   line gives the sweep's own work (planning, the manifest and its journal, starting and
//!   reaping the processes, the final check of every run) as runs per second, at SWEEP_RUNS
//!   and at a tenth of it. The runs write no trace, so every one ends recorded as failed.
//! - **eval** and **export**: for each count in TRACES, that many copies of one 200-step
//!   CartPole trace (each with its own run id and its run manifest beside it), scored with
//!   `perennial eval` and exported with `perennial export l2logger`. Linear work shows as
//!   a constant time per trace.
//!
//! Output: one line per measurement with the wall time and the rate.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

mod support;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs `cmd` to its end and returns its wall time in seconds; `ok` lists the exit codes
/// that count as success.
fn timed(cmd: &mut Command, ok: &[i32]) -> Result<f64, String> {
    let started = Instant::now();
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| e.to_string())?;
    let secs = started.elapsed().as_secs_f64();
    match out.status.code() {
        Some(c) if ok.contains(&c) => Ok(secs),
        _ => Err(format!(
            "{cmd:?} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

fn sweep(bin: &Path, dir: &Path, runs: u64) -> Result<f64, String> {
    let file = dir.join(format!("sweep-{runs}.toml"));
    let world = perennial::example::shipped_world_path("cartpole.toml");
    std::fs::write(
        &file,
        format!(
            "[sweep]\nname = \"scale\"\nworlds = [{:?}]\nagents = [\"random\"]\n\
             seeds = {{ from = 0, count = {runs} }}\nsteps = 1\n",
            world.display().to_string()
        ),
    )
    .map_err(|e| e.to_string())?;
    // Every run "fails" (no trace), so the sweep exits 1.
    timed(
        Command::new(bin)
            .arg("sweep")
            .arg(&file)
            .args(["--jobs", "4", "--out"])
            .arg(dir.join(format!("sweep-{runs}")))
            .env("PERENNIAL_BIN", "/bin/true"),
        &[1],
    )
}

/// `n` copies of the trace `base` (run id `base_id`) in a new folder, each with its own run
/// id and its manifest.
fn copies(dir: &Path, base: &Path, base_id: &str, n: usize) -> Result<Vec<PathBuf>, String> {
    let folder = dir.join(format!("traces-{n}"));
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    let rows = std::fs::read_to_string(base).map_err(|e| e.to_string())?;
    let manifest = std::fs::read_to_string(perennial::trace::Manifest::path_for(base))
        .map_err(|e| e.to_string())?;
    let quoted = format!("\"{base_id}\"");
    let base_name = base
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the base trace has no name")?;
    (0..n)
        .map(|i| {
            let id = format!("run{i:05}");
            let trace = folder.join(format!("{id}.jsonl"));
            std::fs::write(&trace, rows.replace(&quoted, &format!("\"{id}\"")))
                .map_err(|e| e.to_string())?;
            std::fs::write(
                perennial::trace::Manifest::path_for(&trace),
                manifest
                    .replace(&quoted, &format!("\"{id}\""))
                    .replace(base_name, &format!("{id}.jsonl")),
            )
            .map_err(|e| e.to_string())?;
            Ok(trace)
        })
        .collect()
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sweep_runs: u64 = args
        .first()
        .map_or(Ok(20_000), |s| s.parse())
        .map_err(|e| format!("SWEEP_RUNS: {e}"))?;
    let counts: Vec<usize> = if args.len() > 1 {
        args[1..]
            .iter()
            .map(|s| s.parse().map_err(|e| format!("TRACES: {e}")))
            .collect::<Result<_, _>>()?
    } else {
        vec![1000, 3000]
    };
    let bin = support::binary()?;
    let dir = std::env::temp_dir().join(format!("perennial-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;

    for runs in [(sweep_runs / 10).max(1), sweep_runs] {
        let secs = sweep(&bin, &dir, runs)?;
        println!(
            "sweep   {runs:>6} runs    {secs:>8.2} s   {:>8.0} runs/s",
            runs as f64 / secs
        );
    }

    let base = dir.join("base.jsonl");
    timed(
        Command::new(&bin)
            .args([
                "run",
                "worlds/cartpole.toml",
                "--steps",
                "200",
                "--seed",
                "1",
            ])
            .args(["--run-id", "base", "--trace"])
            .arg(&base)
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        &[0],
    )?;
    for &n in &counts {
        let traces = copies(&dir, &base, "base", n)?;
        let secs = timed(Command::new(&bin).arg("eval").args(&traces), &[0])?;
        println!(
            "eval    {n:>6} traces  {secs:>8.2} s   {:>8.2} ms/trace",
            secs * 1000.0 / n as f64
        );
        let out = dir.join(format!("l2-{n}"));
        let secs = timed(
            Command::new(&bin)
                .args(["export", "l2logger"])
                .args(&traces)
                .arg("--out")
                .arg(&out),
            &[0],
        )?;
        println!(
            "export  {n:>6} traces  {secs:>8.2} s   {:>8.2} ms/trace",
            secs * 1000.0 / n as f64
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
