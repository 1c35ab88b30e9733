"""Property-based check of the DESIGN §5 invariants over random scripts.

Each example draws a script (text/thinking chunks, tool calls of several kinds, length replies,
provider errors before or after deltas), a tool mode, steering pushed by a tool, follow-ups, and
possibly an abort at a random event. The loop runs on a thread with a join timeout (no hang), and
the recorded events, returned messages and provider requests are checked against the contract.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from loop_helpers import check_announcements, run, text_tool

from phi.concurrency.cancel import CancellationToken
from phi.errors import ToolError
from phi.loop.config import ToolExecution
from phi.providers.mock import ScriptedProvider
from phi.providers.retry import RetryConfig
from phi.concurrency.queues import MessageQueue
from phi.types import (
    AssistantMessage,
    QueueMode,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

TOOL_NAMES = ["echo", "fail", "boom", "steer", "strict", "missing"]
CHUNK = st.text(alphabet="abcxyz \n{}\"é", min_size=1, max_size=4)


@st.composite
def responses(draw, index):
    blocks = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["text", "thinking"]))
        blocks.append({"type": kind, "chunks": draw(st.lists(CHUNK, min_size=1, max_size=3))})
    for n in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(TOOL_NAMES))
        args = draw(st.sampled_from([{}, {"n": 1}, {"n": "x"}, {"text": "hi", "n": 2}]))
        blocks.append({"type": "toolCall", "id": f"c{index}_{n}", "name": name, "arguments": args})
    response = {"blocks": blocks, "usage": {"input": draw(st.integers(0, 50)), "output": draw(st.integers(0, 50))}}
    if blocks and draw(st.integers(0, 6)) == 0:
        response["stop_reason"] = "length"
    if draw(st.integers(0, 5)) == 0:
        deltas = sum(len(b.get("chunks", [])) or 1 for b in blocks)
        response["error"] = {
            "kind": draw(st.sampled_from(["rate_limited", "network", "api", "context_overflow"])),
            "message": "scripted failure",
            "after_chunks": draw(st.integers(0, max(0, deltas))),
        }
    return response


@st.composite
def scenarios(draw):
    count = draw(st.integers(1, 5))
    return {
        "script": [draw(responses(i)) for i in range(count)],
        "mode": draw(st.sampled_from(list(ToolExecution))),
        "batch_size": draw(st.integers(1, 3)),
        "follow_ups": draw(st.integers(0, 2)),
        "follow_mode": draw(st.sampled_from(list(QueueMode))),
        "abort_at": draw(st.none() | st.integers(1, 40)),
    }


def _tools(steering: MessageQueue, budget: list[int]):
    def steer(args, ctx):
        if budget[0] > 0:
            budget[0] -= 1
            steering.push(UserMessage.from_text("steer!"))
        return "steered"

    def fail(args, ctx):
        raise ToolError("refused")

    def boom(args, ctx):
        raise ValueError("kaput")

    strict_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    return [text_tool("echo"), text_tool("fail", fail), text_tool("boom", boom), text_tool("steer", steer),
            text_tool("strict", lambda a, c: f"n={a['n']}", schema=strict_schema)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_loop_invariants_hold_for_random_scripts(scenario):
    steering = MessageQueue(QueueMode.ONE_AT_A_TIME)
    follow = MessageQueue(scenario["follow_mode"])
    for i in range(scenario["follow_ups"]):
        follow.push(UserMessage.from_text(f"follow {i}"))
    cancel = CancellationToken()
    counter = [0]

    def sink(event):
        counter[0] += 1
        if scenario["abort_at"] is not None and counter[0] == scenario["abort_at"]:
            cancel.cancel()

    provider = ScriptedProvider(scenario["script"], default="fallback")
    out = run(provider=provider, tools=_tools(steering, [2]), cancel=cancel, sink=sink, timeout=10,
              tool_execution=scenario["mode"], batch_size=scenario["batch_size"],
              get_steering_messages=steering.drain, get_follow_up_messages=follow.drain,
              retry_config=RetryConfig(max_retries=2, initial_delay_ms=1, max_delay_ms=2, jitter=False))
    _check_run(out)
    for reply in out.replies:
        event(f"reply:{reply.stop_reason.value}")
    event(f"steered:{any(m.role == 'user' and m.content[0].text == 'steer!' for m in out.messages)}")
    event(f"provider calls:{min(len(out.provider.calls), 4)}")


def _check_run(out):
    types = out.types
    assert types.count("AgentStart") == 1 and types[0] == "AgentStart"
    assert types.count("AgentEnd") == 1 and types[-1] == "AgentEnd"
    end = out.end
    assert end.messages == out.messages
    assert out.context.messages == out.messages  # the context started empty; nothing was compacted
    check_announcements(out)
    _check_deltas(out)
    _check_tool_answers(out.messages)
    for request in out.provider.calls:
        _check_tool_answers(request.messages, sent=True)
    _check_turns(out)
    _check_tool_events(out)
    total = Usage()
    for turn_end in out.of("TurnEnd"):
        total = total.combine(turn_end.usage)
    assert end.usage == total


def _check_deltas(out):
    """MessageUpdates carry deltas that concatenate to the final content of each block."""
    pending: dict[int, dict[str, str]] = {}
    for event in out.events:
        if event.type == "MessageStart":
            pending = {}
        elif event.type == "MessageUpdate":
            slot = pending.setdefault(event.delta.index, {"kind": event.delta.kind, "text": ""})
            assert slot["kind"] == event.delta.kind
            slot["text"] += event.delta.delta
            partial = event.message.content[event.delta.index]  # the message so far
            if slot["kind"] == "text":
                assert partial.text == slot["text"]
            elif slot["kind"] == "thinking":
                assert partial.thinking == slot["text"]
            else:
                assert isinstance(partial, ToolCall)
        elif event.type == "MessageEnd":
            message = event.message
            if not isinstance(message, AssistantMessage):
                assert not pending
                continue
            finished = message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED)
            for index, slot in pending.items():
                block = message.content[index]
                if slot["kind"] == "text":
                    assert isinstance(block, TextContent) and block.text == slot["text"]
                elif slot["kind"] == "thinking":
                    assert isinstance(block, ThinkingContent) and block.thinking == slot["text"]
                else:
                    assert isinstance(block, ToolCall)
                    if finished:
                        assert json.loads(slot["text"]) == block.arguments
            pending = {}


def _check_tool_answers(messages, sent=False):
    """Every call of a toolUse/length reply is answered once, in call order, right after it."""
    for i, message in enumerate(messages):
        if not isinstance(message, AssistantMessage):
            continue
        calls = [b for b in message.content if isinstance(b, ToolCall)]
        if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            if sent:
                assert calls == []  # stripped by the default convert_to_llm
            continue
        answers = messages[i + 1:i + 1 + len(calls)]
        assert [getattr(a, "tool_call_id", None) for a in answers] == [c.id for c in calls]
        assert all(isinstance(a, ToolResultMessage) for a in answers)
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    assert len(answered) == len(set(answered)), "a tool call was answered twice"


def _check_turns(out):
    depth = 0
    for event in out.events:
        if event.type == "TurnStart":
            assert depth == 0
            depth = 1
        elif event.type == "TurnEnd":
            assert depth == 1
            depth = 0
            message = event.message
            position = out.messages.index(message)
            calls = message.tool_calls if message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED) else []
            assert [r.tool_call_id for r in event.tool_results] == [c.id for c in calls]
            assert event.tool_results == out.messages[position + 1:position + 1 + len(calls)]
    assert depth == 0
    assert [e.turn_index for e in out.of("TurnStart")] == list(range(len(out.of("TurnStart"))))


def _check_tool_events(out):
    started: list[str] = []
    ended: list[str] = []
    for event in out.events:
        if event.type == "ToolExecutionStart":
            assert event.tool_call_id not in started
            started.append(event.tool_call_id)
        elif event.type == "ToolExecutionEnd":
            assert event.tool_call_id in started and event.tool_call_id not in ended
            ended.append(event.tool_call_id)
        elif event.type in ("ToolExecutionUpdate", "ProgressMessage"):
            assert event.tool_call_id in started and event.tool_call_id not in ended
    assert sorted(started) == sorted(ended)
