"""Every way a run ends keeps the user's input and leaves a valid history (SPEC LOOP-5, LOOP-18).

Issue 9 items 1 and 3: queued messages already taken from a queue used to be dropped when the run
stopped before the next turn, and an exception from user code was turned into a model error, into
a tool result, or escaped leaving tool calls without results.
"""

from __future__ import annotations

import threading

import pytest
from history_checks import assert_valid_conversation
from loop_helpers import call, check_announcements, run, text_of, text_tool, tool_turn

from phi.concurrency.cancel import CancellationToken
from phi.context.config import ExecutionLimits
from phi.concurrency.queues import MessageQueue
from phi.types import QueueMode, RunOutcome, ToolResultMessage, UserMessage


class Boom(Exception):
    pass


def queues(steering_mode: QueueMode = QueueMode.ONE_AT_A_TIME) -> tuple[MessageQueue, MessageQueue, dict]:
    steering, follow_up = MessageQueue(steering_mode), MessageQueue()
    settings = dict(get_steering_messages=steering.drain, put_back_steering_messages=steering.put_back,
                    get_follow_up_messages=follow_up.drain, put_back_follow_up_messages=follow_up.put_back)
    return steering, follow_up, settings


def texts(messages: list) -> list[str]:
    return [text_of(m) for m in messages]


# --------------------------------------------------------------------------- LOOP-18


def test_abort_at_turn_end_after_steering_read_during_tools_puts_the_steering_back():
    steering, _, settings = queues()
    cancel = CancellationToken()

    def sink(event):
        if event.type == "ToolExecutionStart" and event.tool_call_id == "t1":
            steering.push(UserMessage.from_text("steer"))
        if event.type == "TurnEnd":
            cancel.cancel()

    out = run([tool_turn(call("t1", "t"), call("t2", "t")), "never"], [text_tool("t")], cancel=cancel, sink=sink,
              tool_execution="sequential", **settings)
    assert out.end.outcome == RunOutcome.ABORTED
    assert texts(steering.snapshot()) == ["steer"]
    assert "steer" not in texts(out.messages)


def test_max_turns_with_a_follow_up_read_puts_it_back():
    _, follow_up, settings = queues()
    out = run(["one", "never"], sink=lambda e: e.type == "TurnEnd" and follow_up.push(UserMessage.from_text("more")),
              execution_limits=ExecutionLimits(max_turns=1, max_total_tokens=None, max_duration=None), **settings)
    assert out.end.outcome == RunOutcome.LIMIT
    assert texts(follow_up.snapshot()) == ["more"]
    assert texts(out.messages)[-1].startswith("[Agent stopped: Max turns")


def test_before_turn_veto_puts_pending_steering_back():
    steering, _, settings = queues()
    out = run(["one", "never"], sink=lambda e: e.type == "TurnEnd" and steering.push(UserMessage.from_text("s")),
              before_turn=lambda messages, index: index == 0, **settings)
    assert out.end.outcome == RunOutcome.VETOED
    assert texts(steering.snapshot()) == ["s"]


def test_abort_before_the_first_turn_keeps_the_queued_steering():
    steering, _, settings = queues()
    steering.push(UserMessage.from_text("early"))
    cancel = CancellationToken()
    cancel.cancel()
    out = run(["never"], cancel=cancel, **settings)
    assert out.types == ["AgentStart", "MessageStart", "MessageEnd", "AgentEnd"]
    assert texts(steering.snapshot()) == ["early"]
    assert texts(out.messages) == ["hi"]


def test_put_back_goes_to_the_front_in_order():
    steering, _, settings = queues()  # one at a time: the run takes "a" and leaves "b"

    def sink(event):
        if event.type == "TurnEnd":
            steering.push(UserMessage.from_text("a"))
            steering.push(UserMessage.from_text("b"))

    out = run(["one", "never"], sink=sink, before_turn=lambda messages, index: index == 0, **settings)
    assert out.end.outcome == RunOutcome.VETOED
    steering.push(UserMessage.from_text("c"))
    assert texts(steering.snapshot()) == ["a", "b", "c"]


def test_without_a_put_back_the_taken_messages_are_announced_before_agent_end():
    steering = MessageQueue()
    out = run(["one", "never"], sink=lambda e: e.type == "TurnEnd" and steering.push(UserMessage.from_text("late")),
              before_turn=lambda messages, index: index == 0, get_steering_messages=steering.drain)
    assert texts(out.messages) == ["hi", "one", "late"]
    check_announcements(out)
    assert out.end.messages == out.messages


def test_a_limit_notice_comes_after_undelivered_messages_without_put_back():
    follow_up = MessageQueue()
    out = run(["one", "never"], sink=lambda e: e.type == "TurnEnd" and follow_up.push(UserMessage.from_text("f")),
              execution_limits=ExecutionLimits(max_turns=1, max_total_tokens=None, max_duration=None),
              get_follow_up_messages=follow_up.drain)
    assert texts(out.messages)[1:] == ["one", "f", "[Agent stopped: Max turns reached (1/1)]"]
    check_announcements(out)


# --------------------------------------------------------------------------- LOOP-5: exceptions


def test_a_subscriber_raising_on_message_update_ends_the_run_with_that_exception():
    def sink(event):
        if event.type == "MessageUpdate":
            raise Boom("consumer")

    with pytest.raises(Boom):
        run([{"blocks": [{"type": "text", "chunks": ["a", "b"]}]}, "never"], sink=sink)


def test_the_exception_is_not_turned_into_a_model_error_or_retried():
    seen = []

    def sink(event):
        seen.append(event.type)
        if event.type == "MessageUpdate":
            raise Boom("consumer")

    provider_calls = []
    from phi.providers.mock import ScriptedProvider

    provider = ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["a", "b"]}]}, "never"])
    original = provider.stream
    provider.stream = lambda *a: provider_calls.append(1) or original(*a)  # type: ignore[method-assign]
    with pytest.raises(Boom):
        run(provider=provider, sink=sink)
    assert len(provider_calls) == 1
    assert seen.count("MessageUpdate") == 1 and "MessageEnd" not in seen[4:] and "AgentEnd" not in seen


def test_a_subscriber_raising_on_tool_execution_update_is_not_the_tools_result():
    def tool(args, ctx):
        ctx.update("partial")
        return "fine"

    def sink(event):
        if event.type == "ToolExecutionUpdate":
            raise Boom("consumer")

    from phi.loop import agent_loop
    from phi.loop.config import AgentContext, AgentLoopConfig
    from phi.providers.mock import ScriptedProvider

    context = AgentContext(tools=[text_tool("t", tool)])
    config = AgentLoopConfig(provider=ScriptedProvider([tool_turn(call("t1", "t")), "never"]))
    with pytest.raises(Boom):
        agent_loop([UserMessage.from_text("hi")], context, config, sink)
    assert_valid_conversation(context.messages)
    result = context.messages[-1]
    # its own result if it had returned by then, else aborted (LOOP-5) — never the consumer's exception
    assert isinstance(result, ToolResultMessage) and result.text in ("fine", "Tool execution aborted.")


def test_a_subscriber_raising_on_tool_execution_end_leaves_every_call_answered():
    release = threading.Event()
    started = threading.Event()
    stopped = threading.Event()

    def slow(args, ctx):
        started.set()
        ctx.cancel.wait(5)
        stopped.set()
        return "late"

    def fast(args, ctx):
        started.wait(5)
        return "quick"

    def sink(event):
        if event.type == "ToolExecutionEnd" and event.tool_call_id == "t1":
            raise Boom("consumer")

    from phi.loop import agent_loop
    from phi.loop.config import AgentContext, AgentLoopConfig
    from phi.providers.mock import ScriptedProvider

    context = AgentContext(tools=[text_tool("fast", fast), text_tool("slow", slow)])
    config = AgentLoopConfig(provider=ScriptedProvider([tool_turn(call("t1", "fast"), call("t2", "slow")), "x"]))
    events = []

    def record(event):
        events.append(event.type)
        sink(event)

    with pytest.raises(Boom):
        agent_loop([UserMessage.from_text("hi")], context, config, record)
    release.set()
    assert stopped.wait(5), "the running tool was not cancelled"
    assert_valid_conversation(context.messages)
    assert [m.text for m in context.messages[-2:]] == ["quick", "Tool execution aborted."]
    assert events[-1] == "ToolExecutionEnd" and "AgentEnd" not in events


@pytest.mark.parametrize("hook", ["before_tool_execution", "after_tool_execution", "after_turn", "before_turn",
                                  "transform_context", "convert_to_llm", "get_api_key"])
def test_a_raising_hook_reaches_the_caller_with_a_valid_history(hook):
    calls = {"n": 0}

    def raising(*args):
        calls["n"] += 1
        if hook in ("before_turn", "transform_context", "convert_to_llm", "get_api_key") and calls["n"] == 1:
            return None if hook != "transform_context" and hook != "convert_to_llm" else args[0]
        raise Boom(hook)

    with pytest.raises(Boom):
        run([tool_turn(call("t1", "t"), call("t2", "t")), "done"], [text_tool("t")], **{hook: raising})


def test_history_after_a_raising_hook_is_valid_and_continuable():
    from phi.loop import agent_loop, agent_loop_continue
    from phi.loop.config import AgentContext, AgentLoopConfig
    from phi.providers.mock import ScriptedProvider

    def after_tool(name, call_id, is_error):
        raise Boom("after_tool_execution")

    provider = ScriptedProvider([tool_turn(call("t1", "t"), call("t2", "t")), "continued"])
    context = AgentContext(tools=[text_tool("t")])
    config = AgentLoopConfig(provider=provider, after_tool_execution=after_tool)
    with pytest.raises(Boom):
        agent_loop([UserMessage.from_text("hi")], context, config, lambda e: None)
    assert_valid_conversation(context.messages)
    config.after_tool_execution = None
    new = agent_loop_continue(context, config, lambda e: None)
    assert new[-1].text == "continued"
    sent = provider.calls[-1].messages
    assert [m.role for m in sent] == ["user", "assistant", "toolResult", "toolResult"]


def test_an_exception_gives_back_the_steering_the_run_had_taken():
    steering, _, settings = queues()

    def before_turn(messages, index):
        if index == 1:
            raise Boom("before_turn")

    with pytest.raises(Boom):
        run(["one", "never"], sink=lambda e: e.type == "TurnEnd" and steering.push(UserMessage.from_text("s")),
            before_turn=before_turn, **settings)
    assert texts(steering.snapshot()) == ["s"]
