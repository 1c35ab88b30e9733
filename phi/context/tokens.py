"""Token estimates for text, content blocks and messages (SPEC CTX-1).

The default is a heuristic, deliberately dependency-free:

* text: ``ceil(utf8_byte_length / 4)`` — :func:`estimate_tokens` (``"hello"`` → 2);
* image: ``clamp(raw_bytes // 750, 85, 16000)`` where ``raw_bytes`` is the decoded size of the
  base64 payload (``len(data) * 3 // 4``);
* thinking: the estimate of its text; tool call: name + compact JSON of the arguments;
* message overhead: +4 for user and assistant messages, +8 for tool results; extension messages
  are never sent to a model and count 0.

A :class:`TokenCounter` replaces the text heuristic (for example with a real tokenizer); it is set
on ``ContextConfig.token_counter`` and threaded through every call site (compaction, trackers).
"""

from __future__ import annotations

import json
from typing import Iterable, Protocol, runtime_checkable

from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "estimate_tokens",
    "image_tokens",
    "content_tokens",
    "message_tokens",
    "total_tokens",
    "TokenCounter",
    "HeuristicTokenCounter",
    "DEFAULT_COUNTER",
    "USER_OVERHEAD",
    "ASSISTANT_OVERHEAD",
    "TOOL_RESULT_OVERHEAD",
]

USER_OVERHEAD = 4
ASSISTANT_OVERHEAD = 4
TOOL_RESULT_OVERHEAD = 8
IMAGE_MIN_TOKENS = 85
IMAGE_MAX_TOKENS = 16_000
IMAGE_BYTES_PER_TOKEN = 750


def estimate_tokens(text: str) -> int:
    """``ceil(len(text.encode("utf-8")) / 4)``: roughly four bytes of text per token."""
    return (len(text.encode("utf-8")) + 3) // 4


def image_tokens(image: ImageContent) -> int:
    """``clamp(raw_bytes // 750, 85, 16000)`` with ``raw_bytes`` the decoded base64 size."""
    raw_bytes = len(image.data) * 3 // 4
    return max(IMAGE_MIN_TOKENS, min(IMAGE_MAX_TOKENS, raw_bytes // IMAGE_BYTES_PER_TOKEN))


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a piece of text. Images and message overheads use fixed formulas."""

    def count(self, text: str) -> int:
        ...


class HeuristicTokenCounter:
    """The default counter: :func:`estimate_tokens` (four bytes per token)."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)

    def __repr__(self) -> str:
        return "HeuristicTokenCounter()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HeuristicTokenCounter)

    def __hash__(self) -> int:
        return hash(HeuristicTokenCounter)


DEFAULT_COUNTER = HeuristicTokenCounter()


def _arguments_text(arguments: object) -> str:
    try:
        return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)


def content_tokens(content: Iterable[Content], counter: TokenCounter | None = None) -> int:
    """Sum of the token estimates of ``content``'s blocks (no message overhead)."""
    count = (counter or DEFAULT_COUNTER).count
    total = 0
    for block in content:
        if isinstance(block, TextContent):
            total += count(block.text)
        elif isinstance(block, ImageContent):
            total += image_tokens(block)
        elif isinstance(block, ThinkingContent):
            total += count(block.thinking)
        elif isinstance(block, ToolCall):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            total += count(block.name) + count(_arguments_text(block.arguments))
        else:
            raise TypeError(f"not a content block: {block!r}")
    return total


def message_tokens(message: AgentMessage, counter: TokenCounter | None = None) -> int:
    """Tokens of one message: its content plus the per-role overhead (extension messages: 0)."""
    if isinstance(message, UserMessage):
        return content_tokens(message.content, counter) + USER_OVERHEAD
    if isinstance(message, AssistantMessage):
        return content_tokens(message.content, counter) + ASSISTANT_OVERHEAD
    if isinstance(message, ToolResultMessage):
        return content_tokens(message.content, counter) + TOOL_RESULT_OVERHEAD
    if getattr(message, "role", None) == "extension":
        return 0
    raise TypeError(f"not a message: {message!r}")


def total_tokens(messages: Iterable[AgentMessage], counter: TokenCounter | None = None) -> int:
    """Sum of :func:`message_tokens` over ``messages``."""
    return sum(message_tokens(m, counter) for m in messages)
