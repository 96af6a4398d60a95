//! The tool catalogue: one definition per tool, generated from the layout, from which the
//! OpenAI strict function schemas and the MCP `Tool` objects are both written.

use serde_json::{Map, Value, json};

use crate::morpheus::MorpheusConfig;
use crate::morpheus::roles::{OpKind, PRIORITY_HOURS};

/// The tools of the enterprise world, in catalogue order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolName {
    /// An operation on the world, called by its kind's name ([`OpKind::name`]):
    /// `reorder` buys units of a SKU from its supplier, `choose_carrier` picks the carrier
    /// of the outbound waves, `expedite` halves the remaining lead time of a SKU's oldest
    /// purchase order, `repair_dock` repairs a broken dock door; in a world with roles,
    /// `prioritize_sku` ships a SKU's orders first in the next day's waves and `hold_wave`
    /// holds this hour's wave to ship it with the next at a discount.
    Op(OpKind),
    /// End the turn and let hours pass.
    Wait,
    /// Stock per SKU and the cash available for purchases.
    QueryInventory,
    /// Open customer orders, purchase orders or shipments.
    QueryOrders,
    /// The ledger: cash, revenue and costs.
    QueryLedger,
    /// The carriers' terms and observed punctuality.
    QueryCarriers,
}

impl ToolName {
    /// Every tool, in catalogue order: the operations in [`OpKind::ALL`] order, then the
    /// rest.
    pub const ALL: [ToolName; 11] = [
        ToolName::Op(OpKind::Reorder),
        ToolName::Op(OpKind::ChooseCarrier),
        ToolName::Op(OpKind::Expedite),
        ToolName::Op(OpKind::RepairDock),
        ToolName::Op(OpKind::PrioritizeSku),
        ToolName::Op(OpKind::HoldWave),
        ToolName::Wait,
        ToolName::QueryInventory,
        ToolName::QueryOrders,
        ToolName::QueryLedger,
        ToolName::QueryCarriers,
    ];

    /// The name a model calls it by.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Op(kind) => kind.name(),
            ToolName::Wait => "wait",
            ToolName::QueryInventory => "query_inventory",
            ToolName::QueryOrders => "query_orders",
            ToolName::QueryLedger => "query_ledger",
            ToolName::QueryCarriers => "query_carriers",
        }
    }

    /// The MORPHEUS-style route: `(method, path)`.
    pub fn route(self) -> (&'static str, &'static str) {
        let post = |path| ("POST", path);
        match self {
            ToolName::Op(kind) => post(match kind {
                OpKind::Reorder => "/inventory/reorder",
                OpKind::ChooseCarrier => "/logistics/carrier",
                OpKind::Expedite => "/inventory/expedite",
                OpKind::RepairDock => "/docks/repair",
                OpKind::PrioritizeSku => "/logistics/priority",
                OpKind::HoldWave => "/logistics/hold",
            }),
            ToolName::Wait => post("/clock/wait"),
            ToolName::QueryInventory => ("GET", "/inventory"),
            ToolName::QueryOrders => ("GET", "/orders"),
            ToolName::QueryLedger => ("GET", "/ledger"),
            ToolName::QueryCarriers => ("GET", "/carriers"),
        }
    }

    /// Whether the tool changes the world (and so ends the turn); queries cost no time.
    pub fn is_operation(self) -> bool {
        matches!(self, ToolName::Op(_) | ToolName::Wait)
    }

    /// Whether only a world with roles offers it (`prioritize_sku`, `hold_wave`: the
    /// single-agent action table has no index for them).
    pub fn roles_only(self) -> bool {
        matches!(self, ToolName::Op(OpKind::PrioritizeSku | OpKind::HoldWave))
    }

    /// The tool called `name`, if there is one.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// What values an argument takes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ArgKind {
    /// An integer index `0..count` (a SKU, carrier or dock), or `null` when `nullable`.
    Index {
        /// How many there are.
        count: usize,
        /// Whether `null` (meaning "all") is allowed.
        nullable: bool,
    },
    /// One of these integers (reorder quantities, hours).
    Choice(Vec<u64>),
    /// An integer in `min..=max`.
    Range {
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
    /// One of these words.
    Word(Vec<&'static str>),
}

impl ArgKind {
    /// The JSON Schema of the argument's values.
    fn schema(&self, description: &str) -> Value {
        match self {
            ArgKind::Index { count, nullable } => {
                let mut values: Vec<Value> = (0..*count).map(|i| json!(i)).collect();
                let ty = if *nullable {
                    values.push(Value::Null);
                    json!(["integer", "null"])
                } else {
                    json!("integer")
                };
                json!({"type": ty, "description": description, "enum": values})
            }
            ArgKind::Choice(values) => {
                json!({"type": "integer", "description": description, "enum": values})
            }
            ArgKind::Range { min, max } => json!({
                "type": "integer", "description": description, "minimum": min, "maximum": max,
            }),
            ArgKind::Word(words) => {
                json!({"type": "string", "description": description, "enum": words})
            }
        }
    }

    /// What is allowed, in words, for error replies.
    pub fn allowed(&self) -> String {
        match self {
            ArgKind::Index { count, nullable } => {
                let null = if *nullable { ", or null for all" } else { "" };
                format!("an integer from 0 to {}{null}", count.saturating_sub(1))
            }
            ArgKind::Choice(values) => format!("one of {values:?}"),
            ArgKind::Range { min, max } => format!("an integer from {min} to {max}"),
            ArgKind::Word(words) => format!("one of {words:?}"),
        }
    }
}

/// One argument of a tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// Its name in the arguments object.
    pub name: &'static str,
    /// What it means, for the model.
    pub description: String,
    /// The values it takes.
    pub kind: ArgKind,
}

/// One tool: its name, what it does, its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// Its name.
    pub name: ToolName,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments, every one required.
    pub args: Vec<Arg>,
}

impl Tool {
    /// The JSON Schema of the arguments object: every field required, no others allowed.
    pub fn input_schema(&self) -> Value {
        let mut properties = Map::new();
        for arg in &self.args {
            properties.insert(arg.name.into(), arg.kind.schema(&arg.description));
        }
        let required: Vec<&str> = self.args.iter().map(|a| a.name).collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }

    /// The tool as an OpenAI Chat Completions function tool in strict form.
    pub fn openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name.as_str(),
                "description": self.description,
                "strict": true,
                "parameters": self.input_schema(),
            },
        })
    }

    /// The tool as an MCP `Tool` object.
    pub fn mcp(&self) -> Value {
        json!({
            "name": self.name.as_str(),
            "description": self.description,
            "inputSchema": self.input_schema(),
        })
    }

    /// The argument called `name`.
    pub fn arg(&self, name: &str) -> Option<&Arg> {
        self.args.iter().find(|a| a.name == name)
    }
}

/// Kinds of order `query_orders` lists.
pub const ORDER_KINDS: [&str; 3] = ["customer", "purchase", "shipment"];

/// Largest `limit` of `query_orders`.
pub const MAX_LIMIT: u64 = 50;

/// Longest `wait`, hours.
pub const MAX_WAIT_HOURS: u64 = 24;

/// Every tool of one layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Catalogue {
    tools: Vec<Tool>,
}

impl Catalogue {
    /// The tools of `config`'s single-agent layout: its SKUs, reorder quantities, carriers
    /// and docks (every tool but the roles-only ones, [`ToolName::roles_only`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use perennial::morpheus::MorpheusConfig;
    /// use perennial::morpheus::api::Catalogue;
    ///
    /// let tools = Catalogue::of(&MorpheusConfig::default());
    /// let reorder = &tools.openai()[0]["function"];
    /// assert_eq!(reorder["name"], "reorder");
    /// assert_eq!(reorder["parameters"]["properties"]["quantity"]["enum"][3], 200);
    /// ```
    pub fn of(config: &MorpheusConfig) -> Self {
        Catalogue::with_roles(config).only(|t| !t.roles_only())
    }

    /// Every tool of `config`'s layout in a world with roles: those of [`Catalogue::of`]
    /// and `prioritize_sku`, `hold_wave`. A role's desk cuts it to the role's own.
    pub fn with_roles(config: &MorpheusConfig) -> Self {
        let index = |name, what: &str, count: usize| Arg {
            name,
            description: format!("{what} index, 0 to {}.", count - 1),
            kind: ArgKind::Index {
                count,
                nullable: false,
            },
        };
        let sku = index("sku", "SKU", config.skus);
        let any_sku = Arg {
            description: "SKU index, or null for every SKU.".into(),
            kind: ArgKind::Index {
                count: config.skus,
                nullable: true,
            },
            ..sku.clone()
        };
        let tool = |name, description: String, args| Tool {
            name,
            description,
            args,
        };
        // An operation spends the hour's (or, in a world with roles, the role's) operation.
        let op = |kind, what: &str, args| {
            let name = ToolName::Op(kind);
            let spends = if name.roles_only() {
                "Uses this role's operation of the hour."
            } else {
                "Uses this hour's operation and ends the turn."
            };
            tool(name, format!("{what} {spends}"), args)
        };
        let tools = vec![
            op(
                OpKind::Reorder,
                "Buy units of a SKU from its supplier, paid now; they arrive after the supplier's lead time. Refused when the payment would take cash below the credit line.",
                vec![
                    sku.clone(),
                    Arg {
                        name: "quantity",
                        description: "Units to buy; one of the allowed order sizes.".into(),
                        kind: ArgKind::Choice(config.reorder_quantities.clone()),
                    },
                ],
            ),
            op(
                OpKind::ChooseCarrier,
                "Use this carrier for the outbound waves from now on.",
                vec![index("carrier", "Carrier", config.carriers)],
            ),
            op(
                OpKind::Expedite,
                "Halve the remaining lead time of the SKU's oldest purchase order in transit, for the expedite fee. Refused when none is in transit.",
                vec![sku.clone()],
            ),
            op(
                OpKind::RepairDock,
                "Repair a broken dock door so it unloads this hour, for the repair cost. Refused when the door works.",
                vec![index("dock", "Dock door", config.docks)],
            ),
            op(
                OpKind::PrioritizeSku,
                &format!("Ship this SKU's open orders first in the outbound waves of the next {PRIORITY_HOURS} hours."),
                vec![sku.clone()],
            ),
            op(
                OpKind::HoldWave,
                "Hold this hour's outbound wave so it ships with the next one, whose shipping then costs half. Refused when the wave is already held.",
                vec![],
            ),
            tool(
                ToolName::Wait,
                "Do nothing and let hours pass; ends the turn.".into(),
                vec![Arg {
                    name: "hours",
                    description: format!("Hours to let pass, 1 to {MAX_WAIT_HOURS}."),
                    kind: ArgKind::Choice((1..=MAX_WAIT_HOURS).collect()),
                }],
            ),
            tool(
                ToolName::QueryInventory,
                "Stock per SKU (on hand, reserved, in the pipeline, backlog) and the cash available for purchases. Costs no time.".into(),
                vec![any_sku.clone()],
            ),
            tool(
                ToolName::QueryOrders,
                "Open customer orders, purchase orders in transit or shipments on their way, oldest first. Costs no time.".into(),
                vec![
                    Arg {
                        name: "kind",
                        description: "Which orders: customer, purchase or shipment.".into(),
                        kind: ArgKind::Word(ORDER_KINDS.to_vec()),
                    },
                    any_sku,
                    Arg {
                        name: "limit",
                        description: format!("Most orders to list, 1 to {MAX_LIMIT}."),
                        kind: ArgKind::Range {
                            min: 1,
                            max: MAX_LIMIT,
                        },
                    },
                ],
            ),
            tool(
                ToolName::QueryLedger,
                "Cash, the credit line, revenue and costs by category, since the start and in the last hour. Costs no time.".into(),
                vec![],
            ),
            tool(
                ToolName::QueryCarriers,
                "Each carrier's nominal transit time, cost and on-time rate, whether it is here, and the on-time rate observed over the last 24 hours. Costs no time.".into(),
                vec![],
            ),
        ];
        Catalogue { tools }
    }

    /// The tools, in catalogue order.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`, `None` when this catalogue does not offer it.
    pub fn get(&self, name: ToolName) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The catalogue of the tools `keep` keeps, in catalogue order (a role's tools: its
    /// operations, `wait` and the queries).
    pub fn only(&self, keep: impl Fn(ToolName) -> bool) -> Catalogue {
        let tools = self
            .tools
            .iter()
            .filter(|t| keep(t.name))
            .cloned()
            .collect();
        Catalogue { tools }
    }

    /// The tool names, in catalogue order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// Every tool as an OpenAI strict function tool.
    pub fn openai(&self) -> Vec<Value> {
        self.tools.iter().map(Tool::openai).collect()
    }

    /// Every tool as an MCP `Tool` object.
    pub fn mcp(&self) -> Vec<Value> {
        self.tools.iter().map(Tool::mcp).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_strict(schema: &Value) {
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        let props = schema["properties"].as_object().unwrap();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut sorted = required.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, names, "every field is required");
        for (name, p) in props {
            assert!(p["description"].is_string(), "{name} is described");
        }
    }

    #[test]
    fn every_tool_is_strict_in_both_forms_from_one_schema() {
        for cfg in [
            MorpheusConfig::default(),
            MorpheusConfig::default().scaled(10),
        ] {
            let cat = Catalogue::with_roles(&cfg);
            assert_eq!(cat.names().len(), ToolName::ALL.len());
            assert_eq!(Catalogue::of(&cfg).names().len(), ToolName::ALL.len() - 2);
            for (openai, mcp) in cat.openai().iter().zip(cat.mcp()) {
                let f = &openai["function"];
                assert_eq!(openai["type"], "function");
                assert_eq!(f["strict"], true);
                assert_eq!(f["name"], mcp["name"]);
                assert_eq!(f["description"], mcp["description"]);
                assert_eq!(f["parameters"], mcp["inputSchema"]);
                assert_strict(&mcp["inputSchema"]);
            }
        }
    }

    #[test]
    fn the_layout_sets_the_enums() {
        let cfg = MorpheusConfig {
            skus: 3,
            reorder_quantities: vec![5, 7],
            carriers: 2,
            docks: 6,
            ..Default::default()
        };
        let cat = Catalogue::of(&cfg);
        let props = |t: ToolName| cat.get(t).unwrap().input_schema()["properties"].clone();
        assert_eq!(
            props(ToolName::Op(OpKind::Reorder))["sku"]["enum"],
            json!([0, 1, 2])
        );
        assert_eq!(
            props(ToolName::Op(OpKind::Reorder))["quantity"]["enum"],
            json!([5, 7])
        );
        assert_eq!(
            props(ToolName::Op(OpKind::ChooseCarrier))["carrier"]["enum"],
            json!([0, 1])
        );
        assert_eq!(
            props(ToolName::Op(OpKind::RepairDock))["dock"]["enum"],
            json!([0, 1, 2, 3, 4, 5])
        );
        assert_eq!(
            props(ToolName::QueryInventory)["sku"],
            json!({"type": ["integer", "null"], "description": "SKU index, or null for every SKU.", "enum": [0, 1, 2, null]})
        );
        assert_eq!(props(ToolName::Wait)["hours"]["enum"][23], 24);
        assert_eq!(
            cat.get(ToolName::QueryLedger).unwrap().input_schema()["required"],
            json!([])
        );
        assert!(cat.get(ToolName::Op(OpKind::PrioritizeSku)).is_none());
        let roles = Catalogue::with_roles(&cfg);
        let props = |t: ToolName| roles.get(t).unwrap().input_schema()["properties"].clone();
        assert_eq!(
            props(ToolName::Op(OpKind::PrioritizeSku))["sku"]["enum"],
            json!([0, 1, 2])
        );
        assert_eq!(props(ToolName::Op(OpKind::HoldWave)), json!({}));
    }

    #[test]
    fn every_name_parses_back_and_routes_are_distinct() {
        let mut routes = std::collections::HashSet::new();
        for t in ToolName::ALL {
            assert_eq!(ToolName::parse(t.as_str()), Some(t));
            assert!(routes.insert(t.route()));
        }
        assert_eq!(ToolName::parse("reorderr"), None);
    }
}
