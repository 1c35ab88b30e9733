"""Helpers of the OpenAPI adapter tests: a local API on 127.0.0.1 (``http.server`` in a thread, on a
free port) and a small OpenAPI document for it.

Every request is recorded as received on the wire (raw request target, headers, body bytes).
By default the server answers 200 with a JSON echo of the request; a test sets ``server.reply``
to a function ``(Recorded) -> Reply`` for anything else (a status, a big body, a slow answer).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openapi"


@dataclass
class Recorded:
    method: str
    target: str  # the raw request target: path and query exactly as sent
    headers: dict[str, str]
    body: bytes
    client_port: int = 0

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> list[tuple[str, str]]:
        return parse_qsl(urlsplit(self.target).query, keep_blank_values=True)

    @property
    def raw_query(self) -> str:
        return urlsplit(self.target).query

    def header(self, name: str) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering
    chunks: int = 1  # send the body in this many writes, flushing each (with chunk_delay between)
    chunk_delay: float = 0.0


def echo(request: Recorded) -> Reply:
    body = {"method": request.method, "target": request.target, "headers": request.headers,
            "body": request.body.decode("utf-8", "replace")}
    return Reply(body=json.dumps(body).encode())


class ApiServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.reply: Callable[[Recorded], Reply] = echo
        self.closed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Recorded(self.command, self.path, dict(self.headers.items()), body, self.client_address[1])
                outer.requests.append(request)
                reply = outer.reply(request)
                if reply.delay:
                    outer.closed.wait(reply.delay)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    step = max(1, -(-len(reply.body) // reply.chunks))
                    for start in range(0, len(reply.body), step):
                        self.wfile.write(reply.body[start:start + step])
                        self.wfile.flush()
                        if reply.chunk_delay and outer.closed.wait(reply.chunk_delay):
                            return
                except OSError:  # the client went away (truncation, cancellation)
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def close(self) -> None:
        self.closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def spec_with(paths: dict[str, Any], **extra: Any) -> str:
    """A minimal OpenAPI 3.0 document (JSON text) around ``paths``."""
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths, **extra}
    return json.dumps(document)


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


ITEMS_API: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Items", "version": "1"},
    "servers": [{"url": "http://items.invalid/api/"}],
    "paths": {
        "/items/{itemId}": {
            "parameters": [{"name": "itemId", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {
                "operationId": "getItem", "summary": "Get one item", "tags": ["items"],
                "parameters": [
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                    {"name": "tags", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "exact", "in": "query", "schema": {"type": "boolean"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {"operationId": "deleteItem", "tags": ["admin"], "responses": {"204": {"description": "gone"}}},
        },
        "/items": {
            "post": {
                "operationId": "createItem", "tags": ["items"],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}}}},
                "responses": {"201": {"description": "created"}},
            },
        },
        "/status/{code}": {
            "get": {"operationId": "getStatus", "parameters": [
                {"name": "code", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "responses": {"default": {"description": "any"}}},
        },
    },
}


def items_spec(**changes: Any) -> str:
    document = json.loads(json.dumps(ITEMS_API))
    document.update(changes)
    return json.dumps(document)


def tool_named(tools: list[Any], name: str) -> Any:
    found = [t for t in tools if t.name == name]
    assert found, f"no tool {name}: {[t.name for t in tools]}"
    return found[0]
