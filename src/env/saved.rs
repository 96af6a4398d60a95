//! A saved part of a run, kept typed in memory and written as JSON only when it leaves.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A saved part of a run (a world's state, an agent's rollout window): either the typed
/// value as the run saved it, shared and never copied until it is loaded, or its JSON as
/// read from outside the process. Both write the same JSON: the typed value goes through
/// [`serde_json::to_value`], exactly as a JSON-only save would.
///
/// Saving and loading in one process ([`Env::save_state_typed`](super::Env::save_state_typed),
/// a fork's restore) skips JSON altogether; what comes from a file, a pickle or a server
/// is JSON and is checked as it is loaded.
///
/// # Examples
///
/// ```
/// use perennial::env::SavedState;
///
/// let typed = SavedState::typed(vec![1.5f32, -2.0]);
/// assert_eq!(typed.get::<Vec<f32>>(), Some(&vec![1.5f32, -2.0]));
/// let text = serde_json::to_string(&typed).unwrap();
/// let read: SavedState = serde_json::from_str(&text).unwrap();
/// assert_eq!(read.get::<Vec<f32>>(), None, "read from text, it is JSON");
/// assert_eq!(read.load::<Vec<f32>>().unwrap(), typed.load::<Vec<f32>>().unwrap());
/// ```
#[derive(Clone)]
pub struct SavedState(Repr);

#[derive(Clone)]
enum Repr {
    Json(serde_json::Value),
    Typed(Arc<dyn Part>),
}

/// A typed saved value, type-erased.
trait Part: Any + Send + Sync + fmt::Debug {
    fn to_json(&self) -> Result<serde_json::Value, serde_json::Error>;
    fn as_any(&self) -> &dyn Any;
}

impl<T: Serialize + Any + Send + Sync + fmt::Debug> Part for T {
    fn to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl SavedState {
    /// A typed value, kept as it is.
    pub fn typed<T: Serialize + Send + Sync + fmt::Debug + 'static>(value: T) -> Self {
        SavedState(Repr::Typed(Arc::new(value)))
    }

    /// A value's JSON.
    pub fn json(value: serde_json::Value) -> Self {
        SavedState(Repr::Json(value))
    }

    /// The typed value, when this holds one of type `T` (never when it was read as JSON).
    pub fn get<T: 'static>(&self) -> Option<&T> {
        match &self.0 {
            Repr::Typed(part) => part.as_any().downcast_ref(),
            Repr::Json(_) => None,
        }
    }

    /// The value as a `T`: a copy of the typed value when it is one, else read from its
    /// JSON (a typed value of another type is written and read back, so it fits `T`
    /// exactly when its JSON does).
    ///
    /// # Errors
    ///
    /// The JSON is not a `T`.
    pub fn load<T: DeserializeOwned + Clone + 'static>(&self) -> Result<T, serde_json::Error> {
        if let Some(value) = self.get::<T>() {
            return Ok(value.clone());
        }
        serde_json::from_value(self.to_json()?)
    }

    /// The value's JSON.
    ///
    /// # Errors
    ///
    /// The typed value cannot be written as JSON.
    pub fn to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        match &self.0 {
            Repr::Json(value) => Ok(value.clone()),
            Repr::Typed(part) => part.to_json(),
        }
    }

    /// The value's JSON, taking this apart (no copy of JSON already held).
    ///
    /// # Errors
    ///
    /// As [`SavedState::to_json`].
    pub fn into_json(self) -> Result<serde_json::Value, serde_json::Error> {
        match self.0 {
            Repr::Json(value) => Ok(value),
            Repr::Typed(part) => part.to_json(),
        }
    }
}

impl fmt::Debug for SavedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Json(value) => f.debug_tuple("Json").field(value).finish(),
            Repr::Typed(part) => f.debug_tuple("Typed").field(part).finish(),
        }
    }
}

impl Serialize for SavedState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Json(value) => value.serialize(serializer),
            Repr::Typed(part) => part
                .to_json()
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SavedState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(deserializer).map(SavedState::json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Stock {
        on_hand: Vec<f64>,
        label: String,
    }

    fn stock() -> Stock {
        Stock {
            on_hand: vec![0.1, 1e300, -0.0],
            label: "a".into(),
        }
    }

    #[test]
    fn a_typed_state_writes_the_same_json_as_its_json() {
        let typed = SavedState::typed(stock());
        let json = SavedState::json(serde_json::to_value(stock()).unwrap());
        assert_eq!(
            serde_json::to_string(&typed).unwrap(),
            serde_json::to_string(&json).unwrap()
        );
    }

    #[test]
    fn a_state_read_back_loads_to_the_same_value() {
        let text = serde_json::to_string(&SavedState::typed(stock())).unwrap();
        let read: SavedState = serde_json::from_str(&text).unwrap();
        assert!(read.get::<Stock>().is_none());
        assert_eq!(read.load::<Stock>().unwrap(), stock());
    }

    #[test]
    fn a_typed_state_of_another_type_loads_through_its_json() {
        let typed = SavedState::typed(vec![1.0f32, 2.0]);
        assert_eq!(typed.load::<Vec<f64>>().unwrap(), vec![1.0, 2.0]);
        assert!(typed.load::<Stock>().is_err());
    }
}
