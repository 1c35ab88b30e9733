"""The data model: content blocks, messages, usage, stop reasons and tool results (SPEC §2).

Everything here is a plain dataclass. Objects that have been announced in an event are never
mutated afterwards; build a new one instead. ``to_json``/``from_json`` give exactly the JSON shapes
of SPEC DATA-6 (the same shapes phi-core 0.9 writes), so histories move freely between the two.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Mapping, Union

from .errors import DecodeError
from .json_values import is_array, is_object


def now_ms() -> int:
    """The current time as unix milliseconds, the timestamp unit of every message."""
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- enums (SPEC DATA-4)


class StopReason(str, enum.Enum):
    """Why an assistant message ended (SPEC DATA-4)."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "toolUse"
    ERROR = "error"
    ABORTED = "aborted"


class ThinkingLevel(str, enum.Enum):
    """How much reasoning to ask the model for."""

    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


class QueueMode(str, enum.Enum):
    """How a steering or follow-up queue is read (SPEC LOOP-9)."""

    ONE_AT_A_TIME = "one_at_a_time"
    ALL = "all"


class RunOutcome(str, enum.Enum):
    """Why a run ended (SPEC EVT-9): carried by ``AgentEnd.outcome`` and ``AgentResult.outcome``."""

    COMPLETED = "completed"  # the model answered and nothing was left to do
    ABORTED = "aborted"  # the run was cancelled
    ERROR = "error"  # the model call failed (the last reply has stop reason error)
    LIMIT = "limit"  # an execution limit was reached (LOOP-10)
    REJECTED = "rejected"  # an input filter rejected the prompts (LOOP-2)
    VETOED = "vetoed"  # before_loop or before_turn returned false (LOOP-1, LOOP-15)


class TurnTrigger(str, enum.Enum):
    """What started a turn (SPEC EVT-5)."""

    USER = "User"
    SUB_AGENT = "SubAgent"
    CONTINUATION = "Continuation"
    BRANCH = "Branch"


@dataclass(frozen=True, slots=True)
class ContinuationKind:
    """How a continued loop relates to the one before it: ``default``, ``rerun`` or ``branch``.

    JSON: ``"Default"``, ``{"Rerun": {"tag": ...}}`` or ``{"Branch": {"tag": ...}}``.
    """

    kind: str = "default"
    tag: str | None = None

    KINDS: ClassVar[tuple[str, ...]] = ("default", "rerun", "branch")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(f"ContinuationKind must be one of {self.KINDS}, got {self.kind!r}")

    @classmethod
    def default(cls) -> ContinuationKind:
        return cls("default")

    @classmethod
    def rerun(cls, tag: str | None = None) -> ContinuationKind:
        return cls("rerun", tag or _rfc3339_now())

    @classmethod
    def branch(cls, tag: str | None = None) -> ContinuationKind:
        return cls("branch", tag or _rfc3339_now())

    def to_json(self) -> Any:
        if self.kind == "default":
            return "Default"
        return {self.kind.capitalize(): {"tag": self.tag}}

    @classmethod
    def from_json(cls, data: Any, path: str = "continuation_kind") -> ContinuationKind:
        if data == "Default":
            return cls("default")
        if is_object(data) and len(data) == 1:
            ((name, body),) = data.items()
            if name in ("Rerun", "Branch") and is_object(body):
                return cls(name.lower(), _opt_str(body, "tag", path + "." + name))
        raise DecodeError(path, data, '"Default", {"Rerun": {"tag"}} or {"Branch": {"tag"}}')


def _rfc3339_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --------------------------------------------------------------------------- content (SPEC DATA-1)


@dataclass(slots=True)
class TextContent:
    """A text content block (SPEC DATA-1)."""

    text: str
    type: ClassVar[Literal["text"]] = "text"


@dataclass(slots=True)
class ImageContent:
    """An image content block (SPEC DATA-1): ``data`` is the base64-encoded image and ``mime_type`` its
    media type, e.g. ``image/png`` (``mimeType`` in JSON)."""

    data: str  # base64
    mime_type: str
    type: ClassVar[Literal["image"]] = "image"


@dataclass(slots=True)
class ThinkingContent:
    """Model reasoning. ``signature`` is the provider's opaque proof, replayed on later calls;
    ``redacted`` marks a block whose ``thinking`` is the provider's encrypted payload."""

    thinking: str
    signature: str | None = None
    redacted: bool = False
    type: ClassVar[Literal["thinking"]] = "thinking"


@dataclass(slots=True)
class ToolCall:
    """A tool call in an assistant reply (SPEC DATA-1): ``id`` (which the toolResult answering it repeats),
    the tool's ``name`` and the ``arguments`` object. Streamed argument text that is not a JSON
    object is kept as ``{"__raw_arguments": text}`` (SPEC TOOL-2)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    type: ClassVar[Literal["toolCall"]] = "toolCall"


Content = Union[TextContent, ImageContent, ThinkingContent, ToolCall]


def content_to_json(block: Content) -> dict[str, Any]:
    """One content block in its SPEC DATA-6 JSON shape."""
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolCall):
        return {"type": "toolCall", "id": block.id, "name": block.name, "arguments": block.arguments}
    if isinstance(block, ThinkingContent):
        out: dict[str, Any] = {"type": "thinking", "thinking": block.thinking}
        if block.signature is not None:
            out["signature"] = block.signature
        if block.redacted:
            out["redacted"] = True
        return out
    # checked, not assumed: callers without a type checker pass anything
    if isinstance(block, ImageContent):  # pyright: ignore[reportUnnecessaryIsInstance]
        return {"type": "image", "data": block.data, "mimeType": block.mime_type}
    raise TypeError(f"not a content block: {block!r}")


def content_from_json(data: Any, path: str = "content") -> Content:
    """Decode one content block; raises :class:`DecodeError` naming the bad field."""
    if not is_object(data):
        raise DecodeError(path, data, "a content object")
    kind = data.get("type")
    if kind == "text":
        return TextContent(_str(data, "text", path))
    if kind == "toolCall":
        args = data.get("arguments", {})
        if not is_object(args):
            raise DecodeError(path + ".arguments", args, "an object")
        return ToolCall(_str(data, "id", path), _str(data, "name", path), args)
    if kind == "thinking":
        redacted = data.get("redacted", False)
        if not isinstance(redacted, bool):
            raise DecodeError(path + ".redacted", redacted, "a boolean")
        return ThinkingContent(_str(data, "thinking", path), _opt_str(data, "signature", path), redacted)
    if kind == "image":
        return ImageContent(_str(data, "data", path), _str(data, "mimeType", path))
    raise DecodeError(path + ".type", kind, '"text", "image", "thinking" or "toolCall"')


# --------------------------------------------------------------------------- usage (SPEC DATA-5)


@dataclass(slots=True)
class Usage:
    """Token counts of a model call, or a sum of them (SPEC DATA-5): ``input``, ``output``, ``reasoning``,
    ``cache_read``, ``cache_write`` and ``total_tokens`` as the provider reported them (0 when it
    did not). ``combine`` (or ``+``) sums field-wise."""

    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0

    def combine(self, other: Usage) -> Usage:
        """Field-wise sum (used for per-loop totals and parallel branches)."""
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.reasoning + other.reasoning,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.total_tokens + other.total_tokens,
        )

    __add__ = combine

    def cache_hit_rate(self) -> float:
        """``cache_read / (input + cache_read + cache_write)``; 0.0 when nothing was read."""
        denominator = self.input + self.cache_read + self.cache_write
        return self.cache_read / denominator if denominator else 0.0

    def tokens(self) -> int:
        """The total used for limits and token strategies (SPEC LOOP-10, EVAL-5): ``total_tokens``
        if reported, else input + output + cache reads and writes."""
        return self.total_tokens or (self.input + self.output + self.cache_read + self.cache_write)

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "reasoning": self.reasoning,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "total_tokens": self.total_tokens,
        }

    @classmethod
    def from_json(cls, data: Any, path: str = "usage") -> Usage:
        if not is_object(data):
            raise DecodeError(path, data, "a usage object")
        values: list[int] = []
        for name in ("input", "output", "reasoning", "cache_read", "cache_write", "total_tokens"):
            value = data.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise DecodeError(f"{path}.{name}", value, "a non-negative integer")
            values.append(value)
        return cls(*values)


# --------------------------------------------------------------------------- messages (SPEC DATA-2)


@dataclass(slots=True)
class UserMessage:
    """A user message (SPEC DATA-2): ``content`` blocks (text, images) and a ``timestamp`` in unix
    milliseconds."""

    content: list[Content]
    timestamp: int = field(default_factory=now_ms)
    role: ClassVar[Literal["user"]] = "user"

    @classmethod
    def from_text(cls, text: str) -> UserMessage:
        """A user message with one text block."""
        return cls([TextContent(text)])

    @property
    def text(self) -> str:
        """All text blocks joined (no separator), like ``AssistantMessage.text``."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


@dataclass(slots=True)
class AssistantMessage:
    """A model's reply (SPEC DATA-2): its ``content`` blocks, why it ended (``stop_reason``), the ``model``
    and ``provider`` that wrote it, its ``usage``, a ``timestamp`` in unix milliseconds and, for a
    failed or aborted reply, ``error_message``."""

    content: list[Content] = field(default_factory=list[Content])
    stop_reason: StopReason = StopReason.STOP
    model: str = ""
    provider: str = ""
    usage: Usage = field(default_factory=Usage)
    timestamp: int = field(default_factory=now_ms)
    error_message: str | None = None
    role: ClassVar[Literal["assistant"]] = "assistant"

    @property
    def text(self) -> str:
        """All text blocks joined (no separator)."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The reply's tool calls, in order."""
        return [b for b in self.content if isinstance(b, ToolCall)]


@dataclass(slots=True)
class ToolResultMessage:
    """The result of one tool call as the model receives it (SPEC DATA-2): the ``tool_call_id`` and
    ``tool_name`` it answers, its ``content``, ``is_error``, a ``timestamp`` in unix milliseconds,
    and ``details`` for the application (never sent to a model, SPEC TOOL-12)."""

    tool_call_id: str
    tool_name: str
    content: list[Content]
    is_error: bool = False
    timestamp: int = field(default_factory=now_ms)
    details: Any = None
    role: ClassVar[Literal["toolResult"]] = "toolResult"

    @property
    def text(self) -> str:
        """All text blocks joined (no separator)."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


@dataclass(slots=True)
class ExtensionMessage:
    """Application data kept in the history but never sent to a model (SPEC DATA-3)."""

    kind: str
    data: Any = None
    role: ClassVar[Literal["extension"]] = "extension"

    @property
    def text(self) -> str:
        """``data`` when it is a string, else ``""``: no model reads an extension message, but code
        that joins a history's text can treat every message alike."""
        return self.data if isinstance(self.data, str) else ""


Message = Union[UserMessage, AssistantMessage, ToolResultMessage]
AgentMessage = Union[UserMessage, AssistantMessage, ToolResultMessage, ExtensionMessage]


def message_to_json(message: AgentMessage) -> dict[str, Any]:
    """One message in its SPEC DATA-6 JSON shape."""
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {
            "role": "assistant",
            "content": [content_to_json(b) for b in message.content],
            "stopReason": message.stop_reason.value,
            "model": message.model,
            "provider": message.provider,
            "usage": message.usage.to_json(),
            "timestamp": message.timestamp,
        }
        if message.error_message is not None:
            out["error_message"] = message.error_message
        return out
    if isinstance(message, UserMessage):
        return {
            "role": "user",
            "content": [content_to_json(b) for b in message.content],
            "timestamp": message.timestamp,
        }
    if isinstance(message, ToolResultMessage):
        out = {
            "role": "toolResult",
            "toolCallId": message.tool_call_id,
            "toolName": message.tool_name,
            "content": [content_to_json(b) for b in message.content],
            "isError": message.is_error,
            "timestamp": message.timestamp,
        }
        if message.details is not None:
            out["details"] = message.details
        return out
    # checked, not assumed: callers without a type checker pass anything
    if isinstance(message, ExtensionMessage):  # pyright: ignore[reportUnnecessaryIsInstance]
        return {"role": "extension", "kind": message.kind, "data": message.data}
    raise TypeError(f"not a message: {message!r}")


def message_from_json(data: Any, path: str = "message") -> AgentMessage:
    """Decode one message; raises :class:`DecodeError` naming the bad field."""
    if not is_object(data):
        raise DecodeError(path, data, "a message object")
    role = data.get("role")
    if role == "user":
        return UserMessage(_contents(data, path), _timestamp(data, path))
    if role == "assistant":
        reason = data.get("stopReason", "stop")
        try:
            stop_reason = StopReason(reason)
        except ValueError:
            raise DecodeError(path + ".stopReason", reason, "one of " + ", ".join(s.value for s in StopReason)) from None
        return AssistantMessage(
            _contents(data, path),
            stop_reason,
            _str(data, "model", path, ""),
            _str(data, "provider", path, ""),
            Usage.from_json(data.get("usage", {}), path + ".usage"),
            _timestamp(data, path),
            _opt_str(data, "error_message", path),
        )
    if role == "toolResult":
        is_error = data.get("isError", False)
        if not isinstance(is_error, bool):
            raise DecodeError(path + ".isError", is_error, "a boolean")
        return ToolResultMessage(
            _str(data, "toolCallId", path),
            _str(data, "toolName", path),
            _contents(data, path),
            is_error,
            _timestamp(data, path),
            data.get("details"),
        )
    if role == "extension":
        return ExtensionMessage(_str(data, "kind", path), data.get("data"))
    raise DecodeError(path + ".role", role, '"user", "assistant", "toolResult" or "extension"')


def messages_from_json(data: Any, path: str = "messages") -> list[AgentMessage]:
    """Decode a JSON list of messages (SPEC DATA-6, DATA-7); raises :class:`DecodeError` naming the bad
    field, e.g. ``messages[2].content[0].type``."""
    if not is_array(data):
        raise DecodeError(path, data, "a list of messages")
    return [message_from_json(item, f"{path}[{i}]") for i, item in enumerate(data)]


def is_llm_message(message: AgentMessage) -> bool:
    """True for the roles a model sees (user, assistant, toolResult)."""
    return not isinstance(message, ExtensionMessage)


# --------------------------------------------------------------------------- tools (SPEC §5)


@dataclass(slots=True)
class ToolDefinition:
    """What a model is told about a tool: name, description and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(slots=True)
class ToolResult:
    """What a tool returns. ``details`` is structured metadata for the application, not the model."""

    content: list[Content]
    details: Any = None
    child_loop_id: str | None = None

    @classmethod
    def from_text(cls, text: str, details: Any = None) -> ToolResult:
        return cls([TextContent(text)], details)

    @property
    def text(self) -> str:
        """The text blocks of the result, joined (like a message's ``text``)."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": [content_to_json(b) for b in self.content], "details": self.details}
        if self.child_loop_id is not None:
            out["child_loop_id"] = self.child_loop_id
        return out

    @classmethod
    def from_json(cls, data: Any, path: str = "result") -> ToolResult:
        if not is_object(data):
            raise DecodeError(path, data, "a tool result object")
        return cls(_contents(data, path), data.get("details"), _opt_str(data, "child_loop_id", path))


ToolUpdateFn = Callable[[ToolResult], None]
ProgressFn = Callable[[str], None]


# --------------------------------------------------------------------------- decoding helpers

_MISSING: Any = object()


def _str(data: Mapping[str, Any], name: str, path: str, default: Any = _MISSING) -> str:
    value = data.get(name, default)
    if value is _MISSING:
        raise DecodeError(f"{path}.{name}", None, "a string (field is missing)")
    if not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string")
    return value


def _opt_str(data: Mapping[str, Any], name: str, path: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string or null")
    return value


def _timestamp(data: Mapping[str, Any], path: str) -> int:
    value = data.get("timestamp", 0)
    if not isinstance(value, int) or isinstance(value, bool):
        raise DecodeError(path + ".timestamp", value, "an integer (unix milliseconds)")
    return value


def _contents(data: Mapping[str, Any], path: str) -> list[Content]:
    raw = data.get("content", _MISSING)
    if raw is _MISSING:
        raise DecodeError(path + ".content", None, "a list of content blocks (field is missing)")
    if isinstance(raw, str):  # pi-style shorthand for a single text block
        return [TextContent(raw)]
    if not is_array(raw):
        raise DecodeError(path + ".content", raw, "a list of content blocks")
    return [content_from_json(item, f"{path}.content[{i}]") for i, item in enumerate(raw)]
