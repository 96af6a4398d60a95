//! World definition files (TOML): a world's kind and parameters, its regimes, schedule, reward and run defaults.
//!
//! ```toml
//! [world]
//! kind = "cartpole"                  # cartpole | morpheus
//! description = "CartPole-v1 whose physics drift"
//! [world.params]                     # the kind's parameter struct, every field optional
//! max_episode_steps = 500
//!
//! [[regimes]]                        # at least one; the first is the initial regime
//! label = "earth"
//! [[regimes]]
//! label = "heavy"
//! conditions = { gravity = 15.0 }   # Shiftable parameters, validated against the world
//!
//! [schedule]                         # optional; default: the first regime for ever
//! plan = "cycle"                     # fixed | cycle | stochastic | manual
//! labels = ["earth", "heavy"]
//! every = 50
//!
//! [[reward.terms]]                   # optional, for worlds with reward signals
//! name = "shipped"
//! signal = "orders_shipped"
//! weight = 1.0
//! when = "step"                      # step | episode_end
//!
//! [harness]                          # optional defaults for `perennial run`
//! steps = 10000
//! window_steps = 256
//! auto_reset = true
//! seed = 0
//! agent = "random"
//!
//! [agent.actor-critic]               # optional: options of an agent, by its name
//! actor_lr = 0.01
//!
//! [notify]                           # optional: what the agent is told at a shift
//! level = "none"                     # none | flag | delta | label
//! ```
//!
//! The kind is looked up in a [`Registry`](crate::registry::Registry), through the
//! [`kinds::Kinds`] trait it implements ([`WorldFile::load`] uses the built-in one,
//! [`WorldFile::load_with`] takes yours); the kind parses and checks its own
//! `[world.params]`. `[harness] agent` and every `[agent.<name>]` table must name an agent
//! the kind has, and each table's agent is built on the file's world at load, so a bad
//! option is an error naming its line and field (e.g. `agent.oracle.peak_season.carrier`).
//! The `[harness] agent` without a table is built by `perennial check` and at run time.
//!
//! Schedules: `fixed` takes `shifts = [{ step = 0, label = "a" }, { step = 500, label = "b" }]`;
//! `cycle` takes `labels` and `every`; `stochastic` takes `labels`, optional `weights`,
//! `min_dwell` and `mean_dwell`; `manual` takes nothing.
//!
//! `[notify] level` is the run's [`NotifyLevel`] (default `none`; `perennial run --notify`
//! overrides it): see [`crate::regime::Notification`] for what each level tells the agent.
//!
//! Everything is checked at load, never mid-run: unknown keys, wrong types, unknown or
//! out-of-range parameters, an empty regime list, duplicate labels, schedules naming
//! undefined labels, reward terms reading unknown signals, agent options an agent refuses.
//! Each error names the file, the line and the field.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::config::serde_field;
use crate::regime::{
    NotifyLevel, ParamInfo, Plan, Regime, RegimeError, Scheduler, validate_conditions,
};
use crate::reward::{RewardSpec, Term};
use kinds::{AgentCheckError, KindRules, Kinds};

/// A world file that cannot be used, with where and why.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldFileError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The offending field (dotted path), when known.
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for WorldFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for WorldFileError {}

impl WorldFileError {
    /// An error about the file as a whole: no line or field to point at.
    pub fn whole(path: &Path, message: impl Into<String>) -> Self {
        WorldFileError {
            path: path.to_path_buf(),
            line: None,
            field: None,
            message: message.into(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDef {
    world: Spanned<WorldDef>,
    regimes: Option<Spanned<Vec<Spanned<RegimeDef>>>>,
    schedule: Option<Spanned<ScheduleDef>>,
    reward: Option<Spanned<RewardDef>>,
    #[serde(default)]
    harness: HarnessDefaults,
    agent: Option<Spanned<BTreeMap<Spanned<String>, Spanned<toml::Table>>>>,
    notify: Option<NotifyDef>,
    roles: Option<Spanned<toml::Table>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifyDef {
    level: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldDef {
    kind: Spanned<String>,
    #[serde(default)]
    description: String,
    /// For `kind = "python"`: the class (`package.module:Class`) or Gymnasium id.
    entry_point: Option<Spanned<String>>,
    params: Option<Spanned<toml::Table>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegimeDef {
    label: Spanned<String>,
    #[serde(default)]
    conditions: BTreeMap<Spanned<String>, Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleDef {
    plan: Spanned<String>,
    labels: Option<Vec<Spanned<String>>>,
    every: Option<Spanned<u64>>,
    shifts: Option<Vec<Spanned<ShiftDef>>>,
    weights: Option<Spanned<Vec<f64>>>,
    min_dwell: Option<Spanned<u64>>,
    mean_dwell: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShiftDef {
    step: u64,
    label: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RewardDef {
    terms: Vec<Spanned<Term>>,
}

/// Reads at most [`MAX_WORLD_FILE_BYTES`](crate::limits::MAX_WORLD_FILE_BYTES), so
/// `/dev/zero` or a huge file is refused instead of read without bound.
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let limit = crate::limits::MAX_WORLD_FILE_BYTES;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the file: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "is larger than {limit} bytes, the limit for a world or sweep file; is it the right file?"
        ));
    }
    Ok(bytes)
}

/// The text of a TOML file the user names (a world or sweep file): read with
/// [`read_bounded`], and UTF-8, else an error naming the line of the first invalid byte.
pub(crate) fn read_text(path: &Path) -> Result<String, WorldFileError> {
    let error = |line, message| WorldFileError {
        path: path.to_path_buf(),
        line,
        field: None,
        message,
    };
    let bytes = read_bounded(path).map_err(|message| error(None, message))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
        let message = format!("byte {at} is not valid UTF-8; save the file as UTF-8");
        error(Some(line), message)
    })
}

/// Locates byte offsets as lines and builds errors for one file (a world file, or a sweep
/// file: its errors have the same form).
pub(crate) struct Ctx<'a> {
    pub(crate) path: &'a Path,
    pub(crate) text: &'a str,
}

impl Ctx<'_> {
    /// The file's text as `T`; serde's error at its line, with the field it names (prefixed
    /// with `prefix`, e.g. `sweep.`).
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(
        &self,
        prefix: &str,
    ) -> Result<T, WorldFileError> {
        toml::from_str(self.text).map_err(|e| {
            let msg = e.message().trim();
            let at = e.span().map(|s| s.start);
            // A value of the wrong type or range names no field: the key on its line does.
            let field = serde_field(msg)
                .map(str::to_string)
                .or_else(|| at.and_then(|a| self.key_at(a)))
                .map(|f| match at.and_then(|a| self.table_at(a, &f)) {
                    Some(table) => table,
                    None => format!("{prefix}{f}"),
                });
            self.err(e.span(), field.as_deref(), msg.to_string())
        })
    }

    /// The line holding byte `offset`, and the offset where it starts.
    fn line_at(&self, offset: usize) -> (usize, &str) {
        let offset = offset.min(self.text.len());
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        (start, &self.text[start..end])
    }

    /// The key of the `key = value` line holding byte `offset`.
    fn key_at(&self, offset: usize) -> Option<String> {
        let (_, line) = self.line_at(offset);
        let key = line.split_once('=')?.0.trim();
        let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        (!key.is_empty() && key.chars().all(bare)).then(|| key.to_string())
    }

    /// `field` in full, for an error at byte `offset`: within the table whose header
    /// (`[harness]`, `[[regimes]]`) comes last at or before it, so `[notify] extra = 1`
    /// is `notify.extra`, not `extra`. An error on a header line itself is about that
    /// table (`[harnes]`) or a field it lacks. `None` before any header.
    fn table_at(&self, offset: usize, field: &str) -> Option<String> {
        let header = |line: &str| {
            let t = line.trim();
            let name = t
                .strip_prefix("[[")
                .and_then(|r| r.split_once("]]"))
                .or_else(|| t.strip_prefix('[').and_then(|r| r.split_once(']')))?
                .0
                .trim();
            // A line of a multi-line array (`[0, "a"],`) is not a header.
            let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
            (!name.is_empty() && name.chars().all(bare)).then(|| name.to_string())
        };
        let (start, line) = self.line_at(offset);
        if let Some(table) = header(line) {
            let last = table.rsplit('.').next().unwrap_or(&table);
            return Some(if last == field {
                table
            } else {
                format!("{table}.{field}")
            });
        }
        self.text[..start]
            .lines()
            .rev()
            .find_map(header)
            .map(|table| format!("{table}.{field}"))
    }

    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    pub(crate) fn err(
        &self,
        span: Option<Range<usize>>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> WorldFileError {
        WorldFileError {
            path: self.path.to_path_buf(),
            line: span.map(|s| self.line(s.start)),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }

    /// The line of `key = ...` at or after `from`, for errors serde reports without a span.
    fn find_key(&self, from: usize, key: &str) -> Option<Range<usize>> {
        let mut offset = from.min(self.text.len());
        for line in self.text[offset..].split_inclusive('\n') {
            let trimmed = line.trim_start();
            if let Some(rest) = trimmed.strip_prefix(key)
                && rest.trim_start().starts_with('=')
            {
                let start = offset + (line.len() - trimmed.len());
                return Some(start..start + key.len());
            }
            offset += line.len();
        }
        None
    }

    /// The line of a table header `[path]` (spaces and quotes inside the brackets aside),
    /// or with `prefix`, of the first header that starts with `path.` or is `path`.
    fn find_header(&self, path: &str, prefix: bool) -> Option<Range<usize>> {
        let mut offset = 0;
        for line in self.text.split_inclusive('\n') {
            let trimmed = line.trim_start();
            if let Some(rest) = trimmed.strip_prefix('[')
                && !rest.starts_with('[')
                && let Some((inside, _)) = rest.split_once(']')
            {
                let name: String = inside
                    .chars()
                    .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                    .collect();
                let hit = name == path
                    || (prefix && name.strip_prefix(path).is_some_and(|r| r.starts_with('.')));
                if hit {
                    let start = offset + (line.len() - trimmed.len());
                    return Some(start..start + trimmed.trim_end().len());
                }
            }
            offset += line.len();
        }
        None
    }

    /// The line of `key = ...` within the table whose header ends at `from` (up to the
    /// next header).
    fn find_key_in_table(&self, from: usize, key: &str) -> Option<Range<usize>> {
        let end = self.text[from..]
            .split_inclusive('\n')
            .skip(1)
            .scan(from, |at, line| {
                let start = *at;
                *at += line.len();
                Some((start, line))
            })
            .find(|(_, line)| line.trim_start().starts_with('['))
            .map_or(self.text.len(), |(start, _)| start);
        self.find_key(from, key).filter(|span| span.start < end)
    }

    /// Where option `field` (dotted, within `[agent.<agent>]`) is written: the deepest
    /// `[agent.<agent>.…]` header on its path holding the next key, else the first header
    /// of the agent's tables.
    fn find_agent_option(&self, agent: &str, field: &str) -> Option<Range<usize>> {
        let parts: Vec<&str> = field.split('.').collect();
        let table = format!("agent.{agent}");
        for depth in (0..parts.len()).rev() {
            let mut header = table.clone();
            for part in &parts[..depth] {
                header.push('.');
                header.push_str(part);
            }
            if let Some(at) = self.find_header(&header, false)
                && let Some(span) = self.find_key_in_table(at.end, parts[depth])
            {
                return Some(span);
            }
        }
        // The option is a whole table (`[agent.oracle.<label>]`), else point at the agent's.
        self.find_header(&format!("{table}.{field}"), false)
            .or_else(|| self.find_header(&table, true))
    }
}

impl WorldFile {
    /// Reads and validates a world file whose kind is looked up in `registry`.
    ///
    /// # Errors
    ///
    /// As [`WorldFile::load`].
    pub fn load_with(path: &Path, registry: &dyn Kinds) -> Result<Self, WorldFileError> {
        let text = read_text(path)?;
        Self::parse_with(&text, path, registry)
    }

    /// Validates world-file text whose kind is looked up in `registry`.
    ///
    /// # Errors
    ///
    /// As [`WorldFile::load`].
    pub fn parse_with(
        text: &str,
        path: &Path,
        registry: &dyn Kinds,
    ) -> Result<Self, WorldFileError> {
        let ctx = Ctx { path, text };
        let def: FileDef = ctx.parse("")?;
        let world_def = def.world.get_ref();
        let kind_name = world_def.kind.get_ref();
        let Some(kind) = registry.rules(kind_name) else {
            let message = if kind_name == PYTHON_KIND {
                "this world is written in Python (kind = \"python\"); the `perennial` binary \
                 cannot build it: use the Python package's command line, \
                 `python -m perennial <command> FILE` (`pip install ./python`)"
                    .to_string()
            } else {
                format!(
                    "unknown world kind `{kind_name}`; use one of: {}",
                    registry.names().join(", ")
                )
            };
            return Err(ctx.err(Some(world_def.kind.span()), Some("world.kind"), message));
        };
        let table = world_def.params.as_ref();
        let merged = python_params(&ctx, world_def, kind_name, def.regimes.as_ref())?;
        let role_table = match &def.roles {
            None => None,
            Some(r) => Some(roles_def::parse(&ctx, r, kind, kind_name)?),
        };
        let with_roles = match &role_table {
            None => None,
            Some(roles) => {
                let mut t = merged
                    .clone()
                    .or(table.map(|t| t.get_ref().clone()))
                    .unwrap_or_default();
                let value = toml::Value::try_from(roles)
                    .map_err(|e| ctx.err(None, Some("roles"), e.to_string()))?;
                t.insert("roles".into(), value);
                Some(t)
            }
        };
        let given = with_roles
            .as_ref()
            .or(merged.as_ref())
            .or(table.map(|t| t.get_ref()));
        let (params, parameters) = kind.load(given).map_err(|e| {
            if e.field.as_deref() == Some(ENTRY_POINT)
                && let Some(entry) = &world_def.entry_point
            {
                return ctx.err(Some(entry.span()), Some("world.entry_point"), e.message);
            }
            let span = e
                .field
                .as_deref()
                .and_then(|k| table.and_then(|t| ctx.find_key(t.span().start, k)))
                .or_else(|| table.map(|t| t.span()));
            let field = match &e.field {
                Some(k) => format!("world.params.{k}"),
                None => "world.params".into(),
            };
            ctx.err(span, Some(&field), e.message)
        })?;

        let regimes = regimes(&ctx, def.regimes, &parameters)?;
        let plan = match def.schedule {
            Some(s) => plan(&ctx, s, &regimes)?,
            None => Plan::Manual,
        };
        let reward = match def.reward {
            None => None,
            Some(r) => Some(reward(&ctx, r, kind.reward_signals())?),
        };
        if let Some(roles) = &role_table {
            let team = reward.clone().or_else(|| kind.default_reward());
            let terms: Vec<String> = team
                .map(|r| r.terms.into_iter().map(|t| t.name).collect())
                .unwrap_or_default();
            roles_def::check_terms(&ctx, roles, &terms)?;
        }
        if let Some(w) = def.harness.window_steps
            && (w == 0 || w > crate::limits::MAX_WINDOW_STEPS)
        {
            let span = ctx.find_key(0, "window_steps");
            return Err(ctx.err(
                span,
                Some("harness.window_steps"),
                format!("is {w}; use 1 to {}", crate::limits::MAX_WINDOW_STEPS),
            ));
        }
        if let Some(agent) = &def.harness.agent
            && let Err(message) =
                crate::limits::check_id("harness.agent", &crate::morpheus::roles::agent_id(agent))
        {
            let span = ctx.find_key(0, "agent");
            return Err(ctx.err(span, Some("harness.agent"), message));
        }
        let notify = match &def.notify {
            None => NotifyLevel::None,
            Some(n) => n
                .level
                .get_ref()
                .parse()
                .map_err(|e: String| ctx.err(Some(n.level.span()), Some("notify.level"), e))?,
        };
        let mut known = kind.agent_names();
        if let Some(roles) = &role_table {
            // `[agent.<name>]` may hold the options of an agent a role runs.
            let role_agents = kind.role_agent_names();
            known.extend(
                role_agents
                    .iter()
                    .copied()
                    .filter(|n| !known.contains(n))
                    .collect::<Vec<_>>(),
            );
            if let Some(agent) = &def.harness.agent
                && agent.contains('=')
            {
                let span = ctx.find_key(0, "agent");
                let pairs = crate::morpheus::roles::parse_agent_spec(agent, roles)
                    .map_err(|m| ctx.err(span.clone(), Some("harness.agent"), m))?;
                if let Some((role, a)) = pairs
                    .iter()
                    .find(|(_, a)| !role_agents.contains(&a.as_str()))
                {
                    let names = &role_agents;
                    return Err(ctx.err(
                        span,
                        Some("harness.agent"),
                        format!(
                            "role `{role}` has no agent `{a}`; use one of: {}",
                            names.join(", ")
                        ),
                    ));
                }
                known.push("__roles_spec__");
            }
        }
        let harness_defaults = HarnessDefaults {
            agent: def
                .harness
                .agent
                .clone()
                .filter(|a| !(a.contains('=') && known.contains(&"__roles_spec__"))),
            ..def.harness.clone()
        };
        let agents = agent_tables(&ctx, def.agent, &harness_defaults, &known, kind_name)?;
        let world = WorldFile {
            path: path.to_path_buf(),
            description: world_def.description.clone(),
            kind: kind_name.clone(),
            params,
            regimes,
            plan,
            reward,
            harness: def.harness,
            agents,
            notify,
            roles: role_table,
            default_reward: kind.default_reward(),
            text: text.to_string(),
        };
        check_agent_options(&ctx, kind, &world)?;
        Ok(world)
    }
}

mod file;
pub mod kinds;
mod roles_def;

pub use file::{HarnessDefaults, WorldFile, WorldParams};

/// The kind name of worlds written in Python, which the Python package registers.
pub const PYTHON_KIND: &str = "python";

/// The key under which `[world] entry_point` reaches the kind's parameters.
pub const ENTRY_POINT: &str = "entry_point";

/// The key under which a Python world's kind receives the names its regimes' conditions
/// set: only those return to their baseline at a shift (every other attribute of the env
/// is its own state).
pub const REGIME_ATTRIBUTES: &str = "regime_attributes";

/// For a `kind = "python"` world: its `[world.params]` with the entry point (when given)
/// under [`ENTRY_POINT`] and the regimes' condition names under [`REGIME_ATTRIBUTES`],
/// which is what a Python world's kind loads. `None` for other kinds, which take no
/// entry point.
fn python_params(
    ctx: &Ctx<'_>,
    world: &WorldDef,
    kind_name: &str,
    regimes: Option<&Spanned<Vec<Spanned<RegimeDef>>>>,
) -> Result<Option<toml::Table>, WorldFileError> {
    if kind_name != PYTHON_KIND {
        return match &world.entry_point {
            None => Ok(None),
            Some(entry) => Err(ctx.err(
                Some(entry.span()),
                Some("world.entry_point"),
                format!(
                    "`entry_point` is for worlds written in Python (kind = \"python\"); \
                     a `{kind_name}` world takes none: remove it"
                ),
            )),
        };
    }
    let mut table = world
        .params
        .as_ref()
        .map(|t| t.get_ref().clone())
        .unwrap_or_default();
    for key in [ENTRY_POINT, REGIME_ATTRIBUTES] {
        if let Some(params) = &world.params
            && table.contains_key(key)
        {
            let span = ctx.find_key(params.span().start, key);
            return Err(ctx.err(
                span,
                Some(&format!("world.params.{key}")),
                format!(
                    "`{key}` is perennial's own key, not a constructor argument: \
                     {} rename or remove it",
                    if key == ENTRY_POINT {
                        "the entry point belongs in `[world]`;"
                    } else {
                        "regimes name the attributes they set;"
                    }
                ),
            ));
        }
    }
    if let Some(entry) = &world.entry_point {
        table.insert(
            ENTRY_POINT.into(),
            toml::Value::String(entry.get_ref().clone()),
        );
    }
    let names: std::collections::BTreeSet<&String> = regimes
        .map(|r| r.get_ref().iter())
        .into_iter()
        .flatten()
        .flat_map(|r| r.get_ref().conditions.keys().map(Spanned::get_ref))
        .collect();
    table.insert(
        REGIME_ATTRIBUTES.into(),
        toml::Value::Array(
            names
                .into_iter()
                .map(|n| toml::Value::String(n.clone()))
                .collect(),
        ),
    );
    Ok(Some(table))
}

fn regimes(
    ctx: &Ctx<'_>,
    defs: Option<Spanned<Vec<Spanned<RegimeDef>>>>,
    parameters: &[ParamInfo],
) -> Result<Vec<Regime>, WorldFileError> {
    let Some(defs) = defs else {
        return Ok(vec![Regime::new("default", &[])]);
    };
    if defs.get_ref().is_empty() {
        return Err(ctx.err(
            Some(defs.span()),
            Some("regimes"),
            "the regime list is empty; define at least one [[regimes]] with a label, or omit the key for a stationary world",
        ));
    }
    if defs.get_ref().len() > crate::limits::MAX_REGIMES {
        return Err(ctx.err(
            Some(defs.span()),
            Some("regimes"),
            format!(
                "{} regimes; a world file may define at most {}",
                defs.get_ref().len(),
                crate::limits::MAX_REGIMES
            ),
        ));
    }
    let mut out: Vec<Regime> = Vec::new();
    // A set, not a scan of `out`: 80,000 regimes load in near-linear time.
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for def in defs.into_inner() {
        let def = def.into_inner();
        let label = def.label.get_ref();
        if label.is_empty()
            || label.chars().any(char::is_control)
            || label.len() > crate::limits::MAX_ID_BYTES
        {
            return Err(ctx.err(
                Some(def.label.span()),
                Some("regimes.label"),
                format!(
                    "a label must be non-empty, at most {} bytes, on one line and free of control characters",
                    crate::limits::MAX_ID_BYTES
                ),
            ));
        }
        if !seen.insert(label.clone()) {
            return Err(ctx.err(
                Some(def.label.span()),
                Some("regimes.label"),
                format!("label `{label}` is defined twice; give each regime its own label"),
            ));
        }
        let mut conditions = BTreeMap::new();
        for (name, value) in &def.conditions {
            let one: crate::regime::Conditions =
                [(name.get_ref().clone(), *value.get_ref())].into();
            validate_conditions(parameters, &one).map_err(|e| {
                let at = match e {
                    RegimeError::OutOfRange { .. } => value.span(),
                    _ => name.span(),
                };
                ctx.err(
                    Some(at),
                    Some(&format!("regimes.{label}.conditions.{}", name.get_ref())),
                    e.to_string(),
                )
            })?;
            conditions.insert(name.get_ref().clone(), *value.get_ref());
        }
        out.push(Regime {
            label: label.clone(),
            conditions,
        });
    }
    Ok(out)
}

/// The `[schedule]` table as a [`Plan`]: this checks which keys each plan takes and needs;
/// [`Scheduler::new`] checks their values, and its errors are mapped back to the table's
/// spans here.
fn plan(
    ctx: &Ctx<'_>,
    def: Spanned<ScheduleDef>,
    regimes: &[Regime],
) -> Result<Plan, WorldFileError> {
    let table_span = def.span();
    let def = def.into_inner();
    let need = |what: &str| {
        ctx.err(
            Some(table_span.clone()),
            Some(&format!("schedule.{what}")),
            format!("this plan needs `{what}`"),
        )
    };
    let labels = || -> Result<Vec<String>, WorldFileError> {
        let list = def.labels.as_ref().ok_or_else(|| need("labels"))?;
        Ok(list.iter().map(|l| l.get_ref().clone()).collect())
    };
    let plan_name = def.plan.get_ref().as_str();
    let unexpected = |present: bool, key: &str| -> Result<(), WorldFileError> {
        if present {
            let span = ctx.find_key(table_span.start, key);
            return Err(ctx.err(
                span,
                Some(&format!("schedule.{key}")),
                format!("the `{plan_name}` plan does not take `{key}`"),
            ));
        }
        Ok(())
    };
    let plan = match plan_name {
        "fixed" => {
            unexpected(def.labels.is_some(), "labels")?;
            unexpected(def.every.is_some(), "every")?;
            let shifts = def.shifts.as_ref().ok_or_else(|| need("shifts"))?;
            Plan::Fixed {
                shifts: shifts
                    .iter()
                    .map(|s| (s.get_ref().step, s.get_ref().label.get_ref().clone()))
                    .collect(),
            }
        }
        "cycle" => {
            unexpected(def.shifts.is_some(), "shifts")?;
            let every = def.every.as_ref().ok_or_else(|| need("every"))?;
            Plan::Cycle {
                labels: labels()?,
                every: *every.get_ref(),
            }
        }
        "stochastic" => {
            unexpected(def.shifts.is_some(), "shifts")?;
            unexpected(def.every.is_some(), "every")?;
            let min = def.min_dwell.as_ref().ok_or_else(|| need("min_dwell"))?;
            let mean = def.mean_dwell.as_ref().ok_or_else(|| need("mean_dwell"))?;
            Plan::Stochastic {
                labels: labels()?,
                weights: def
                    .weights
                    .as_ref()
                    .map(|w| w.get_ref().clone())
                    .unwrap_or_default(),
                min_dwell: *min.get_ref(),
                mean_dwell: *mean.get_ref(),
            }
        }
        "manual" => {
            unexpected(def.labels.is_some(), "labels")?;
            unexpected(def.every.is_some(), "every")?;
            unexpected(def.shifts.is_some(), "shifts")?;
            Plan::Manual
        }
        other => {
            return Err(ctx.err(
                Some(def.plan.span()),
                Some("schedule.plan"),
                format!("unknown plan `{other}`; use fixed, cycle, stochastic or manual"),
            ));
        }
    };
    match Scheduler::new(regimes.to_vec(), plan.clone(), 0) {
        Ok(_) => Ok(plan),
        Err(e) => Err(plan_error(ctx, &def, table_span, e)),
    }
}

/// A [`Scheduler::new`] error as a world-file error at the span of the field to blame.
fn plan_error(
    ctx: &Ctx<'_>,
    def: &ScheduleDef,
    table_span: Range<usize>,
    e: RegimeError,
) -> WorldFileError {
    let span = |s: Option<Range<usize>>| s.or(Some(table_span.clone()));
    match e {
        RegimeError::UnknownLabel { label, known } => {
            let in_labels = def.labels.iter().flatten().find(|l| *l.get_ref() == label);
            let in_shifts = def
                .shifts
                .iter()
                .flatten()
                .find(|s| *s.get_ref().label.get_ref() == label);
            let (at, field) = match (in_labels, in_shifts) {
                (Some(l), _) => (Some(l.span()), "schedule.labels"),
                (None, Some(s)) => (Some(s.get_ref().label.span()), "schedule.shifts.label"),
                (None, None) => (None, "schedule"),
            };
            ctx.err(
                span(at),
                Some(field),
                format!(
                    "the schedule names `{label}`, which no regime defines; defined labels: {}",
                    known.join(", ")
                ),
            )
        }
        RegimeError::PlanField {
            field,
            index,
            message,
        } => {
            let (at, name) = match field {
                "every" => (def.every.as_ref().map(|v| v.span()), "every"),
                "min_dwell" => (def.min_dwell.as_ref().map(|v| v.span()), "min_dwell"),
                "mean_dwell" => (def.mean_dwell.as_ref().map(|v| v.span()), "mean_dwell"),
                "weights" => (def.weights.as_ref().map(|v| v.span()), "weights"),
                "shifts" => (
                    index.and_then(|i| def.shifts.as_ref()?.get(i).map(|s| s.span())),
                    "shifts.step",
                ),
                _ => (None, field),
            };
            ctx.err(span(at), Some(&format!("schedule.{name}")), message)
        }
        other => ctx.err(span(None), Some("schedule"), other.to_string()),
    }
}

/// Checks that `[harness] agent` and every `[agent.<name>]` table name an agent of the kind.
fn agent_tables(
    ctx: &Ctx<'_>,
    tables: Option<Spanned<BTreeMap<Spanned<String>, Spanned<toml::Table>>>>,
    harness: &HarnessDefaults,
    known: &[&str],
    kind: &str,
) -> Result<BTreeMap<String, toml::Table>, WorldFileError> {
    let unknown = |name: &str| {
        format!(
            "the `{kind}` world has no agent `{name}`; use one of: {}",
            known.join(", ")
        )
    };
    if let Some(agent) = &harness.agent
        && !known.contains(&agent.as_str())
    {
        let span = ctx.find_key(0, "agent");
        return Err(ctx.err(span, Some("harness.agent"), unknown(agent)));
    }
    let mut out = BTreeMap::new();
    for (name, table) in tables.map(Spanned::into_inner).unwrap_or_default() {
        if !known.contains(&name.get_ref().as_str()) {
            return Err(ctx.err(
                Some(name.span()),
                Some(&format!("agent.{}", name.get_ref())),
                unknown(name.get_ref()),
            ));
        }
        out.insert(name.into_inner(), table.into_inner());
    }
    Ok(out)
}

/// Builds every agent the file has an `[agent.<name>]` table for on the file's world, so a
/// bad option is a load error naming its line and field (`agent.<name>.<option>`).
fn check_agent_options(
    ctx: &Ctx<'_>,
    kind: &dyn KindRules,
    world: &WorldFile,
) -> Result<(), WorldFileError> {
    let own = kind.agent_names();
    // A role's agent's options are checked when the roles agent is built.
    for (name, options) in world
        .agents
        .iter()
        .filter(|(n, _)| own.contains(&n.as_str()))
    {
        let Err(e) = kind.check_agent_options(world, name, options) else {
            continue;
        };
        let table = format!("agent.{name}");
        return Err(match e {
            AgentCheckError::Option { field, message } => ctx.err(
                ctx.find_agent_option(name, &field),
                Some(&format!("{table}.{field}")),
                message,
            ),
            AgentCheckError::Build { message } => {
                ctx.err(ctx.find_header(&table, true), Some(&table), message)
            }
            // The world was built when `[world.params]` was checked.
            AgentCheckError::Other(message) => {
                ctx.err(ctx.find_header(&table, true), Some(&table), message)
            }
        });
    }
    Ok(())
}

fn reward(
    ctx: &Ctx<'_>,
    def: Spanned<RewardDef>,
    signals: &[&str],
) -> Result<RewardSpec, WorldFileError> {
    let span = def.span();
    let terms = def.into_inner().terms;
    let spec = RewardSpec {
        terms: terms.iter().map(|t| t.get_ref().clone()).collect(),
    };
    spec.bind(signals).map_err(|e| {
        let at = match &e {
            crate::reward::RewardError::UnknownSignal { term, .. }
            | crate::reward::RewardError::DuplicateTerm(term)
            | crate::reward::RewardError::BadWeight(term) => terms
                .iter()
                .find(|t| &t.get_ref().name == term)
                .map(|t| t.span()),
        };
        let message = if signals.is_empty() {
            "this world exposes no reward signals; remove the [reward] section".to_string()
        } else {
            e.to_string()
        };
        ctx.err(at.or(Some(span.clone())), Some("reward.terms"), message)
    })?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WorldFile, WorldFileError> {
        WorldFile::parse(text, Path::new("w.toml"))
    }

    const BASE: &str = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n";

    #[test]
    fn a_cycle_file_loads_with_its_regimes_and_plan() {
        let w = parse(&format!(
            "{BASE}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"b\"]\nevery = 50\n"
        ))
        .unwrap();
        assert_eq!(w.regimes.len(), 2);
        assert_eq!(w.plan, Plan::cycle(&["a", "b"], 50));
    }

    /// The scheduler alone judges the plan's values; the file maps its verdict to the line
    /// and field at fault.
    #[test]
    fn plan_values_the_scheduler_refuses_name_their_line_and_field() {
        for (schedule, line, field) in [
            (
                "plan = \"cycle\"\nlabels = [\"a\"]\nevery = 0",
                14,
                "schedule.every",
            ),
            (
                "plan = \"stochastic\"\nlabels = [\"a\", \"b\"]\nmin_dwell = 5\nmean_dwell = inf",
                15,
                "schedule.mean_dwell",
            ),
            (
                "plan = \"stochastic\"\nlabels = [\"a\", \"b\"]\nmin_dwell = 0\nmean_dwell = 9.0",
                14,
                "schedule.min_dwell",
            ),
            (
                "plan = \"fixed\"\nshifts = [{ step = 9, label = \"b\" },\n  { step = 9, label = \"a\" }]",
                14,
                "schedule.shifts.step",
            ),
            (
                "plan = \"cycle\"\nlabels = [\"a\", \"z\"]\nevery = 5",
                13,
                "schedule.labels",
            ),
        ] {
            let err = parse(&format!("{BASE}\n[schedule]\n{schedule}\n")).unwrap_err();
            assert_eq!(
                (err.line, err.field.as_deref()),
                (Some(line), Some(field)),
                "{err}"
            );
        }
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let err = parse("[world]\nkind = \"cartpole\"\nx = = 3\n").unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_line() {
        let err = parse(&format!("{BASE}\n[harness]\nstepz = 4\n")).unwrap_err();
        assert_eq!(err.line, Some(12), "{err}");
        assert!(err.to_string().contains("stepz"), "{err}");
    }

    #[test]
    fn unknown_world_params_point_at_their_key() {
        let err =
            parse("[world]\nkind = \"cartpole\"\n[world.params]\ngravity = 9.8\nmasscar = 2.0\n")
                .unwrap_err();
        assert_eq!(err.line, Some(5), "{err}");
        assert_eq!(err.field.as_deref(), Some("world.params.masscar"));
    }

    #[test]
    fn out_of_range_params_and_conditions_are_rejected() {
        let err =
            parse("[world]\nkind = \"cartpole\"\n[world.params]\nmasscart = 0.0\n").unwrap_err();
        assert_eq!(err.line, Some(4), "{err}");
        let err = parse(&BASE.replace("gravity = 12.0", "gravity = -3.0")).unwrap_err();
        assert_eq!(err.line, Some(9), "{err}");
        assert!(err.message.contains("out of range"), "{err}");
    }

    #[test]
    fn a_fraction_for_an_integer_parameter_is_rejected_at_load_not_mid_run() {
        let err = parse(&BASE.replace("gravity = 12.0", "max_episode_steps = 2.5")).unwrap_err();
        assert_eq!(err.line, Some(9), "{err}");
        assert!(err.message.contains("max_episode_steps"), "{err}");
    }

    #[test]
    fn schedules_naming_undefined_labels_are_rejected() {
        let err = parse(&format!(
            "{BASE}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"c\"]\nevery = 5\n"
        ))
        .unwrap_err();
        assert_eq!(err.line, Some(13), "{err}");
        assert!(err.message.contains("`c`"), "{err}");
    }

    #[test]
    fn empty_regime_lists_and_zero_periods_are_rejected() {
        let err = parse("regimes = []\n[world]\nkind = \"cartpole\"\n").unwrap_err();
        assert_eq!(err.line, Some(1), "{err}");
        let err = parse(&format!(
            "{BASE}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\"]\nevery = 0\n"
        ))
        .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("schedule.every"), "{err}");
    }

    #[test]
    fn unknown_kind_lists_the_known_ones() {
        let err = parse("[world]\nkind = \"pendulum\"\n").unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.message.contains("cartpole"), "{err}");
    }
}
