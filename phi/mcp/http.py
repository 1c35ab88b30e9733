"""The Streamable HTTP transport (SPEC §12.1, MCP-12 to MCP-15).

Every client message is one ``POST`` to the endpoint with ``Content-Type: application/json`` and
``Accept: application/json, text/event-stream``. The server decides how to answer a request: one
JSON body, or an SSE stream (decoded by the providers' :class:`~phi.providers.sse.SSEDecoder`) that
may carry its own requests and notifications before the response; reading stops at the response.
Notifications and replies get ``202 Accepted`` with an empty body, which is never parsed.

Sessions: the ``Mcp-Session-Id`` the server returns with the ``initialize`` response is sent back on
every later request, with ``MCP-Protocol-Version`` set to exactly the negotiated version; a
stateless server sends no id and gets none. A ``404`` on a request that carried a session id means
the server forgot the session: the transport initializes again (once, shared by all the requests
that got the 404) and retries the request once. ``close`` sends ``DELETE`` with the session id.

A request runs on the caller's thread and can be stopped in every phase (the send happens on a
helper thread of :class:`~phi.providers.transport.HttpClient`; a read is interrupted by shutting the
socket down). Header values are treated as credentials: errors and logs never show them, nor the
URL's query string or user-info. Redirects are not followed (they would carry the headers away).
The optional GET stream (:mod:`phi.mcp.http_listen`) brings notifications the server sends outside
any request, such as ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3.exceptions

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..json_values import JsonObject, is_array, is_object
from ..log import get_logger
from ..providers.secret_registry import SECRETS
from ..providers.secrets import check_headers, scrub
from ..providers.sse import iter_sse
from ..providers.transport import HttpClient, abort_response, iter_body, socket_of
from .errors import McpConnectionError, McpError, McpHttpError, McpProtocolError
from .http_listen import CONNECT_TIMEOUT, Listener, decode_event
from .session import Session
from .stdio import MAX_MESSAGE_BYTES

log = get_logger(__name__)

ACCEPT = "application/json, text/event-stream"
MAX_ERROR_BODY = 64 << 10
STREAM_END_WAIT = 0.1  # seconds
_TRANSPORT_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)
_reinit_ids = itertools.count(1)


class HttpTransport:
    """One Streamable HTTP endpoint."""

    blocking = True

    def __init__(self, url: str, headers: Mapping[str, str] | None, *, name: str | None = None,
                 timeout: float = 30.0, listen: bool = True) -> None:
        # callers without a type checker pass anything
        parts = urlsplit(url) if isinstance(url, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"an MCP HTTP endpoint must be an http:// or https:// URL, got {str(url)[:80]!r}")
        self.url = url
        self.label = name or urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
        self._headers = check_headers({str(k): str(v) for k, v in (headers or {}).items()}, "MCP HTTP header")
        self._secrets = list(self._headers.values())  # any header may carry a credential
        self._secrets += [s for s in (parts.password, parts.username, parts.query) if s]
        SECRETS.register_headers(self._headers)  # the credential-like ones, at every exit (OTEL-11)
        SECRETS.register_url(url)
        self._timeout = timeout
        self._listen = listen
        self._client = HttpClient()
        self._closing = CancellationToken()
        self._session: Session | None = None
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._initialize: dict[str, Any] | None = None  # the initialize request, replayed after a 404
        self._reinit_lock = threading.Lock()
        self._listener: Listener | None = None
        # After a response on an SSE stream, wait briefly for the server to end the stream, so the
        # connection can be used again; given up for good the first time a server keeps it open.
        self._await_stream_end = True

    # ----------------------------------------------------------------- the session's side

    def start(self, session: Session) -> None:
        self._session = session

    @property
    def session(self) -> Session:
        """The session this transport carries (set by ``start``, before any message moves)."""
        assert self._session is not None, "HttpTransport used before start()"
        return self._session

    def negotiated(self, version: str) -> None:
        """Send ``version`` as ``MCP-Protocol-Version`` from now on (MCP-13)."""
        self.protocol_version = version

    def diagnostics(self) -> str:
        return ""

    def headers(self, session_id: str | None, *, accept: str = ACCEPT, content: bool = True,
                version: bool = True) -> dict[str, str]:
        """The headers of one request: the user's, then the protocol's (which win)."""
        headers = dict(self._headers)
        headers["Accept"] = accept
        if content:
            headers["Content-Type"] = "application/json"
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if version and self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def send_request(self, message: dict[str, Any], stop: CancellationToken) -> None:
        """POST a request and read its reply (JSON or SSE), handing every message to the session."""
        initialize = message.get("method") == "initialize"
        if initialize:
            self._initialize = message
        for attempt in (1, 2):
            sent_with = None if initialize else self.session_id
            reply, issued = self._exchange(message, stop, expect_reply=True, session_id=sent_with, read_timeout=None)
            if reply is _GONE and sent_with is not None and attempt == 1:
                self._reinitialize(sent_with, stop)
                continue
            if reply is _GONE:
                raise McpHttpError(f"MCP server {self.label} answered {message['method']} with HTTP 404 "
                                   "(the session is unknown, or the URL is wrong)", 404)
            if initialize:
                self.session_id = issued
            if isinstance(reply, dict):
                self.session.receive(reply)
            return

    def send(self, message: dict[str, Any], wait: bool = False) -> None:
        """POST a notification or a reply. Without ``wait`` it goes on a daemon thread: never blocks."""
        if self._closing.is_cancelled():
            return
        def deliver() -> None:
            self._exchange(message, self._closing, expect_reply=False, session_id=self.session_id,
                           read_timeout=self._timeout)

        if wait:
            deliver()
            return

        def post() -> None:
            try:
                deliver()
            except McpError as error:
                log.debug("sending %s to MCP server %s failed: %s", message.get("method", "a reply"), self.label, error)

        threading.Thread(target=post, name="phi-mcp-http-send", daemon=True).start()

    # ----------------------------------------------------------------- one POST

    def _exchange(self, message: dict[str, Any], stop: CancellationToken, *, expect_reply: bool,
                  session_id: str | None, read_timeout: float | None) -> tuple[Any, str | None]:
        """POST ``message`` in session ``session_id``. Returns its response message (:data:`_GONE`
        on a 404 about the session; None when nothing was expected, or it was stopped) and the
        session id the server issued with it, if any.

        ``read_timeout`` bounds each wait for bytes. A request passes None: its own deadline, kept
        by the session, stops it through ``stop`` (a tool may run for minutes without the server
        sending a byte); notifications and replies pass the client's timeout.
        """
        try:
            body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise McpProtocolError(f"cannot send {message.get('method')}: its parameters are not JSON ({exc})") from None
        stopper, release = _either(stop, self._closing)
        try:
            try:
                headers = self.headers(session_id, version=message.get("method") != "initialize")
                timeout = (CONNECT_TIMEOUT, read_timeout)
                response = self._client.post(self.url, headers, body, timeout, stopper)  # None: no read timeout
            except _TRANSPORT_ERRORS as exc:
                raise McpConnectionError(self._scrub(f"cannot reach MCP server {self.label}: {exc}")) from None
            if response is None:
                return None, None
            issued = response.headers.get("Mcp-Session-Id") or None
            unregister = stopper.on_cancel(lambda: abort_response(response))
            try:
                return self._reply(message, response, expect_reply, stopper), issued
            except McpError:
                raise
            except Exception as exc:  # a response closed by another thread fails in any way inside http.client
                if stopper.is_cancelled():
                    return None, None
                if not isinstance(exc, _TRANSPORT_ERRORS):
                    raise
                raise McpConnectionError(self._scrub(f"reading the reply of MCP server {self.label} to "
                                                     f"{message.get('method', 'a reply')} failed: {exc}")) from None
            finally:
                unregister()
                response.close()
        finally:
            release()

    def _reply(self, message: dict[str, Any], response: requests.Response, expect_reply: bool,
               stop: CancellationToken) -> Any:
        status = response.status_code
        method = message.get("method", "a reply")
        if status == 404 and "id" in message and message.get("method") != "initialize":
            return _GONE
        if status >= 300:
            raise self._status_error(method, response)
        if not expect_reply:
            _release_when_ended(iter_body(response), response)  # 202 Accepted, empty body: never parsed
            return None
        if status in (202, 204):
            raise McpProtocolError(f"MCP server {self.label} answered the request {method} with HTTP {status} "
                                   "and no response")
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind == "text/event-stream":
            reply = self._read_events(response, message["id"], stop)
        elif kind == "application/json":
            reply = self._read_json(response, message["id"])
        else:
            raise McpProtocolError(f"MCP server {self.label} answered {method} with Content-Type {kind or 'none'!r}, "
                                   "not JSON or an event stream")
        if reply is None and not stop.is_cancelled():
            raise McpProtocolError(f"MCP server {self.label} ended its reply to {method} without a response")
        return reply

    def _read_json(self, response: requests.Response, request_id: Any) -> Any:
        data = bytearray()
        for chunk in iter_body(response):
            data += chunk
            if len(data) > MAX_MESSAGE_BYTES:
                raise McpProtocolError(f"MCP server {self.label} sent a reply over {MAX_MESSAGE_BYTES} bytes")
        response.raw.release_conn()  # read to its end: the connection can serve the next request
        try:
            value = json.loads(data)
        except ValueError:
            raise McpProtocolError(f"MCP server {self.label} sent a JSON reply that does not parse: "
                                   f"{bytes(data[:200])!r}") from None
        return self._pick(value if is_array(value) else [value], request_id)

    def _read_events(self, response: requests.Response, request_id: Any, stop: CancellationToken) -> Any:
        body = iter_body(response)
        for event in iter_sse(body):
            value = decode_event(event, self.session)
            if value is None:
                continue
            reply = self._pick([value], request_id)
            if reply is not None and self._await_stream_end and not _release_when_ended(body, response):
                self._await_stream_end = False  # this server keeps its streams open: stop waiting
            if reply is not None or stop.is_cancelled():
                return reply
        return None

    def _pick(self, values: list[Any], request_id: Any) -> Any:
        """The response to ``request_id`` among ``values``; the others go to the session."""
        found: JsonObject | None = None
        for value in values:
            if is_object(value) and value.get("id") == request_id and "method" not in value and found is None:
                found = value
            else:
                self.session.receive(value)
        return found

    def _status_error(self, method: str, response: requests.Response) -> McpHttpError:
        status = response.status_code
        if 300 <= status < 400:
            where = urlsplit(response.headers.get("Location", ""))
            return McpHttpError(self._scrub(f"MCP server {self.label} redirected {method} (HTTP {status}) to "
                                            f"{where.path or '?'}; use the final URL (redirects are not followed)"),
                                status)
        body = _read_some(response, MAX_ERROR_BODY)
        text = body
        try:
            parsed = json.loads(body)
            if is_object(parsed) and is_object(parsed.get("error")):
                text = str(parsed["error"].get("message", body))
        except ValueError:
            pass
        hint = " (check the credentials in the headers)" if status in (401, 403) else ""
        return McpHttpError(self._scrub(f"MCP server {self.label} answered {method} with HTTP {status}{hint}: "
                                        f"{text[:500]}"), status, self._scrub(body[:2000]))

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    # ----------------------------------------------------------------- sessions

    def _reinitialize(self, stale: str, stop: CancellationToken) -> None:
        """The server forgot session ``stale``: initialize again (once for all callers) (MCP-14)."""
        with self._reinit_lock:
            if self.session_id != stale:
                return  # another request already did it
            if self._initialize is None:
                raise McpProtocolError(f"MCP server {self.label} lost the session before initialize was sent")
            log.info("MCP server %s forgot its session; initializing again", self.label)
            request = dict(self._initialize, id=f"phi-reinit-{next(_reinit_ids)}")
            reply, issued = self._exchange(request, stop, expect_reply=True, session_id=None, read_timeout=None)
            result = reply.get("result") if is_object(reply) else None
            if not is_object(result) or result.get("protocolVersion") != self.protocol_version:
                raise McpProtocolError(f"MCP server {self.label} did not accept initialize again (protocol "
                                       f"{self.protocol_version}): {str(reply)[:200]}")
            self._exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, self._closing,
                           expect_reply=False, session_id=issued, read_timeout=self._timeout)
            self.session_id = issued  # only now: other requests must not use it before initialized
            self._open_listener()

    def _open_listener(self) -> None:
        if not self._listen or self.session_id is None or self._closing.is_cancelled():
            return
        if self._listener is not None:
            self._listener.stop()
        self._listener = Listener(self, self._client, self.session)
        self._listener.start()

    def handshake_done(self) -> None:
        """``notifications/initialized`` was delivered: open the GET stream."""
        self._open_listener()

    # ----------------------------------------------------------------- close

    def close(self) -> None:
        """Stop every exchange, ``DELETE`` the session, end the GET stream, drop the connections."""
        if self._closing.is_cancelled():
            return
        self._closing.cancel()
        if self._listener is not None:
            self._listener.stop()
        if self.session_id is not None:
            try:
                response = self._client.session.delete(self.url, headers=self.headers(self.session_id, content=False),
                                                       timeout=(CONNECT_TIMEOUT, 5.0), allow_redirects=False)
                response.close()
            except _TRANSPORT_ERRORS as exc:
                log.debug("DELETE of the MCP session at %s failed: %s", self.label, self._scrub(str(exc)))
        if self._listener is not None:
            self._listener.join(2.0)
        self._client.close()


_GONE = object()  # a 404 about the session


def _either(a: CancellationToken, b: CancellationToken) -> tuple[CancellationToken, Callable[[], None]]:
    """A token cancelled when ``a`` or ``b`` is, and the function that detaches it from both."""
    both = CancellationToken()
    undo_a = a.on_cancel(both.cancel)
    undo_b = b.on_cancel(both.cancel)

    def release() -> None:
        undo_a()
        undo_b()

    return both, release


def _release_when_ended(body: Iterator[bytes], response: requests.Response) -> bool:
    """Read the rest of ``body`` if it ends within :data:`STREAM_END_WAIT`, and give the connection
    back to the pool; False (the connection is closed with the response) when it does not.

    A connection goes back to the pool only through this and :meth:`HttpTransport._read_json`:
    ``response.close()`` on a body read through ``raw`` closes the connection."""
    sock = socket_of(response)
    if sock is not None:
        sock.settimeout(STREAM_END_WAIT)  # urllib3 sets its own timeout again on the next request
    deadline = time.monotonic() + STREAM_END_WAIT
    try:
        for _ in body:
            if time.monotonic() > deadline:
                return False
    except Exception:  # a stream that breaks now only costs its connection
        return False
    response.raw.release_conn()  # the body was read to its end: the connection is clean
    return True


def _read_some(response: requests.Response, limit: int) -> str:
    data = bytearray()
    try:
        for chunk in iter_body(response):
            data += chunk
            if len(data) >= limit:
                break
    except _TRANSPORT_ERRORS:
        pass
    return bytes(data[:limit]).decode("utf-8", "replace")
