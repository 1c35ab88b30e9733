"""The GET stream of a Streamable HTTP session (SPEC §12.1, MCP-15).

A server may send messages outside any request — ``notifications/tools/list_changed``, ``ping`` —
on an SSE stream the client opens with ``GET`` and the session id. A :class:`Listener` keeps one
open on a daemon thread and hands what arrives to the session (server requests are answered by
``POST``). It reconnects when the stream ends (after the server's ``retry`` delay, else one second,
backing off to 30 s on errors, with ``Last-Event-ID`` when events had ids), and gives up for good on
``405`` (the server offers no stream) or ``404`` (the session is gone; a new one opens its own).
``stop`` ends it at once by shutting the socket down.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Protocol

import requests
import urllib3.exceptions

from ..log import get_logger
from ..providers.sse import SSEEvent, iter_sse
from ..providers.transport import HttpClient, abort_response, iter_body
from .session import Session

log = get_logger(__name__)

CONNECT_TIMEOUT = 10.0  # seconds to connect, for every request of an MCP HTTP endpoint


class Endpoint(Protocol):
    """What the listener needs of its endpoint (an :class:`~phi.mcp.http.HttpTransport`)."""

    url: str
    label: str
    session_id: str | None

    def headers(self, session_id: str | None, *, accept: str = ..., content: bool = True,
                version: bool = True) -> dict[str, str]: ...

_RETRY_SECONDS = 1.0
_MAX_BACKOFF = 30.0
_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


class Listener:
    """One GET stream for one session id."""

    def __init__(self, transport: Endpoint, client: HttpClient, session: Session) -> None:
        self._transport = transport
        self._client = client
        self._session = session
        self._session_id = transport.session_id
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._response: requests.Response | None = None
        self._last_event_id: str | None = None
        self._thread = threading.Thread(target=self._run, name="phi-mcp-http-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            response = self._response
        if response is not None:
            abort_response(response)

    def join(self, timeout: float) -> None:
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        delay = _RETRY_SECONDS
        while not self._stopped.is_set() and self._transport.session_id == self._session_id:
            headers = self._transport.headers(self._session_id, accept="text/event-stream", content=False)
            if self._last_event_id is not None:
                headers["Last-Event-ID"] = self._last_event_id
            try:
                response = self._client.session.get(self._transport.url, headers=headers, stream=True,
                                                    timeout=(CONNECT_TIMEOUT, None), allow_redirects=False)
            except _ERRORS as exc:
                log.debug("GET stream of %s could not connect: %s", self._transport.label, type(exc).__name__)
                delay = min(delay * 2, _MAX_BACKOFF)
                self._stopped.wait(delay)
                continue
            kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if response.status_code != 200 or kind != "text/event-stream":
                log.debug("GET stream of %s refused (HTTP %d, %s); not listening", self._transport.label,
                          response.status_code, kind or "no content type")
                response.close()
                return
            retry = self._read(response)
            delay = _RETRY_SECONDS if retry is None else retry
            self._stopped.wait(delay)

    def _read(self, response: requests.Response) -> float | None:
        """Hand the stream's messages to the session until it ends; the server's retry delay, if any."""
        with self._lock:
            if self._stopped.is_set():
                response.close()
                return None
            self._response = response
        retry = None
        try:
            for event in iter_sse(iter_body(response)):
                if event.id:
                    self._last_event_id = event.id
                if event.retry is not None:
                    retry = min(event.retry / 1000.0, _MAX_BACKOFF)
                message = decode_event(event, self._session)
                if message is not None:
                    self._session.receive(message)
        except Exception as exc:  # stop() closes the response under the reader: any error may surface
            if not self._stopped.is_set():
                log.debug("GET stream of %s broke: %s", self._transport.label, type(exc).__name__)
        finally:
            with self._lock:
                self._response = None
            response.close()
        return retry


def decode_event(event: SSEEvent, session: Session) -> Any:
    """The JSON message of one SSE event, or None for an empty (priming) or undecodable event."""
    if event.event != "message" or not event.data.strip():
        return None
    try:
        return json.loads(event.data)
    except ValueError:
        session.transport_noise(f"an SSE event that is not JSON: {event.data[:200]!r}")
        return None
