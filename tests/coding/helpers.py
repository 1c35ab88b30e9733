"""Shared checks for the coding-layer tests."""

from __future__ import annotations

from typing import Any

from phi.coding import EventKind, SessionEvent
from phi.providers.mock import ScriptedResponse


def call(name: str, call_id: str = "c1", **args: Any) -> ScriptedResponse:
    """A scripted model reply with one call of ``name``."""
    return ScriptedResponse.tool_call(name, args, call_id=call_id)


def kinds(events: list[SessionEvent]) -> list[str]:
    return [e.kind.name for e in events]


def of_kind(events: list[SessionEvent], kind: EventKind) -> list[SessionEvent]:
    return [e for e in events if e.kind == kind]


def check_event_order(events: list[SessionEvent], session_id: str) -> None:
    """The invariants every session event sequence keeps (seed 004 §2.9, §9.10)."""
    assert events, "no events"
    last_time = 0.0
    open_text = False
    open_calls: set[str] = set()
    ended_calls: set[str] = set()
    for event in events:
        assert event.session_id == session_id
        assert event.timestamp >= last_time
        last_time = event.timestamp
        data = event.data
        if event.kind == EventKind.ASSISTANT_TEXT_START:
            assert not open_text, "text start inside a reply"
            open_text = True
        elif event.kind == EventKind.ASSISTANT_TEXT_DELTA:
            assert open_text
        elif event.kind == EventKind.ASSISTANT_TEXT_END:
            assert open_text, "text end without start"
            open_text = False
            ended_calls = set()  # call ids are unique within a reply (Gemini numbers them per reply)
        elif event.kind == EventKind.TOOL_CALL_START:
            assert data["call_id"] not in open_calls | ended_calls
            open_calls.add(data["call_id"])
        elif event.kind == EventKind.TOOL_CALL_OUTPUT_DELTA:
            assert data["call_id"] in open_calls
        elif event.kind == EventKind.TOOL_CALL_END:
            assert data["call_id"] in open_calls, f"end without start: {data}"
            open_calls.discard(data["call_id"])
            ended_calls.add(data["call_id"])
            assert isinstance(data["output"], str)
    assert not open_text and not open_calls
    starts = [i for i, e in enumerate(events) if e.kind == EventKind.SESSION_START]
    assert len(starts) <= 1 and (not starts or starts[0] == 0)
    ends = [i for i, e in enumerate(events) if e.kind == EventKind.SESSION_END]
    assert len(ends) <= 1 and (not ends or ends[0] == len(events) - 1)


def collect(session: Any, text: str) -> tuple[list[SessionEvent], Any]:
    """Submit ``text`` through the streaming API; the events and the result."""
    stream = session.submit_stream(text)
    events = list(stream)
    return events, stream.result(timeout=30)


def tool_names(protocol: str, body: dict[str, Any]) -> list[str]:
    if protocol == "gemini":
        return [d["name"] for d in body["tools"][0]["functionDeclarations"]]
    return [t["name"] for t in body.get("tools", [])]
