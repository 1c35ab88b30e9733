"""Every real recording in tests/fixtures/real-streams/ (see SOURCES.md there for provenance) is
served over HTTP from 127.0.0.1 in chunks of 1 byte to 64 KiB and must parse to exactly the
expected text, thinking, tool calls, stop reason and usage of expected.json."""

from __future__ import annotations

import json

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.providers.base import ErrorKind, ProviderError, StreamConfig
from phi.providers.model_config import ModelConfig
from phi.providers.registry import get_provider
from phi.types import StopReason, TextContent, ThinkingContent, ToolCall, UserMessage

from .conftest import FIXTURES, Collector, Reply, expected, fixture_bytes, sse_from_jsonl

CHUNK_SIZES = [1, 7, 64, 4096, 65536]
RECORDINGS = sorted(p.name for p in FIXTURES.iterdir()
                    if p.suffix in (".txt", ".jsonl", ".bin", ".json") and p.name != "expected.json")


def model_for(name: str, url: str) -> ModelConfig:
    family = name.split("__")[0]
    if family == "anthropic":
        return ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=url)
    if family in ("openai_chat", "openai_compat"):
        return ModelConfig.openai("gpt-test", api_key="sk-test", base_url=url)
    if family == "openai_responses":
        return ModelConfig.openai_responses("gpt-test", api_key="sk-test", base_url=url)
    if family == "azure_responses":
        return ModelConfig.azure_openai("deploy", api_key="az-test", base_url=url + "/openai/v1")
    if family == "gemini":
        return ModelConfig.google("gemini-test", api_key="g-test", base_url=url)
    if family == "vertex":
        return ModelConfig.vertex("gemini-test", project="p", location="us-central1", access_token="ya29.test",
                                  base_url=url)
    if family == "bedrock":
        return ModelConfig.bedrock("model-test", api_key="br-test", base_url=url)
    raise AssertionError(name)


def reply_for(name: str, chunk_size: int) -> Reply:
    if name.endswith(".json"):
        return Reply(fixture_bytes(name), status=400, content_type="application/json")
    if name.endswith(".bin"):
        return Reply(fixture_bytes(name), content_type="application/vnd.amazon.eventstream", chunk_size=chunk_size)
    if name.endswith(".jsonl"):
        style = "google" if name.startswith(("gemini", "vertex")) else "named"
        return Reply(sse_from_jsonl(name, style), chunk_size=chunk_size)
    ctype = "text/event-stream" if name.startswith(("gemini", "vertex")) else "text/event-stream; charset=utf-8"
    return Reply(fixture_bytes(name), content_type=ctype, chunk_size=chunk_size)


def run(server, name: str, chunk_size: int):
    server.queue(reply_for(name, chunk_size))
    mc = model_for(name, server.url)
    sink = Collector()
    message = get_provider(mc).stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), sink, CancellationToken())
    return message, sink


def texts(message, kind) -> list:
    return [b for b in message.content if isinstance(b, kind)]


def joined_text(message) -> str:
    return "".join(b.text for b in texts(message, TextContent))


def thinking_text(message) -> str:
    return "".join(b.thinking for b in texts(message, ThinkingContent) if not b.redacted)


CASES = [(name, size) for name in RECORDINGS for size in (CHUNK_SIZES if not name.endswith(".json") else [65536])]


@pytest.mark.parametrize("name,chunk_size", CASES)
def test_recording(server, name: str, chunk_size: int) -> None:
    family = name.split("__")[0]
    exp = expected(name)
    checker = CHECKS[family]
    checker(server, name, chunk_size, exp)


# --------------------------------------------------------------------------- per family


ANTHROPIC_STOPS = {"end_turn": StopReason.STOP, "tool_use": StopReason.TOOL_USE, "max_tokens": StopReason.LENGTH}


def check_anthropic(server, name, chunk_size, exp) -> None:
    message, sink = run(server, name, chunk_size)
    assert message.stop_reason == ANTHROPIC_STOPS[exp["stop_reason"]]
    u = exp["usage"]
    assert (message.usage.input, message.usage.output, message.usage.cache_read, message.usage.cache_write) == (
        u["input_tokens"], u["output_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"])
    assert len(message.content) == len(exp["content"])
    for block, want in zip(message.content, exp["content"]):
        if want["type"] == "text":
            assert block == TextContent(want["text"])
        elif want["type"] == "thinking":
            assert isinstance(block, ThinkingContent) and block.thinking == want["thinking"]
            assert len(block.signature or "") == want["signature_len"]
        elif want["type"] == "redacted_thinking":
            assert isinstance(block, ThinkingContent) and block.redacted and len(block.thinking) == want["data_len"]
        else:
            assert isinstance(block, ToolCall) and (block.id, block.name) == (want["id"], want["name"])
            if want["closed"]:
                assert block.arguments == want["input"]
            else:  # truncated by max_tokens: the raw partial JSON is kept, the call is not runnable
                assert block.arguments == {"__raw_arguments": want["input"]["__unparseable_partial_json__"]}
    # live deltas concatenate to the final text
    assert sink.deltas("text_delta") == joined_text(message)
    assert sink.kinds()[0] == "start" and sink.kinds()[-1] == "done"


CHAT_STOPS = {"stop": StopReason.STOP, "tool_calls": StopReason.TOOL_USE, "length": StopReason.LENGTH}


def check_chat(server, name, chunk_size, exp) -> None:
    message, sink = run(server, name, chunk_size)
    assert joined_text(message) == exp["text"]
    assert thinking_text(message) == exp["reasoning"]
    calls = texts(message, ToolCall)
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (c["id"], c["name"], c["arguments_json"]) for c in exp["tool_calls"]]
    if exp["finish_reason"] is None:  # error event after streamed reasoning, then EOF
        assert message.stop_reason == StopReason.ERROR
        assert message.error_message == exp["errors"][0]["message"]
    else:
        assert message.stop_reason == CHAT_STOPS[exp["finish_reason"]]
        if exp["errors"]:  # inline error after finish_reason: reason kept, error recorded
            assert message.error_message == exp["errors"][0]["message"]
    if exp["usage"]:
        u = exp["usage"]
        assert (message.usage.input + message.usage.cache_read, message.usage.output,
                message.usage.total_tokens) == (u["prompt_tokens"], u["completion_tokens"], u["total_tokens"])
    assert sink.deltas("thinking_delta") == thinking_text(message)


def check_responses(server, name, chunk_size, exp) -> None:
    if exp["status"] == "failed":
        with pytest.raises(ProviderError) as info:
            run(server, name, chunk_size)
        assert info.value.message == exp["error_events"][0]["message"]
        assert info.value.kind == ErrorKind.API
        return
    message, sink = run(server, name, chunk_size)
    assert joined_text(message) == exp["text"]
    assert thinking_text(message) == exp["reasoning_summary"]
    calls = texts(message, ToolCall)
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (c["call_id"], c["name"], c["arguments_json"]) for c in exp["function_calls"]]
    assert message.stop_reason == (StopReason.TOOL_USE if calls else StopReason.STOP)
    u = exp["usage"]
    assert (message.usage.input + message.usage.cache_read, message.usage.output, message.usage.total_tokens,
            message.usage.reasoning) == (u["input_tokens"], u["output_tokens"], u["total_tokens"], u["reasoning_tokens"])
    if exp["reasoning_summary"] or "reasoning" in name:
        # the reasoning item is kept (as JSON in the signature) so it can be replayed
        signed = [b for b in texts(message, ThinkingContent) if b.signature]
        assert signed and json.loads(signed[0].signature)["type"] == "reasoning"


GOOGLE_STOPS = {"STOP": StopReason.STOP, "MAX_TOKENS": StopReason.LENGTH}


def check_google(server, name, chunk_size, exp) -> None:
    if name.endswith(".json"):
        with pytest.raises(ProviderError) as info:
            run(server, name, chunk_size)
        assert info.value.status == 400 and info.value.kind == ErrorKind.API
        assert info.value.message == "API key not valid. Please pass a valid API key."
        return
    message, sink = run(server, name, chunk_size)
    assert joined_text(message) == exp["text"]
    assert thinking_text(message) == exp["thought_text"]
    calls = texts(message, ToolCall)
    assert [(c.name, c.arguments) for c in calls] == [(c["name"], c["args"]) for c in exp["function_calls"]]
    prefix = "vertex-fc-" if name.startswith("vertex") else "google-fc-"
    assert [c.id for c in calls] == [f"{prefix}{i}" for i in range(len(calls))]
    assert len([b for b in texts(message, ThinkingContent) if b.signature]) == exp["thought_signatures"]
    if exp["finish_reason"] in GOOGLE_STOPS:
        want = GOOGLE_STOPS[exp["finish_reason"]]
        assert message.stop_reason == (StopReason.TOOL_USE if calls and want == StopReason.STOP else want)
    else:
        assert message.stop_reason == StopReason.ERROR and exp["finish_reason"] in message.error_message
    u = exp["usage"]
    assert message.usage.input == u["promptTokenCount"]
    assert message.usage.output == u["candidatesTokenCount"] + u.get("thoughtsTokenCount", 0)
    assert message.usage.reasoning == u.get("thoughtsTokenCount", 0)
    assert message.usage.total_tokens == u["totalTokenCount"]


BEDROCK_STOPS = {"end_turn": StopReason.STOP, "tool_use": StopReason.TOOL_USE}


def check_bedrock(server, name, chunk_size, exp) -> None:
    if name.endswith(".json"):
        with pytest.raises(ProviderError) as info:
            run(server, name, chunk_size)
        assert (info.value.kind, info.value.status, info.value.message) == (ErrorKind.API, 400, exp["message"])
        return
    message, sink = run(server, name, chunk_size)
    assert message.stop_reason == BEDROCK_STOPS[exp["stop_reason"]]
    u = exp["usage"]
    assert (message.usage.input, message.usage.output, message.usage.total_tokens) == (
        u["inputTokens"], u["outputTokens"], u["totalTokens"])
    assert len(message.content) == len(exp["blocks"])
    for block, want in zip(message.content, exp["blocks"]):
        if want["type"] == "text":
            assert block == TextContent(want["text"])
        elif want["type"] == "reasoning":
            assert isinstance(block, ThinkingContent) and block.thinking == want["text"]
            assert len(block.signature or "") == want.get("signature_len", 0)
        elif want["type"] == "reasoning(redacted)":
            assert isinstance(block, ThinkingContent) and block.redacted
            assert len(block.thinking) == want["redacted_len"]
        else:
            assert isinstance(block, ToolCall)
            assert (block.id, block.name, block.arguments) == (want["toolUseId"], want["name"], want["input"])


CHECKS = {
    "anthropic": check_anthropic,
    "openai_chat": check_chat,
    "openai_compat": check_chat,
    "openai_responses": check_responses,
    "azure_responses": check_responses,
    "gemini": check_google,
    "vertex": check_google,
    "bedrock": check_bedrock,
}
