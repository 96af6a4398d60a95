//! A world file's `[roles]` table: read, checked, and its errors placed on their lines.

use toml::Spanned;

use super::kinds::KindRules;
use super::{Ctx, WorldFileError};
use crate::morpheus::roles::{Observe, OpKind, Role, RoleError, RoleTable};

/// Where role `role`'s `field` is written: its key in `[roles.<role>]`, else that header,
/// else the `[roles]` table.
fn span_of(
    ctx: &Ctx<'_>,
    all: &Spanned<toml::Table>,
    role: Option<&str>,
    field: &str,
) -> std::ops::Range<usize> {
    let header = role.and_then(|r| ctx.find_header(&format!("roles.{r}"), false));
    if let Some(h) = &header
        && let Some(key) = ctx.find_key_in_table(h.end, field)
    {
        return key;
    }
    if let Some(h) = header {
        return h;
    }
    if let Some(r) = role
        && let Some(key) = ctx.find_key(all.span().start, r)
    {
        return key;
    }
    ctx.find_header("roles", false)
        .or_else(|| ctx.find_key_in_table(all.span().start, field))
        .unwrap_or_else(|| all.span())
}

fn error(ctx: &Ctx<'_>, all: &Spanned<toml::Table>, e: RoleError) -> WorldFileError {
    let span = span_of(ctx, all, e.role.as_deref(), e.field);
    let field = match &e.role {
        Some(r) => format!("roles.{r}.{}", e.field),
        None if e.field == "roles" => "roles".to_string(),
        None => format!("roles.{}", e.field),
    };
    ctx.err(Some(span), Some(&field), e.message)
}

/// The `[roles]` table of a file of kind `kind`, its roles in file order, checked but for
/// the reward terms ([`check_terms`]).
pub(super) fn parse(
    ctx: &Ctx<'_>,
    all: &Spanned<toml::Table>,
    kind: &dyn KindRules,
    kind_name: &str,
) -> Result<RoleTable, WorldFileError> {
    let operations = kind.operations();
    let fail = |role: Option<&str>, field: &'static str, message: String| {
        error(
            ctx,
            all,
            RoleError {
                role: role.map(str::to_string),
                field,
                message,
            },
        )
    };
    if operations.is_empty() {
        return Err(fail(
            None,
            "roles",
            format!(
                "world kind `{kind_name}` has no roles; a `[roles]` table needs kind = \"enterprise\""
            ),
        ));
    }
    let mut alpha = 1.0;
    let mut roles: Vec<(usize, Role)> = Vec::new();
    for (name, value) in all.get_ref() {
        if name == "alpha" {
            alpha = match value {
                toml::Value::Float(f) => *f,
                toml::Value::Integer(i) => *i as f64,
                _ => {
                    return Err(fail(
                        None,
                        "alpha",
                        "is not a number; use a weight from 0 to 1".into(),
                    ));
                }
            };
            continue;
        }
        let role = Some(name.as_str());
        let toml::Value::Table(t) = value else {
            return Err(fail(
                role,
                "ops",
                format!("role `{name}` is not a table; write `[roles.{name}]` with `ops = [...]`"),
            ));
        };
        let mut def = Role {
            name: name.clone(),
            ops: Vec::new(),
            observe: Observe::Own,
            terms: Vec::new(),
        };
        for (key, v) in t {
            match key.as_str() {
                "ops" => {
                    let Some(list) = v.as_array() else {
                        return Err(fail(role, "ops", "is not a list of operation names".into()));
                    };
                    for item in list {
                        let Some(op) = item.as_str() else {
                            return Err(fail(
                                role,
                                "ops",
                                "is not a list of operation names".into(),
                            ));
                        };
                        if op == "noop" {
                            continue;
                        }
                        match OpKind::parse(op).filter(|_| operations.contains(&op)) {
                            Some(k) if !def.ops.contains(&k) => def.ops.push(k),
                            Some(_) => {}
                            None => {
                                return Err(fail(
                                    role,
                                    "ops",
                                    format!(
                                        "unknown operation `{op}`; use one of: {}",
                                        operations.join(", ")
                                    ),
                                ));
                            }
                        }
                    }
                }
                "observe" => {
                    def.observe = match v.as_str() {
                        Some("own") => Observe::Own,
                        Some("full") => Observe::Full,
                        _ => {
                            return Err(fail(
                                role,
                                "observe",
                                format!("is {v}; use \"own\" or \"full\""),
                            ));
                        }
                    };
                }
                "terms" => {
                    let names: Option<Vec<String>> = v
                        .as_array()
                        .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect());
                    def.terms = names.ok_or_else(|| {
                        fail(role, "terms", "is not a list of reward term names".into())
                    })?;
                }
                other => {
                    let at = ctx
                        .find_header(&format!("roles.{name}"), false)
                        .and_then(|h| ctx.find_key_in_table(h.end, other))
                        .unwrap_or_else(|| span_of(ctx, all, role, "ops"));
                    return Err(ctx.err(
                        Some(at),
                        Some(&format!("roles.{name}.{other}")),
                        "unknown field; a role has `ops`, `observe` and `terms`",
                    ));
                }
            }
        }
        def.ops.sort_unstable();
        let at = ctx
            .find_header(&format!("roles.{name}"), false)
            .map_or(usize::MAX, |h| h.start);
        roles.push((at, def));
    }
    // Roles apply in file order.
    roles.sort_by_key(|(at, _)| *at);
    let table = RoleTable {
        roles: roles.into_iter().map(|(_, r)| r).collect(),
        alpha,
        notify: Default::default(),
    };
    table.check(None).map_err(|e| error(ctx, all, e))?;
    Ok(table)
}

/// Checks that the roles' `terms` partition the team reward's `terms`.
pub(super) fn check_terms(
    ctx: &Ctx<'_>,
    roles: &RoleTable,
    terms: &[String],
) -> Result<(), WorldFileError> {
    let Some(all) = ctx.find_header("roles", false) else {
        return roles
            .check(Some(terms))
            .map_err(|e| ctx.err(None, Some("roles"), e.to_string()));
    };
    roles.check(Some(terms)).map_err(|e| {
        let span = e
            .role
            .as_deref()
            .and_then(|r| ctx.find_header(&format!("roles.{r}"), false))
            .and_then(|h| ctx.find_key_in_table(h.end, e.field))
            .unwrap_or(all);
        let field = match &e.role {
            Some(r) => format!("roles.{r}.{}", e.field),
            None => "roles".to_string(),
        };
        ctx.err(Some(span), Some(&field), e.message)
    })
}
