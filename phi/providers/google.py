"""Google Gemini API provider (SPEC §7; seed 001 §5 "Google Generative AI", REQ-120).

``POST {base_url}/models/{model}:streamGenerateContent?alt=sse`` (base
``https://generativelanguage.googleapis.com/v1beta``) with the key in the ``x-goog-api-key`` header
(``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``) rather than the URL, so it never lands in logs. Each SSE
event is a whole ``GenerateContentResponse``; the stream just ends (no ``[DONE]``), and
``finishReason`` on the last candidate chunk is the terminal signal. Function calls arrive whole
(ids generated as ``google-fc-{i}``); ``thoughtSignature`` may sit on any part and is kept as a
thinking block (empty unless the part was a thought) placed before the part it came with, so it can
be resent on that same part. :mod:`phi.providers.google_vertex` reuses all of this.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from ..json_values import is_array, is_object
from ..log import get_logger
from ..types import (
    AssistantMessage,
    Content,
    ImageContent,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from . import convert, fields
from .base import MAX_DEPTH, AssistantBuilder, ProviderError, StreamConfig
from .http import HttpRequest, SSEParser, api_key, join_url, json_bytes
from .http_provider import HttpStreamProvider, WireProtocol
from .model_config import ModelConfig
from .sse import SSEEvent

log = get_logger(__name__)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

FINISH_REASONS: dict[str, StopReason] = {"STOP": StopReason.STOP, "MAX_TOKENS": StopReason.LENGTH}


# --------------------------------------------------------------------------- request


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    key = api_key(config.resolved_api_key(), "GEMINI_API_KEY", "GOOGLE_API_KEY")
    headers = {"content-type": "application/json", "accept": "text/event-stream",
               "accept-encoding": "identity", "x-goog-api-key": str(key)}
    headers.update(mc.headers)
    url = join_url(mc.base_url or DEFAULT_BASE_URL, f"models/{mc.id}:streamGenerateContent?alt=sse")
    return HttpRequest(url, headers, json_bytes(build_body(config)), (str(key),))


def build_body(config: StreamConfig) -> dict[str, Any]:
    mc = config.model_config
    body: dict[str, Any] = {"contents": convert_messages(config.messages, mc)}
    if config.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": config.system_prompt}]}
    if config.tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters} for t in config.tools
        ]}]
    choice = convert.tool_choice(config)
    if choice is not None:
        body["toolConfig"] = {"functionCallingConfig": function_calling_config(choice)}
    generation: dict[str, Any] = {}
    max_tokens = config.max_tokens or mc.max_tokens
    if max_tokens:
        generation["maxOutputTokens"] = max_tokens
    if (temperature := convert.temperature(config)) is not None:
        generation["temperature"] = temperature
    if mc.reasoning and config.thinking_level != ThinkingLevel.OFF:
        generation["thinkingConfig"] = {"includeThoughts": True,
                                        "thinkingBudget": convert.thinking_budget(config.thinking_level, mc)}
    elif mc.reasoning and mc.options.get("can_disable_thinking"):  # e.g. 2.5 Flash; 2.5 Pro cannot
        generation["thinkingConfig"] = {"thinkingBudget": 0}
    if generation:
        body["generationConfig"] = generation
    return body


FUNCTION_CALLING_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


def function_calling_config(choice: str) -> dict[str, Any]:
    """``toolConfig.functionCallingConfig`` for a checked ``tool_choice``: mode ``AUTO``, ``NONE``
    or ``ANY``; a tool name is ``ANY`` limited to that function (``allowedFunctionNames``).
    Gemini has no switch for parallel calls: ``parallel_tool_calls`` is not sent (the loop runs
    only the first call of a reply when it is false, SPEC TOOL-14)."""
    mode = FUNCTION_CALLING_MODES.get(choice)
    if mode is not None:
        return {"mode": mode}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


def convert_messages(messages: Sequence[Message], mc: ModelConfig) -> list[dict[str, Any]]:
    """Gemini contents. Consecutive messages of the same role are merged into one content (Gemini
    and Vertex reject two user or two model turns in a row; see bedrock.convert_messages), which
    also answers all calls of a model turn in one user content."""
    contents: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            convert.append_turn(contents, "user", _user_parts(message.content), "parts")
        elif isinstance(message, AssistantMessage):
            convert.append_turn(contents, "model", _model_parts(message, mc), "parts")
        elif isinstance(message, ToolResultMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            key = "error" if message.is_error else "output"
            part: dict[str, Any] = {"functionResponse": {"name": message.tool_name,
                                                         "response": {key: convert.result_text(message)}}}
            if not message.tool_call_id.startswith(("google-fc-", "vertex-fc-")):
                part["functionResponse"]["id"] = message.tool_call_id
            parts = [part] + [{"inlineData": {"mimeType": i.mime_type, "data": i.data}}
                              for i in convert.result_images(message)]
            convert.append_turn(contents, "user", parts, "parts")
    return contents


def _user_parts(blocks: Sequence[Content]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent) and block.text:
            parts.append({"text": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"inlineData": {"mimeType": block.mime_type, "data": block.data}})
    return parts


def _model_parts(message: AssistantMessage, mc: ModelConfig) -> list[dict[str, Any]]:
    """Model turn parts; a signature-only thinking block rides on the part that follows it."""
    origin_ok = convert.same_origin(message, mc)
    parts: list[dict[str, Any]] = []
    carried: str | None = None
    for block in message.content:
        part: dict[str, Any] | None = None
        if isinstance(block, ThinkingContent):
            if block.redacted:
                summary = convert.foreign_summary(block)  # another service's summary (PROV-5)
                if summary is None:
                    continue
                part = {"text": summary}
            elif not block.thinking:
                carried = block.signature if origin_ok else None
                continue
            elif origin_ok:
                part = {"text": block.thinking, "thought": True}
                if block.signature:
                    part["thoughtSignature"] = block.signature
            elif (text := convert.thinking_as_text(block)) is not None:
                part = {"text": text}
        elif isinstance(block, TextContent):
            part = {"text": block.text}
        elif isinstance(block, ToolCall):
            call: dict[str, Any] = {"name": block.name, "args": block.arguments}
            if not block.id.startswith(("google-fc-", "vertex-fc-")):
                call["id"] = block.id
            part = {"functionCall": call}
        if part is None:
            continue
        if carried:
            part["thoughtSignature"] = carried
            carried = None
        if part.get("text") == "" and "thoughtSignature" not in part:
            continue
        parts.append(part)
    if carried:
        parts.append({"text": "", "thoughtSignature": carried})
    return parts


# --------------------------------------------------------------------------- response


class GeminiParser(SSEParser):
    provider_name = "google"

    def __init__(self, builder: AssistantBuilder, id_prefix: str = "google-fc") -> None:
        super().__init__(builder)
        self.id_prefix = id_prefix
        self._calls = 0
        self._usage: dict[str, Any] = {}
        self._streaming: int | None = None  # builder index of a call whose args are streamed (Vertex)
        self._partial: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.response_id = ""

    def handle(self, event: SSEEvent) -> None:
        chunk = self.loads(event.data)
        if is_array(chunk):  # a non-SSE array body: accept each element
            for item in chunk:
                self._on_chunk(fields.obj(item, "response"))
        else:
            self._on_chunk(fields.obj(chunk, "response"))

    def _on_chunk(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:
            raise convert.error_from_payload(chunk["error"])
        self.builder.start()
        self.response_id = fields.text(chunk.get("responseId"), "responseId") or self.response_id
        if chunk.get("usageMetadata"):
            self._set_usage(fields.obj(chunk["usageMetadata"], "usageMetadata"))
        candidates = fields.array(chunk.get("candidates"), "candidates")
        if not candidates:
            block = fields.obj(chunk.get("promptFeedback"), "promptFeedback").get("blockReason")
            if block:
                self.stop_reason = StopReason.ERROR
                self.error_message = f"the prompt was blocked: {block}"
            return
        candidate = fields.obj(candidates[0], "candidates[0]")
        content = fields.obj(candidate.get("content"), "candidate.content")
        for part in fields.array(content.get("parts"), "content.parts"):
            self._on_part(fields.obj(part, "content.parts[]"))
        reason = candidate.get("finishReason")
        if reason:
            self._finish(fields.text(reason, "finishReason"), candidate.get("finishMessage"))

    def _on_part(self, part: dict[str, Any]) -> None:
        builder = self.builder
        signature = fields.text(part.get("thoughtSignature"), "thoughtSignature") or None
        if "functionCall" in part:
            if signature:
                builder.thinking("", signature, True)
            self._on_function_call(fields.obj(part["functionCall"], "functionCall"))
            return
        text = part.get("text")
        if text is None:
            if signature:
                builder.thinking("", signature, True)
            return  # inlineData, executableCode, ... are not kept
        text = fields.text(text, "part.text")
        if part.get("thought"):
            builder.thinking(text, signature)
            return
        if signature:
            builder.thinking("", signature, True)
            if text:
                builder.text(text, new_block=True)
        elif text:
            builder.text(text)

    def _on_function_call(self, call: dict[str, Any]) -> None:
        builder = self.builder
        name = fields.text(call.get("name"), "functionCall.name")
        partial = fields.array(call.get("partialArgs"), "functionCall.partialArgs")
        if self._streaming is not None and not name:
            for piece in partial:
                self._apply_partial(fields.obj(piece, "partialArgs[]"))
            if not call.get("willContinue") and not partial:
                builder.tool_call_end(self._streaming, self._partial)
                self._streaming = None
            return
        call_id = fields.text(call.get("id"), "functionCall.id") or f"{self.id_prefix}-{self._calls}"
        self._calls += 1
        index = builder.tool_call_start(call_id, name)
        args = fields.arguments(call.get("args"), "functionCall.args")
        if call.get("willContinue"):  # Vertex streamed arguments follow as partialArgs
            self._streaming, self._partial = index, dict(args)
            for piece in partial:
                self._apply_partial(fields.obj(piece, "partialArgs[]"))
            return
        if args:
            builder.tool_call_delta(index, json.dumps(args))
        builder.tool_call_end(index, args)

    def _apply_partial(self, piece: dict[str, Any]) -> None:
        path = _json_path(fields.text(piece.get("jsonPath"), "partialArgs[].jsonPath") or "$")
        if "stringValue" in piece:
            delta = fields.text(piece["stringValue"], "partialArgs[].stringValue")
            current = _get_path(self._partial, path)
            value: Any = current + delta if isinstance(current, str) else delta
        elif "numberValue" in piece:
            value = piece["numberValue"]
            if type(value) not in (int, float):
                raise fields.malformed("partialArgs[].numberValue", value, "a number")
            delta = json.dumps(value)
        elif "boolValue" in piece:
            value = piece["boolValue"]
            if type(value) is not bool:
                raise fields.malformed("partialArgs[].boolValue", value, "a boolean")
            delta = json.dumps(value)
        elif "nullValue" in piece:
            value, delta = None, "null"
        else:
            return
        _set_path(self._partial, path, value)
        assert self._streaming is not None
        self.builder.tool_call_delta(self._streaming, delta)

    def _finish(self, reason: str, message: str | None) -> None:
        self.finish_reason = reason
        if self._streaming is not None:
            self.builder.tool_call_end(self._streaming, self._partial)
            self._streaming = None
        stop = FINISH_REASONS.get(reason)
        if stop is None:
            self.stop_reason = StopReason.ERROR
            self.error_message = f"generation stopped: {reason}" + (f" ({message})" if message else "")
        elif stop is StopReason.STOP and self._calls:
            self.stop_reason = StopReason.TOOL_USE  # Gemini says STOP after function calls
        else:
            self.stop_reason = stop

    def _set_usage(self, usage: dict[str, Any]) -> None:
        """Cumulative snapshots; Vertex sends chunks with only ``trafficType``, so merge."""
        merged = self._usage
        merged.update({k: v for k, v in usage.items() if v is not None})
        prompt = fields.count(merged.get("promptTokenCount"))
        cached = fields.count(merged.get("cachedContentTokenCount"))
        thoughts = fields.count(merged.get("thoughtsTokenCount"))
        output = fields.count(merged.get("candidatesTokenCount")) + thoughts
        self.builder.usage = fields.usage(max(0, prompt - cached), output, thoughts, cached, 0,
                                          merged.get("totalTokenCount"))


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]")


def _json_path(path: str) -> list[str | int]:
    """RFC 9535 normalized paths as Vertex sends them: ``$.a.b[0]['c']`` (at most
    :data:`~phi.providers.base.MAX_DEPTH` segments)."""
    if not path.startswith("$"):
        raise ProviderError("api", f"invalid jsonPath in streamed function arguments: {path[:100]!r}")
    keys: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_TOKEN.match(path, pos)
        if match is None or len(keys) >= MAX_DEPTH:
            raise ProviderError("api", f"invalid jsonPath in streamed function arguments: {path[:100]!r}")
        name, number, single, double = match.groups()
        keys.append(int(number) if number is not None else (name or single or double or ""))
        pos = match.end()
    return keys


def _get_path(root: Any, path: list[str | int]) -> Any:
    node = root
    for key in path:
        if isinstance(key, int):
            if not is_array(node) or key >= len(node):
                return None
            node = node[key]
        elif is_object(node):
            node = node.get(key)
        else:
            return None
    return node


MAX_LIST_GAP = 16  # a streamed list index may run ahead of the list by this much (padded with null)


def _set_path(root: dict[str, Any], path: list[str | int], value: Any) -> None:
    """Set ``value`` at ``path``, creating containers on the way. The container must have the
    path's kind, and a list index may pass the end by at most :data:`MAX_LIST_GAP` (a server
    cannot make phi allocate a list of a billion nulls)."""
    if not path:
        return
    node: Any = root
    for key, following in zip(path, path[1:]):
        node = _child(node, key, [] if isinstance(following, int) else {})
    last = path[-1]
    _make_slot(node, last)
    node[last] = value


def _child(node: Any, key: str | int, empty: Any) -> Any:
    _make_slot(node, key)
    current = node[key] if isinstance(key, int) else node.get(key)
    if current is None:
        node[key] = current = empty
    return current


def _make_slot(node: Any, key: str | int) -> None:
    if isinstance(key, int):
        if not is_array(node):
            raise ProviderError("api", f"streamed function arguments: index [{key}] inside a non-array")
        if key >= len(node) + MAX_LIST_GAP:
            raise ProviderError("api", f"streamed function arguments: index [{key}] is far past the end of "
                                       f"a list of {len(node)} items")
        node.extend([None] * (key + 1 - len(node)))
    elif not is_object(node):
        raise ProviderError("api", f"streamed function arguments: key {key[:50]!r} inside a non-object")


class GoogleProvider(HttpStreamProvider):
    """Streams Gemini models over the Gemini API."""

    protocol = WireProtocol("google", build_request, lambda builder, mc: GeminiParser(builder, "google-fc"),
                            idle_timeout=90.0)
