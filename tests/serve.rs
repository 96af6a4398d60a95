//! `perennial serve` as its clients meet it: OpenEnv's WebSocket and JSON-RPC, MCP's
//! Streamable HTTP, refused paths, capacity, idleness, snapshots and size limits.

#[path = "serve_client/mod.rs"]
mod serve_client;

use serde_json::{Value, json};
use serve_client::{Mcp, Server, Ws, error_message, http, rpc, script};

/// Creates an OpenEnv JSON-RPC session (`query` may name the world and seed) and returns
/// its id.
fn create_session(addr: &str, query: &str) -> String {
    let created = rpc(
        addr,
        query,
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}),
    )
    .json();
    created["result"]["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no session id in {created}"))
        .to_string()
}

/// Calls tool `name` of session `sid` over JSON-RPC: the whole reply.
fn call_tool(addr: &str, sid: &str, name: &str, arguments: Value) -> Value {
    rpc(
        addr,
        "",
        &[],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "session_id": sid, "name": name, "arguments": arguments}}),
    )
    .json()
}

#[test]
fn health_metadata_and_schema_answer_as_openenv_serves_them() {
    let server = Server::start(&[]);
    let h = http(&server.addr, "GET", "/health", &[], b"");
    assert_eq!((h.status, h.json()), (200, json!({"status": "healthy"})));
    let m = http(&server.addr, "GET", "/metadata", &[], b"").json();
    assert_eq!(m["name"], "perennial");
    assert!(m["description"].as_str().unwrap().contains("warehouse"));
    let s = http(&server.addr, "GET", "/schema", &[], b"").json();
    for key in ["action", "observation", "state"] {
        assert!(s[key].is_object(), "{key}: {s}");
    }
}

#[test]
fn a_socket_resets_lists_calls_reports_state_and_closes() {
    let server = Server::start(&[]);
    let mut ws = Ws::open(&server.addr, "");
    let obs = ws.reset(json!({"world": "warehouse", "seed": 3}));
    assert_eq!(obs["done"], false);
    assert!(
        obs["observation"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Hour 0")
    );
    assert_eq!(obs["observation"]["world"], "warehouse");
    let tools = ws.send(&json!({"type": "step", "data": {"type": "list_tools"}}));
    let tools = tools["data"]["observation"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(tools.len(), 9);
    assert!(tools.iter().all(|t| t["input_schema"]["type"] == "object"));
    let reply = ws.call("reorder", json!({"sku": 2, "quantity": 50}));
    assert_eq!(reply["status"], 200, "{reply}");
    assert_eq!(reply["data"]["hours_passed"], 1);
    let bad = ws.call("repair_dock", json!({"dock": 9}));
    assert_eq!(bad["status"], 422);
    let state = ws.send(&json!({"type": "state"}));
    assert_eq!(state["type"], "state");
    assert_eq!(state["data"]["step_count"], 1);
    assert_eq!(state["data"]["seed"], 3);
    ws.close();
}

#[test]
fn a_seed_gives_its_world_on_every_socket_and_another_seed_another() {
    let server = Server::start(&[]);
    let run = |seed: u64| {
        let mut ws = Ws::open(&server.addr, "");
        ws.reset(json!({"seed": seed}));
        let replies: Vec<Value> = script(1, 60)
            .into_iter()
            .map(|(name, args)| ws.call(&name, args))
            .collect();
        ws.close();
        replies
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn the_hours_of_a_reset_end_the_episode() {
    let server = Server::start(&[]);
    let mut ws = Ws::open(&server.addr, "");
    ws.reset(json!({"seed": 1, "hours": 4}));
    let f = ws.send(&json!({"type": "step", "data": {"type": "call_tool", "tool_name": "wait", "arguments": {"hours": 24}}}));
    assert_eq!(f["data"]["done"], true, "{f}");
    assert_eq!(
        f["data"]["observation"]["result"]["data"]["data"]["hours_passed"],
        4
    );
    assert_eq!(ws.call("wait", json!({"hours": 1}))["status"], 409);
}

#[test]
fn openenv_json_rpc_sessions_answer_under_result_data_and_a_socket_attaches() {
    let server = Server::start(&[]);
    let a = &server.addr;
    let created = rpc(
        a,
        "",
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}),
    )
    .json();
    let sid = created["result"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ws = Ws::open(a, &format!("?session_id={sid}"));
    ws.reset(json!({"seed": 5}));
    let list = rpc(
        a,
        "",
        &[],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"session_id": sid}}),
    )
    .json();
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 9);
    assert!(list["result"]["tools"][0]["inputSchema"].is_object());
    let call = call_tool(a, &sid, "wait", json!({"hours": 2}));
    assert_eq!(call["result"]["data"]["status"], 200, "{call}");
    assert_eq!(call["result"]["isError"], false);
    let state = ws.send(&json!({"type": "state"}));
    assert_eq!(
        state["data"]["step_count"], 2,
        "the socket sees the calls made over /mcp"
    );
    // A second socket cannot attach while one is.
    let mut other = Ws::open(a, &format!("?session_id={sid}"));
    let refused = other.read().unwrap();
    assert_eq!(refused["data"]["code"], "SESSION_ERROR");
    ws.close();
    let closed = rpc(a, "", &[], &json!({"jsonrpc": "2.0", "id": 4, "method": "openenv/session/close", "params": {"session_id": sid}})).json();
    assert_eq!(closed["result"]["closed"], true);
    let after = call_tool(a, &sid, "query_ledger", json!({}));
    assert_eq!(after["error"]["code"], -32602);
}

#[test]
fn mcp_streamable_http_initializes_lists_calls_and_ends() {
    let server = Server::start(&[]);
    let mut mcp = Mcp::open(&server.addr, "?world=logistics&seed=3");
    assert_eq!(mcp.request("ping", json!({}))["result"], json!({}));
    let tools = mcp.request("tools/list", json!({}));
    let tools = tools["result"]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 9);
    assert!(
        tools
            .iter()
            .all(|t| t["inputSchema"]["additionalProperties"] == false)
    );
    let r = mcp.request(
        "tools/call",
        json!({"name": "query_ledger", "arguments": {}}),
    );
    let result = &r["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["status"], 200);
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    let unknown = mcp.request("tools/call", json!({"name": "reset", "arguments": {}}));
    assert_eq!(unknown["result"]["isError"], true);
    assert_eq!(unknown["result"]["structuredContent"]["status"], 404);
    assert!(
        unknown["result"]["structuredContent"]["error"]
            .as_str()
            .unwrap()
            .contains("unknown tool")
    );
    let e = mcp.request("server/discover", json!({}));
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Method not found")
    );
    for method in ["server/discover", "resources/list", "initialize"] {
        let e = mcp.request(method, json!({}));
        assert!(e["error"]["code"].is_i64(), "{method}: {e}");
    }
    assert_eq!(
        mcp.request("server/discover", json!({}))["error"]["code"],
        -32601
    );
    let get = http(
        &server.addr,
        "GET",
        "/mcp",
        &[("Mcp-Session-Id", &mcp.session)],
        b"",
    );
    assert_eq!(get.status, 405);
    assert_eq!(mcp.delete(), 200);
    let gone = rpc(
        &server.addr,
        "",
        &[("Mcp-Session-Id", &mcp.session)],
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
    );
    assert_eq!(gone.status, 404);
    assert!(gone.body.contains("no MCP session"));
    assert_eq!(mcp.delete(), 404);
}

#[test]
fn every_transport_gives_the_same_replies_for_one_seed() {
    let server = Server::start(&[]);
    let a = &server.addr;
    let calls = script(3, 80);
    let mut ws = Ws::open(a, "");
    ws.reset(json!({"world": "warehouse", "seed": 11}));
    let over_ws: Vec<Value> = calls
        .iter()
        .map(|(n, args)| ws.call(n, args.clone()))
        .collect();
    let mut mcp = Mcp::open(a, "?world=warehouse&seed=11");
    let over_mcp: Vec<Value> = calls
        .iter()
        .map(|(n, args)| mcp.call(n, args.clone()))
        .collect();
    let sid = create_session(a, "?world=warehouse&seed=11");
    let over_rpc: Vec<Value> = calls
        .iter()
        .map(|(n, args)| {
            let r = call_tool(a, &sid, n, args.clone());
            r["result"]["data"].clone()
        })
        .collect();
    assert_eq!(over_ws, over_mcp);
    assert_eq!(over_ws, over_rpc);
}

#[test]
fn worlds_and_snapshots_are_ids_never_paths() {
    let server = Server::start(&[]);
    let a = &server.addr;
    let mut ws = Ws::open(a, "");
    for bad in [
        "/etc/passwd",
        "../../x.toml",
        "worlds/warehouse.toml",
        "file:///etc/passwd",
    ] {
        let f = ws.send(&json!({"type": "reset", "data": {"world": bad}}));
        assert_eq!(f["type"], "error", "{bad}: {f}");
        assert_eq!(f["data"]["code"], "VALIDATION_ERROR");
        assert!(error_message(&f).contains("never by path"), "{f}");
        let f = ws.send(&json!({"type": "reset", "data": {"snapshot": bad}}));
        assert!(error_message(&f).contains("never paths"), "{f}");
        let q = format!("?world={}", bad.replace('/', "%2F"));
        let r = rpc(
            a,
            &q,
            &[],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        );
        assert!(r.header("mcp-session-id").is_none());
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("never by path")
        );
    }
    // The socket still works after the refusals.
    ws.reset(json!({"seed": 1}));
    assert_eq!(ws.call("query_ledger", json!({}))["status"], 200);
}

#[test]
fn capacity_is_refused_with_capacity_reached_and_freed_by_a_close() {
    let server = Server::start(&["--max-sessions", "2"]);
    let a = &server.addr;
    let mut one = Ws::open(a, "");
    one.reset(json!({}));
    let mcp = Mcp::open(a, "");
    let mut third = Ws::open(a, "");
    let refused = third.read().unwrap();
    assert_eq!(refused["data"]["code"], "CAPACITY_REACHED", "{refused}");
    let r = rpc(
        a,
        "",
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    )
    .json();
    assert_eq!(r["error"]["data"]["code"], "CAPACITY_REACHED", "{r}");
    assert_eq!(mcp.delete(), 200);
    let mut again = Ws::open(a, "");
    again.reset(json!({}));
    assert_eq!(one.call("query_ledger", json!({}))["status"], 200);
    let gone = rpc(
        a,
        "",
        &[("Mcp-Session-Id", &mcp.session)],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    );
    assert_eq!(gone.status, 404);
}

#[test]
fn idle_sessions_expire() {
    let server = Server::start(&["--idle-timeout", "1"]);
    let a = &server.addr;
    let sid = create_session(a, "");
    let mut ws = Ws::open(a, "");
    ws.reset(json!({}));
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let r = call_tool(a, &sid, "query_ledger", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let f = ws.read().unwrap();
    assert_eq!(f["data"]["code"], "SESSION_ERROR", "{f}");
}

#[test]
fn k_sessions_fork_one_snapshot_and_meet_the_same_world() {
    let server = Server::start(&[]);
    let a = &server.addr;
    let sid = create_session(a, "?seed=4");
    // The source's bad calls are its own: no fork inherits them.
    for (name, arguments) in [("no_such_tool", json!({})), ("reorder", json!("x"))] {
        call_tool(a, &sid, name, arguments);
    }
    call_tool(a, &sid, "wait", json!({"hours": 20}));
    let snap = http(
        a,
        "POST",
        "/snapshots",
        &[("Content-Type", "application/json")],
        json!({"session_id": sid}).to_string().as_bytes(),
    );
    assert_eq!(snap.status, 200, "{snap:?}");
    let snap = snap.json()["snapshot_id"].as_str().unwrap().to_string();
    assert!(
        snap.len() == 32 && snap.bytes().all(|b| b.is_ascii_hexdigit()),
        "a snapshot id is 128 random bits: {snap}"
    );
    let again = http(
        a,
        "POST",
        "/snapshots",
        &[],
        json!({"session_id": sid}).to_string().as_bytes(),
    );
    let again = again.json()["snapshot_id"].as_str().unwrap().to_string();
    assert_ne!(again, snap);
    let calls = script(9, 40);
    let fork = |_: usize| {
        let mut ws = Ws::open(a, "");
        let obs = ws.reset(json!({"snapshot": snap}));
        assert_eq!(obs["observation"]["hour"], 20);
        let state = ws.send(&json!({"type": "state"}));
        for counter in ["calls", "invalid_calls", "malformed_calls"] {
            assert_eq!(state["data"][counter], 0, "{counter}: {state}");
        }
        let r: Vec<Value> = calls
            .iter()
            .map(|(n, args)| ws.call(n, args.clone()))
            .collect();
        ws.close();
        r
    };
    let first = fork(0);
    for k in 1..3 {
        assert_eq!(fork(k), first, "fork {k}");
    }
    let source: Vec<Value> = calls
        .iter()
        .map(|(n, args)| call_tool(a, &sid, n, args.clone())["result"]["data"].clone())
        .collect();
    assert_eq!(source, first, "a fork goes on as its source does");
    let none = http(a, "POST", "/snapshots", &[], br#"{"session_id": "nope"}"#);
    assert_eq!(none.status, 404);
    assert!(
        none.json()["error"]
            .as_str()
            .unwrap()
            .contains("unknown session_id")
    );
    assert_eq!(http(a, "POST", "/snapshots", &[], b"{not json").status, 400);
    assert_eq!(
        http(a, "POST", "/snapshots", &[], br#"{"id": 1}"#).status,
        422
    );
    // A reset naming an id that is not a snapshot is refused, and the refusal names no
    // other snapshot.
    let mut ws = Ws::open(a, "");
    let last = if snap.ends_with('0') { '1' } else { '0' };
    let guess = format!("{}{last}", &snap[..31]);
    let f = ws.send(&json!({"type": "reset", "data": {"snapshot": guess}}));
    assert_eq!(f["data"]["code"], "VALIDATION_ERROR", "{f}");
    let message = error_message(&f);
    assert!(message.contains("no snapshot"), "{message}");
    assert!(
        !message.contains(&snap) && !message.contains(&again),
        "{message}"
    );
    let tools = rpc(
        a,
        "",
        &[],
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"session_id": sid}}),
    )
    .json();
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.contains("snapshot") || *n == "reset"),
        "{names:?}"
    );
}

#[test]
fn oversized_frames_and_bodies_are_refused_and_the_session_goes_on() {
    let server = Server::start(&[]);
    let a = &server.addr;
    let mut ws = Ws::open(a, "");
    ws.reset(json!({"seed": 2}));
    let huge = format!(
        r#"{{"type": "step", "data": {{"type": "call_tool", "tool_name": "{}", "arguments": {{}}}}}}"#,
        "x".repeat(100_000)
    );
    let f = ws.send_text(&huge).unwrap();
    assert_eq!(f["data"]["code"], "VALIDATION_ERROR", "{f}");
    assert_eq!(ws.call("query_ledger", json!({}))["status"], 200);
    let body = format!(
        r#"{{"jsonrpc": "2.0", "id": 1, "method": "{}"}}"#,
        "m".repeat(100_000)
    );
    let r = http(
        a,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(r.status, 413);
    assert_eq!(http(a, "GET", "/health", &[], b"").status, 200);
}

#[test]
fn with_a_runs_directory_each_run_writes_its_trace_and_transcript() {
    let dir = std::env::temp_dir().join(format!("perennial-serve-runs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let server = Server::start(&["--runs", dir.to_str().unwrap()]);
    let mut ws = Ws::open(&server.addr, "");
    ws.reset(json!({"seed": 3}));
    ws.call("wait", json!({"hours": 5}));
    ws.call("reorder", json!({"sku": 1, "quantity": 20}));
    ws.close();
    // The socket's end closes its session and the trace with it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let rows = loop {
        let traces: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                let p = p.to_string_lossy();
                p.ends_with(".jsonl") && !p.contains(".events.") && !p.contains(".transcript.")
            })
            .collect();
        let rows = traces.first().map_or(0, |t| {
            std::fs::read_to_string(t)
                .unwrap()
                .lines()
                .filter(|l| l.contains("\"step\""))
                .count()
        });
        if rows >= 6 || std::time::Instant::now() > deadline {
            assert_eq!(traces.len(), 1, "{traces:?}");
            break rows;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(rows, 6);
    // The transcript beside it: one line per call, each naming the hours it let pass.
    let transcripts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".transcript.jsonl"))
        .collect();
    assert_eq!(transcripts.len(), 1, "{transcripts:?}");
    let lines: Vec<Value> = std::fs::read_to_string(&transcripts[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (&lines[0]["step"], &lines[0]["hours"], &lines[1]["step"]),
        (&json!(0), &json!(5), &json!(5))
    );
    assert_eq!(
        lines[1]["tool_calls"][0]["function"]["name"], "reorder",
        "{}",
        lines[1]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stdio_serves_one_mcp_session_a_line_per_message() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let mut child = Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args(["serve", "--stdio", "warehouse", "--seed", "11"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = move |message: &str| -> Value {
        writeln!(stdin, "{message}").unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let init = ask(
        r#"{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    // A notification gets no line, so the next line answers the bad line after it.
    let bad = ask("{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}\nnot json");
    assert_eq!(bad["error"]["code"], -32700);
    let calls = script(3, 30);
    let over_stdio: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (n, a))| {
            let r = ask(&json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": n, "arguments": a}}).to_string());
            r["result"]["structuredContent"].clone()
        })
        .collect();
    drop(ask);
    assert!(child.wait().unwrap().success());
    let server = Server::start(&[]);
    let mut ws = Ws::open(&server.addr, "");
    ws.reset(json!({"seed": 11}));
    let over_ws: Vec<Value> = calls.iter().map(|(n, a)| ws.call(n, a.clone())).collect();
    assert_eq!(over_stdio, over_ws);
}
