"""Strict decoding of the messages and usage kept in stored sessions (SPEC DATA-2, DATA-7, §13.2 SESS-5).

``phi.types.message_from_json`` fills in what a message lacks (a missing ``stopReason`` reads as
``stop``, a missing ``isError`` as false): right for hand-written histories, wrong for a stored
record, where an aborted reply would come back as a finished one. Here every field DATA-2 lists is
required — a missing one is a :class:`~phi.errors.DecodeError` naming its path — and every key
phi does not model is kept in a :class:`~phi.session.preserve.Overlay` and written back.

Required: ``user {role, content, timestamp}``; ``assistant {role, content, stopReason, model,
provider, usage, timestamp}`` (``error_message`` optional); ``toolResult {role, toolCallId,
toolName, content, isError, timestamp}`` (``details`` optional); ``extension {role, kind, data}``;
blocks ``text {text}``, ``image {data, mimeType}``, ``thinking {thinking}`` (``signature``,
``redacted`` optional), ``toolCall {id, name, arguments}``; usage ``{input, output, cache_read,
cache_write, total_tokens}`` (``reasoning``, phi's, optional: phi-core does not write it).
"""

from __future__ import annotations

from typing import Any

from ..errors import DecodeError
from ..json_values import is_array, is_object
from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    ExtensionMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .preserve import Overlay, Preserved, overlay_of

_MESSAGE_KEYS = {
    "user": frozenset({"role", "content", "timestamp"}),
    "assistant": frozenset({"role", "content", "stopReason", "model", "provider", "usage", "timestamp",
                            "error_message"}),
    "toolResult": frozenset({"role", "toolCallId", "toolName", "content", "isError", "timestamp", "details"}),
    "extension": frozenset({"role", "kind", "data"}),
}
_OMITTED = {"error_message": None, "details": None}  # left out by message_to_json while they hold these
_CONTENT_KEYS = {
    "text": frozenset({"type", "text"}),
    "image": frozenset({"type", "data", "mimeType"}),
    "thinking": frozenset({"type", "thinking", "signature", "redacted"}),
    "toolCall": frozenset({"type", "id", "name", "arguments"}),
}
_CONTENT_OMITTED = {"signature": None, "redacted": False}
_USAGE_REQUIRED = ("input", "output", "cache_read", "cache_write", "total_tokens")
_USAGE_KEYS = frozenset({*_USAGE_REQUIRED, "reasoning"})


def _missing(path: str, name: str, what: str) -> DecodeError:
    return DecodeError(f"{path}.{name}", None, f"{what} (field is missing)")


def _object(data: object, path: str, what: str) -> dict[str, Any]:
    if not is_object(data):
        raise DecodeError(path, data, what)
    return data


def _string(data: dict[str, Any], name: str, path: str) -> str:
    if name not in data:
        raise _missing(path, name, "a string")
    value = data[name]
    if not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string")
    return value


def _opt_string(data: dict[str, Any], name: str, path: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string or null")
    return value


def _count(data: dict[str, Any], name: str, path: str, default: int | None = None) -> int:
    if name not in data and default is not None:
        return default
    if name not in data:
        raise _missing(path, name, "a non-negative integer")
    value = data[name]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DecodeError(f"{path}.{name}", value, "a non-negative integer")
    return value


def _timestamp(data: dict[str, Any], path: str) -> int:
    if "timestamp" not in data:
        raise _missing(path, "timestamp", "an integer (unix milliseconds)")
    value = data["timestamp"]
    if not isinstance(value, int) or isinstance(value, bool):
        raise DecodeError(path + ".timestamp", value, "an integer (unix milliseconds)")
    return value


def _bool(data: dict[str, Any], name: str, path: str) -> bool:
    if name not in data:
        raise _missing(path, name, "a boolean")
    value = data[name]
    if not isinstance(value, bool):
        raise DecodeError(f"{path}.{name}", value, "a boolean")
    return value


# --------------------------------------------------------------------------- usage and content


def usage_from_json(data: object, path: str) -> tuple[Usage, Overlay | None]:
    """A usage object (SPEC DATA-5) and what to write back beside it."""
    data = _object(data, path, "a usage object")
    values = {name: _count(data, name, path) for name in _USAGE_REQUIRED}
    usage = Usage(values["input"], values["output"], _count(data, "reasoning", path, default=0),
                  values["cache_read"], values["cache_write"], values["total_tokens"])
    return usage, overlay_of(data, None, _USAGE_KEYS, {}, {"reasoning": 0})


def content_from_json(data: object, path: str) -> tuple[Content, Overlay | None]:
    """One content block (SPEC DATA-1), strictly."""
    data = _object(data, path, "a content object")
    kind = data.get("type")
    block: Content
    if kind == "text":
        block = TextContent(_string(data, "text", path))
    elif kind == "image":
        block = ImageContent(_string(data, "data", path), _string(data, "mimeType", path))
    elif kind == "thinking":
        redacted = data.get("redacted", False)
        if not isinstance(redacted, bool):
            raise DecodeError(path + ".redacted", redacted, "a boolean")
        block = ThinkingContent(_string(data, "thinking", path), _opt_string(data, "signature", path), redacted)
    elif kind == "toolCall":
        if "arguments" not in data:
            raise _missing(path, "arguments", "an object")
        arguments = _object(data["arguments"], path + ".arguments", "an object")
        block = ToolCall(_string(data, "id", path), _string(data, "name", path), arguments)
    else:
        raise DecodeError(path + ".type", kind, '"text", "image", "thinking" or "toolCall"')
    return block, overlay_of(data, kind, _CONTENT_KEYS[kind], _CONTENT_OMITTED, {})


def _contents(data: dict[str, Any], path: str, children: dict[str, Overlay]) -> list[Content]:
    if "content" not in data:
        raise _missing(path, "content", "a list of content blocks")
    raw = data["content"]
    if not is_array(raw):
        raise DecodeError(path + ".content", raw, "a list of content blocks")
    blocks: list[Content] = []
    for index, item in enumerate(raw):
        block, overlay = content_from_json(item, f"{path}.content[{index}]")
        blocks.append(block)
        if overlay is not None:
            children[f"content.{index}"] = overlay
    return blocks


# --------------------------------------------------------------------------- messages


def message_from_json(data: object, path: str) -> tuple[AgentMessage, Overlay | None]:
    """One message (SPEC DATA-2) with every field required, and what to write back beside it."""
    data = _object(data, path, "a message object")
    role = data.get("role")
    if "role" not in data:
        raise _missing(path, "role", '"user", "assistant", "toolResult" or "extension"')
    children: dict[str, Overlay] = {}
    message: AgentMessage
    if role == "user":
        message = UserMessage(_contents(data, path, children), _timestamp(data, path))
    elif role == "assistant":
        message = _assistant(data, path, children)
    elif role == "toolResult":
        message = ToolResultMessage(_string(data, "toolCallId", path), _string(data, "toolName", path),
                                    _contents(data, path, children), _bool(data, "isError", path),
                                    _timestamp(data, path), data.get("details"))
    elif role == "extension":
        if "data" not in data:
            raise _missing(path, "data", "a JSON value")
        message = ExtensionMessage(_string(data, "kind", path), data["data"])
    else:
        raise DecodeError(path + ".role", role, '"user", "assistant", "toolResult" or "extension"')
    return message, overlay_of(data, role, _MESSAGE_KEYS[role], _OMITTED, {}, children)


def _assistant(data: dict[str, Any], path: str, children: dict[str, Overlay]) -> AssistantMessage:
    if "stopReason" not in data:
        raise _missing(path, "stopReason", "one of " + ", ".join(s.value for s in StopReason))
    try:
        reason = StopReason(data["stopReason"])
    except ValueError:
        raise DecodeError(path + ".stopReason", data["stopReason"],
                          "one of " + ", ".join(s.value for s in StopReason)) from None
    if "usage" not in data:
        raise _missing(path, "usage", "a usage object")
    usage, overlay = usage_from_json(data["usage"], path + ".usage")
    if overlay is not None:
        children["usage"] = overlay
    content = _contents(data, path, children)
    return AssistantMessage(content, reason, _string(data, "model", path), _string(data, "provider", path), usage,
                            _timestamp(data, path), _opt_string(data, "error_message", path))


def messages_from_json(data: dict[str, Any], name: str, path: str, kept: Preserved) -> list[AgentMessage]:
    """The required list ``data[name]`` of messages; overlays go into ``kept``."""
    if name not in data:
        raise _missing(path, name, "a list of messages")
    raw = data[name]
    if not is_array(raw):
        raise DecodeError(f"{path}.{name}", raw, "a list of messages")
    out: list[AgentMessage] = []
    for index, item in enumerate(raw):
        message, overlay = message_from_json(item, f"{path}.{name}[{index}]")
        kept.keep(message, overlay)
        out.append(message)
    return out
