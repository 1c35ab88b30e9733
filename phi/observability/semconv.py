"""The OpenTelemetry names phi's traces use, and how phi's values map onto them (SPEC §17 OTEL-2).

phi follows the GenAI semantic conventions (status: development) of **semantic-conventions
v1.41.0** — the last release whose GenAI pages live in the main repository: ``gen-ai-spans.md``
(inference and ``execute_tool`` spans), ``gen-ai-agent-spans.md`` (``invoke_agent``,
``invoke_workflow``) and ``mcp.md`` (MCP attributes on a tool span). Plain constants: nothing here
imports OpenTelemetry.

Only the v1.41.0 names are written. ``OtelTracer(legacy_names=True)`` also writes each renamed
attribute under the name it had in v1.36.0 (``gen_ai.system`` beside ``gen_ai.provider.name``) for a
backend that still reads only that one — unless ``OTEL_SEMCONV_STABILITY_OPT_IN`` (comma-separated)
names ``gen_ai_latest_experimental``, the conventions' way to ask for the latest names alone.
"""

from __future__ import annotations

import os
from typing import Mapping

from ..loop.tool_execution import (
    ABORTED,
    INVALID_ARGS,
    NOT_FOUND,
    RAISED,
    SKIPPED_FOR_STEERING,
    TIMED_OUT,
    TRUNCATED_CALL,
    VETOED,
)
from ..types import StopReason

SEMCONV_VERSION = "1.41.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
INSTRUMENTATION_NAME = "phi"

OPT_IN_VARIABLE = "OTEL_SEMCONV_STABILITY_OPT_IN"
LATEST_EXPERIMENTAL = "gen_ai_latest_experimental"
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# gen_ai.* (registry/attributes/gen-ai.md)
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
SYSTEM_V136 = "gen_ai.system"  # v1.36.0's name of gen_ai.provider.name (deprecated; OtelTracer(legacy_names=True))
AGENT_ID = "gen_ai.agent.id"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
WORKFLOW_NAME = "gen_ai.workflow.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"  # opt-in content
TOOL_RESULT = "gen_ai.tool.call.result"  # opt-in content
INPUT_MESSAGES = "gen_ai.input.messages"  # opt-in content
OUTPUT_MESSAGES = "gen_ai.output.messages"  # opt-in content
ERROR_TYPE = "error.type"

# mcp.* and the transport (gen-ai/mcp.md, "Client")
MCP_METHOD = "mcp.method.name"
MCP_PROTOCOL_VERSION = "mcp.protocol.version"
NETWORK_TRANSPORT = "network.transport"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# operation names and the spans they name
CHAT = "chat"
INVOKE_AGENT = "invoke_agent"
INVOKE_WORKFLOW = "invoke_workflow"
EXECUTE_TOOL = "execute_tool"
OTHER_ERROR = "_OTHER"

# phi's own attributes and span events (phi.*: not part of the conventions)
LOOP_ID = "phi.loop_id"
PARENT_LOOP_ID = "phi.parent_loop_id"
CHILD_LOOP_ID = "phi.child_loop_id"
CONTINUATION = "phi.continuation_kind"
OUTCOME = "phi.run.outcome"
TURNS = "phi.run.turns"
RETRIES = "phi.retries"
STOP_REASON = "phi.stop_reason"  # phi's StopReason: the finish reason's schema has no word for an abort
PARALLEL_LOOP_IDS = "phi.parallel.loop_ids"
SELECTED_LOOP_ID = "phi.parallel.selected_loop_id"
SELECTED_INDEX = "phi.parallel.selected_config_index"
RETRY_EVENT = "phi.retry"
RETRY_NUMBER = "phi.retry.number"
RETRY_DELAY = "phi.retry.delay_s"

# phi's provider ids (ModelConfig.provider, AssistantMessage.provider) -> gen_ai.provider.name
_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai_responses": "openai",  # the Responses protocol's id (a failed reply names the protocol)
    "azure_openai_responses": "azure.ai.openai",
    "azure_openai": "azure.ai.openai",
    "google": "gcp.gemini",
    "gemini": "gcp.gemini",
    "google_vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "cohere": "cohere",
}

# StopReason -> finish reason: a word of the output-messages schema's FinishReason (stop, length,
# content_filter, tool_call, error). An aborted reply ended in an error (error.type ``cancelled``);
# phi's own reason stays in ``phi.stop_reason``.
_FINISH = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_USE: "tool_call",
    StopReason.ERROR: "error",
    StopReason.ABORTED: "error",
}

# phi's fixed tool-result texts (SPEC TOOL-7) -> error.type; anything else a tool reported is ``tool_error``
_TOOL_ERRORS = (
    (NOT_FOUND.split("{")[0], NOT_FOUND.split("}")[-1], "tool_not_found"),
    (INVALID_ARGS.split("{")[0], "", "invalid_arguments"),
    (TIMED_OUT.split("{")[0], "", "timeout"),
    (SKIPPED_FOR_STEERING, "", "skipped"),
    (VETOED, "", "vetoed"),
    (TRUNCATED_CALL, "", "truncated_call"),
    (ABORTED, "", "cancelled"),
)
_RAISED_HEAD, _RAISED_MIDDLE = RAISED.split("{")[0], " raised "
_PROVIDER_KINDS = ("rate_limited", "network", "auth", "api", "context_overflow", "cancelled", "other")


def latest_only(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``OTEL_SEMCONV_STABILITY_OPT_IN`` names ``gen_ai_latest_experimental``."""
    value = (os.environ if environ is None else environ).get(OPT_IN_VARIABLE, "")
    return LATEST_EXPERIMENTAL in {part.strip() for part in value.split(",")}


def capture_from_environment(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for content on spans:
    ``true``, ``span_only`` or ``span_and_event`` (any case) do; unset and anything else do not."""
    value = (os.environ if environ is None else environ).get(CAPTURE_VARIABLE, "")
    return value.strip().lower() in {"true", "1", "yes", "span_only", "span_and_event"}


def provider_name(provider: str) -> str:
    """``gen_ai.provider.name`` for one of phi's provider ids; an unknown id is kept as it is."""
    return _PROVIDERS.get(provider, provider or OTHER_ERROR)


def finish_reason(reason: StopReason) -> str:
    """``gen_ai.response.finish_reasons`` entry for phi's :class:`~phi.types.StopReason`."""
    return _FINISH.get(reason, "error")


def provider_error_type(message: str | None) -> str:
    """``error.type`` of a failed reply: the ``ProviderError`` kind its text starts with
    (``rate_limited: HTTP 429: ...``), else ``_OTHER``."""
    head = (message or "").split(":", 1)[0].strip()
    return head if head in _PROVIDER_KINDS else OTHER_ERROR


def tool_error_type(text: str) -> str:
    """``error.type`` of a failed tool call from its result text (SPEC TOOL-7): ``tool_not_found``,
    ``invalid_arguments``, ``timeout``, ``skipped``, ``vetoed``, ``truncated_call``, ``cancelled``, the
    exception's class for ``Tool X raised KIND: ...``, else ``tool_error`` (the tool reported it)."""
    for head, tail, kind in _TOOL_ERRORS:
        if text.startswith(head) and text.rstrip().endswith(tail):
            return kind
    if text.startswith(_RAISED_HEAD) and _RAISED_MIDDLE in text:
        kind = text.split(_RAISED_MIDDLE, 1)[1].split(":", 1)[0].strip()
        if kind.isidentifier():
            return kind
    return "tool_error"
