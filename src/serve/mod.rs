//! The server: the enterprise world's tools served to OpenEnv and MCP clients on one port.
//!
//! `perennial serve` answers, on one address:
//!
//! | route | protocol | what |
//! |---|---|---|
//! | `GET /health` | OpenEnv | `{"status": "healthy"}` |
//! | `GET /metadata`, `GET /schema` | OpenEnv | the server and its message schemas |
//! | `GET /ws` | OpenEnv WebSocket | `reset` / `step` (`list_tools`, `call_tool`) / `state` / `close`; one world per socket, or `?session_id=ID` to attach to a session opened over `/mcp` |
//! | `POST /mcp` | MCP Streamable HTTP and OpenEnv JSON-RPC | `initialize` (an `Mcp-Session-Id`), `tools/list`, `tools/call`, `ping`; `openenv/session/create` / `close` |
//! | `DELETE /mcp` | MCP | ends the session in `Mcp-Session-Id` |
//! | `POST /snapshots` | the orchestrator's | `{"session_id": ID}` → `{"snapshot_id": ...}` |
//!
//! Each session is one run of one world through the run core ([`crate::session::Session`])
//! and one [`Desk`](crate::morpheus::api::Desk); sessions share nothing, but for a world
//! with roles: a reset names the `role` a session acts as, and other sessions `join` it
//! as the other roles, each answered by its role's desk
//! ([`RoleDesks`](crate::morpheus::api::RoleDesks)). [`serve_stdio`]
//! serves one MCP session on stdin and stdout instead. Worlds and
//! snapshots are ids the server holds, never paths. `docs/serving.md` is the user's page.

mod error;
mod mcp;
mod openenv;
mod run;
mod sessions;
mod stdio;
mod worlds;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub use error::ServeError;
pub use stdio::serve_stdio;
pub use worlds::Worlds;

use sessions::Sessions;

/// The largest HTTP body a client may send, in bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// A server's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeOptions {
    /// The address to bind (`127.0.0.1`; anything else must be asked for).
    pub host: String,
    /// The port (8000; 0 picks a free one, printed at start).
    pub port: u16,
    /// Sessions open at once; one more is refused with `CAPACITY_REACHED` (256).
    pub max_sessions: usize,
    /// Snapshots kept; a new one beyond them drops the oldest (1024).
    pub max_snapshots: usize,
    /// A session unused for this long is closed (600 s).
    pub idle_timeout: Duration,
    /// World files served besides the shipped ones, as `FILE` (served under its stem) or
    /// `ID=FILE`.
    pub worlds: Vec<String>,
    /// A directory where each run (each reset) writes its JSON Lines trace; none: no traces.
    pub runs: Option<PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: "127.0.0.1".into(),
            port: 8000,
            max_sessions: 256,
            max_snapshots: 1024,
            idle_timeout: Duration::from_secs(600),
            worlds: Vec::new(),
            runs: None,
        }
    }
}

/// What every handler shares.
pub(crate) struct App {
    sessions: Sessions,
}

/// Serves until SIGINT or SIGTERM. Prints `perennial serve: listening on http://ADDR` on
/// stdout once the port is bound (with port 0, the port picked).
///
/// # Errors
///
/// A world file cannot be served, a setting is out of range, or the address cannot be
/// bound.
pub fn serve(options: &ServeOptions) -> Result<(), ServeError> {
    if options.max_sessions == 0 || options.max_snapshots == 0 {
        return Err(ServeError::Option(
            "--max-sessions and the snapshot limit are at least 1".into(),
        ));
    }
    if options.idle_timeout.is_zero() {
        return Err(ServeError::Option(
            "--idle-timeout is at least 1 second".into(),
        ));
    }
    let worlds = Worlds::load(&options.worlds)?;
    if let Some(dir) = &options.runs {
        std::fs::create_dir_all(dir)
            .map_err(|e| ServeError::Option(format!("--runs {}: {e}", dir.display())))?;
    }
    let address = format!("{}:{}", options.host, options.port);
    let listener = std::net::TcpListener::bind(&address)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|source| ServeError::Bind {
            address: address.clone(),
            source,
        })?;
    let bound: SocketAddr = listener.local_addr().map_err(ServeError::Io)?;
    let app = Arc::new(App {
        sessions: Sessions::new(
            worlds,
            options.max_sessions,
            options.max_snapshots,
            options.idle_timeout,
            options.runs.clone(),
        ),
    });
    // One single-threaded runtime per core, each accepting from the one socket and serving
    // the connections it accepted: a request is read, answered and written by one thread,
    // never handed between threads (with a work-stealing runtime, waking a second thread
    // per request cost more than answering it).
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut others = Vec::new();
    for i in 1..threads {
        let (listener, app, stopping) = (
            listener.try_clone().map_err(ServeError::Io)?,
            Arc::clone(&app),
            stopping.clone(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("serve-{i}"))
            .spawn(move || serve_on(listener, app, stopped_by(stopping)))
            .map_err(ServeError::Io)?;
        others.push(thread);
    }
    announce(&format!(
        "perennial serve: listening on http://{bound} (worlds: {})\n",
        app.sessions.worlds.ids().join(", ")
    ));
    let reaped = Arc::clone(&app);
    let served = serve_on(listener, app, async move {
        tokio::select! {
            () = stopped() => {}
            () = reap(reaped) => {}
        }
    });
    let _ = stop.send(true);
    for thread in others {
        // The other threads stop with this one, which tells how the server ended.
        let _ = thread.join();
    }
    served
}

/// Serves `listener`'s connections on this thread until `until` resolves.
fn serve_on(
    listener: std::net::TcpListener,
    app: Arc<App>,
    until: impl std::future::Future<Output = ()>,
) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Io)?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Io)?;
        tokio::select! {
            served = axum::serve(listener, router(app)) => served.map_err(ServeError::Io),
            () = until => Ok(()),
        }
    })?;
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

/// Resolves once `stopping` turns true (or its sender is gone).
async fn stopped_by(mut stopping: tokio::sync::watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

/// Writes the line a supervisor waits for, at once (stdout may be a pipe).
fn announce(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metadata", get(metadata))
        .route("/schema", get(schema))
        .route("/ws", get(openenv::upgrade))
        .route("/mcp", post(mcp::post).delete(mcp::delete).get(mcp::get))
        .route("/snapshots", post(snapshot))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(app)
}

/// Closes idle sessions, a few times per idle time.
async fn reap(app: Arc<App>) {
    let every =
        (app.sessions.idle() / 4).clamp(Duration::from_millis(100), Duration::from_secs(10));
    loop {
        tokio::time::sleep(every).await;
        app.sessions.reap();
    }
}

/// Resolves at SIGINT or SIGTERM.
async fn stopped() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// A response whose body is JSON text.
pub(crate) fn json_response(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

async fn health() -> Response {
    json_response(StatusCode::OK, r#"{"status":"healthy"}"#)
}

async fn metadata(State(app): State<Arc<App>>) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "name": "perennial",
            "description": format!(
                "The MORPHEUS enterprise world as tools, one persistent world per session (worlds: {}); reset with {{\"world\", \"seed\", \"hours\", \"snapshot\"}}, and in a world with roles {{\"role\"}} or {{\"join\", \"role\"}}",
                app.sessions.worlds.ids().join(", ")
            ),
            "readme_content": include_str!("../../docs/serving.md"),
            "version": env!("CARGO_PKG_VERSION"),
            "author": null,
            "documentation_url": null,
        })
        .to_string(),
    )
}

async fn schema() -> Response {
    json_response(StatusCode::OK, schemas().to_string())
}

/// The JSON schemas of a step's action, an observation and the state.
fn schemas() -> Value {
    json!({
        "action": {
            "title": "Action",
            "type": "object",
            "oneOf": [
                {"type": "object", "properties": {"type": {"const": "list_tools"}}, "required": ["type"]},
                {"type": "object", "properties": {
                    "type": {"const": "call_tool"},
                    "tool_name": {"type": "string"},
                    "arguments": {"type": "object"},
                }, "required": ["type", "tool_name"]},
            ],
        },
        "observation": {
            "title": "Observation",
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "the hour as the default prompt (reset)"},
                "view": {"type": "object", "description": "the hour as JSON (reset)"},
                "tools": {"type": "array", "description": "the tools (list_tools)"},
                "tool_name": {"type": "string", "description": "the tool called (call_tool)"},
                "result": {"type": "object", "description": "the call's result: content, structuredContent, isError, and data, the reply envelope {status, success, data, error}"},
                "metadata": {"type": "object"},
            },
        },
        "reset_observation": {
            "title": "ResetObservation",
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "view": {"type": "object"},
                "world": {"type": "string"},
                "seed": {"type": "integer"},
                "hour": {"type": "integer"},
                "snapshot": {"type": ["string", "null"]},
                "hours": {"type": ["integer", "null"]},
                "session_id": {"type": "string"},
                "role": {"type": "string", "description": "a world with roles: the role this session acts as"},
                "roles": {"type": "array", "description": "a world with roles: its roles, in the order their operations apply"},
                "waiting_for": {"type": "array", "description": "a world with roles: the roles the hour waits for"},
            },
        },
        "state": {
            "title": "State",
            "type": "object",
            "properties": {
                "episode_id": {"type": ["string", "null"]},
                "step_count": {"type": "integer", "minimum": 0, "description": "hours passed since the reset"},
                "session_id": {"type": "string"},
                "world": {"type": ["string", "null"]},
                "seed": {"type": "integer"},
                "hour": {"type": "integer"},
                "done": {"type": "boolean"},
                "reward": {"type": "number"},
                "forbidden": {"type": "integer", "description": "calls to another role's tool, refused with 403"},
                "role": {"type": "string"},
                "waiting_for": {"type": "array"},
            },
        },
    })
}

/// `POST /snapshots {"session_id": ID}` → `{"snapshot_id": ...}`.
async fn snapshot(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                json!({"error": format!("the body is not JSON ({e}); send {{\"session_id\": ID}}")}).to_string(),
            );
        }
    };
    let Some(sid) = request.get("session_id").and_then(Value::as_str) else {
        return json_response(
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"error": "name the session: {\"session_id\": ID}"}).to_string(),
        );
    };
    let app2 = Arc::clone(&app);
    let sid = sid.to_string();
    match tokio::task::spawn_blocking(move || app2.sessions.snapshot(&sid)).await {
        Ok(Ok(id)) => json_response(StatusCode::OK, json!({"snapshot_id": id}).to_string()),
        Ok(Err(e)) => json_response(StatusCode::NOT_FOUND, json!({"error": e}).to_string()),
        Err(_) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "the snapshot failed"}).to_string(),
        ),
    }
}
