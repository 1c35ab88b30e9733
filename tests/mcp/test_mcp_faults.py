"""Broken stdio servers: each ends in a clear, typed error within its timeout (SPEC §12.1, MCP-1,
MCP-9, MCP-10). The peer is tests/mcp/fake_server.py."""

from __future__ import annotations

import time

import pytest

from phi.loop.tool import ToolContext
from phi.errors import ToolError
from phi.mcp import McpClient, McpConnectionClosed, McpProtocolError, McpTimeout, McpToolAdapter
from phi.mcp import stdio

from .conftest import fake_cmd, pid_gone

pytestmark = pytest.mark.timeout(60)


def connect(mode: str, timeout: float = 1.0) -> McpClient:
    command, args = fake_cmd(mode)
    return McpClient.connect_stdio(command, args, timeout=timeout)


def test_garbage_on_stdout_times_out_naming_the_garbage():
    """MCP-1: lines that are not JSON-RPC are skipped; the timeout error quotes the last one."""
    started = time.monotonic()
    with pytest.raises(McpTimeout) as caught:
        connect("garbage")
    assert time.monotonic() - started < 10
    text = str(caught.value)
    assert "did not answer initialize within 1 s" in text
    assert "3 line(s) to stdout that are not JSON-RPC" in text and "[1, 2" in text


def test_a_server_that_never_answers_times_out():
    """MCP-4: a silent server ends in McpTimeout within the handshake timeout."""
    started = time.monotonic()
    with pytest.raises(McpTimeout, match="did not answer initialize within 1 s"):
        connect("silent")
    assert time.monotonic() - started < 10


def test_a_server_that_exits_early_reports_its_status_and_stderr():
    """MCP-10: the exit status and what the server wrote to stderr, not a timeout."""
    started = time.monotonic()
    with pytest.raises(McpConnectionClosed) as caught:
        connect("exit", timeout=30)
    assert time.monotonic() - started < 10
    assert caught.value.exit_code == 3
    assert "exited with code 3" in str(caught.value)
    assert "missing configuration file /etc/fake.conf" in str(caught.value)


def test_a_server_flooding_stderr_does_not_block():
    """MCP-1: 64 MiB of stderr is drained while the session works; only a bounded tail is kept."""
    with connect("flood", timeout=30) as client:
        assert client.call_tool("echo", {"text": "after the flood"}).text == "after the flood"
        tail = client._transport.stderr_tail()  # type: ignore[attr-defined]
    assert tail.endswith("last words of the flood")
    assert len(tail) <= stdio.STDERR_TAIL_BYTES


def test_a_server_that_floods_stderr_then_exits_gives_a_bounded_tail():
    """MCP-10: the error carries the exit status and a short tail, however much was written."""
    with pytest.raises(McpConnectionClosed) as caught:
        connect("flood-exit", timeout=30)
    error = caught.value
    assert error.exit_code == 4 and "exited with code 4" in str(error)
    assert error.stderr_tail.endswith("last words of the flood")
    assert len(error.stderr_tail) <= stdio.STDERR_TAIL_BYTES and len(str(error)) < 4000


def test_an_overlong_line_ends_the_session(monkeypatch):
    """MCP-1: a line over the size bound is a protocol error, not unbounded memory."""
    monkeypatch.setattr(stdio, "MAX_MESSAGE_BYTES", 64)
    command, args = fake_cmd("serve")
    with pytest.raises(McpProtocolError, match="longer than 64 bytes"):
        McpClient.connect_stdio(command, args, timeout=10)


def test_tool_faults_become_tool_errors():
    """MCP-7, MCP-9: a JSON-RPC error, a timeout and a dead server each reach the loop as a ToolError."""
    with connect("serve", timeout=10) as client:
        tools = {tool.name: tool for tool in McpToolAdapter.from_client(client)}
        ctx = ToolContext("c1", "rpc")
        with pytest.raises(ToolError, match="error -32001: nope"):
            tools["rpc"].execute({}, ctx)
        client.call_timeout = 0.2
        with pytest.raises(ToolError, match="did not answer tools/call within 0.2 s"):
            tools["hang"].execute({}, ctx)
        pid = client.pid
        with pytest.raises(ToolError, match="exited with code 5.*crashed the server"):
            tools["die"].execute({}, ctx)
        with pytest.raises(ToolError, match="exited with code 5"):
            tools["echo"].execute({"text": "x"}, ctx)
    assert pid is not None and pid_gone(pid)
