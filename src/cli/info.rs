//! `perennial worlds` and `perennial check`.

use std::path::{Path, PathBuf};

use super::Failure;
use crate::env::CheckOptions;
use crate::regime::Plan;
use crate::registry::Registry;
use crate::world_file::TomlFile;
use crate::world_file::WorldFile;

/// Finds a shipped file from the working directory or, failing that, from the crate root.
pub(super) fn locate(path: &Path) -> PathBuf {
    if path.exists() || path.is_absolute() {
        return path.to_path_buf();
    }
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if shipped.exists() {
        shipped
    } else {
        path.to_path_buf()
    }
}

/// Loads the file and builds its world and every agent it names (the `[harness]` agent and
/// each `[agent.<name>]` table), so a bad option fails here and not at run time.
pub(super) fn check(registry: &Registry, path: &Path) -> Result<(), Failure> {
    let world = WorldFile::load_with(path, registry).map_err(Failure::input)?;
    let kind = registry
        .kind(world.kind())
        .ok_or_else(|| Failure::input(format!("unknown world kind `{}`", world.kind())))?;
    let own = kind.agent_names();
    // In a roles world, `[agent.<name>]` may hold a role's agent's options: the roles
    // agent (`ROLE=AGENT,...`) builds it.
    let mut named: Vec<&str> = world
        .agents
        .keys()
        .map(String::as_str)
        .filter(|n| own.contains(n))
        .collect();
    if let Some(agent) = &world.harness.agent {
        named.push(agent);
    }
    for agent in named {
        kind.check_agent(&world, agent, &world.agent_options(agent), 0)
            .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
    }
    out!(
        "{}: ok ({} world, {} regimes: {}; {} schedule; agents: {})",
        path.display(),
        world.kind(),
        world.regimes.len(),
        world
            .regimes
            .iter()
            .map(|r| r.label.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        plan_name(&world.plan),
        kind.agent_names().join(", ")
    );
    let report =
        crate::env::check(|| kind.build_env(&world), &CheckOptions::default()).map_err(|e| {
            Failure::input(format!(
                "{}: the world breaks the Env contract: {e}",
                path.display()
            ))
        })?;
    let rules = |rules: &mut dyn Iterator<Item = String>| rules.collect::<Vec<_>>().join(", ");
    let skipped = if report.skipped.is_empty() {
        String::new()
    } else {
        let mut names = report.skipped.iter().map(|(r, why)| format!("{r} ({why})"));
        format!("; not exercised: {}", rules(&mut names))
    };
    out!(
        "{}: contract kept: {}{skipped}",
        path.display(),
        rules(&mut report.passed.iter().map(ToString::to_string))
    );
    Ok(())
}

fn plan_name(plan: &Plan) -> &'static str {
    match plan {
        Plan::Fixed { .. } => "fixed",
        Plan::Cycle { .. } => "cycle",
        Plan::Stochastic { .. } => "stochastic",
        Plan::Manual => "manual",
    }
}

pub(super) fn worlds(registry: &Registry) -> Result<(), Failure> {
    let dir = locate(Path::new("worlds"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| Failure::input(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match WorldFile::load_with(&path, registry) {
            Ok(w) => out!(
                "{name:<24} {:<9} {:>2} regimes  {}",
                w.kind(),
                w.regimes.len(),
                w.description
            ),
            Err(e) => out!("{name:<24} invalid: {e}"),
        }
    }
    Ok(())
}
