//! The reply envelope every call gets: `{status, success, data, error}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::call::CallError;

/// The answer to one call. `status` is 200 for success; 400 malformed arguments, 404
/// unknown tool, 422 invalid arguments, 409 refused by the world (or the hour's call budget
/// spent), 503 the warehouse system is down. `error` says what went wrong and what to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// HTTP-like status.
    pub status: u16,
    /// Whether `status` is 200.
    pub success: bool,
    /// What the call returned (`null` on an error).
    pub data: Value,
    /// Why the call failed (`null` on success).
    pub error: Option<String>,
}

impl Reply {
    /// A successful reply carrying `data`.
    pub fn ok(data: Value) -> Self {
        Reply {
            status: 200,
            success: true,
            data,
            error: None,
        }
    }

    /// A failed reply with this status; `data` may still say what happened (the hour
    /// that passed when an operation was refused).
    pub fn failed(status: u16, error: impl Into<String>, data: Value) -> Self {
        Reply {
            status,
            success: false,
            data,
            error: Some(error.into()),
        }
    }

    /// The reply as one line of JSON.
    pub fn to_json(&self) -> String {
        // A struct of a number, a bool, a JSON value and a string always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl From<&CallError> for Reply {
    fn from(e: &CallError) -> Self {
        Reply::failed(e.status(), e.to_string(), Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_has_its_four_fields_always() {
        let ok = Reply::ok(serde_json::json!({"hour": 3}));
        assert_eq!(
            ok.to_json(),
            r#"{"status":200,"success":true,"data":{"hour":3},"error":null}"#
        );
        let e = CallError::Malformed {
            message: "x".into(),
        };
        assert_eq!(
            Reply::from(&e).to_json(),
            r#"{"status":400,"success":false,"data":null,"error":"malformed arguments: x"}"#
        );
    }
}
