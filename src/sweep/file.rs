//! Sweep files (TOML): which worlds, agents and seeds to run, for how long.

use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::error::SweepFileError;
use crate::harness::HarnessConfig;
use crate::limits::MAX_SWEEP_RUNS;
use crate::registry::{BuildError, Registry, RunRequest};
use crate::trace::TraceFormat;
use crate::world_file::{Ctx, TomlFile, WorldFile};

/// A validated sweep file: every (world, agent, seed) combination is one run.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepFile {
    /// The file it was read from.
    pub path: PathBuf,
    /// The sweep's name: the default output directory is `runs/sweeps/<name>/`.
    pub name: String,
    /// The worlds, as absolute paths, in file order.
    pub worlds: Vec<SweepWorld>,
    /// Agent names, as `perennial run --agent` takes them.
    pub agents: Vec<String>,
    /// Run seeds, in file order.
    pub seeds: Vec<u64>,
    /// Step budget of every run.
    pub steps: u64,
    /// Steps between checkpoints (default: a tenth of `steps`, at least 1).
    pub checkpoint_every: u64,
    /// Trace format (default JSON Lines).
    pub format: TraceFormat,
    /// Parquet: seconds between two part files (`perennial run --part-seconds`; default
    /// the run's own, 1).
    pub part_seconds: Option<f64>,
    /// Agent options every run gets, each `KEY=VALUE` as `perennial run --agent-opt` takes
    /// it. A sweep file sets none; `perennial bench` sets them for its reference policies.
    pub agent_options: Vec<String>,
    /// The notify level every run gets (`perennial run --notify`); `None` leaves the world
    /// file's. A sweep file sets none; `perennial bench` sets its suite's track.
    pub notify: Option<crate::regime::NotifyLevel>,
}

/// One world of a sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepWorld {
    /// The world file, absolute.
    pub path: PathBuf,
    /// Its task id (the trace's `task` column), which names its runs.
    pub task: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDef {
    sweep: Spanned<SweepDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepDef {
    name: Spanned<String>,
    worlds: Spanned<Vec<Spanned<String>>>,
    agents: Spanned<Vec<Spanned<String>>>,
    seeds: Spanned<toml::Value>,
    steps: Spanned<i64>,
    checkpoint_every: Option<Spanned<i64>>,
    format: Option<Spanned<String>>,
    part_seconds: Option<Spanned<f64>>,
}

/// Sweep-file checks on the world file's error context: a sweep file's errors are world-file
/// errors in form.
impl Ctx<'_> {
    /// The items of `list`, or an error at the list when it has none.
    fn listed<'l, T>(
        &self,
        list: &'l Spanned<Vec<T>>,
        field: &str,
        what: &str,
    ) -> Result<&'l [T], SweepFileError> {
        let items = list.get_ref();
        if items.is_empty() {
            let message = format!("list at least one {what}");
            return Err(self.err(Some(list.span()), Some(field), message));
        }
        if items.len() > MAX_SWEEP_RUNS {
            let what = format!("{} {what}s", items.len());
            return Err(self.too_many(Some(list.span()), field, what));
        }
        Ok(items)
    }

    /// The error of a list (or a product of lists) longer than a sweep may be.
    /// `what` counts what is too many: "5000000 seeds", "100002 runs (1 world × ...)".
    fn too_many(&self, span: Option<Range<usize>>, field: &str, what: String) -> SweepFileError {
        let message = format!(
            "{what}; a sweep makes at most {MAX_SWEEP_RUNS} runs (worlds × agents × seeds): \
             split it into several sweeps"
        );
        self.err(span, Some(field), message)
    }
}

/// Whether `s` can be a file name on every platform and in a run id: ASCII letters, digits,
/// `.`, `_`, `-`, not starting with a dot.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A world path as written in a sweep file: relative paths are taken from the working
/// directory, then, like `perennial run`'s world files, from the crate's own directory
/// (where the shipped `worlds/` are).
fn resolve_world(written: &str) -> PathBuf {
    let path = Path::new(written);
    if path.is_absolute() || path.exists() {
        return std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    }
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if shipped.exists() {
        shipped
    } else {
        path.to_path_buf()
    }
}

/// Sweep files load through [`TomlFile`]: validated against a registry's worlds and
/// agents (the built-in one by default), every world a sweep names must load and build,
/// and every agent must run in every world. An error names the sweep file, line and field
/// (and the world file's own position when a world is invalid).
///
/// ```
/// use perennial::sweep::SweepFile;
/// use perennial::world_file::TomlFile;
/// use std::path::Path;
///
/// let text = r#"
/// [sweep]
/// name = "poles"
/// worlds = ["worlds/cartpole.toml"]
/// agents = ["random", "balance"]
/// seeds = { from = 0, count = 3 }
/// steps = 1000
/// "#;
/// let sweep = SweepFile::parse(text, Path::new("poles.toml")).unwrap();
/// assert_eq!(sweep.seeds, [0, 1, 2]);
/// assert_eq!(sweep.checkpoint_every, 100);
///
/// let bad = text.replace("count = 3", "count = 0");
/// let err = SweepFile::parse(&bad, Path::new("poles.toml")).unwrap_err();
/// assert_eq!(err.line, Some(6));
/// assert!(err.to_string().starts_with("poles.toml:6: field `sweep.seeds.count`"));
/// ```
impl TomlFile for SweepFile {
    type Names = Registry;

    fn builtin() -> &'static Registry {
        Registry::shared_builtin()
    }

    fn parse_with(text: &str, path: &Path, names: &Registry) -> Result<Self, SweepFileError> {
        SweepFile::parse_registry(text, path, names)
    }
}

impl SweepFile {
    /// What [`TomlFile::parse_with`] does for a sweep file.
    fn parse_registry(
        text: &str,
        path: &Path,
        registry: &Registry,
    ) -> Result<Self, SweepFileError> {
        let ctx = Ctx { path, text };
        let def: FileDef = ctx.parse("sweep.")?;
        let def = def.sweep.into_inner();

        let name = def.name.get_ref();
        if !is_name(name) {
            return Err(ctx.err(
                Some(def.name.span()),
                Some("sweep.name"),
                format!("`{name}` cannot name a directory: use letters, digits, `.`, `_` and `-`"),
            ));
        }

        let mut worlds: Vec<SweepWorld> = Vec::new();
        let world_list = ctx.listed(&def.worlds, "sweep.worlds", "world file")?;
        for (i, w) in world_list.iter().enumerate() {
            let field = format!("sweep.worlds[{i}]");
            let resolved = resolve_world(w.get_ref());
            let world = WorldFile::load_with(&resolved, registry).map_err(|e| {
                ctx.err(
                    Some(w.span()),
                    Some(&field),
                    format!("the world does not load: {e}"),
                )
            })?;
            let task = check_agents(&ctx, registry, &world, &def.agents, w)?;
            if let Some(other) = worlds.iter().find(|o| o.task == task) {
                return Err(ctx.err(
                    Some(w.span()),
                    Some(&field),
                    format!(
                        "its task `{task}` is also the task of {}; runs are named and scored by \
                         task, so give one of the worlds its own task",
                        other.path.display()
                    ),
                ));
            }
            if !is_name(&task) {
                return Err(ctx.err(
                    Some(w.span()),
                    Some(&field),
                    format!("its task `{task}` cannot name a trace file: use letters, digits, `.`, `_` and `-`"),
                ));
            }
            worlds.push(SweepWorld {
                path: resolved,
                task,
            });
        }

        let mut agents: Vec<String> = Vec::new();
        let mut seen_agents = HashSet::new();
        for (i, a) in ctx
            .listed(&def.agents, "sweep.agents", "agent")?
            .iter()
            .enumerate()
        {
            let field = format!("sweep.agents[{i}]");
            if !is_name(a.get_ref()) {
                return Err(ctx.err(
                    Some(a.span()),
                    Some(&field),
                    format!("`{}` is not an agent name", a.get_ref()),
                ));
            }
            if !seen_agents.insert(a.get_ref()) {
                return Err(ctx.err(
                    Some(a.span()),
                    Some(&field),
                    format!("agent `{}` is listed twice", a.get_ref()),
                ));
            }
            agents.push(a.get_ref().clone());
        }

        let seeds = parse_seeds(&ctx, &def.seeds)?;
        let runs = worlds
            .len()
            .saturating_mul(agents.len())
            .saturating_mul(seeds.len());
        if runs > MAX_SWEEP_RUNS {
            let what = format!(
                "{runs} runs ({} worlds × {} agents × {} seeds)",
                worlds.len(),
                agents.len(),
                seeds.len()
            );
            return Err(ctx.too_many(Some(def.seeds.span()), "sweep.seeds", what));
        }

        let steps = *def.steps.get_ref();
        let steps = u64::try_from(steps)
            .ok()
            .filter(|&s| s >= 1)
            .ok_or_else(|| {
                ctx.err(
                    Some(def.steps.span()),
                    Some("sweep.steps"),
                    "must be at least 1",
                )
            })?;
        let checkpoint_every = match &def.checkpoint_every {
            None => steps.div_ceil(10),
            Some(c) => u64::try_from(*c.get_ref())
                .ok()
                .filter(|&c| c >= 1)
                .ok_or_else(|| {
                    ctx.err(
                        Some(c.span()),
                        Some("sweep.checkpoint_every"),
                        "must be at least 1",
                    )
                })?,
        };
        let format = match def
            .format
            .as_ref()
            .map(|f| (f.get_ref().as_str(), f.span()))
        {
            None | Some(("jsonl", _)) => TraceFormat::Jsonl,
            Some(("csv", _)) => TraceFormat::Csv,
            Some(("parquet", _)) => TraceFormat::Parquet,
            Some((other, span)) => {
                return Err(ctx.err(
                    Some(span),
                    Some("sweep.format"),
                    format!("unknown trace format `{other}`; use jsonl, csv or parquet"),
                ));
            }
        };
        let part_seconds = match &def.part_seconds {
            None => None,
            Some(p) => {
                let secs = *p.get_ref();
                crate::trace::part_interval(secs, "part_seconds")
                    .map_err(|e| ctx.err(Some(p.span()), Some("sweep.part_seconds"), e))?;
                if format != TraceFormat::Parquet {
                    return Err(ctx.err(
                        Some(p.span()),
                        Some("sweep.part_seconds"),
                        format!(
                            "part_seconds is for Parquet traces (a directory of part files); this sweep writes {}: remove it or set format = \"parquet\"",
                            format.extension()
                        ),
                    ));
                }
                Some(secs)
            }
        };
        // Every run id (`<task>-<agent>-seed<seed>`) and the name itself name files.
        if let Err(e) = crate::limits::check_run_id("the sweep name", name) {
            return Err(ctx.err(Some(def.name.span()), Some("sweep.name"), e));
        }
        let longest_seed = seeds.iter().map(|s| s.to_string().len()).max().unwrap_or(1);
        for w in &worlds {
            for a in &agents {
                let id = format!("{}-{a}-seed{}", w.task, "0".repeat(longest_seed));
                if let Err(e) = crate::limits::check_run_id("the run id", &id) {
                    return Err(ctx.err(
                        Some(def.name.span()),
                        Some("sweep.agents"),
                        format!("{e}: the run ids of task `{}` and agent `{a}` are too long; give the world a shorter task", w.task),
                    ));
                }
            }
        }
        Ok(SweepFile {
            path: path.to_path_buf(),
            name: name.clone(),
            worlds,
            agents,
            seeds,
            steps,
            checkpoint_every,
            format,
            part_seconds,
            agent_options: Vec::new(),
            notify: None,
        })
    }

    /// How many runs the sweep makes: worlds × agents × seeds.
    pub fn len(&self) -> usize {
        self.worlds.len() * self.agents.len() * self.seeds.len()
    }

    /// Whether the sweep makes no run (never true for a loaded file).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Builds every agent of the sweep in `world` (a world with no agent listed is caught
/// later, with its own message) and returns the world's task id.
fn check_agents(
    ctx: &Ctx<'_>,
    registry: &Registry,
    world: &WorldFile,
    agents: &Spanned<Vec<Spanned<String>>>,
    written: &Spanned<String>,
) -> Result<String, SweepFileError> {
    let Some(kind) = registry.kind(&world.kind) else {
        return Err(ctx.err(
            Some(written.span()),
            Some("sweep.worlds"),
            format!("no world kind `{}` is registered", world.kind),
        ));
    };
    let mut task = None;
    for (i, agent) in agents.get_ref().iter().enumerate() {
        let options = world.agent_options(agent.get_ref());
        let request = RunRequest {
            world,
            agent: agent.get_ref(),
            agent_options: &options,
            seed: 0,
            config: HarnessConfig::default(),
            run_id: None,
            notify: world.notify,
            follow_world: false,
        };
        match kind.harness(&request) {
            Ok(h) => task = Some(h.identity().task.clone()),
            Err(BuildError::Agent(e)) => {
                return Err(ctx.err(
                    Some(agent.span()),
                    Some(&format!("sweep.agents[{i}]")),
                    format!("in {}: {e}", world.path.display()),
                ));
            }
            Err(e) => {
                return Err(ctx.err(
                    Some(written.span()),
                    Some("sweep.worlds"),
                    format!("the world does not build: {e}"),
                ));
            }
        }
    }
    match task {
        Some(t) => Ok(t),
        None => Err(ctx.err(
            Some(agents.span()),
            Some("sweep.agents"),
            "list at least one agent",
        )),
    }
}

/// `seeds = { from = A, count = N }` or `seeds = [A, B, ...]`.
fn parse_seeds(ctx: &Ctx<'_>, seeds: &Spanned<toml::Value>) -> Result<Vec<u64>, SweepFileError> {
    // toml's values carry no spans; the lines of `from` and `count` are found in the text.
    let span = seeds.span();
    let key_span = |key: &str| {
        let inner = &ctx.text[span.clone()];
        inner
            .find(key)
            .map(|at| span.start + at..span.start + at + key.len())
            .or(Some(span.clone()))
    };
    let seed =
        |v: &toml::Value, field: &str, s: Option<Range<usize>>| -> Result<u64, SweepFileError> {
            v.as_integer()
                .and_then(|i| u64::try_from(i).ok())
                .ok_or_else(|| ctx.err(s, Some(field), "a seed is a whole number from 0 up"))
        };
    let list = match seeds.get_ref() {
        toml::Value::Array(items) => {
            if items.is_empty() {
                return Err(ctx.err(Some(span), Some("sweep.seeds"), "list at least one seed"));
            }
            if items.len() > MAX_SWEEP_RUNS {
                let what = format!("{} seeds", items.len());
                return Err(ctx.too_many(Some(span), "sweep.seeds", what));
            }
            let mut out = Vec::with_capacity(items.len());
            let mut seen = HashSet::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                let s = seed(v, &format!("sweep.seeds[{i}]"), Some(span.clone()))?;
                if !seen.insert(s) {
                    return Err(ctx.err(
                        Some(span),
                        Some(&format!("sweep.seeds[{i}]")),
                        format!("seed {s} is listed twice"),
                    ));
                }
                out.push(s);
            }
            out
        }
        toml::Value::Table(t) => {
            if let Some(k) = t.keys().find(|k| *k != "from" && *k != "count") {
                return Err(ctx.err(
                    key_span(k),
                    Some(&format!("sweep.seeds.{k}")),
                    "unknown key; use `from` and `count`",
                ));
            }
            let from = match t.get("from") {
                Some(v) => seed(v, "sweep.seeds.from", key_span("from"))?,
                None => 0,
            };
            let count = t.get("count").ok_or_else(|| {
                ctx.err(
                    Some(span.clone()),
                    Some("sweep.seeds.count"),
                    "missing; say how many seeds",
                )
            })?;
            let count = count
                .as_integer()
                .and_then(|c| u64::try_from(c).ok())
                .filter(|&c| c >= 1)
                .ok_or_else(|| {
                    ctx.err(
                        key_span("count"),
                        Some("sweep.seeds.count"),
                        "must be at least 1",
                    )
                })?;
            if count > MAX_SWEEP_RUNS as u64 {
                let what = format!("{count} seeds");
                return Err(ctx.too_many(key_span("count"), "sweep.seeds.count", what));
            }
            let end = from.checked_add(count).ok_or_else(|| {
                ctx.err(
                    key_span("count"),
                    Some("sweep.seeds.count"),
                    "from + count passes the largest seed",
                )
            })?;
            (from..end).collect()
        }
        _ => {
            return Err(ctx.err(
                Some(span),
                Some("sweep.seeds"),
                "give `{ from = 0, count = 5 }` or a list of seeds",
            ));
        }
    };
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "[sweep]\nname = \"s\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\nseeds = [3, 1]\nsteps = 50\ncheckpoint_every = 7\nformat = \"csv\"\n";

    fn parse(text: &str) -> Result<SweepFile, SweepFileError> {
        SweepFile::parse(text, Path::new("s.toml"))
    }

    #[test]
    fn a_seed_list_keeps_its_order_and_options_are_read() {
        let s = parse(OK).unwrap();
        assert_eq!(s.seeds, [3, 1]);
        assert_eq!(
            (s.steps, s.checkpoint_every, s.format),
            (50, 7, TraceFormat::Csv)
        );
        assert_eq!(s.worlds[0].task, "cartpole");
        assert!(s.worlds[0].path.is_absolute());
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let err = parse(&OK.replace("steps = 50", "stepz = 50")).unwrap_err();
        assert_eq!(err.line, Some(6));
        assert_eq!(err.field.as_deref(), Some("sweep.stepz"));
    }

    #[test]
    fn a_world_that_does_not_load_is_named_with_its_line_and_the_world_error() {
        let err = parse(&OK.replace("worlds/cartpole.toml", "worlds/nope.toml")).unwrap_err();
        assert_eq!(err.line, Some(3));
        assert_eq!(err.field.as_deref(), Some("sweep.worlds[0]"));
        assert!(err.message.contains("nope.toml"), "{err}");
    }

    #[test]
    fn two_worlds_with_one_task_are_refused() {
        let text = OK.replace(
            "[\"worlds/cartpole.toml\"]",
            "[\"worlds/cartpole.toml\",\n \"worlds/cartpole-drift.toml\"]",
        );
        let err = parse(&text).unwrap_err();
        assert_eq!(err.line, Some(4));
        assert!(err.message.contains("task `cartpole`"), "{err}");
    }

    #[test]
    fn bad_values_name_their_field() {
        for (from, to, field, line) in [
            ("name = \"s\"", "name = \"../up\"", "sweep.name", 2),
            (
                "agents = [\"random\"]",
                "agents = [\"random\", \"random\"]",
                "sweep.agents[1]",
                4,
            ),
            ("seeds = [3, 1]", "seeds = [3, 3]", "sweep.seeds[1]", 5),
            (
                "seeds = [3, 1]",
                "seeds = { from = -1, count = 2 }",
                "sweep.seeds.from",
                5,
            ),
            (
                "seeds = [3, 1]",
                "seeds = { count = 2, step = 1 }",
                "sweep.seeds.step",
                5,
            ),
            ("seeds = [3, 1]", "seeds = 4", "sweep.seeds", 5),
            ("steps = 50", "steps = 0", "sweep.steps", 6),
            (
                "checkpoint_every = 7",
                "checkpoint_every = -7",
                "sweep.checkpoint_every",
                7,
            ),
            ("format = \"csv\"", "format = \"xml\"", "sweep.format", 8),
            (
                "format = \"csv\"",
                "format = \"csv\"\npart_seconds = -1",
                "sweep.part_seconds",
                9,
            ),
            (
                "format = \"csv\"",
                "format = \"csv\"\npart_seconds = nan",
                "sweep.part_seconds",
                9,
            ),
            (
                "format = \"csv\"",
                "format = \"csv\"\npart_seconds = 0.5",
                "sweep.part_seconds",
                9,
            ),
        ] {
            let err = parse(&OK.replace(from, to)).unwrap_err();
            assert_eq!(err.field.as_deref(), Some(field), "{to}: {err}");
            assert_eq!(err.line, Some(line), "{to}: {err}");
        }
    }

    #[test]
    fn a_missing_sweep_table_is_an_error_not_a_panic() {
        let err = parse("name = 1\n").unwrap_err();
        assert!(err.message.contains("sweep"), "{err}");
    }
}
