"""A local HTTP/1.1 server on 127.0.0.1 that replays recorded bodies, for provider tests.

It is a raw-socket server (not http.server) so it can also misbehave on purpose: reset the
connection before or in the middle of a body, go silent, or stop without the final chunk.
Each test queues :class:`Reply` objects; each request received is recorded in ``server.requests``.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real-streams"


@dataclass
class Reply:
    body: bytes = b""
    status: int = 200
    content_type: str = "text/event-stream; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    chunk_size: int = 65536
    chunked: bool = True  # Transfer-Encoding: chunked (else Connection: close, no length)
    reset_before: bool = False  # RST instead of a response
    reset_after: int | None = None  # RST after this many body bytes
    silent_after: int | None = None  # stop sending (keep the socket open) after this many body bytes
    silent_before_headers: bool = False
    truncate_after: int | None = None  # close cleanly (FIN) without the final chunk after N bytes
    delay: float = 0.0  # seconds between chunks
    gzip: bool = False  # send the body gzip-compressed with Content-Encoding: gzip
    hang_at_end: bool = False  # send the whole body, then neither the chunked terminator nor a close


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ReplayServer:
    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.replies: list[Reply] = []
        # Optional: compute each reply from the request instead of popping ``replies`` (scripted models).
        self.responder: Callable[[Recorded], Reply] | None = None
        self.requests: list[Recorded] = []
        self.connections = 0  # TCP connections accepted
        self.closed_by_client: list[float] = []  # when a client closed a connection we kept silent on
        self._stop = threading.Event()
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name=f"replay-accept-{self.port}", daemon=True).start()

    def queue(self, *replies: Reply) -> ReplayServer:
        with self._lock:
            self.replies.extend(replies)
        return self

    def close(self) -> None:
        """Stop serving. Sockets are only shut down here, which wakes the threads blocked on them;
        each is closed by the thread that uses it. (Closing a socket another thread is about to
        use frees its descriptor number for the next socket the process opens — a client's
        connection in a later test — and that thread would then accept or read on it.)"""
        self._stop.set()
        with self._lock:  # the owners close under this lock too: nothing here is closed yet
            for sock in [self.sock, *self._open]:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _accept(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                with self._lock:
                    self._open.append(conn)
                    self.connections += 1
                    if self._stop.is_set():  # accepted while closing: close() did not see it
                        conn.shutdown(socket.SHUT_RDWR)
                threading.Thread(target=self._serve, args=(conn,), name=f"replay-serve-{self.port}",
                                 daemon=True).start()
        finally:
            with self._lock:
                self.sock.close()

    def _read_request(self, conn: socket.socket) -> Recorded | None:
        data = b""
        while b"\r\n\r\n" not in data:
            part = conn.recv(65536)
            if not part:
                return None
            data += part
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            part = conn.recv(65536)
            if not part:
                break
            rest += part
        return Recorded(method, path, headers, rest[:length])

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._serve_requests(conn)
        finally:
            self._discard(conn)

    def _discard(self, conn: socket.socket) -> None:
        """Forget ``conn`` and close it (by its serving thread only; see close())."""
        with self._lock:
            if conn in self._open:
                self._open.remove(conn)
            conn.close()

    def _serve_requests(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while not self._stop.is_set():
                request = self._read_request(conn)
                if request is None:
                    return
                with self._lock:
                    self.requests.append(request)
                    responder = self.responder
                    if responder is None:
                        reply = self.replies.pop(0) if self.replies else Reply(b"no reply queued", status=500,
                                                                              content_type="text/plain")
                if responder is not None:
                    reply = responder(request)
                if not self._respond(conn, reply):
                    return
        except OSError:
            return

    def _respond(self, conn: socket.socket, reply: Reply) -> bool:
        """Send one reply; False when the connection must not be reused."""
        if reply.reset_before:
            _linger_zero(conn)
            self._discard(conn)
            return False
        if reply.silent_before_headers:
            self._wait_for_close(conn)
            return False
        body = reply.body
        head = [f"HTTP/1.1 {reply.status} X", f"Content-Type: {reply.content_type}"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        if reply.gzip:
            import gzip

            body = gzip.compress(body)
            head.append("Content-Encoding: gzip")
        head.append("Transfer-Encoding: chunked" if reply.chunked else "Connection: close")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        sent = 0
        size = max(1, reply.chunk_size)
        while sent < len(body):
            piece = body[sent : sent + size]
            for limit, action in ((reply.reset_after, "reset"), (reply.silent_after, "silent"),
                                  (reply.truncate_after, "truncate")):
                if limit is not None and sent + len(piece) > limit:
                    piece = piece[: max(0, limit - sent)]
                    if piece:
                        self._send_piece(conn, piece, reply.chunked)
                    if action == "reset":
                        _linger_zero(conn)
                        self._discard(conn)
                    elif action == "silent":
                        self._stop.wait(30)
                    else:
                        conn.shutdown(socket.SHUT_WR)
                    return False
            self._send_piece(conn, piece, reply.chunked)
            sent += len(piece)
            if reply.delay:
                time.sleep(reply.delay)
        if reply.hang_at_end:
            self._wait_for_close(conn)
            return False
        if reply.chunked:
            conn.sendall(b"0\r\n\r\n")
            return True
        conn.shutdown(socket.SHUT_WR)
        return False

    def _wait_for_close(self, conn: socket.socket) -> None:
        """Say nothing; note when the client gives up on the connection (or 30 s pass)."""
        conn.settimeout(0.05)
        deadline = time.monotonic() + 30
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                if not conn.recv(65536):
                    self.closed_by_client.append(time.monotonic())
                    return
            except socket.timeout:
                continue
            except OSError:
                self.closed_by_client.append(time.monotonic())
                return

    @staticmethod
    def _send_piece(conn: socket.socket, piece: bytes, chunked: bool) -> None:
        if chunked:
            conn.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        else:
            conn.sendall(piece)


def _linger_zero(conn: socket.socket) -> None:
    """Make the coming close send RST instead of FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.fixture
def server():
    srv = ReplayServer()
    yield srv
    srv.close()


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def expected(name: str) -> Any:
    return json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))[name]


def sse_from_jsonl(name: str, style: str) -> bytes:
    """Rebuild SSE framing for a payload-only .jsonl recording (see SOURCES.md, "File kinds").

    ``style`` is ``named`` (``event: <type>`` + ``data:``, Anthropic/Responses) or ``google``
    (``data:`` lines separated by CRLF CRLF, as Gemini and Vertex send them).
    """
    out = []
    for line in fixture_bytes(name).decode("utf-8").splitlines():
        if not line.strip():
            continue
        if style == "named":
            kind = json.loads(line)["type"]
            out.append(f"event: {kind}\ndata: {line}\n\n")
        else:
            out.append(f"data: {line}\r\n\r\n")
    return "".join(out).encode("utf-8")


class Collector:
    """An on_event sink that keeps every StreamEvent."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind.value for e in self.events]

    def deltas(self, kind: str) -> str:
        return "".join(e.delta for e in self.events if e.kind.value == kind)
