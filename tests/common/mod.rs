//! What the integration tests share: the `perennial` binary, scratch files and folders
//! that remove themselves, and path text. Each test crate uses part of it.
#![allow(dead_code)]

use perennial::harness::HarnessConfig;
use perennial::prelude::*;
use perennial::trace::{TraceReader, TraceRow};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

pub mod traced;

/// The `perennial` binary, run from the repository root (so `worlds/...` resolves) and
/// without `PERENNIAL_BIN`, which only the Python tests set.
pub fn perennial() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perennial"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("PERENNIAL_BIN");
    cmd
}

/// Runs `perennial args...` to the end and returns its status, stdout and stderr.
pub fn cli(args: &[&str]) -> Output {
    perennial().args(args).output().expect("the binary runs")
}

/// Runs `perennial args...`, failing the test with its stderr unless it succeeds.
pub fn run(args: &[&str]) -> Output {
    let out = cli(args);
    assert!(
        out.status.success(),
        "perennial {args:?} failed: {}",
        text(&out.stderr)
    );
    out
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A path as a command-line argument.
pub fn path(p: &Path) -> &str {
    p.to_str().expect("temp paths are Unicode")
}

/// `name` in a folder of its own in the temp dir (see [`TempPath`]).
pub fn temp(name: &str) -> TempPath {
    TempPath::new(name)
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A path `name` in a folder of its own in the temp dir, unique per process and call. The
/// folder goes when this is dropped, with the files a run writes beside its trace (events,
/// manifest, lock), unless the test is failing (then it is left to look at), so a passing
/// `cargo test` leaves nothing behind.
pub struct TempPath {
    dir: PathBuf,
    path: PathBuf,
}

impl TempPath {
    /// A fresh, empty folder and the path `name` inside it; the file is not created.
    pub fn new(name: &str) -> Self {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("perennial-t-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempPath {
            path: dir.join(name),
            dir,
        }
    }
}

impl std::ops::Deref for TempPath {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for TempPath {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl From<&TempPath> for PathBuf {
    fn from(p: &TempPath) -> PathBuf {
        p.path.clone()
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// An empty folder for one test, removed with everything in it when dropped, unless the
/// test is failing (then it is left to look at).
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh folder named after `name` and this process, emptied if it existed.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("perennial-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// `name` inside the folder.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `text` to `name` inside the folder and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Waits until `file` exists (a checkpoint a running child writes), failing the test with
/// `what` after two minutes.
pub fn wait_for(file: &Path, what: &str) {
    let started = std::time::Instant::now();
    while !file.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "{what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Starts `perennial args... --trace trace --checkpoint-every every --checkpoint ckpt`
/// with its output discarded, and returns the running child once its first checkpoint
/// exists (for a test that kills it there).
pub fn spawn_to_checkpoint(args: &[&str], trace: &Path, every: u64, ckpt: &Path) -> Child {
    let child = perennial()
        .args(args)
        .args(["--trace", path(trace), "--checkpoint-every"])
        .arg(every.to_string())
        .args(["--checkpoint", path(ckpt)])
        .stdout(Stdio::null())
        .spawn()
        .expect("the binary starts");
    wait_for(ckpt, "no checkpoint appeared");
    child
}

/// `run WORLD --steps STEPS` and `extra`, as arguments.
pub fn run_args<'a>(world: &'a str, steps: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["run", world, "--steps", steps][..], extra].concat()
}

/// `run worlds/cartpole.toml --steps STEPS --auto-reset --format FORMAT --trace TRACE`, as
/// arguments; a test appends what else it needs.
pub fn cartpole_args<'a>(steps: &'a str, format: &'a str, trace: &'a Path) -> Vec<&'a str> {
    let extra = ["--auto-reset", "--format", format, "--trace", path(trace)];
    run_args("worlds/cartpole.toml", steps, &extra)
}

/// The same run traced twice, as JSON Lines and as Parquet, to [`temp`] paths named
/// `name.jsonl` and `name.parquet`: `perennial run world --steps steps --seed seed` plus
/// `extra`.
pub fn jsonl_and_parquet(
    world: &str,
    steps: &str,
    seed: &str,
    extra: &[&str],
    name: &str,
) -> (TempPath, TempPath) {
    let (jsonl, parquet) = (
        temp(&format!("{name}.jsonl")),
        temp(&format!("{name}.parquet")),
    );
    for (trace, format) in [(&jsonl, "jsonl"), (&parquet, "parquet")] {
        let mut args = vec![
            "run",
            world,
            "--steps",
            steps,
            "--seed",
            seed,
            "--trace",
            path(trace),
            "--format",
            format,
        ];
        args.extend(extra);
        run(&args);
    }
    (jsonl, parquet)
}

/// Runs `worlds/cartpole.toml` (auto-reset) for `steps` steps with a Parquet trace at `trace` and a
/// checkpoint (at `ckpt`) every 1,000 steps, so the trace has a part per checkpoint.
pub fn run_parquet_with_checkpoints(steps: &str, trace: &Path, ckpt: &Path) {
    let mut args = cartpole_args(steps, "parquet", trace);
    args.extend(["--checkpoint-every", "1000", "--checkpoint", path(ckpt)]);
    run(&args);
}

/// Every row of the traces `paths` (any format, in order), failing the test on a bad row.
pub fn read_rows<P: AsRef<Path>>(paths: &[P]) -> Vec<TraceRow> {
    TraceReader::open(paths)
        .collect::<Result<_, _>>()
        .expect("every trace row reads")
}

/// Every file in `dir`, by name, with its bytes, sorted by name.
pub fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = listing(dir)
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&p).unwrap();
            (name, bytes)
        })
        .collect();
    files.sort();
    files
}

/// The entries of `dir`, sorted by path.
pub fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries
}

/// Runs `perennial args...` and checks that it exits with `code` and a stderr that holds
/// `message`; returns the stderr.
pub fn fails_with(args: &[&str], code: i32, message: &str) -> String {
    let out = cli(args);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "perennial {args:?}: {stderr}"
    );
    assert!(stderr.contains(message), "perennial {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "perennial {args:?}: {stderr}");
    stderr
}

/// The `key` of every element of the JSON array `v`, as text; fails the test where `v` is
/// not an array or an element has no such text.
pub fn each_str<'a>(v: &'a serde_json::Value, key: &str) -> Vec<&'a str> {
    let items = v.as_array().unwrap_or_else(|| panic!("not an array: {v}"));
    items
        .iter()
        .map(|item| {
            item[key]
                .as_str()
                .unwrap_or_else(|| panic!("no `{key}`: {item}"))
        })
        .collect()
}

/// [`each_str`] for numbers.
pub fn each_f64(v: &serde_json::Value, key: &str) -> Vec<f64> {
    let items = v.as_array().unwrap_or_else(|| panic!("not an array: {v}"));
    items
        .iter()
        .map(|item| {
            item[key]
                .as_f64()
                .unwrap_or_else(|| panic!("no `{key}`: {item}"))
        })
        .collect()
}

/// A CartPole world file of two regimes, `a` and `b` (gravity 12), alternating every 30
/// steps, with auto-reset: the world of the hostile-input tests.
pub const SHIFTING_CARTPOLE: &str = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"b\"]\nevery = 30\n\n[harness]\nauto_reset = true\n";

/// Runs [`SHIFTING_CARTPOLE`] (written to `w.toml` in `s` on first use) for 100 steps of
/// seed `seed` in 10-step windows, traced to `trace` as `format`, with `extra` flags;
/// fails the test unless it succeeds.
pub fn shifting_cartpole_run(
    s: &Scratch,
    seed: &str,
    format: &str,
    trace: &Path,
    extra: &[&str],
) -> Output {
    let world = s.join("w.toml");
    if !world.exists() {
        std::fs::write(&world, SHIFTING_CARTPOLE).unwrap();
    }
    let mut args = vec![
        "run",
        path(&world),
        "--steps",
        "100",
        "--seed",
        seed,
        "--window-steps",
        "10",
        "--format",
        format,
        "--trace",
        path(trace),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// A world that stays still: one observation `[0.0]`, the episode's `t`-th step (from 0)
/// pays `reward(t)` and ends nothing; its spaces are `spec`'s. It cannot save, and has no
/// parameters to shift.
pub struct Still {
    pub spec: EnvSpec,
    pub reward: fn(u64) -> f64,
    t: u64,
}

impl Still {
    pub fn new(spec: EnvSpec, reward: fn(u64) -> f64) -> Self {
        Still { spec, reward, t: 0 }
    }
}

impl Env for Still {
    type Obs = [f32; 1];
    type Action = usize;
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }
    fn reset(&mut self, _seed: u64) -> [f32; 1] {
        self.t = 0;
        [0.0]
    }
    fn step(&mut self, _action: &usize) -> Result<Transition<[f32; 1]>, EnvError> {
        self.t += 1;
        Ok(Transition::new([0.0], (self.reward)(self.t - 1)))
    }
}

impl Shiftable for Still {}

/// A harness config of `steps` steps in 128-step windows that resets ended episodes.
pub fn auto_reset_config(steps: u64) -> HarnessConfig {
    HarnessConfig {
        steps,
        window_steps: 128,
        auto_reset: true,
        ..HarnessConfig::default()
    }
}

/// The paths of every leaf of a JSON value (object keys and array indices).
pub fn leaves(v: &serde_json::Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        serde_json::Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                at.push(k.clone());
                leaves(child, at, out);
                at.pop();
            }
        }
        serde_json::Value::Array(a) if !a.is_empty() => {
            for (i, child) in a.iter().enumerate() {
                at.push(i.to_string());
                leaves(child, at, out);
                at.pop();
            }
        }
        _ => out.push(at.clone()),
    }
}

pub fn leaf_mut<'a>(v: &'a mut serde_json::Value, at: &[String]) -> &'a mut serde_json::Value {
    at.iter().fold(v, |v, k| match v {
        serde_json::Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
        other => &mut other[k.as_str()],
    })
}

/// The edit `kind` of a leaf: a changed value of its type, null, or (for an object member)
/// the key removed.
pub fn mutate(v: &mut serde_json::Value, at: &[String], kind: u8) {
    use serde_json::Value;
    // Removing a key whose value is null changes nothing a reader sees (a missing
    // optional field reads as null), so a null leaf gets a value instead.
    if kind == 2
        && let Some((key, parent)) = at.split_last()
        && let Value::Object(m) = leaf_mut(v, parent)
        && !m.get(key).is_some_and(Value::is_null)
    {
        m.remove(key);
        return;
    }
    let leaf = leaf_mut(v, at);
    *leaf = match (kind, &*leaf) {
        (1, _) => Value::Null,
        (_, Value::Bool(b)) => Value::Bool(!b),
        (_, Value::Number(n)) if n.is_u64() => (n.as_u64().unwrap() ^ 1).into(),
        (_, Value::Number(n)) => (n.as_f64().unwrap() * 1.5 + 1.0).into(),
        (_, Value::String(t)) => format!("{t}x").into(),
        _ => 0.into(),
    };
}
