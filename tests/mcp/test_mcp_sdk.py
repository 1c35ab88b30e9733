"""Interop with a server no one on this project wrote: the official MCP Python SDK (``mcp`` 2.x),
over stdio and over Streamable HTTP with SSE replies, JSON replies and stateless (SPEC §12.1).
The server script is tests/mcp/sdk_server.py."""

from __future__ import annotations

import base64
import os
import signal
import threading
import time

import pytest
import requests

from phi.loop.tool import ToolContext
from phi.concurrency.cancel import CancellationToken
from phi.errors import ToolCancelled, ToolError
from phi.mcp import McpClient, McpConnectionClosed, McpConnectionError, McpToolAdapter, McpToolInfo, McpToolset
from phi.loop.arguments import validate_arguments
from phi.types import ImageContent

from .conftest import HttpServer, group_gone, mcp_threads, pid_gone, sdk_cmd, wait_until

pytestmark = pytest.mark.timeout(90)

KINDS = ["stdio", "sse", "json", "stateless", "stateless-json"]
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture(scope="module")
def shared_stdio():
    """One stdio session for the tests that leave it usable (a server start costs about a second)."""
    clients: list[McpClient] = []
    yield clients
    for client in clients:
        client.close()


@pytest.fixture
def connect(http_servers, shared_stdio):
    opened: list[McpClient] = []

    def open_client(kind: str, fresh: bool = False, **options) -> McpClient:
        options.setdefault("timeout", 20)
        if kind == "stdio" and not fresh and shared_stdio and not shared_stdio[0].closed:
            return shared_stdio[0]
        if kind == "stdio":
            client = McpClient.connect_stdio(*sdk_cmd(), **options)
            (opened if fresh else shared_stdio).append(client)
            return client
        client = McpClient.connect_http(http_servers(kind).url, **options)
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        client.close()


def tools_of(client: McpClient) -> dict[str, McpToolAdapter]:
    return {tool.name: tool for tool in McpToolAdapter.from_client(client)}


@pytest.mark.parametrize("kind", KINDS)
def test_handshake_list_and_call(connect, kind):
    """MCP-5, MCP-8, MCP-12, MCP-13: handshake, tools/list, tools/call and argument validation."""
    client = connect(kind)
    assert client.protocol_version == "2025-11-25"
    assert client.server_info["name"] == "phi-test-sdk-server"
    tools = tools_of(client)
    assert {"add", "echo", "image", "slow", "fail", "rpc_fail", "grow", "pid"} <= set(tools)
    add = tools["add"]
    assert validate_arguments(add, {"a": 2, "b": 3}) is None
    assert "is not of type 'integer'" in validate_arguments(add, {"a": "2", "b": 3})
    result = add.execute({"a": 2, "b": 3}, ToolContext("c1", "add"))
    assert result.content[0].text == "5" and result.details == {"structuredContent": {"result": 5}}
    assert client.call_tool("echo", {"text": "héllo\nwörld"}).text == "héllo\nwörld"
    if kind.startswith("stateless"):
        assert client._transport.session_id is None  # type: ignore[attr-defined]
    elif kind != "stdio":
        assert len(client._transport.session_id) >= 16  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KINDS)
def test_error_results_and_rpc_errors(connect, kind):
    """MCP-7: isError and a JSON-RPC error both become ToolError with the server's words."""
    tools = tools_of(connect(kind))
    ctx = ToolContext("c1", "fail")
    with pytest.raises(ToolError, match="Error executing tool fail: the disk is full"):
        tools["fail"].execute({"message": "the disk is full"}, ctx)
    with pytest.raises(ToolError, match="error -32050: refused"):
        tools["rpc_fail"].execute({"message": "refused"}, ctx)


@pytest.mark.parametrize("kind", KINDS)
def test_image_content(connect, kind):
    """MCP-6: an image block becomes ImageContent with its data and mime type."""
    result = tools_of(connect(kind))["image"].execute({}, ToolContext("c1", "image"))
    image = result.content[0]
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == base64.b64decode(PNG)


@pytest.mark.parametrize("kind", ["stdio", "sse", "json"])
def test_cancel_mid_call_reaches_the_server(connect, kind, tmp_path):
    """MCP-4: cancelling returns at once (ToolCancelled) and the SDK cancels the running tool.
    (A stateless server handles notifications/cancelled in a different request context, so it
    cannot cancel the call; that case is covered by the next test.)"""
    client = connect(kind)
    marker = tmp_path / "cancelled"
    token = CancellationToken()
    outcome: list = []

    def run() -> None:
        try:
            tools_of(client)["slow"].execute({"seconds": 30, "marker": str(marker)}, ToolContext("c1", "slow", token))
        except Exception as error:  # noqa: BLE001 - checked below
            outcome.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(1.0)  # let the call reach the tool
    token.cancel()
    worker.join(5)
    assert not worker.is_alive() and isinstance(outcome[0], ToolCancelled)
    wait_until(lambda: marker.exists() and marker.read_text() == "cancelled", 15, "the server to cancel the tool")
    assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"


@pytest.mark.parametrize("kind", ["stateless", "stateless-json"])
def test_cancel_mid_call_returns_at_once_on_a_stateless_server(connect, kind):
    """MCP-4: the wait ends at once and the HTTP exchange is dropped; the client stays usable."""
    client = connect(kind)
    token = CancellationToken()
    threading.Timer(0.5, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(ToolCancelled):
        tools_of(client)["slow"].execute({"seconds": 30}, ToolContext("c1", "slow", token))
    assert time.monotonic() - started < 10
    assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"


def test_server_killed_mid_call_over_stdio(connect):
    """MCP-10: the waiting call fails at once with the signal that killed the server."""
    client = connect("stdio", fresh=True)
    pid = client.pid
    assert pid is not None and client.call_tool("pid").text == str(pid)
    threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(McpConnectionClosed, match=r"killed by signal 9 \(SIGKILL\)"):
        client.call_tool("slow", {"seconds": 30})
    assert pid_gone(pid)
    with pytest.raises(ToolError, match="killed by signal 9"):
        McpToolAdapter.for_tool(client, McpToolInfo("echo")).execute({"text": "x"}, ToolContext("c2", "echo"))


@pytest.mark.parametrize("mode", ["sse", "json"])
def test_server_killed_mid_call_over_http(mode):
    """MCP-9: the HTTP exchange breaks; the call fails with McpConnectionError, not a hang."""
    server = HttpServer(*(("--json",) if mode == "json" else ()))
    try:
        client = McpClient.connect_http(server.url, timeout=20)
        threading.Timer(0.5, server.proc.kill).start()
        with pytest.raises(McpConnectionError, match=f"MCP server http://127.0.0.1:{server.port}/mcp"):
            client.call_tool("slow", {"seconds": 30})
        with pytest.raises(McpConnectionError, match="cannot reach"):
            client.call_tool("add", {"a": 1, "b": 1})
        client.close()
    finally:
        server.stop()


@pytest.mark.parametrize("kind", ["stdio", "sse", "json", "stateless"])
def test_list_changed_refreshes_the_toolset(connect, kind):
    """MCP-8, MCP-15: notifications/tools/list_changed (stdout, the GET stream, or the request's own
    SSE stream for a stateless server) makes the next tools() list again. (A stateless server with
    JSON replies has no way to send a notification at all.)"""
    client = connect(kind)
    toolset = McpToolset(client, prefix="sdk")
    first = toolset.tools()
    assert "sdk__add" in {tool.name for tool in first}
    assert toolset.tools() == first  # nothing changed: no new listing
    version = client.tools_version
    name = f"grown_{kind.replace('-', '_')}"
    client.call_tool("grow", {"name": name, "related": kind.startswith("stateless")})
    wait_until(lambda: client.tools_version > version, 10, "notifications/tools/list_changed")
    grown = {tool.name: tool for tool in toolset.tools()}
    assert f"sdk__{name}" in grown
    result = grown[f"sdk__{name}"].execute({"text": "hi"}, ToolContext("c1", name))
    assert result.content[0].text == f"{name}: hi"


@pytest.mark.parametrize("kind", KINDS)
def test_close_leaves_nothing_behind(connect, kind, http_servers):
    """MCP-11, MCP-14: close reaps the stdio server (and its group) or DELETEs the HTTP session;
    the client's threads end."""
    before = {t.ident for t in mcp_threads()}
    client = connect(kind, fresh=True)
    client.list_tools()
    pid = client.pid
    session_id = getattr(client._transport, "session_id", None)
    client.close()
    client.close()
    assert client.closed
    if kind == "stdio":
        assert pid is not None and pid_gone(pid) and group_gone(pid)
    elif session_id is not None:
        answer = requests.post(http_servers(kind).url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                               headers={"Accept": "application/json, text/event-stream",
                                        "Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"},
                               timeout=10)
        assert answer.status_code == 404  # the session was deleted
    wait_until(lambda: not [t for t in mcp_threads() if t.ident not in before], 10, "the client's threads to end")


def test_a_forgotten_session_is_initialized_again():
    """MCP-14: the SDK drops an idle session; the next call gets 404, re-initializes once, succeeds."""
    server = HttpServer("--idle", "0.5")
    try:
        with McpClient.connect_http(server.url, listen=False, timeout=20) as client:
            first = client._transport.session_id  # type: ignore[attr-defined]
            assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
            time.sleep(1.5)  # past the idle timeout
            assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"
            assert client._transport.session_id not in (None, first)  # type: ignore[attr-defined]
    finally:
        server.stop()
