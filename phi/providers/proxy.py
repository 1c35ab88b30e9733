"""Proxy stream provider: forwards a model call to an HTTP proxy that speaks SSE (SPEC §7;
seed 002 §7.4 "Proxy StreamFn").

For environments without direct provider access. ``POST {base_url}`` with
``Authorization: Bearer {token}`` (``api_key`` or ``PHI_PROXY_TOKEN``) and the JSON body
``{"model": {id, api, provider}, "context": {systemPrompt, messages, tools}, "options":
{thinkingLevel, maxTokens, temperature, toolChoice?, parallelToolCalls?}}`` (messages in the SPEC
DATA-6 JSON shapes). The proxy answers with ``data: {json}`` events that carry *deltas only* (no partial message, to save bandwidth); the
full message is rebuilt here:

``start`` · ``text_start`` / ``text_delta {contentIndex, delta}`` / ``text_end`` ·
``thinking_start`` / ``thinking_delta`` / ``thinking_end {signature?}`` ·
``toolcall_start {contentIndex, id, toolName}`` / ``toolcall_delta {delta}`` / ``toolcall_end`` ·
``done {reason, usage}`` · ``error {reason: "error"|"aborted", errorMessage, usage}``.
"""

from __future__ import annotations

from typing import Any

from ..json_values import is_object
from ..log import get_logger
from ..types import StopReason, message_to_json
from . import convert, fields
from .base import AssistantBuilder, ErrorKind, ProviderError, StreamConfig
from .http import HttpRequest, SSEParser, api_key, json_bytes
from .http_provider import HttpStreamProvider, WireProtocol
from .sse import SSEEvent

log = get_logger(__name__)


def build_request(config: StreamConfig) -> HttpRequest:
    mc = config.model_config
    if not mc.base_url:
        raise ProviderError(ErrorKind.OTHER, "the proxy provider needs ModelConfig.base_url (the proxy's URL)")
    token = api_key(config.resolved_api_key(), "PHI_PROXY_TOKEN", what="proxy token")
    headers = {"content-type": "application/json", "accept": "text/event-stream",
               "accept-encoding": "identity", "authorization": f"Bearer {token}"}
    headers.update(mc.headers)
    return HttpRequest(mc.base_url, headers, json_bytes(build_body(config)), (str(token),))


def build_body(config: StreamConfig) -> dict[str, Any]:
    mc = config.model_config
    options: dict[str, Any] = {"thinkingLevel": config.thinking_level.value,
                               "maxTokens": config.max_tokens or mc.max_tokens}
    if (temperature := convert.temperature(config)) is not None:
        options["temperature"] = temperature
    if (choice := convert.tool_choice(config)) is not None:
        options["toolChoice"] = choice
    if (parallel := convert.parallel_tool_calls(config)) is not None:
        options["parallelToolCalls"] = parallel
    return {
        "model": {"id": mc.id, "api": mc.options.get("upstream_api", ""), "provider": mc.provider},
        "context": {"systemPrompt": config.system_prompt,
                    "messages": [message_to_json(m) for m in config.messages],
                    "tools": [t.to_json() for t in config.tools]},
        "options": options,
    }


class ProxyParser(SSEParser):
    provider_name = "proxy"

    def __init__(self, builder: AssistantBuilder) -> None:
        super().__init__(builder)
        self._tools: dict[int, int] = {}  # proxy contentIndex -> builder index
        self._fresh: set[int] = set()

    def handle(self, event: SSEEvent) -> None:
        data = self.loads_object(event.data)
        kind = data.get("type")
        builder = self.builder
        index = data.get("contentIndex", 0)
        if kind == "start":
            builder.start()
        elif kind in ("text_start", "thinking_start"):
            self._fresh.add(index)
        elif kind == "text_delta":
            builder.text(fields.text(data.get("delta"), "delta"), self._take(index))
        elif kind == "thinking_delta":
            builder.thinking(fields.text(data.get("delta"), "delta"), None, self._take(index))
        elif kind == "thinking_end" and data.get("signature"):
            builder.thinking_signature(fields.text(data["signature"], "signature"))
        elif kind == "toolcall_start":
            call_id = fields.text(data.get("id"), "id") or f"call_{index}"
            self._tools[index] = builder.tool_call_start(call_id, fields.text(data.get("toolName"), "toolName"))
        elif kind == "toolcall_delta" and index in self._tools:
            builder.tool_call_delta(self._tools[index], fields.text(data.get("delta"), "delta"))
        elif kind == "toolcall_end" and index in self._tools:
            builder.tool_call_end(self._tools.pop(index))
        elif kind == "done":
            self._usage(data.get("usage"))
            reason = data.get("reason", "stop")
            self.stop_reason = StopReason(reason) if reason in ("stop", "length", "toolUse") else StopReason.STOP
            self.done = True
        elif kind == "error":
            self._usage(data.get("usage"))
            message = str(data.get("errorMessage") or "proxy reported an error")
            if data.get("reason") == "aborted":
                self.stop_reason, self.error_message, self.done = StopReason.ABORTED, message, True
                return
            raise ProviderError(ErrorKind.API, message)

    def _take(self, index: int) -> bool:
        if index in self._fresh:
            self._fresh.discard(index)
            return True
        return False

    def _usage(self, usage: object) -> None:
        if is_object(usage):
            self.builder.usage = fields.usage(usage.get("input"), usage.get("output"), usage.get("reasoning"),
                                              usage.get("cache_read"), usage.get("cache_write"),
                                              usage.get("total_tokens"))


class ProxyProvider(HttpStreamProvider):
    """Streams through a phi/pi-style proxy server."""

    protocol = WireProtocol("proxy", build_request, lambda builder, mc: ProxyParser(builder))
