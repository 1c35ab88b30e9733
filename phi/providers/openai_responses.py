"""OpenAI Responses API provider (SPEC §7; seed 001 §5 "OpenAI Responses API", REQ-123).

``POST {base_url}/responses`` with ``stream: true`` and ``store: false``. The system prompt goes in
``instructions``; history is a list of input items (messages, ``function_call``,
``function_call_output``, and ``reasoning`` items replayed verbatim with their
``encrypted_content``, which is therefore always requested from a reasoning model — with
``store: false`` an item without it cannot be replayed and is left out). The SSE stream has
``event: <type>`` lines and ends with exactly one of ``response.completed`` /
``response.incomplete`` / ``response.failed`` (there is no ``[DONE]``);
a standalone ``error`` event may precede it. Function-call deltas reference the item id
(``fc_…``); tool results go back with the ``call_id``, which is what :class:`ToolCall.id` holds.
A reasoning item is kept as a thinking block whose ``signature`` is the item's JSON; an output
item of a type phi does not model is kept whole as an opaque block (:func:`convert.opaque_signature`)
and replayed as an input item to the same service only.
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
from .base import AssistantBuilder, ErrorKind, ProviderError, StreamConfig, parse_arguments
from .http import HttpRequest, SSEParser, api_key, join_url, json_bytes
from .http_provider import HttpStreamProvider, WireProtocol
from .model_config import ModelConfig
from .sse import SSEEvent

log = get_logger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPAQUE = "openai_responses"  # the protocol named in the signature of opaque items (convert.opaque_signature)


# --------------------------------------------------------------------------- request


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    key = api_key(config.resolved_api_key(), mc.options.get("api_key_env") or "OPENAI_API_KEY")
    assert key is not None
    headers = {"content-type": "application/json", "accept": "text/event-stream",
               "accept-encoding": "identity", "authorization": f"Bearer {key}"}
    headers.update(mc.headers)
    url = join_url(mc.base_url or DEFAULT_BASE_URL, "responses")
    return HttpRequest(url, headers, json_bytes(build_body(config)), (key,))


def build_body(config: StreamConfig, model: str | None = None) -> dict[str, Any]:
    mc = config.model_config
    body: dict[str, Any] = {"model": model or mc.id, "input": convert_messages(config.messages, mc),
                            "stream": True, "store": False}
    if config.system_prompt:
        body["instructions"] = config.system_prompt
    max_tokens = config.max_tokens or mc.max_tokens
    if max_tokens:
        body["max_output_tokens"] = max_tokens
    if (temperature := convert.temperature(config)) is not None:
        body["temperature"] = temperature
    if config.tools:
        body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                          "parameters": t.parameters, "strict": False} for t in config.tools]
    choice = convert.tool_choice(config)
    if choice is not None:
        body["tool_choice"] = choice if choice in convert.TOOL_CHOICE_MODES else {"type": "function", "name": choice}
    if (parallel := convert.parallel_tool_calls(config)) is not None:
        body["parallel_tool_calls"] = parallel
    thinking = mc.reasoning and config.thinking_level != ThinkingLevel.OFF
    if thinking:
        body["reasoning"] = {"effort": convert.effort(config.thinking_level), "summary": "auto"}
    # A reasoning model reasons at its default effort even when no thinking is asked for; with
    # ``store: false`` its reasoning items can only be replayed with their encrypted content.
    if thinking or (mc.reasoning and mc.supports("encrypted_reasoning")):
        body["include"] = ["reasoning.encrypted_content"]
    return body


def convert_messages(messages: Sequence[Message], mc: ModelConfig) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    pending_images: list[ImageContent] = []
    for message in messages:
        if not isinstance(message, ToolResultMessage) and pending_images:
            items.append(_image_followup(pending_images))
            pending_images = []
        if isinstance(message, UserMessage):
            parts = _user_parts(message.content)
            if parts:
                items.append({"role": "user", "content": parts})
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message, mc))
        elif isinstance(message, ToolResultMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            items.append({"type": "function_call_output", "call_id": convert.responses_tool_id(message.tool_call_id),
                          "output": convert.result_text(message)})
            pending_images.extend(convert.result_images(message))
    if pending_images:
        items.append(_image_followup(pending_images))
    return items


def _image_followup(images: list[ImageContent]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": "Images returned by the tool call(s) above:"}]
    parts += [_image(i) for i in images]
    return {"role": "user", "content": parts}


def _user_parts(blocks: Sequence[Content]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent) and block.text:
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_image(block))
    return parts


def _image(image: ImageContent) -> dict[str, Any]:
    # ``detail`` is required by the API's schema (strict servers such as vLLM enforce it).
    return {"type": "input_image", "image_url": convert.data_url(image), "detail": "auto"}


def _assistant_text(text: str) -> dict[str, Any]:
    """Earlier assistant text, as an input message with string content: the output-message form
    (``output_text`` parts) requires the original item ``id``, which phi does not keep."""
    return {"type": "message", "role": "assistant", "content": text}


def _assistant_items(message: AssistantMessage, mc: ModelConfig) -> list[dict[str, Any]]:
    origin_ok = convert.same_origin(message, mc)
    items: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                items.append(_assistant_text(block.text))
        elif isinstance(block, ThinkingContent) and convert.is_opaque(block):
            opaque = convert.opaque_block(block, OPAQUE) if convert.same_service(message, mc) else None
            if opaque is not None:
                items.append(opaque)
            elif (summary := convert.foreign_summary(block)) is not None:  # another service's summary
                items.append(_assistant_text(summary))
        elif isinstance(block, ThinkingContent):
            item = _reasoning_item(block) if origin_ok else None
            if item is not None:
                items.append(item)
            elif not origin_ok and (text := convert.thinking_as_text(block)) is not None:
                items.append(_assistant_text(text))
        elif isinstance(block, ToolCall):
            items.append({"type": "function_call", "call_id": convert.responses_tool_id(block.id), "name": block.name,
                          "arguments": json.dumps(block.arguments)})
    return items


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The original reasoning item, stored as JSON in the signature, replayed verbatim — only
    with its ``encrypted_content``. phi sends ``store: false``, so the service keeps no item: one
    replayed by id alone is answered with 404 "Item with id 'rs_…' not found" (and every later
    call of the conversation would fail the same way), so an item without it is left out."""
    if not block.signature:
        return None
    try:
        item = json.loads(block.signature)
    except ValueError:
        return None
    if not is_object(item) or item.get("type") != "reasoning":
        return None
    encrypted = item.get("encrypted_content")
    if not isinstance(encrypted, str) or not encrypted:
        return None
    item.pop("status", None)
    return item


# --------------------------------------------------------------------------- response


class ResponsesParser(SSEParser):
    provider_name = "openai_responses"

    def __init__(self, builder: AssistantBuilder) -> None:
        super().__init__(builder)
        self._tools: dict[str, int] = {}  # item id (fc_…) -> builder index
        self._fresh: set[str] = set()  # message/reasoning items without a delta yet
        self._reasoning_open: set[str] = set()  # reasoning items that opened a thinking block
        self._saw_tool = False
        self.response_id = ""

    def handle(self, event: SSEEvent) -> None:
        data = self.loads_object(event.data)
        handler = self._HANDLERS.get(data.get("type") or event.event)
        if handler is not None:  # unknown item and event types are ignored
            handler(self, data)

    def _on_created(self, data: dict[str, Any]) -> None:
        self.response_id = fields.text(fields.obj(data.get("response"), "response").get("id"), "response.id")
        self.builder.start()

    def _on_item_added(self, data: dict[str, Any]) -> None:
        item = fields.obj(data.get("item"), "item")
        kind = item.get("type")
        item_id = _item_id(item, data)
        if kind == "function_call":
            self._saw_tool = True
            call_id = fields.text(item.get("call_id"), "item.call_id") or item_id
            self._tools[item_id] = self.builder.tool_call_start(call_id, fields.text(item.get("name"), "item.name"))
        elif kind in ("message", "reasoning"):
            self._fresh.add(item_id)

    def _take_fresh(self, item_id: str) -> bool:
        if item_id in self._fresh:
            self._fresh.discard(item_id)
            return True
        return False

    def _on_text(self, data: dict[str, Any]) -> None:
        self.builder.text(fields.text(data.get("delta"), "delta"), self._take_fresh(data.get("item_id", "")))

    def _on_reasoning(self, data: dict[str, Any]) -> None:
        item_id = data.get("item_id", "")
        self._reasoning_open.add(item_id)
        self.builder.thinking(fields.text(data.get("delta"), "delta"), None, self._take_fresh(item_id))

    def _on_summary_part(self, data: dict[str, Any]) -> None:
        if fields.count(data.get("summary_index")) > 0 and data.get("item_id") in self._reasoning_open:
            self.builder.thinking("\n\n")

    def _on_args(self, data: dict[str, Any]) -> None:
        index = self._tools.get(data.get("item_id", ""))
        if index is not None:
            self.builder.tool_call_delta(index, fields.text(data.get("delta"), "delta"))

    def _on_item_done(self, data: dict[str, Any]) -> None:
        item = fields.obj(data.get("item"), "item")
        kind = item.get("type")
        item_id = _item_id(item, data)
        if kind == "function_call":
            index = self._tools.pop(item_id, None)
            if index is not None:
                raw = item.get("arguments")
                args = parse_arguments(raw) if isinstance(raw, str) else None  # the authoritative text
                self.builder.tool_call_end(index, args)
        elif kind == "reasoning":
            signature = json.dumps(item, separators=(",", ":"))
            if item_id in self._reasoning_open:
                self.builder.thinking_signature(signature)
            else:  # no summary was streamed: keep the item so it can be replayed
                self._fresh.discard(item_id)
                self.builder.thinking("", signature, True)
        elif kind != "message" and isinstance(kind, str):  # an item phi does not model: kept whole
            self.builder.redacted_thinking(json.dumps(item, separators=(",", ":"), ensure_ascii=False),
                                           convert.opaque_signature(OPAQUE))

    def _on_terminal(self, data: dict[str, Any]) -> None:
        response = fields.obj(data.get("response"), "response")
        self._set_usage(response.get("usage"))
        self.done = True
        self.builder.close_open_tool_calls()
        status = response.get("status") or str(data.get("type", "")).rsplit(".", 1)[-1]
        if status == "completed":
            self.stop_reason = StopReason.TOOL_USE if self._saw_tool else StopReason.STOP
        elif status == "incomplete":
            reason = fields.obj(response.get("incomplete_details"), "incomplete_details").get("reason") or "unknown"
            if reason == "max_output_tokens":
                self.stop_reason = StopReason.LENGTH
            else:
                self.stop_reason = StopReason.ERROR
                self.error_message = f"response incomplete: {reason}"
        else:
            error = response.get("error") or {"message": f"response {status}"}
            raise convert.error_from_payload(error)

    def _on_error(self, data: dict[str, Any]) -> None:
        nested = data.get("error")
        error = nested if is_object(nested) else data  # nested (2025+) or flat
        problem = convert.error_from_payload({k: error.get(k) for k in ("code", "message", "param", "type")})
        if data.get("code") == "insufficient_quota":
            problem.kind = ErrorKind.API  # retrying cannot help until the account is topped up
        raise problem

    def _set_usage(self, usage: object) -> None:
        if not usage:
            return
        usage = fields.obj(usage, "response.usage")
        inp = fields.count(usage.get("input_tokens"))
        cached = fields.count(fields.obj(usage.get("input_tokens_details"), "input_tokens_details").get("cached_tokens"))
        reasoning = fields.obj(usage.get("output_tokens_details"), "output_tokens_details").get("reasoning_tokens")
        self.builder.usage = fields.usage(max(0, inp - cached), usage.get("output_tokens"), reasoning, cached, 0,
                                          usage.get("total_tokens"))

    # what each event type does; functions, not bound methods: a parser holding its own
    # methods would be a reference cycle keeping the run it reports to alive until a collection
    _HANDLERS: ClassVar[dict[str, Callable[[ResponsesParser, dict[str, Any]], None]]] = {
        "response.output_text.delta": _on_text,
        "response.refusal.delta": _on_text,
        "response.reasoning_summary_text.delta": _on_reasoning,
        "response.reasoning_text.delta": _on_reasoning,
        "response.reasoning_summary_part.added": _on_summary_part,
        "response.function_call_arguments.delta": _on_args,
        "response.output_item.added": _on_item_added,
        "response.output_item.done": _on_item_done,
        "response.created": _on_created,
        "response.completed": _on_terminal,
        "response.incomplete": _on_terminal,
        "response.failed": _on_terminal,
        "error": _on_error,
    }


def _item_id(item: dict[str, Any], data: dict[str, Any]) -> str:
    """An output item's id (``fc_…``, ``rs_…``), or its output index when it has none."""
    item_id = item.get("id")
    return item_id if type(item_id) is str and item_id else str(data.get("output_index"))


class OpenAIResponsesProvider(HttpStreamProvider):
    """Streams OpenAI models over the Responses API."""

    protocol = WireProtocol("openai_responses", build_request, lambda builder, mc: ResponsesParser(builder),
                            service="openai")


__all__ = ["OpenAIResponsesProvider", "ResponsesParser", "build_request", "build_body", "convert_messages",
           "ProviderError"]
