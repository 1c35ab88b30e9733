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

try:  # the extra this package needs, checked first so that its absence says which extra it is
    from opentelemetry import trace as _otel_trace
except ModuleNotFoundError as missing:
    if (missing.name or "").partition(".")[0] != "opentelemetry":
        raise
    raise ModuleNotFoundError(f"{__name__} needs OpenTelemetry ({missing.name} is not installed), an "
                              "optional extra: pip install 'phi-agent[otel]'", name=missing.name) from None

from .otel import OtelTracer
from .semconv import SEMCONV_VERSION

del _otel_trace

__all__ = ["OtelTracer", "SEMCONV_VERSION"]
