"""McpClient: one session with one MCP server, over stdio or Streamable HTTP (SPEC §12.1, MCP-1 to MCP-11).

``connect_stdio``/``connect_http`` start the transport and run the handshake: ``initialize``
offering :data:`LATEST_PROTOCOL_VERSION`, a check that the version the server chose is one phi
speaks (:data:`SUPPORTED_PROTOCOL_VERSIONS`; anything else disconnects with
:class:`McpProtocolError`, MCP-5), then ``notifications/initialized``. After that the client is safe
to use from many threads at once: ``list_tools`` (following ``nextCursor``), ``call_tool`` (with
its own timeout, a cancellation token and progress reports), ``request`` for any other method.

The environment of a stdio server: the host's environment minus variables that look like
credentials (the rule of :mod:`phi.tools.env_filter`, ``env_policy="inherit_all"``), with ``env``
on top — so a server gets the ``PATH``/``HOME`` it needs to start, and only the secrets it is
explicitly given.

A client dropped without :meth:`McpClient.close` (nothing refers to it any more: no toolset, no
tool) is closed all the same when it is garbage-collected, or at the latest when the interpreter
exits, so its server does not outlive it (MCP-11).
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypedDict

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..json_values import as_object, is_array, is_object
from ..log import get_logger
from .errors import McpConnectionClosed, McpProtocolError
from .results import McpToolCallResult, McpToolInfo
from .session import ProgressCallback, Session, Transport
from .stdio import StdioTransport

log = get_logger(__name__)

LATEST_PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
DEFAULT_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 300.0
MAX_LIST_PAGES = 1000


class StdioOptions(TypedDict, total=False):
    """The keyword options of :meth:`McpClient.connect_stdio`, as :meth:`McpToolset.stdio` passes them on."""

    cwd: str | os.PathLike[str] | None
    timeout: float
    call_timeout: float | None
    name: str | None
    roots: Sequence[str | os.PathLike[str]] | None
    env_policy: str
    close_grace: float


class HttpOptions(TypedDict, total=False):
    """The keyword options of :meth:`McpClient.connect_http`, as :meth:`McpToolset.http` passes them on."""

    timeout: float
    call_timeout: float | None
    name: str | None
    roots: Sequence[str | os.PathLike[str]] | None
    listen: bool


class McpClient:
    """A connected MCP session. Build one with :meth:`connect_stdio` or :meth:`connect_http`."""

    def __init__(self, transport: Transport, *, timeout: float = DEFAULT_TIMEOUT,
                 call_timeout: float | None = DEFAULT_CALL_TIMEOUT, roots: Sequence[str | os.PathLike[str]] | None = None) -> None:
        self.timeout = timeout
        self.call_timeout = call_timeout
        self._roots_given = roots is not None
        self._transport = transport
        self._session = Session(transport, [_root(r) for r in roots or ()])
        self._close_lock = threading.Lock()
        self._closed = False
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        # what a client dropped without close() leaves is closed without it (MCP-11): the finalizer
        # holds the transport and the session, never the client, which could then never be collected
        self._finalizer = weakref.finalize(self, _release_unclosed, transport, self._session)

    # ----------------------------------------------------------------- connecting

    @classmethod
    def connect_stdio(cls, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None, *,
                      cwd: str | os.PathLike[str] | None = None, timeout: float = DEFAULT_TIMEOUT,
                      call_timeout: float | None = DEFAULT_CALL_TIMEOUT, name: str | None = None,
                      roots: Sequence[str | os.PathLike[str]] | None = None, env_policy: str = "inherit_all",
                      close_grace: float = 2.0) -> McpClient:
        """Spawn ``command args`` and run the MCP handshake over its stdin/stdout.

        ``env`` is added to the host's environment with its credential-like variables removed
        (``env_policy`` as in :func:`phi.tools.env_filter.filter_environment`: ``inherit_all``,
        ``core_only`` or ``none``). ``timeout`` bounds the handshake and every request but tool
        calls, which ``call_timeout`` bounds (None: no bound). ``roots`` (paths or ``file:`` URIs)
        are announced as the client's roots. ``close_grace`` is how long :meth:`close` waits after
        closing stdin before it terminates the server. ``name`` labels the server in errors and logs.
        """
        # callers without a type checker pass anything
        if not isinstance(command, str) or not command:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError("connect_stdio needs a command (e.g. 'npx' or a path to the server)")
        if isinstance(args, str):
            raise ConfigError("connect_stdio args must be a list of strings, not one string")
        from ..tools.env_filter import filter_environment

        given = {str(k): str(v) for k, v in (env or {}).items()}
        environment = filter_environment(os.environ, env_policy)
        environment.update(given)
        args = [str(a) for a in args]
        transport = StdioTransport(command, args, environment, os.fspath(cwd) if cwd is not None else None,
                                   name or _command_label(command, args), close_grace, _secrets_of(args, given))
        return cls._connect(transport, timeout=timeout, call_timeout=call_timeout, roots=roots)

    @classmethod
    def connect_http(cls, url: str, headers: Mapping[str, str] | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                     call_timeout: float | None = DEFAULT_CALL_TIMEOUT, name: str | None = None,
                     roots: Sequence[str | os.PathLike[str]] | None = None, listen: bool = True) -> McpClient:
        """Connect to a Streamable HTTP endpoint (e.g. ``http://127.0.0.1:8000/mcp``) and run the handshake.

        ``headers`` go with every request (e.g. ``Authorization``); their values never appear in
        errors or logs. ``listen`` opens the optional GET stream on which a server with sessions
        sends notifications such as ``tools/list_changed``. Other arguments as :meth:`connect_stdio`.
        """
        from .http import HttpTransport

        transport = HttpTransport(url, headers, name=name, timeout=timeout, listen=listen)
        return cls._connect(transport, timeout=timeout, call_timeout=call_timeout, roots=roots)

    @classmethod
    def _connect(cls, transport: Transport, *, timeout: float, call_timeout: float | None,
                 roots: Sequence[str | os.PathLike[str]] | None) -> McpClient:
        client = cls(transport, timeout=timeout, call_timeout=call_timeout, roots=roots)
        try:
            transport.start(client._session)
            client._handshake()
        except BaseException:
            client.close()
            raise
        return client

    def _handshake(self) -> None:
        capabilities: dict[str, Any] = {"roots": {"listChanged": False}} if self._roots_given else {}
        from .. import __version__

        result = self._session.request("initialize", {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": capabilities,
            "clientInfo": {"name": "phi", "version": __version__}}, timeout=self.timeout)
        if not is_object(result):
            raise McpProtocolError(f"MCP server {self.label} answered initialize with {str(result)[:200]}")
        version = result.get("protocolVersion")
        if version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise McpProtocolError(f"MCP server {self.label} chose protocol version {version!r}, which phi does not "
                                   f"support (phi speaks {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}); disconnected")
        self.protocol_version = version
        self.server_info = _dict(result.get("serverInfo"))
        self.server_capabilities = _dict(result.get("capabilities"))
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._transport.negotiated(version)
        self._session.notify("notifications/initialized", wait=True)
        self._transport.handshake_done()

    # ----------------------------------------------------------------- properties

    @property
    def label(self) -> str:
        """How errors and logs name the server."""
        return self._transport.label

    @property
    def pid(self) -> int | None:
        """The stdio server's process id (None over HTTP)."""
        return getattr(self._transport, "pid", None)

    @property
    def tools_version(self) -> int:
        """Counts ``notifications/tools/list_changed``: a new value means the tool list changed."""
        return self._session.tools_version

    @property
    def closed(self) -> bool:
        return self._closed or self._session.closed_error is not None

    # ----------------------------------------------------------------- requests

    def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None,
                cancel: CancellationToken | None = None) -> Any:
        """Any MCP request (``resources/list``, ``prompts/get``, ...); returns its ``result``."""
        return self._session.request(method, params, timeout=self.timeout if timeout is None else timeout,
                                     cancel=cancel)

    def ping(self, *, timeout: float | None = None) -> None:
        self.request("ping", timeout=timeout)

    def list_tools(self, *, timeout: float | None = None) -> list[McpToolInfo]:
        """Every tool the server offers, following ``nextCursor`` pagination."""
        tools: list[McpToolInfo] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_LIST_PAGES):
            result = self.request("tools/list", {"cursor": cursor} if cursor else None, timeout=timeout)
            page = as_object(result) or {}
            items = page.get("tools")
            if not is_array(items):
                raise McpProtocolError(f"MCP server {self.label} answered tools/list without a tools list: "
                                       f"{str(result)[:200]}")
            for item in items:
                tools.append(McpToolInfo.from_json(item))
            next_cursor = page.get("nextCursor")  # the server's JSON: checked before it becomes ``cursor``
            if not next_cursor:
                return tools
            if not isinstance(next_cursor, str) or next_cursor in seen:
                raise McpProtocolError(f"MCP server {self.label} sent a bad or repeated tools/list cursor "
                                       f"{next_cursor!r}")
            cursor = next_cursor
            seen.add(cursor)
        raise McpProtocolError(f"MCP server {self.label} paginated tools/list over {MAX_LIST_PAGES} pages")

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None,
                  cancel: CancellationToken | None = None, on_progress: ProgressCallback | None = None,
                  meta: Mapping[str, Any] | None = None) -> McpToolCallResult:
        """Call a tool. ``timeout`` defaults to ``call_timeout``; cancelling ``cancel`` returns at once
        (raising :class:`McpCancelled`) and sends ``notifications/cancelled``. ``on_progress(progress,
        total, message)`` receives the server's progress reports, on the transport's thread.
        ``meta``: fields for the request's ``params._meta`` (e.g. ``traceparent``, SPEC OTEL-10).
        A tool that fails *inside* comes back as a result with ``is_error`` set, not as an exception.
        """
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if meta:
            params["_meta"] = dict(meta)
        result = self._session.request(
            "tools/call", params,
            timeout=self.call_timeout if timeout is None else timeout, cancel=cancel, on_progress=on_progress)
        return McpToolCallResult.from_json(result, self.label)

    def on_notification(self, method: str, callback: Callable[[str, Any], None]) -> Callable[[], None]:
        """Call ``callback(method, params)`` for each notification ``method`` (``"*"``: all of them),
        on the transport's thread; it must return quickly and make no requests. Returns a function
        that unsubscribes."""
        return self._session.subscribe(method, callback)

    # ----------------------------------------------------------------- closing

    def close(self) -> None:
        """End the session and release the server (idempotent; MCP-11)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._finalizer.detach()
        self._session.connection_lost(McpConnectionClosed(f"the connection to MCP server {self.label} was closed"))
        self._transport.close()

    def __enter__(self) -> McpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"protocol {self.protocol_version}"
        return f"McpClient({self.label!r}, {state})"


def _release_unclosed(transport: Transport, session: Session) -> None:
    """Close the session and the transport of a client that was garbage-collected without close(),
    or was still open when the interpreter exits (MCP-11). Mid-run the closing goes to a thread of its
    own: a garbage collection may run on any thread at any moment — one holding the transport's
    lock, say — and closing waits for the server to exit. At exit it is done here, before the
    interpreter stops its threads."""
    label = transport.label

    def release() -> None:
        try:
            session.connection_lost(McpConnectionClosed(f"the connection to MCP server {label} was closed"))
            transport.close()
        except Exception:  # nobody to tell but the log
            log.warning("closing MCP server %s, whose client was dropped, failed", label, exc_info=True)

    if not threading.main_thread().is_alive():  # interpreter exit: a script that never closed it
        log.debug("MCP server %s is closed as the interpreter exits", label)
        release()
        return
    log.warning("the client of MCP server %s was dropped without close(); the server is stopped now "
                "(close the client, toolset or agent, or use it in a with block)", label)
    threading.Thread(target=release, name=f"phi-unclosed-mcp-{label}", daemon=True).start()


def _dict(value: Any) -> dict[str, Any]:
    return value if is_object(value) else {}


def _root(root: str | os.PathLike[str]) -> dict[str, str]:
    text = os.fspath(root)
    if text.startswith("file:"):
        return {"uri": text, "name": text.rstrip("/").rsplit("/", 1)[-1]}
    path = Path(text).resolve()
    return {"uri": path.as_uri(), "name": path.name or str(path)}


def _secrets_of(args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Values never to repeat in errors: credential-like ``env`` entries, and the values of
    credential-like options (``--api-key X``, ``--token=X``) (MCP-18)."""
    from ..providers.secret_names import is_secret_variable
    from ..providers.secrets import is_sensitive_header

    secrets = [value for name, value in env.items() if is_secret_variable(name, value)]
    for i, arg in enumerate(args):
        if not arg.startswith("-"):
            continue
        name, equals, value = arg.partition("=")
        if is_sensitive_header(name):
            if equals:
                secrets.append(value)
            elif i + 1 < len(args):
                secrets.append(args[i + 1])
    return secrets


def _command_label(command: str, args: Sequence[str]) -> str:
    """``npx server-everything``, ``python server.py``: the command's and first argument's base names
    (never an option or an environment value, which may hold a secret)."""
    label = os.path.basename(command) or command
    for arg in args:
        if not str(arg).startswith("-"):
            return f"{label} {os.path.basename(str(arg).rstrip('/')) or arg}"
    return label
