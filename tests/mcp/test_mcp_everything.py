"""Interop with the reference server ``@modelcontextprotocol/server-everything`` (npm, TypeScript
SDK) over stdio (SPEC §12.1). Installed by scripts/install-mcp-everything; skipped, saying why,
where node or the package is missing."""

from __future__ import annotations

import base64
import os
import signal
import threading

import pytest

from phi.loop.tool import ToolContext
from phi.concurrency.cancel import CancellationToken
from phi.errors import ToolCancelled, ToolError
from phi.mcp import McpClient, McpConnectionClosed, McpToolAdapter, McpToolset
from phi.loop.arguments import validate_arguments
from phi.types import ImageContent, TextContent

from .conftest import find_everything, group_gone, mcp_threads, pid_gone, wait_until

COMMAND, WHY_NOT = find_everything()
pytestmark = [pytest.mark.timeout(60), pytest.mark.skipif(COMMAND is None, reason=WHY_NOT)]


def connect(**options) -> McpClient:
    assert COMMAND is not None
    options.setdefault("timeout", 20)
    return McpClient.connect_stdio(COMMAND[0], COMMAND[1], **options)


@pytest.fixture(scope="module")
def client():
    with connect() as shared:
        yield shared


@pytest.fixture(scope="module")
def tools(client) -> dict[str, McpToolAdapter]:
    wait_until(lambda: client.tools_version >= 1, 10, "the list_changed sent after initialized")
    return {tool.name: tool for tool in McpToolset(client).tools()}


def run(tool: McpToolAdapter, args: dict, token: CancellationToken | None = None, progress: list | None = None):
    ctx = ToolContext("c1", tool.name, token or CancellationToken(),
                      on_progress=progress.append if progress is not None else None)
    return tool.execute(args, ctx)


def test_handshake_and_list(client, tools):
    """MCP-5, MCP-8, MCP-17: version, server info, the tools (hyphenated names, draft-07 schemas)."""
    assert client.protocol_version == "2025-11-25"
    assert client.server_info["name"] == "mcp-servers/everything"
    assert {"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"} <= set(tools)
    echo = tools["echo"]
    assert echo.parameters["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert validate_arguments(echo, {"message": "hi"}) is None
    assert "'message' is a required property" in validate_arguments(echo, {})


def test_list_changed_after_initialized_is_seen(client, tools):
    """MCP-2, MCP-8: the server announces its conditional tools with list_changed (before or after
    the first tools/list response); the toolset lists them."""
    assert client.tools_version >= 1
    assert "simulate-research-query" in tools


def test_call(tools):
    assert run(tools["get-sum"], {"a": 2, "b": 3}).content[0].text == "The sum of 2 and 3 is 5."
    assert run(tools["echo"], {"message": "hello from phi"}).content[0].text == "Echo: hello from phi"


def test_error_result(tools):
    """MCP-7: the server's isError result is a ToolError with its text."""
    with pytest.raises(ToolError, match="Invalid resourceId: 0"):
        run(tools["get-resource-reference"], {"resourceType": "Text", "resourceId": 0})


def test_image(tools):
    """MCP-6: get-tiny-image gives text, a PNG image, text."""
    result = run(tools["get-tiny-image"], {})
    kinds = [type(block) for block in result.content]
    assert ImageContent in kinds
    image = next(block for block in result.content if isinstance(block, ImageContent))
    assert image.mime_type == "image/png" and base64.b64decode(image.data)[:8] == b"\x89PNG\r\n\x1a\n"


def test_resources_links_and_structured_content(tools):
    """MCP-6: embedded resources (text, blob), resource links and structuredContent."""
    text = run(tools["get-resource-reference"], {"resourceType": "Text", "resourceId": 2})
    assert any(isinstance(b, TextContent) and "Resource 2" in b.text for b in text.content[1:2])
    links = run(tools["get-resource-links"], {"count": 2})
    assert links.content[1].text.startswith("[resource link: ") and "demo://resource/" in links.content[1].text
    assert [block["type"] for block in links.details["content"]] == ["resource_link", "resource_link"]
    structured = run(tools["get-structured-content"], {"location": "New York"})
    assert set(structured.details["structuredContent"]) == {"temperature", "conditions", "humidity"}


def test_cancel_mid_call_with_progress(client, tools):
    """MCP-4: progress reports arrive, then cancelling returns at once; the session goes on."""
    token = CancellationToken()
    progress: list = []
    threading.Thread(target=lambda: (wait_until(lambda: progress, 10, "progress"), token.cancel())).start()
    with pytest.raises(ToolCancelled):  # the operation takes 2 s; the cancel comes at its first step
        run(tools["trigger-long-running-operation"], {"duration": 2, "steps": 200}, token, progress)
    assert progress[0] == "1/200"
    assert run(tools["echo"], {"message": "after"}).content[0].text == "Echo: after"


def test_roots_are_answered(tmp_path):
    """MCP-3: with roots declared the server asks roots/list (id 0) and reports what we answered."""
    with connect(roots=[tmp_path]) as client:
        wait_until(lambda: "get-roots-list" in {t.name for t in McpToolset(client).tools()}, 10, "get-roots-list")
        text = client.call_tool("get-roots-list").text
    assert tmp_path.resolve().as_uri() in text


def test_killed_mid_call_then_close_leaves_nothing():
    """MCP-10, MCP-11: a killed server fails the call at once; close leaves no process or thread."""
    before = {t.ident for t in mcp_threads()}
    client = connect()
    pid = client.pid
    assert pid is not None
    threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(McpConnectionClosed, match=r"killed by signal 9 \(SIGKILL\)"):
        client.call_tool("trigger-long-running-operation", {"duration": 30, "steps": 3})
    client.close()
    assert pid_gone(pid) and group_gone(pid)
    wait_until(lambda: not [t for t in mcp_threads() if t.ident not in before], 10, "threads to end")


def test_close_leaves_no_process():
    """MCP-11: EOF on stdin ends the node server; it is reaped."""
    client = connect()
    pid = client.pid
    client.close()
    assert pid is not None and pid_gone(pid) and group_gone(pid)
