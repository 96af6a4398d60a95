//! Parsing a tool call, in either call style, into one typed [`ToolCall`].

use std::fmt;

use serde_json::{Map, Value};

use super::catalogue::{ArgKind, Catalogue, ORDER_KINDS, Tool, ToolName};
use crate::morpheus::roles::OpKind;
use crate::morpheus::{MorpheusConfig, Op};

/// Kinds of order [`ToolCall::QueryOrders`] lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderKind {
    /// Open customer orders.
    Customer,
    /// Purchase orders in transit.
    Purchase,
    /// Shipments on their way to customers.
    Shipment,
}

/// One parsed, validated tool call: every index lies within the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolCall {
    /// Buy `quantity` units of `sku`.
    Reorder {
        /// SKU index.
        sku: u32,
        /// One of the layout's reorder quantities.
        quantity: u64,
    },
    /// Use `carrier` for the outbound waves.
    ChooseCarrier {
        /// Carrier index.
        carrier: u32,
    },
    /// Expedite `sku`'s oldest purchase order.
    Expedite {
        /// SKU index.
        sku: u32,
    },
    /// Repair dock door `dock`.
    RepairDock {
        /// Dock index.
        dock: u32,
    },
    /// Ship `sku`'s orders first for a day (a world with roles).
    PrioritizeSku {
        /// SKU index.
        sku: u32,
    },
    /// Hold this hour's wave (a world with roles).
    HoldWave,
    /// Let `hours` hours pass (1 to 24).
    Wait {
        /// Hours.
        hours: u32,
    },
    /// Stock of one SKU, or of all.
    QueryInventory {
        /// SKU index, `None` for all.
        sku: Option<u32>,
    },
    /// Orders of one kind.
    QueryOrders {
        /// Which orders.
        kind: OrderKind,
        /// SKU index, `None` for all.
        sku: Option<u32>,
        /// Most orders to list.
        limit: u32,
    },
    /// The ledger.
    QueryLedger,
    /// The carriers.
    QueryCarriers,
}

impl ToolCall {
    /// The tool it calls.
    pub fn tool(&self) -> ToolName {
        match self {
            ToolCall::Reorder { .. } => ToolName::Op(OpKind::Reorder),
            ToolCall::ChooseCarrier { .. } => ToolName::Op(OpKind::ChooseCarrier),
            ToolCall::Expedite { .. } => ToolName::Op(OpKind::Expedite),
            ToolCall::RepairDock { .. } => ToolName::Op(OpKind::RepairDock),
            ToolCall::PrioritizeSku { .. } => ToolName::Op(OpKind::PrioritizeSku),
            ToolCall::HoldWave => ToolName::Op(OpKind::HoldWave),
            ToolCall::Wait { .. } => ToolName::Wait,
            ToolCall::QueryInventory { .. } => ToolName::QueryInventory,
            ToolCall::QueryOrders { .. } => ToolName::QueryOrders,
            ToolCall::QueryLedger => ToolName::QueryLedger,
            ToolCall::QueryCarriers => ToolName::QueryCarriers,
        }
    }

    /// The world operation it stands for, `None` for `wait` and the queries.
    pub fn op(&self, config: &MorpheusConfig) -> Option<Op> {
        match *self {
            ToolCall::Reorder { sku, quantity } => config
                .reorder_quantities
                .iter()
                .position(|q| *q == quantity)
                .map(|b| Op::Reorder {
                    sku,
                    bucket: b as u32,
                }),
            ToolCall::ChooseCarrier { carrier } => Some(Op::ChooseCarrier { carrier }),
            ToolCall::Expedite { sku } => Some(Op::Expedite { sku }),
            ToolCall::RepairDock { dock } => Some(Op::RepairDock { dock }),
            ToolCall::PrioritizeSku { sku } => Some(Op::PrioritizeSku { sku }),
            ToolCall::HoldWave => Some(Op::HoldWave),
            _ => None,
        }
    }

    /// The tool call that asks for `op`, `None` for the no-op (which is `wait{hours: 1}`)
    /// and for a reorder bucket outside the layout.
    pub fn from_op(op: Op, config: &MorpheusConfig) -> Option<ToolCall> {
        match op {
            Op::Noop => None,
            Op::Reorder { sku, bucket } => config
                .reorder_quantities
                .get(bucket as usize)
                .map(|&quantity| ToolCall::Reorder { sku, quantity }),
            Op::ChooseCarrier { carrier } => Some(ToolCall::ChooseCarrier { carrier }),
            Op::Expedite { sku } => Some(ToolCall::Expedite { sku }),
            Op::RepairDock { dock } => Some(ToolCall::RepairDock { dock }),
            Op::PrioritizeSku { sku } => Some(ToolCall::PrioritizeSku { sku }),
            Op::HoldWave => Some(ToolCall::HoldWave),
        }
    }

    /// The call's arguments as the JSON object a model would send.
    pub fn arguments(&self) -> Value {
        let kind = |k: OrderKind| match k {
            OrderKind::Customer => "customer",
            OrderKind::Purchase => "purchase",
            OrderKind::Shipment => "shipment",
        };
        match *self {
            ToolCall::Reorder { sku, quantity } => {
                serde_json::json!({"sku": sku, "quantity": quantity})
            }
            ToolCall::ChooseCarrier { carrier } => serde_json::json!({"carrier": carrier}),
            ToolCall::Expedite { sku } => serde_json::json!({"sku": sku}),
            ToolCall::RepairDock { dock } => serde_json::json!({"dock": dock}),
            ToolCall::PrioritizeSku { sku } => serde_json::json!({"sku": sku}),
            ToolCall::Wait { hours } => serde_json::json!({"hours": hours}),
            ToolCall::QueryInventory { sku } => serde_json::json!({"sku": sku}),
            ToolCall::QueryOrders {
                kind: k,
                sku,
                limit,
            } => {
                serde_json::json!({"kind": kind(k), "sku": sku, "limit": limit})
            }
            ToolCall::QueryLedger | ToolCall::QueryCarriers | ToolCall::HoldWave => {
                serde_json::json!({})
            }
        }
    }
}

/// Why a call could not be parsed; each maps to one reply status.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError {
    /// The arguments are not a JSON object (status 400).
    Malformed {
        /// What was wrong.
        message: String,
    },
    /// No tool (or route) has this name (status 404).
    UnknownTool {
        /// The name asked for, shortened.
        name: String,
        /// The valid names.
        valid: Vec<String>,
    },
    /// An argument is missing, unknown, of the wrong type or out of range (status 422).
    InvalidArgument {
        /// The tool.
        tool: &'static str,
        /// The field.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

impl CallError {
    /// The reply status of this error.
    pub fn status(&self) -> u16 {
        match self {
            CallError::Malformed { .. } => 400,
            CallError::UnknownTool { .. } => 404,
            CallError::InvalidArgument { .. } => 422,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Malformed { message } => write!(f, "malformed arguments: {message}"),
            CallError::UnknownTool { name, valid } => {
                write!(
                    f,
                    "unknown tool `{name}`; the tools are: {}",
                    valid.join(", ")
                )
            }
            CallError::InvalidArgument {
                tool,
                field,
                message,
            } => write!(f, "{tool}: argument `{field}` {message}"),
        }
    }
}

impl std::error::Error for CallError {}

/// At most 40 characters of what a caller sent, for error messages.
fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

fn shown(v: &Value) -> String {
    shorten(&v.to_string())
}

/// A checked argument value.
enum Got<'a> {
    Int(Option<u64>),
    Word(&'a str),
}

fn check_arg<'a>(tool: &Tool, name: &str, value: &'a Value) -> Result<Got<'a>, CallError> {
    let Some(arg) = tool.arg(name) else {
        return Err(CallError::InvalidArgument {
            tool: tool.name.as_str(),
            field: shorten(name),
            message: "is not an argument of this tool".into(),
        });
    };
    let bad = || CallError::InvalidArgument {
        tool: tool.name.as_str(),
        field: arg.name.into(),
        message: format!("is {}; use {}", shown(value), arg.kind.allowed()),
    };
    match &arg.kind {
        ArgKind::Index { count, nullable } => match value {
            Value::Null if *nullable => Ok(Got::Int(None)),
            v => match v.as_u64() {
                Some(i) if (i as usize) < *count && i <= u64::from(u32::MAX) => {
                    Ok(Got::Int(Some(i)))
                }
                _ => Err(bad()),
            },
        },
        ArgKind::Choice(values) => match value.as_u64() {
            Some(i) if values.contains(&i) => Ok(Got::Int(Some(i))),
            _ => Err(bad()),
        },
        ArgKind::Range { min, max } => match value.as_u64() {
            Some(i) if (*min..=*max).contains(&i) => Ok(Got::Int(Some(i))),
            _ => Err(bad()),
        },
        ArgKind::Word(words) => match value.as_str() {
            Some(w) if words.contains(&w) => Ok(Got::Word(w)),
            _ => Err(bad()),
        },
    }
}

impl Catalogue {
    /// Parses a call in the function-calling style: a tool name and its arguments as a
    /// JSON string (an empty string means no arguments).
    ///
    /// # Errors
    ///
    /// [`CallError::UnknownTool`] listing the valid names, [`CallError::Malformed`] when the
    /// arguments are not a JSON object, [`CallError::InvalidArgument`] naming the field and
    /// what is allowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::morpheus::MorpheusConfig;
    /// use perennial::morpheus::api::{Catalogue, ToolCall};
    ///
    /// let tools = Catalogue::of(&MorpheusConfig::default());
    /// let call = tools.parse("reorder", r#"{"sku": 3, "quantity": 100}"#).unwrap();
    /// assert_eq!(call, ToolCall::Reorder { sku: 3, quantity: 100 });
    /// let err = tools.parse("reorder", r#"{"sku": 3, "quantity": 99}"#).unwrap_err();
    /// assert_eq!(err.status(), 422);
    /// ```
    pub fn parse(&self, name: &str, arguments: &str) -> Result<ToolCall, CallError> {
        let tool = self.tool_named(name)?;
        let args = if arguments.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(arguments).map_err(|e| CallError::Malformed {
                message: format!(
                    "arguments of `{}` are not JSON ({e}); send a JSON object such as {}",
                    tool.name.as_str(),
                    example(tool)
                ),
            })?
        };
        self.build(tool, &args)
    }

    /// Parses a call whose arguments are already a JSON value (which must be an object).
    ///
    /// # Errors
    ///
    /// As [`Catalogue::parse`].
    pub fn parse_value(&self, name: &str, arguments: &Value) -> Result<ToolCall, CallError> {
        let tool = self.tool_named(name)?;
        self.build(tool, arguments)
    }

    /// Parses a call in MORPHEUS's style: `{"path": ..., "method": ..., "body": {...}}`
    /// (`body` may be left out when the tool takes no arguments).
    ///
    /// # Errors
    ///
    /// [`CallError::Malformed`] when the request is not such an object,
    /// [`CallError::UnknownTool`] listing the valid routes, else as [`Catalogue::parse`].
    pub fn parse_request(&self, request: &Value) -> Result<ToolCall, CallError> {
        let Some(obj) = request.as_object() else {
            return Err(CallError::Malformed {
                message: format!(
                    "a request is an object {{\"path\", \"method\", \"body\"}}, not {}",
                    shown(request)
                ),
            });
        };
        let text = |key: &str| obj.get(key).and_then(Value::as_str);
        let (Some(path), Some(method)) = (text("path"), text("method")) else {
            return Err(CallError::Malformed {
                message: "a request needs string fields `path` and `method`".into(),
            });
        };
        if let Some(extra) = obj
            .keys()
            .find(|k| !["path", "method", "body"].contains(&k.as_str()))
        {
            return Err(CallError::Malformed {
                message: format!(
                    "a request has only `path`, `method` and `body`, not `{}`",
                    shorten(extra)
                ),
            });
        }
        let Some(tool) = self.tools().iter().find(|t| {
            let (m, p) = t.name.route();
            p == path && m.eq_ignore_ascii_case(method)
        }) else {
            return Err(CallError::UnknownTool {
                name: shorten(&format!("{method} {path}")),
                valid: self
                    .tools()
                    .iter()
                    .map(|t| {
                        let (m, p) = t.name.route();
                        format!("{m} {p}")
                    })
                    .collect(),
            });
        };
        let empty = Value::Object(Map::new());
        self.build(tool, obj.get("body").unwrap_or(&empty))
    }

    fn tool_named(&self, name: &str) -> Result<&Tool, CallError> {
        ToolName::parse(name)
            .and_then(|t| self.get(t))
            .ok_or_else(|| CallError::UnknownTool {
                name: shorten(name),
                valid: self.names().into_iter().map(String::from).collect(),
            })
    }

    fn build(&self, tool: &Tool, args: &Value) -> Result<ToolCall, CallError> {
        let Some(obj) = args.as_object() else {
            return Err(CallError::Malformed {
                message: format!(
                    "arguments of `{}` must be a JSON object such as {}, not {}",
                    tool.name.as_str(),
                    example(tool),
                    shown(args)
                ),
            });
        };
        for (name, value) in obj {
            check_arg(tool, name, value)?;
        }
        let int = |name: &str| -> Result<Option<u64>, CallError> {
            match obj.get(name) {
                None => Err(CallError::InvalidArgument {
                    tool: tool.name.as_str(),
                    field: name.into(),
                    message: format!(
                        "is missing; use {}",
                        tool.arg(name).map_or(String::new(), |a| a.kind.allowed())
                    ),
                }),
                Some(v) => match check_arg(tool, name, v)? {
                    Got::Int(i) => Ok(i),
                    Got::Word(_) => Ok(None),
                },
            }
        };
        // Indices were checked against the layout, which holds at most `u32::MAX` of each.
        let index = |i: Option<u64>| i.map(|i| i as u32);
        let req = |name: &str| int(name).map(|i| index(i).unwrap_or(0));
        Ok(match tool.name {
            ToolName::Op(OpKind::Reorder) => {
                let sku = req("sku")?;
                ToolCall::Reorder {
                    sku,
                    quantity: int("quantity")?.unwrap_or(0),
                }
            }
            ToolName::Op(OpKind::ChooseCarrier) => ToolCall::ChooseCarrier {
                carrier: req("carrier")?,
            },
            ToolName::Op(OpKind::Expedite) => ToolCall::Expedite { sku: req("sku")? },
            ToolName::Op(OpKind::RepairDock) => ToolCall::RepairDock { dock: req("dock")? },
            ToolName::Op(OpKind::PrioritizeSku) => ToolCall::PrioritizeSku { sku: req("sku")? },
            ToolName::Op(OpKind::HoldWave) => ToolCall::HoldWave,
            ToolName::Wait => ToolCall::Wait {
                hours: req("hours")?,
            },
            ToolName::QueryInventory => ToolCall::QueryInventory {
                sku: index(int("sku")?),
            },
            ToolName::QueryOrders => {
                let kind = match obj.get("kind").map(|v| check_arg(tool, "kind", v)) {
                    Some(Ok(Got::Word(w))) => match ORDER_KINDS.iter().position(|k| *k == w) {
                        Some(0) => OrderKind::Customer,
                        Some(1) => OrderKind::Purchase,
                        _ => OrderKind::Shipment,
                    },
                    Some(Err(e)) => return Err(e),
                    _ => {
                        return Err(CallError::InvalidArgument {
                            tool: tool.name.as_str(),
                            field: "kind".into(),
                            message: format!("is missing; use one of {ORDER_KINDS:?}"),
                        });
                    }
                };
                let sku = index(int("sku")?);
                ToolCall::QueryOrders {
                    kind,
                    sku,
                    limit: req("limit")?,
                }
            }
            ToolName::QueryLedger => ToolCall::QueryLedger,
            ToolName::QueryCarriers => ToolCall::QueryCarriers,
        })
    }
}

/// Arguments that would be valid, for error messages.
fn example(tool: &Tool) -> String {
    let mut obj = Map::new();
    for arg in &tool.args {
        let v = match &arg.kind {
            ArgKind::Index { .. } => Value::from(0),
            ArgKind::Choice(values) => Value::from(values.first().copied().unwrap_or(1)),
            ArgKind::Range { min, .. } => Value::from(*min),
            ArgKind::Word(words) => Value::from(words.first().copied().unwrap_or("")),
        };
        obj.insert(arg.name.into(), v);
    }
    Value::Object(obj).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cat() -> Catalogue {
        Catalogue::of(&MorpheusConfig::default())
    }

    #[test]
    fn both_call_styles_give_one_typed_call() {
        let c = cat();
        let a = c.parse(
            "query_orders",
            r#"{"kind":"purchase","sku":null,"limit":5}"#,
        );
        let b = c.parse_request(&json!({
            "path": "/orders", "method": "get",
            "body": {"kind": "purchase", "sku": null, "limit": 5},
        }));
        let want = ToolCall::QueryOrders {
            kind: OrderKind::Purchase,
            sku: None,
            limit: 5,
        };
        assert_eq!((a, b), (Ok(want), Ok(want)));
        assert_eq!(
            c.parse_request(&json!({"path": "/ledger", "method": "GET"})),
            Ok(ToolCall::QueryLedger)
        );
        assert_eq!(c.parse("query_ledger", ""), Ok(ToolCall::QueryLedger));
    }

    #[test]
    fn arguments_round_trip_through_the_parser() {
        let c = Catalogue::with_roles(&MorpheusConfig::default());
        let calls = [
            ToolCall::Reorder {
                sku: 7,
                quantity: 20,
            },
            ToolCall::ChooseCarrier { carrier: 2 },
            ToolCall::Expedite { sku: 0 },
            ToolCall::RepairDock { dock: 3 },
            ToolCall::PrioritizeSku { sku: 5 },
            ToolCall::HoldWave,
            ToolCall::Wait { hours: 24 },
            ToolCall::QueryInventory { sku: Some(4) },
            ToolCall::QueryOrders {
                kind: OrderKind::Shipment,
                sku: Some(1),
                limit: 50,
            },
            ToolCall::QueryCarriers,
        ];
        for call in calls {
            let name = call.tool().as_str();
            assert_eq!(c.parse_value(name, &call.arguments()), Ok(call));
            let (method, path) = call.tool().route();
            let req = json!({"path": path, "method": method, "body": call.arguments()});
            assert_eq!(c.parse_request(&req), Ok(call));
        }
    }

    #[test]
    fn ops_and_tool_calls_map_both_ways() {
        let cfg = MorpheusConfig::default();
        for i in 1..cfg.action_count() {
            let op = Op::decode(i, &cfg).unwrap();
            let call = ToolCall::from_op(op, &cfg).unwrap();
            assert_eq!(call.op(&cfg), Some(op));
        }
        assert_eq!(ToolCall::from_op(Op::Noop, &cfg), None);
        for op in [Op::PrioritizeSku { sku: 2 }, Op::HoldWave] {
            assert_eq!(
                ToolCall::from_op(op, &cfg).and_then(|c| c.op(&cfg)),
                Some(op)
            );
        }
    }

    #[test]
    fn the_roles_tools_are_unknown_to_a_single_agent_catalogue_and_checked_in_a_roles_one() {
        let e = cat().parse("hold_wave", "{}").unwrap_err();
        assert_eq!(e.status(), 404, "{e}");
        assert!(!e.to_string().contains("hold_wave,"), "{e}");
        let roles = Catalogue::with_roles(&MorpheusConfig::default());
        let e = roles.parse("prioritize_sku", r#"{"sku": 8}"#).unwrap_err();
        assert_eq!(e.status(), 422);
        assert!(
            e.to_string()
                .contains("argument `sku` is 8; use an integer from 0 to 7"),
            "{e}"
        );
        let e = roles.parse("prioritize_sku", "{}").unwrap_err();
        assert!(e.to_string().contains("`sku` is missing"), "{e}");
        let e = roles.parse("hold_wave", r#"{"sku": 1}"#).unwrap_err();
        assert!(
            e.to_string()
                .contains("hold_wave: argument `sku` is not an argument"),
            "{e}"
        );
        assert_eq!(roles.parse("hold_wave", ""), Ok(ToolCall::HoldWave));
    }

    #[test]
    fn each_error_names_its_status_and_what_to_do() {
        let c = cat();
        let e = c.parse("reorder", "{not json").unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(e.to_string().contains(r#"{"quantity":20,"sku":0}"#), "{e}");
        assert_eq!(c.parse("reorder", "[1, 2]").unwrap_err().status(), 400);
        let e = c.parse("buy", "{}").unwrap_err();
        assert_eq!(e.status(), 404);
        assert!(e.to_string().contains("reorder, choose_carrier"), "{e}");
        let e = c
            .parse_request(&json!({"path": "/inventory/reorder", "method": "GET"}))
            .unwrap_err();
        assert!(e.to_string().contains("POST /inventory/reorder"), "{e}");
        let cases = [
            (r#"{"sku": 8, "quantity": 20}"#, "sku", "from 0 to 7"),
            (
                r#"{"sku": 1}"#,
                "quantity",
                "missing; use one of [20, 50, 100, 200]",
            ),
            (
                r#"{"sku": 1, "quantity": 20, "x": 1}"#,
                "x",
                "not an argument",
            ),
            (r#"{"sku": "1", "quantity": 20}"#, "sku", "is \"1\""),
            (r#"{"sku": -1, "quantity": 20}"#, "sku", "is -1"),
            (r#"{"sku": 1.5, "quantity": 20}"#, "sku", "is 1.5"),
            (r#"{"sku": null, "quantity": 20}"#, "sku", "is null"),
        ];
        for (args, field, says) in cases {
            let e = c.parse("reorder", args).unwrap_err();
            assert_eq!(e.status(), 422, "{args}");
            match &e {
                CallError::InvalidArgument { field: f, .. } => assert_eq!(f, field),
                other => panic!("{other:?}"),
            }
            assert!(e.to_string().contains(says), "{e}");
        }
    }

    #[test]
    fn huge_inputs_are_shortened_in_messages() {
        let c = cat();
        let name = "x".repeat(100_000);
        let e = c.parse(&name, "{}").unwrap_err();
        assert!(e.to_string().len() < 400);
        let args = format!(r#"{{"sku": "{}", "quantity": 20}}"#, "y".repeat(100_000));
        let e = c.parse("reorder", &args).unwrap_err();
        assert!(e.to_string().len() < 400);
    }
}
