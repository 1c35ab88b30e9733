"""JSON round trip of every message and event type; DecodeError (never KeyError/TypeError) on bad JSON."""

from __future__ import annotations

import json

import pytest

from phi.errors import DecodeError
from phi.events import (
    EVENT_TYPES,
    event_field_names,
    AgentEnd,
    AgentStart,
    InputRejected,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ParallelLoopEnd,
    ParallelLoopStart,
    ProgressMessage,
    StreamDelta,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
    event_from_json,
    event_to_json,
)
from phi.types import (
    AssistantMessage,
    ContinuationKind,
    ExtensionMessage,
    ImageContent,
    RunOutcome,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    TurnTrigger,
    Usage,
    UserMessage,
    message_from_json,
    message_to_json,
)

USAGE = Usage(1, 2, 3, 4, 5, 15)
USER = UserMessage([TextContent("hi"), ImageContent("aGk=", "image/png")], timestamp=1_700_000_000_000)
ASSISTANT = AssistantMessage(
    [ThinkingContent("hmm", "sig"), ThinkingContent("opaque", None, redacted=True), TextContent("answer"),
     ToolCall("t1", "echo", {"x": [1, {"y": None}]})],
    StopReason.TOOL_USE, "m-1", "prov", USAGE, 1_700_000_000_001)
FAILED = AssistantMessage([], StopReason.ERROR, "m", "p", Usage(), 5, error_message="boom")
RESULT = ToolResultMessage("t1", "echo", [TextContent("out")], True, 1_700_000_000_002, details={"code": 1})
EXTENSION = ExtensionMessage("ui", {"nested": [1, 2]})
MESSAGES = [USER, ASSISTANT, FAILED, RESULT, EXTENSION]
TS = 1_700_000_000.123

EVENTS = [
    AgentStart("a", "s", "s.c.1", "p.c.1", ContinuationKind.rerun("tag-1"), TS, {"k": "v"}),
    AgentStart("a", "s", "s.c.2", None, ContinuationKind.default(), TS),
    AgentStart("a", "s", "s.c.3", None, ContinuationKind.branch("b"), TS),
    AgentStart("a", "s", "s.c.4", None, None, TS),
    AgentEnd("s.c.1", MESSAGES, USAGE, TS),
    AgentEnd("s.c.1", [], Usage(), TS, rejection="nope"),
    TurnStart("s.c.1", 3, TurnTrigger.BRANCH, TS),
    TurnEnd("s.c.1", ASSISTANT, USAGE, [RESULT], TS),
    MessageStart("s.c.1", USER),
    MessageUpdate("s.c.1", ASSISTANT, StreamDelta("toolCall", '{"x"', 3)),
    MessageEnd("s.c.1", EXTENSION),
    ToolExecutionStart("s.c.1", "t1", "echo", {"x": 1}),
    ToolExecutionUpdate("s.c.1", "t1", "echo", ToolResult([TextContent("half")], {"p": 0.5})),
    ToolExecutionEnd("s.c.1", "t1", "echo", ToolResult([TextContent("x")], None, "child.1"), True, "child.1"),
    ProgressMessage("s.c.1", "t1", "echo", "working"),
    InputRejected("s.c.1", "bad input"),
    ParallelLoopStart("s", ["s.a.1", "s.b.1"], TS),
    ParallelLoopEnd("s", "s.b.1", 1, USAGE, TS),
    ParallelLoopEnd("s", "s.b.1", 1, USAGE, TS, [AgentEnd("s.a.1", [USER, FAILED], USAGE, TS, outcome=RunOutcome.ERROR)]),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.role)
def test_message_round_trip(message):
    data = json.loads(json.dumps(message_to_json(message)))
    assert message_from_json(data) == message


def test_message_json_shapes():
    assert message_to_json(RESULT)["toolCallId"] == "t1" and message_to_json(RESULT)["isError"] is True
    data = message_to_json(ASSISTANT)
    assert data["stopReason"] == "toolUse" and data["usage"]["cache_read"] == 4
    assert data["content"][0] == {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    assert data["content"][3] == {"type": "toolCall", "id": "t1", "name": "echo", "arguments": {"x": [1, {"y": None}]}}
    assert message_to_json(USER)["content"][1] == {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    assert message_to_json(FAILED)["error_message"] == "boom"
    assert "error_message" not in data
    assert message_to_json(EXTENSION) == {"role": "extension", "kind": "ui", "data": {"nested": [1, 2]}}


def test_every_event_type_is_covered():
    assert {type(e) for e in EVENTS} == set(EVENT_TYPES.values())


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_event_round_trip(event):
    data = json.loads(json.dumps(event_to_json(event)))
    assert data["type"] == event.type
    back = event_from_json(data)
    assert type(back) is type(event)
    for name in event_field_names(type(event)):
        got, want = getattr(back, name), getattr(event, name)
        if name == "timestamp":
            assert abs(got - want) < 0.001
        else:
            assert got == want, name


def test_event_json_shape():
    data = event_to_json(TurnStart("s.c.1", 0, TurnTrigger.USER, 0.0))
    assert data == {"type": "TurnStart", "loop_id": "s.c.1", "turn_index": 0, "triggered_by": "User",
                    "timestamp": "1970-01-01T00:00:00.000Z"}
    assert event_to_json(EVENTS[0])["continuation_kind"] == {"Rerun": {"tag": "tag-1"}}
    assert event_to_json(EVENTS[1])["continuation_kind"] == "Default"


BAD_MESSAGES = [
    ([1, 2], "message"),
    ({"role": "robot"}, "message.role"),
    ({"role": "user"}, "message.content"),
    ({"role": "user", "content": 5}, "message.content"),
    ({"role": "user", "content": [{"type": "video"}]}, "message.content[0].type"),
    ({"role": "user", "content": [{"type": "text"}]}, "message.content[0].text"),
    ({"role": "user", "content": [{"type": "text", "text": 3}]}, "message.content[0].text"),
    ({"role": "user", "content": [], "timestamp": "yesterday"}, "message.timestamp"),
    ({"role": "assistant", "content": [], "stopReason": "tired"}, "message.stopReason"),
    ({"role": "assistant", "content": [], "usage": {"input": -1}}, "message.usage.input"),
    ({"role": "assistant", "content": [], "usage": []}, "message.usage"),
    ({"role": "assistant", "content": [{"type": "toolCall", "id": "t", "name": "n", "arguments": []}]},
     "message.content[0].arguments"),
    ({"role": "assistant", "content": [{"type": "toolCall", "name": "n"}]}, "message.content[0].id"),
    ({"role": "toolResult", "toolName": "x", "content": []}, "message.toolCallId"),
    ({"role": "toolResult", "toolCallId": "t", "toolName": "x", "content": [], "isError": "yes"}, "message.isError"),
    ({"role": "extension"}, "message.kind"),
    ({"role": "user", "content": [{"type": "image", "data": "x"}]}, "message.content[0].mimeType"),
    ({"role": "user", "content": [{"type": "thinking", "thinking": "x", "redacted": 1}]},
     "message.content[0].redacted"),
]


@pytest.mark.parametrize("data,field", BAD_MESSAGES)
def test_malformed_message_raises_decode_error_naming_the_field(data, field):
    with pytest.raises(DecodeError) as info:
        message_from_json(data)
    assert info.value.field == field
    assert field in str(info.value)


BAD_EVENTS = [
    ("nope", "event"),
    ({"type": "Bogus"}, "event.type"),
    ({"type": ["TurnStart"]}, "event.type"),
    ({"type": {"TurnStart": 1}}, "event.type"),
    ({"type": "TurnStart", "loop_id": 5, "turn_index": 0}, "event.loop_id"),
    ({"type": "TurnStart", "loop_id": "l", "turn_index": True}, "event.turn_index"),
    ({"type": "TurnStart", "loop_id": "l", "turn_index": 0, "timestamp": None}, "event.timestamp"),
    ({"type": "MessageStart", "loop_id": "l", "message": None}, "event.message"),
    ({"type": "ToolExecutionEnd", "loop_id": "l", "tool_call_id": "t", "tool_name": "n",
      "result": {"content": []}, "is_error": "no"}, "event.is_error"),
    ({"type": "ParallelLoopStart", "session_id": "s", "loop_ids": ["a", 2]}, "event.loop_ids"),
    ({}, "event.type"),
    ({"type": "TurnStart", "turn_index": 0}, "event.loop_id"),
    ({"type": "TurnStart", "loop_id": "l", "turn_index": 0, "triggered_by": "Robot"}, "event.triggered_by"),
    ({"type": "TurnStart", "loop_id": "l", "turn_index": 0, "timestamp": "not a time"}, "event.timestamp"),
    ({"type": "MessageStart", "loop_id": "l", "message": {"role": "x"}}, "event.message.role"),
    ({"type": "MessageUpdate", "loop_id": "l", "message": {"role": "assistant", "content": []},
      "delta": {"type": "audio"}}, "event.delta"),
    ({"type": "MessageUpdate", "loop_id": "l", "message": {"role": "assistant", "content": []},
      "delta": {"type": "text", "delta": 5}}, "event.delta.delta"),
    ({"type": "AgentEnd", "loop_id": "l", "messages": {}}, "event.messages"),
    ({"type": "AgentEnd", "loop_id": "l", "messages": [{"role": "user", "content": [7]}]},
     "event.messages[0].content[0]"),
    ({"type": "TurnEnd", "loop_id": "l", "message": {"role": "user", "content": []},
      "tool_results": [{"role": "user", "content": []}]}, "event.tool_results[0].role"),
    ({"type": "ToolExecutionEnd", "loop_id": "l", "tool_call_id": "t", "tool_name": "n", "result": 3,
      "is_error": False}, "event.result"),
    ({"type": "AgentStart", "agent_id": "a", "session_id": "s", "loop_id": "l", "continuation_kind": "Sideways"},
     "event.continuation_kind"),
    ({"type": "ParallelLoopEnd", "session_id": "s", "selected_loop_id": "x", "selected_config_index": 0,
      "evaluation_usage": {"output": "many"}}, "event.evaluation_usage.output"),
    ({"type": "ParallelLoopEnd", "session_id": "s", "selected_loop_id": "x", "selected_config_index": 0,
      "unended": [{"type": "TurnStart", "loop_id": "x", "turn_index": 0}]}, "event.unended[0].type"),
    ({"type": "ParallelLoopEnd", "session_id": "s", "selected_loop_id": "x", "selected_config_index": 0,
      "unended": [{"type": "AgentEnd", "loop_id": "x", "messages": [{"role": "robot"}]}]},
     "event.unended[0].messages[0].role"),
]


@pytest.mark.parametrize("data,field", BAD_EVENTS)
def test_malformed_event_raises_decode_error_naming_the_field(data, field):
    with pytest.raises(DecodeError) as info:
        event_from_json(data)
    assert info.value.field == field


# --------------------------------------------------------------------------- fuzz: any field, any JSON value

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
VALID_EVENTS = [json.loads(json.dumps(event_to_json(e))) for e in EVENTS]
VALID_MESSAGES = [json.loads(json.dumps(message_to_json(m))) for m in MESSAGES]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, prefix + (i,))


def _replace(document, path, new):
    if not path:
        return new
    copy = json.loads(json.dumps(document))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


@st.composite
def corrupted(draw, documents):
    document = draw(st.sampled_from(documents))
    path = draw(st.sampled_from(list(_paths(document))))
    return _replace(document, path, draw(JSON_VALUES))


@settings(max_examples=300, deadline=None)
@given(corrupted(VALID_EVENTS))
def test_corrupted_events_decode_or_raise_decode_error(data):
    try:
        event_from_json(data)
    except DecodeError as error:
        assert error.field.startswith("event")


@settings(max_examples=300, deadline=None)
@given(corrupted(VALID_MESSAGES))
def test_corrupted_messages_decode_or_raise_decode_error(data):
    try:
        message_from_json(data)
    except DecodeError as error:
        assert error.field.startswith("message")
