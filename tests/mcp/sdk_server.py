"""An MCP server built on the official Python SDK (``mcp`` 2.x), for phi's interop tests and docs.

Usage:
    python sdk_server.py                                   # stdio
    python sdk_server.py http PORT [--json] [--stateless] [--idle SECONDS]   # Streamable HTTP on 127.0.0.1

Tools: ``add``, ``echo``, ``image`` (a 1x1 PNG), ``slow`` (sleeps; writes "cancelled" to
``marker`` when the SDK cancels it), ``fail`` (an error result), ``rpc_fail`` (a JSON-RPC error), ``grow`` (registers a tool at runtime and
sends notifications/tools/list_changed), ``pid`` (the server's process id).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.shared.exceptions import MCPError
from mcp_types import ToolListChangedNotification

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

server = MCPServer("phi-test-sdk-server", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def image() -> Image:
    """A 1x1 PNG image."""
    return Image(data=PNG, format="png")


@server.tool()
async def slow(seconds: float, marker: str = "") -> str:
    """Sleep for a while; if cancelled, write 'cancelled' to the marker file."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if marker:
            with open(marker, "w", encoding="utf-8") as f:
                f.write("cancelled")
        raise
    return f"slept {seconds}"


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message (an error result)."""
    raise ToolError(message)


@server.tool()
def rpc_fail(message: str) -> str:
    """Always fails with a JSON-RPC error (code -32050)."""
    raise MCPError(-32050, message, {"why": "asked to"})


@server.tool()
async def grow(name: str, ctx: Context, related: bool = False) -> str:
    """Register a new tool called `name` and announce notifications/tools/list_changed (with
    `related`, on this request's own stream, which is how a stateless HTTP server can send it)."""
    def grown(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(grown, name=name, description=f"A tool added at runtime ({name}).")
    if related:
        await ctx.session.send_notification(ToolListChangedNotification(), related_request_id=ctx.request_id)
    else:
        await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
def meta(ctx: Context) -> str:
    """The `_meta` of this request, as JSON (what a client propagated: a progress token, trace context)."""
    found = ctx.request_context.meta
    if found is None:
        return "{}"
    return json.dumps(found if isinstance(found, dict) else found.model_dump(exclude_none=True))


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


def main(argv: list[str]) -> None:
    if not argv or argv[0] == "stdio":
        server.run()
        return
    port = int(argv[1])
    idle = float(argv[argv.index("--idle") + 1]) if "--idle" in argv else None
    options = {"session_idle_timeout": idle} if idle is not None else {}
    server.run("streamable-http", host="127.0.0.1", port=port, json_response="--json" in argv,
               stateless_http="--stateless" in argv, **options)


if __name__ == "__main__":
    main(sys.argv[1:])
