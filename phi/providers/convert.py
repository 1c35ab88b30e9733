"""Helpers shared by the request builders of the wire protocols (SPEC PROV-1).

Small, protocol-neutral pieces: which thinking blocks may be replayed, text of tool results,
thinking budgets per level, tool-call id sanitising, and error payloads found inside a stream.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..log import get_logger
from ..types import (
    AssistantMessage,
    Content,
    ImageContent,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolResultMessage,
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
    custom = model_config.options.get("thinking_budgets") or {}
    value = custom.get(level.value, custom.get(level))
    return int(value) if value is not None else THINKING_BUDGETS[level]


def effort(level: ThinkingLevel) -> str:
    return EFFORTS[level]


def same_origin(message: AssistantMessage, model_config: ModelConfig) -> bool:
    """Thinking signatures are only valid for the provider and model that produced them."""
    return message.provider == model_config.provider and message.model == model_config.id


def replayable_thinking(block: ThinkingContent, origin_ok: bool) -> bool:
    """Whether a thinking block goes back as thinking (else it is sent as text, or dropped)."""
    return origin_ok and (block.signature is not None or block.redacted)


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


def safe_tool_id(call_id: str) -> str:
    """Anthropic/Bedrock accept ``[A-Za-z0-9_-]{1,64}``; ids from other services are mapped."""
    cleaned = _ID_RE.sub("_", call_id)[:64]
    return cleaned or "call"


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


def error_from_payload(error: object, default_kind: ErrorKind = ErrorKind.API) -> ProviderError:
    """Classify an ``{"error": ...}`` object found inside a stream (OpenAI-style or Google-style)."""
    if not isinstance(error, dict):
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
