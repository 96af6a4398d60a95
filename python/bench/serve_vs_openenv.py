"""`perennial serve` against OpenEnv's own server, same Python clients, same run.

    target/openenv-venv/bin/python python/bench/serve_vs_openenv.py [--bin target/release/perennial] [--calls 2000]

Run it with a Python that has openenv 0.10 (the test command makes `target/openenv-venv`).
Two servers start on 127.0.0.1:

- `perennial serve` with the default world, answering the enterprise world's tools
  (a fixed mix of queries and operations, one simulated hour per operation);
- OpenEnv's `create_app` under uvicorn, serving a toy `MCPEnvironment` with one tool that
  returns a small dictionary (the least work a tool can do).

Both are driven the way OpenEnv's clients drive them: over the WebSocket (`/ws`: a reset
frame, then `step` frames of `call_tool`, then `close`) and over HTTP JSON-RPC (`POST /mcp`:
`openenv/session/create`, `tools/call` with the session id, `openenv/session/close`), at 1
and 32 sessions at once. calls/s is what the clients saw; server CPU/call is the server
process's user + system time from /proc over the calls. The clients share the machine, so
they cap calls/s; the CPU per call is the server's own cost.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from serve import MIX, measure, ws_session

TOY_MIX = [("query", {"sku": 1})]

TOY_APP = '''
from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


class Toy(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        mcp = FastMCP("toy")
        self._calls = 0

        @mcp.tool
        def query(sku: int = 0) -> dict:
            """How much of a SKU is on hand."""
            self._calls += 1
            return {"sku": sku, "on_hand": 40 + sku, "calls": self._calls}

        super().__init__(mcp)
        self._state = State(episode_id="toy", step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._calls = 0
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action, **kwargs):
        return Observation(done=False, reward=0.0)

    @property
    def state(self):
        return self._state


app = create_app(Toy, CallToolAction, CallToolObservation, env_name="toy", max_concurrent_envs=64)
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(addr: str, proc: subprocess.Popen, what: str) -> None:
    host, port = addr.split(":")
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode} before answering /health")
        try:
            conn = http.client.HTTPConnection(host, int(port), timeout=1)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"{what} did not answer /health on {addr} within 30 s")


def rpc(conn: http.client.HTTPConnection, body: dict) -> dict:
    conn.request("POST", "/mcp", json.dumps(body), {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read())
    if "error" in reply:
        raise SystemExit(f"{body['method']} failed: {reply['error']}")
    return reply["result"]


def http_session(addr: str, k: int, calls: int, mix) -> None:
    host, port = addr.split(":")
    conn = http.client.HTTPConnection(host, int(port))
    sid = rpc(conn, {"jsonrpc": "2.0", "id": 0, "method": "openenv/session/create", "params": {}})["session_id"]
    for i in range(calls):
        name, args = mix[i % len(mix)]
        rpc(conn, {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                   "params": {"name": name, "arguments": args, "session_id": sid}})
    rpc(conn, {"jsonrpc": "2.0", "id": calls + 1, "method": "openenv/session/close", "params": {"session_id": sid}})
    conn.close()


def measure_both(pid: int, addr: str, transport: str, sessions: int, calls: int, mix) -> tuple[float, float]:
    return measure(
        pid,
        transport,
        sessions,
        calls,
        lambda k: ws_session(addr, k, calls, mix, check=True),
        lambda k: http_session(addr, k, calls, mix),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.environ.get("PERENNIAL_BIN", "target/release/perennial"))
    parser.add_argument("--calls", type=int, default=2000, help="calls per session at 1 session (32 sessions make 1/8 as many each)")
    args = parser.parse_args()
    try:
        import openenv  # noqa: F401
        import websockets  # noqa: F401
    except ImportError as e:
        sys.exit(f"{e.name} is missing: run this with target/openenv-venv/bin/python (the test command makes it)")

    with tempfile.TemporaryDirectory(prefix="serve-bench.") as tmp:
        Path(tmp, "toy_app.py").write_text(TOY_APP)
        oe_port = free_port()
        servers = {
            "perennial": subprocess.Popen([args.bin, "serve", "--port", "0"], stdout=subprocess.PIPE, text=True),
            "openenv": subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "toy_app:app", "--host", "127.0.0.1", "--port", str(oe_port),
                 "--log-level", "warning"], cwd=tmp, stdout=subprocess.DEVNULL),
        }
        try:
            addrs = {
                "perennial": servers["perennial"].stdout.readline().split("http://")[1].split()[0],
                "openenv": f"127.0.0.1:{oe_port}",
            }
            for name, proc in servers.items():
                wait_healthy(addrs[name], proc, name)
            print(f"{'transport':<9} {'sessions':>8} {'calls':>6}  {'perennial calls/s':>17} {'CPU/call':>9}"
                  f"  {'openenv calls/s':>15} {'CPU/call':>9}  {'ratio':>6}")
            for transport in ("ws", "http"):
                for sessions in (1, 32):
                    calls = args.calls if sessions == 1 else max(1, args.calls // 8)
                    got = {}
                    for name, mix in (("perennial", MIX), ("openenv", TOY_MIX)):
                        measure_both(servers[name].pid, addrs[name], transport, sessions, 20, mix)
                        got[name] = measure_both(servers[name].pid, addrs[name], transport, sessions, calls, mix)
                    (pr, pc), (orate, oc) = got["perennial"], got["openenv"]
                    print(f"{transport:<9} {sessions:>8} {sessions * calls:>6}  {pr:>17.0f} {pc:>6.3f} ms"
                          f"  {orate:>15.0f} {oc:>6.3f} ms  {pr / orate:>5.1f}x", flush=True)
        finally:
            for proc in servers.values():
                proc.terminate()
            for proc in servers.values():
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()


if __name__ == "__main__":
    main()
