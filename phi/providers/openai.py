"""OpenAI Chat Completions provider, for api.openai.com and the OpenAI-compatible servers
(SPEC §7; seed 001 §5 "OpenAI-Compatible APIs", REQ-041, REQ-130, REQ-131, REQ-147).

``POST {base_url}/chat/completions`` with ``stream: true`` and, when the server supports it,
``stream_options.include_usage``. Server differences come from :class:`OpenAICompat`:
``max_tokens`` vs ``max_completion_tokens``, ``developer`` vs ``system`` role, ``reasoning_effort``,
and where reasoning text arrives (``reasoning_content`` or ``reasoning``). The stream is
``data: <chunk>`` lines ending in ``data: [DONE]``; tool-call fragments are keyed by ``index``;
a reply has one choice: a server asked for several (``n > 1``) interleaves them in the stream, and
only choice ``0`` is read (the others are skipped, never merged into it);
usage comes in a trailing chunk with empty ``choices``; any payload with an ``error`` key is an
error (it may arrive after a ``finish_reason``, in which case the stop reason is kept).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..json_values import is_object
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
from ..concurrency.cancel import CancellationToken
from .base import AssistantBuilder, ErrorKind, ProviderError, StreamConfig, StreamEventSink
from .http import (
    HttpRequest,
    SSEParser,
    api_key,
    http_error,
    join_url,
    json_bytes,
    timeouts,
)
from .http_provider import HttpStreamProvider, WireProtocol
from .local_servers import is_local_server
from .model_config import ModelConfig
from .sse import SSEEvent
from .transport import HttpClient

log = get_logger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
EMPTY_STREAM_READ_TIMEOUT = 30.0  # seconds the non-streamed question about an empty stream may take
EMPTY_STREAM = "openai stream ended before any event"

FINISH_REASONS: dict[str, StopReason] = {
    "stop": StopReason.STOP,
    "end_turn": StopReason.STOP,
    "length": StopReason.LENGTH,
    "max_tokens": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "tool_use": StopReason.TOOL_USE,
    "content_filter": StopReason.ERROR,
}


# --------------------------------------------------------------------------- request


def resolve_key(config: StreamConfig) -> str | None:
    """Explicit key; else ``options["api_key_env"]``; else OPENAI_API_KEY for OpenAI itself only
    (never send an OpenAI key to a third-party server). Local servers need no key."""
    mc = config.model_config
    env = mc.options.get("api_key_env")
    names: tuple[str, ...] = (env,) if env else (("OPENAI_API_KEY",) if mc.provider == "openai" else ())
    required = bool(mc.options.get("api_key_required", mc.provider == "openai" or bool(env)))
    return api_key(config.resolved_api_key(), *names, required=required)


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    key = resolve_key(config)
    headers = {"content-type": "application/json", "accept": "text/event-stream", "accept-encoding": "identity"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    headers.update(mc.headers)
    url = join_url(mc.base_url or DEFAULT_BASE_URL, "chat/completions")
    return HttpRequest(url, headers, json_bytes(build_body(config)), (key,) if key else ())


def build_body(config: StreamConfig) -> dict[str, Any]:
    mc = config.model_config
    compat = mc.compat
    messages: list[dict[str, Any]] = []
    if config.system_prompt:
        role = "developer" if compat.supports_developer_role and mc.reasoning else "system"
        messages.append({"role": role, "content": config.system_prompt})
    messages.extend(convert_messages(config.messages, mc))
    body: dict[str, Any] = {"model": mc.id, "messages": messages, "stream": True}
    if compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    max_tokens = config.max_tokens or mc.max_tokens
    if max_tokens:
        body[compat.max_tokens_field or "max_tokens"] = max_tokens
    if (temperature := convert.temperature(config)) is not None:
        body["temperature"] = temperature
    if config.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in config.tools
        ]
    choice = convert.tool_choice(config)
    if choice is not None:
        body["tool_choice"] = choice if choice in convert.TOOL_CHOICE_MODES else {
            "type": "function", "function": {"name": choice}}
    if (parallel := convert.parallel_tool_calls(config)) is not None:
        body["parallel_tool_calls"] = parallel
    if config.thinking_level != ThinkingLevel.OFF and compat.supports_reasoning_effort and mc.reasoning:
        body["reasoning_effort"] = convert.effort(config.thinking_level)
    return body


def convert_messages(messages: Sequence[Message], mc: ModelConfig) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending_images: list[ImageContent] = []  # images from tool results, sent after the results
    for message in messages:
        if not isinstance(message, ToolResultMessage) and pending_images:
            out.append(_image_followup(pending_images))
            pending_images = []
        if isinstance(message, UserMessage):
            content = _user_content(message.content)
            if content:
                out.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            converted = _assistant(message, mc)
            if converted is not None:
                out.append(converted)
        elif isinstance(message, ToolResultMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            out.append({"role": "tool", "tool_call_id": convert.chat_tool_id(message.tool_call_id),
                        "content": convert.result_text(message)})
            pending_images.extend(convert.result_images(message))
    if pending_images:
        out.append(_image_followup(pending_images))
    return out


def _image_followup(images: list[ImageContent]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the tool call(s) above:"}]
    parts += [{"type": "image_url", "image_url": {"url": convert.data_url(i)}} for i in images]
    return {"role": "user", "content": parts}


def _user_content(blocks: Sequence[Content]) -> str | list[dict[str, Any]] | None:
    texts = [b.text for b in blocks if isinstance(b, TextContent)]
    if len(texts) == len(blocks):  # text only: plain string content
        return "\n".join(t for t in texts if t) or None
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent) and block.text:
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"type": "image_url", "image_url": {"url": convert.data_url(block)}})
    return parts or None


def _assistant(message: AssistantMessage, mc: ModelConfig) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent) and block.text:
            texts.append(block.text)
        elif isinstance(block, ThinkingContent):
            # Chat Completions has no field for replaying reasoning; foreign reasoning is dropped, but
            # a conversation summary another service wrote is what the conversation became (PROV-5)
            if (summary := convert.foreign_summary(block)) is not None:
                texts.append(summary + "\n\n")
        elif isinstance(block, ToolCall):
            calls.append({"id": convert.chat_tool_id(block.id), "type": "function",
                          "function": {"name": block.name, "arguments": json.dumps(block.arguments)}})
    if not texts and not calls:
        return None
    # Without text the content is "" rather than null (the spec allows both): servers built on
    # typed dicts refuse null and their chat templates read the field (llama-cpp-python).
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        out["tool_calls"] = calls
    return out


# --------------------------------------------------------------------------- response


class ChatCompletionsParser(SSEParser):
    provider_name = "openai"

    def __init__(self, builder: AssistantBuilder, mc: ModelConfig) -> None:
        super().__init__(builder)
        field = mc.compat.reasoning_field
        self._reasoning_fields = (field,) if field else ("reasoning_content", "reasoning")
        self._tools: dict[int, int] = {}  # wire tool-call index -> builder index
        self._finish: str | None = None
        self.model = ""

    def handle(self, event: SSEEvent) -> None:
        data = event.data
        if data[:6] == "[DONE]":
            self.done = True
            if self.stop_reason is None and self._finish is None and self.error_message is None:
                self._finalise("stop")
            return
        chunk = self.loads_object(data)
        if event.event == "error" or "error" in chunk:
            self._on_error(chunk.get("error", chunk))
        for choice in fields.array(chunk.get("choices"), "choices"):
            choice = fields.obj(choice, "choices[]")
            if choice.get("index", 0) == 0:  # only the first choice; several (n > 1) are never merged
                self._on_choice(choice)
        usage = chunk.get("usage")
        if usage:
            self._on_usage(fields.obj(usage, "usage"))

    def _on_choice(self, choice: dict[str, Any]) -> None:
        delta = fields.obj(choice.get("delta"), "delta")
        builder = self.builder
        if delta:
            content = delta.get("content")
            if type(content) is str:
                if content:
                    builder.text(content)
            elif content is not None:
                self._on_content_parts(fields.array(content, "delta.content"))
            for field in self._reasoning_fields:
                reasoning = delta.get(field)
                if reasoning and isinstance(reasoning, str):
                    builder.thinking(reasoning)
                    break
            calls = fields.array(delta.get("tool_calls"), "delta.tool_calls")
            for call in calls:
                self._on_tool_call(fields.obj(call, "delta.tool_calls[]"))
        reason = choice.get("finish_reason")
        if reason and self._finish is None:
            self._finalise(fields.text(reason, "finish_reason"))

    def _on_content_parts(self, parts: list[Any]) -> None:
        """``delta.content`` as a list of typed parts (Mistral: ``text`` and ``thinking`` parts,
        the latter holding a list of text parts); other part types carry nothing we keep."""
        for part in parts:
            part = fields.obj(part, "delta.content[]")
            kind = part.get("type")
            if kind == "text":
                text = fields.text(part.get("text"), "delta.content[].text")
                if text:
                    self.builder.text(text)
            elif kind == "thinking":
                inner = part.get("thinking")
                pieces = [inner] if type(inner) is str else fields.array(inner, "delta.content[].thinking")
                for piece in pieces:
                    text = piece if type(piece) is str else fields.text(fields.obj(piece, "thinking[]").get("text"),
                                                                         "delta.content[].thinking[].text")
                    if text:
                        self.builder.thinking(text)

    def _on_tool_call(self, call: dict[str, Any]) -> None:
        wire_index = call.get("index", len(self._tools))
        function = fields.obj(call.get("function"), "tool_calls[].function")
        index = self._tools.get(wire_index)
        if index is None:
            call_id = fields.text(call.get("id"), "tool_calls[].id") or f"call_{wire_index}"
            index = self.builder.tool_call_start(call_id, fields.text(function.get("name"), "tool_calls[].function.name"))
            self._tools[wire_index] = index
        arguments = fields.arguments_text(function.get("arguments"), "tool_calls[].function.arguments")
        if arguments:
            self.builder.tool_call_delta(index, arguments)

    def _finalise(self, reason: str) -> None:
        self._finish = reason
        self.builder.close_open_tool_calls()
        stop = FINISH_REASONS.get(reason)
        if stop is None:
            log.warning("unknown finish_reason %r treated as stop", reason)
            stop = StopReason.STOP
        if stop is StopReason.STOP and self._tools:
            stop = StopReason.TOOL_USE  # some compatible servers say "stop" after tool calls
        if reason == "content_filter":
            self.error_message = "the response was stopped by the content filter (finish_reason: content_filter)"
        self.stop_reason = stop

    def _on_error(self, error: object) -> None:
        problem = convert.error_from_payload(error)
        if self.stop_reason is not None:  # e.g. OpenRouter's "Token limit reached" after finish_reason
            self.error_message = problem.message
            return
        raise problem

    def _on_usage(self, usage: dict[str, Any]) -> None:
        prompt = fields.count(usage.get("prompt_tokens"))
        cached = fields.count(_detail(usage, "prompt_tokens_details", "cached_tokens"))
        reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
        self.builder.usage = fields.usage(max(0, prompt - cached), usage.get("completion_tokens"), reasoning, cached,
                                          0, usage.get("total_tokens"))

    def result(self) -> AssistantMessage:
        if self.stop_reason is None and self.error_message is None:
            self.builder.close_open_tool_calls()
            if self.events == 0:
                raise ProviderError(ErrorKind.NETWORK, EMPTY_STREAM)
        return super().result()


def _detail(usage: dict[str, Any], group: str, name: str) -> Any:
    details = usage.get(group)
    return details.get(name) if is_object(details) else None


class OpenAIProvider(HttpStreamProvider):
    """Streams any Chat Completions server.

    A local server's stream that ends before its first event (llama-cpp-python's server answers a
    prompt longer than its window with a 200 and an empty stream, the reason only in its own log)
    is asked about once without streaming, ``max_tokens`` 1: the error that answer carries (a
    ``context_overflow`` with the server's message) replaces the bare ``network`` one, so that
    the loop compacts instead of resending the same request (SPEC PROV-6).
    """

    protocol = WireProtocol("openai", build_request, ChatCompletionsParser)

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        try:
            return super().stream(config, on_event, cancel)
        except ProviderError as error:
            mc = config.model_config
            if error.message != EMPTY_STREAM or cancel.is_cancelled() or not is_local_server(mc):
                raise
            raise (self._why_empty(self.build_request(config), mc, cancel) or error) from None

    def _why_empty(self, request: HttpRequest, mc: ModelConfig, cancel: CancellationToken) -> ProviderError | None:
        """The error the server gives for the same request without streaming, or None."""
        body = request.json_body()
        body["stream"] = False
        body.pop("stream_options", None)
        body[mc.compat.max_tokens_field or "max_tokens"] = 1
        log.info("the %s stream ended before any event; asking once more without streaming to learn why",
                 mc.provider or "openai")
        connect, read, _ = timeouts(mc)
        # a connection of its own: the server may have dropped the pooled one the stream used
        client = HttpClient(pool_maxsize=1)
        try:
            response = client.post(request.url, request.headers, json_bytes(body),
                                    (connect, min(read, EMPTY_STREAM_READ_TIMEOUT)), cancel)
            if response is None:
                return None
            try:
                if response.status_code < 400:
                    return None
                error = http_error(response, request)
            finally:
                response.close()
        except Exception as exc:  # no answer: the original error stands
            log.debug("the question about the empty stream failed: %s", type(exc).__name__)
            return None
        finally:
            client.close()
        return None if error.kind is ErrorKind.NETWORK else error
