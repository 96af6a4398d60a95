//! The tool surface: the enterprise world's operations and queries as tools a language model calls.
//!
//! One [`Catalogue`] per layout defines every tool once; the OpenAI strict function schemas
//! ([`Catalogue::openai`]) and the MCP `Tool` objects ([`Catalogue::mcp`]) are both written
//! from it. Calls in either style (a tool name with JSON arguments, or MORPHEUS's
//! `{path, method, body}`) parse into one typed [`ToolCall`], and every call gets one
//! [`Reply`] envelope `{status, success, data, error}`:
//!
//! | status | when |
//! |---|---|
//! | 200 | done: a query's answer, or the hour an operation or `wait` took |
//! | 400 | the arguments are not a JSON object |
//! | 404 | no such tool (the reply lists the valid names) |
//! | 422 | an argument is missing, unknown, of the wrong type or out of range (the reply names the field and what is allowed) |
//! | 409 | the world refused the operation (why: cash below the credit line, nothing to expedite, the dock works, the day's budget spent), the hour's calls are spent, or the episode has ended |
//! | 503 | the warehouse system is down (an outage): operations are refused, queries answer |
//! | 403 | in a world with roles ([`RoleDesks`]): an operation tool of another role |
//!
//! # Turns and time
//!
//! One turn is one simulated hour and one trace row. Queries cost no time. An operation
//! (`reorder`, `choose_carrier`, `expedite`, `repair_dock`; in a world with roles also
//! `prioritize_sku` and `hold_wave`, each only at its role's desk) is the hour's action: the
//! [`Desk`] steps the world once with the operation's `Discrete` index, so an agent that
//! sends a numeric agent's decisions as tool calls leaves the very trace the numeric agent
//! leaves. A refused operation still takes its hour, as a refused index does.
//! `wait{hours}` lets 1 to 24 hours pass with the no-op, one row each. Invalid and
//! malformed calls change nothing and are counted ([`CallCounts`]); at most
//! [`DeskOptions::max_calls_per_hour`] calls are answered per hour. In a world with roles
//! ([`RoleDesks`]) an hour is every role's part of it: it passes once each role has acted
//! or passed.
//!
//! # What the tools see
//!
//! The queries and renderings ([`render_text`], [`render_json`]) read what an ERP, WMS or
//! TMS screen shows: stock through the information layer (the numeric observation's
//! readings, stale or missing alike), orders, the ledger, carriers' list terms and
//! their punctuality observed on deliveries. Never the regime label, the conditions, the
//! failure log or a random stream: one state renders to the same bytes under any regime.

mod call;
mod catalogue;
mod desk;
mod reply;
mod turns;
mod view;

pub use call::{CallError, OrderKind, ToolCall};
pub use catalogue::{
    Arg, ArgKind, Catalogue, MAX_LIMIT, MAX_WAIT_HOURS, ORDER_KINDS, Tool, ToolName,
};
pub use desk::{CallCounts, Desk, DeskOptions, Hour, Stepper};
pub use reply::Reply;
pub use turns::RoleDesks;
pub use view::{
    Deliveries, PUNCTUALITY_HOURS, TEXT_SKUS, carriers, inventory, ledger, orders, render_json,
    render_text,
};
