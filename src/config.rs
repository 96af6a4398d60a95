//! The typed TOML tables shared by world files, sweep files and agents' options: reading a
//! table as a typed struct and naming the key to blame when it does not fit.

use serde::de::DeserializeOwned;

/// The field a serde error message names between backticks (`unknown field `x``,
/// `missing field `x``); `None` for a syntax error, whose backticks quote a token.
pub(crate) fn serde_field(message: &str) -> Option<&str> {
    message
        .contains(" field `")
        .then(|| message.split('`').nth(1))
        .flatten()
}

/// A TOML table (`[world.params]`, an agent's options) as the typed struct `T`, or the
/// error with the key to blame: the one serde names between backticks (an unknown field),
/// else the first key that fails on its own (a value of the wrong type or range names
/// none), else `None`.
pub(crate) fn typed_table<T: DeserializeOwned>(
    table: &toml::Table,
) -> Result<T, (Option<String>, String)> {
    table.clone().try_into().map_err(|e: toml::de::Error| {
        let message = e.message().trim().to_string();
        let key = message
            .split('`')
            .nth(1)
            .filter(|k| table.contains_key(*k))
            .map(str::to_string)
            .or_else(|| {
                table.iter().find_map(|(k, v)| {
                    let alone = toml::Table::from_iter([(k.clone(), v.clone())]);
                    alone.try_into::<T>().is_err().then(|| k.clone())
                })
            });
        (key, message)
    })
}
