"""SPEC §12.1 — phi's Model Context Protocol client: tools from MCP servers as phi tools.

Imported only when used (``import phi`` never loads it)::

    import phi
    from phi.mcp import McpClient, McpToolset

    # An Agent tool source: the server's tools at each run; agent.close() stops the server.
    everything = McpToolset.stdio("npx", ["-y", "@modelcontextprotocol/server-everything"], prefix="ev")
    with phi.Agent(model="claude-sonnet-4-5", tool_sources=[everything]) as agent:
        agent.run("Echo 'hi'.")

    # A session of one's own.
    with McpClient.connect_http("http://127.0.0.1:8000/mcp", {"Authorization": "Bearer ..."}) as client:
        print(client.call_tool("echo", {"message": "hi"}).text)

* :class:`McpClient` — one session over stdio (:mod:`phi.mcp.stdio`) or Streamable HTTP
  (:mod:`phi.mcp.http`, which loads ``requests``), on the JSON-RPC core of :mod:`phi.mcp.session`.
* :class:`McpToolset` — an Agent tool source (``McpToolset.stdio``/``.http``, or around a client);
  :class:`McpToolAdapter` — one MCP tool as an AgentTool (:mod:`phi.mcp.tools`).
* :class:`McpToolInfo`, :class:`McpToolCallResult` — what the server answered (:mod:`phi.mcp.results`).
* :class:`McpError` and its subclasses — every failure, typed (:mod:`phi.mcp.errors`).

The guide is ``docs/mcp.md``.
"""

from .client import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, McpClient
from .errors import (
    McpCancelled,
    McpConnectionClosed,
    McpConnectionError,
    McpError,
    McpHttpError,
    McpProtocolError,
    McpRpcError,
    McpTimeout,
)
from .results import McpToolCallResult, McpToolInfo
from .tools import McpToolAdapter, McpToolset, tool_name, tool_parameters

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "McpCancelled",
    "McpClient",
    "McpConnectionClosed",
    "McpConnectionError",
    "McpError",
    "McpHttpError",
    "McpProtocolError",
    "McpRpcError",
    "McpTimeout",
    "McpToolAdapter",
    "McpToolCallResult",
    "McpToolInfo",
    "McpToolset",
    "tool_name",
    "tool_parameters",
]
