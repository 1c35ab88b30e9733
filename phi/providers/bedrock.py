"""Amazon Bedrock ConverseStream provider (SPEC §7; seed 001 §5 "Amazon Bedrock", REQ-122).

``POST https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse-stream``. The reply
is binary AWS event-stream (``application/vnd.amazon.eventstream``, decoded by
:mod:`phi.providers.eventstream`), **not** SSE or NDJSON as the seed says. Events:
``messageStart``, ``contentBlockStart`` (tool use only), ``contentBlockDelta`` (text,
``toolUse.input`` fragments, ``reasoningContent`` text/signature/redactedContent),
``contentBlockStop``, ``messageStop`` (stop reason) and ``metadata`` (usage, after messageStop).
Exception frames (``:message-type: exception``) are classified by ``:exception-type``.

Auth: a Bedrock API key as ``Authorization: Bearer`` (``api_key`` or ``AWS_BEARER_TOKEN_BEDROCK``),
else SigV4 (:mod:`phi.providers.sigv4`) from ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
``AWS_SESSION_TOKEN``. Region: ``options["region"]``, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, else
``us-east-1``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, ClassVar, Sequence
from urllib.parse import quote

from ..errors import ConfigError
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
from .base import AssistantBuilder, CacheStrategy, ErrorKind, ProviderError, StreamConfig, is_context_overflow
from .eventstream import EventStreamDecoder
from .http import HttpRequest, StreamParser, api_key, json_bytes, prepared_url
from .http_provider import HttpStreamProvider, WireProtocol
from .model_config import ModelConfig
from .sigv4 import AwsCredentials, canonical_url, sign

log = get_logger(__name__)

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
}

EXCEPTION_KINDS: dict[str, tuple[ErrorKind, int]] = {
    "throttlingException": (ErrorKind.RATE_LIMITED, 429),
    "internalServerException": (ErrorKind.NETWORK, 500),
    "serviceUnavailableException": (ErrorKind.NETWORK, 503),
    "modelStreamErrorException": (ErrorKind.NETWORK, 424),
    "validationException": (ErrorKind.API, 400),
    "accessDeniedException": (ErrorKind.AUTH, 403),
}

IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif",
                 "image/webp": "webp"}


# --------------------------------------------------------------------------- request


def region_of(mc: ModelConfig) -> str:
    return (mc.options.get("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1")


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    region = region_of(mc)
    base = (mc.base_url or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")
    url = request_url(f"{base}/model/{quote(mc.id, safe='')}/converse-stream")
    body = json_bytes(build_body(config))
    headers = {"content-type": "application/json", "accept": "application/vnd.amazon.eventstream"}
    headers.update(mc.headers)
    token = api_key(config.resolved_api_key(), "AWS_BEARER_TOKEN_BEDROCK", required=False, what="Bedrock API key")
    if token:
        headers["authorization"] = f"Bearer {token}"
        return HttpRequest(url, headers, body, (token,))
    try:
        credentials = AwsCredentials.from_environment()
    except ConfigError as exc:
        raise ProviderError(ErrorKind.AUTH, str(exc)) from None
    if credentials is None:
        raise ProviderError(ErrorKind.AUTH, "no Bedrock credentials: set AWS_BEARER_TOKEN_BEDROCK (or pass api_key), "
                                            "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    signed = sign("POST", url, headers, body, credentials, region, mc.options.get("signing_service", "bedrock"))
    secrets = tuple(s for s in (credentials.secret_key, credentials.session_token) if s)
    return HttpRequest(url, signed, body, secrets)


def request_url(url: str) -> str:
    """The URL as ``requests`` will send it *and* as AWS canonicalises it (no user-info, no default
    port, lower-case host, no ``.``/``..``/empty path segments), so the SigV4 signature covers
    exactly what goes on the wire. Requoting can reveal new dot segments (``%2E%2E``), hence the
    repetition until nothing changes."""
    for _ in range(4):
        normal = prepared_url(canonical_url(url))
        if normal == url:
            break
        url = normal
    return url


def build_body(config: StreamConfig) -> dict[str, Any]:
    mc = config.model_config
    caching = _caching(config)
    body: dict[str, Any] = {"messages": convert_messages(config.messages, mc)}
    if caching[2] and len(body["messages"]) >= 2:
        body["messages"][-2]["content"].append({"cachePoint": {"type": "default"}})
    if convert.has_text(config.system_prompt):
        system: list[dict[str, Any]] = [{"text": config.system_prompt}]
        if caching[0]:
            system.append({"cachePoint": {"type": "default"}})
        body["system"] = system
    inference: dict[str, Any] = {"maxTokens": config.max_tokens or mc.max_tokens}
    if (temperature := convert.temperature(config)) is not None:
        inference["temperature"] = temperature
    body["inferenceConfig"] = inference
    if config.tools:
        tools: list[dict[str, Any]] = [{"toolSpec": {"name": t.name, "description": t.description,
                                                     "inputSchema": {"json": t.parameters}}} for t in config.tools]
        if caching[1]:  # Claude only: Nova refuses a cachePoint among the tools
            tools.append({"cachePoint": {"type": "default"}})
        _tool_config(body, config, tools)
    if mc.reasoning and config.thinking_level != ThinkingLevel.OFF and "anthropic" in mc.id:
        if "toolChoice" in body.get("toolConfig", {}) and "auto" not in body["toolConfig"]["toolChoice"]:
            from .anthropic import FORCED_TOOL_WITH_THINKING

            raise ProviderError(ErrorKind.API, FORCED_TOOL_WITH_THINKING)
        budget = convert.thinking_budget(config.thinking_level, mc)
        body["additionalModelRequestFields"] = {"thinking": {"type": "enabled", "budget_tokens": budget}}
        if inference["maxTokens"] <= budget:
            inference["maxTokens"] = budget + max(1024, inference["maxTokens"])
        inference.pop("temperature", None)
    return body


def _tool_config(body: dict[str, Any], config: StreamConfig, tools: list[dict[str, Any]]) -> None:
    """``toolConfig`` with ``toolChoice`` (``auto``, ``any`` for "required", ``tool`` for a name).
    Converse has no "none": without tool blocks in the history the tools are simply not sent;
    with them ``toolConfig`` is required, so the tools are sent without a choice. It has no switch
    for parallel calls either: ``parallel_tool_calls`` is not sent. In both cases the loop holds
    to the setting whatever the model replies (SPEC TOOL-14)."""
    choice = convert.tool_choice(config)
    if choice == "none":
        if not _has_tool_blocks(body["messages"]):
            return
        choice = None
        log.debug("Bedrock Converse cannot forbid tool calls while the history has some: tool_choice 'none' "
                  "is sent as no choice, and the loop runs none of the calls the model makes (TOOL-14)")
    tool_config: dict[str, Any] = {"tools": tools}
    if choice == "auto":
        tool_config["toolChoice"] = {"auto": {}}
    elif choice == "required":
        tool_config["toolChoice"] = {"any": {}}
    elif choice is not None:
        tool_config["toolChoice"] = {"tool": {"name": choice}}
    body["toolConfig"] = tool_config


def _has_tool_blocks(messages: list[dict[str, Any]]) -> bool:
    return any("toolUse" in block or "toolResult" in block for message in messages for block in message["content"])


def _caching(config: StreamConfig) -> tuple[bool, bool, bool]:
    """(system, tools, messages) cache points, only where the model accepts them: system and
    messages for Claude and Nova (``bedrock_prompt_cache``), tools for Claude only
    (``bedrock_tool_cache``); see the capability table in model_config."""
    cc = config.cache_config
    mc = config.model_config
    if not cc.enabled or cc.strategy == CacheStrategy.DISABLED or not mc.supports("bedrock_prompt_cache"):
        return False, False, False
    wanted = (cc.cache_system, cc.cache_tools, cc.cache_messages) if cc.strategy == CacheStrategy.MANUAL \
        else (True, True, True)
    return wanted[0], wanted[1] and mc.supports("bedrock_tool_cache"), wanted[2]


def convert_messages(messages: Sequence[Message], mc: ModelConfig) -> list[dict[str, Any]]:
    """Converse messages. Converse rejects two consecutive messages of the same role, which phi's
    history can hold (a failed reply dropped by ``convert_to_llm``, steering after tool results,
    follow-ups, compaction summaries), so consecutive same-role messages are merged into one —
    which also puts all tool results of a turn in one user message. Text blocks of nothing but
    whitespace are left out (Converse refuses them, see :func:`convert.has_text`)."""
    out: list[dict[str, Any]] = []
    sent = False
    for message in messages:
        sent = True
        if isinstance(message, UserMessage):
            blocks = [b for b in (_block(c) for c in message.content) if b is not None]
            sent = bool(blocks)
            convert.append_turn(out, "user", blocks)
        elif isinstance(message, AssistantMessage):
            convert.append_turn(out, "assistant", _assistant_blocks(message, mc))
        elif isinstance(message, ToolResultMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            inner = [b for b in (_block(c) for c in message.content) if b is not None] or [{"text": "(no output)"}]
            block = {"toolResult": {"toolUseId": convert.safe_tool_id(message.tool_call_id), "content": inner,
                                    "status": "error" if message.is_error else "success"}}
            convert.append_turn(out, "user", [block])
    convert.check_last_message_sent(messages, sent, "Bedrock")
    return out


def _block(block: Content) -> dict[str, Any] | None:
    if isinstance(block, TextContent):
        return {"text": block.text} if convert.has_text(block.text) else None
    if isinstance(block, ImageContent):
        fmt = IMAGE_FORMATS.get(block.mime_type.lower(), block.mime_type.split("/")[-1])
        return {"image": {"format": fmt, "source": {"bytes": block.data}}}
    return None


def _assistant_blocks(message: AssistantMessage, mc: ModelConfig) -> list[dict[str, Any]]:
    origin_ok = convert.same_origin(message, mc)
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if convert.has_text(block.text):
                blocks.append({"text": block.text})
        elif isinstance(block, ThinkingContent):
            if convert.replayable_thinking(block, origin_ok):
                if block.redacted:
                    blocks.append({"reasoningContent": {"redactedContent": block.thinking}})
                else:
                    blocks.append({"reasoningContent": {"reasoningText": {"text": block.thinking,
                                                                          "signature": block.signature}}})
            elif (text := convert.thinking_as_text(block) or convert.foreign_summary(block)) is not None:
                blocks.append({"text": text})  # foreign reasoning, or another service's summary (PROV-5)
        elif isinstance(block, ToolCall):
            blocks.append({"toolUse": {"toolUseId": convert.safe_tool_id(block.id), "name": block.name,
                                       "input": block.arguments}})
    return blocks


# --------------------------------------------------------------------------- response


class ConverseStreamParser(StreamParser):
    provider_name = "bedrock"

    def __init__(self, builder: AssistantBuilder) -> None:
        super().__init__(builder)
        self.decoder = EventStreamDecoder()
        self._tools: dict[int, int] = {}  # contentBlockIndex -> builder index
        self._block: int | None = None  # contentBlockIndex of the last delta
        self._redacted: dict[int, list[str]] = {}
        self.frames = 0

    def feed(self, chunk: bytes) -> None:
        cancelled = self.cancel.is_cancelled
        for message in self.decoder.feed(chunk):
            if cancelled() or self.done:
                return
            self.frames += 1
            self.events += 1
            kind = message.headers.get(":message-type", "event")
            if kind == "event":
                handler = self._HANDLERS.get(message.headers.get(":event-type", ""))
                if handler is not None:
                    handler(self, self.loads_object(message.payload) if message.payload else {})
            else:
                raise self._exception(message.headers, message.payload)
        if self.decoder.error is not None and not self.done:  # good frames first, then the corruption
            raise self.decoder.error

    def close(self) -> None:
        if self.decoder.pending:
            log.info("bedrock stream ended inside a frame (%d bytes pending)", self.decoder.pending)

    def _exception(self, headers: dict[str, Any], payload: bytes) -> ProviderError:
        name = str(headers.get(":exception-type") or headers.get(":error-code") or "unknown")
        try:
            text = str(json.loads(payload).get("message") or name)
        except (ValueError, AttributeError, RecursionError):
            text = payload.decode("utf-8", "replace")[:500] or str(headers.get(":error-message", name))
        kind, status = EXCEPTION_KINDS.get(name, (ErrorKind.API, None))
        if kind is ErrorKind.API and is_context_overflow(None, text):
            kind = ErrorKind.CONTEXT_OVERFLOW
        return ProviderError(kind, f"{name}: {text}", status=status, body=payload.decode("utf-8", "replace")[:4000])

    def _on_message_start(self, data: dict[str, Any]) -> None:
        self.builder.start()

    def _on_start(self, data: dict[str, Any]) -> None:
        start = fields.obj(data.get("start"), "start")
        tool = start.get("toolUse")
        if tool is not None:
            tool = fields.obj(tool, "start.toolUse")
            index = data.get("contentBlockIndex", len(self._tools))
            self._tools[index] = self.builder.tool_call_start(
                fields.text(tool.get("toolUseId"), "toolUse.toolUseId") or f"tooluse_{index}",
                fields.text(tool.get("name"), "toolUse.name"))
            self._block = index

    def _on_delta(self, data: dict[str, Any]) -> None:
        index = data.get("contentBlockIndex", 0)
        fresh = index != self._block
        self._block = index
        delta = fields.obj(data.get("delta"), "delta")
        builder = self.builder
        if "text" in delta:
            builder.text(fields.text(delta["text"], "delta.text"), fresh)
        elif "toolUse" in delta:
            tool = self._tools.get(index)
            if tool is not None:
                piece = fields.obj(delta["toolUse"], "delta.toolUse").get("input")
                builder.tool_call_delta(tool, fields.arguments_text(piece, "delta.toolUse.input"))
        elif "reasoningContent" in delta:
            reasoning = fields.obj(delta["reasoningContent"], "delta.reasoningContent")
            if "text" in reasoning:
                builder.thinking(fields.text(reasoning["text"], "reasoningContent.text"), None, fresh)
            elif "signature" in reasoning:
                signature = fields.text(reasoning["signature"], "reasoningContent.signature")
                if fresh:
                    builder.thinking("", signature, True)
                else:
                    builder.thinking_signature(signature, append=True)
            elif "redactedContent" in reasoning:
                piece = fields.text(reasoning["redactedContent"], "reasoningContent.redactedContent")
                self._redacted.setdefault(index, []).append(piece)

    def _on_stop(self, data: dict[str, Any]) -> None:
        index = data.get("contentBlockIndex", 0)
        tool = self._tools.pop(index, None)
        if tool is not None:
            self.builder.tool_call_end(tool)
        pieces = self._redacted.pop(index, None)
        if pieces is not None:
            self.builder.redacted_thinking("".join(pieces))

    def _on_message_stop(self, data: dict[str, Any]) -> None:
        for index in list(self._redacted):
            self._on_stop({"contentBlockIndex": index})
        self.builder.close_open_tool_calls()
        reason = fields.text(data.get("stopReason"), "stopReason") or "end_turn"
        stop = STOP_REASONS.get(reason)
        if stop is None:
            stop = StopReason.ERROR
            self.error_message = f"generation stopped: {reason}"
        self.stop_reason = stop

    def _on_metadata(self, data: dict[str, Any]) -> None:
        usage = fields.obj(data.get("usage"), "metadata.usage")
        self.builder.usage = fields.usage(usage.get("inputTokens"), usage.get("outputTokens"), 0,
                                          usage.get("cacheReadInputTokens"), usage.get("cacheWriteInputTokens"),
                                          usage.get("totalTokens"))
        if self.stop_reason is not None:
            self.done = True

    # what each event type does; functions, not bound methods: a parser holding its own
    # methods would be a reference cycle keeping the run it reports to alive until a collection
    _HANDLERS: ClassVar[dict[str, Callable[[ConverseStreamParser, dict[str, Any]], None]]] = {
        "contentBlockDelta": _on_delta,
        "contentBlockStart": _on_start,
        "contentBlockStop": _on_stop,
        "messageStart": _on_message_start,
        "messageStop": _on_message_stop,
        "metadata": _on_metadata,
    }


class BedrockProvider(HttpStreamProvider):
    """Streams Bedrock models over ConverseStream."""

    protocol = WireProtocol("bedrock", build_request, lambda builder, mc: ConverseStreamParser(builder),
                            idle_timeout=90.0)
