"""SPEC §17 Observability — phi's runs as OpenTelemetry traces, by the GenAI semantic conventions.

    from phi.observability import OtelTracer
    OtelTracer().attach(agent)        # or agent.subscribe(OtelTracer())

- :mod:`.otel` — :class:`OtelTracer`, the event subscriber that writes the spans (OTEL-1, OTEL-4..7).
- :mod:`.semconv` — the attribute names and the semantic-conventions version phi follows (OTEL-2).
- :mod:`.content` — content capture (off by default, OTEL-3); secrets are kept out by :mod:`phi.tools.redact`.
- :mod:`.export` — the OTLP exporter set up from ``OTEL_EXPORTER_OTLP_*`` (``phi --otel``).

A leaf: ``opentelemetry-api`` is an optional extra (``pip install phi-agent[otel]``); nothing else in
phi imports this package, so ``import phi`` never loads OpenTelemetry.
"""

from __future__ import annotations

from .otel import OtelTracer
from .semconv import SEMCONV_VERSION

__all__ = ["OtelTracer", "SEMCONV_VERSION"]
