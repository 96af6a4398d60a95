"""`perennial serve` with the real clients: the `mcp` SDK over Streamable HTTP and
openenv's MCPToolClient and GenericEnvClient over its JSON-RPC and WebSocket.

The same seed and calls give the same reply envelopes on every transport. openenv 0.10
needs mcp < 2 (through fastmcp), so in an environment with mcp 2.x its tests are skipped
and the mcp tests run with 2.x; with openenv installed both run, with mcp 1.x.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")

CALLS = [
    ("query_inventory", {"sku": None}),
    ("reorder", {"sku": 2, "quantity": 50}),
    ("wait", {"hours": 3}),
    ("query_orders", {"kind": "purchase", "sku": None, "limit": 5}),
    ("expedite", {"sku": 2}),
    ("repair_dock", {"dock": 7}),
    ("no_such_tool", {}),
    ("query_ledger", {}),
    ("choose_carrier", {"carrier": 2}),
    ("query_carriers", {}),
]


@pytest.fixture(scope="module")
def server(perennial_bin: Path):
    """A server on a free port of 127.0.0.1; yields its base URL and stops it after."""
    proc = subprocess.Popen(
        [str(perennial_bin), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    if not line or "http://" not in line[0]:
        proc.kill()
        pytest.fail(f"the server printed no address: {line}")
    url = "http://" + line[0].split("http://")[1].split()[0]
    # Drain stdout so the server never blocks on a full pipe.
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _structured(result) -> dict:
    """The reply envelope of an MCP CallToolResult (1.x and 2.x spell its fields apart)."""
    for name in ("structured_content", "structuredContent"):
        value = getattr(result, name, None)
        if value is not None:
            return value
    text = result.content[0].text
    return json.loads(text)


def _is_error(result) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def _streamable_client():
    from mcp.client import streamable_http as sh

    if hasattr(sh, "streamable_http_client"):
        return sh.streamable_http_client
    return sh.streamablehttp_client


async def _mcp_session_replies(url: str) -> tuple[list[str], list[dict], list[bool]]:
    from mcp import ClientSession

    async with _streamable_client()(f"{url}/mcp?world=warehouse&seed=3") as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert "warehouse" in (init.instructions or "")
            tools = await session.list_tools()
            names = [t.name for t in tools.tools]
            replies, errors = [], []
            for name, args in CALLS:
                result = await session.call_tool(name, args)
                replies.append(_structured(result))
                errors.append(_is_error(result))
            return names, replies, errors


def test_the_mcp_sdk_initializes_lists_and_calls_over_streamable_http(server: str):
    names, replies, errors = asyncio.run(_mcp_session_replies(server))
    assert names == [
        "reorder", "choose_carrier", "expedite", "repair_dock", "wait",
        "query_inventory", "query_orders", "query_ledger", "query_carriers",
    ] or sorted(names) == sorted(
        ["reorder", "choose_carrier", "expedite", "repair_dock", "wait",
         "query_inventory", "query_orders", "query_ledger", "query_carriers"]
    )
    assert replies[0]["status"] == 200 and "cash_available" in json.dumps(replies[0])
    assert replies[1]["status"] == 200 and replies[1]["data"]["hours_passed"] == 1
    assert replies[5]["status"] == 422 and errors[5]
    assert replies[6]["status"] == 404 and errors[6]
    assert not errors[0]


def test_the_same_seed_gives_the_same_replies_and_another_seed_another(server: str):
    _, first, _ = asyncio.run(_mcp_session_replies(server))
    _, again, _ = asyncio.run(_mcp_session_replies(server))
    assert first == again

    async def other_seed():
        from mcp import ClientSession

        async with _streamable_client()(f"{server}/mcp?world=warehouse&seed=4") as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return [_structured(await session.call_tool(n, a)) for n, a in CALLS]

    assert asyncio.run(other_seed()) != first


def test_the_mcp_client_of_sdk_2_probes_discover_then_falls_back_to_initialize(server: str):
    Client = getattr(mcp, "Client", None)
    if Client is None:
        pytest.skip("mcp.Client is the 2.x client")

    async def go():
        async with Client(f"{server}/mcp?world=warehouse&seed=3") as client:
            tools = await client.list_tools()
            result = await client.call_tool("query_inventory", {"sku": None})
            return len(tools.tools), _structured(result)

    n, reply = asyncio.run(go())
    assert n == 9
    _, replies, _ = asyncio.run(_mcp_session_replies(server))
    assert reply == replies[0]


def _openenv():
    return pytest.importorskip("openenv.core.mcp_client")


def test_openenv_mcp_tool_client_resets_lists_calls_and_closes(server: str):
    client_mod = _openenv()

    async def go():
        async with client_mod.MCPToolClient(base_url=server) as env:
            await env.reset(world="warehouse", seed=3)
            tools = await env.list_tools()
            replies = [await env.call_tool(n, **a) for n, a in CALLS]
            state = await env.state()
            return tools, replies, state

    tools, replies, state = asyncio.run(go())
    assert len(tools) == 9 and tools[0].input_schema["type"] == "object"
    assert state.step_count >= 1
    _, over_mcp, _ = asyncio.run(_mcp_session_replies(server))
    assert replies == over_mcp


def test_openenv_generic_client_speaks_the_websocket(server: str):
    _openenv()
    from openenv.core.generic_client import GenericEnvClient

    async def go():
        async with GenericEnvClient(base_url=server) as env:
            first = await env.reset(world="warehouse", seed=3)
            assert "Hour 0" in first.observation["text"]
            listed = await env.step({"type": "list_tools"})
            replies = []
            for name, args in CALLS:
                step = await env.step({"type": "call_tool", "tool_name": name, "arguments": args})
                replies.append(step.observation["result"]["data"])
            state = await env.state()
            return listed, replies, state

    listed, replies, state = asyncio.run(go())
    assert len(listed.observation["tools"]) == 9
    assert state["world"] == "warehouse" and state["seed"] == 3
    _, over_mcp, _ = asyncio.run(_mcp_session_replies(server))
    assert replies == over_mcp


def test_openenv_clients_hear_capacity_reached(perennial_bin: Path):
    _openenv()
    from openenv.core.generic_client import GenericEnvClient

    proc = subprocess.Popen(
        [str(perennial_bin), "serve", "--port", "0", "--max-sessions", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = "http://" + proc.stdout.readline().split("http://")[1].split()[0]

        async def go():
            async with GenericEnvClient(base_url=url) as one:
                await one.reset()
                async with GenericEnvClient(base_url=url) as two:
                    with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                        await two.reset()

        asyncio.run(go())
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_mcp_sdk_speaks_stdio_to_serve_stdio(perennial_bin: Path, server: str):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=str(perennial_bin), args=["serve", "--stdio", "warehouse", "--seed", "3"]
    )

    async def go():
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = await session.list_tools()
                replies = [_structured(await session.call_tool(n, a)) for n, a in CALLS]
                return len(tools.tools), replies

    n, replies = asyncio.run(go())
    assert n == 9
    _, over_http, _ = asyncio.run(_mcp_session_replies(server))
    assert replies == over_http


@pytest.fixture(scope="module")
def roles_server(perennial_bin: Path, worlds_dir: Path):
    """A server of the world with roles, `enterprise`; yields its base URL."""
    proc = subprocess.Popen(
        [str(perennial_bin), "serve", "--port", "0", "--worlds", str(worlds_dir / "enterprise.toml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        pytest.fail(f"the server printed no address: {line}")
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    try:
        yield "http://" + line.split("http://")[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(10)


def test_two_clients_act_as_the_two_roles_of_one_world(roles_server: str):
    _openenv()
    from mcp import ClientSession
    from openenv.core.generic_client import GenericEnvClient

    async def go():
        async with GenericEnvClient(base_url=roles_server) as warehouse:
            first = await warehouse.reset(world="enterprise", role="warehouse", seed=3)
            sid = first.observation["session_id"]
            listed = await warehouse.step({"type": "list_tools"})
            own = await warehouse.step(
                {"type": "call_tool", "tool_name": "reorder", "arguments": {"sku": 1, "quantity": 50}}
            )
            url = f"{roles_server}/mcp?join={sid}&role=logistics"
            async with _streamable_client()(url) as streams:
                async with ClientSession(streams[0], streams[1]) as logistics:
                    await logistics.initialize()
                    tools = await logistics.list_tools()
                    forbidden = await logistics.call_tool("expedite", {"sku": 1})
                    hold = await logistics.call_tool("hold_wave", {})
            state = await warehouse.state()
            return listed, own, tools, forbidden, hold, state

    listed, own, tools, forbidden, hold, state = asyncio.run(go())
    assert [t["name"] for t in listed.observation["tools"]][:4] == ["reorder", "expedite", "repair_dock", "wait"]
    assert own.observation["result"]["data"]["data"]["waiting_for"] == ["logistics"]
    assert [t.name for t in tools.tools][:4] == ["choose_carrier", "prioritize_sku", "hold_wave", "wait"]
    assert _is_error(forbidden) and _structured(forbidden)["status"] == 403
    assert _structured(hold)["data"]["hours_passed"] == 1
    assert state["hour"] == 1 and state["role"] == "warehouse"
