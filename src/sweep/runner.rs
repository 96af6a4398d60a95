//! The local runner: every planned run as its own `perennial run` process, `jobs` at a time.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::error::SweepError;
use super::file::SweepFile;
use super::lock::DirLock;
use super::manifest::{
    Journal, RowCounter, RunRecord, RunStatus, SweepManifest, failure_message, write_atomic,
};
use super::plan::{PlannedRun, plan};
use crate::eval::{EvalOptions, comparison_text, evaluate, svg};

/// Exit code of `perennial run` for bad input: retrying cannot help.
const BAD_INPUT: i32 = 2;

/// Attempts per run and invocation: the first one and one retry.
const ATTEMPTS: u32 = 2;

/// How often running children are polled.
const POLL: Duration = Duration::from_millis(100);

/// How long a run told to stop (SIGTERM) gets to finish its step and checkpoint before it
/// is killed, when the sweep itself is ending on an error.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// What a finished sweep invocation leaves behind.
#[derive(Debug)]
pub struct SweepOutcome {
    /// The sweep directory.
    pub dir: PathBuf,
    /// The manifest as written last.
    pub manifest: SweepManifest,
    /// The group comparison (`DIR/eval.txt`: per task and agent, each metric's mean over
    /// seeds with its 95% bootstrap interval), when at least one run is done.
    pub eval_text: Option<String>,
}

impl SweepOutcome {
    /// One line per run and the paths of the results: what `perennial sweep` prints.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let done = self
            .manifest
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Done)
            .count();
        let _ = writeln!(
            out,
            "sweep      {}: {done} of {} runs done",
            self.manifest.sweep,
            self.manifest.runs.len()
        );
        for r in &self.manifest.runs {
            let status = match r.status {
                RunStatus::Pending => "pending",
                RunStatus::Running => "running",
                RunStatus::Done => "done",
                RunStatus::Failed => "FAILED",
            };
            let _ = write!(
                out,
                "  {:<7} {:<44} {:>10} steps",
                status, r.run_id, r.steps_done
            );
            if let Some(e) = r.error.as_ref().filter(|_| r.status == RunStatus::Failed) {
                let _ = write!(out, "  {e}");
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "manifest   {}",
            SweepManifest::path_in(&self.dir).display()
        );
        if self.eval_text.is_some() {
            let _ = writeln!(out, "eval       {}", self.dir.join("eval.txt").display());
            let _ = writeln!(out, "           {}", self.dir.join("eval.json").display());
            let _ = writeln!(out, "plot       {}", self.dir.join("plot.svg").display());
        }
        out
    }

    /// The runs that failed, as `run_id: error`.
    pub fn failures(&self) -> Vec<String> {
        self.manifest
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Failed)
            .map(|r| format!("{}: {}", r.run_id, r.error.as_deref().unwrap_or("failed")))
            .collect()
    }
}

/// Runs a sweep on this machine, `jobs` runs at a time, each as `program run ...` (the
/// `perennial` executable), and scores what finished.
///
/// Holds the directory's lock throughout. Runs the manifest records as done (with their
/// trace on disk) are skipped; the others continue from their checkpoint when there is one.
/// A run that fails is tried once more (unless it failed on bad input, exit code 2), then
/// recorded as failed; the other runs go on.
///
/// # Errors
///
/// The directory is held by another sweep or belongs to another sweep, a file cannot be
/// written or a run cannot be started, or scoring fails. Failed runs are not an error here:
/// see [`SweepOutcome::failures`].
pub fn run_local(
    sweep: &SweepFile,
    dir: &Path,
    jobs: usize,
    program: &Path,
) -> Result<SweepOutcome, SweepError> {
    run_local_until(sweep, dir, jobs, program, &AtomicBool::new(false))
}

/// [`run_local`], stopping when `stop` is raised (the command line raises it on SIGINT or
/// SIGTERM): no run is started after it, every running one is sent SIGTERM (it finishes its
/// step, checkpoints and exits) and waited for, and its record goes back to pending, so the
/// next invocation continues it from its checkpoint.
///
/// # Errors
///
/// As [`run_local`]; [`SweepError::Interrupted`] once the runs stopped and the manifest is
/// written. On any error the runs still going are stopped the same way first.
pub fn run_local_until(
    sweep: &SweepFile,
    dir: &Path,
    jobs: usize,
    program: &Path,
    stop: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    let _lock = DirLock::acquire(dir)?;
    let runs = plan(sweep, dir);
    let mut manifest = SweepManifest::load_or_new(dir, &sweep.name, &sweep.path, &runs)?;
    for sub in ["traces", "checkpoints", "logs"] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).map_err(SweepError::io(&d))?;
    }
    let mut queue: VecDeque<usize> = VecDeque::new();
    for (i, (run, rec)) in runs.iter().zip(&mut manifest.runs).enumerate() {
        // A Parquet trace is a directory.
        if rec.status == RunStatus::Done && run.trace.exists() {
            continue;
        }
        if rec.status == RunStatus::Done {
            // The trace went missing: its checkpoint would continue a file that is gone.
            remove_if_file(&run.checkpoint)?;
        }
        rec.status = RunStatus::Pending;
        queue.push_back(i);
    }
    manifest.write(dir)?;
    let mut journal = Journal::open_empty(dir)?;

    let mut progress = Progress::new(sweep, &manifest);
    let mut active: Vec<Active> = Vec::new();
    let mut tries = vec![0u32; runs.len()];
    let mut stopping = false;
    // Every start and end goes to the journal at once; the manifest is rewritten whole (and
    // the journal emptied) only after ten times as long as its last write took, so
    // rewriting it costs at most a tenth of the sweep's time however many runs it lists.
    let mut every = POLL;
    let mut written = Instant::now();
    let mut dirty = false;
    let mut idle = Duration::from_millis(1);
    while !queue.is_empty() || !active.is_empty() {
        if stop.load(Ordering::Relaxed) && !stopping {
            stopping = true;
            queue.clear();
            for a in &active {
                a.terminate();
            }
        }
        let mut changed = false;
        while !stopping && active.len() < jobs.max(1) {
            let Some(i) = queue.pop_front() else { break };
            let rec = &mut manifest.runs[i];
            rec.status = RunStatus::Running;
            rec.attempts = rec.attempts.saturating_add(1);
            tries[i] += 1;
            let child = start(&runs[i], rec.attempts, program)?;
            journal.record(rec)?;
            active.push(Active {
                run: i,
                child,
                rows: RowCounter::default(),
            });
            changed = true;
        }
        let mut k = 0;
        while k < active.len() {
            let status = active[k]
                .child
                .try_wait()
                .map_err(SweepError::io(program))?;
            let Some(status) = status else {
                k += 1;
                continue;
            };
            changed = true;
            let mut a = active.swap_remove(k);
            let i = a.run;
            let rows = a.rows.rows(&runs[i].trace, sweep.format);
            if stopping && status.code() != Some(0) {
                // Stopped by the sweep, not failed: the next invocation continues it.
                let rec = &mut manifest.runs[i];
                (rec.status, rec.exit_code, rec.steps_done) =
                    (RunStatus::Pending, status.code(), rows);
                journal.record(rec)?;
                continue;
            }
            let retry = record_attempt(&mut manifest.runs[i], &runs[i], status.code(), rows)
                && tries[i] < ATTEMPTS;
            journal.record(&manifest.runs[i])?;
            if retry {
                queue.push_front(i);
            } else {
                progress.finished(&manifest.runs[i]);
            }
        }
        dirty |= changed;
        if dirty && written.elapsed() >= every {
            let began = Instant::now();
            manifest.write(dir)?;
            journal.clear()?;
            every = (began.elapsed() * 10).max(POLL);
            (written, dirty) = (Instant::now(), false);
        }
        progress.show(&runs, &mut active, sweep);
        // Tiny runs end within milliseconds: poll again at once after a change, and back
        // off to `POLL` while nothing happens.
        if changed {
            idle = Duration::from_millis(1);
        } else {
            std::thread::sleep(idle);
            idle = (idle * 2).min(POLL);
        }
    }
    progress.close();
    drop(journal);
    if stopping {
        manifest.write(dir)?;
        Journal::remove(dir)?;
        return Err(SweepError::Interrupted {
            dir: dir.to_path_buf(),
        });
    }
    finish(dir, &runs, manifest, sweep.steps)
}

/// Updates a run's record after `perennial run` exited with `code` (`None`: a signal) and
/// left `rows` trace rows. Returns whether another attempt could help (it failed, and not
/// on bad input).
pub(crate) fn record_attempt(
    rec: &mut RunRecord,
    run: &PlannedRun,
    code: Option<i32>,
    rows: u64,
) -> bool {
    rec.exit_code = code;
    rec.steps_done = rows;
    if code == Some(0) {
        rec.status = RunStatus::Done;
        rec.error = None;
        return false;
    }
    rec.status = RunStatus::Failed;
    rec.error = Some(failure_message(&run.log, code));
    code != Some(BAD_INPUT)
}

/// Scores every finished trace into `DIR/eval.json`, `eval.txt` and `plot.svg`, and
/// writes the final manifest.
pub(crate) fn finish(
    dir: &Path,
    runs: &[PlannedRun],
    mut manifest: SweepManifest,
    steps: u64,
) -> Result<SweepOutcome, SweepError> {
    // A run is scored only when its trace proves it: marked done by this sweep or by a
    // `--collect` results file, it may still have been cut short or replaced since.
    for (run, rec) in runs.iter().zip(&mut manifest.runs) {
        if rec.status != RunStatus::Done {
            continue;
        }
        if let Err(e) = check_done(run, steps) {
            rec.status = RunStatus::Failed;
            rec.error = Some(e);
        }
    }
    manifest.write(dir)?;
    Journal::remove(dir)?;
    let traces: Vec<PathBuf> = runs
        .iter()
        .zip(&manifest.runs)
        .filter(|(_, r)| r.status == RunStatus::Done)
        .map(|(run, _)| run.trace.clone())
        .collect();
    let eval_text = if traces.is_empty() {
        None
    } else {
        let report = evaluate(&traces, &EvalOptions::default())?;
        let mut json = serde_json::to_string_pretty(&report)
            .expect("a report is made of string-keyed maps, strings and numbers");
        json.push('\n');
        // The per-run tables are in eval.json; the text is the comparison a reader wants.
        let mut text = comparison_text(&report.groups);
        for w in &report.warnings {
            let _ = writeln!(text, "warning: {w}");
        }
        write_atomic(&dir.join("eval.json"), json.as_bytes())?;
        write_atomic(&dir.join("eval.txt"), text.as_bytes())?;
        write_atomic(&dir.join("plot.svg"), svg(&report).as_bytes())?;
        Some(text)
    };
    Ok(SweepOutcome {
        dir: dir.to_path_buf(),
        manifest,
        eval_text,
    })
}

/// Checks that the trace of a run recorded as done holds that run: every row of its run
/// id and seed, steps from 0 in order, and all `steps` of them unless its last row ends an
/// episode (a run without auto-reset stops there).
fn check_done(run: &PlannedRun, steps: u64) -> Result<(), String> {
    let trace = run.trace.display();
    let mut reader = crate::trace::TraceReader::open(&[&run.trace]);
    let mut rows = 0u64;
    let mut ended = false;
    while let Some(row) = reader.next_ref() {
        let at = row.map_err(|e| format!("its trace cannot be read: {e}"))?;
        let r = &at.row;
        if r.run_id != run.run_id.as_str() || r.seed != run.seed {
            return Err(format!(
                "{trace}:{}: a row of run `{}` seed {} in the trace of run `{}` seed {}; the trace is not this run's: remove it (and its checkpoint) and run the sweep again",
                at.line, r.run_id, r.seed, run.run_id, run.seed
            ));
        }
        if r.step != rows {
            return Err(format!(
                "{trace}:{}: step {} where step {rows} was due; the trace is not whole: remove it (and its checkpoint) and run the sweep again",
                at.line, r.step
            ));
        }
        rows += 1;
        ended = r.terminated || r.truncated;
    }
    if rows == steps || (ended && rows < steps) {
        return Ok(());
    }
    Err(format!(
        "{trace}: holds {rows} of the run's {steps} steps although the run is recorded as done; run the sweep again to finish it"
    ))
}

fn remove_if_file(path: &Path) -> Result<(), SweepError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SweepError::io(path)(e)),
        _ => Ok(()),
    }
}

struct Active {
    run: usize,
    child: Child,
    rows: RowCounter,
}

impl Active {
    /// Asks the run to stop after its step under way, with a checkpoint.
    fn terminate(&self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) on the pid of a child this process started and has not
            // reaped yet, so the pid cannot have been reused.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }
}

impl Drop for Active {
    /// A sweep ending on an error leaves no run going unsupervised: each one still running
    /// is stopped as at SIGTERM, and killed if it has not ended within [`STOP_GRACE`].
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        self.terminate();
        let asked = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) {
            if asked.elapsed() > STOP_GRACE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts one attempt of a run, its output appended to the run's log after a header line.
fn start(run: &PlannedRun, attempt: u32, program: &Path) -> Result<Child, SweepError> {
    let argv = run.next_argv();
    let leading = super::leading_args(program);
    if !run.checkpoint.is_file() && !run.trace.is_dir() {
        // A fresh start writes the trace from byte 0; a partial one from a run killed before
        // its first checkpoint is of no use. A Parquet trace is a folder: the fresh run
        // itself empties it of its parts (and refuses a folder holding anything else).
        remove_if_file(&run.trace)?;
    }
    let mut log = crate::output::open_append(&run.log)?;
    writeln!(
        log,
        "{} {attempt}: {} {}{}",
        super::ATTEMPT_HEADER,
        program.display(),
        leading
            .iter()
            .map(|a| format!("{} ", a.to_string_lossy()))
            .collect::<String>(),
        argv.join(" ")
    )
    .map_err(SweepError::io(&run.log))?;
    let err = log.try_clone().map_err(SweepError::io(&run.log))?;
    Command::new(program)
        .args(leading)
        .args(argv)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(SweepError::io(program))
}

/// The sweep's one progress display on stderr: runs done of total, overall steps/s, time
/// left. Redrawn in place on a terminal; otherwise a plain line per finished run and every
/// ten seconds.
struct Progress {
    tty: bool,
    runs_total: usize,
    runs_done: usize,
    steps_total: u64,
    /// Steps of finished runs (a run that ended early counts its whole budget).
    steps_finished: u64,
    steps_at_start: u64,
    started: Instant,
    last_line: Instant,
    budget: u64,
}

impl Progress {
    fn new(sweep: &SweepFile, manifest: &SweepManifest) -> Self {
        let runs_done = manifest
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Done)
            .count();
        let steps_finished = runs_done as u64 * sweep.steps;
        let now = Instant::now();
        let p = Progress {
            tty: std::io::stderr().is_terminal(),
            runs_total: manifest.runs.len(),
            runs_done,
            steps_total: manifest.runs.len() as u64 * sweep.steps,
            steps_finished,
            steps_at_start: steps_finished,
            started: now,
            last_line: now,
            budget: sweep.steps,
        };
        if !p.tty {
            eprintln!(
                "sweep {}: {} runs, {} already done",
                sweep.name, p.runs_total, p.runs_done
            );
        }
        p
    }

    fn finished(&mut self, rec: &RunRecord) {
        if rec.status == RunStatus::Done {
            self.runs_done += 1;
        }
        self.steps_finished += self.budget;
        if !self.tty {
            let what = match rec.status {
                RunStatus::Done => "done",
                _ => "FAILED",
            };
            eprintln!("{}  {what} {}", self.line(self.steps_finished), rec.run_id);
            self.last_line = Instant::now();
        }
    }

    fn line(&self, steps_now: u64) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        let rate = steps_now.saturating_sub(self.steps_at_start) as f64 / secs.max(1e-9);
        let eta = if rate > 0.0 {
            format_secs(self.steps_total.saturating_sub(steps_now) as f64 / rate)
        } else {
            "?".into()
        };
        format!(
            "runs {}/{}  steps {}/{}  {:.0} steps/s  eta {eta}",
            self.runs_done, self.runs_total, steps_now, self.steps_total, rate
        )
    }

    fn show(&mut self, runs: &[PlannedRun], active: &mut [Active], sweep: &SweepFile) {
        let due = if self.tty {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(10)
        };
        if self.last_line.elapsed() < due {
            return;
        }
        let running: u64 = active
            .iter_mut()
            .map(|a| {
                a.rows
                    .rows(&runs[a.run].trace, sweep.format)
                    .min(self.budget)
            })
            .sum();
        let line = self.line(self.steps_finished + running);
        if self.tty {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
        let _ = std::io::stderr().flush();
        self.last_line = Instant::now();
    }

    fn close(&self) {
        if self.tty {
            eprint!("\r\x1b[2K");
        }
        eprintln!("{}", self.line(self.steps_finished));
    }
}

fn format_secs(s: f64) -> String {
    let s = s.round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
