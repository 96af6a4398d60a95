//! The `Shiftable` trait: a world whose conditions can change mid-episode.

use super::{Conditions, RegimeError};

/// One parameter a world accepts in its conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    /// Parameter name, as written in world files.
    pub name: &'static str,
    /// Smallest accepted value (inclusive).
    pub min: f64,
    /// Largest accepted value (inclusive).
    pub max: f64,
    /// One line saying what the parameter is, with its unit.
    pub doc: &'static str,
    /// Whether only whole numbers are accepted (a step count, say).
    pub integer: bool,
}

/// A world whose conditions can change while an episode runs.
///
/// # Rules for implementors
///
/// - `parameters()` lists every name `set` accepts, with inclusive ranges; world files are
///   validated against it at load, so `set` is never asked for an unknown name or an
///   out-of-range value in a run.
/// - `set` takes effect from the next step and **ends nothing**: no episode end, no reset,
///   no flag in the observation. Quantities derived from a parameter are recomputed.
/// - Parameters are configuration, not world state: `reset` keeps them.
pub trait Shiftable {
    /// The parameters this world accepts, with their ranges.
    fn parameters(&self) -> Vec<ParamInfo>;

    /// The current value of a parameter, or `None` for an unknown name.
    fn get(&self, name: &str) -> Option<f64>;

    /// Sets one parameter.
    ///
    /// # Errors
    ///
    /// [`RegimeError::UnknownParameter`] or [`RegimeError::OutOfRange`]; the world is then
    /// unchanged.
    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError>;

    /// The current value of every parameter.
    fn snapshot(&self) -> Conditions {
        self.parameters()
            .iter()
            .filter_map(|p| self.get(p.name).map(|v| (p.name.to_string(), v)))
            .collect()
    }
}

/// Checks conditions against a parameter list without touching any world.
///
/// # Errors
///
/// The first unknown name or out-of-range value.
pub fn validate_conditions(
    params: &[ParamInfo],
    conditions: &Conditions,
) -> Result<(), RegimeError> {
    for (name, &value) in conditions {
        check_parameter(params, name, value)?;
    }
    Ok(())
}

/// Checks one parameter value against a parameter list and returns its entry: the check
/// every [`Shiftable::set`] and every world-file load makes.
///
/// # Errors
///
/// [`RegimeError::UnknownParameter`] for a name not in `params`,
/// [`RegimeError::OutOfRange`] for a value outside its range, not finite, or a fraction
/// given to an integer parameter.
pub fn check_parameter<'a>(
    params: &'a [ParamInfo],
    name: &str,
    value: f64,
) -> Result<&'a ParamInfo, RegimeError> {
    let info =
        params
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| RegimeError::UnknownParameter {
                name: name.to_string(),
                known: params.iter().map(|p| p.name.to_string()).collect(),
            })?;
    let whole = !info.integer || value.fract() == 0.0;
    if !(value.is_finite() && value >= info.min && value <= info.max && whole) {
        return Err(RegimeError::OutOfRange {
            name: name.to_string(),
            value,
            min: info.min,
            max: info.max,
        });
    }
    Ok(info)
}

/// Validates all conditions, then applies them, so a bad set changes nothing.
///
/// # Errors
///
/// As [`validate_conditions`].
pub fn apply_conditions<W: Shiftable + ?Sized>(
    world: &mut W,
    conditions: &Conditions,
) -> Result<(), RegimeError> {
    validate_conditions(&world.parameters(), conditions)?;
    for (name, &value) in conditions {
        world.set(name, value)?;
    }
    Ok(())
}
