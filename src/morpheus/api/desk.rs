//! The desk: where calls arrive, are answered, and turn into hours of the world.

use serde_json::{Value, json};

use super::call::{CallError, ToolCall};
use super::catalogue::{Catalogue, ToolName};
use super::reply::Reply;
use super::view::{self, Deliveries};
use crate::env::{Env, EnvError};
use crate::morpheus::resources::{Clock, FailureEngine, Ledger, Stats};
use crate::morpheus::roles::OpKind;
use crate::morpheus::{Morpheus, MorpheusConfig, Op};

/// Whatever moves the world one hour at a time: the world itself, or a harness around it
/// that records a trace row per hour.
///
/// Rules for implementors: `step_hour` advances exactly one hour with the action index given
/// (the world's `Discrete` table, 0 the no-op) and returns its reward; `world` shows the
/// state after the last step.
pub trait Stepper {
    /// What can go wrong while stepping (a full disk under a trace, say).
    type Error;
    /// The world, to read.
    fn world(&self) -> &Morpheus;
    /// One hour with this action.
    ///
    /// # Errors
    ///
    /// Whatever stops the hour from being simulated or recorded.
    fn step_hour(&mut self, action: usize) -> Result<Hour, Self::Error>;
}

/// What one hour gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hour {
    /// Its reward.
    pub reward: f64,
    /// Whether the episode ended with it (terminated or truncated).
    pub ended: bool,
}

impl Stepper for Morpheus {
    type Error = EnvError;

    fn world(&self) -> &Morpheus {
        self
    }

    fn step_hour(&mut self, action: usize) -> Result<Hour, EnvError> {
        let t = Env::step(self, &action)?;
        Ok(Hour {
            reward: t.reward,
            ended: t.terminated || t.truncated,
        })
    }
}

/// Settings of a [`Desk`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeskOptions {
    /// Calls answered within one hour, queries and errors included; the call beyond them
    /// is refused (409) and the hour passes with no operation, so no agent can stall the
    /// world (16).
    pub max_calls_per_hour: u32,
}

impl Default for DeskOptions {
    fn default() -> Self {
        DeskOptions {
            max_calls_per_hour: 16,
        }
    }
}

/// Calls counted since the desk opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Every call.
    pub calls: u64,
    /// Calls with a valid tool and arguments that are not a JSON object (400).
    pub malformed_calls: u64,
    /// Calls naming no tool (404) or with invalid arguments (422).
    pub invalid_calls: u64,
    /// Operations the world refused (409, 503).
    pub refused: u64,
    /// Operations of another role's tools, refused (403) by a role's desk.
    pub forbidden: u64,
    /// Hours that passed.
    pub hours: u64,
}

/// Answers tool calls against one world: queries from its state, operations by stepping
/// it one hour (one turn, one trace row), `wait` by stepping it with the no-op. Invalid
/// and malformed calls get their error reply, are counted, and change nothing but the
/// next hour's `invalid_calls` and `malformed_calls` signals: before it steps an hour, the
/// desk notes the calls of either kind since the previous one
/// ([`Morpheus::note_calls`]).
///
/// # Examples
///
/// ```
/// use perennial::morpheus::{Morpheus, MorpheusConfig, default_reward_spec};
/// use perennial::morpheus::api::{Desk, DeskOptions};
/// use perennial::prelude::*;
///
/// let mut env = Morpheus::new(MorpheusConfig::default(), default_reward_spec()).unwrap();
/// env.reset(7);
/// let mut desk = Desk::new(env.config(), DeskOptions::default());
/// let reply = desk.call(&mut env, "reorder", r#"{"sku": 2, "quantity": 50}"#).unwrap();
/// assert_eq!(reply.status, 200);
/// let reply = desk.call(&mut env, "wait", r#"{"hours": 25}"#).unwrap();
/// assert_eq!(reply.status, 422);
/// assert_eq!(env.counters().unwrap().hour, 1);
/// assert_eq!(desk.counts().invalid_calls, 1);
/// ```
#[derive(Clone, Debug)]
pub struct Desk {
    catalogue: Catalogue,
    options: DeskOptions,
    calls_this_hour: u32,
    counts: CallCounts,
    /// Invalid and malformed calls since the last hour, for the world's signals.
    unnoted: (u64, u64),
    deliveries: Deliveries,
    ended: bool,
    /// A role's desk: its name, the operation tools it owns, and its catalogue (those,
    /// `wait` and the queries).
    role: Option<(String, Vec<ToolName>, Catalogue)>,
}

impl Desk {
    /// A desk for `config`'s layout.
    pub fn new(config: &MorpheusConfig, options: DeskOptions) -> Self {
        Desk {
            catalogue: Catalogue::of(config),
            options,
            calls_this_hour: 0,
            counts: CallCounts::default(),
            unnoted: (0, 0),
            deliveries: Deliveries::default(),
            ended: false,
            role: None,
        }
    }

    /// The desk of role `role` of a world with roles, owning the operations `ops`: its
    /// catalogue lists only its own operation tools (beside `wait` and the queries), and
    /// a call to another role's tool is refused with a 403 naming the role and the tool,
    /// counted in [`CallCounts::forbidden`], and lets no hour pass. Only
    /// [`RoleDesks`](super::RoleDesks) answers through it, which passes the hour once
    /// every role has acted.
    pub(super) fn for_role(
        config: &MorpheusConfig,
        options: DeskOptions,
        role: &str,
        ops: &[OpKind],
    ) -> Self {
        let owned: Vec<ToolName> = ToolName::ALL
            .into_iter()
            .filter(|t| matches!(t, ToolName::Op(k) if ops.contains(k)))
            .collect();
        let mut desk = Desk::new(config, options);
        desk.catalogue = Catalogue::with_roles(config);
        let shown = desk
            .catalogue
            .only(|t| !t.is_operation() || t == ToolName::Wait || owned.contains(&t));
        desk.role = Some((role.to_string(), owned, shown));
        desk
    }

    /// The tools it answers (a role's desk: that role's).
    pub fn catalogue(&self) -> &Catalogue {
        self.role
            .as_ref()
            .map_or(&self.catalogue, |(_, _, shown)| shown)
    }

    /// Calls counted so far.
    pub fn counts(&self) -> CallCounts {
        self.counts
    }

    /// Deliveries observed, for `query_carriers`.
    pub fn deliveries(&self) -> &Deliveries {
        &self.deliveries
    }

    /// Forgets the world it served (its deliveries, its hour, whether it ended), for a
    /// world just reset or restored; the counts are kept.
    pub fn restart(&mut self) {
        self.calls_this_hour = 0;
        self.unnoted = (0, 0);
        self.deliveries = Deliveries::default();
        self.ended = false;
    }

    /// This desk for a copy of its world, as a fork starts from it: the same deliveries
    /// seen and the same episode, but none of its calls (no counts, no calls this hour, none
    /// waiting to be noted in the next hour's signals), so a fork's agent answers only for
    /// its own.
    pub fn without_calls(&self) -> Self {
        Desk {
            calls_this_hour: 0,
            counts: CallCounts::default(),
            unnoted: (0, 0),
            ..self.clone()
        }
    }

    /// Parses a call against every tool it knows (a role's desk: every role's, so that
    /// another role's tool is told apart from no tool).
    pub(super) fn parse(&self, name: &str, arguments: &str) -> Result<ToolCall, CallError> {
        self.catalogue.parse(name, arguments)
    }

    /// As [`Desk::parse`], with arguments as a JSON value.
    pub(super) fn parse_value(&self, name: &str, arguments: &Value) -> Result<ToolCall, CallError> {
        self.catalogue.parse_value(name, arguments)
    }

    /// Answers a call in the function-calling style: a tool name and its JSON arguments.
    ///
    /// # Errors
    ///
    /// Only what the stepper returns; every bad call gets an error reply instead.
    pub fn call<S: Stepper>(
        &mut self,
        stepper: &mut S,
        name: &str,
        arguments: &str,
    ) -> Result<Reply, S::Error> {
        let parsed = self.catalogue.parse(name, arguments);
        self.answer(stepper, parsed)
    }

    /// Answers a call whose arguments are a JSON value.
    ///
    /// # Errors
    ///
    /// As [`Desk::call`].
    pub fn call_value<S: Stepper>(
        &mut self,
        stepper: &mut S,
        name: &str,
        arguments: &Value,
    ) -> Result<Reply, S::Error> {
        let parsed = self.catalogue.parse_value(name, arguments);
        self.answer(stepper, parsed)
    }

    /// Answers a MORPHEUS-style request `{path, method, body}`.
    ///
    /// # Errors
    ///
    /// As [`Desk::call`].
    pub fn request<S: Stepper>(
        &mut self,
        stepper: &mut S,
        request: &Value,
    ) -> Result<Reply, S::Error> {
        let parsed = self.catalogue.parse_request(request);
        self.answer(stepper, parsed)
    }

    /// Answers a parsed call, or the error of one that did not parse.
    ///
    /// # Errors
    ///
    /// As [`Desk::call`].
    pub fn answer<S: Stepper>(
        &mut self,
        stepper: &mut S,
        parsed: Result<ToolCall, CallError>,
    ) -> Result<Reply, S::Error> {
        let op = match self.screen(stepper.world(), parsed) {
            Asked::Answered(reply) => return Ok(reply),
            Asked::Spent => {
                let (reward, hours) = self.pass(stepper, 1)?;
                self.counts.refused += 1;
                return Ok(Reply::failed(
                    409,
                    self.spent(),
                    json!({"hours_passed": hours, "reward": reward, "hour": now(stepper.world())}),
                ));
            }
            Asked::Wait(hours) => {
                let (reward, passed) = self.pass(stepper, hours)?;
                return Ok(Reply::ok(json!({
                    "hours_passed": passed, "reward": reward, "hour": now(stepper.world()),
                })));
            }
            Asked::Op(op) => op,
        };
        let env = stepper.world();
        let Some(action) = op.encode(env.config()) else {
            self.count_error(false);
            return Ok(Reply::failed(
                422,
                "the operation lies outside this layout",
                Value::Null,
            ));
        };
        let before = Before::of(env, op);
        let hour = self.hour(stepper, action)?;
        let data = json!({
            "hours_passed": 1, "reward": hour.reward, "hour": now(stepper.world()),
        });
        match before.refusal(stepper.world()) {
            None => Ok(Reply::ok(data)),
            Some((status, why)) => {
                self.counts.refused += 1;
                Ok(Reply::failed(status, why, data))
            }
        }
    }

    /// Counts a call and answers what needs no hour to pass: an error, a call to another
    /// role's tool, a query, anything after the episode's end; else says what the call
    /// asks of the world.
    pub(super) fn screen(
        &mut self,
        world: &Morpheus,
        parsed: Result<ToolCall, CallError>,
    ) -> Asked {
        self.counts.calls += 1;
        self.calls_this_hour += 1;
        if self.calls_this_hour > self.options.max_calls_per_hour && !self.ended {
            return Asked::Spent;
        }
        let call = match parsed {
            Ok(call) => call,
            Err(e) => {
                self.count_error(matches!(e, CallError::Malformed { .. }));
                return Asked::Answered(Reply::from(&e));
            }
        };
        if let Some((role, owned, shown)) = &self.role {
            let tool = call.tool();
            if matches!(tool, ToolName::Op(_)) && !owned.contains(&tool) {
                self.counts.forbidden += 1;
                return Asked::Answered(Reply::failed(
                    403,
                    format!(
                        "role `{role}` has no tool `{}`: it belongs to another role; this role's tools are: {}",
                        tool.as_str(),
                        shown.names().join(", ")
                    ),
                    Value::Null,
                ));
            }
        }
        let answered = match call {
            ToolCall::QueryInventory { sku } => Some(view::inventory(world, sku)),
            ToolCall::QueryOrders { kind, sku, limit } => {
                Some(view::orders(world, kind, sku, limit))
            }
            ToolCall::QueryLedger => Some(view::ledger(world)),
            ToolCall::QueryCarriers => Some(view::carriers(world, &self.deliveries)),
            _ => None,
        };
        if let Some(answer) = answered {
            return Asked::Answered(Reply::ok(answer));
        }
        if self.ended {
            self.counts.refused += 1;
            return Asked::Answered(Reply::failed(
                409,
                "the episode has ended; no more hours pass until the world is reset",
                Value::Null,
            ));
        }
        if let ToolCall::Wait { hours } = call {
            return Asked::Wait(hours);
        }
        // The parser admits only quantities of this layout, so every operation decodes.
        match call.op(world.config()) {
            Some(op) => Asked::Op(op),
            None => {
                self.count_error(false);
                Asked::Answered(Reply::failed(
                    422,
                    "the operation lies outside this layout",
                    Value::Null,
                ))
            }
        }
    }

    /// Why a call beyond the hour's budget was refused.
    pub(super) fn spent(&self) -> String {
        let who = match &self.role {
            Some((role, _, _)) => format!("role `{role}` passes"),
            None => "the hour passed".into(),
        };
        format!(
            "this hour's {} calls are spent; {who} with no operation",
            self.options.max_calls_per_hour
        )
    }

    /// Counts a refusal the caller made (a role acting twice in one hour).
    pub(super) fn count_refused(&mut self) {
        self.counts.refused += 1;
    }

    /// Lets up to `hours` hours pass with the no-op; stops at the episode's end.
    fn pass<S: Stepper>(&mut self, stepper: &mut S, hours: u32) -> Result<(f64, u32), S::Error> {
        let mut reward = 0.0;
        let mut passed = 0;
        while passed < hours && !self.ended {
            reward += self.hour(stepper, 0)?.reward;
            passed += 1;
        }
        Ok((reward, passed))
    }

    /// Counts an invalid or malformed call, in the desk's counts and in the notes the world
    /// gets before the next hour.
    fn count_error(&mut self, malformed: bool) {
        if malformed {
            self.counts.malformed_calls += 1;
            self.unnoted.1 += 1;
        } else {
            self.counts.invalid_calls += 1;
            self.unnoted.0 += 1;
        }
    }

    /// The invalid and malformed calls since the last hour, now handed to the world.
    pub(super) fn take_unnoted(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.unnoted)
    }

    /// Whether the episode has ended.
    pub(super) fn ended(&self) -> bool {
        self.ended
    }

    /// Notes that an hour passed in `world`.
    pub(super) fn passed(&mut self, world: &Morpheus, hour: Hour) {
        self.calls_this_hour = 0;
        self.counts.hours += 1;
        self.ended = hour.ended;
        self.deliveries.observe(world);
    }

    fn hour<S: Stepper>(&mut self, stepper: &mut S, action: usize) -> Result<Hour, S::Error> {
        let (invalid, malformed) = self.take_unnoted();
        stepper.world().note_calls(invalid, malformed);
        let hour = stepper.step_hour(action)?;
        self.passed(stepper.world(), hour);
        Ok(hour)
    }
}

/// What a call asks of the world once a desk has screened it.
pub(super) enum Asked {
    /// Nothing: its reply is ready (a query, an error, a refusal).
    Answered(Reply),
    /// The hour's calls are spent: the hour passes with no operation.
    Spent,
    /// `wait{hours}`.
    Wait(u32),
    /// One of the desk's operations.
    Op(Op),
}

pub(super) fn now(env: &Morpheus) -> u64 {
    env.ecs()
        .and_then(|w| w.get_resource::<Clock>())
        .map_or(0, |c| c.hour)
}

/// What the world looked like before an operation, to say why it refused it.
struct Before {
    op: Op,
    down: bool,
    rate_limited: u64,
    cash: f64,
}

impl Before {
    fn of(env: &Morpheus, op: Op) -> Self {
        let w = env.ecs();
        let hour = now(env);
        Before {
            op,
            down: w
                .and_then(|w| w.get_resource::<FailureEngine>())
                .is_some_and(|e| e.outage_until > hour),
            rate_limited: w
                .and_then(|w| w.get_resource::<Stats>())
                .map_or(0, |s| s.total.rate_limited),
            cash: w
                .and_then(|w| w.get_resource::<Ledger>())
                .map_or(0.0, |l| l.cash),
        }
    }

    /// The status and reason of the refusal, `None` when the world accepted the operation.
    /// The world is the authority (its `rejected_actions` signal); this only says why.
    fn refusal(&self, after: &Morpheus) -> Option<(u16, String)> {
        let refused = after.signals().get(5).is_some_and(|r| *r > 0.0);
        if !refused {
            return None;
        }
        let limited = after
            .ecs()
            .and_then(|w| w.get_resource::<Stats>())
            .is_some_and(|s| s.total.rate_limited > self.rate_limited);
        if limited {
            return Some((
                409,
                "the day's operation budget is spent; operations are accepted again after midnight"
                    .into(),
            ));
        }
        if self.down {
            return Some((
                503,
                "the warehouse system is down (outage); operations are refused until it is back, queries still answer".into(),
            ));
        }
        let cfg = after.config();
        let why = match self.op {
            Op::Reorder { sku, bucket } => format!(
                "paying for {} units of SKU {sku} would take cash ({:.0}) below the credit line (-{:.0})",
                cfg.reorder_quantities
                    .get(bucket as usize)
                    .copied()
                    .unwrap_or(0),
                self.cash,
                cfg.credit_limit
            ),
            Op::Expedite { sku } => {
                format!("SKU {sku} has no purchase order in transit that can still be expedited")
            }
            Op::RepairDock { dock } => {
                format!("dock {dock} works; only a broken door can be repaired")
            }
            Op::ChooseCarrier { carrier } => format!("carrier {carrier} cannot be chosen now"),
            Op::PrioritizeSku { sku } => format!("SKU {sku} cannot be prioritized now"),
            Op::HoldWave => "the wave is already held".into(),
            Op::Noop => "nothing to do".into(),
        };
        Some((409, why))
    }
}
