//! `perennial serve` under load and abuse: 32 concurrent sessions that each get the replies
//! they get alone, 10,000 malformed frames and messages that disturb nobody, and a server
//! whose memory stays bounded as sessions come and go.

#[path = "serve_client/mod.rs"]
mod serve_client;

use std::thread;

use serde_json::{Value, json};
use serve_client::{Mcp, Server, Ws, http, rpc, script};

/// Session `k`'s replies to its script: seed `k`, `calls` calls over a socket.
fn replies(addr: &str, k: u64, calls: usize) -> Vec<Value> {
    let mut ws = Ws::open(addr, "");
    ws.reset(json!({"seed": k}));
    let out = script(k, calls)
        .into_iter()
        .map(|(name, args)| ws.call(&name, args))
        .collect();
    ws.close();
    out
}

#[test]
fn thirty_two_concurrent_sessions_each_get_the_replies_they_get_alone() {
    let server = Server::start(&[]);
    let addr = server.addr.clone();
    let together: Vec<Vec<Value>> = thread::scope(|s| {
        let handles: Vec<_> = (0..32u64)
            .map(|k| {
                let addr = addr.clone();
                s.spawn(move || replies(&addr, k, 200))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (k, got) in together.iter().enumerate() {
        assert_eq!(got.len(), 200);
        let alone = replies(&addr, k as u64, 200);
        assert_eq!(*got, alone, "session {k}");
    }
    assert_ne!(together[0], together[1]);
}

/// A small deterministic generator, so a failing case can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() as usize) % xs.len()]
    }
}

/// A malformed WebSocket frame.
fn bad_frame(g: &mut Lcg) -> String {
    let junk = g.pick(&[
        "",
        "{",
        "}",
        "null",
        "[]",
        "[1,2",
        "\"reset\"",
        "42",
        "{\"type\":",
        "\u{0}\u{1}",
        "{\"type\": null}",
    ]);
    match g.next() % 14 {
        0 => junk.to_string(),
        1 => json!({"type": g.pick(&["resett", "STEP", "", "observation", "error", "eval"])}).to_string(),
        2 => json!({"type": "step"}).to_string(),
        3 => json!({"type": "step", "data": g.pick(&["list_tools", "x"])}).to_string(),
        4 => json!({"type": "step", "data": {"type": "call_tool"}}).to_string(),
        5 => json!({"type": "step", "data": {"type": "call_tool", "tool_name": g.pick(&["reset", "close", "", "../x", "wait"]), "arguments": g.pick(&["x", "[]", "null"])}}).to_string(),
        6 => json!({"type": "step", "data": {"type": "call_tool", "tool_name": "reorder", "arguments": {"sku": g.pick(&["-1", "1e99", "x"]), "quantity": [1, 2]}}}).to_string(),
        7 => json!({"type": "reset", "data": {"world": g.pick(&["/etc/passwd", "../../x.toml", "worlds/warehouse.toml", "file:///etc/passwd", "nope"])}}).to_string(),
        8 => json!({"type": "reset", "data": {"seed": g.pick(&["-1", "x", "1.5"]), "hours": -3}}).to_string(),
        9 => json!({"type": "reset", "data": {"snapshot": "snap-999999", "seed": 1}}).to_string(),
        10 => format!("{{\"type\": \"step\", \"data\": {{\"type\": \"call_tool\", \"tool_name\": \"{}\"}}}}", "w".repeat((g.next() % 3000) as usize)),
        11 => "[".repeat((g.next() % 500) as usize + 1),
        12 => json!({"type": "mcp", "data": g.pick(&["x", "[]"])}).to_string(),
        _ => json!({"type": "step", "data": {"type": "call_tool", "tool_name": "wait", "arguments": {"hours": g.pick(&["0", "25", "24.5"])}}}).to_string(),
    }
}

/// A malformed JSON-RPC body, and whether it goes under the MCP session header.
fn bad_message(g: &mut Lcg) -> (Vec<u8>, bool) {
    let with_session = g.next().is_multiple_of(2);
    let method = g.pick(&[
        "initialize",
        "tools/call",
        "tools/list",
        "openenv/session/close",
        "server/discover",
        "notifications/x",
        "",
        "ping",
    ]);
    let body = match g.next() % 9 {
        0 => g.pick(&["", "{", "nul", "[]", "[{}]", "\"x\"", "{\"jsonrpc\": 2}"]).to_string(),
        1 => json!({"jsonrpc": "2.0", "id": [1], "method": method}).to_string(),
        2 => json!({"jsonrpc": "2.0", "id": 1, "method": 7}).to_string(),
        3 => json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": "x"}).to_string(),
        4 => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": g.pick(&["x", "reset", ""]), "arguments": 3, "session_id": g.pick(&["", "nope", "../../etc"])}}).to_string(),
        5 => json!({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close", "params": {"session_id": 5}}).to_string(),
        6 => json!({"jsonrpc": "2.0", "result": {}, "id": 3}).to_string(),
        7 => format!("{{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"{}\"}}", "m".repeat((g.next() % 5000) as usize)),
        _ => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {"hours": "24"}}}).to_string(),
    };
    (body.into_bytes(), with_session)
}

#[test]
fn ten_thousand_malformed_frames_and_messages_disturb_no_other_session() {
    let mut server = Server::start(&[]);
    let addr = server.addr.clone();
    let alone = replies(&addr, 21, 150);
    let mcp = Mcp::open(&addr, "?seed=2");
    let session = mcp.session.clone();
    let probe = {
        let addr = addr.clone();
        thread::spawn(move || {
            let mut out = Vec::new();
            for _ in 0..3 {
                out.push(replies(&addr, 21, 150));
            }
            out
        })
    };
    let mut g = Lcg(2026);
    let mut ws = Ws::open(&addr, "");
    let (mut frames, mut messages) = (0, 0);
    while frames + messages < 10_000 {
        if g.next().is_multiple_of(4) {
            let (body, with_session) = bad_message(&mut g);
            let headers: Vec<(&str, &str)> = if with_session {
                vec![
                    ("Mcp-Session-Id", session.as_str()),
                    ("Content-Type", "application/json"),
                ]
            } else {
                vec![("Content-Type", "application/json")]
            };
            let r = http(&addr, "POST", "/mcp", &headers, &body);
            assert!(r.status < 500, "{r:?}");
            messages += 1;
        } else {
            let frame = bad_frame(&mut g);
            let answer = match ws.send_text(&frame) {
                Some(a) => a,
                None => {
                    ws = Ws::open(&addr, "");
                    continue;
                }
            };
            assert!(answer["type"].is_string(), "{answer}");
            frames += 1;
        }
    }
    for got in probe.join().unwrap() {
        assert_eq!(got, alone, "the probe session was disturbed");
    }
    assert!(server.alive());
    let r = rpc(
        &addr,
        "",
        &[("Mcp-Session-Id", &session)],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(r.status, 200, "the MCP session survived the abuse");
    assert_eq!(http(&addr, "GET", "/health", &[], b"").status, 200);
}

#[test]
fn memory_stays_bounded_as_sessions_open_and_close() {
    // 10,000 sessions opened, reset, used and closed, by four clients at once, half over
    // the OpenEnv WebSocket and half over MCP; the RSS after the first 1,000 is the
    // baseline, and neither the half-way nor the final figure may sit 32 MiB above it.
    let mut server = Server::start(&[]);
    let addr = server.addr.clone();
    let cycle = |from: usize, to: usize| {
        let clients: Vec<_> = (0..4)
            .map(|c| {
                let addr = addr.clone();
                std::thread::spawn(move || {
                    for i in (from + c..to).step_by(4) {
                        if i % 2 == 0 {
                            let mut ws = Ws::open(&addr, "");
                            ws.reset(json!({"seed": i}));
                            ws.call("wait", json!({"hours": 2}));
                            ws.close();
                        } else {
                            let mut mcp = Mcp::open(&addr, &format!("?seed={i}"));
                            mcp.call("query_inventory", json!({"sku": null}));
                            assert_eq!(mcp.delete(), 200);
                        }
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
    };
    cycle(0, 1_000);
    let warm = server.rss_kib();
    cycle(1_000, 5_500);
    let half = server.rss_kib();
    cycle(5_500, 10_000);
    let after = server.rss_kib();
    eprintln!("server RSS after 1,000 / 5,500 / 10,000 sessions: {warm} / {half} / {after} KiB");
    for (n, rss) in [(5_500, half), (10_000, after)] {
        assert!(
            rss < warm + 32 * 1024,
            "RSS grew from {warm} KiB after 1,000 sessions to {rss} KiB after {n}"
        );
    }
    assert!(server.alive());
}
