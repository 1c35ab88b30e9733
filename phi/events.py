"""Agent events: what a loop tells the application, in order, while it runs (SPEC §3).

Each event is a small dataclass; ``type`` is its PascalCase variant name. Every variant except
``AgentStart`` and the parallel pair carries ``loop_id``. ``event_to_json``/``event_from_json`` give
the SPEC §3.3 JSON shape: ``{"type": "TurnStart", "loop_id": ..., ...}`` with snake_case fields.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable, ClassVar, Union, get_args

from .errors import DecodeError
from .types import (
    AgentMessage,
    ContinuationKind,
    ToolResult,
    ToolResultMessage,
    TurnTrigger,
    Usage,
    message_from_json,
    message_to_json,
)


@dataclass(slots=True)
class StreamDelta:
    """One piece of a streamed assistant message: ``kind`` is ``text``, ``thinking`` or
    ``toolCall`` (argument JSON text); ``index`` is the content block it extends."""

    kind: str
    delta: str
    index: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "delta": self.delta, "index": self.index}

    @classmethod
    def from_json(cls, data: Any, path: str = "delta") -> StreamDelta:
        if not isinstance(data, dict) or data.get("type") not in ("text", "thinking", "toolCall"):
            raise DecodeError(path, data, '{"type": "text"|"thinking"|"toolCall", "delta", "index"}')
        delta, index = data.get("delta", ""), data.get("index", 0)
        if not isinstance(delta, str):
            raise DecodeError(path + ".delta", delta, "a string")
        if not isinstance(index, int):
            raise DecodeError(path + ".index", index, "an integer")
        return cls(data["type"], delta, index)


def _now() -> float:
    return time.time()


@dataclass(slots=True)
class AgentStart:
    agent_id: str
    session_id: str
    loop_id: str
    parent_loop_id: str | None = None
    continuation_kind: ContinuationKind | None = None
    timestamp: float = field(default_factory=_now)
    metadata: Any = None
    type: ClassVar[str] = "AgentStart"


@dataclass(slots=True)
class AgentEnd:
    loop_id: str
    messages: list[AgentMessage]
    usage: Usage = field(default_factory=Usage)
    timestamp: float = field(default_factory=_now)
    rejection: str | None = None
    type: ClassVar[str] = "AgentEnd"


@dataclass(slots=True)
class TurnStart:
    loop_id: str
    turn_index: int
    triggered_by: TurnTrigger = TurnTrigger.USER
    timestamp: float = field(default_factory=_now)
    type: ClassVar[str] = "TurnStart"


@dataclass(slots=True)
class TurnEnd:
    loop_id: str
    message: AgentMessage
    usage: Usage = field(default_factory=Usage)
    tool_results: list[ToolResultMessage] = field(default_factory=list)
    timestamp: float = field(default_factory=_now)
    type: ClassVar[str] = "TurnEnd"


@dataclass(slots=True)
class MessageStart:
    loop_id: str
    message: AgentMessage
    type: ClassVar[str] = "MessageStart"


@dataclass(slots=True)
class MessageUpdate:
    loop_id: str
    message: AgentMessage
    delta: StreamDelta
    type: ClassVar[str] = "MessageUpdate"


@dataclass(slots=True)
class MessageEnd:
    loop_id: str
    message: AgentMessage
    type: ClassVar[str] = "MessageEnd"


@dataclass(slots=True)
class ToolExecutionStart:
    loop_id: str
    tool_call_id: str
    tool_name: str
    args: Any
    type: ClassVar[str] = "ToolExecutionStart"


@dataclass(slots=True)
class ToolExecutionUpdate:
    loop_id: str
    tool_call_id: str
    tool_name: str
    partial_result: ToolResult
    type: ClassVar[str] = "ToolExecutionUpdate"


@dataclass(slots=True)
class ToolExecutionEnd:
    loop_id: str
    tool_call_id: str
    tool_name: str
    result: ToolResult
    is_error: bool
    child_loop_id: str | None = None
    type: ClassVar[str] = "ToolExecutionEnd"


@dataclass(slots=True)
class ProgressMessage:
    loop_id: str
    tool_call_id: str
    tool_name: str
    text: str
    type: ClassVar[str] = "ProgressMessage"


@dataclass(slots=True)
class InputRejected:
    loop_id: str
    reason: str
    type: ClassVar[str] = "InputRejected"


@dataclass(slots=True)
class ParallelLoopStart:
    session_id: str
    loop_ids: list[str]
    timestamp: float = field(default_factory=_now)
    type: ClassVar[str] = "ParallelLoopStart"


@dataclass(slots=True)
class ParallelLoopEnd:
    session_id: str
    selected_loop_id: str
    selected_config_index: int
    evaluation_usage: Usage = field(default_factory=Usage)
    timestamp: float = field(default_factory=_now)
    type: ClassVar[str] = "ParallelLoopEnd"


AgentEvent = Union[
    AgentStart,
    AgentEnd,
    TurnStart,
    TurnEnd,
    MessageStart,
    MessageUpdate,
    MessageEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolExecutionEnd,
    ProgressMessage,
    InputRejected,
    ParallelLoopStart,
    ParallelLoopEnd,
]

EVENT_TYPES: dict[str, type] = {cls.type: cls for cls in get_args(AgentEvent)}

EventSink = Callable[[Any], None]


# --------------------------------------------------------------------------- JSON (SPEC §3.3)


def format_timestamp(seconds: float) -> str:
    """RFC 3339 UTC with milliseconds, e.g. ``2026-01-02T03:04:05.678Z``."""
    moment = _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp(text: Any, path: str) -> float:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        raise DecodeError(path, text, "an RFC 3339 timestamp")
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise DecodeError(path, text, "an RFC 3339 timestamp") from None


def _turn_trigger(value: Any, path: str) -> TurnTrigger:
    try:
        return TurnTrigger(value)
    except ValueError:
        raise DecodeError(path, value, "one of " + ", ".join(t.value for t in TurnTrigger)) from None


def _tool_results(value: Any, path: str) -> list[ToolResultMessage]:
    if not isinstance(value, list):
        raise DecodeError(path, value, "a list of toolResult messages")
    out = []
    for i, item in enumerate(value):
        message = message_from_json(item, f"{path}[{i}]")
        if not isinstance(message, ToolResultMessage):
            raise DecodeError(f"{path}[{i}].role", item.get("role"), '"toolResult"')
        out.append(message)
    return out


def _messages(value: Any, path: str) -> list[AgentMessage]:
    if not isinstance(value, list):
        raise DecodeError(path, value, "a list of messages")
    return [message_from_json(item, f"{path}[{i}]") for i, item in enumerate(value)]


# field name -> (encode, decode(value, path))
_CODECS: dict[str, tuple[Callable[[Any], Any], Callable[[Any, str], Any]]] = {
    "timestamp": (format_timestamp, parse_timestamp),
    "message": (message_to_json, message_from_json),
    "messages": (lambda ms: [message_to_json(m) for m in ms], _messages),
    "tool_results": (lambda ms: [message_to_json(m) for m in ms], _tool_results),
    "usage": (Usage.to_json, Usage.from_json),
    "evaluation_usage": (Usage.to_json, Usage.from_json),
    "partial_result": (ToolResult.to_json, ToolResult.from_json),
    "result": (ToolResult.to_json, ToolResult.from_json),
    "delta": (StreamDelta.to_json, StreamDelta.from_json),
    "triggered_by": (lambda t: t.value, _turn_trigger),
    "continuation_kind": (lambda k: k.to_json(), ContinuationKind.from_json),
}


def event_to_json(event: AgentEvent) -> dict[str, Any]:
    """An event as a JSON-ready dict (SPEC §3.3)."""
    out: dict[str, Any] = {"type": event.type}
    for f in fields(event):  # type: ignore[arg-type]
        value = getattr(event, f.name)
        codec = _CODECS.get(f.name)
        out[f.name] = codec[0](value) if codec is not None and value is not None else value
    return out


def event_from_json(data: Any) -> AgentEvent:
    """Decode an event; raises :class:`DecodeError` naming the bad field."""
    if not isinstance(data, dict):
        raise DecodeError("event", data, "an event object")
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise DecodeError("event.type", kind, "one of " + ", ".join(EVENT_TYPES))
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        path = f"event.{f.name}"
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise DecodeError(path, None, f"a value (required by {cls.type})")
            continue
        value = data[f.name]
        annotation = str(f.type)
        if value is None:
            if "None" not in annotation and annotation != "Any":
                raise DecodeError(path, None, f"a value (required by {cls.type})")
            kwargs[f.name] = None
            continue
        codec = _CODECS.get(f.name)
        if codec is not None:
            kwargs[f.name] = codec[1](value, path)
            continue
        _check_plain(annotation.replace(" | None", ""), value, path)
        kwargs[f.name] = value
    return cls(**kwargs)


def _check_plain(annotation: str, value: Any, path: str) -> None:
    """Type-check a field without a codec (str, int, bool, list[str]); ``Any`` passes."""
    if annotation == "str":
        ok = isinstance(value, str)
    elif annotation == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation == "bool":
        ok = isinstance(value, bool)
    elif annotation == "list[str]":
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    else:
        return
    if not ok:
        raise DecodeError(path, value, f"a value of type {annotation}")
