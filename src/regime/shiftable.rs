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
    /// The parameters this world accepts, with their ranges. The default is none: a world
    /// with nothing to shift writes `impl Shiftable for MyWorld {}`.
    fn parameters(&self) -> Vec<ParamInfo> {
        Vec::new()
    }

    /// The current value of a parameter, or `None` for an unknown name.
    fn get(&self, name: &str) -> Option<f64> {
        let _ = name;
        None
    }

    /// Sets one parameter.
    ///
    /// # Errors
    ///
    /// [`RegimeError::UnknownParameter`] or [`RegimeError::OutOfRange`]; the world is then
    /// unchanged. The default refuses every name.
    fn set(&mut self, name: &str, value: f64) -> Result<(), RegimeError> {
        check_parameter(&self.parameters(), name, value).map(|_| ())
    }

    /// The current value of every parameter.
    fn snapshot(&self) -> Conditions {
        self.parameters()
            .iter()
            .filter_map(|p| self.get(p.name).map(|v| (p.name.to_string(), v)))
            .collect()
    }
}

/// A field type a [`param_table!`](crate::param_table) can hold: `f64`, or a whole-number
/// type, whose parameters accept only whole values.
pub trait ParamValue: Copy {
    /// Whether only whole numbers are accepted.
    const INTEGER: bool;
    /// The value as a world file writes it.
    fn to_param(self) -> f64;
    /// The field's value from a checked parameter value.
    fn from_param(value: f64) -> Self;
}

impl ParamValue for f64 {
    const INTEGER: bool = false;
    fn to_param(self) -> f64 {
        self
    }
    fn from_param(value: f64) -> Self {
        value
    }
}

macro_rules! whole_param_values {
    ($($t:ty),*) => {$(
        impl ParamValue for $t {
            const INTEGER: bool = true;
            fn to_param(self) -> f64 {
                self as f64
            }
            fn from_param(value: f64) -> Self {
                value as $t
            }
        }
    )*};
}
whole_param_values!(u32, u64, usize, i32, i64);

/// One declaration for a world's shiftable parameters: their table, `get` and `set`.
///
/// Each entry is `name: type = [min, max], "doc"`, where `name` is a field, `type` a
/// [`ParamValue`] (`f64`, or a whole-number type whose parameter accepts whole values
/// only), the range is inclusive, and `#[integer]` before an `f64` field makes it accept
/// whole values only. Two forms:
///
/// - `param_table! { impl Shiftable for MyWorld { ... } }` implements [`Shiftable`] over
///   fields of the world itself;
/// - `param_table! { impl MyParams { ... } }` gives a parameter struct an associated
///   `PARAMETERS` table and `get` / `set` methods, for a world whose `Shiftable`
///   forwards to them (and recomputes what it derives from them).
///
/// `set` checks the name and range with [`check_parameter`] before it changes anything.
///
/// ```
/// use perennial::regime::Shiftable;
///
/// struct Room {
///     ambient: f64,
///     heater_levels: u64,
/// }
///
/// perennial::param_table! {
///     impl Shiftable for Room {
///         ambient: f64 = [-30.0, 40.0], "outdoor temperature, °C";
///         heater_levels: u64 = [1.0, 10.0], "settings of the heater knob";
///     }
/// }
///
/// let mut room = Room { ambient: 10.0, heater_levels: 3 };
/// room.set("ambient", -5.0).unwrap();
/// assert_eq!(room.get("ambient"), Some(-5.0));
/// assert!(room.set("heater_levels", 2.5).is_err());
/// assert!(room.set("humidity", 0.5).is_err());
/// assert_eq!(room.parameters()[1].name, "heater_levels");
/// ```
#[macro_export]
macro_rules! param_table {
    (impl Shiftable for $world:ty { $($entries:tt)* }) => {
        impl $crate::regime::Shiftable for $world {
            fn parameters(&self) -> ::std::vec::Vec<$crate::regime::ParamInfo> {
                $crate::param_table!(@table $($entries)*).to_vec()
            }

            fn get(&self, name: &str) -> ::std::option::Option<f64> {
                $crate::param_table!(@get self, name, $($entries)*)
            }

            fn set(
                &mut self,
                name: &str,
                value: f64,
            ) -> ::std::result::Result<(), $crate::regime::RegimeError> {
                $crate::regime::check_parameter(
                    &$crate::param_table!(@table $($entries)*),
                    name,
                    value,
                )?;
                $crate::param_table!(@set self, name, value, $($entries)*);
                Ok(())
            }
        }
    };
    (impl $params:ty { $($entries:tt)* }) => {
        impl $params {
            /// The shiftable parameters with their accepted ranges.
            pub const PARAMETERS: &'static [$crate::regime::ParamInfo] =
                &$crate::param_table!(@table $($entries)*);

            /// The value of a parameter, or `None` for an unknown name.
            pub fn get(&self, name: &str) -> ::std::option::Option<f64> {
                $crate::param_table!(@get self, name, $($entries)*)
            }

            /// Sets a parameter after checking its name and range.
            ///
            /// # Errors
            ///
            /// An unknown name or a value out of range; nothing changes.
            pub fn set(
                &mut self,
                name: &str,
                value: f64,
            ) -> ::std::result::Result<(), $crate::regime::RegimeError> {
                $crate::regime::check_parameter(Self::PARAMETERS, name, value)?;
                $crate::param_table!(@set self, name, value, $($entries)*);
                Ok(())
            }
        }
    };
    (@table $($(#[$flag:ident])? $name:ident : $t:ty = [$min:expr, $max:expr], $doc:literal);* $(;)?) => {
        [$(
            $crate::regime::ParamInfo {
                name: stringify!($name),
                min: $min,
                max: $max,
                doc: $doc,
                integer: <$t as $crate::regime::ParamValue>::INTEGER
                    $(|| $crate::param_table!(@flag $flag))?,
            }
        ),*]
    };
    (@flag integer) => { true };
    (@get $self:ident, $key:ident, $($(#[$flag:ident])? $name:ident : $t:ty = [$min:expr, $max:expr], $doc:literal);* $(;)?) => {
        match $key {
            $(stringify!($name) => Some($crate::regime::ParamValue::to_param($self.$name)),)*
            _ => None,
        }
    };
    (@set $self:ident, $key:ident, $value:ident, $($(#[$flag:ident])? $name:ident : $t:ty = [$min:expr, $max:expr], $doc:literal);* $(;)?) => {
        match $key {
            $(stringify!($name) => $self.$name = <$t as $crate::regime::ParamValue>::from_param($value),)*
            _ => {}
        }
    };
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

/// Puts `regime` in force on `world`: the `baseline` conditions (the world's parameters when
/// its scheduler was attached), overridden by the regime's own conditions, so every
/// parameter the regime does not name returns to its baseline value.
///
/// # Errors
///
/// As [`apply_conditions`]; the world is then unchanged.
pub fn apply_over_baseline<W: Shiftable + ?Sized>(
    world: &mut W,
    baseline: &Conditions,
    regime: &super::Regime,
) -> Result<(), RegimeError> {
    let mut merged = baseline.clone();
    merged.extend(regime.conditions.iter().map(|(k, v)| (k.clone(), *v)));
    apply_conditions(world, &merged)
}
