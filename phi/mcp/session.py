"""The JSON-RPC 2.0 session under every MCP transport (SPEC §12.1, MCP-1 to MCP-4, MCP-8, MCP-10).

A :class:`Session` numbers requests, matches responses to them by id (``"id" in message``, so id 0
works), answers the server's own requests (``ping``, ``roots/list``, anything else ``-32601``),
dispatches notifications, and fails every waiting request at once when the connection is lost.

Transports only move messages. One that delivers replies asynchronously (stdio: a reader thread)
calls :meth:`Session.receive` from its own thread; one that answers on the request's own connection
(Streamable HTTP) does the exchange inside ``send_request`` and calls ``receive`` from there.
Either way a waiting request returns the moment it is answered, cancelled, timed out or the
connection is lost: cancelling a request marks it answered and queues ``notifications/cancelled``,
it never waits for the server.

Callbacks (notification subscribers, progress) run on the transport's thread with no lock held;
they must not make requests of their own (over stdio the reply would be read by the very thread
that is waiting).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Protocol

from ..concurrency.cancel import CancellationToken
from ..json_values import is_array, is_object
from ..log import get_logger
from .errors import (
    McpCancelled,
    McpConnectionClosed,
    McpError,
    McpProtocolError,
    McpRpcError,
    McpTimeout,
)

log = get_logger(__name__)
server_log = get_logger(f"{__name__}.server")

METHOD_NOT_FOUND = -32601
_LOG_LEVELS = {"debug": 10, "info": 20, "notice": 20, "warning": 30, "error": 40, "critical": 50,
               "alert": 50, "emergency": 50}

ProgressCallback = Callable[[float, "float | None", "str | None"], None]
NotificationCallback = Callable[[str, Any], None]  # (method, params as the server sent them)


class Transport(Protocol):
    """What a session needs from a transport."""

    label: str
    blocking: bool  # True: send_request returns only once the reply was read (HTTP)

    def start(self, session: Session) -> None: ...

    def send_request(self, message: dict[str, Any], stop: CancellationToken) -> None: ...

    def send(self, message: dict[str, Any], wait: bool = False) -> None: ...

    def diagnostics(self) -> str: ...

    def negotiated(self, version: str) -> None: ...

    def handshake_done(self) -> None: ...

    def close(self) -> None: ...


class _Pending:
    """One request waiting for its response."""

    __slots__ = ("id", "method", "event", "result", "error", "done", "stop", "on_progress")

    def __init__(self, request_id: int, method: str, on_progress: ProgressCallback | None) -> None:
        self.id = request_id
        self.method = method
        self.event = threading.Event()
        self.result: Any = None
        self.error: McpError | None = None
        self.done = False
        self.stop = CancellationToken()  # cancelled once answered: a blocking transport stops reading
        self.on_progress = on_progress


class Session:
    """Requests, responses and notifications of one MCP connection."""

    def __init__(self, transport: Transport, roots: list[dict[str, str]] | None = None) -> None:
        self.transport = transport
        self.roots = list(roots or [])
        self.tools_version = 0  # bumped by notifications/tools/list_changed (MCP-8)
        self._lock = threading.Lock()
        self._ids = itertools.count(0)  # the first request (initialize) is id 0, as in the official SDKs
        self._pending: dict[int, _Pending] = {}
        self._closed: McpError | None = None
        self._subscribers: dict[str, tuple[NotificationCallback, ...]] = {}

    @property
    def label(self) -> str:
        return self.transport.label

    @property
    def closed_error(self) -> McpError | None:
        """Why the session ended, or None while it is open."""
        return self._closed

    # ----------------------------------------------------------------- requests

    def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None,
                cancel: CancellationToken | None = None, on_progress: ProgressCallback | None = None) -> Any:
        """Send a request and wait for its result; raises a typed :class:`McpError` otherwise.

        ``on_progress`` receives the server's ``notifications/progress`` for this request (its id is
        the progress token).
        """
        if cancel is not None and cancel.is_cancelled():
            raise McpCancelled(f"{method} to MCP server {self.label} was cancelled before it was sent")
        with self._lock:
            if self._closed is not None:
                raise self._closed
            pending = _Pending(next(self._ids), method, on_progress)
            self._pending[pending.id] = pending
        if on_progress is not None:
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": pending.id}
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": pending.id, "method": method}
        if params is not None:
            message["params"] = params
        unregister = (cancel.on_cancel(lambda: self._abandon(pending, McpCancelled(
            f"{method} to MCP server {self.label} was cancelled"))) if cancel is not None else _nothing)
        timer = None
        if timeout is not None and self.transport.blocking:
            timer = threading.Timer(timeout, self._expire, (pending, timeout))
            timer.daemon = True
            timer.start()
        try:
            try:
                self.transport.send_request(message, pending.stop)
            except McpError as error:
                self._finish(pending, error=error)
            if self.transport.blocking:  # the reply has been read (or the read was stopped)
                self._finish(pending, error=McpProtocolError(
                    f"MCP server {self.label} ended its reply to {method} without a response"))
            elif not pending.event.wait(timeout):
                self._expire(pending, timeout)
        finally:
            unregister()
            if timer is not None:
                timer.cancel()
            self._finish(pending, error=McpConnectionClosed(f"{method} to MCP server {self.label} was interrupted"))
        if pending.error is not None:
            raise pending.error
        return pending.result

    def notify(self, method: str, params: dict[str, Any] | None = None, *, wait: bool = False) -> None:
        """Send a notification; with ``wait`` (the handshake), only return once it was delivered."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.transport.send(message, wait=wait)

    def _expire(self, pending: _Pending, timeout: float | None) -> None:
        extra = self.transport.diagnostics()
        self._abandon(pending, McpTimeout(f"MCP server {self.label} did not answer {pending.method} within "
                                          f"{timeout:g} s{extra}"))

    def _abandon(self, pending: _Pending, error: McpError) -> None:
        """Give up on a request (timeout, cancellation) and tell the server (MCP-4). Never blocks."""
        if not self._finish(pending, error=error) or pending.method == "initialize":
            return  # the protocol forbids cancelling initialize
        try:
            self.notify("notifications/cancelled", {"requestId": pending.id, "reason": str(error)})
        except McpError as failure:  # the connection is gone: nothing to cancel any more
            log.debug("could not send notifications/cancelled: %s", failure)

    def _finish(self, pending: _Pending, result: Any = None, error: McpError | None = None) -> bool:
        """Answer ``pending`` once; False when it already was."""
        with self._lock:
            if pending.done:
                return False
            pending.done = True
            pending.result, pending.error = result, error
            self._pending.pop(pending.id, None)
        pending.event.set()
        pending.stop.cancel()
        return True

    def is_answered(self, request_id: object) -> bool:
        with self._lock:
            return _key(request_id) not in self._pending

    # ----------------------------------------------------------------- incoming messages

    def receive(self, message: Any) -> None:
        """Handle one decoded JSON value from the server (MCP-2)."""
        if is_array(message):  # a JSON-RPC batch (protocol 2025-03-26)
            for item in message:
                self.receive(item)
            return
        if not is_object(message):
            self.transport_noise(f"not a JSON object: {message!r}")
            return
        method = message.get("method")
        if "method" in message and isinstance(method, str):
            if "id" in message:
                self._answer_server_request(message["id"], method)
            else:
                self._notification(method, message.get("params"))
        elif "id" in message and ("result" in message or "error" in message):
            self._response(message)
        else:
            self.transport_noise(f"not a JSON-RPC message: {str(message)[:200]}")

    def transport_noise(self, what: str) -> None:
        log.warning("MCP server %s sent something that is not JSON-RPC: %s", self.label, what[:300])

    def _response(self, message: dict[str, Any]) -> None:
        key = _key(message["id"])
        with self._lock:
            pending = self._pending.get(key) if key is not None else None
        if pending is None:
            if "error" in message and message["id"] is None:
                log.warning("MCP server %s reported an error it could not match to a request: %s",
                            self.label, str(message["error"])[:300])
            else:
                log.debug("MCP server %s answered request %r, which is no longer waited for", self.label, message["id"])
            return
        if "error" in message:
            self._finish(pending, error=rpc_error(message["error"], pending.method, self.label))
        else:
            self._finish(pending, result=message["result"])

    def _answer_server_request(self, request_id: Any, method: str) -> None:
        """Server-to-client requests must be answered, or the server waits (MCP-3)."""
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if method == "ping":
            reply["result"] = {}
        elif method == "roots/list":
            reply["result"] = {"roots": self.roots}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
        try:
            self.transport.send(reply)
        except McpError as error:
            log.debug("could not answer %s from MCP server %s: %s", method, self.label, error)

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            with self._lock:
                self.tools_version += 1
        elif method == "notifications/progress" and is_object(params):
            self._progress(params)
        elif method == "notifications/message" and is_object(params):
            level = _LOG_LEVELS.get(str(params.get("level")), 20)
            server_log.log(level, "%s: %s", self.label, str(params.get("data"))[:2000])
        for callback in self._subscribers.get(method, ()) + self._subscribers.get("*", ()):
            try:
                callback(method, params)
            except Exception:  # a subscriber's bug must not stop the reader
                log.exception("MCP notification subscriber for %s failed", method)

    def _progress(self, params: dict[str, Any]) -> None:
        key = _key(params.get("progressToken"))
        with self._lock:
            pending = self._pending.get(key) if key is not None else None
        progress = params.get("progress")
        if pending is None or pending.on_progress is None or not isinstance(progress, (int, float)):
            return
        total = params.get("total")
        message = params.get("message")
        try:
            pending.on_progress(progress, total if isinstance(total, (int, float)) else None,
                                message if isinstance(message, str) else None)
        except Exception:
            log.exception("MCP progress callback failed")

    def subscribe(self, method: str, callback: NotificationCallback) -> Callable[[], None]:
        """Call ``callback(method, params)`` for each notification ``method`` (``"*"``: every one)."""
        with self._lock:
            self._subscribers[method] = self._subscribers.get(method, ()) + (callback,)

        def unsubscribe() -> None:
            with self._lock:
                rest = tuple(cb for cb in self._subscribers.get(method, ()) if cb is not callback)
                self._subscribers[method] = rest

        return unsubscribe

    # ----------------------------------------------------------------- the end

    def connection_lost(self, error: McpError) -> None:
        """Fail every waiting request with ``error`` and refuse new ones (MCP-10)."""
        with self._lock:
            if self._closed is not None:
                return
            self._closed = error
            waiting = list(self._pending.values())
        for pending in waiting:
            self._finish(pending, error=error)


def rpc_error(error: Any, method: str, label: str) -> McpError:
    """The :class:`McpRpcError` for a JSON-RPC error object (or a protocol error if it is not one)."""
    if not is_object(error):
        return McpProtocolError(f"MCP server {label} answered {method} with a malformed error: {str(error)[:200]}")
    code = error.get("code")
    message = str(error.get("message", ""))
    return McpRpcError(f"MCP server {label} answered {method} with error {code}: {message}",
                       code if isinstance(code, int) else None, message, error.get("data"))


def _key(request_id: object) -> int | None:
    """The id of one of our requests, which are numbered: a string id (or a bool, which is no
    number in JSON) can only be about a request this session never sent."""
    if isinstance(request_id, bool) or not isinstance(request_id, int):
        return None
    return request_id


def _nothing() -> None:
    return None
