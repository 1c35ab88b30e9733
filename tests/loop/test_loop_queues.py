"""Steering in each tool mode and follow-ups in both queue modes (DESIGN §5, SPEC LOOP-9)."""

from __future__ import annotations

import pytest
from loop_helpers import call, check_announcements, run, text_of, text_tool, tool_turn

from phi.loop.config import ToolExecution
from phi.concurrency.queues import MessageQueue
from phi.loop.tool_execution import SKIPPED_FOR_STEERING
from phi.types import QueueMode, ToolResultMessage, UserMessage


def _steering_tool(queue: MessageQueue, ran: list[str]):
    def fn(args, ctx):
        ran.append(ctx.tool_call_id)
        if ctx.tool_call_id == "t1":
            queue.push(UserMessage.from_text("change of plan"))
        return f"done {ctx.tool_call_id}"

    return text_tool("work", fn)


def _roles(messages):
    return [type(m).__name__ for m in messages]


def test_steering_in_parallel_mode_runs_the_whole_batch_then_injects():
    queue, ran = MessageQueue(), []
    script = [tool_turn(call("t1", "work"), call("t2", "work"), call("t3", "work")), "ok"]
    out = run(script, [_steering_tool(queue, ran)], get_steering_messages=queue.drain,
              tool_execution=ToolExecution.PARALLEL)
    assert sorted(ran) == ["t1", "t2", "t3"]
    assert [text_of(r) for r in out.results] == ["done t1", "done t2", "done t3"]
    second_call = out.provider.calls[1].messages
    assert _roles(second_call) == ["UserMessage", "AssistantMessage", "ToolResultMessage", "ToolResultMessage",
                                   "ToolResultMessage", "UserMessage"]
    assert text_of(second_call[-1]) == "change of plan"
    check_announcements(out)


@pytest.mark.parametrize("mode,batch_size,executed", [
    (ToolExecution.SEQUENTIAL, 4, ["t1"]),
    (ToolExecution.BATCHED, 2, ["t1", "t2"]),
])
def test_steering_skips_the_remaining_calls(mode, batch_size, executed):
    queue, ran = MessageQueue(), []
    calls = [call(f"t{i}", "work") for i in range(1, 5)]
    script = [tool_turn(*calls), "ok"]
    out = run(script, [_steering_tool(queue, ran)], get_steering_messages=queue.drain, tool_execution=mode,
              batch_size=batch_size)
    assert sorted(ran) == executed
    results = out.results
    assert [r.tool_call_id for r in results] == ["t1", "t2", "t3", "t4"]
    for result in results:
        if result.tool_call_id in executed:
            assert text_of(result) == f"done {result.tool_call_id}" and not result.is_error
        else:
            assert text_of(result) == SKIPPED_FOR_STEERING and result.is_error
    assert [e.tool_call_id for e in out.of("ToolExecutionStart")] == executed
    second_call = out.provider.calls[1].messages
    assert text_of(second_call[-1]) == "change of plan"
    assert sum(isinstance(m, ToolResultMessage) for m in second_call) == 4
    check_announcements(out)


def test_steering_after_a_text_reply_starts_another_turn():
    queue = MessageQueue()
    queue.push(UserMessage.from_text("steer"))
    polls = []

    def steering():
        polls.append(1)
        # the first poll (before the run) sees nothing; the one after the reply sees the message
        return queue.drain() if len(polls) > 1 else []

    out = run(["first", "second"], get_steering_messages=steering)
    assert len(out.provider.calls) == 2
    assert text_of(out.provider.calls[1].messages[-1]) == "steer"
    assert [e.triggered_by.value for e in out.of("TurnStart")] == ["User", "Continuation"]


def test_steering_queued_before_the_run_is_announced_in_the_first_turn():
    queue = MessageQueue()
    queue.push(UserMessage.from_text("early steer"))
    out = run(["ok"], get_steering_messages=queue.drain)
    assert [text_of(m) for m in out.provider.calls[0].messages] == ["hi", "early steer"]
    check_announcements(out)


@pytest.mark.parametrize("mode,expected_calls", [(QueueMode.ONE_AT_A_TIME, 3), (QueueMode.ALL, 2)])
def test_follow_ups_in_both_queue_modes(mode, expected_calls):
    queue = MessageQueue(mode)
    queue.push(UserMessage.from_text("f1"))
    queue.push(UserMessage.from_text("f2"))
    out = run(["r1", "r2", "r3"], get_follow_up_messages=queue.drain)
    assert len(out.provider.calls) == expected_calls
    last_context = out.provider.calls[-1].messages
    assert [text_of(m) for m in last_context if isinstance(m, UserMessage)] == ["hi", "f1", "f2"]
    assert len(out.of("TurnStart")) == expected_calls
    assert len(queue) == 0
    check_announcements(out)


def test_follow_ups_wait_until_tool_calls_are_done():
    queue = MessageQueue(QueueMode.ALL)
    queue.push(UserMessage.from_text("later"))
    out = run([tool_turn(call("t1", "echo")), "after tool", "after follow-up"], [text_tool("echo")],
              get_follow_up_messages=queue.drain)
    assert len(out.provider.calls) == 3
    assert _roles(out.provider.calls[1].messages) == ["UserMessage", "AssistantMessage", "ToolResultMessage"]
    assert text_of(out.provider.calls[2].messages[-1]) == "later"


def test_follow_ups_are_not_polled_after_an_error():
    polled = []
    out = run([{"error": {"kind": "auth", "message": "bad key"}}],
              get_follow_up_messages=lambda: polled.append(1) or [UserMessage.from_text("x")])
    assert polled == []
    assert out.replies[-1].stop_reason.value == "error"
