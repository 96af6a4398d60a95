//! One session's world: a run of an enterprise world and the desk that answers its tool
//! calls, or one role's share of a world with roles.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value, json};

use super::worlds::{ServedWorld, quote};
use crate::env::Env;
use crate::episodes::{DeskLog, TranscriptWriter};
use crate::morpheus::Morpheus;
use crate::morpheus::api::{
    CallCounts, Catalogue, Desk, DeskOptions, Hour, Reply, RoleDesks, Stepper, render_json,
    render_text,
};
use crate::morpheus::roles::EnterpriseEnv;
use crate::regime::Shiftable;
use crate::session::{Session, SessionState, StepError};
use crate::trace::TraceFormat;

/// The most hours a reset may give a session.
pub(crate) const MAX_HOURS: u64 = 10_000_000;

/// What a reset asks for: a world and a seed, or a snapshot; and how many hours the
/// episode lasts.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ResetOptions {
    /// The world's id (`warehouse` when neither it nor a snapshot is named).
    pub(crate) world: Option<String>,
    /// The run seed (0).
    pub(crate) seed: Option<u64>,
    /// The episode's length in hours, counted from the reset (none: the world's own).
    pub(crate) hours: Option<u64>,
    /// A snapshot id from `POST /snapshots`: the session starts from that state.
    pub(crate) snapshot: Option<String>,
    /// The client's name for the episode, reported back in `state`.
    pub(crate) episode_id: Option<String>,
    /// In a world with roles, the role this session acts as.
    pub(crate) role: Option<String>,
    /// A session of a world with roles to join: this session acts as `role` in its world.
    pub(crate) join: Option<String>,
}

impl ResetOptions {
    /// The options of an OpenEnv reset frame's `data` object.
    pub(crate) fn from_json(data: &Value) -> Result<Self, String> {
        let Some(obj) = data.as_object() else {
            return Err(format!(
                "reset data is an object such as {{\"world\": \"warehouse\", \"seed\": 3}}, not {}",
                shown(data)
            ));
        };
        let mut out = ResetOptions::default();
        for (key, value) in obj {
            match key.as_str() {
                "world" | "snapshot" | "episode_id" | "role" | "join" => {
                    let Some(s) = value.as_str() else {
                        if value.is_null() {
                            continue;
                        }
                        return Err(format!(
                            "reset option `{key}` is a string, not {}",
                            shown(value)
                        ));
                    };
                    let slot = match key.as_str() {
                        "world" => &mut out.world,
                        "snapshot" => &mut out.snapshot,
                        "role" => &mut out.role,
                        "join" => &mut out.join,
                        _ => &mut out.episode_id,
                    };
                    *slot = Some(s.chars().take(200).collect());
                }
                "seed" | "hours" => {
                    if value.is_null() {
                        continue;
                    }
                    let Some(n) = value.as_u64() else {
                        return Err(format!(
                            "reset option `{key}` is a whole number of 0 or more, not {}",
                            shown(value)
                        ));
                    };
                    if key == "seed" {
                        out.seed = Some(n);
                    } else {
                        out.hours = Some(n);
                    }
                }
                other => {
                    return Err(format!(
                        "unknown reset option `{}`; the options are world, seed, hours, snapshot, episode_id, role and join",
                        quote(other)
                    ));
                }
            }
        }
        out.check()?;
        Ok(out)
    }

    /// The options of a URL query (`world=warehouse&seed=3`), for MCP clients.
    pub(crate) fn from_query(pairs: &[(String, String)]) -> Result<Self, String> {
        let mut obj = Map::new();
        for (key, value) in pairs {
            let v = match key.as_str() {
                "seed" | "hours" => match value.parse::<u64>() {
                    Ok(n) => Value::from(n),
                    Err(_) => {
                        return Err(format!(
                            "query option `{key}` is a whole number of 0 or more, not `{}`",
                            quote(value)
                        ));
                    }
                },
                _ => Value::from(value.as_str()),
            };
            obj.insert(key.clone(), v);
        }
        Self::from_json(&Value::Object(obj))
    }

    fn check(&self) -> Result<(), String> {
        if let Some(h) = self.hours
            && !(1..=MAX_HOURS).contains(&h)
        {
            return Err(format!(
                "reset option `hours` is {h}; use 1 to {MAX_HOURS}, or leave it out for the world's own length"
            ));
        }
        if self.join.is_some() {
            if self.world.is_some()
                || self.seed.is_some()
                || self.hours.is_some()
                || self.snapshot.is_some()
            {
                return Err("reset option `join` takes the world of the session it joins; name only `join` and `role`".into());
            }
            if self.role.is_none() {
                return Err("reset option `join` needs `role`: the role this session acts as in the joined world".into());
            }
        }
        if self.snapshot.is_some() && self.seed.is_some() {
            return Err(
                "a snapshot fixes the world and its seed; name the snapshot without a seed".into(),
            );
        }
        Ok(())
    }
}

/// A saved session: what `POST /snapshots` keeps and a reset naming it restores.
#[derive(Clone)]
pub(crate) struct Saved {
    pub(crate) world: Arc<ServedWorld>,
    pub(crate) state: SessionState,
    desk: SavedDesk,
}

/// The desks of a saved session.
#[derive(Clone)]
enum SavedDesk {
    One(Desk),
    Roles(RoleDesks),
}

/// One session's run: the world it plays, by itself or as one role of a world that
/// several sessions share.
pub(crate) struct Run {
    world: Arc<ServedWorld>,
    snapshot: Option<String>,
    episode_id: Option<String>,
    play: Play,
}

enum Play {
    /// A single-agent world: this session's alone.
    One(Box<Solo>),
    /// A world with roles, shared by the sessions that joined it; this one acts as `role`.
    Roles {
        table: Arc<Mutex<Table>>,
        role: usize,
    },
}

/// A run through the run core ([`Session`]): the hours left in the episode and what they
/// gave.
struct Core<E: Env + Shiftable> {
    session: Session<E>,
    budget: Option<u64>,
    passed: u64,
    ended: bool,
    reward: f64,
}

impl<E: Env<Action = usize> + Shiftable + Stepper> Core<E> {
    fn new(session: Session<E>, budget: Option<u64>) -> Self {
        Core {
            ended: session.episode_ended(),
            session,
            budget,
            passed: 0,
            reward: 0.0,
        }
    }

    fn hours(&mut self) -> Hours<'_, E> {
        Hours {
            session: &mut self.session,
            budget: self.budget,
            passed: &mut self.passed,
            ended: &mut self.ended,
            reward: &mut self.reward,
        }
    }

    fn world(&self) -> &Morpheus {
        Stepper::world(self.session.env())
    }

    /// The session's state, for OpenEnv's `state` (`episode_id`, `step_count`) and more.
    fn state(&self, counts: CallCounts) -> Map<String, Value> {
        let json = json!({
            "step_count": self.passed,
            "seed": self.session.identity().seed,
            "hour": self.session.counters().step,
            "hours": self.budget,
            "done": self.ended,
            "reward": self.reward,
            "calls": counts.calls,
            "invalid_calls": counts.invalid_calls,
            "malformed_calls": counts.malformed_calls,
            "refused": counts.refused,
            "forbidden": counts.forbidden,
        });
        match json {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

impl<E: Env + Shiftable> Drop for Core<E> {
    fn drop(&mut self) {
        // A session's end is its trace's end; nobody is left to hear of a failure.
        let _ = self.session.close();
    }
}

/// A single-agent world's run, its desk and its transcript when it writes one.
struct Solo {
    core: Core<Morpheus>,
    desk: Desk,
    transcript: Option<DeskLog>,
}

impl Drop for Solo {
    fn drop(&mut self) {
        if let Some(t) = self.transcript.take() {
            let _ = t.finish();
        }
    }
}

/// A world with roles: its run and one desk per role, shared by the sessions that act in
/// it.
struct Table {
    core: Core<EnterpriseEnv>,
    desks: RoleDesks,
}

/// The run as a [`Stepper`]: each hour is one step of the run core; the episode also ends
/// when the reset's hours are spent.
struct Hours<'a, E: Env + Shiftable> {
    session: &'a mut Session<E>,
    budget: Option<u64>,
    passed: &'a mut u64,
    ended: &'a mut bool,
    reward: &'a mut f64,
}

impl<E: Env<Action = usize> + Shiftable + Stepper> Stepper for Hours<'_, E> {
    type Error = StepError;

    fn world(&self) -> &Morpheus {
        Stepper::world(self.session.env())
    }

    fn step_hour(&mut self, action: usize) -> Result<Hour, StepError> {
        let stepped = self.session.step(&action)?;
        *self.passed += 1;
        *self.reward += stepped.reward;
        let ended = stepped.done() || self.budget.is_some_and(|b| *self.passed >= b);
        *self.ended = ended;
        Ok(Hour {
            reward: stepped.reward,
            ended,
        })
    }
}

/// The index of the role `asked` in `world`, which must name one exactly when the world
/// has roles.
fn role_of(world: &ServedWorld, asked: Option<&str>) -> Result<Option<usize>, String> {
    match (&world.roles, asked) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(format!(
            "reset option `role`: world `{}` has no roles; leave `role` out, or serve a world file with a [roles] table",
            world.id
        )),
        (Some(roles), None) => Err(format!(
            "reset option `role` is missing: world `{}` is run by several roles; name the one this session acts as: {}",
            world.id,
            roles.names().join(", ")
        )),
        (Some(roles), Some(name)) => roles.position(name).map(Some).ok_or_else(|| {
            format!(
                "reset option `role`: no role `{}` in world `{}`; its roles are: {}",
                quote(name),
                world.id,
                roles.names().join(", ")
            )
        }),
    }
}

fn locked(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    // A panic while the lock was held cannot have left the world half stepped in a way
    // that matters more than refusing every role's session, so the lock is taken back.
    table.lock().unwrap_or_else(|p| p.into_inner())
}

impl Run {
    /// A new run of `world` with run seed `seed`; given `trace`, a directory and the run
    /// id, it writes its trace (and, a single-agent world, its transcript) there
    /// (`<run-id>.jsonl`, `<run-id>.transcript.jsonl`).
    pub(crate) fn new(
        world: &Arc<ServedWorld>,
        seed: u64,
        options: &ResetOptions,
        trace: Option<(&Path, &str)>,
    ) -> Result<Self, String> {
        match role_of(world, options.role.as_deref())? {
            None => {
                let mut session = world.session(seed)?;
                open_trace(&mut session, trace)?;
                session.start().map_err(|e| e.to_string())?;
                let desk = Desk::new(&world.config, DeskOptions::default());
                Run::of(world, session, desk, None, options, trace)
            }
            Some(role) => {
                let mut session = world.roles_session(seed)?;
                open_trace(&mut session, trace)?;
                session.start().map_err(|e| e.to_string())?;
                let desks = RoleDesks::new(
                    &world.config,
                    DeskOptions::default(),
                    world.roles.as_ref().ok_or("the world has no roles")?,
                );
                Ok(Run::of_roles(world, session, desks, role, None, options))
            }
        }
    }

    /// A run restored from `saved`, the snapshot `id`, with its own trace as for
    /// [`Run::new`].
    pub(crate) fn restore(
        saved: &Saved,
        id: &str,
        options: &ResetOptions,
        trace: Option<(&Path, &str)>,
    ) -> Result<Self, String> {
        let role = role_of(&saved.world, options.role.as_deref())?;
        let seed = saved.state.identity.seed;
        match (&saved.desk, role) {
            (SavedDesk::One(desk), None) => {
                let mut session = saved.world.session(seed)?;
                session
                    .restore(saved.state.clone())
                    .map_err(|e| e.to_string())?;
                open_trace(&mut session, trace)?;
                Run::of(
                    &saved.world,
                    session,
                    desk.clone(),
                    Some(id.to_string()),
                    options,
                    trace,
                )
            }
            (SavedDesk::Roles(desks), Some(role)) => {
                let mut session = saved.world.roles_session(seed)?;
                session
                    .restore(saved.state.clone())
                    .map_err(|e| e.to_string())?;
                open_trace(&mut session, trace)?;
                Ok(Run::of_roles(
                    &saved.world,
                    session,
                    desks.clone(),
                    role,
                    Some(id.to_string()),
                    options,
                ))
            }
            _ => Err("the snapshot does not fit its world's roles".into()),
        }
    }

    fn of(
        world: &Arc<ServedWorld>,
        session: Session<Morpheus>,
        desk: Desk,
        snapshot: Option<String>,
        options: &ResetOptions,
        trace: Option<(&Path, &str)>,
    ) -> Result<Self, String> {
        let transcript = match trace {
            Some((dir, run_id)) => Some(open_transcript(dir, run_id, session.env())?),
            None => None,
        };
        Ok(Run {
            world: Arc::clone(world),
            snapshot,
            episode_id: options.episode_id.clone(),
            play: Play::One(Box::new(Solo {
                core: Core::new(session, options.hours),
                desk,
                transcript,
            })),
        })
    }

    fn of_roles(
        world: &Arc<ServedWorld>,
        session: Session<EnterpriseEnv>,
        desks: RoleDesks,
        role: usize,
        snapshot: Option<String>,
        options: &ResetOptions,
    ) -> Self {
        let table = Table {
            core: Core::new(session, options.hours),
            desks,
        };
        Run {
            world: Arc::clone(world),
            snapshot,
            episode_id: options.episode_id.clone(),
            play: Play::Roles {
                table: Arc::new(Mutex::new(table)),
                role,
            },
        }
    }

    /// A run that acts as role `role` in this run's world, which it shares.
    pub(crate) fn join(&self, role: &str, options: &ResetOptions) -> Result<Run, String> {
        let Play::Roles { table, .. } = &self.play else {
            return Err(format!(
                "reset option `join`: the session plays world `{}`, which has no roles; only a world with roles is joined",
                self.world.id
            ));
        };
        let Some(role) = role_of(&self.world, Some(role))? else {
            return Err("the world has no roles".into());
        };
        Ok(Run {
            world: Arc::clone(&self.world),
            snapshot: self.snapshot.clone(),
            episode_id: options.episode_id.clone().or(self.episode_id.clone()),
            play: Play::Roles {
                table: Arc::clone(table),
                role,
            },
        })
    }

    /// The tools this session answers: its world's, or its role's.
    pub(crate) fn tools(&self) -> Catalogue {
        match &self.play {
            Play::One(solo) => solo.desk.catalogue().clone(),
            Play::Roles { table, role } => locked(table)
                .desks
                .catalogue(*role)
                .cloned()
                .unwrap_or_else(|| Catalogue::of(&self.world.config)),
        }
    }

    /// Whether the episode has ended (the world's end, or the reset's hours spent).
    pub(crate) fn done(&self) -> bool {
        match &self.play {
            Play::One(solo) => solo.core.ended,
            Play::Roles { table, .. } => locked(table).core.ended,
        }
    }

    /// Answers one tool call (a single-agent world: and writes it to the transcript). A
    /// failure of the run core itself or of the transcript (a file that cannot be
    /// written) is a 500 reply and ends the episode.
    pub(crate) fn call(&mut self, name: &str, arguments: &Value) -> Reply {
        let solo = match &mut self.play {
            Play::One(solo) => solo,
            Play::Roles { table, role } => {
                let table = &mut *locked(table);
                let mut hours = table.core.hours();
                let answered = table.desks.call_value(&mut hours, *role, name, arguments);
                return failed_world(answered, &mut table.core.ended);
            }
        };
        let step = solo.core.session.counters().step;
        let answered = solo
            .desk
            .call_value(&mut solo.core.hours(), name, arguments);
        let reply = failed_world(answered, &mut solo.core.ended);
        let Some(transcript) = &mut solo.transcript else {
            return reply;
        };
        let passed = solo.core.session.counters().step - step;
        match transcript.write(step, passed, None, name, arguments.to_string(), &reply) {
            Ok(()) => {
                if passed > 0 {
                    let hour = render_text(solo.core.world());
                    transcript.carry(json!({"role": "user", "content": hour}));
                }
                reply
            }
            Err(e) => {
                solo.core.ended = true;
                Reply::failed(
                    500,
                    format!(
                        "the session's transcript cannot be written and the episode is over: {e}"
                    ),
                    Value::Null,
                )
            }
        }
    }

    /// What an agent sees at the start: the hour as text and as JSON, and where it is (in
    /// a world with roles: its role, the roles and those the hour waits for).
    pub(crate) fn observation(&self, session_id: &str) -> Value {
        let observe = |core_world: &Morpheus, seed: u64, hour: u64, budget: Option<u64>| {
            json!({
                "text": render_text(core_world),
                "view": render_json(core_world),
                "world": self.world.id,
                "seed": seed,
                "hour": hour,
                "snapshot": self.snapshot,
                "hours": budget,
                "session_id": session_id,
            })
        };
        match &self.play {
            Play::One(solo) => {
                let c = &solo.core;
                observe(
                    c.world(),
                    c.session.identity().seed,
                    c.session.counters().step,
                    c.budget,
                )
            }
            Play::Roles { table, role } => {
                let t = locked(table);
                let c = &t.core;
                let mut o = observe(
                    c.world(),
                    c.session.identity().seed,
                    c.session.counters().step,
                    c.budget,
                );
                o["role"] = Value::from(t.desks.names()[*role].as_str());
                o["roles"] = json!(t.desks.names());
                o["waiting_for"] = json!(t.desks.waiting_for());
                o
            }
        }
    }

    /// The session's state, for OpenEnv's `state` (`episode_id`, `step_count`) and more: in
    /// a world with roles, its role's call counts, the roles and those the hour waits for.
    pub(crate) fn state(&self, session_id: &str) -> Value {
        let mut state = match &self.play {
            Play::One(solo) => solo.core.state(solo.desk.counts()),
            Play::Roles { table, role } => {
                let t = locked(table);
                let mut s = t.core.state(t.desks.role_counts(*role).unwrap_or_default());
                s.insert("role".into(), Value::from(t.desks.names()[*role].as_str()));
                s.insert("roles".into(), json!(t.desks.names()));
                s.insert("waiting_for".into(), json!(t.desks.waiting_for()));
                s
            }
        };
        state.insert(
            "episode_id".into(),
            Value::from(
                self.episode_id
                    .clone()
                    .unwrap_or_else(|| session_id.to_string()),
            ),
        );
        state.insert("session_id".into(), Value::from(session_id));
        state.insert("world".into(), Value::from(self.world.id.as_str()));
        state.insert("snapshot".into(), json!(self.snapshot));
        Value::Object(state)
    }

    /// The session saved, for a snapshot.
    pub(crate) fn save(&self) -> Result<Saved, String> {
        let (state, desk) = match &self.play {
            Play::One(solo) => (
                solo.core.session.snapshot(),
                SavedDesk::One(solo.desk.without_calls()),
            ),
            Play::Roles { table, .. } => {
                let t = locked(table);
                (
                    t.core.session.snapshot(),
                    SavedDesk::Roles(t.desks.without_calls()),
                )
            }
        };
        Ok(Saved {
            world: Arc::clone(&self.world),
            state: state.map_err(|e| e.to_string())?,
            desk,
        })
    }
}

/// The reply to a call, or the 500 of a world that failed under it (which ends the
/// episode).
fn failed_world(answered: Result<Reply, StepError>, ended: &mut bool) -> Reply {
    match answered {
        Ok(reply) => reply,
        Err(e) => {
            *ended = true;
            Reply::failed(
                500,
                format!("the world failed and the episode is over; reset it: {e}"),
                Value::Null,
            )
        }
    }
}

/// Creates `dir/<run-id>.transcript.jsonl`, the run's transcript: each tool call as one
/// model call, as `perennial play` writes them, so `perennial episodes` meets it with the
/// trace beside it. Its first call opens with the hour as the agent first sees it.
fn open_transcript(dir: &Path, run_id: &str, env: &Morpheus) -> Result<DeskLog, String> {
    let path = dir.join(format!("{run_id}.transcript.jsonl"));
    let writer = TranscriptWriter::create(&path)
        .map_err(|e| format!("the session's transcript cannot be written: {e}"))?;
    let mut log = DeskLog::new(writer, run_id.to_string(), "client".into());
    log.carry(json!({"role": "user", "content": render_text(env)}));
    Ok(log)
}

/// Opens the run's trace at `dir/<run-id>.jsonl`, the run id becoming the identity's.
fn open_trace<E: Env + Shiftable>(
    session: &mut Session<E>,
    trace: Option<(&Path, &str)>,
) -> Result<(), String> {
    let Some((dir, run_id)) = trace else {
        return Ok(());
    };
    session.identity_mut().run_id = run_id.to_string();
    let path = dir.join(format!("{run_id}.jsonl"));
    session
        .open_trace(&path, TraceFormat::Jsonl, None, 0, None)
        .map_err(|e| format!("the session's trace cannot be written: {e}"))
}

/// A tool call's reply as an MCP `CallToolResult`, as JSON text: the envelope as text and
/// as structured content, `isError` when it failed. OpenEnv's clients read the envelope
/// under `data`. The envelope is serialised once and spliced in, which keeps a call's
/// server time a few microseconds.
pub(crate) fn tool_result(reply: &Reply, with_data: bool) -> String {
    let envelope = reply.to_json();
    // A string always serialises.
    let text = serde_json::to_string(&envelope).unwrap_or_default();
    let mut out = String::with_capacity(envelope.len() * 3 + text.len() + 96);
    out.push_str(r#"{"content":[{"type":"text","text":"#);
    out.push_str(&text);
    out.push_str(r#"}],"structuredContent":"#);
    out.push_str(&envelope);
    out.push_str(r#","isError":"#);
    out.push_str(if reply.success { "false" } else { "true" });
    if with_data {
        out.push_str(r#","data":"#);
        out.push_str(&envelope);
    }
    out.push('}');
    out
}

/// At most 40 characters of a JSON value, for a message.
pub(crate) fn shown(v: &Value) -> String {
    let text = v.to_string();
    format!("`{}`", quote(&text))
}

#[cfg(test)]
mod tests {
    use super::super::worlds::Worlds;
    use super::*;

    /// A run of the default world with run seed `seed`, reset with `options`.
    fn default_run(seed: u64, options: &ResetOptions) -> Run {
        let worlds = Worlds::load(&[]).unwrap();
        Run::new(worlds.default_world(), seed, options, None).unwrap()
    }

    #[test]
    fn reset_options_refuse_wrong_types_and_unknown_keys() {
        assert!(ResetOptions::from_json(&json!({"seed": -1})).is_err());
        assert!(ResetOptions::from_json(&json!({"seed": "3"})).is_err());
        assert!(ResetOptions::from_json(&json!({"world": 3})).is_err());
        assert!(ResetOptions::from_json(&json!({"path": "/etc/passwd"})).is_err());
        assert!(ResetOptions::from_json(&json!({"hours": 0})).is_err());
        assert!(ResetOptions::from_json(&json!([1])).is_err());
        let o =
            ResetOptions::from_json(&json!({"world": "logistics", "seed": 3, "hours": 5})).unwrap();
        assert_eq!(o.seed, Some(3));
        let q = ResetOptions::from_query(&[("world".into(), "logistics".into())]).unwrap();
        assert_eq!(q.world.as_deref(), Some("logistics"));
        assert!(ResetOptions::from_query(&[("seed".into(), "x".into())]).is_err());
    }

    #[test]
    fn the_hours_of_a_reset_end_the_episode() {
        let options = ResetOptions {
            hours: Some(3),
            ..ResetOptions::default()
        };
        let mut run = default_run(1, &options);
        let r = run.call("wait", &json!({"hours": 10}));
        assert_eq!(r.data["hours_passed"], 3);
        assert!(run.done());
        assert_eq!(run.call("wait", &json!({"hours": 1})).status, 409);
        assert_eq!(run.call("query_ledger", &json!({})).status, 200);
    }

    #[test]
    fn a_fork_carries_none_of_its_sources_calls() {
        let o = ResetOptions::default();
        let mut run = default_run(5, &o);
        run.call("wait", &json!({"hours": 2}));
        run.call("no_such_tool", &json!({}));
        run.call("wait", &json!({"hours": "x"}));
        run.call("reorder", &json!("not an object"));
        let source = run.state("s");
        assert_eq!(source["invalid_calls"], 2, "{source}");
        assert_eq!(source["malformed_calls"], 1, "{source}");
        let fork = Run::restore(&run.save().unwrap(), "s1", &o, None).unwrap();
        let state = fork.state("f");
        for counter in ["calls", "invalid_calls", "malformed_calls", "refused"] {
            assert_eq!(state[counter], 0, "{counter}: {state}");
        }
        assert_eq!(state["hour"], source["hour"]);
        assert_eq!(run.state("s")["invalid_calls"], 2);
    }

    #[test]
    fn a_restored_snapshot_answers_as_the_original_goes_on() {
        let o = ResetOptions::default();
        let mut run = default_run(5, &o);
        run.call("wait", &json!({"hours": 7}));
        let saved = run.save().unwrap();
        let mut fork = Run::restore(&saved, "s1", &o, None).unwrap();
        for (name, args) in [
            ("reorder", json!({"sku": 1, "quantity": 50})),
            ("wait", json!({"hours": 5})),
            ("query_inventory", json!({"sku": null})),
            ("query_carriers", json!({})),
        ] {
            assert_eq!(run.call(name, &args), fork.call(name, &args));
        }
    }
}
