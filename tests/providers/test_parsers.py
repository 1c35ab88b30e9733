"""Stop-reason mapping (REQ-043) and edge cases of each parser, fed bytes directly (no HTTP)."""

from __future__ import annotations

import json

import pytest

from phi.providers.anthropic import AnthropicParser
from phi.providers.base import ErrorKind, ProviderError
from phi.providers.bedrock import ConverseStreamParser
from phi.providers.eventstream import encode_message
from phi.providers.google import GeminiParser
from phi.providers.http import make_builder
from phi.providers.model_config import ModelConfig
from phi.providers.openai import ChatCompletionsParser
from phi.providers.openai_responses import ResponsesParser
from phi.types import StopReason

from .conftest import Collector


def sse(*payloads) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


def finish(parser, body: bytes):
    parser.feed(body)
    parser.close()
    return parser.result()


@pytest.mark.parametrize("reason,stop", [("end_turn", StopReason.STOP), ("stop_sequence", StopReason.STOP),
                                         ("max_tokens", StopReason.LENGTH), ("tool_use", StopReason.TOOL_USE),
                                         ("refusal", StopReason.ERROR), ("pause_turn", StopReason.STOP)])
def test_anthropic_stop_reasons(reason, stop) -> None:
    parser = AnthropicParser(make_builder(Collector(), "m", "anthropic"))
    body = sse({"type": "message_start", "message": {"id": "x", "usage": {"input_tokens": 3,
                                                                         "cache_read_input_tokens": 5}}},
               {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 2}},
               {"type": "message_stop"})
    message = finish(parser, body)
    assert message.stop_reason == stop
    assert (message.usage.input, message.usage.output, message.usage.cache_read) == (3, 2, 5)


@pytest.mark.parametrize("reason,stop", [("stop", StopReason.STOP), ("length", StopReason.LENGTH),
                                         ("tool_calls", StopReason.TOOL_USE), ("content_filter", StopReason.ERROR),
                                         ("function_call", StopReason.TOOL_USE)])
def test_chat_finish_reasons(reason, stop) -> None:
    parser = ChatCompletionsParser(make_builder(Collector(), "m", "openai"), ModelConfig.openai("m"))
    body = sse({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": reason}]}) + b"data: [DONE]\n\n"
    assert finish(parser, body).stop_reason == stop


def test_chat_reasoning_content_and_eof_without_finish() -> None:
    parser = ChatCompletionsParser(make_builder(Collector(), "m", "deepseek"),
                                   ModelConfig.preset("deepseek", "deepseek-reasoner"))
    parser.feed(sse({"choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]}))
    parser.close()
    with pytest.raises(ProviderError, match="ended before"):
        parser.result()
    assert parser.builder.content[0].thinking == "think"


@pytest.mark.parametrize("status,details,stop", [("completed", None, StopReason.STOP),
                                                 ("incomplete", {"reason": "max_output_tokens"}, StopReason.LENGTH),
                                                 ("incomplete", {"reason": "content_filter"}, StopReason.ERROR)])
def test_responses_terminal_events(status, details, stop) -> None:
    parser = ResponsesParser(make_builder(Collector(), "m", "openai"))
    body = sse({"type": "response.created", "response": {"id": "r"}},
               {"type": f"response.{status}", "response": {"status": status, "incomplete_details": details,
                                                           "usage": {"input_tokens": 9, "output_tokens": 4,
                                                                     "input_tokens_details": {"cached_tokens": 2}}}})
    message = finish(parser, body)
    assert message.stop_reason == stop
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (7, 2, 4)


def test_responses_failed_is_classified() -> None:
    parser = ResponsesParser(make_builder(Collector(), "m", "openai"))
    body = sse({"type": "response.failed", "response": {"status": "failed",
                                                        "error": {"code": "rate_limit_exceeded", "message": "slow"}}})
    with pytest.raises(ProviderError) as info:
        finish(parser, body)
    assert info.value.kind == ErrorKind.RATE_LIMITED


@pytest.mark.parametrize("reason,stop", [("STOP", StopReason.STOP), ("MAX_TOKENS", StopReason.LENGTH),
                                         ("SAFETY", StopReason.ERROR), ("MALFORMED_FUNCTION_CALL", StopReason.ERROR),
                                         ("SOMETHING_NEW", StopReason.ERROR)])
def test_gemini_finish_reasons(reason, stop) -> None:
    parser = GeminiParser(make_builder(Collector(), "m", "google"))
    body = sse({"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]})
    message = finish(parser, body)
    assert message.stop_reason == stop
    if stop == StopReason.ERROR:
        assert reason in message.error_message


def test_gemini_blocked_prompt_and_inline_error() -> None:
    parser = GeminiParser(make_builder(Collector(), "m", "google"))
    message = finish(parser, sse({"promptFeedback": {"blockReason": "SAFETY"}}))
    assert message.stop_reason == StopReason.ERROR and "SAFETY" in message.error_message
    parser = GeminiParser(make_builder(Collector(), "m", "google"))
    with pytest.raises(ProviderError) as info:
        finish(parser, sse({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}))
    assert info.value.kind == ErrorKind.RATE_LIMITED and info.value.status == 429


def test_vertex_partial_args_nested_paths_and_types() -> None:
    parser = GeminiParser(make_builder(Collector(), "m", "google_vertex"), "vertex-fc")
    parts = [
        {"functionCall": {"name": "f", "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a.b[1]", "stringValue": "x", "willContinue": True}],
                          "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a.b[1]", "stringValue": "y"},
                                          {"jsonPath": "$.n", "numberValue": 2.5},
                                          {"jsonPath": "$['odd key']", "boolValue": True},
                                          {"jsonPath": "$.z", "nullValue": None}], "willContinue": True}},
        {"functionCall": {}},
    ]
    body = sse(*[{"candidates": [{"content": {"parts": [p]}}]} for p in parts],
               {"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}]})
    message = finish(parser, body)
    (call,) = message.tool_calls
    assert call.id == "vertex-fc-0" and message.stop_reason == StopReason.TOOL_USE
    assert call.arguments == {"a": {"b": [None, "xy"]}, "n": 2.5, "odd key": True, "z": None}


@pytest.mark.parametrize("reason,stop", [("end_turn", StopReason.STOP), ("tool_use", StopReason.TOOL_USE),
                                         ("max_tokens", StopReason.LENGTH),
                                         ("guardrail_intervened", StopReason.ERROR),
                                         ("content_filtered", StopReason.ERROR)])
def test_bedrock_stop_reasons(reason, stop) -> None:
    parser = ConverseStreamParser(make_builder(Collector(), "m", "bedrock"))

    def frame(kind, payload):
        return encode_message({":message-type": "event", ":event-type": kind, ":content-type": "application/json"},
                              json.dumps(payload).encode())

    body = (frame("messageStart", {"role": "assistant"})
            + frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}})
            + frame("messageStop", {"stopReason": reason})
            + frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3,
                                           "cacheReadInputTokens": 4}}))
    message = finish(parser, body)
    assert message.stop_reason == stop and message.usage.cache_read == 4 and message.text == "hi"
