"""SPEC §17 — trace context for the requests a tool sends on (OTEL-10).

A tool that calls another service (an MCP tool's ``tools/call``) asks :func:`outgoing` for the
fields to send along, so the service's own spans join the caller's trace. The fields come from
whoever registered a carrier with :func:`register_carrier` — an
:class:`~phi.observability.OtelTracer` registers one that answers with the W3C ``traceparent`` /
``tracestate`` of the tool call's ``execute_tool`` span. With nothing registered :func:`outgoing`
is an empty dict and costs one tuple read.

A tool that runs a child loop (:class:`~phi.subagent.SubAgentTool`) says so first with
:func:`child_run`, so a tracer can put the child's spans under the call while the child runs — and
the child's own outgoing requests then carry that trace (OTEL-10).
"""

from __future__ import annotations

from typing import Callable, Mapping

from ..concurrency.callbacks import CallbackList
from ..log import get_logger

log = get_logger(__name__)

Carrier = Callable[[str | None, str], Mapping[str, str]]
"""``carrier(loop_id, tool_call_id)`` → the fields to send with that call's outgoing request."""

ChildObserver = Callable[[str | None, str, str], None]
"""``observer(loop_id, tool_call_id, child_loop_id)``: the call ``tool_call_id`` of loop ``loop_id``
is about to run the child loop ``child_loop_id``."""

_carriers: CallbackList[Carrier] = CallbackList()
_child_observers: CallbackList[ChildObserver] = CallbackList()


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


def observe_child_runs(observer: ChildObserver) -> Callable[[], None]:
    """Tell ``observer`` of every :func:`child_run`; returns the function that stops it."""
    return _child_observers.add(observer)


def child_run(loop_id: str | None, tool_call_id: str, child_loop_id: str) -> None:
    """Say, before it starts, that this tool call runs the loop ``child_loop_id``; an observer that
    raises is logged and skipped. With no observer it costs one tuple read."""
    for observer in _child_observers:
        try:
            observer(loop_id, tool_call_id, child_loop_id)
        except Exception:
            log.exception("child-run observer %r raised", observer)
