"""Anthropic Messages API provider (SPEC §7; seed 001 §5 "Anthropic Messages API", REQ-040,
REQ-126..129, REQ-131, REQ-159, REQ-160).

``POST {base_url}/v1/messages`` with ``"stream": true``. Auth is ``x-api-key`` (``ANTHROPIC_API_KEY``)
or, for OAuth tokens (``sk-ant-oat…`` or ``options["oauth"]``), ``Authorization: Bearer`` plus the
Claude Code header set. The SSE stream is ``message_start`` → per block ``content_block_start`` /
``content_block_delta``* / ``content_block_stop`` → ``message_delta`` → ``message_stop``, with
``ping`` anywhere and ``error`` possible mid-stream. Tool input arrives as ``input_json_delta``
fragments and is parsed at ``content_block_stop`` (or at the end, if the block never closes).
A block of a type phi does not model (``compaction``, ``server_tool_use``, ``web_search_tool_result``
...) is kept whole as an *opaque block* (see :func:`convert.opaque_signature`) and sent back as it
came, to Anthropic only.
"""

from __future__ import annotations

import json
from typing import Any, Callable, ClassVar, Sequence

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
from .base import (
    AssistantBuilder,
    CacheStrategy,
    ErrorKind,
    ProviderError,
    StreamConfig,
    is_context_overflow,
    parse_arguments,
)
from .http import HttpRequest, SSEParser, api_key, join_url, json_bytes
from .http_provider import HttpStreamProvider, WireProtocol
from .model_config import ModelConfig
from .sse import SSEEvent

log = get_logger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
OAUTH_BETAS = "claude-code-20250219,oauth-2025-04-20,fine-grained-tool-streaming-2025-05-14"
OAUTH_USER_AGENT = "claude-cli/2.1.2"
# Requests made with a Claude Code OAuth token must open the system prompt with this identity line.
OAUTH_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
EPHEMERAL = {"type": "ephemeral"}
OPAQUE = "anthropic"  # the protocol named in the signature of opaque blocks (convert.opaque_signature)
KNOWN_BLOCKS = ("text", "thinking", "redacted_thinking", "tool_use")

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
    "refusal": StopReason.ERROR,
}

ERROR_KINDS: dict[str, ErrorKind] = {
    "overloaded_error": ErrorKind.NETWORK,
    "api_error": ErrorKind.NETWORK,
    "rate_limit_error": ErrorKind.RATE_LIMITED,
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "invalid_request_error": ErrorKind.API,
    "not_found_error": ErrorKind.API,
    "request_too_large": ErrorKind.CONTEXT_OVERFLOW,
}


# --------------------------------------------------------------------------- request


def is_oauth(model_config: ModelConfig, key: str) -> bool:
    return bool(model_config.options.get("oauth")) or key.startswith("sk-ant-oat")


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    key = api_key(config.resolved_api_key(), "ANTHROPIC_API_KEY")
    assert key is not None
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "accept-encoding": "identity",
        "anthropic-version": API_VERSION,
    }
    if is_oauth(mc, key):
        headers.update({
            "authorization": f"Bearer {key}",
            "anthropic-beta": OAUTH_BETAS,
            "x-app": "cli",
            "anthropic-dangerous-direct-browser-access": "true",
            "user-agent": OAUTH_USER_AGENT,
        })
    else:
        headers["x-api-key"] = key
    headers.update(mc.headers)
    url = join_url(mc.base_url or DEFAULT_BASE_URL, "v1/messages")
    return HttpRequest(url, headers, json_bytes(build_body(config, oauth=is_oauth(mc, key))), (key,))


def build_body(config: StreamConfig, oauth: bool = False) -> dict[str, Any]:
    mc = config.model_config
    max_tokens = config.max_tokens or mc.max_tokens
    body: dict[str, Any] = {"model": mc.id, "max_tokens": max_tokens, "stream": True}
    cache = _cache_flags(config)
    system: list[dict[str, Any]] = [{"type": "text", "text": OAUTH_IDENTITY}] if oauth else []
    if convert.has_text(config.system_prompt):
        system.append({"type": "text", "text": config.system_prompt})
    if system:
        if cache[0]:
            system[-1]["cache_control"] = EPHEMERAL
        body["system"] = system
    messages = convert_messages(config.messages, mc)
    if cache[2] and len(messages) >= 2:
        _mark_cache(messages[-2])
    body["messages"] = messages
    if config.tools:
        tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in config.tools]
        if cache[1]:
            tools[-1]["cache_control"] = EPHEMERAL
        body["tools"] = tools
    choice = _tool_choice(config)
    if choice is not None:
        body["tool_choice"] = choice
    if config.thinking_level != ThinkingLevel.OFF and mc.reasoning:
        if choice is not None and choice["type"] in ("any", "tool"):
            raise ProviderError(ErrorKind.API, FORCED_TOOL_WITH_THINKING)
        budget = convert.thinking_budget(config.thinking_level, mc)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if max_tokens <= budget:  # the API requires max_tokens > budget_tokens
            body["max_tokens"] = budget + max(1024, max_tokens)
    elif (temperature := convert.temperature(config)) is not None:
        body["temperature"] = temperature
    return body


FORCED_TOOL_WITH_THINKING = ("Anthropic refuses thinking together with a tool_choice that forces a tool call "
                             "('required' or a tool name); use thinking_level 'off' for this run, or tool_choice "
                             "'auto'")
TOOL_CHOICE_TYPES = {"auto": "auto", "none": "none", "required": "any"}


def _tool_choice(config: StreamConfig) -> dict[str, Any] | None:
    """``tool_choice``: ``{"type": "auto" | "none" | "any"}`` or ``{"type": "tool", "name": ...}``;
    ``parallel_tool_calls=False`` is ``disable_parallel_tool_use`` (not allowed with "none")."""
    choice = convert.tool_choice(config)
    parallel = convert.parallel_tool_calls(config)
    if choice is None and parallel is not False:
        return None
    kind = TOOL_CHOICE_TYPES.get(choice or "auto", "tool")
    out: dict[str, Any] = {"type": kind}
    if kind == "tool":
        out["name"] = choice
    if parallel is False and kind != "none":
        out["disable_parallel_tool_use"] = True
    return out


def _cache_flags(config: StreamConfig) -> tuple[bool, bool, bool]:
    """(system, tools, messages) breakpoints per CacheStrategy (REQ-126, REQ-127)."""
    cc = config.cache_config
    if not cc.enabled or cc.strategy == CacheStrategy.DISABLED:
        return False, False, False
    if cc.strategy == CacheStrategy.MANUAL:
        return cc.cache_system, cc.cache_tools, cc.cache_messages
    return True, True, True


def _mark_cache(message: dict[str, Any]) -> None:
    """Put a breakpoint on the last cacheable block of a message."""
    for block in reversed(message["content"]):
        if block.get("type") in ("text", "image", "tool_use", "tool_result"):
            block["cache_control"] = EPHEMERAL
            return


def convert_messages(messages: Sequence[Message], mc: ModelConfig) -> list[dict[str, Any]]:
    """Messages API turns. Text blocks of nothing but whitespace are left out (the API refuses
    them, see :func:`convert.has_text`), and a message left empty is skipped."""
    out: list[dict[str, Any]] = []
    sent = False
    for message in messages:
        sent = True
        if isinstance(message, UserMessage):
            content = [b for b in (_user_block(c) for c in message.content) if b is not None]
            sent = bool(content)
            if content:
                out.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            content = _assistant_blocks(message, mc)
            if content:
                out.append({"role": "assistant", "content": content})
        elif isinstance(message, ToolResultMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            block = {
                "type": "tool_result",
                "tool_use_id": convert.safe_tool_id(message.tool_call_id),
                "content": [b for b in (_user_block(c) for c in message.content) if b is not None]
                or [{"type": "text", "text": "(no output)"}],
                "is_error": message.is_error,
            }
            last = out[-1] if out else None
            if last and last["role"] == "user" and last["content"] and last["content"][-1]["type"] == "tool_result":
                last["content"].append(block)  # all results of one turn go in one user message
            else:
                out.append({"role": "user", "content": [block]})
    convert.check_last_message_sent(messages, sent, "Anthropic")
    return out


def _user_block(block: Content) -> dict[str, Any] | None:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text} if convert.has_text(block.text) else None
    if isinstance(block, ImageContent):
        return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}
    return None


def _assistant_blocks(message: AssistantMessage, mc: ModelConfig) -> list[dict[str, Any]]:
    origin_ok = convert.same_origin(message, mc)
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if convert.has_text(block.text):
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent) and convert.is_opaque(block):
            opaque = convert.opaque_block(block, OPAQUE) if convert.same_service(message, mc) else None
            if opaque is not None:
                blocks.append(opaque)
            elif (summary := convert.foreign_summary(block)) is not None:  # another service's summary
                blocks.append({"type": "text", "text": summary})
        elif isinstance(block, ThinkingContent):
            if convert.replayable_thinking(block, origin_ok):
                if block.redacted:
                    blocks.append({"type": "redacted_thinking", "data": block.thinking})
                else:
                    blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
            elif (text := convert.thinking_as_text(block)) is not None:
                blocks.append({"type": "text", "text": text})
        elif isinstance(block, ToolCall):
            blocks.append({"type": "tool_use", "id": convert.safe_tool_id(block.id), "name": block.name,
                           "input": block.arguments})
    return blocks


# --------------------------------------------------------------------------- response


class AnthropicParser(SSEParser):
    provider_name = "anthropic"

    def __init__(self, builder: AssistantBuilder) -> None:
        super().__init__(builder)
        self.message_id = ""
        self._kind: dict[int, str] = {}  # anthropic block index -> block type
        self._tool: dict[int, int] = {}  # anthropic block index -> builder index
        self._fresh: set[int] = set()  # text/thinking blocks that have not had a delta yet
        self._usage: dict[str, Any] = {}
        self._start_input: dict[int, dict[str, Any]] = {}  # input sent whole in content_block_start
        self._opaque: dict[int, dict[str, Any]] = {}  # blocks of types phi does not model, as they build up
        self._opaque_json: dict[int, list[str]] = {}  # their streamed input_json_delta fragments

    def handle(self, event: SSEEvent) -> None:
        data = self.loads_object(event.data)
        kind = data.get("type") or event.event
        if kind == "content_block_delta":  # the hot path: one text delta of an open block
            delta = data["delta"]
            if delta.get("type") == "text_delta" and data["index"] not in self._fresh:
                text = delta["text"]
                self.builder.text(text if type(text) is str else fields.text(text, "delta.text"))
                return
        handler = self._HANDLERS.get(kind)
        if handler is not None:  # ping and unknown event types are ignored (versioning policy)
            handler(self, data)

    def _on_message_start(self, data: dict[str, Any]) -> None:
        message = fields.obj(data.get("message"), "message")
        self.message_id = fields.text(message.get("id"), "message.id")
        self._set_usage(fields.obj(message.get("usage"), "message.usage"))
        self.builder.start()

    def _on_block_start(self, data: dict[str, Any]) -> None:
        index = data["index"]
        block = fields.obj(data["content_block"], "content_block")
        kind = block.get("type", "")
        self._kind[index] = kind
        builder = self.builder
        if kind == "tool_use":
            self._tool[index] = builder.tool_call_start(fields.text(block.get("id"), "content_block.id")
                                                        or f"toolu_{index}",
                                                        fields.text(block.get("name"), "content_block.name"))
            start_input = fields.arguments(block.get("input"), "content_block.input")
            if start_input:
                self._start_input[index] = start_input
        elif kind == "redacted_thinking":
            builder.redacted_thinking(fields.text(block.get("data"), "content_block.data"))
        elif kind == "text":
            self._fresh.add(index)
            text = fields.text(block.get("text"), "content_block.text")
            if text:
                self._fresh.discard(index)
                builder.text(text, new_block=True)
        elif kind == "thinking":
            self._fresh.add(index)
        elif kind not in KNOWN_BLOCKS:
            self._opaque[index] = dict(block)

    def _on_delta(self, data: dict[str, Any]) -> None:
        index = data["index"]
        delta = fields.obj(data["delta"], "delta")
        kind = delta.get("type")
        builder = self.builder
        if index in self._opaque:
            self._opaque_delta(index, delta)
        elif kind == "text_delta":
            fresh = index in self._fresh
            if fresh:
                self._fresh.discard(index)
            builder.text(fields.text(delta["text"], "delta.text"), fresh)
        elif kind == "input_json_delta":
            tool = self._tool.get(index)
            if tool is not None:
                builder.tool_call_delta(tool, fields.text(delta.get("partial_json"), "delta.partial_json"))
        elif kind == "thinking_delta":
            fresh = index in self._fresh
            if fresh:
                self._fresh.discard(index)
            builder.thinking(fields.text(delta["thinking"], "delta.thinking"), None, fresh)
        elif kind == "signature_delta":
            signature = fields.text(delta.get("signature"), "delta.signature")
            if index in self._fresh:  # a thinking block with no text: open it with the signature
                self._fresh.discard(index)
                builder.thinking("", signature, True)
            else:
                builder.thinking_signature(signature, append=True)
        # citations_delta and unknown delta types carry nothing we keep

    def _opaque_delta(self, index: int, delta: dict[str, Any]) -> None:
        """A delta of an opaque block: ``input_json_delta`` fragments build its ``input``; the
        string fields of any other delta type extend the block's fields of the same name (as a
        ``compaction_delta``'s ``content`` extends the block's ``content``)."""
        if delta.get("type") == "input_json_delta":
            piece = fields.text(delta.get("partial_json"), "delta.partial_json")
            self._opaque_json.setdefault(index, []).append(piece)
            return
        block = self._opaque[index]
        for key, value in delta.items():
            if key == "type":
                continue
            current = block.get(key)
            block[key] = current + value if isinstance(current, str) and isinstance(value, str) else value

    def _close_opaque(self, index: int) -> None:
        block = self._opaque.pop(index)
        pieces = self._opaque_json.pop(index, None)
        if pieces is not None:
            block["input"] = parse_arguments("".join(pieces))
        self.builder.redacted_thinking(json.dumps(block, separators=(",", ":"), ensure_ascii=False),
                                       convert.opaque_signature(OPAQUE))

    def _on_block_stop(self, data: dict[str, Any]) -> None:
        index = data["index"]
        if index in self._opaque:
            self._close_opaque(index)
            return
        tool = self._tool.pop(index, None)
        if tool is None:
            return
        start = self._start_input.pop(index, None)
        if start is not None and not self.builder.tool_call_arguments_text(tool).strip():
            self.builder.tool_call_end(tool, dict(start))
        else:
            self.builder.tool_call_end(tool)

    def _on_message_delta(self, data: dict[str, Any]) -> None:
        reason = fields.obj(data.get("delta"), "delta").get("stop_reason")
        if reason:
            reason = fields.text(reason, "delta.stop_reason")
            self.stop_reason = STOP_REASONS.get(reason, StopReason.STOP)
            if reason == "refusal":
                self.error_message = "the model declined to answer (stop_reason: refusal)"
            elif reason not in STOP_REASONS:
                log.warning("unknown anthropic stop_reason %r treated as stop", reason[:100])
        self._set_usage(fields.obj(data.get("usage"), "usage"))

    def _on_message_stop(self, data: dict[str, Any]) -> None:
        for index in sorted(self._opaque):  # a block left open still goes into the reply
            self._close_opaque(index)
        if self.stop_reason is None:
            self.stop_reason = StopReason.STOP
        self.done = True

    def _on_error(self, data: dict[str, Any]) -> None:
        nested = data.get("error")
        error = nested if is_object(nested) else {"message": nested}
        kind = ERROR_KINDS.get(str(error.get("type", "")), ErrorKind.API)
        message = str(error.get("message") or error.get("type") or "stream error")
        if kind is ErrorKind.API and is_context_overflow(None, message):
            kind = ErrorKind.CONTEXT_OVERFLOW
        status = 529 if error.get("type") == "overloaded_error" else None
        raise ProviderError(kind, message, status=status, body=str(data)[:4000])

    def _set_usage(self, usage: dict[str, Any]) -> None:
        """Usage is cumulative: later values replace earlier ones, missing ones are kept."""
        merged = self._usage
        for key, value in usage.items():
            if value is not None:
                merged[key] = value
        details = merged.get("output_tokens_details")
        thinking = details.get("thinking_tokens") if is_object(details) else 0
        self.builder.usage = fields.usage(merged.get("input_tokens"), merged.get("output_tokens"), thinking,
                                          merged.get("cache_read_input_tokens"),
                                          merged.get("cache_creation_input_tokens"))

    # what each event type does; functions, not bound methods: a parser holding its own
    # methods would be a reference cycle keeping the run it reports to alive until a collection
    _HANDLERS: ClassVar[dict[str, Callable[[AnthropicParser, dict[str, Any]], None]]] = {
        "content_block_delta": _on_delta,
        "content_block_start": _on_block_start,
        "content_block_stop": _on_block_stop,
        "message_start": _on_message_start,
        "message_delta": _on_message_delta,
        "message_stop": _on_message_stop,
        "error": _on_error,
    }


class AnthropicProvider(HttpStreamProvider):
    """Streams Claude models over the Messages API."""

    # The Messages API sends ``ping`` events while the model works, so a minute without any is a stall.
    protocol = WireProtocol("anthropic", build_request, lambda builder, mc: AnthropicParser(builder),
                            idle_timeout=120.0)
