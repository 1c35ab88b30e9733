"""SPEC §17 — trace context for the requests a tool sends on (OTEL-10).

A tool that calls another service (an MCP tool's ``tools/call``) asks :func:`outgoing` for the
fields to send along, so the service's own spans join the caller's trace. The fields come from
whoever registered a carrier with :func:`register_carrier` — an
:class:`~phi.observability.OtelTracer` registers one that answers with the W3C ``traceparent`` /
``tracestate`` of the tool call's ``execute_tool`` span. With nothing registered :func:`outgoing`
is an empty dict and costs one tuple read.
"""

from __future__ import annotations

from typing import Callable, Mapping

from ..concurrency.callbacks import CallbackList
from ..log import get_logger

log = get_logger(__name__)

Carrier = Callable[[str | None, str], Mapping[str, str]]
"""``carrier(loop_id, tool_call_id)`` → the fields to send with that call's outgoing request."""

_carriers: CallbackList[Carrier] = CallbackList()


def register_carrier(carrier: Carrier) -> Callable[[], None]:
    """Ask ``carrier`` for every outgoing request a tool call makes; returns the function that stops it."""
    return _carriers.add(carrier)


def outgoing(loop_id: str | None, tool_call_id: str) -> dict[str, str]:
    """The fields every carrier gives for this call (string keys and values only); a carrier that
    raises is logged and skipped."""
    fields: dict[str, str] = {}
    for carrier in _carriers:
        try:
            given = carrier(loop_id, tool_call_id)
        except Exception:
            log.exception("trace-context carrier %r raised", carrier)
            continue
        for k, v in given.items():  # a carrier is the application's code: only strings are sent
            if isinstance(k, str) and isinstance(v, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # app code
                fields[k] = v
    return fields
