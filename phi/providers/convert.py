"""Helpers shared by the request builders of the wire protocols (SPEC PROV-1).

Small, protocol-neutral pieces: which thinking blocks may be replayed, text of tool results,
thinking budgets per level, tool-call id sanitising, and error payloads found inside a stream.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Sequence

from ..json_values import is_object
from ..log import get_logger
from ..types import (
    AssistantMessage,
    Content,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolResultMessage,
    UserMessage,
)
from .base import ErrorKind, ProviderError, StreamConfig, is_context_overflow
from .model_config import ModelConfig

log = get_logger(__name__)

# Anthropic rejects budgets under 1024 tokens, so the seed's 128/512 for minimal/low are raised.
THINKING_BUDGETS: dict[ThinkingLevel, int] = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 1024,
    ThinkingLevel.MEDIUM: 2048,
    ThinkingLevel.HIGH: 8192,
    ThinkingLevel.XHIGH: 16384,
}

EFFORTS: dict[ThinkingLevel, str] = {
    ThinkingLevel.MINIMAL: "low",
    ThinkingLevel.LOW: "low",
    ThinkingLevel.MEDIUM: "medium",
    ThinkingLevel.HIGH: "high",
    ThinkingLevel.XHIGH: "high",
}


def temperature(config: StreamConfig) -> float | None:
    """The temperature to send: none when unset, or when the model refuses a non-default one
    (reasoning models answer 400; see ``ModelConfig.supports("temperature")``)."""
    if config.temperature is None:
        return None
    if not config.model_config.supports("temperature"):
        log.debug("not sending temperature to %s, which does not accept one", config.model_config.id)
        return None
    return config.temperature


def thinking_budget(level: ThinkingLevel, model_config: ModelConfig) -> int:
    """Token budget for a level; ``options["thinking_budgets"]`` ({level: tokens}) overrides."""
    custom: dict[str, Any] = model_config.options.get("thinking_budgets") or {}
    value = custom.get(level.value, custom.get(level))
    return int(value) if value is not None else THINKING_BUDGETS[level]


def effort(level: ThinkingLevel) -> str:
    return EFFORTS[level]


OPAQUE_PREFIX = "phi-opaque:"


def opaque_signature(protocol: str) -> str:
    """The signature that marks a redacted thinking block as an *opaque block* (SPEC DATA-1): a
    content block of a type phi does not model (Anthropic ``compaction``, ``server_tool_use``,
    ``web_search_tool_result``...; Responses output items), kept whole as JSON in ``thinking`` so
    that it survives a save and load (DATA-6) and goes back, verbatim, to the service that sent it
    — only to that one: every other request builder leaves redacted thinking out."""
    return OPAQUE_PREFIX + protocol


def opaque_block(block: ThinkingContent, protocol: str) -> dict[str, Any] | None:
    """The original JSON object of an opaque block of ``protocol`` (None for any other block)."""
    if not (block.redacted and block.signature == OPAQUE_PREFIX + protocol):
        return None
    try:
        value = json.loads(block.thinking)
    except ValueError:
        return None
    return value if is_object(value) and isinstance(value.get("type"), str) else None


def is_opaque(block: ThinkingContent) -> bool:
    return block.redacted and (block.signature or "").startswith(OPAQUE_PREFIX)


SUMMARY_HEAD = "[Summary of the earlier conversation]"


def foreign_summary(block: ThinkingContent) -> str | None:
    """The conversation summary a service wrote into an opaque block, as text for another service
    (SPEC PROV-5), or None. Anthropic's server-side compaction returns a ``compaction`` block whose
    ``content`` is the summary of everything before it; the block itself goes back only to
    Anthropic, but the summary is what the conversation became, so a conversation moved to another
    service keeps it as assistant text at the same place. (A Responses ``compaction`` item carries
    only ``encrypted_content``, which no other service can read: it has no text to hand on.)"""
    if not is_opaque(block):
        return None
    try:
        value = json.loads(block.thinking)
    except ValueError:
        return None
    if not is_object(value) or value.get("type") != "compaction":
        return None
    content = value.get("content")
    return f"{SUMMARY_HEAD}\n{content}" if isinstance(content, str) and has_text(content) else None


def same_service(message: AssistantMessage, model_config: ModelConfig) -> bool:
    """Opaque blocks go back to the service that sent them (any of its models)."""
    return message.provider == model_config.provider


def same_origin(message: AssistantMessage, model_config: ModelConfig) -> bool:
    """Thinking signatures are only valid for the provider and model that produced them."""
    return message.provider == model_config.provider and message.model == model_config.id


def replayable_thinking(block: ThinkingContent, origin_ok: bool) -> bool:
    """Whether a thinking block goes back as thinking (else it is sent as text, or dropped)."""
    return origin_ok and (block.signature is not None or block.redacted) and not is_opaque(block)


def thinking_as_text(block: ThinkingContent) -> str | None:
    """Foreign (or unsigned) reasoning is replayed as plain text; redacted payloads are dropped."""
    if block.redacted or not block.thinking.strip():
        return None
    return block.thinking


def result_text(message: ToolResultMessage) -> str:
    """The text blocks of a tool result, joined by newlines (images are sent separately)."""
    texts = [b.text for b in message.content if isinstance(b, TextContent)]
    return "\n".join(texts) if texts else ("(no output)" if not result_images(message) else "(see attached image)")


def result_images(message: ToolResultMessage) -> list[ImageContent]:
    return [b for b in message.content if isinstance(b, ImageContent)]


def data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


_ID_RE = re.compile(r"[^A-Za-z0-9_-]")
CHAT_TOOL_ID_LIMIT = 40  # Chat Completions: tool_calls[].id and tool_call_id
RESPONSES_TOOL_ID_LIMIT = 64  # Responses: function_call.call_id and function_call_output.call_id
ANTHROPIC_TOOL_ID_LIMIT = 64  # Anthropic tool_use.id and Bedrock toolUseId, also [A-Za-z0-9_-] only


def tool_id_for(call_id: str, limit: int, disallowed: re.Pattern[str] | None = None) -> str:
    """``call_id`` as a service whose ids are at most ``limit`` characters (none matching
    ``disallowed``) accepts it. An id that already fits is sent unchanged; any other is mapped
    deterministically, the same way for the call and for the result that answers it: disallowed
    characters become ``_``, and the id is cut to leave room for ``_`` and 12 hex digits of its
    SHA-256, so two different ids never map to the same one (a conversation moved between services
    carries ids of any length, such as 117 characters into Chat Completions' 40)."""
    cleaned = disallowed.sub("_", call_id) if disallowed is not None else call_id
    if cleaned == call_id and 0 < len(call_id) <= limit:
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = cleaned[: max(0, limit - len(digest) - 1)] or "call"
    return f"{head}_{digest}"


def safe_tool_id(call_id: str) -> str:
    """Anthropic/Bedrock accept ``[A-Za-z0-9_-]{1,64}``; ids from other services are mapped."""
    return tool_id_for(call_id, ANTHROPIC_TOOL_ID_LIMIT, _ID_RE)


def chat_tool_id(call_id: str) -> str:
    """A tool-call id for Chat Completions (at most 40 characters)."""
    return tool_id_for(call_id, CHAT_TOOL_ID_LIMIT)


def responses_tool_id(call_id: str) -> str:
    """A ``call_id`` for the Responses API (at most 64 characters)."""
    return tool_id_for(call_id, RESPONSES_TOOL_ID_LIMIT)


def append_turn(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]], key: str = "content") -> None:
    """Append a turn of ``role``, or extend the last turn when it has the same role (for protocols
    that require roles to alternate). Empty turns are skipped."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(blocks)
    else:
        turns.append({"role": role, key: list(blocks)})


def non_empty_text(content: list[Content]) -> bool:
    return any(isinstance(b, TextContent) and b.text for b in content)


TOOL_CHOICE_MODES = ("auto", "none", "required")


def tool_choice(config: StreamConfig) -> str | None:
    """The call's ``tool_choice``, checked (SPEC §7, PROV-3): ``None`` (send nothing: the service
    decides, which is "auto"), ``"auto"``, ``"none"``, ``"required"`` or the name of one of the
    call's tools. Without tools, "auto" and "none" mean nothing is sent; "required" or a name is
    an ``api`` error, as is a name that is not among the tools — before anything is sent."""
    choice = config.tool_choice
    if choice is None:
        return None
    if not isinstance(choice, str) or not choice:  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
        raise ProviderError(ErrorKind.API, f"tool_choice must be 'auto', 'none', 'required' or a tool name, "
                                           f"not {choice!r}")
    names = [tool.name for tool in config.tools]
    if not names:
        if choice in ("auto", "none"):
            return None
        raise ProviderError(ErrorKind.API, f"tool_choice {choice!r} needs tools, and this call has none")
    if choice in TOOL_CHOICE_MODES or choice in names:
        return choice
    raise ProviderError(ErrorKind.API, f"tool_choice names a tool {choice!r} that is not among this call's tools "
                                       f"({', '.join(names)}); use one of them or 'auto', 'none', 'required'")


def parallel_tool_calls(config: StreamConfig) -> bool | None:
    """The call's ``parallel_tool_calls``, or ``None`` when it is unset or there are no tools."""
    value = config.parallel_tool_calls
    if value is None or not config.tools:
        return None
    if not isinstance(value, bool):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
        raise ProviderError(ErrorKind.API, f"parallel_tool_calls must be True, False or None, not {value!r}")
    return value


def forces_tool(choice: str | None) -> bool:
    """Whether ``choice`` makes the model call a tool ("required" or a name)."""
    return choice is not None and choice not in ("auto", "none")


def has_text(text: str) -> bool:
    """Whether ``text`` has a character other than whitespace. Anthropic and Bedrock answer 400 to a
    text block without one (on every later call, since the history keeps it), so their request
    builders leave such blocks out; the history itself is not changed."""
    return bool(text) and not text.isspace()


def check_last_message_sent(messages: Sequence[Message], sent_last: bool, service: str) -> None:
    """Raise a clear ``api`` error when the conversation ends with a user message that had nothing
    but whitespace (so nothing of it could be sent): the call would otherwise go out ending with
    the previous assistant turn, which the service reads as a reply to continue."""
    if messages and isinstance(messages[-1], UserMessage) and not sent_last:
        raise ProviderError(ErrorKind.API, f"the last user message has no text other than whitespace, which "
                                           f"{service} refuses; send a message with some text")


def error_from_payload(error: object, default_kind: ErrorKind = ErrorKind.API) -> ProviderError:
    """Classify an ``{"error": ...}`` object found inside a stream (OpenAI-style or Google-style)."""
    if not is_object(error):
        return ProviderError(default_kind, str(error)[:500] or "stream reported an error")
    message = str(error.get("message") or error.get("type") or error.get("code") or "stream reported an error")
    status = None
    for key in ("status_code", "code", "status"):
        value = error.get(key)
        if isinstance(value, int) and 100 <= value <= 599:
            status = value
            break
    code = " ".join(str(error.get(k, "")) for k in ("code", "type", "status")).lower()
    body = json.dumps({"error": error})
    if status is not None:
        classified = ProviderError.classify(status, body)
        classified.message = message
        return classified
    if is_context_overflow(None, message) or "context_length" in code:
        kind = ErrorKind.CONTEXT_OVERFLOW
    elif "rate_limit" in code or "resource_exhausted" in code or "throttl" in code:
        kind = ErrorKind.RATE_LIMITED
    elif any(word in code for word in ("overloaded", "server_error", "unavailable", "internal", "api_error")):
        kind = ErrorKind.NETWORK
    elif any(word in code for word in ("auth", "permission", "unauthenticated")):
        kind = ErrorKind.AUTH
    else:
        kind = default_kind
    return ProviderError(kind, message, body=body[:4000])
