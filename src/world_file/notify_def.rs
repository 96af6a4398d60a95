//! A world file's `[notify]` table: the run's level, and in a world with roles a level per
//! role and the scope of a `delta`.
//!
//! Serde reads the table of a world without roles (`level` only, unknown keys refused as
//! ever). With roles, its keys are the roles' names besides `level` and `delta`, which a
//! struct cannot list ahead, so the table is read here by hand, each error placed on its
//! line and field.

use serde::Deserialize;
use toml::Spanned;

use super::{Ctx, WorldFileError};
use crate::morpheus::roles::{DeltaScope, RoleNotify, RoleTable};
use crate::regime::NotifyLevel;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifyDef {
    level: Spanned<String>,
}

/// The file read for its `[notify]` table alone (other tables are read elsewhere).
#[derive(Deserialize)]
struct NotifyOnly {
    notify: Option<NotifyDef>,
}

/// The run's level of a file without roles: `[notify] level`, `none` without the table.
pub(super) fn single(ctx: &Ctx<'_>) -> Result<NotifyLevel, WorldFileError> {
    let def: NotifyOnly = ctx.parse("")?;
    let Some(n) = def.notify else {
        return Ok(NotifyLevel::None);
    };
    n.level
        .get_ref()
        .parse()
        .map_err(|e: String| ctx.err(Some(n.level.span()), Some("notify.level"), e))
}

/// The run's level and the roles' part of the `[notify]` table `table` of a file whose
/// roles are `roles`: `level` (default `none`), `delta = "all" | "relevant"`, and
/// `<role> = "<level>"` for any of its roles. The run's level is the highest given.
pub(super) fn with_roles(
    ctx: &Ctx<'_>,
    table: Option<&Spanned<toml::Value>>,
    roles: &RoleTable,
) -> Result<(NotifyLevel, RoleNotify), WorldFileError> {
    let mut notify = RoleNotify::default();
    let Some(table) = table else {
        return Ok((NotifyLevel::None, notify));
    };
    let header = ctx.find_header("notify", false);
    let at = |key: &str| {
        header
            .as_ref()
            .and_then(|h| ctx.find_key_in_table(h.end, key))
            .or_else(|| header.clone())
            .or_else(|| Some(table.span()))
    };
    let toml::Value::Table(t) = table.get_ref() else {
        return Err(ctx.err(
            Some(table.span()),
            Some("notify"),
            "is not a table; write `[notify]` with `level = \"...\"`",
        ));
    };
    let text = |key: &str, v: &toml::Value| {
        v.as_str().map(str::to_string).ok_or_else(|| {
            let field = format!("notify.{key}");
            ctx.err(at(key), Some(&field), format!("is {v}, not a string"))
        })
    };
    let mut level = NotifyLevel::None;
    for (key, v) in t {
        let field = format!("notify.{key}");
        match key.as_str() {
            "level" => {
                level = text(key, v)?
                    .parse()
                    .map_err(|e: String| ctx.err(at(key), Some(&field), e))?;
            }
            "delta" => {
                notify.delta = match text(key, v)?.as_str() {
                    "all" => DeltaScope::All,
                    "relevant" => DeltaScope::Relevant,
                    other => {
                        return Err(ctx.err(
                            at(key),
                            Some(&field),
                            format!(
                                "unknown delta scope `{other}`; use \"all\" (every parameter that changed) or \"relevant\" (those that touch the role's operations)"
                            ),
                        ));
                    }
                };
            }
            role if roles.position(role).is_some() => {
                let l = text(key, v)?
                    .parse()
                    .map_err(|e: String| ctx.err(at(key), Some(&field), e))?;
                notify.levels.insert(role.to_string(), l);
            }
            other => {
                return Err(ctx.err(
                    at(other),
                    Some(&field),
                    format!(
                        "unknown role `{other}`; `[notify]` takes `level`, `delta` and a level per role of this world: {}",
                        roles.names().join(", ")
                    ),
                ));
            }
        }
    }
    if !notify.levels.is_empty() {
        for name in roles.names() {
            notify.levels.entry(name.to_string()).or_insert(level);
        }
    }
    Ok((notify.run_level(level), notify))
}
