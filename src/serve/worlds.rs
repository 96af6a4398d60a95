//! The worlds a server serves, by id: the shipped ones and the files its operator names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::ServeError;
use crate::env::Env;
use crate::morpheus::roles::{EnterpriseEnv, EnterpriseParams, RoleTable};
use crate::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
use crate::regime::Shiftable;
use crate::registry::Registry;
use crate::seed::{self, Stream};
use crate::session::Session;
use crate::trace::RunIdentity;
use crate::world_file::TomlFile;
use crate::world_file::WorldFile;

/// The shipped enterprise worlds, served under these ids without a `--worlds` flag.
const SHIPPED: &[(&str, &str)] = &[
    ("warehouse", include_str!("../../worlds/warehouse.toml")),
    ("logistics", include_str!("../../worlds/logistics.toml")),
];

/// The longest world id; ids are also short enough to quote whole in a message.
const MAX_ID: usize = 40;

/// One served world: its id, its file and its layout.
#[derive(Debug)]
pub(crate) struct ServedWorld {
    /// The id clients name.
    pub(crate) id: String,
    /// The loaded world file.
    pub(crate) file: WorldFile,
    /// The enterprise world's layout and parameters.
    pub(crate) config: MorpheusConfig,
    /// Its roles, when the file has a `[roles]` table (`kind = "enterprise"`).
    pub(crate) roles: Option<RoleTable>,
}

impl ServedWorld {
    /// A session of this world with run seed `seed`, not started: started, its world is the
    /// one `perennial run --seed SEED` builds (reset with the run's first world seed, the
    /// scheduler seeded from the run seed), so a seed means the same world everywhere.
    pub(crate) fn session(&self, seed: u64) -> Result<Session<Morpheus>, String> {
        let reward = self.file.reward_spec().unwrap_or_else(default_reward_spec);
        let world = Morpheus::new(self.config.clone(), reward).map_err(|e| e.to_string())?;
        self.around(world, seed)
    }

    /// As [`ServedWorld::session`], of a world with roles: the world `perennial run`
    /// builds from the same file and seed.
    pub(crate) fn roles_session(&self, seed: u64) -> Result<Session<EnterpriseEnv>, String> {
        let reward = self.file.reward_spec().unwrap_or_else(default_reward_spec);
        let roles = self.roles.clone().ok_or("the world has no roles")?;
        let world = EnterpriseEnv::new(self.config.clone(), reward, roles)?;
        self.around(world, seed)
    }

    /// A session of `world` with this file's schedule and an identity for run seed `seed`.
    fn around<E: Env + Shiftable>(&self, world: E, seed: u64) -> Result<Session<E>, String> {
        let scheduler = self
            .file
            .scheduler(seed::derive(seed, Stream::Scheduler, 0))
            .map_err(|e| e.to_string())?;
        let identity = RunIdentity {
            run_id: format!("{}-serve-seed{seed}", self.id),
            seed,
            algorithm_id: "serve".into(),
            task: self.config.task.clone(),
            notify: self.file.notify,
        };
        Ok(Session::new(world, scheduler, identity))
    }
}

/// The served worlds by id. Clients name ids; nothing a client sends is ever read as a
/// path, so `/etc/passwd` or `../x.toml` is an unknown id like any other.
#[derive(Clone, Debug)]
pub struct Worlds {
    by_id: Arc<BTreeMap<String, Arc<ServedWorld>>>,
    default_id: String,
}

impl Worlds {
    /// The shipped worlds (`warehouse`, `logistics`) and one per `extra` file: `FILE` is
    /// served under its file stem, `ID=FILE` under `ID`. Every file is read now; the
    /// server reads no file afterwards.
    ///
    /// # Errors
    ///
    /// A file cannot be read or is not a valid enterprise world file, an id is not
    /// `[A-Za-z0-9_-]`, 1 to 40 characters, or two worlds share an id.
    pub fn load(extra: &[String]) -> Result<Self, ServeError> {
        let registry = Registry::shared_builtin();
        let mut by_id = BTreeMap::new();
        for (id, text) in SHIPPED {
            let shown = Path::new("worlds").join(format!("{id}.toml"));
            let file = WorldFile::parse_with(text, &shown, registry)
                .map_err(|e| ServeError::world(&shown, e.to_string()))?;
            insert(&mut by_id, id, file, &shown)?;
        }
        for spec in extra {
            let (id, path) = match spec.split_once('=') {
                Some((id, path)) => (id.to_string(), PathBuf::from(path)),
                None => {
                    let path = PathBuf::from(spec);
                    let stem = path
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .unwrap_or_default()
                        .to_string();
                    (stem, path)
                }
            };
            let file = WorldFile::load_with(&path, registry)
                .map_err(|e| ServeError::world(&path, e.to_string()))?;
            insert(&mut by_id, &id, file, &path)?;
        }
        Ok(Worlds {
            by_id: Arc::new(by_id),
            default_id: SHIPPED[0].0.to_string(),
        })
    }

    /// The world served under `id`, or a message naming the served ids.
    pub(crate) fn get(&self, id: &str) -> Result<&Arc<ServedWorld>, String> {
        self.by_id.get(id).ok_or_else(|| {
            format!(
                "no world is served as `{}`; worlds are named by id, never by path: use one of {}",
                quote(id),
                self.ids().join(", ")
            )
        })
    }

    /// The world a reset that names none gets (`warehouse`).
    pub(crate) fn default_world(&self) -> &Arc<ServedWorld> {
        // `load` always inserts the shipped worlds, the default among them.
        match self.by_id.get(&self.default_id) {
            Some(w) => w,
            None => unreachable!("the shipped worlds are always served"),
        }
    }

    /// The served ids, sorted.
    pub fn ids(&self) -> Vec<&str> {
        self.by_id.keys().map(String::as_str).collect()
    }
}

fn insert(
    by_id: &mut BTreeMap<String, Arc<ServedWorld>>,
    id: &str,
    file: WorldFile,
    path: &Path,
) -> Result<(), ServeError> {
    if !valid_id(id) {
        return Err(ServeError::world(
            path,
            format!(
                "`{}` is not a world id; name it ID=FILE with ID of 1 to {MAX_ID} letters, digits, `-` or `_`",
                quote(id)
            ),
        ));
    }
    let (config, roles) = if let Some(config) = file.params::<MorpheusConfig>() {
        (config.clone(), None)
    } else if let Some(p) = file.params::<EnterpriseParams>() {
        (p.config.clone(), Some(p.roles.clone()))
    } else {
        return Err(ServeError::world(
            path,
            format!(
                "kind = \"{}\" has no tools; `perennial serve` serves enterprise worlds (kind = \"morpheus\", or \"enterprise\" with roles)",
                file.kind()
            ),
        ));
    };
    if by_id.contains_key(id) {
        return Err(ServeError::world(
            path,
            format!("the id `{id}` is already served; give this file another with ID=FILE"),
        ));
    }
    let world = ServedWorld {
        id: id.to_string(),
        file,
        config,
        roles,
    };
    by_id.insert(id.to_string(), Arc::new(world));
    Ok(())
}

fn valid_id(id: &str) -> bool {
    (1..=MAX_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// At most 40 characters of what a client sent, for a message.
pub(crate) fn quote(s: &str) -> String {
    let mut out: String = s.chars().take(MAX_ID).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out.replace(|c: char| c.is_control(), "?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_unknown_ids_and_nothing_is_read() {
        let worlds = Worlds::load(&[]).unwrap();
        for bad in [
            "/etc/passwd",
            "../../x.toml",
            "worlds/warehouse.toml",
            "file:///etc/passwd",
            "warehouse.toml",
            "",
        ] {
            let e = worlds.get(bad).unwrap_err();
            assert!(e.contains("never by path"), "{e}");
        }
        assert_eq!(worlds.ids(), ["logistics", "warehouse"]);
    }

    #[test]
    fn a_seed_builds_the_world_perennial_run_builds() {
        let worlds = Worlds::load(&[]).unwrap();
        let w = worlds.get("warehouse").unwrap();
        // Hour 0 is the same stock for every seed; a day of demand tells seeds apart.
        let start = |seed| {
            let mut s = w.session(seed).unwrap();
            s.start().unwrap();
            for _ in 0..24 {
                s.step(&0).unwrap();
            }
            s
        };
        let (a, b, c) = (start(3), start(3), start(4));
        assert_eq!(a.observation(), b.observation());
        assert_ne!(a.observation(), c.observation());
    }
}
