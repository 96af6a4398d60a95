//! Saving a state as JSON only when every number in it is finite: serde_json writes NaN
//! and infinity as `null`, which the resume then refuses, so a checkpoint written with one
//! is a run that cannot go on.

use serde::Serialize;
use serde::ser;

/// `value` as JSON, or the path of its first NaN or infinite number (`policy[17]`, `w[3]`).
///
/// # Errors
///
/// A number of `value` is NaN or infinite (the path of the first one), or `value` cannot
/// be written as JSON.
pub fn to_finite_value<T: Serialize + ?Sized>(value: &T) -> Result<serde_json::Value, String> {
    let mut walk = Walk::default();
    match value.serialize(&mut walk) {
        Err(Found::NonFinite) => {
            let at = walk.path.join("");
            let at = at.strip_prefix('.').unwrap_or(&at);
            Err(format!(
                "its state holds a NaN or infinite number (at `{at}`), which a checkpoint cannot record"
            ))
        }
        Err(Found::Other(e)) => Err(e),
        Ok(()) => serde_json::to_value(value).map_err(|e| e.to_string()),
    }
}

/// Walks a value as a serializer does, writing nothing, and stops at the first number
/// that is not finite with `path` leading to it.
#[derive(Default)]
struct Walk {
    path: Vec<String>,
    /// The index of the next element of each sequence open, innermost last.
    index: Vec<usize>,
}

#[derive(Debug)]
enum Found {
    NonFinite,
    Other(String),
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Found::NonFinite => f.write_str("a NaN or infinite number"),
            Found::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        Found::Other(msg.to_string())
    }
}

impl Walk {
    fn number(&self, finite: bool) -> Result<(), Found> {
        if finite {
            Ok(())
        } else {
            Err(Found::NonFinite)
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        let i = self.index.last().copied().unwrap_or(0);
        self.path.push(format!("[{i}]"));
        value.serialize(&mut *self)?;
        self.path.pop();
        if let Some(n) = self.index.last_mut() {
            *n += 1;
        }
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Found> {
        self.path.push(format!(".{key}"));
        value.serialize(&mut *self)?;
        self.path.pop();
        Ok(())
    }

    fn open_seq(&mut self) -> Result<&mut Self, Found> {
        self.index.push(0);
        Ok(self)
    }

    fn close_seq(&mut self) -> Result<(), Found> {
        self.index.pop();
        Ok(())
    }
}

macro_rules! accept {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, _: $ty) -> Result<(), Found> { Ok(()) })*
    };
}

impl<'a> ser::Serializer for &'a mut Walk {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = &'a mut Walk;
    type SerializeTuple = &'a mut Walk;
    type SerializeTupleStruct = &'a mut Walk;
    type SerializeTupleVariant = &'a mut Walk;
    type SerializeMap = &'a mut Walk;
    type SerializeStruct = &'a mut Walk;
    type SerializeStructVariant = &'a mut Walk;

    accept!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        self.number(v.is_finite())
    }

    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        self.number(v.is_finite())
    }

    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Found> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.field(variant, value)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Found> {
        self.open_seq()
    }

    fn serialize_tuple(self, _: usize) -> Result<Self, Found> {
        self.open_seq()
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Found> {
        self.open_seq()
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Found> {
        self.open_seq()
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self, Found> {
        Ok(self)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Found> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Found> {
        Ok(self)
    }
}

macro_rules! sequence {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(impl ser::$trait for &mut Walk {
            type Ok = ();
            type Error = Found;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
                self.element(value)
            }
            fn end(self) -> Result<(), Found> {
                self.close_seq()
            }
        })*
    };
}

sequence!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for &mut Walk {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Found> {
        // A key names the entry that follows; a number key must be finite too.
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.field("<entry>", value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

macro_rules! structure {
    ($($trait:ident),* $(,)?) => {
        $(impl ser::$trait for &mut Walk {
            type Ok = ();
            type Error = Found;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Found> {
                self.field(key, value)
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        })*
    };
}

structure!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Net {
        theta: Vec<f32>,
        w: Vec<Vec<f64>>,
        lr: f64,
    }

    #[test]
    fn finite_states_are_written_as_serde_json_writes_them() {
        let net = Net {
            theta: vec![1.0, -2.5],
            w: vec![vec![0.0], vec![3.0, 4.0]],
            lr: 0.1,
        };
        assert_eq!(
            to_finite_value(&net).unwrap(),
            serde_json::to_value(&net).unwrap()
        );
    }

    #[test]
    fn a_nan_or_infinite_number_is_refused_with_its_path() {
        let net = Net {
            theta: vec![1.0, 2.0],
            w: vec![vec![0.0], vec![3.0, f64::NAN]],
            lr: 0.1,
        };
        let e = to_finite_value(&net).unwrap_err();
        assert!(e.contains("at `w[1][1]`"), "{e}");
        let net = Net {
            theta: vec![f32::INFINITY],
            w: vec![],
            lr: 0.1,
        };
        assert!(to_finite_value(&net).unwrap_err().contains("`theta[0]`"));
    }
}
