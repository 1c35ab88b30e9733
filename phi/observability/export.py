"""Sending the spans somewhere: an OTLP exporter configured by the standard environment variables
(SPEC §17 OTEL-6; used by ``phi --otel``).

:func:`start_otlp` returns the tracer provider to hand to :class:`~phi.observability.OtelTracer` and
the function that flushes and shuts it down. When the process already has an SDK tracer provider
(``opentelemetry-instrument phi ...``, or the application set one), that one is used as it is.
Otherwise a new one batches spans to the OTLP exporter, which reads ``OTEL_EXPORTER_OTLP_ENDPOINT``
/ ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``..._HEADERS``, ``..._TIMEOUT``, ``..._COMPRESSION`` and the
certificate variables itself; the resource reads ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` (``service.name`` defaults to ``phi``). The protocol is
``http/protobuf`` unless ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`` says ``grpc`` (which needs
``opentelemetry-exporter-otlp-proto-grpc``).

Needs ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-http``
(``pip install 'phi-agent[otel-export]'``); without them :class:`~phi.errors.ConfigError` says so.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Callable, Mapping

from opentelemetry import trace
from opentelemetry.trace import TracerProvider

from ..errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

INSTALL_HINT = "pip install 'phi-agent[otel-export]'"


def start_otlp(environ: Mapping[str, str] | None = None) -> tuple[TracerProvider, Callable[[], None]]:
    """``(provider, shutdown)``: the process's SDK provider if it has one, else a new one exporting
    over OTLP (see the module docstring). ``shutdown`` flushes what is still queued."""
    env = os.environ if environ is None else environ
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise ConfigError(f"--otel needs the OpenTelemetry SDK: {INSTALL_HINT}") from None
    current = trace.get_tracer_provider()
    if isinstance(current, SdkTracerProvider):  # the application's: flush it, never shut it down
        def flush() -> None:
            current.force_flush()

        return current, flush
    provider = SdkTracerProvider(resource=Resource.create({} if env.get("OTEL_SERVICE_NAME") else
                                                          {"service.name": "phi"}))
    provider.add_span_processor(BatchSpanProcessor(_exporter(env)))

    def shutdown() -> None:
        provider.shutdown()

    return provider, shutdown


def _exporter(env: Mapping[str, str]) -> SpanExporter:
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf").strip().lower()
    try:
        if protocol == "grpc":  # an optional package: imported by name, so type checkers need not have it
            grpc: SpanExporter = importlib.import_module("opentelemetry.exporter.otlp.proto.grpc.trace_exporter") \
                .OTLPSpanExporter()
            return grpc
        if protocol != "http/protobuf":
            raise ConfigError(f"OTLP protocol {protocol!r} is not supported: use http/protobuf or grpc")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    except ImportError:
        package = "opentelemetry-exporter-otlp-proto-grpc" if protocol == "grpc" else INSTALL_HINT
        raise ConfigError(f"--otel with protocol {protocol} needs {package}") from None
