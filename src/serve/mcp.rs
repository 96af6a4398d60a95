//! JSON-RPC on `/mcp`: MCP's Streamable HTTP transport and OpenEnv's session methods, told
//! apart by the `Mcp-Session-Id` header and the method names.
//!
//! An MCP client opens a session with `initialize` (the world and seed from the URL's
//! query) and names it in the `Mcp-Session-Id` header of every later request; `DELETE
//! /mcp` ends it. An OpenEnv client opens one with `openenv/session/create` and names it in
//! `params.session_id`; `openenv/session/close` ends it.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::run::{ResetOptions, shown, tool_result};
use super::sessions::{Opener, Seat};
use super::worlds::quote;
use super::{App, json_response};

/// The MCP protocol revisions served, oldest first; a client asking for another gets the
/// newest.
const PROTOCOL_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

const SESSION_HEADER: &str = "mcp-session-id";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
/// A server error: no capacity, no world.
const SERVER_ERROR: i64 = -32000;

fn ok(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// A success whose result is JSON text already.
fn ok_raw(id: &Value, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

fn err(id: &Value, code: i64, message: &str) -> String {
    err_data(id, code, message, Value::Null)
}

fn err_data(id: &Value, code: i64, message: &str, data: Value) -> String {
    let mut error = json!({"code": code, "message": message});
    if !data.is_null() {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

/// A parsed request: its id (`None`: a notification), method and params object.
struct Request<'a> {
    id: Option<&'a Value>,
    method: &'a str,
    params: &'a Map<String, Value>,
}

static NO_PARAMS: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

fn parse(message: &Value) -> Result<Request<'_>, String> {
    let Some(obj) = message.as_object() else {
        let why = if message.is_array() {
            "batches are not served; send one JSON-RPC request per POST".to_string()
        } else {
            format!("a JSON-RPC request is an object, not {}", shown(message))
        };
        return Err(err(&Value::Null, INVALID_REQUEST, &why));
    };
    let id = obj.get("id");
    let reply_id = id.unwrap_or(&Value::Null);
    if let Some(id) = id
        && !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null())
    {
        return Err(err(
            &Value::Null,
            INVALID_REQUEST,
            "the request id is a string or an integer",
        ));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return Err(err(
            reply_id,
            INVALID_REQUEST,
            "the request names its method in `method` (a string)",
        ));
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => &*NO_PARAMS,
        Some(Value::Object(p)) => p,
        Some(other) => {
            return Err(err(
                reply_id,
                INVALID_PARAMS,
                &format!("params is an object, not {}", shown(other)),
            ));
        }
    };
    Ok(Request { id, method, params })
}

/// `POST /mcp`.
pub(crate) async fn post(
    State(app): State<Arc<App>>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let message: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return json_response(
                StatusCode::OK,
                err(&Value::Null, PARSE_ERROR, &format!("Parse error: {e}")),
            );
        }
    };
    // A client's answer to a server request: this server sends none, so there is
    // nothing to match it with.
    if message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
    {
        return StatusCode::ACCEPTED.into_response();
    }
    let request = match parse(&message) {
        Ok(r) => r,
        Err(e) => return json_response(StatusCode::OK, e),
    };
    let mcp_session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    if request.id.is_none() {
        // A notification is never answered.
        return StatusCode::ACCEPTED.into_response();
    }
    let id = request.id.unwrap_or(&Value::Null);
    if let Some(sid) = mcp_session {
        let seat = app.sessions.get(sid).filter(|s| s.opener == Opener::Mcp);
        let Some(seat) = seat else {
            return json_response(
                StatusCode::NOT_FOUND,
                err(
                    id,
                    INVALID_REQUEST,
                    &format!(
                        "no MCP session `{}`: it ended or expired; initialize a new one",
                        quote(sid)
                    ),
                ),
            );
        };
        return json_response(StatusCode::OK, mcp_method(id, &request, &seat));
    }
    match request.method {
        "initialize" => initialize(&app, id, &request, &query).await,
        "openenv/session/create" => {
            let reply = create(&app, id, &request, &query).await;
            json_response(StatusCode::OK, reply)
        }
        "openenv/session/close" => {
            let Some(sid) = request.params.get("session_id").and_then(Value::as_str) else {
                return json_response(
                    StatusCode::OK,
                    err(
                        id,
                        INVALID_PARAMS,
                        "Invalid params - 'session_id' is required",
                    ),
                );
            };
            let reply = if app.sessions.close(sid) {
                ok(id, json!({"session_id": sid, "closed": true}))
            } else {
                err(
                    id,
                    INVALID_PARAMS,
                    &format!("Unknown session_id: {}", quote(sid)),
                )
            };
            json_response(StatusCode::OK, reply)
        }
        "ping" => json_response(StatusCode::OK, ok(id, json!({}))),
        _ => json_response(StatusCode::OK, stateless(&app, id, &request)),
    }
}

/// An OpenEnv request without an MCP session: `tools/list` and `tools/call` naming their
/// session in `params.session_id`, or `tools/list` of the default world.
fn stateless(app: &Arc<App>, id: &Value, request: &Request<'_>) -> String {
    let sid = request.params.get("session_id");
    match (request.method, sid) {
        ("tools/list" | "tools/call", Some(Value::String(sid))) => match app.sessions.get(sid) {
            Some(seat) => openenv_method(id, request, &seat),
            None => err(
                id,
                INVALID_PARAMS,
                &format!("Unknown session_id: {}", quote(sid)),
            ),
        },
        ("tools/list" | "tools/call", Some(other)) => err(
            id,
            INVALID_PARAMS,
            &format!("session_id is a string, not {}", shown(other)),
        ),
        ("tools/list", None) => {
            let world = app.sessions.worlds.default_world();
            let tools = crate::morpheus::api::Catalogue::of(&world.config).mcp();
            ok(id, json!({"tools": tools}))
        }
        ("tools/call", None) => err(
            id,
            INVALID_PARAMS,
            "tools/call needs a session: initialize (MCP) or openenv/session/create first, and name it",
        ),
        (method, _) => err(
            id,
            METHOD_NOT_FOUND,
            &format!("Method not found: {}", quote(method)),
        ),
    }
}

/// A JSON-RPC message that arrived in a WebSocket's `mcp` frame: OpenEnv's methods on the
/// socket's own session.
pub(crate) fn answer_for(seat: &Arc<Seat>, message: &Value) -> String {
    match parse(message) {
        Ok(request) => openenv_method(request.id.unwrap_or(&Value::Null), &request, seat),
        Err(e) => e,
    }
}

/// `tools/list` and `tools/call` of an OpenEnv session: replies under `result.data`.
fn openenv_method(id: &Value, request: &Request<'_>, seat: &Arc<Seat>) -> String {
    match request.method {
        "tools/list" => tools_list(id, seat),
        "tools/call" => tools_call(id, request, seat, true),
        other => err(
            id,
            METHOD_NOT_FOUND,
            &format!("Method not found: {}", quote(other)),
        ),
    }
}

/// A method of an MCP session.
fn mcp_method(id: &Value, request: &Request<'_>, seat: &Arc<Seat>) -> String {
    match request.method {
        "ping" => ok(id, json!({})),
        "tools/list" => tools_list(id, seat),
        "tools/call" => tools_call(id, request, seat, false),
        "initialize" => err(
            id,
            INVALID_REQUEST,
            "this session is initialized; end it and initialize another",
        ),
        other => err(
            id,
            METHOD_NOT_FOUND,
            &format!("Method not found: {}", quote(other)),
        ),
    }
}

fn tools_list(id: &Value, seat: &Arc<Seat>) -> String {
    let guard = seat.run();
    let Some(run) = guard.as_ref() else {
        return err(
            id,
            SERVER_ERROR,
            "the session has no world yet; reset it first",
        );
    };
    let tools = run.tools().mcp();
    drop(guard);
    ok(id, json!({"tools": tools}))
}

fn tools_call(id: &Value, request: &Request<'_>, seat: &Arc<Seat>, with_data: bool) -> String {
    let Some(name) = request.params.get("name").and_then(Value::as_str) else {
        return err(
            id,
            INVALID_PARAMS,
            "tools/call names its tool in params.name (a string)",
        );
    };
    let empty = Value::Object(Map::new());
    let arguments = request.params.get("arguments").unwrap_or(&empty);
    let mut guard = seat.run();
    let Some(run) = guard.as_mut() else {
        return err(
            id,
            SERVER_ERROR,
            "the session has no world yet; reset it first",
        );
    };
    let reply = run.call(name, arguments);
    drop(guard);
    ok_raw(id, &tool_result(&reply, with_data))
}

/// Opens a session and builds its world from `options`.
async fn open(
    app: &Arc<App>,
    opener: Opener,
    options: ResetOptions,
) -> Result<(String, Value), (String, Value)> {
    let (sid, seat) = app.sessions.open(opener).map_err(|full| {
        (
            full.to_string(),
            json!({"code": "CAPACITY_REACHED", "active_sessions": full.active, "max_sessions": full.max}),
        )
    })?;
    let built = {
        let app = Arc::clone(app);
        let sid = sid.to_string();
        tokio::task::spawn_blocking(move || app.sessions.build(&sid, &options)).await
    };
    match built {
        Ok(Ok(run)) => {
            let observation = run.observation(&sid);
            *seat.run() = Some(run);
            Ok((sid, observation))
        }
        Ok(Err(e)) => {
            app.sessions.close(&sid);
            Err((e, json!({"code": "VALIDATION_ERROR"})))
        }
        Err(_) => {
            app.sessions.close(&sid);
            Err((
                "the world could not be built".into(),
                json!({"code": "EXECUTION_ERROR"}),
            ))
        }
    }
}

fn query_options(query: &[(String, String)]) -> Result<ResetOptions, String> {
    ResetOptions::from_query(query)
}

async fn initialize(
    app: &Arc<App>,
    id: &Value,
    request: &Request<'_>,
    query: &[(String, String)],
) -> Response {
    // A query the server cannot open a session from is a bad request (400), as the
    // transport's spec has it; the JSON-RPC error in the body names the option.
    let options = match query_options(query) {
        Ok(o) => o,
        Err(e) => return json_response(StatusCode::BAD_REQUEST, err(id, INVALID_PARAMS, &e)),
    };
    match open(app, Opener::Mcp, options).await {
        Ok((sid, observation)) => {
            let result = initialized(request, &observation);
            let mut response = json_response(StatusCode::OK, ok(id, result));
            if let Ok(v) = HeaderValue::from_str(&sid) {
                response.headers_mut().insert(SESSION_HEADER, v);
            }
            response
        }
        Err((message, data)) => {
            let status = if data["code"] == "VALIDATION_ERROR" {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            json_response(status, err_data(id, SERVER_ERROR, &message, data))
        }
    }
}

/// The result of `initialize` for a session whose first observation is `observation`: the
/// client's protocol revision when it is served, else the newest.
fn initialized(request: &Request<'_>, observation: &Value) -> Value {
    let asked = request
        .params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == asked)
        .or(PROTOCOL_VERSIONS.last())
        .copied()
        .unwrap_or_default();
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "perennial", "version": env!("CARGO_PKG_VERSION")},
        "instructions": instructions(observation),
    })
}

/// Answers one line of MCP over stdio for the one session `seat` (opened with its world):
/// `None` for a notification or a client's response, which get no answer.
pub(crate) fn answer_line(seat: &Arc<Seat>, sid: &str, line: &str) -> Option<String> {
    let message: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Some(err(&Value::Null, PARSE_ERROR, &format!("Parse error: {e}"))),
    };
    if message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
    {
        return None;
    }
    let request = match parse(&message) {
        Ok(r) => r,
        Err(e) => return Some(e),
    };
    let id = request.id?;
    if request.method == "initialize" {
        let observation = seat.run().as_ref().map(|run| run.observation(sid));
        return Some(match observation {
            Some(o) => ok(id, initialized(&request, &o)),
            None => err(id, SERVER_ERROR, "the session has no world"),
        });
    }
    Some(mcp_method(id, &request, seat))
}

fn instructions(observation: &Value) -> String {
    format!(
        "You run the MORPHEUS enterprise world `{}` (seed {}) through its tools: one operation is one simulated hour; queries cost no time.\n{}",
        observation["world"].as_str().unwrap_or(""),
        observation["seed"],
        observation["text"].as_str().unwrap_or("")
    )
}

async fn create(
    app: &Arc<App>,
    id: &Value,
    request: &Request<'_>,
    query: &[(String, String)],
) -> String {
    let options = if request.params.is_empty() {
        query_options(query)
    } else {
        ResetOptions::from_json(&Value::Object(request.params.clone()))
    };
    let options = match options {
        Ok(o) => o,
        Err(e) => return err(id, INVALID_PARAMS, &e),
    };
    match open(app, Opener::OpenEnv, options).await {
        Ok((sid, _)) => ok(id, json!({"session_id": sid})),
        Err((message, data)) => err_data(id, SERVER_ERROR, &message, data),
    }
}

/// `DELETE /mcp`: ends the MCP session named in `Mcp-Session-Id`.
pub(crate) async fn delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(sid) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return (
            StatusCode::BAD_REQUEST,
            "DELETE /mcp names its session in Mcp-Session-Id\n",
        )
            .into_response();
    };
    let is_mcp = app
        .sessions
        .get(sid)
        .is_some_and(|s| s.opener == Opener::Mcp);
    if is_mcp && app.sessions.close(sid) {
        StatusCode::OK.into_response()
    } else {
        (StatusCode::NOT_FOUND, "no such MCP session\n").into_response()
    }
}

/// `GET /mcp`: no server-initiated stream is offered (the spec's 405).
pub(crate) async fn get() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST, DELETE")],
        "this server sends no server-initiated messages; POST JSON-RPC requests\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_requests_get_their_json_rpc_errors() {
        for (message, code) in [
            (json!([1, 2]), INVALID_REQUEST),
            (json!("x"), INVALID_REQUEST),
            (json!({"id": 1}), INVALID_REQUEST),
            (json!({"id": 1, "method": 3}), INVALID_REQUEST),
            (json!({"id": {}, "method": "ping"}), INVALID_REQUEST),
            (
                json!({"id": 1, "method": "ping", "params": [1]}),
                INVALID_PARAMS,
            ),
        ] {
            let Err(e) = parse(&message) else {
                panic!("{message} parsed")
            };
            let e: Value = serde_json::from_str(&e).unwrap();
            assert_eq!(e["error"]["code"], code, "{message}");
        }
    }
}
