"""ContextTracker and ExecutionTracker (SPEC §8.3; seed REQ-012, 061, 136)."""

from __future__ import annotations

import threading

from phi.context import ContextTracker, ExecutionLimits, ExecutionTracker, message_tokens, total_tokens
from phi.types import AssistantMessage, TextContent, ToolResultMessage, Usage, UserMessage


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_execution_tracker_starts_empty():
    clock = FakeClock(50.0)
    tracker = ExecutionTracker(ExecutionLimits(), clock=clock)
    assert tracker.turns == 0 and tracker.tokens_used == 0 and tracker.started_at == 50.0
    assert tracker.check_limits() is None
    assert ExecutionTracker().limits == ExecutionLimits()


def test_max_turns_reason():
    tracker = ExecutionTracker(ExecutionLimits(max_turns=3), clock=FakeClock())
    for _ in range(2):
        tracker.record_turn(10)
        assert tracker.check_limits() is None
    tracker.record_turn(10)
    assert tracker.check_limits() == "Max turns reached (3/3)"


def test_max_tokens_reason_and_usage_input():
    tracker = ExecutionTracker(ExecutionLimits(max_total_tokens=1000), clock=FakeClock())
    tracker.record_turn(Usage(input=600, output=100, total_tokens=700))
    assert tracker.tokens_used == 700 and tracker.check_limits() is None
    tracker.record_turn(Usage(input=400, output=100))  # no total reported -> input + output
    assert tracker.tokens_used == 1200
    assert tracker.check_limits() == "Max tokens reached (1200/1000)"


def test_max_duration_reason():
    clock = FakeClock(0.0)
    tracker = ExecutionTracker(ExecutionLimits(max_duration=600), clock=clock)
    clock.now = 599.9
    assert tracker.check_limits() is None
    clock.now = 601.25
    assert tracker.check_limits() == "Max duration reached (601.2s/600s)"
    tracker.reset()
    assert tracker.check_limits() is None and tracker.turns == 0


def test_turns_checked_before_tokens_and_unlimited():
    tracker = ExecutionTracker(ExecutionLimits(max_turns=1, max_total_tokens=1), clock=FakeClock())
    tracker.record_turn(5)
    assert tracker.check_limits() == "Max turns reached (1/1)"
    unlimited = ExecutionTracker(ExecutionLimits.unlimited(), clock=FakeClock())
    for _ in range(1000):
        unlimited.record_turn(10_000)
    assert unlimited.check_limits() is None


def test_record_turn_is_thread_safe():
    tracker = ExecutionTracker(ExecutionLimits.unlimited())
    threads = [threading.Thread(target=lambda: [tracker.record_turn(1) for _ in range(500)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tracker.turns == 4000 and tracker.tokens_used == 4000


def _conversation() -> list:
    return [
        UserMessage([TextContent("question " * 10)]),
        AssistantMessage([TextContent("answer")], usage=Usage(input=500, output=20, cache_read=100)),
    ]


def test_context_tracker_estimates_without_report():
    tracker = ContextTracker()
    messages = [UserMessage([TextContent("hello")])]
    assert tracker.current_tokens(messages) == total_tokens(messages)
    assert tracker.last_reported is None


def test_context_tracker_uses_reported_usage_then_adds_estimates():
    tracker = ContextTracker()
    messages = _conversation()
    assert tracker.current_tokens(messages) == 620  # input + cache_read + output
    extra = ToolResultMessage("c1", "t", [TextContent("x" * 40)])
    messages.append(extra)
    assert tracker.current_tokens(messages) == 620 + message_tokens(extra)
    messages.append(AssistantMessage([TextContent("more")], usage=Usage(input=700, output=30)))
    assert tracker.current_tokens(messages) == 730


def test_context_tracker_ignores_stale_reports_after_compaction():
    tracker = ContextTracker()
    messages = _conversation()
    tracker.current_tokens(messages)
    replaced = [UserMessage([TextContent("[Summary] short")])]
    assert tracker.current_tokens(replaced) == total_tokens(replaced)


def test_context_tracker_explicit_record_usage():
    tracker = ContextTracker()
    messages = [UserMessage([TextContent("hi")]), AssistantMessage([TextContent("yo")])]  # no usage on it
    tracker.record_usage(Usage(input=50, output=5), messages)
    assert tracker.last_reported == 55
    messages.append(UserMessage([TextContent("abcd")]))
    assert tracker.current_tokens(messages) == 55 + 1 + 4
    tracker.reset()
    assert tracker.current_tokens(messages) == total_tokens(messages)
