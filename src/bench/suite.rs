//! A bench suite: a folder holding `suite.toml` and the world file it names, identified by
//! the hash of its files.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::error::BenchError;
use crate::output::ContentHasher;
use crate::regime::NotifyLevel;
use crate::world_file::{Ctx, WorldFileError, read_text};

/// The file every suite folder holds.
pub const SUITE_FILE: &str = "suite.toml";

/// The shipped suites' folder, relative to the working directory or the crate.
pub const SHIPPED: &str = "bench/v1";

/// A reference a suite computes for every seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReferenceKind {
    /// The random agent: the floor of the normalized score.
    Random,
    /// The best of the suite's `[[best_fixed]]` policies, each held fixed all run long,
    /// chosen by its mean over the seeds.
    BestFixed,
    /// The regime-aware oracle agent (`--agent oracle`): the top of the normalized score.
    Oracle,
    /// The world's reward ceiling (the trace's `ceiling` column): the top of the
    /// normalized score where no oracle exists (CartPole: the pole never falls).
    Ceiling,
}

impl ReferenceKind {
    /// The name used in suite and results files.
    pub fn as_str(self) -> &'static str {
        match self {
            ReferenceKind::Random => "random",
            ReferenceKind::BestFixed => "best-fixed",
            ReferenceKind::Oracle => "oracle",
            ReferenceKind::Ceiling => "ceiling",
        }
    }
}

/// One fixed policy a suite's best-fixed reference chooses among.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedPolicy {
    /// The agent (`perennial run --agent`).
    pub agent: String,
    /// Its options, each `KEY=VALUE` as `perennial run --agent-opt` takes them, sorted.
    pub options: Vec<String>,
}

/// A loaded suite.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// Its name (`warehouse`).
    pub name: String,
    /// Its version: the name of the folder holding it (`v1`).
    pub version: String,
    /// The suite's folder, absolute.
    pub dir: PathBuf,
    /// The world file, absolute (inside `dir`).
    pub world: PathBuf,
    /// Step budget of every run.
    pub steps: u64,
    /// The seeds, in file order.
    pub seeds: Vec<u64>,
    /// The notify tracks: each level is a separate row of the table.
    pub tracks: Vec<NotifyLevel>,
    /// The references computed for every seed: `random` and one of `oracle` or `ceiling`
    /// always, `best-fixed` when listed.
    pub references: Vec<ReferenceKind>,
    /// The policies the best-fixed reference chooses among.
    pub best_fixed: Vec<FixedPolicy>,
    /// The world's episode-length cap (`max_episode_steps`), when it has one.
    pub max_episode_steps: Option<u64>,
    /// The suite's identity: [`suite_hash`] of its folder.
    pub hash: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDef {
    suite: Spanned<SuiteDef>,
    #[serde(default)]
    best_fixed: Vec<Spanned<FixedDef>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteDef {
    name: Spanned<String>,
    world: Spanned<String>,
    steps: Spanned<i64>,
    seeds: Spanned<Vec<Spanned<i64>>>,
    tracks: Spanned<Vec<Spanned<String>>>,
    references: Spanned<Vec<Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixedDef {
    agent: String,
    #[serde(default)]
    options: toml::Table,
}

/// The identity of a suite folder: [`content_hash`](crate::output::content_hash) over its
/// regular files in name order, each as its name, a NUL, its length (8 bytes, little
/// endian) and its bytes. Anything else in the folder (a subfolder) is refused.
///
/// # Errors
///
/// The folder or a file cannot be read, or the folder holds something other than files.
pub fn suite_hash(dir: &Path) -> Result<String, BenchError> {
    let entries = std::fs::read_dir(dir).map_err(BenchError::io(dir))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(BenchError::io(dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(BenchError::io(&path))?;
        if !kind.is_file() {
            return Err(BenchError::Suite(WorldFileError {
                path,
                line: None,
                field: None,
                message: "a suite folder holds only regular files (its suite.toml and world files); move this out".into(),
            }));
        }
        names.push(entry.file_name());
    }
    names.sort();
    let mut hasher = ContentHasher::default();
    for name in names {
        let path = dir.join(&name);
        let bytes = std::fs::read(&path).map_err(BenchError::io(&path))?;
        hasher.update(name.as_encoded_bytes());
        hasher.update(&[0]);
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher.finish())
}

/// The folder of suite `name`: `name` itself when it is a folder holding a `suite.toml`,
/// else `bench/v1/<name>` from the working directory, then from the crate's directory.
pub fn resolve(name: &str) -> PathBuf {
    let given = Path::new(name);
    if given.join(SUITE_FILE).is_file() {
        return std::path::absolute(given).unwrap_or_else(|_| given.to_path_buf());
    }
    let local = Path::new(SHIPPED).join(name);
    if local.join(SUITE_FILE).is_file() {
        return std::path::absolute(&local).unwrap_or(local);
    }
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(SHIPPED)
        .join(name);
    if shipped.join(SUITE_FILE).is_file() {
        shipped
    } else {
        given.to_path_buf()
    }
}

impl Suite {
    /// Loads suite `name` (a folder, or a shipped suite's name: see [`resolve`]).
    ///
    /// # Errors
    ///
    /// [`BenchError::Suite`] naming the file, line and field: no suite there, an unknown
    /// key or reference, no seeds, a world file outside the folder.
    pub fn load(name: &str) -> Result<Self, BenchError> {
        let dir = resolve(name);
        let path = dir.join(SUITE_FILE);
        if !path.is_file() {
            return Err(BenchError::Suite(WorldFileError {
                path,
                line: None,
                field: None,
                message: format!(
                    "no suite `{name}`: give a shipped suite's name (a folder of {SHIPPED}/) or a folder holding a {SUITE_FILE}"
                ),
            }));
        }
        let text = read_text(&path)?;
        let mut suite = parse(&text, &path)?;
        suite.dir = dir.clone();
        suite.world = dir.join(&suite.world);
        suite.hash = suite_hash(&dir)?;
        Ok(suite)
    }

    /// The seeds and budget of a run of this suite: its own, or fewer seeds (the first
    /// `seeds`) and another budget for a smoke run.
    pub fn shrunk(&self, seeds: Option<usize>, steps: Option<u64>) -> (Vec<u64>, u64) {
        let n = seeds.unwrap_or(self.seeds.len()).min(self.seeds.len());
        (self.seeds[..n].to_vec(), steps.unwrap_or(self.steps))
    }

    /// The top reference of the normalized score: `oracle` or `ceiling`.
    pub fn top(&self) -> ReferenceKind {
        if self.references.contains(&ReferenceKind::Oracle) {
            ReferenceKind::Oracle
        } else {
            ReferenceKind::Ceiling
        }
    }
}

/// A `KEY=VALUE` per leaf of `table`, keys dotted, values as TOML writes them.
fn options(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => options(&key, t, out),
            v => out.push(format!("{key}={v}")),
        }
    }
}

/// Each entry of the list `field` as the one of `all` it names (`name_of`), in order, or
/// the error naming the entry: a name none has (an unknown `what`, and the `choices` to
/// use) or one listed twice (the `twice` named so).
fn each_named<T: Copy + PartialEq>(
    ctx: &Ctx<'_>,
    list: &[Spanned<String>],
    field: &str,
    all: &[T],
    name_of: fn(T) -> &'static str,
    (what, choices, twice): (&str, &str, &str),
) -> Result<Vec<T>, BenchError> {
    let mut out = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let field = format!("{field}[{i}]");
        let fail = |message| BenchError::Suite(ctx.err(Some(entry.span()), Some(&field), message));
        let name = entry.get_ref();
        let Some(item) = all.iter().copied().find(|t| name_of(*t) == name) else {
            return Err(fail(format!("unknown {what} `{name}`; use {choices}")));
        };
        if out.contains(&item) {
            return Err(fail(format!("{twice} `{}` is listed twice", name_of(item))));
        }
        out.push(item);
    }
    Ok(out)
}

/// Validates the text of a `suite.toml`; `path` is used in errors. The folder, world path
/// and hash are filled in by [`Suite::load`].
fn parse(text: &str, path: &Path) -> Result<Suite, BenchError> {
    let ctx = Ctx { path, text };
    let def: FileDef = ctx.parse("suite.")?;
    let best_fixed_defs = def.best_fixed;
    let def = def.suite.into_inner();
    let err =
        |span, field: &str, message: String| BenchError::Suite(ctx.err(span, Some(field), message));

    let name = def.name.get_ref().clone();
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if !name_ok {
        return Err(err(
            Some(def.name.span()),
            "suite.name",
            format!("`{name}` cannot name a results file: use letters, digits, `_` and `-`"),
        ));
    }
    let world = def.world.get_ref();
    let world_ok = !world.is_empty()
        && !world.contains(['/', '\\'])
        && !world.starts_with('.')
        && world != SUITE_FILE;
    if !world_ok {
        return Err(err(
            Some(def.world.span()),
            "suite.world",
            format!(
                "`{world}` is not a file of the suite's folder: copy the world file into the folder and give its name"
            ),
        ));
    }
    let world_path = path.parent().unwrap_or(Path::new(".")).join(world);
    if !world_path.is_file() {
        return Err(err(
            Some(def.world.span()),
            "suite.world",
            format!(
                "{} does not exist: a suite holds its world file",
                world_path.display()
            ),
        ));
    }
    let steps = u64::try_from(*def.steps.get_ref())
        .ok()
        .filter(|&s| s >= 1)
        .ok_or_else(|| {
            err(
                Some(def.steps.span()),
                "suite.steps",
                "must be at least 1".into(),
            )
        })?;
    if def.seeds.get_ref().is_empty() {
        return Err(err(
            Some(def.seeds.span()),
            "suite.seeds",
            "the suite lists no seeds: list the seeds every agent is run with (v1 suites have 10)"
                .into(),
        ));
    }
    let mut seeds = Vec::new();
    for (i, s) in def.seeds.get_ref().iter().enumerate() {
        let seed = u64::try_from(*s.get_ref()).map_err(|_| {
            err(
                Some(s.span()),
                &format!("suite.seeds[{i}]"),
                "a seed is a whole number from 0 up".into(),
            )
        })?;
        if seeds.contains(&seed) {
            return Err(err(
                Some(s.span()),
                &format!("suite.seeds[{i}]"),
                format!("seed {seed} is listed twice"),
            ));
        }
        seeds.push(seed);
    }
    if def.tracks.get_ref().is_empty() {
        return Err(err(
            Some(def.tracks.span()),
            "suite.tracks",
            "list at least one notify track (\"none\")".into(),
        ));
    }
    let tracks = each_named(
        &ctx,
        def.tracks.get_ref(),
        "suite.tracks",
        &NotifyLevel::ALL,
        NotifyLevel::as_str,
        ("notify level", "none, flag, delta or label", "track"),
    )?;
    let references = each_named(
        &ctx,
        def.references.get_ref(),
        "suite.references",
        &[
            ReferenceKind::Random,
            ReferenceKind::BestFixed,
            ReferenceKind::Oracle,
            ReferenceKind::Ceiling,
        ],
        ReferenceKind::as_str,
        (
            "reference",
            "random, best-fixed, oracle or ceiling",
            "reference",
        ),
    )?;
    let has = |k| references.contains(&k);
    if !has(ReferenceKind::Random) || has(ReferenceKind::Oracle) == has(ReferenceKind::Ceiling) {
        return Err(err(
            Some(def.references.span()),
            "suite.references",
            "list `random` (the floor) and one of `oracle` or `ceiling` (the top): the normalized score needs both".into(),
        ));
    }
    let mut best_fixed = Vec::new();
    for (i, b) in best_fixed_defs.iter().enumerate() {
        let b = b.get_ref();
        let mut opts = Vec::new();
        options("", &b.options, &mut opts);
        opts.sort();
        if b.agent.is_empty() {
            return Err(err(
                Some(best_fixed_defs[i].span()),
                &format!("best_fixed[{i}].agent"),
                "name an agent".into(),
            ));
        }
        best_fixed.push(FixedPolicy {
            agent: b.agent.clone(),
            options: opts,
        });
    }
    if has(ReferenceKind::BestFixed) == best_fixed.is_empty() {
        return Err(err(
            Some(def.references.span()),
            "suite.references",
            "`best-fixed` needs [[best_fixed]] policies to choose among, and [[best_fixed]] needs `best-fixed` listed".into(),
        ));
    }
    let max_episode_steps = std::fs::read_to_string(&world_path)
        .ok()
        .and_then(|w| w.parse::<toml::Table>().ok())
        .and_then(|w| {
            w.get("world")?
                .get("params")?
                .get("max_episode_steps")?
                .as_integer()
        })
        .and_then(|m| u64::try_from(m).ok());
    Ok(Suite {
        name,
        version: path
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dir: PathBuf::new(),
        world: PathBuf::from(world),
        steps,
        seeds,
        tracks,
        references,
        best_fixed,
        max_episode_steps,
        hash: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(suite: &str) -> tempdir::Dir {
        let d = tempdir::Dir::new();
        std::fs::write(
            d.0.join("w.toml"),
            "[world]\nkind = \"cartpole\"\n[world.params]\nmax_episode_steps = 500\n",
        )
        .unwrap();
        std::fs::write(d.0.join(SUITE_FILE), suite).unwrap();
        d
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let p = std::env::temp_dir()
                    .join(format!("perennial-suite-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    const OK: &str = "[suite]\nname = \"s\"\nworld = \"w.toml\"\nsteps = 100\nseeds = [0, 1]\ntracks = [\"none\"]\nreferences = [\"random\", \"best-fixed\", \"ceiling\"]\n\n[[best_fixed]]\nagent = \"balance\"\noptions = { gain = { p = 1.5 } }\n";

    #[test]
    fn a_suite_loads_with_its_hash_and_flattened_options() {
        let d = folder(OK);
        let s = Suite::load(d.0.to_str().unwrap()).unwrap();
        assert_eq!((s.steps, s.seeds.clone()), (100, vec![0, 1]));
        assert_eq!(s.best_fixed[0].options, ["gain.p=1.5"]);
        assert_eq!(s.max_episode_steps, Some(500));
        assert_eq!(s.top(), ReferenceKind::Ceiling);
        assert_eq!(s.hash.len(), 16);
    }

    #[test]
    fn editing_any_file_of_the_suite_changes_its_hash() {
        let d = folder(OK);
        let before = suite_hash(&d.0).unwrap();
        std::fs::write(d.0.join("w.toml"), "[world]\nkind = \"cartpole\"\n").unwrap();
        assert_ne!(before, suite_hash(&d.0).unwrap());
    }

    #[test]
    fn no_seeds_and_unknown_references_are_named_with_their_line() {
        for (from, to, field, line) in [
            ("seeds = [0, 1]", "seeds = []", "suite.seeds", 5),
            (
                "\"ceiling\"]",
                "\"ceiling\", \"median\"]",
                "suite.references[3]",
                7,
            ),
            (
                "\"ceiling\"]",
                "\"ceiling\", \"oracle\"]",
                "suite.references",
                7,
            ),
            (
                "tracks = [\"none\"]",
                "tracks = [\"loud\"]",
                "suite.tracks[0]",
                6,
            ),
            (
                "world = \"w.toml\"",
                "world = \"../w.toml\"",
                "suite.world",
                3,
            ),
        ] {
            let d = folder(&OK.replace(from, to));
            let e = Suite::load(d.0.to_str().unwrap()).unwrap_err();
            let BenchError::Suite(e) = e else {
                panic!("{e}")
            };
            assert_eq!(
                (e.field.as_deref(), e.line),
                (Some(field), Some(line)),
                "{to}: {e}"
            );
        }
    }
}
