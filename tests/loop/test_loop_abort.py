"""DESIGN §5 "Errors and abort": abort before start, mid-stream and mid-tool."""

from __future__ import annotations

import threading
import time

from loop_helpers import call, run, text_of, text_tool, tool_turn

from phi.concurrency.cancel import CancellationToken
from phi.loop.config import ToolExecution
from phi.loop.tool_execution import ABORTED
from phi.types import AssistantMessage, StopReason, ToolResultMessage, UserMessage


def test_abort_before_start_makes_no_provider_call():
    cancel = CancellationToken()
    cancel.cancel()
    out = run(["never"], cancel=cancel)
    assert out.provider.calls == []
    assert out.types == ["AgentStart", "MessageStart", "MessageEnd", "AgentEnd"]
    assert isinstance(out.messages[0], UserMessage)
    assert out.end.messages == out.messages


def _cancel_when(event: threading.Event, cancel: CancellationToken, stamp: dict) -> threading.Thread:
    def worker() -> None:
        if event.wait(5):
            stamp["cancelled_at"] = time.monotonic()
            cancel.cancel()

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    return thread


def test_abort_mid_stream_ends_within_100ms_and_keeps_partial_text():
    cancel = CancellationToken()
    two_updates = threading.Event()
    stamp: dict = {}
    updates = []

    def sink(event):
        if event.type == "MessageUpdate":
            updates.append(event)
            if len(updates) == 2:
                two_updates.set()
        elif event.type == "AgentEnd":
            stamp["ended_at"] = time.monotonic()

    script = [{"blocks": [{"type": "text", "chunks": ["Hel", "lo", " never"]}, call("t1", "echo")],
               "hang_after_chunks": 2}]
    ran = []
    echo = text_tool("echo", lambda a, c: ran.append(1) or "x")
    helper = _cancel_when(two_updates, cancel, stamp)
    out = run(script, [echo], cancel=cancel, sink=sink)
    helper.join(1)
    latency = stamp["ended_at"] - stamp["cancelled_at"]
    assert latency < 0.1, f"abort took {latency * 1000:.1f} ms"
    reply = out.replies[-1]
    assert reply.stop_reason == StopReason.ABORTED
    assert reply.text == "Hello"
    assert ran == [] and out.results == []
    assert out.types[-3:] == ["MessageEnd", "TurnEnd", "AgentEnd"]
    assert out.end.messages[-1] is reply
    assert len(out.provider.calls) == 1


def test_abort_mid_stream_with_chunk_delay():
    cancel = CancellationToken()
    first = threading.Event()
    stamp: dict = {}

    def sink(event):
        if event.type == "MessageUpdate":
            first.set()
        elif event.type == "AgentEnd":
            stamp["ended_at"] = time.monotonic()

    script = [{"blocks": [{"type": "text", "chunks": ["a", "b", "c", "d"]}], "chunk_delay_ms": 2000}]
    helper = _cancel_when(first, cancel, stamp)
    out = run(script, cancel=cancel, sink=sink)
    helper.join(1)
    assert stamp["ended_at"] - stamp["cancelled_at"] < 0.1
    assert out.replies[-1].stop_reason == StopReason.ABORTED
    assert out.replies[-1].text == "a"


def test_abort_mid_tool_running_tool_sees_cancel_and_unstarted_calls_are_aborted():
    cancel = CancellationToken()
    started = threading.Event()
    stamp: dict = {}
    seen = {}

    def slow(args, ctx):
        started.set()
        seen["cancelled"] = ctx.cancel.wait(5)
        return "stopped early"

    ran_second = []
    tools = [text_tool("slow", slow), text_tool("other", lambda a, c: ran_second.append(1) or "ran")]
    script = [tool_turn(call("t1", "slow"), call("t2", "other")), "never"]
    helper = _cancel_when(started, cancel, stamp)
    out = run(script, tools, cancel=cancel, tool_execution=ToolExecution.SEQUENTIAL)
    helper.join(1)
    assert seen["cancelled"] is True
    assert ran_second == []
    results = out.results
    assert [r.tool_call_id for r in results] == ["t1", "t2"]
    assert text_of(results[1]) == ABORTED and results[1].is_error
    assert len(out.provider.calls) == 1  # no LLM call after the abort
    assert out.types[-2:] == ["TurnEnd", "AgentEnd"]
    # no ToolExecutionStart for the call that never started
    assert [e.tool_call_id for e in out.of("ToolExecutionStart")] == ["t1"]


def test_abort_mid_tool_parallel_abandons_a_tool_that_ignores_cancel_after_grace():
    cancel = CancellationToken()
    started = threading.Event()
    stamp: dict = {}
    release = threading.Event()

    def stubborn(args, ctx):
        started.set()
        release.wait(5)
        return "late"

    script = [tool_turn(call("t1", "stubborn")), "never"]
    helper = _cancel_when(started, cancel, stamp)
    try:
        out = run(script, [text_tool("stubborn", stubborn)], cancel=cancel, tool_abort_grace_ms=50)
    finally:
        release.set()
    helper.join(1)
    (result,) = out.results
    assert text_of(result) == ABORTED and result.is_error
    assert out.elapsed < 2


def test_follow_ups_are_not_polled_after_abort():
    cancel = CancellationToken()
    polled = []
    cancel.cancel()
    out = run(["x"], cancel=cancel, get_follow_up_messages=lambda: polled.append(1) or [])
    assert polled == []
    assert out.provider.calls == []


def test_abort_during_retry_backoff_ends_promptly_as_aborted():
    from phi.providers.retry import RetryConfig

    cancel = CancellationToken()
    threading.Timer(0.05, cancel.cancel).start()
    script = [{"error": {"kind": "rate_limited", "message": "wait", "retry_after_ms": 5000}}, "never"]
    out = run(script, cancel=cancel, retry_config=RetryConfig(max_retries=3, initial_delay_ms=1, jitter=False))
    assert out.elapsed < 1
    assert len(out.provider.calls) == 1
    reply = out.replies[-1]
    assert reply.stop_reason == StopReason.ABORTED and reply.content == []
    assert out.types[-4:] == ["MessageStart", "MessageEnd", "TurnEnd", "AgentEnd"]


def test_abort_after_a_tool_use_reply_answers_every_call_as_aborted():
    cancel = CancellationToken()
    ran = []

    def sink(event):
        if event.type == "MessageEnd" and isinstance(event.message, AssistantMessage):
            cancel.cancel()

    script = [tool_turn(call("t1", "echo", {"a": 1}), call("t2", "echo", {"a": 2})), "never"]
    out = run(script, [text_tool("echo", lambda a, c: ran.append(1) or "x")], cancel=cancel, sink=sink)
    assert ran == [] and out.of("ToolExecutionStart") == []
    assert [(r.tool_call_id, text_of(r), r.is_error) for r in out.results] == [("t1", ABORTED, True),
                                                                                ("t2", ABORTED, True)]
    assert len(out.provider.calls) == 1
    assert isinstance(out.messages[-1], ToolResultMessage)
