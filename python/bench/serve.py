"""Tool calls per second and server CPU per call of `perennial serve`, at 1 and 32 sessions,
over the OpenEnv WebSocket (/ws) and MCP Streamable HTTP (POST /mcp).

    python python/bench/serve.py [--bin target/release/perennial] [--calls 2000]

Each session resets seed k and sends a fixed mix of queries and operations; the server's
CPU is read from /proc before and after, so "CPU/call" is the server's own time per call
(the Python clients, on the same machine, cap calls/s).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import subprocess
import threading
import time

MIX = [
    ("query_inventory", {"sku": None}),
    ("reorder", {"sku": 1, "quantity": 20}),
    ("query_ledger", {}),
    ("wait", {"hours": 1}),
    ("query_orders", {"kind": "customer", "sku": None, "limit": 5}),
    ("choose_carrier", {"carrier": 0}),
]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def ws_session(addr: str, k: int, calls: int, mix=MIX, *, check: bool = False) -> None:
    """A seed-`k` session over the OpenEnv WebSocket making `calls` calls of `mix` in turn;
    with `check`, each reply is parsed and an error reply ends the bench."""
    import websockets

    async with websockets.connect(f"ws://{addr}/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": k}}))
        await ws.recv()
        for i in range(calls):
            name, args = mix[i % len(mix)]
            await ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": name, "arguments": args}}))
            reply = await ws.recv()
            if check and json.loads(reply).get("type") == "error":
                raise SystemExit(f"ws call {name} failed: {reply}")
        await ws.send(json.dumps({"type": "close"}))


def mcp_session(addr: str, k: int, calls: int) -> None:
    host, port = addr.split(":")
    conn = http.client.HTTPConnection(host, int(port))
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
    conn.request("POST", f"/mcp?seed={k}", json.dumps(body), headers)
    r = conn.getresponse()
    sid = r.getheader("mcp-session-id")
    r.read()
    headers["Mcp-Session-Id"] = sid
    for i in range(calls):
        name, args = MIX[i % len(MIX)]
        body = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
        conn.request("POST", "/mcp", json.dumps(body), headers)
        conn.getresponse().read()
    conn.request("DELETE", "/mcp", headers=headers)
    conn.getresponse().read()
    conn.close()


def measure(pid: int, transport: str, sessions: int, calls: int, ws_session, http_session) -> tuple[float, float]:
    """Runs sessions 0 to `sessions` - 1 at once, each `calls` calls: `ws_session(k)` (a
    coroutine) over the WebSocket, else `http_session(k)` on a thread each. Returns the calls
    per second and the server's (process `pid`'s) CPU milliseconds per call."""
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    if transport == "ws":

        async def all_sessions():
            await asyncio.gather(*(ws_session(k) for k in range(sessions)))

        asyncio.run(all_sessions())
    else:
        threads = [threading.Thread(target=http_session, args=(k,)) for k in range(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    wall, cpu = time.perf_counter() - t0, cpu_seconds(pid) - c0
    total = sessions * calls
    return total / wall, cpu / total * 1e3


def measure_serve(pid: int, addr: str, transport: str, sessions: int, calls: int) -> tuple[float, float]:
    return measure(
        pid,
        transport,
        sessions,
        calls,
        lambda k: ws_session(addr, k, calls),
        lambda k: mcp_session(addr, k, calls),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.environ.get("PERENNIAL_BIN", "target/release/perennial"))
    parser.add_argument("--calls", type=int, default=2000, help="calls per session at 1 session")
    args = parser.parse_args()
    proc = subprocess.Popen([args.bin, "serve", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        addr = proc.stdout.readline().split("http://")[1].split()[0]
        print(f"{'transport':<10} {'sessions':>8} {'calls':>7} {'calls/s':>9} {'server CPU/call':>16}")
        for transport in ("ws", "mcp"):
            for sessions in (1, 32):
                calls = args.calls if sessions == 1 else max(1, args.calls // 8)
                measure_serve(proc.pid, addr, transport, sessions, 50)
                rate, cpu_ms = measure_serve(proc.pid, addr, transport, sessions, calls)
                print(f"{transport:<10} {sessions:>8} {sessions * calls:>7} {rate:>9.0f} {cpu_ms:>13.3f} ms")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
