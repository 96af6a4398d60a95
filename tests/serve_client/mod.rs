//! A `perennial serve` process for tests, and the small HTTP and WebSocket clients that
//! talk to it.

#![allow(dead_code, reason = "each test crate uses part of the helpers")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// A server on 127.0.0.1 and a free port, killed when dropped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Server {
    /// Starts `perennial serve --port 0 ARGS...` and waits for its address line.
    pub fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_perennial"))
            .args(["serve", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            // Keep reading so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("the server printed no address within 60 s");
            }
        };
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, addr }
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process's resident set size in KiB (Linux), or 0.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// CPU time the process used so far, in seconds (Linux), or 0.
    pub fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        (ticks(11) + ticks(12)) / 100.0
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

/// One HTTP/1.1 request on its own connection.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) before reading the whole of a body too large.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        unchunk(rest)
    } else {
        rest.to_string()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn unchunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

/// A JSON-RPC POST to `/mcp` (with a query), with extra headers.
pub fn rpc(addr: &str, query: &str, headers: &[(&str, &str)], message: &Value) -> Response {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    http(
        addr,
        "POST",
        &format!("/mcp{query}"),
        &all,
        message.to_string().as_bytes(),
    )
}

/// An MCP session over Streamable HTTP.
pub struct Mcp {
    addr: String,
    pub session: String,
    next: u64,
}

impl Mcp {
    /// `initialize` on `/mcp?QUERY`, then `notifications/initialized`.
    pub fn open(addr: &str, query: &str) -> Mcp {
        let r = rpc(
            addr,
            query,
            &[],
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        let session = r
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session header: {r:?}"))
            .to_string();
        let mcp = Mcp {
            addr: addr.to_string(),
            session,
            next: 1,
        };
        let n = rpc(
            addr,
            "",
            &[("Mcp-Session-Id", &mcp.session)],
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(n.status, 202);
        mcp
    }

    /// A request in the session; the whole JSON-RPC response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let r = rpc(
            &self.addr,
            "",
            &[("Mcp-Session-Id", &self.session)],
            &json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        r.json()
    }

    /// A tool call; the reply envelope (`structuredContent`).
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        r["result"]["structuredContent"].clone()
    }

    /// `DELETE /mcp`; its status.
    pub fn delete(&self) -> u16 {
        http(
            &self.addr,
            "DELETE",
            "/mcp",
            &[("Mcp-Session-Id", &self.session)],
            b"",
        )
        .status
    }
}

/// An OpenEnv WebSocket.
pub struct Ws {
    socket: tungstenite::WebSocket<TcpStream>,
}

impl Ws {
    /// Connects to `/ws` (with a query such as `?session_id=ID`).
    pub fn open(addr: &str, query: &str) -> Ws {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let (socket, _) = tungstenite::client::client(format!("ws://{addr}/ws{query}"), stream)
            .expect("the WebSocket handshake");
        Ws { socket }
    }

    /// Sends a text frame and reads the answer; `None` when the socket closed.
    pub fn send_text(&mut self, text: &str) -> Option<Value> {
        self.socket
            .send(tungstenite::Message::text(text.to_string()))
            .ok()?;
        self.read()
    }

    /// The next frame, as JSON; `None` when the socket closed.
    pub fn read(&mut self) -> Option<Value> {
        loop {
            match self.socket.read().ok()? {
                tungstenite::Message::Text(t) => {
                    return Some(serde_json::from_str(t.as_str()).expect("JSON frames"));
                }
                tungstenite::Message::Close(_) => return None,
                _ => {}
            }
        }
    }

    /// Sends a frame as JSON and reads the answer.
    pub fn send(&mut self, frame: &Value) -> Value {
        self.send_text(&frame.to_string())
            .expect("an answer before the socket closed")
    }

    /// A reset with these options; the `data` of the observation frame.
    pub fn reset(&mut self, data: Value) -> Value {
        let f = self.send(&json!({"type": "reset", "data": data}));
        assert_eq!(f["type"], "observation", "{f}");
        f["data"].clone()
    }

    /// A tool call; the reply envelope.
    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        let f = self.send(&json!({"type": "step", "data": {
            "type": "call_tool", "tool_name": name, "arguments": arguments}}));
        assert_eq!(f["type"], "observation", "{f}");
        f["data"]["observation"]["result"]["data"].clone()
    }

    /// `close`, then the socket's end.
    pub fn close(mut self) {
        let _ = self.socket.send(tungstenite::Message::text(
            json!({"type": "close"}).to_string(),
        ));
        let _ = self.read();
    }
}

/// The message of a socket's `error` frame.
pub fn error_message(frame: &Value) -> &str {
    frame["data"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error frame with a message: {frame}"))
}

/// A fixed script of calls for seed-`k` sessions: operations, waits, queries, errors.
pub fn script(k: u64, calls: usize) -> Vec<(String, Value)> {
    let mut out = Vec::with_capacity(calls);
    for i in 0..calls as u64 {
        let x = i.wrapping_mul(2654435761).wrapping_add(k * 97) % 11;
        let call = match x {
            0 => {
                let quantity = [20, 50, 100, 200][(i % 4) as usize];
                ("reorder", json!({"sku": (i + k) % 8, "quantity": quantity}))
            }
            1 => ("wait", json!({"hours": 1 + (i % 5)})),
            2 => ("query_inventory", json!({"sku": null})),
            3 => (
                "query_orders",
                json!({"kind": "customer", "sku": null, "limit": 5}),
            ),
            4 => ("query_ledger", json!({})),
            5 => ("choose_carrier", json!({"carrier": i % 3})),
            6 => ("expedite", json!({"sku": i % 8})),
            7 => ("repair_dock", json!({"dock": i % 4})),
            8 => ("query_carriers", json!({})),
            9 => ("reorder", json!({"sku": 99, "quantity": 50})),
            _ => ("no_such_tool", json!({})),
        };
        out.push((call.0.to_string(), call.1));
    }
    out
}
