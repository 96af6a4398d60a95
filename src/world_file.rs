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
//! `[notify] level` is the run's [`NotifyLevel`](crate::regime::NotifyLevel) (default `none`; `perennial run --notify`
//! overrides it): see [`crate::regime::Notification`] for what each level tells the agent.
//!
//! Everything is checked at load, never mid-run: unknown keys, wrong types, unknown or
//! out-of-range parameters, an empty regime list, duplicate labels, schedules naming
//! undefined labels, reward terms reading unknown signals, agent options an agent refuses.
//! Each error names the file, the line and the field.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::regime::{ParamInfo, Plan, Regime, RegimeError, Scheduler, validate_conditions};
use crate::reward::{RewardSpec, Term};
use kinds::{AgentCheckError, KindRules, Kinds};

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
    notify: Option<Spanned<toml::Value>>,
    roles: Option<Spanned<toml::Table>>,
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

impl WorldFile {
    /// Validates world-file text whose kind is looked up in `registry`: what
    /// [`TomlFile::parse_with`] does for a world file.
    pub(crate) fn parse_kinds(
        text: &str,
        path: &Path,
        registry: &dyn Kinds,
    ) -> Result<Self, WorldFileError> {
        let ctx = Ctx { path, text };
        let def: FileDef = ctx.parse("")?;
        // Read first, so its errors come where serde's did before roles had levels.
        let single_notify = match def.roles {
            None => Some(notify_def::single(&ctx)?),
            Some(_) => None,
        };
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
        let mut role_table = match &def.roles {
            None => None,
            Some(r) => Some(roles_def::parse(&ctx, r, kind, kind_name)?),
        };
        let notify = match role_table.as_mut() {
            None => single_notify.unwrap_or_default(),
            Some(roles) => {
                let (level, per_role) = notify_def::with_roles(&ctx, def.notify.as_ref(), roles)?;
                roles.notify = per_role;
                level
            }
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

mod ctx;
mod file;
pub mod kinds;
mod notify_def;
mod roles_def;

pub(crate) use ctx::{Ctx, read_text};
pub use ctx::{TomlFile, WorldFileError};
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
mod tests;
