"""A scriptable Streamable HTTP MCP endpoint on 127.0.0.1 (standard library) for the HTTP rule tests.

It records every request (method, headers, JSON body) and answers like the official servers do:
``initialize`` with a session id header (unless stateless), requests with JSON or an SSE stream,
notifications and replies with ``202`` and an empty body, ``DELETE`` with 200, ``GET`` with 405 or
an event stream. Knobs on :class:`FakeHttpMcp` change one behaviour at a time.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeHttpMcp:
    def __init__(self, *, sse: bool = False, stateless: bool = False, version: str | None = None) -> None:
        self.sse = sse
        self.stateless = stateless
        self.version = version  # protocolVersion to answer with (default: the client's offer)
        self.requests: list[dict[str, Any]] = []
        self.sessions: set[str] = set()
        self.forget_sessions = False  # answer 404 to every session, always
        self.status: tuple[int, dict[str, str], bytes] | None = None  # a fixed answer to every POST
        self.get_stream: list[dict[str, Any]] | None = None  # messages to send on a GET stream
        self.keep_open = 0.0  # seconds an SSE reply stays open after the response
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def forget(self) -> None:
        """Forget every session (as a restarted or idle-expiring server does)."""
        with self.lock:
            self.sessions.clear()

    def posts(self, method: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["verb"] == "POST" and isinstance(r["body"], dict)
                    and (method is None or r["body"].get("method") == method)]

    def verbs(self) -> list[str]:
        with self.lock:
            return [r["verb"] for r in self.requests]

    # ----------------------------------------------------------------- answers

    def answer(self, message: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """The messages to send for a request, and extra headers."""
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            version = self.version or message["params"]["protocolVersion"]
            result = {"protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                      "serverInfo": {"name": "fake-http", "version": "1"}}
            headers = {}
            if not self.stateless:
                session = uuid.uuid4().hex
                with self.lock:
                    self.sessions.add(session)
                headers["Mcp-Session-Id"] = session
            return [{"jsonrpc": "2.0", "id": request_id, "result": result}], headers
        if method == "tools/list":
            tool = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
            return [{"jsonrpc": "2.0", "id": request_id, "result": {"tools": [tool]}}], {}
        if method == "tools/call":
            args = message["params"].get("arguments") or {}
            before = [{"jsonrpc": "2.0", "id": 0, "method": "ping"},
                      {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}] if self.sse else []
            if message["params"]["name"] == "sleep":
                time.sleep(float(args.get("seconds", 1)))
            reply = {"content": [{"type": "text", "text": str(args.get("text", ""))}]}
            return before + [{"jsonrpc": "2.0", "id": request_id, "result": reply}], {}
        return [{"jsonrpc": "2.0", "id": request_id, "result": {}}], {}


def _handler(fake: FakeHttpMcp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def record(self, body: Any) -> None:
            with fake.lock:
                fake.requests.append({"verb": self.command, "headers": dict(self.headers), "body": body,
                                      "port": self.client_address[1]})

        def send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def session_known(self) -> bool:
            session = self.headers.get("Mcp-Session-Id")
            with fake.lock:
                if session is None or session not in fake.sessions:
                    return False
                if fake.forget_sessions:
                    fake.sessions.discard(session)
                    return False
                return True

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
            self.record(body)
            if not isinstance(body, dict):  # a POST cut off by the client closing
                self.send(400)
                return
            if fake.status is not None:
                status, headers, payload = fake.status
                self.send(status, payload, headers)
                return
            if body.get("method") != "initialize" and not fake.stateless and not self.session_known():
                self.send(404, b'{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}',
                          {"Content-Type": "application/json"})
                return
            if "method" not in body or "id" not in body:  # a notification or a reply
                self.send(202, b"", {"Content-Type": "application/json"})
                return
            messages, headers = fake.answer(body)
            if fake.sse:
                self.stream(messages, headers)
            else:
                self.send(200, json.dumps(messages[-1]).encode(), {"Content-Type": "application/json", **headers})

        def stream(self, messages: list[dict[str, Any]], headers: dict[str, str]) -> None:
            """An SSE reply in chunked encoding (as uvicorn sends it), ended after the response
            unless ``keep_open`` holds it open."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.chunk(b"id: prime\ndata:\n\n: a comment\n\n")
            for message in messages:
                self.chunk(f"event: message\nid: {uuid.uuid4()}\ndata: {json.dumps(message)}\n\n".encode())
            self.hold_open(fake.keep_open, chunked=True)
            if fake.keep_open <= 0:
                self.wfile.write(b"0\r\n\r\n")

        def chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def hold_open(self, seconds: float, chunked: bool = False) -> None:
            """Keep an event stream open with comments, until ``seconds`` pass or the client leaves."""
            if seconds <= 0:
                return
            deadline = time.monotonic() + seconds
            try:
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                    if chunked:
                        self.chunk(b": keep-alive\n\n")
                    else:
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
            except OSError:
                pass
            self.close_connection = True

        def do_GET(self) -> None:
            self.record(None)
            if fake.get_stream is None or not self.session_known():
                self.send(405, b"Method Not Allowed")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for message in fake.get_stream:
                self.wfile.write(f"data: {json.dumps(message)}\n\n".encode())
                self.wfile.flush()
            self.hold_open(5.0)

        def do_DELETE(self) -> None:
            self.record(None)
            with fake.lock:
                fake.sessions.discard(self.headers.get("Mcp-Session-Id", ""))
            self.send(200)

    return Handler
