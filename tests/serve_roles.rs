//! `perennial serve` of a world with roles, over a real loopback server: a session acts as
//! one role, other sessions join its world as the other roles, each lists and calls only
//! its role's tools (another role's tool: a 403 reply, counted), and the hour passes once
//! every role has acted.

#[path = "serve_client/mod.rs"]
mod serve_client;

use perennial::world_file::TomlFile;
use serde_json::{Value, json};
use serve_client::{Mcp, Server, Ws, error_message, rpc};

const ENTERPRISE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/worlds/enterprise.toml");

const QUERIES: [&str; 4] = [
    "query_inventory",
    "query_orders",
    "query_ledger",
    "query_carriers",
];

fn served() -> Server {
    Server::start(&["--worlds", ENTERPRISE])
}

/// A socket acting as the warehouse in a new world, and its session id.
fn warehouse(addr: &str, seed: u64) -> (Ws, String) {
    let mut ws = Ws::open(addr, "");
    let o = ws.reset(json!({"world": "enterprise", "role": "warehouse", "seed": seed}));
    let sid = o["observation"]["session_id"].as_str().unwrap().to_string();
    (ws, sid)
}

/// A socket joining the session `sid` as the logistics role, and its observation.
fn logistics(addr: &str, sid: &str) -> (Ws, Value) {
    let mut ws = Ws::open(addr, "");
    let o = ws.reset(json!({"join": sid, "role": "logistics"}));
    (ws, o)
}

/// A new world of `seed` stepped by both roles: the warehouse's socket, the logistics'
/// socket joined to it, and the session id.
fn both_roles(addr: &str, seed: u64) -> (Ws, Ws, String) {
    let (wh, sid) = warehouse(addr, seed);
    let (lo, _) = logistics(addr, &sid);
    (wh, lo, sid)
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn ws_tools(ws: &mut Ws) -> Vec<String> {
    let f = ws.send(&json!({"type": "step", "data": {"type": "list_tools"}}));
    names(&f["data"]["observation"]["tools"])
}

fn state(ws: &mut Ws) -> Value {
    ws.send(&json!({"type": "state"}))["data"].clone()
}

#[test]
fn each_role_lists_only_its_own_tools_over_openenv_and_mcp() {
    let server = served();
    let a = &server.addr;
    let (mut ws, sid) = warehouse(a, 3);
    let mut own = vec!["reorder", "expedite", "repair_dock", "wait"];
    own.extend(QUERIES);
    assert_eq!(ws_tools(&mut ws), own);
    let o = state(&mut ws);
    assert_eq!(o["role"], "warehouse");
    assert_eq!(o["roles"], json!(["warehouse", "logistics"]));

    let mut mcp = Mcp::open(a, &format!("?join={sid}&role=logistics"));
    let listed = mcp.request("tools/list", json!({}));
    let mut own = vec!["choose_carrier", "prioritize_sku", "hold_wave", "wait"];
    own.extend(QUERIES);
    assert_eq!(names(&listed["result"]["tools"]), own);
    let hold = &listed["result"]["tools"][2];
    assert_eq!(hold["inputSchema"]["additionalProperties"], false);
    let prio = &listed["result"]["tools"][1]["inputSchema"]["properties"]["sku"]["enum"];
    assert_eq!(prio.as_array().unwrap().len(), 8);
}

#[test]
fn another_role_s_tool_gets_a_403_reply_and_is_counted() {
    let server = served();
    let a = &server.addr;
    let (mut ws, sid) = warehouse(a, 4);
    let r = ws.call("hold_wave", json!({}));
    assert_eq!(r["status"], 403, "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("role `warehouse` has no tool `hold_wave`: it belongs to another role"),
        "{r}"
    );
    let mut mcp = Mcp::open(a, &format!("?join={sid}&role=logistics"));
    let called = mcp.request(
        "tools/call",
        json!({"name": "reorder", "arguments": {"sku": 0, "quantity": 20}}),
    );
    assert_eq!(called["result"]["isError"], true, "{called}");
    assert_eq!(called["result"]["structuredContent"]["status"], 403);
    let s = state(&mut ws);
    assert_eq!(
        (s["forbidden"].clone(), s["calls"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(s["hour"], 0, "a refused call lets no hour pass: {s}");
    // Each role's session counts its own calls.
    let (mut other, _) = logistics(a, &sid);
    assert_eq!(state(&mut other)["forbidden"], 1);
}

#[test]
fn a_full_hour_is_stepped_by_the_two_roles_together() {
    let server = served();
    let a = &server.addr;
    let (mut wh, sid) = warehouse(a, 5);
    let (mut lo, joined) = logistics(a, &sid);
    assert_eq!(joined["observation"]["role"], "logistics");
    assert_eq!(joined["observation"]["hour"], 0);

    let r = wh.call("reorder", json!({"sku": 1, "quantity": 200}));
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(r["data"]["hours_passed"], 0);
    assert_eq!(r["data"]["waiting_for"], json!(["logistics"]));
    assert_eq!(state(&mut lo)["waiting_for"], json!(["logistics"]));
    let again = wh.call("wait", json!({"hours": 1}));
    assert_eq!(again["status"], 409, "one part per role and hour: {again}");

    let r = lo.call("prioritize_sku", json!({"sku": 1}));
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(r["data"]["hours_passed"], 1);
    for ws in [&mut wh, &mut lo] {
        let s = state(ws);
        assert_eq!(
            (s["hour"].clone(), s["step_count"].clone()),
            (json!(1), json!(1)),
            "{s}"
        );
        assert_eq!(s["waiting_for"], json!(["warehouse", "logistics"]));
    }
    let po = wh.call(
        "query_orders",
        json!({"kind": "purchase", "sku": 1, "limit": 5}),
    );
    assert_eq!(po["data"]["orders"][0]["units"], 200, "{po}");

    // Both wait: the hours pass until the shorter wait ends.
    assert_eq!(
        lo.call("wait", json!({"hours": 24}))["data"]["hours_passed"],
        0
    );
    let r = wh.call("wait", json!({"hours": 3}));
    assert_eq!(r["data"]["hours_passed"], 3, "{r}");
    assert_eq!(state(&mut lo)["hour"], 4);
}

#[test]
fn bad_roles_and_joins_are_refused_naming_the_field() {
    let server = served();
    let a = &server.addr;
    let mut ws = Ws::open(a, "");
    let refused = |ws: &mut Ws, data: Value| -> String {
        let f = ws.send(&json!({"type": "reset", "data": data}));
        assert_eq!(f["type"], "error", "{f}");
        assert_eq!(f["data"]["code"], "VALIDATION_ERROR", "{f}");
        error_message(&f).to_string()
    };
    let m = refused(
        &mut ws,
        json!({"world": "enterprise", "role": "purchasing"}),
    );
    assert_eq!(
        m,
        "reset option `role`: no role `purchasing` in world `enterprise`; its roles are: warehouse, logistics"
    );
    let m = refused(&mut ws, json!({"world": "enterprise"}));
    assert!(m.starts_with("reset option `role` is missing"), "{m}");
    let m = refused(&mut ws, json!({"world": "warehouse", "role": "warehouse"}));
    assert!(m.contains("world `warehouse` has no roles"), "{m}");
    let m = refused(&mut ws, json!({"world": "enterprise", "role": 3}));
    assert!(m.contains("reset option `role` is a string"), "{m}");
    let m = refused(&mut ws, json!({"join": "nope", "role": "logistics"}));
    assert_eq!(m, "reset option `join`: no session `nope`");
    let m = refused(&mut ws, json!({"join": "nope"}));
    assert!(m.contains("`join` needs `role`"), "{m}");
    let m = refused(&mut ws, json!({"join": "nope", "role": "x", "seed": 1}));
    assert!(m.contains("name only `join` and `role`"), "{m}");
    // Joining a single-agent world's session.
    let mut single = Ws::open(a, "");
    let o = single.reset(json!({"world": "warehouse"}));
    let sid = o["observation"]["session_id"].as_str().unwrap();
    let m = refused(&mut ws, json!({"join": sid, "role": "logistics"}));
    assert!(m.contains("which has no roles"), "{m}");

    // MCP: a bad role in the query is a 400 whose error names it; no session is opened.
    let r = rpc(
        a,
        "?world=enterprise&role=purchasing",
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.header("mcp-session-id").is_none());
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("no role `purchasing`"), "{message}");

    // The socket still works after the refusals.
    let o = ws.reset(json!({"world": "enterprise", "role": "logistics", "seed": 1}));
    assert_eq!(
        o["observation"]["waiting_for"],
        json!(["warehouse", "logistics"])
    );
}

#[test]
fn a_snapshot_of_a_roles_world_is_restored_as_one_role_and_joined_by_the_others() {
    let server = served();
    let a = &server.addr;
    let (mut wh, mut lo, sid) = both_roles(a, 6);
    wh.call("wait", json!({"hours": 4}));
    assert_eq!(
        lo.call("wait", json!({"hours": 4}))["data"]["hours_passed"],
        4
    );
    let snap = serve_client::http(
        a,
        "POST",
        "/snapshots",
        &[],
        json!({"session_id": sid}).to_string().as_bytes(),
    )
    .json();
    let snap = snap["snapshot_id"].as_str().unwrap().to_string();
    let mut fork = Ws::open(a, "");
    let f = fork.send(&json!({"type": "reset", "data": {"snapshot": snap}}));
    assert!(
        error_message(&f).starts_with("reset option `role` is missing"),
        "{f}"
    );
    let o = fork.reset(json!({"snapshot": snap, "role": "logistics"}));
    assert_eq!(
        (
            o["observation"]["hour"].clone(),
            o["observation"]["role"].clone()
        ),
        (json!(4), json!("logistics"))
    );
    let fsid = o["observation"]["session_id"].as_str().unwrap().to_string();
    let mut fork_wh = Ws::open(a, "");
    fork_wh.reset(json!({"join": fsid, "role": "warehouse"}));
    // The fork and the original go on alike, and apart.
    for (w, l) in [(&mut wh, &mut lo), (&mut fork_wh, &mut fork)] {
        w.call("reorder", json!({"sku": 2, "quantity": 50}));
        let r = l.call("hold_wave", json!({}));
        assert_eq!(r["data"]["hours_passed"], 1, "{r}");
    }
    let (s, f) = (state(&mut wh), state(&mut fork_wh));
    assert_eq!((s["hour"].clone(), f["hour"].clone()), (json!(5), json!(5)));
    let ledger = |ws: &mut Ws| ws.call("query_ledger", json!({}))["data"].clone();
    assert_eq!(ledger(&mut wh), ledger(&mut fork_wh));
    assert_eq!(
        f["calls"], 1,
        "a fork carries none of its source's calls: {f}"
    );
}

/// The tool call that asks for role index `i` of `role`: its operation, or `wait` for the
/// no-op.
fn call_of(file: &perennial::world_file::WorldFile, role: usize, i: usize) -> (String, Value) {
    use perennial::morpheus::api::ToolCall;
    use perennial::morpheus::roles::{EnterpriseParams, RoleLayout};
    let params = file.params::<EnterpriseParams>().unwrap();
    let layout = RoleLayout::new(&params.roles.roles[role], &params.config);
    let op = layout.decode(i).unwrap();
    match ToolCall::from_op(op, &params.config) {
        Some(call) => (call.tool().as_str().to_string(), call.arguments()),
        None => ("wait".to_string(), json!({"hours": 1})),
    }
}

#[test]
fn two_served_roles_replaying_the_roles_agent_s_decisions_leave_its_trace() {
    let dir = std::env::temp_dir().join(format!("perennial-serve-roles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cli = dir.join("cli.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args([
            "run",
            ENTERPRISE,
            "--agent",
            "warehouse=random,logistics=random",
        ])
        .args([
            "--seed",
            "7",
            "--steps",
            "120",
            "--record-transitions",
            "--trace",
        ])
        .arg(&cli)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = std::fs::read_to_string(&cli)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let file = perennial::world_file::WorldFile::parse(
        &std::fs::read_to_string(ENTERPRISE).unwrap(),
        std::path::Path::new(ENTERPRISE),
    )
    .unwrap();

    let runs = dir.join("runs");
    let server = Server::start(&["--worlds", ENTERPRISE, "--runs", runs.to_str().unwrap()]);
    let (mut wh, mut lo, _) = both_roles(&server.addr, 7);
    for row in &rows {
        for (r, ws) in [(0, &mut wh), (1, &mut lo)] {
            let role = ["warehouse", "logistics"][r];
            let index = row["action"][role].as_u64().unwrap() as usize;
            let (name, arguments) = call_of(&file, r, index);
            let reply = ws.call(&name, arguments);
            assert_eq!(reply["status"], 200, "{reply}");
        }
    }
    wh.close();
    lo.close();
    // The last role's socket ends the world's last session, which closes its trace.
    let trace = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".jsonl") && !name.contains(".events.")
        })
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let served: Vec<Value> = loop {
        let text = std::fs::read_to_string(&trace).unwrap();
        let complete = text.lines().count() >= rows.len() && text.ends_with('\n');
        if complete || std::time::Instant::now() > deadline {
            break text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    drop(server);
    assert_eq!(served.len(), rows.len());
    let strip = |row: &Value| {
        let mut row = row.clone();
        let m = row.as_object_mut().unwrap();
        for key in ["run_id", "algorithm_id", "obs", "action"] {
            m.remove(key);
        }
        row
    };
    for (s, c) in served.iter().zip(&rows) {
        assert_eq!(strip(s), strip(c), "step {}", c["step"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stdio_refuses_a_world_with_roles_and_says_to_serve_it_over_http() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perennial"))
        .args(["serve", "--stdio", "enterprise", "--worlds", ENTERPRISE])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--stdio enterprise: a world with roles needs one session per role"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}
