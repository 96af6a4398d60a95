//! OpenEnv's WebSocket protocol on `/ws`: reset, step (list_tools, call_tool), state, close.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use serde_json::{Value, json};

use super::App;
use super::run::{ResetOptions, shown, tool_result};
use super::sessions::{Opener, Seat};

/// The largest frame a client may send, in bytes; a larger one gets an error frame.
pub(crate) const MAX_FRAME: usize = 64 * 1024;

/// OpenEnv's error codes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Code {
    InvalidJson,
    UnknownType,
    ValidationError,
    ExecutionError,
    CapacityReached,
    SessionError,
}

impl Code {
    fn as_str(self) -> &'static str {
        match self {
            Code::InvalidJson => "INVALID_JSON",
            Code::UnknownType => "UNKNOWN_TYPE",
            Code::ValidationError => "VALIDATION_ERROR",
            Code::ExecutionError => "EXECUTION_ERROR",
            Code::CapacityReached => "CAPACITY_REACHED",
            Code::SessionError => "SESSION_ERROR",
        }
    }
}

/// An error frame.
pub(crate) fn error_frame(code: Code, message: &str) -> String {
    json!({"type": "error", "data": {"message": message, "code": code.as_str()}}).to_string()
}

/// `GET /ws`: upgrades to a socket that holds one session, its own or (with
/// `?session_id=ID`) one opened over `/mcp`.
pub(crate) async fn upgrade(
    State(app): State<Arc<App>>,
    Query(query): Query<Vec<(String, String)>>,
    ws: WebSocketUpgrade,
) -> Response {
    let attach = query
        .into_iter()
        .find(|(k, _)| k == "session_id")
        .map(|(_, v)| v);
    // Frames up to 16 times the limit are read so the client hears why it was refused;
    // beyond that the socket closes.
    ws.max_message_size(MAX_FRAME * 16)
        .max_frame_size(MAX_FRAME * 16)
        .on_upgrade(move |socket| serve(app, attach, socket))
}

async fn serve(app: Arc<App>, attach: Option<String>, mut socket: WebSocket) {
    let (id, seat, owned) = match &attach {
        Some(id) => match app.sessions.attach(id) {
            Ok(seat) => (id.clone(), seat, false),
            Err(message) => {
                let _ = socket
                    .send(Message::Text(
                        error_frame(Code::SessionError, &message).into(),
                    ))
                    .await;
                let _ = socket.send(Message::Close(None)).await;
                return;
            }
        },
        None => match app.sessions.open(Opener::Socket) {
            Ok((id, seat)) => (id, seat, true),
            Err(full) => {
                let frame = json!({"type": "error", "data": {
                    "message": full.to_string(), "code": Code::CapacityReached.as_str(),
                    "active_sessions": full.active, "max_sessions": full.max,
                }})
                .to_string();
                refuse(socket, frame).await;
                return;
            }
        },
    };
    let idle = app.sessions.idle();
    loop {
        let message = match tokio::time::timeout(idle, socket.recv()).await {
            Err(_) => {
                let why = format!(
                    "the session was idle for {} s and is closed",
                    idle.as_secs()
                );
                let _ = socket
                    .send(Message::Text(error_frame(Code::SessionError, &why).into()))
                    .await;
                break;
            }
            Ok(None | Some(Err(_))) => break,
            Ok(Some(Ok(m))) => m,
        };
        let reply = match message {
            Message::Text(text) => frame(&app, &id, &seat, text.as_str()).await,
            Message::Binary(bytes) => match std::str::from_utf8(&bytes) {
                Ok(text) => frame(&app, &id, &seat, text).await,
                Err(_) => Some(error_frame(
                    Code::InvalidJson,
                    "a binary frame that is not UTF-8 text; send JSON text frames",
                )),
            },
            Message::Ping(_) | Message::Pong(_) => continue,
            Message::Close(_) => break,
        };
        let Some(reply) = reply else { break };
        if socket.send(Message::Text(reply.into())).await.is_err() {
            break;
        }
    }
    if owned {
        app.sessions.close(&id);
    } else {
        app.sessions.detach(&id);
    }
    let _ = socket.send(Message::Close(None)).await;
}

/// Says why the socket gets no session, then answers every frame the same way for a few
/// seconds before closing: a client that sends its reset before reading hears the reason
/// too, instead of a closed socket.
async fn refuse(mut socket: WebSocket, frame: String) {
    if socket
        .send(Message::Text(frame.clone().into()))
        .await
        .is_err()
    {
        return;
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while let Ok(Some(Ok(message))) = tokio::time::timeout_at(deadline, socket.recv()).await {
        match message {
            Message::Text(_) | Message::Binary(_) => {
                if socket
                    .send(Message::Text(frame.clone().into()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) => {}
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}

/// Answers one frame; `None` for `close`, which gets no answer.
async fn frame(app: &Arc<App>, id: &str, seat: &Arc<Seat>, text: &str) -> Option<String> {
    if text.len() > MAX_FRAME {
        return Some(error_frame(
            Code::ValidationError,
            &format!(
                "the frame is {} bytes; frames are at most {MAX_FRAME}",
                text.len()
            ),
        ));
    }
    if seat.is_closed() {
        return Some(error_frame(
            Code::SessionError,
            "the session is closed; open another",
        ));
    }
    let message: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Some(error_frame(
                Code::InvalidJson,
                &format!("Invalid JSON: {e}"),
            ));
        }
    };
    let kind = message.get("type").and_then(Value::as_str).unwrap_or("");
    let data = message.get("data");
    Some(match kind {
        "reset" => reset(app, id, seat, data.unwrap_or(&Value::Null)).await,
        "step" => match data {
            Some(data) => step(app, id, seat, data),
            None => error_frame(
                Code::ValidationError,
                "a step frame carries data: {\"type\": \"list_tools\"} or {\"type\": \"call_tool\", \"tool_name\": ..., \"arguments\": {...}}",
            ),
        },
        "state" => match seat.run().as_ref() {
            Some(run) => json!({"type": "state", "data": run.state(id)}).to_string(),
            None => json!({"type": "state", "data": {
                "episode_id": null, "step_count": 0, "session_id": id, "world": null,
            }})
            .to_string(),
        },
        "close" => return None,
        "mcp" => {
            let reply = super::mcp::answer_for(seat, data.unwrap_or(&Value::Null));
            format!(r#"{{"type":"mcp","data":{reply}}}"#)
        }
        _ => error_frame(
            Code::UnknownType,
            &format!(
                "Unknown message type: {}; the types are reset, step, state, close and mcp",
                shown(message.get("type").unwrap_or(&Value::Null))
            ),
        ),
    })
}

async fn reset(app: &Arc<App>, id: &str, seat: &Arc<Seat>, data: &Value) -> String {
    let options = if data.is_null() {
        ResetOptions::default()
    } else {
        match ResetOptions::from_json(data) {
            Ok(o) => o,
            Err(e) => return error_frame(Code::ValidationError, &e),
        }
    };
    let built = {
        let app = Arc::clone(app);
        let sid = id.to_string();
        tokio::task::spawn_blocking(move || app.sessions.build(&sid, &options)).await
    };
    let run = match built {
        Ok(Ok(run)) => run,
        Ok(Err(e)) => return error_frame(Code::ValidationError, &e),
        Err(_) => return error_frame(Code::ExecutionError, "the world could not be built"),
    };
    let observation = run.observation(id);
    *seat.run() = Some(run);
    json!({"type": "observation", "data": {
        "observation": observation, "reward": null, "done": false,
    }})
    .to_string()
}

fn step(app: &Arc<App>, id: &str, seat: &Arc<Seat>, data: &Value) -> String {
    let kind = data.get("type").and_then(Value::as_str);
    match kind {
        Some("list_tools") => {
            let guard = seat.run();
            let catalogue = match guard.as_ref() {
                Some(run) => run.tools(),
                None => {
                    crate::morpheus::api::Catalogue::of(&app.sessions.worlds.default_world().config)
                }
            };
            let done = guard.as_ref().is_some_and(|r| r.done());
            drop(guard);
            let tools: Vec<Value> = catalogue
                .tools()
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name.as_str(),
                        "description": t.description,
                        "input_schema": t.input_schema(),
                    })
                })
                .collect();
            json!({"type": "observation", "data": {
                "observation": {"tools": tools, "metadata": {}}, "reward": null, "done": done,
            }})
            .to_string()
        }
        Some("call_tool") => {
            let Some(name) = data.get("tool_name").and_then(Value::as_str) else {
                return error_frame(
                    Code::ValidationError,
                    "call_tool names its tool in `tool_name` (a string)",
                );
            };
            let empty = Value::Object(serde_json::Map::new());
            let arguments = data.get("arguments").unwrap_or(&empty);
            let mut guard = seat.run();
            let Some(run) = guard.as_mut() else {
                return error_frame(
                    Code::ExecutionError,
                    "no world yet: send {\"type\": \"reset\"} first",
                );
            };
            let reply = run.call(name, arguments);
            let done = run.done();
            drop(guard);
            let reward = reply
                .data
                .get("reward")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            // Spliced, not built as a tree: the result is JSON text already.
            format!(
                r#"{{"type":"observation","data":{{"observation":{{"tool_name":{},"result":{},"error":null,"metadata":{{"session_id":"{id}"}}}},"reward":{},"done":{done}}}}}"#,
                Value::from(name),
                tool_result(&reply, true),
                Value::from(reward),
            )
        }
        _ => error_frame(
            Code::ValidationError,
            &format!(
                "step data.type is `list_tools` or `call_tool`, not {}",
                shown(data.get("type").unwrap_or(&Value::Null))
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_frames_are_openenv_error_frames() {
        let f: Value = serde_json::from_str(&error_frame(Code::CapacityReached, "full")).unwrap();
        assert_eq!(f["type"], "error");
        assert_eq!(f["data"]["code"], "CAPACITY_REACHED");
    }
}
