"""Prompts, replies, tool arguments and results as span attributes — only when content capture is on
(SPEC §17 OTEL-3).

The shapes are the conventions' input/output message schemas (``gen-ai-input-messages.json``,
``gen-ai-output-messages.json``): ``{"role", "parts": [...]}`` with ``text``, ``reasoning``,
``tool_call``, ``tool_call_response`` and ``blob`` parts (images keep their MIME type and size, not
their bytes), serialized to a JSON string because span attributes are not structured yet. Every
string is scrubbed (:class:`~phi.tools.redact.Redactor`) and cut to ``limit`` characters.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..json_values import is_array, is_object
from ..types import (
    AgentMessage,
    AssistantMessage,
    ExtensionMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from ..tools.redact import Redactor
from .semconv import finish_reason


class ContentWriter:
    """Turns phi's messages into the conventions' JSON, scrubbed and cut (see the module docstring)."""

    def __init__(self, scrubber: Redactor, limit: int) -> None:
        self.scrubber, self.limit = scrubber, limit

    def text(self, value: str) -> str:
        value = self.scrubber.text(value)
        if len(value) > self.limit:
            return value[:self.limit] + f"…[{len(value) - self.limit} more characters]"
        return value

    def data(self, value: Any) -> Any:
        """JSON data scrubbed, each string in it cut (the structure stays valid JSON)."""
        return self._cut(self.scrubber.data(value))

    def _cut(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if is_object(value):
            return {key: self._cut(item) for key, item in value.items()}
        if is_array(value):
            return [self._cut(item) for item in value]
        return value

    def dumps(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))

    def messages(self, messages: Sequence[AgentMessage]) -> str:
        """``gen_ai.input.messages`` / ``gen_ai.output.messages``: a JSON array of messages."""
        return self.dumps([self.message(message) for message in messages])

    def message(self, message: AgentMessage) -> dict[str, Any]:
        if isinstance(message, AssistantMessage):
            return {"role": "assistant", "parts": [self.part(block) for block in message.content],
                    "finish_reason": finish_reason(message.stop_reason)}
        if isinstance(message, ToolResultMessage):
            return {"role": "tool", "parts": [{"type": "tool_call_response", "id": message.tool_call_id,
                                               "response": self.blocks_text(message.content)}]}
        if isinstance(message, UserMessage):
            return {"role": "user", "parts": [self.part(block) for block in message.content]}
        # an application's own message class (outside the AgentMessage union) falls through to the end
        if isinstance(message, ExtensionMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # else: app class
            return {"role": "user", "parts": [{"type": message.kind, "content": self.arguments(message.data)}]}
        return {"role": "user", "parts": []}

    def part(self, block: object) -> dict[str, Any]:
        if isinstance(block, TextContent):
            return {"type": "text", "content": self.text(block.text)}
        if isinstance(block, ThinkingContent):
            return {"type": "reasoning", "content": "" if block.redacted else self.text(block.thinking)}
        if isinstance(block, ToolCall):
            return {"type": "tool_call", "id": block.id, "name": block.name,
                    "arguments": self.data(block.arguments)}
        if isinstance(block, ImageContent):
            return {"type": "blob", "modality": "image", "mime_type": block.mime_type,
                    "size": len(block.data) * 3 // 4}
        return {"type": type(block).__name__}

    def blocks_text(self, blocks: Sequence[object]) -> str:
        return self.text("\n".join(b.text for b in blocks if isinstance(b, TextContent)))

    def arguments(self, args: Any) -> str:
        """``gen_ai.tool.call.arguments``: the call's arguments as JSON, secret-named keys blanked."""
        return self.dumps(self.data(args))

    def result(self, result: ToolResult) -> str:
        """``gen_ai.tool.call.result``: the result's text."""
        return self.blocks_text(result.content)
