//! The desks of a world with roles: one per role, and the one rule that turns their calls
//! into hours.

use serde_json::{Value, json};

use super::call::{CallError, ToolCall};
use super::catalogue::Catalogue;
use super::desk::{Asked, CallCounts, Desk, DeskOptions, Stepper, now};
use super::reply::Reply;
use crate::morpheus::MorpheusConfig;
use crate::morpheus::roles::{RoleLayout, RoleTable};

/// What a role does in the hour under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    /// Not yet said.
    Open,
    /// This index of its own action table.
    Act(usize),
    /// The no-op, this hour and the next `n - 1`.
    Pass(u32),
}

/// One [`Desk`] per role of a world with roles, and the rule of the roles env itself: an
/// hour is one joint action, so **the hour passes once every role has acted or passed**.
/// A role's operation (or `wait{hours}`, which passes this hour and the next `hours - 1`)
/// is its part of the hour; the call that completes the hour steps the world once with
/// every role's part (the first role's the most significant digit, as
/// [`EnterpriseEnv::joint`](crate::morpheus::roles::EnterpriseEnv::joint) encodes it) and
/// answers with the hours that passed. Earlier calls answer 200 with `hours_passed: 0` and
/// the roles still `waiting_for`. A role that has already acted this hour is refused
/// (409), as is a call after its hour's call budget, which passes the role's hour.
/// Queries, errors and calls to another role's tool (403) never pass time.
///
/// The [`Stepper`] takes the world's own `Discrete` index, the joint action. Refusals by
/// the world are not told per call here (two roles' operations share the hour's
/// `rejected_actions` signal, which the next observation shows).
///
/// # Examples
///
/// ```
/// use perennial::morpheus::api::{DeskOptions, RoleDesks};
/// use perennial::morpheus::roles::{EnterpriseEnv, RoleTable};
/// use perennial::morpheus::{MorpheusConfig, default_reward_spec};
/// use perennial::prelude::*;
///
/// let (config, roles) = (MorpheusConfig::default(), RoleTable::default());
/// let mut env = EnterpriseEnv::new(config.clone(), default_reward_spec(), roles.clone()).unwrap();
/// env.reset(7);
/// let mut desks = RoleDesks::new(&config, DeskOptions::default(), &roles);
/// let r = desks.call(&mut env, 0, "reorder", r#"{"sku": 2, "quantity": 50}"#).unwrap();
/// assert_eq!(r.data["waiting_for"][0], "logistics");
/// let r = desks.call(&mut env, 1, "hold_wave", "{}").unwrap();
/// assert_eq!(r.data["hours_passed"], 1);
/// assert_eq!(env.world().counters().unwrap().hour, 1);
/// ```
#[derive(Clone, Debug)]
pub struct RoleDesks {
    names: Vec<String>,
    desks: Vec<Desk>,
    layouts: Vec<RoleLayout>,
    turns: Vec<Turn>,
}

impl RoleDesks {
    /// A desk per role of `roles` in `config`'s world.
    pub fn new(config: &MorpheusConfig, options: DeskOptions, roles: &RoleTable) -> Self {
        let desks = roles
            .roles
            .iter()
            .map(|r| Desk::for_role(config, options, &r.name, &r.ops))
            .collect();
        RoleDesks {
            names: roles.roles.iter().map(|r| r.name.clone()).collect(),
            desks,
            layouts: roles
                .roles
                .iter()
                .map(|r| RoleLayout::new(r, config))
                .collect(),
            turns: vec![Turn::Open; roles.roles.len()],
        }
    }

    /// The role names, in role order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The index of role `name`, or a message naming the roles.
    ///
    /// # Errors
    ///
    /// No role has that name.
    pub fn position(&self, name: &str) -> Result<usize, String> {
        self.names.iter().position(|n| n == name).ok_or_else(|| {
            let shown: String = name.chars().take(40).collect();
            format!(
                "no role `{}` in this world; its roles are: {}",
                shown.replace(|c: char| c.is_control(), "?"),
                self.names.join(", ")
            )
        })
    }

    /// Role `r`'s tools: its operations, `wait` and the queries.
    pub fn catalogue(&self, r: usize) -> Option<&Catalogue> {
        self.desks.get(r).map(Desk::catalogue)
    }

    /// Role `r`'s calls counted so far.
    pub fn role_counts(&self, r: usize) -> Option<CallCounts> {
        self.desks.get(r).map(Desk::counts)
    }

    /// Every role's calls summed; `hours` the hours that passed.
    pub fn counts(&self) -> CallCounts {
        let mut sum = CallCounts::default();
        for c in self.desks.iter().map(Desk::counts) {
            sum.calls += c.calls;
            sum.malformed_calls += c.malformed_calls;
            sum.invalid_calls += c.invalid_calls;
            sum.refused += c.refused;
            sum.forbidden += c.forbidden;
            sum.hours = sum.hours.max(c.hours);
        }
        sum
    }

    /// The roles that have not yet acted in the hour under way, in role order.
    pub fn waiting_for(&self) -> Vec<&str> {
        self.names
            .iter()
            .zip(&self.turns)
            .filter(|(_, t)| **t == Turn::Open)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// Forgets the world served (as [`Desk::restart`]) and every role's part of the hour.
    pub fn restart(&mut self) {
        self.desks.iter_mut().for_each(Desk::restart);
        self.turns.iter_mut().for_each(|t| *t = Turn::Open);
    }

    /// These desks for a copy of their world (as [`Desk::without_calls`]); the roles'
    /// parts of the hour under way are kept, as the world's hour is.
    pub fn without_calls(&self) -> Self {
        RoleDesks {
            desks: self.desks.iter().map(Desk::without_calls).collect(),
            ..self.clone()
        }
    }

    /// Answers role `r`'s call: a tool name and its JSON arguments.
    ///
    /// # Errors
    ///
    /// Only what the stepper returns; every bad call gets an error reply instead.
    pub fn call<S: Stepper>(
        &mut self,
        stepper: &mut S,
        r: usize,
        name: &str,
        arguments: &str,
    ) -> Result<Reply, S::Error> {
        let parsed = self.desks.get(r).map(|d| d.parse(name, arguments));
        self.answer(stepper, r, parsed)
    }

    /// Answers role `r`'s call whose arguments are a JSON value.
    ///
    /// # Errors
    ///
    /// As [`RoleDesks::call`].
    pub fn call_value<S: Stepper>(
        &mut self,
        stepper: &mut S,
        r: usize,
        name: &str,
        arguments: &Value,
    ) -> Result<Reply, S::Error> {
        let parsed = self.desks.get(r).map(|d| d.parse_value(name, arguments));
        self.answer(stepper, r, parsed)
    }

    fn answer<S: Stepper>(
        &mut self,
        stepper: &mut S,
        r: usize,
        parsed: Option<Result<ToolCall, CallError>>,
    ) -> Result<Reply, S::Error> {
        let (Some(parsed), Some(desk)) = (parsed, self.desks.get_mut(r)) else {
            return Ok(Reply::failed(
                422,
                format!("no role {r}; the roles are: {}", self.names.join(", ")),
                Value::Null,
            ));
        };
        let turn = match desk.screen(stepper.world(), parsed) {
            Asked::Answered(reply) => return Ok(reply),
            Asked::Spent => {
                desk.count_refused();
                let why = desk.spent();
                if self.turns[r] == Turn::Open {
                    self.turns[r] = Turn::Pass(1);
                }
                let data = self.advance(stepper)?;
                return Ok(Reply::failed(409, why, data));
            }
            Asked::Wait(hours) => Turn::Pass(hours.max(1)),
            Asked::Op(op) => match self.layouts[r].encode(op) {
                Some(i) => Turn::Act(i),
                None => {
                    return Ok(Reply::failed(
                        422,
                        "the operation lies outside this role's layout",
                        Value::Null,
                    ));
                }
            },
        };
        if self.turns[r] != Turn::Open {
            desk.count_refused();
            return Ok(Reply::failed(
                409,
                format!(
                    "role `{}` has already acted this hour; the hour passes once {} act (queries still answer)",
                    self.names[r],
                    self.waiting_for().join(" and ")
                ),
                json!({"hours_passed": 0, "hour": now(stepper.world()), "waiting_for": self.waiting_for()}),
            ));
        }
        self.turns[r] = turn;
        let data = self.advance(stepper)?;
        Ok(Reply::ok(data))
    }

    /// Steps the world while every role has its part of the hour (an operation, or a pass
    /// still running); says the hours that passed, their reward and who is awaited.
    fn advance<S: Stepper>(&mut self, stepper: &mut S) -> Result<Value, S::Error> {
        let (mut passed, mut reward) = (0u32, 0.0);
        while !self.turns.contains(&Turn::Open) && !self.desks.iter().any(Desk::ended) {
            let per_role: Vec<usize> = self
                .turns
                .iter()
                .map(|t| match t {
                    Turn::Act(i) => *i,
                    _ => 0,
                })
                .collect();
            let joint = self
                .layouts
                .iter()
                .zip(&per_role)
                .fold(0usize, |j, (l, &i)| j * l.actions + i);
            let (mut invalid, mut malformed) = (0, 0);
            for d in &mut self.desks {
                let (i, m) = d.take_unnoted();
                invalid += i;
                malformed += m;
            }
            stepper.world().note_calls(invalid, malformed);
            let hour = stepper.step_hour(joint)?;
            for d in &mut self.desks {
                d.passed(stepper.world(), hour);
            }
            for t in &mut self.turns {
                *t = match *t {
                    Turn::Pass(n) if n > 1 => Turn::Pass(n - 1),
                    _ => Turn::Open,
                };
            }
            passed += 1;
            reward += hour.reward;
        }
        Ok(json!({
            "hours_passed": passed,
            "reward": reward,
            "hour": now(stepper.world()),
            "waiting_for": self.waiting_for(),
        }))
    }
}
