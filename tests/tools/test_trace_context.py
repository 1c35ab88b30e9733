"""phi.tools.trace_context (SPEC §17 OTEL-10): carriers give the fields a tool sends with its
outgoing requests; one that raises or gives non-strings does not break the call."""

from __future__ import annotations

import logging

import pytest

from phi.tools.trace_context import outgoing, register_carrier


def test_nothing_registered_gives_nothing() -> None:
    assert outgoing("loop-1", "call-1") == {}


def test_carriers_are_asked_per_call_and_stop_when_told(caplog: pytest.LogCaptureFixture) -> None:
    asked: list[tuple[str | None, str]] = []

    def good(loop_id: str | None, call_id: str) -> dict[str, str]:
        asked.append((loop_id, call_id))
        return {"traceparent": f"00-{call_id}", "odd": 3}  # type: ignore[dict-item]

    def bad(loop_id: str | None, call_id: str) -> dict[str, str]:
        raise RuntimeError("carrier broke")

    stops = [register_carrier(bad), register_carrier(good)]
    try:
        with caplog.at_level(logging.ERROR):
            assert outgoing("loop-1", "c7") == {"traceparent": "00-c7"}
        assert asked == [("loop-1", "c7")] and "carrier broke" in caplog.text
    finally:
        for stop in stops:
            stop()
    assert outgoing("loop-1", "c8") == {} and asked == [("loop-1", "c7")]
