"""Agent events: what a loop tells the application, in order, while it runs (SPEC §3).

Each event is a small dataclass; ``type`` is its PascalCase variant name. Every variant except
``AgentStart`` and the parallel pair carries ``loop_id``. ``event_to_json``/``event_from_json`` give
the SPEC EVT-1 JSON shape: ``{"type": "TurnStart", "loop_id": ..., ...}`` with snake_case fields.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, Callable, ClassVar, Literal, Union, get_args

from .errors import DecodeError
from .json_values import is_array, is_object
from .types import (
    AgentMessage,
    AssistantMessage,
    ContinuationKind,
    RunOutcome,
    TextContent,
    ThinkingContent,
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
        if not is_object(data) or data.get("type") not in ("text", "thinking", "toolCall"):
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
    """The first event of a run (SPEC EVT-2, EVT-3): who runs it (``agent_id``, ``session_id``), its
    ``loop_id``, the loop it continues or was spawned from (``parent_loop_id``), how it continues
    (``continuation_kind``, None for ``agent_loop``) and the configured ``metadata``."""

    agent_id: str
    session_id: str
    loop_id: str
    parent_loop_id: str | None = None
    continuation_kind: ContinuationKind | None = None
    timestamp: float = field(default_factory=_now)
    metadata: Any = None
    type: ClassVar[Literal["AgentStart"]] = "AgentStart"


@dataclass(slots=True)
class AgentEnd:
    """The last event of a run (SPEC EVT-3, EVT-4, EVT-9): ``messages`` are the messages the run appended
    (its return value), ``usage`` their summed usage (LOOP-16), ``outcome`` why it ended, and
    ``rejection`` the reason when an input filter rejected the prompts (LOOP-2)."""

    loop_id: str
    messages: list[AgentMessage]
    usage: Usage = field(default_factory=Usage)
    timestamp: float = field(default_factory=_now)
    rejection: str | None = None
    outcome: RunOutcome = RunOutcome.COMPLETED
    type: ClassVar[Literal["AgentEnd"]] = "AgentEnd"


@dataclass(slots=True)
class TurnStart:
    """Emitted when a turn begins, before its model call (SPEC EVT-5, LOOP-4): ``turn_index`` counts from 0
    within the run and ``triggered_by`` says what started the turn."""

    loop_id: str
    turn_index: int
    triggered_by: TurnTrigger = TurnTrigger.USER
    timestamp: float = field(default_factory=_now)
    type: ClassVar[Literal["TurnStart"]] = "TurnStart"


@dataclass(slots=True)
class TurnEnd:
    """Emitted when a turn is over (SPEC EVT-8): ``message`` is the turn's assistant reply, ``usage`` its
    usage and ``tool_results`` the turn's toolResult messages, in call order."""

    loop_id: str
    message: AgentMessage
    usage: Usage = field(default_factory=Usage)
    tool_results: list[ToolResultMessage] = field(default_factory=list[ToolResultMessage])
    timestamp: float = field(default_factory=_now)
    type: ClassVar[Literal["TurnEnd"]] = "TurnEnd"


@dataclass(slots=True)
class MessageStart:
    """Announces a message joining the context (SPEC EVT-4, EVT-7). An assistant reply is announced with
    its first streamed delta (``message`` is then the reply so far); ``MessageEnd`` always follows."""

    loop_id: str
    message: AgentMessage
    type: ClassVar[Literal["MessageStart"]] = "MessageStart"


class MessageUpdate:
    """One delta of a streaming assistant message and the message so far (SPEC EVT-6).

    ``MessageUpdate(loop_id, message, delta)``. Updates made by the loop are cheap: they keep only
    their own delta text and share a :class:`UpdateSegment` with the other updates of the same
    content block; ``message`` is assembled from those deltas when it is first read. So a reply
    streamed in N deltas costs O(N) memory even when nobody reads the events, instead of one full
    copy of the message per delta.
    """

    __slots__ = ("_segment", "_text", "_prev")
    type: ClassVar[Literal["MessageUpdate"]] = "MessageUpdate"

    def __init__(self, loop_id: str, message: AgentMessage, delta: StreamDelta) -> None:
        self._segment: _FixedSegment | UpdateSegment = _FixedSegment(loop_id, message, delta.kind, delta.index)
        self._text = delta.delta
        self._prev: MessageUpdate | None = None

    @classmethod
    def chained(cls, segment: UpdateSegment, text: str, prev: MessageUpdate | None) -> MessageUpdate:
        """The next update of ``segment`` (``prev``: the one before it in the segment, or None)."""
        update = object.__new__(cls)
        update._segment, update._text, update._prev = segment, text, prev
        return update

    @property
    def loop_id(self) -> str:
        return self._segment.loop_id

    @property
    def delta(self) -> StreamDelta:
        segment = self._segment
        return StreamDelta(segment.kind, self._text, segment.index)

    @property
    def message(self) -> AgentMessage:
        """A snapshot of the message up to and including this delta."""
        return self._segment.message_at(self)

    def texts_back(self) -> list[str]:
        """The delta texts of this update's segment up to this one, newest first."""
        pieces: list[str] = []
        node: MessageUpdate | None = self
        while node is not None:
            pieces.append(node._text)
            node = node._prev
        return pieces

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageUpdate):
            return NotImplemented
        return (self.loop_id, self.delta, self.message) == (other.loop_id, other.delta, other.message)

    __hash__ = None  # type: ignore[assignment]  # equal by value, so unhashable (like the dataclass events)

    def __repr__(self) -> str:
        return f"MessageUpdate(loop_id={self.loop_id!r}, delta={self.delta!r})"


class _FixedSegment:
    """The segment of an update made from a complete message (decoded JSON, application code)."""

    __slots__ = ("loop_id", "message", "kind", "index")

    def __init__(self, loop_id: str, message: AgentMessage, kind: str, index: int) -> None:
        self.loop_id, self.message, self.kind, self.index = loop_id, message, kind, index

    def message_at(self, update: MessageUpdate) -> AgentMessage:
        return self.message


class UpdateSegment:
    """What the updates of one streamed content block share.

    ``base`` is the message when the block's first delta arrived and ``prefix`` the block's text
    before that delta; the snapshot at a later update is ``base`` with the block's text replaced by
    ``prefix`` + the deltas of the segment up to that update. The last snapshot built is kept, so
    reading the newest event's message twice costs nothing.
    """

    __slots__ = ("loop_id", "kind", "index", "base", "prefix", "_last_update", "_last_message")

    def __init__(self, loop_id: str, kind: str, index: int, base: AssistantMessage, prefix: str) -> None:
        self.loop_id, self.kind, self.index, self.base, self.prefix = loop_id, kind, index, base, prefix
        self._last_update: MessageUpdate | None = None
        self._last_message: AssistantMessage | None = None

    @classmethod
    def start(cls, loop_id: str, kind: str, index: int, partial: AssistantMessage, delta: str) -> UpdateSegment | None:
        """A segment for a block whose first delta is ``delta``; None if ``partial`` does not end that
        block with ``delta`` (then each update must carry its own snapshot)."""
        if not 0 <= index < len(partial.content):
            return None
        block = partial.content[index]
        if kind == "toolCall":
            return cls(loop_id, kind, index, partial, "")  # argument text is not part of the snapshot
        text = block.text if kind == "text" and type(block) is TextContent else \
            block.thinking if kind == "thinking" and type(block) is ThinkingContent else None
        if text is None or not text.endswith(delta):
            return None
        return cls(loop_id, kind, index, partial, text[:len(text) - len(delta)])

    def message_at(self, update: MessageUpdate) -> AgentMessage:
        if update is self._last_update and self._last_message is not None:
            return self._last_message
        base = self.base
        content = list(base.content)
        if self.kind != "toolCall":
            pieces = update.texts_back()
            pieces.append(self.prefix)
            text = "".join(reversed(pieces))
            block = content[self.index]
            if isinstance(block, ThinkingContent):
                content[self.index] = ThinkingContent(text, block.signature, block.redacted)
            else:  # start() made this segment for a text block or a thinking block only
                content[self.index] = TextContent(text)
        message = AssistantMessage(content, base.stop_reason, base.model, base.provider, base.usage, base.timestamp,
                                   base.error_message)
        self._last_update, self._last_message = update, message
        return message


@dataclass(slots=True)
class MessageEnd:
    """Closes the announcement of a message (SPEC EVT-4, EVT-6): ``message`` is the complete message as it
    was appended to the context."""

    loop_id: str
    message: AgentMessage
    type: ClassVar[Literal["MessageEnd"]] = "MessageEnd"


@dataclass(slots=True)
class ToolExecutionStart:
    """Emitted when a tool call is about to run, after ``before_tool_execution`` (SPEC TOOL-4): the
    call's id, the tool's name and the call's arguments (``args``)."""

    loop_id: str
    tool_call_id: str
    tool_name: str
    args: Any
    type: ClassVar[Literal["ToolExecutionStart"]] = "ToolExecutionStart"


@dataclass(slots=True)
class ToolExecutionUpdate:
    """A partial result a running tool reported through ``ctx.update`` (SPEC TOOL-10); it falls between
    its call's ``ToolExecutionStart`` and ``ToolExecutionEnd``."""

    loop_id: str
    tool_call_id: str
    tool_name: str
    partial_result: ToolResult
    type: ClassVar[Literal["ToolExecutionUpdate"]] = "ToolExecutionUpdate"


@dataclass(slots=True)
class ToolExecutionEnd:
    """Emitted when a tool call has its result (SPEC TOOL-4, TOOL-12), in completion order in parallel
    mode: the ``result``, whether it ``is_error``, and the sub-agent's loop id (``child_loop_id``)
    when the tool ran one."""

    loop_id: str
    tool_call_id: str
    tool_name: str
    result: ToolResult
    is_error: bool
    child_loop_id: str | None = None
    type: ClassVar[Literal["ToolExecutionEnd"]] = "ToolExecutionEnd"


@dataclass(slots=True)
class ProgressMessage:
    """User-facing status text from a running tool's ``ctx.progress`` (SPEC TOOL-10, SUB-2); the LLM judge
    of a parallel run also reports through it (SPEC EVAL-6), with an empty ``tool_call_id``."""

    loop_id: str
    tool_call_id: str
    tool_name: str
    text: str
    type: ClassVar[Literal["ProgressMessage"]] = "ProgressMessage"


@dataclass(slots=True)
class InputRejected:
    """Emitted when an input filter rejects the prompts (SPEC LOOP-2), right before ``AgentEnd``;
    ``reason`` is the filter's text."""

    loop_id: str
    reason: str
    type: ClassVar[Literal["InputRejected"]] = "InputRejected"


@dataclass(slots=True)
class ParallelLoopStart:
    """Opens a parallel run, before any branch event (SPEC EVAL-1): the base ``session_id`` and the
    branches' ``loop_ids``, one per config. It has no ``loop_id`` of its own (EVT-2)."""

    session_id: str
    loop_ids: list[str]
    timestamp: float = field(default_factory=_now)
    type: ClassVar[Literal["ParallelLoopStart"]] = "ParallelLoopStart"


@dataclass(slots=True)
class ParallelLoopEnd:
    """Closes a parallel run once its strategy chose a branch (SPEC EVAL-1): the winner's loop id and
    config index, and ``evaluation_usage``, what choosing cost (e.g. an LLM judge's calls).
    ``unended``: how each branch ended that emitted no ``AgentEnd`` of its own — it raised, its
    worker was lost, or its executor failed it before it started (EVAL-8) — as the ``AgentEnd`` it
    would have emitted (outcome ``error``, its new messages, a lost branch's final error reply saying
    why), so a session recorder records it whole (SESS-3). It is not part of the event's JSON form
    (the conformance schema's): a recorder fed decoded events ends such a branch without them."""

    session_id: str
    selected_loop_id: str
    selected_config_index: int
    evaluation_usage: Usage = field(default_factory=Usage)
    timestamp: float = field(default_factory=_now)
    unended: list[AgentEnd] = field(default_factory=list[AgentEnd])
    type: ClassVar[Literal["ParallelLoopEnd"]] = "ParallelLoopEnd"


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

EVENT_TYPES: dict[str, type[AgentEvent]] = {cls.type: cls for cls in get_args(AgentEvent)}

EventSink = Callable[[AgentEvent], None]


# --------------------------------------------------------------------------- JSON (SPEC EVT-1)


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


def _tool_results(value: Any, path: str) -> list[ToolResultMessage]:
    if not is_array(value):
        raise DecodeError(path, value, "a list of toolResult messages")
    out: list[ToolResultMessage] = []
    for i, item in enumerate(value):
        message = message_from_json(item, f"{path}[{i}]")
        if not isinstance(message, ToolResultMessage):
            raise DecodeError(f"{path}[{i}].role", item.get("role"), '"toolResult"')
        out.append(message)
    return out


def _messages(value: Any, path: str) -> list[AgentMessage]:
    if not is_array(value):
        raise DecodeError(path, value, "a list of messages")
    return [message_from_json(item, f"{path}[{i}]") for i, item in enumerate(value)]


def _agent_ends(value: Any, path: str) -> list[AgentEnd]:
    if not is_array(value):
        raise DecodeError(path, value, "a list of AgentEnd events")
    out: list[AgentEnd] = []
    for i, item in enumerate(value):
        if not is_object(item) or item.get("type") != "AgentEnd":
            raise DecodeError(f"{path}[{i}].type", item.get("type") if is_object(item) else item,
                              '"AgentEnd"')
        try:
            event = event_from_json(item)
        except DecodeError as exc:  # named from the outer event: event.unended[0].messages...
            raise DecodeError(f"{path}[{i}]{exc.field[len('event'):]}", exc.value, exc.expected) from None
        assert isinstance(event, AgentEnd)
        out.append(event)
    return out


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
    "triggered_by": (lambda t: t.value, lambda value, path: _enum(TurnTrigger, value, path)),
    "continuation_kind": (lambda k: k.to_json(), ContinuationKind.from_json),
    "outcome": (lambda o: o.value, lambda value, path: _enum(RunOutcome, value, path)),
    "unended": (lambda ends: [event_to_json(e) for e in ends], _agent_ends),
}

# Field names of each event in JSON order (MessageUpdate is not a dataclass: see its docstring).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {MessageUpdate: ("loop_id", "message", "delta")}


# Fields an event carries only in the process that made it, never in its JSON form (the conformance
# schema's shape, SPEC EVT-1): ParallelLoopEnd.unended is for a recorder fed the event directly.
_IN_PROCESS_FIELDS = frozenset({"unended"})


def event_field_names(cls: type) -> tuple[str, ...]:
    """The JSON field names of an event class, in order (``type`` not included)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls) if f.name not in _IN_PROCESS_FIELDS)
    return names


def _enum(kind: Any, value: Any, path: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise DecodeError(path, value, "one of " + ", ".join(item.value for item in kind)) from None


def event_to_json(event: AgentEvent) -> dict[str, Any]:
    """An event as a JSON-ready dict (SPEC EVT-1)."""
    out: dict[str, Any] = {"type": event.type}
    for name in event_field_names(type(event)):
        value = getattr(event, name)
        codec = _CODECS.get(name)
        out[name] = codec[0](value) if codec is not None and value is not None else value
    return out


def event_from_json(data: Any) -> AgentEvent:
    """Decode an event; raises :class:`DecodeError` naming the bad field."""
    if not is_object(data):
        raise DecodeError("event", data, "an event object")
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise DecodeError("event.type", kind, "one of " + ", ".join(EVENT_TYPES))
    if cls is MessageUpdate:
        for name in ("loop_id", "message", "delta"):
            if data.get(name) is None:
                raise DecodeError(f"event.{name}", data.get(name), "a value (required by MessageUpdate)")
        if not isinstance(data["loop_id"], str):
            raise DecodeError("event.loop_id", data["loop_id"], "a value of type str")
        return MessageUpdate(data["loop_id"], message_from_json(data["message"], "event.message"),
                             StreamDelta.from_json(data["delta"], "event.delta"))
    kwargs: dict[str, Any] = {}
    for f in fields(cls) if is_dataclass(cls) else ():
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
    event: AgentEvent = cls(**kwargs)
    return event


def _check_plain(annotation: str, value: Any, path: str) -> None:
    """Type-check a field without a codec (str, int, bool, list[str]); ``Any`` passes."""
    if annotation == "str":
        ok = isinstance(value, str)
    elif annotation == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation == "bool":
        ok = isinstance(value, bool)
    elif annotation == "list[str]":
        ok = is_array(value) and all(isinstance(item, str) for item in value)
    else:
        return
    if not ok:
        raise DecodeError(path, value, f"a value of type {annotation}")
