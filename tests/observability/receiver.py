"""A local OTLP/HTTP trace receiver on 127.0.0.1 for the end-to-end tests (SPEC §17 OTEL-6): it keeps
every request body and decodes them with ``opentelemetry-proto``."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class Receiver:
    """``with Receiver() as receiver:`` — ``receiver.endpoint`` takes POSTs of ``/v1/traces``."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        bodies, paths = self.bodies, self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server name)
                length = int(self.headers.get("Content-Length", "0"))
                paths.append(self.path)
                bodies.append(self.rfile.read(length))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests(self) -> list[ExportTraceServiceRequest]:
        decoded = []
        for body in self.bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            decoded.append(request)
        return decoded

    def spans(self) -> list[Any]:
        """Every span received, as ``opentelemetry.proto.trace.v1.Span`` messages."""
        return [span for request in self.requests() for resource in request.resource_spans
                for scope in resource.scope_spans for span in scope.spans]


def attributes(span: Any) -> dict[str, Any]:
    """A proto span's attributes as a plain dict (strings, ints, bools, doubles, string lists)."""
    out: dict[str, Any] = {}
    for pair in span.attributes:
        value = pair.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            out[pair.key] = [getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
        else:
            out[pair.key] = getattr(value, kind) if kind else None
    return out
