//! The built-in registry: CartPole, the enterprise world (`morpheus`) and its roles
//! variant (`enterprise`), each with its agents; and the world-file loader over it.

use std::path::Path;
use std::sync::OnceLock;

use crate::agents;
use crate::cartpole::{CartPole, CartPoleParams};
use crate::morpheus;
use crate::registry::{KindFn, MorpheusKind, Registry};
use crate::world_file::kinds::Kinds;
use crate::world_file::{TomlFile, WorldFile, WorldFileError};

impl Registry {
    /// CartPole (`cartpole`) and the enterprise world (`morpheus`), with their agents.
    pub fn builtin() -> Self {
        Registry::empty()
            .world_with_agents(
                KindFn::new("cartpole", |params: &CartPoleParams| {
                    Ok(CartPole::new(params.clone()))
                }),
                agents::for_cartpole(),
            )
            .world_with_agents(MorpheusKind, agents::for_morpheus())
            .world_with_agents(
                morpheus::roles::EnterpriseKind,
                morpheus::roles::for_enterprise(),
            )
    }

    /// The built-in registry, built once.
    pub fn shared_builtin() -> &'static Registry {
        static BUILTIN: OnceLock<Registry> = OnceLock::new();
        BUILTIN.get_or_init(Registry::builtin)
    }
}

/// World files load through [`TomlFile`], with the built-in registry's world kinds as
/// their default names.
///
/// ```
/// use perennial::world_file::{TomlFile, WorldFile};
/// use std::path::Path;
///
/// let text = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"moon\"\nconditions = { gravity = 1.6 }\n";
/// let world = WorldFile::parse(text, Path::new("moon.toml")).unwrap();
/// assert_eq!(world.regimes[0].conditions["gravity"], 1.6);
///
/// let bad = text.replace("gravity", "gravty");
/// let err = WorldFile::parse(&bad, Path::new("moon.toml")).unwrap_err();
/// assert_eq!(err.line, Some(6));
/// assert!(err.to_string().starts_with("moon.toml:6: field `regimes.moon.conditions.gravty`"));
/// ```
impl TomlFile for WorldFile {
    type Names = dyn Kinds;

    fn builtin() -> &'static dyn Kinds {
        Registry::shared_builtin()
    }

    fn parse_with(text: &str, path: &Path, names: &dyn Kinds) -> Result<Self, WorldFileError> {
        WorldFile::parse_kinds(text, path, names)
    }
}
