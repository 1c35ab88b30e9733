"""HTTP transport for the providers: sessions, sending, reading, stopping (SPEC PROV-1, PROV-2).

:mod:`phi.providers.http` decides what a call means; this module moves the bytes. Its rules:

* **One session per provider instance, without cookies.** Each provider object owns an
  :class:`HttpClient` (its own ``requests.Session`` and connection pool). The session's cookie
  policy refuses every cookie, so nothing a server sets is ever sent with another request (or
  another tenant's key). Redirects are not followed (a 3xx is reported as an error): following one
  would resend the key headers to wherever the server points.
* **Connections are reused.** A body is read to its end — after the parser has what it needs, the
  rest (usually just the chunked terminator) is drained, bounded by :data:`DRAIN_BYTES` and
  :data:`DRAIN_SECONDS` — so the connection goes back to the pool; three calls use one connection.
* **Bodies are decoded** (``Content-Encoding: gzip``/``deflate``) whether or not they are chunked.
* **A call can always be stopped**, by cancellation or by its total time bound (:class:`CallStop`):
  the caller returns at once in every phase. Once a connection is established (or taken from the
  pool) its socket is shut down too, so while waiting for the response headers the helper thread
  and its connection end at once instead of after the read timeout; a TCP/TLS connect still in
  progress ends at the connect timeout. While reading the body the response's socket is shut down.
"""

from __future__ import annotations

import http.cookiejar
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import requests
import requests.adapters
import urllib3
import urllib3.connection

from ..concurrency.cancel import CancellationToken
from ..log import get_logger
from .watchdog import Watch, watch

if TYPE_CHECKING:
    import urllib.request

log = get_logger(__name__)

READ_SIZE = 65536
DRAIN_BYTES = 1 << 20  # after the terminal event, read at most this much more to reuse the connection
DRAIN_SECONDS = 0.5  # ... and wait at most this long for it (servers end the body right after)


class CallStop:
    """Stops one model call (SPEC PROV-4): when the run is cancelled, when its total time bound
    passes, or when the stream stalls — no complete event for ``idle`` seconds once the response
    began (:meth:`start_idle`; each complete event calls :meth:`touch`). A server dripping a byte
    at a time, or sending only keep-alive comments, keeps the socket's read timeout from firing
    but not this one.

    ``token`` is what the transport watches; ``expired`` and ``idle_expired`` tell the causes
    apart. The process's one watchdog thread (:mod:`phi.providers.watchdog`) serves both bounds of
    every call; :meth:`touch` only stores a time.
    """

    __slots__ = ("token", "expired", "idle_expired", "total", "idle", "_unregister", "_deadline", "_last", "_watch")

    def __init__(self, cancel: CancellationToken, total_timeout: float | None,
                 idle_timeout: float | None = None) -> None:
        self.token = CancellationToken()
        self.expired = False
        self.idle_expired = False
        self.total = total_timeout
        self.idle = idle_timeout if idle_timeout is not None and idle_timeout > 0 else None
        self._unregister = cancel.on_cancel(self.token.cancel)
        now = time.monotonic()
        self._deadline = now + total_timeout if total_timeout is not None and total_timeout > 0 else None
        self._last: float | None = None  # when the last complete event arrived (None: not watching yet)
        self._watch: Watch | None = None
        if self._deadline is not None or self.idle is not None:
            first = self._next_check()
            if first is not None:
                self._watch = watch(self._next_check, first)

    def start_idle(self) -> None:
        """The response began: from now on, a gap of ``idle`` seconds between events stops the call."""
        self._last = time.monotonic()

    touch = start_idle  # a complete event arrived

    def _next_check(self) -> float | None:
        """Seconds until the next bound to check, or None after stopping the call."""
        now = time.monotonic()
        waits: list[float] = []
        if self._deadline is not None:
            if now >= self._deadline:
                self.expired = True
                self.token.cancel(wait=False)  # on the shared watchdog: its callbacks run on their own
                return None
            waits.append(self._deadline - now)
        if self.idle is not None:
            last = self._last
            left = self.idle if last is None else last + self.idle - now
            if last is not None and left <= 0:
                self.idle_expired = True
                self.token.cancel(wait=False)
                return None
            waits.append(left)
        return min(waits)

    def close(self) -> None:
        self._unregister()
        if self._watch is not None:
            self._watch.stop()


# --------------------------------------------------------------------------- in-flight connections


class _InFlight:
    """The connection one helper thread is using, so another thread can shut it down."""

    __slots__ = ("_lock", "_conn", "_aborted")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: object = None
        self._aborted = False

    def attach(self, conn: object) -> None:
        with self._lock:
            self._conn = conn
            aborted = self._aborted
        if aborted:
            _shutdown(getattr(conn, "sock", None))

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            conn = self._conn
        if conn is not None:
            _shutdown(getattr(conn, "sock", None))


_current = threading.local()  # .flight: the _InFlight of the request this thread is sending


class _Tracked:
    """Mixin for urllib3 connections: report the connection in use to the sending thread's
    :class:`_InFlight` (when connecting, and when a pooled connection is reused)."""

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]  # a mixin: the urllib3 connection after it in the MRO has it
        flight = getattr(_current, "flight", None)
        if flight is not None:
            flight.attach(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        flight = getattr(_current, "flight", None)
        if flight is not None and getattr(self, "sock", None) is not None:
            flight.attach(self)
        super().request(*args, **kwargs)  # type: ignore[misc]  # likewise


class _HTTPConnection(_Tracked, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_Tracked, urllib3.connection.HTTPSConnection):
    pass


class _HTTPPool(urllib3.HTTPConnectionPool):
    # pyright finds urllib3's own HTTPConnection not assignable to the BaseHTTPConnection protocol its pools
    # declare (default_socket_options, host, ...), and urllib3 assigns it just so: a stub mismatch, not ours
    ConnectionCls = _HTTPConnection  # pyright: ignore[reportAssignmentType]


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection  # pyright: ignore[reportAssignmentType]  # likewise


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class _Adapter(requests.adapters.HTTPAdapter):
    """requests' adapter with connections that report themselves (see :class:`_InFlight`)."""

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS managers bring their own connection classes
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    def set_ok(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: urllib.request.Request) -> bool:
        return False


# --------------------------------------------------------------------------- the client


class HttpClient:
    """The HTTP side of one provider instance: its own session and pool, no cookies."""

    def __init__(self, pool_maxsize: int = 32) -> None:
        self._lock = threading.Lock()
        self._session: requests.Session | None = None
        self._pool_maxsize = pool_maxsize

    @property
    def session(self) -> requests.Session:
        with self._lock:
            if self._session is None:
                session = requests.Session()
                session.cookies.set_policy(_NoCookies())
                adapter = _Adapter(pool_connections=8, pool_maxsize=self._pool_maxsize)
                session.mount("https://", adapter)
                session.mount("http://", adapter)
                self._session = session
            return self._session

    def close(self) -> None:
        """Close the pooled connections (the client can still be used afterwards)."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()

    def post(self, url: str, headers: dict[str, str], body: bytes, timeout: tuple[float, float | None],
             stop: CancellationToken) -> requests.Response | None:
        """POST on a helper thread (see :meth:`send`)."""
        return self.send("POST", url, headers, body, timeout, stop)

    def send(self, method: str, url: str, headers: dict[str, str], body: bytes | None,
             timeout: tuple[float, float | None], stop: CancellationToken) -> requests.Response | None:
        """Send a request on a helper thread; the response once its headers arrived, or None when
        ``stop`` fired first (the in-flight connection is then shut down, so the helper ends at
        once). Transport failures are raised as the ``requests`` exceptions they are."""
        session = self.session
        outcome = _Outcome()
        ready = threading.Event()
        lock = threading.Lock()
        flight = _InFlight()

        def worker() -> None:
            _current.flight = flight
            try:
                response = session.request(method, url, data=body, headers=headers, stream=True, timeout=timeout,
                                           allow_redirects=False)
            except BaseException as exc:  # handed to the waiting thread
                outcome.error = exc
            else:
                with lock:
                    if outcome.abandoned:
                        response.close()
                        return
                    outcome.response = response
            finally:
                _current.flight = None
            ready.set()

        def on_stop() -> None:
            flight.abort()
            ready.set()

        unregister = stop.on_cancel(on_stop)
        threading.Thread(target=worker, name="phi-http-send", daemon=True).start()
        try:
            ready.wait()
        finally:
            unregister()
        with lock:
            if stop.is_cancelled():
                outcome.abandoned = True
                if outcome.response is not None:
                    outcome.response.close()
                return None
        error, outcome.error = outcome.error, None
        if error is None:
            return outcome.response
        try:
            raise error
        finally:  # its traceback holds this frame (and the helper's, which holds the outcome): neither may hold it
            del error


@dataclass(slots=True)
class _Outcome:
    """What the helper thread of :meth:`HttpClient.send` hands back, and whether it was abandoned."""

    response: requests.Response | None = None
    error: BaseException | None = None
    abandoned: bool = False


# --------------------------------------------------------------------------- reading


def iter_body(response: requests.Response) -> Iterator[bytes]:
    """The decoded body bytes as they arrive, one network read at a time (never waiting for a
    buffer to fill). Raises urllib3/requests/socket errors as they come."""
    raw = response.raw
    if raw.chunked and raw.supports_chunked_reads():
        yield from raw.stream(None, decode_content=True)  # what iter_content(None) does
        return
    read1 = raw.read1
    while True:
        chunk = read1(READ_SIZE, decode_content=True)
        if not chunk:
            return
        yield chunk


def drain(body: Iterator[bytes], response: requests.Response) -> bool:
    """Read what is left of a body whose content is no longer needed, so the connection can go
    back to the pool. Bounded by :data:`DRAIN_BYTES` and :data:`DRAIN_SECONDS`; False (and the
    connection will be closed) when the body did not end within those bounds or broke."""
    sock = socket_of(response)
    if sock is not None:
        sock.settimeout(DRAIN_SECONDS)  # urllib3 sets its own timeout again on the next request
    left = DRAIN_BYTES
    try:
        for chunk in body:
            left -= len(chunk)
            if left < 0:
                return False
    except Exception:  # best effort: the message is complete; a broken tail only costs the connection
        log.debug("draining the end of a response failed", exc_info=True)
        return False
    return True


def abort_response(response: requests.Response) -> None:
    """Interrupt a read blocked on ``response`` (from any thread): shut the socket down, close."""
    _shutdown(socket_of(response))
    try:
        response.close()
    except Exception:  # closing races the reading thread; the shutdown already did the work
        log.debug("closing an aborted response failed", exc_info=True)


def socket_of(response: requests.Response) -> socket.socket | None:
    raw = response.raw
    conn = getattr(raw, "_connection", None)
    sock = getattr(conn, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def _shutdown(sock: object) -> None:
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

