//! A roles run's episode as one trajectory per role.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::model::{Step, Trajectory, trajectory};
use crate::world_file::TomlFile;

/// An episode's steps as read from a roles run's trace, before they are split by role.
pub(super) struct RoleSteps<'a> {
    /// The roles and their action counts, when the run's world file was found.
    pub(super) roles: Option<&'a [(String, usize)]>,
    /// The steps, with the team reward and the joint action.
    pub(super) steps: &'a [Step],
    /// Per step, each role's own reward.
    pub(super) role_rewards: &'a [BTreeMap<String, f64>],
    /// Each reward term summed over the episode.
    pub(super) signals: &'a BTreeMap<String, f64>,
}

/// Each role of the run beside `trace` and its number of actions, in role order, from the
/// world file the run's manifest records; `None` without a manifest or a roles world.
pub(super) fn role_actions(trace: &Path) -> Option<Vec<(String, usize)>> {
    let record = crate::trace::Manifest::beside(trace)?.world_file?;
    let world = crate::world_file::WorldFile::parse(&record.text, &record.path).ok()?;
    let env = crate::registry::build(&world, crate::registry::Registry::shared_builtin()).ok()?;
    let roles = env
        .as_ref()
        .world_any()
        .downcast_ref::<crate::morpheus::roles::EnterpriseEnv>()?;
    Some(
        roles
            .roles()
            .roles
            .iter()
            .zip(roles.layouts())
            .map(|(r, l)| (r.name.clone(), l.actions))
            .collect(),
    )
}

/// The index of each role in the joint action `joint` (the first role most significant,
/// as the enterprise world combines them), `None` when it is not such an index.
fn split_joint(joint: &Value, roles: &[(String, usize)]) -> Option<Vec<usize>> {
    let mut j = usize::try_from(joint.as_u64()?).ok()?;
    let mut out = vec![0; roles.len()];
    for (slot, (_, n)) in out.iter_mut().zip(roles).rev() {
        *slot = j % (*n).max(1);
        j /= (*n).max(1);
    }
    (j == 0).then_some(out)
}

/// One trajectory per role of a roles run, in role order: each Step's reward the role's
/// own, its observation and action the role's own as the trace recorded them (`obs` =
/// `{role: [floats]}`, `action` = `{role: index}`). A trace written before those columns
/// were per role gives the full observation, and the action split from the joint one by
/// the action counts of the world file the run's manifest records (the joint action, with
/// `joint_action` in the Step's info, when no manifest is found). The Step's info keeps
/// the team reward as `team_reward`.
pub(super) fn role_trajectories(
    p: RoleSteps<'_>,
    uid: &str,
    task: &Value,
    metadata: &BTreeMap<String, Value>,
) -> Vec<Trajectory> {
    let names: Vec<String> = match p.roles {
        Some(roles) => roles.iter().map(|(n, _)| n.clone()).collect(),
        None => p
            .role_rewards
            .iter()
            .flat_map(|m| m.keys())
            .fold(Vec::new(), |mut v, k| {
                if !v.contains(k) {
                    v.push(k.clone());
                }
                v
            }),
    };
    names
        .iter()
        .enumerate()
        .map(|(r, name)| {
            let steps = p
                .steps
                .iter()
                .zip(p.role_rewards)
                .map(|(s, own)| {
                    let mut s = s.clone();
                    s.metadata
                        .insert("team_reward".into(), Value::from(s.reward));
                    s.reward = own.get(name).copied().unwrap_or(0.0);
                    if let Some(view) = s.input.get(name.as_str()) {
                        s.input = view.clone();
                    }
                    if let Some(index) = s.action.get(name.as_str()) {
                        s.action = index.clone();
                        return s;
                    }
                    match p.roles.and_then(|roles| split_joint(&s.action, roles)) {
                        Some(split) => s.action = Value::from(split[r]),
                        None => {
                            s.metadata.insert("joint_action".into(), Value::from(true));
                        }
                    }
                    s
                })
                .collect();
            let mut metadata = metadata.clone();
            metadata.insert("role".into(), Value::from(name.as_str()));
            trajectory(
                format!("{uid}:{name}"),
                name.clone(),
                task,
                steps,
                p.signals.clone(),
                metadata,
            )
        })
        .collect()
}
