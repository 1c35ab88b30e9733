"""Typed errors of the MCP client (SPEC §12.1, MCP-9).

Every way an MCP session can fail is one of these, all :class:`McpError` (a
:class:`~phi.errors.PhiError`). The tool adapter turns them into tool errors the model sees
(:class:`McpCancelled` into :class:`~phi.errors.ToolCancelled`), so no MCP failure ends a run.
"""

from __future__ import annotations

from typing import Any

from ..errors import PhiError


class McpError(PhiError):
    """Base class of every error the MCP client raises."""


class McpConnectionError(McpError):
    """The server could not be reached: the command did not start, or the HTTP connection failed."""


class McpConnectionClosed(McpConnectionError):
    """The session ended: the server exited or closed the connection, or the client was closed.

    ``exit_code`` is the stdio server's exit status when known (negative: killed by that signal);
    ``stderr_tail`` the last lines it wrote to stderr.
    """

    def __init__(self, message: str, exit_code: int | None = None, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class McpTimeout(McpError):
    """A request got no response within its timeout (the server was sent ``notifications/cancelled``)."""


class McpCancelled(McpError):
    """A request was cancelled through its cancellation token (the server was told so)."""


class McpProtocolError(McpError):
    """The server broke the protocol: an unsupported protocol version, a malformed message or result."""


class McpHttpError(McpError):
    """A Streamable HTTP request got an error status. ``body`` is an excerpt of the reply."""

    def __init__(self, message: str, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class McpRpcError(McpError):
    """The server answered a request with a JSON-RPC error object: ``code``, ``message``, ``data``.

    ``str(error)`` says which server and request it was.
    """

    def __init__(self, text: str, code: int | None, message: str, data: Any = None) -> None:
        super().__init__(text)
        self.code = code
        self.message = message
        self.data = data
