"""Request building per provider: JSON body and headers for one conversation with a system prompt,
an image, thinking (with signatures), tool calls and results, cache strategy and compat flags."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.providers import anthropic, azure_openai, bedrock, google, google_vertex, openai, openai_responses, proxy
from phi.providers.base import CacheConfig, CacheStrategy, StreamConfig
from phi.providers.model_config import ModelConfig, OpenAICompat
from phi.providers.registry import ProviderRegistry, get_provider
from phi.providers.sigv4 import AwsCredentials, sign
from phi.types import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

from .conftest import Collector, Reply, fixture_bytes

IMAGE = ImageContent("aGVsbG8=", "image/png")
TOOL = ToolDefinition("get_weather", "Weather for a city", {"type": "object", "properties": {"city": {"type": "string"}}})


def conversation(provider: str, model: str) -> list:
    return [
        UserMessage([TextContent("What is in this picture, and the weather in Paris?"), IMAGE]),
        AssistantMessage([ThinkingContent("Let me look.", "sig-1"), ThinkingContent("opaque", None, redacted=True),
                          TextContent("A cat. Checking weather."), ToolCall("call_1", "get_weather", {"city": "Paris"})],
                         StopReason.TOOL_USE, model, provider),
        ToolResultMessage("call_1", "get_weather", [TextContent("18C, sunny"), IMAGE]),
        UserMessage.from_text("Thanks!"),
    ]


def config_for(mc: ModelConfig, **kwargs) -> StreamConfig:
    return StreamConfig(mc, system_prompt="Be brief.", messages=conversation(mc.provider, mc.id), tools=[TOOL],
                        **kwargs)


# --------------------------------------------------------------------------- anthropic


def test_anthropic_body_with_cache_thinking_images_tools() -> None:
    mc = ModelConfig.anthropic("claude-x", api_key="sk-ant-api-1")
    request = anthropic.build_request(config_for(mc, thinking_level=ThinkingLevel.MEDIUM, max_tokens=1000))
    body = request.json_body()
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-api-1" and request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert body["stream"] is True and body["model"] == "claude-x"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > 2048  # raised above the budget, as the API requires
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"] == [{"name": "get_weather", "description": "Weather for a city",
                              "input_schema": TOOL.parameters, "cache_control": {"type": "ephemeral"}}]
    user, assistant, results, last = body["messages"]
    assert user["content"][1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                              "data": "aGVsbG8="}}
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Let me look.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "A cat. Checking weather."},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert results["role"] == "user"
    result = results["content"][0]
    assert result["tool_use_id"] == "call_1" and result["is_error"] is False
    assert result["content"][0] == {"type": "text", "text": "18C, sunny"} and result["content"][1]["type"] == "image"
    assert result["cache_control"] == {"type": "ephemeral"}  # second-to-last message (REQ-126)
    assert "cache_control" not in json.dumps(last)


@pytest.mark.parametrize("strategy,flags,expect", [
    (CacheStrategy.DISABLED, {}, (False, False, False)),
    (CacheStrategy.MANUAL, {"cache_system": True, "cache_tools": False, "cache_messages": False}, (True, False, False)),
    (CacheStrategy.MANUAL, {"cache_system": False, "cache_tools": True, "cache_messages": False}, (False, True, False)),
    (CacheStrategy.MANUAL, {"cache_system": False, "cache_tools": False, "cache_messages": True}, (False, False, True)),
])
def test_anthropic_cache_strategies(strategy, flags, expect) -> None:
    mc = ModelConfig.anthropic("claude-x", api_key="k")
    body = anthropic.build_body(config_for(mc, cache_config=CacheConfig(True, strategy, **flags)))
    got = ("cache_control" in body["system"][0], "cache_control" in body["tools"][-1],
           "cache_control" in json.dumps(body["messages"]))
    assert got == expect


def test_anthropic_oauth_headers_and_foreign_thinking() -> None:
    mc = ModelConfig.anthropic("claude-x", api_key="sk-ant-oat01-secret")
    config = config_for(mc)
    config.messages[1].provider = "openai"  # thinking from another provider: text, no signature
    request = anthropic.build_request(config)
    assert request.headers["authorization"] == "Bearer sk-ant-oat01-secret" and "x-api-key" not in request.headers
    assert request.headers["anthropic-beta"] == anthropic.OAUTH_BETAS
    assert (request.headers["x-app"], request.headers["user-agent"]) == ("cli", "claude-cli/2.1.2")
    assert request.headers["anthropic-dangerous-direct-browser-access"] == "true"
    body = request.json_body()
    assert body["system"][0] == {"type": "text", "text": anthropic.OAUTH_IDENTITY}
    assert body["system"][1]["text"] == "Be brief."
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "text", "text": "Let me look."} and len(assistant) == 3
    assert "sk-ant-oat01-secret" not in repr(request)


def test_thinking_levels_map_to_anthropic_budgets() -> None:
    mc = ModelConfig.anthropic("claude-x", api_key="k")
    budgets = {level: anthropic.build_body(StreamConfig(mc, thinking_level=level)).get("thinking")
               for level in ThinkingLevel}
    assert budgets[ThinkingLevel.OFF] is None
    assert budgets[ThinkingLevel.MEDIUM]["budget_tokens"] == 2048
    assert budgets[ThinkingLevel.HIGH]["budget_tokens"] == 8192
    assert budgets[ThinkingLevel.MINIMAL]["budget_tokens"] == 1024  # the API minimum


# --------------------------------------------------------------------------- openai chat


def test_openai_chat_body_with_compat_flags() -> None:
    mc = ModelConfig.openai("o3", api_key="sk-1")
    request = openai.build_request(config_for(mc, thinking_level=ThinkingLevel.HIGH, max_tokens=500))
    body = request.json_body()
    assert request.url == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-1"
    assert body["max_completion_tokens"] == 500 and "max_tokens" not in body
    assert body["reasoning_effort"] == "high" and body["stream_options"] == {"include_usage": True}
    messages = body["messages"]
    assert messages[0] == {"role": "developer", "content": "Be brief."}
    assert messages[1]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}
    assert messages[2] == {"role": "assistant", "content": "A cat. Checking weather.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"}
    assert messages[4]["role"] == "user" and messages[4]["content"][1]["type"] == "image_url"  # tool image
    assert messages[5] == {"role": "user", "content": "Thanks!"}
    assert body["tools"][0] == {"type": "function", "function": {"name": "get_weather",
                                                                 "description": "Weather for a city",
                                                                 "parameters": TOOL.parameters}}


def test_openai_compatible_presets_and_keys(monkeypatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-never-sent-elsewhere")
    mc = ModelConfig.preset("groq", "llama")
    request = openai.build_request(config_for(mc, thinking_level=ThinkingLevel.LOW))
    body = request.json_body()
    assert request.url == "https://api.groq.com/openai/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer gsk-1"
    assert body["messages"][0]["role"] == "system" and body["max_tokens"] == mc.max_tokens
    local = ModelConfig.openai_compatible("ollama", "qwen3")
    assert "authorization" not in openai.build_request(StreamConfig(local)).headers
    custom = ModelConfig.openai_compatible("https://llm.example/v1", "m", compat=OpenAICompat(
        supports_usage_in_streaming=False))
    assert "stream_options" not in openai.build_body(StreamConfig(custom))
    assert "authorization" not in openai.build_request(StreamConfig(custom)).headers
    assert len([p for p in ModelConfig.__dict__ if not p.startswith("_")]) > 0
    from phi.providers.model_config import PRESETS

    assert {"xai", "groq", "cerebras", "mistral", "deepseek", "openrouter", "ollama", "vllm", "lmstudio"} <= set(PRESETS)
    assert len(PRESETS) >= 15


# --------------------------------------------------------------------------- responses / azure


def test_openai_responses_body_replays_reasoning_item() -> None:
    mc = ModelConfig.openai_responses("gpt-5", api_key="sk-1")
    config = config_for(mc, thinking_level=ThinkingLevel.MEDIUM)
    item = {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "summary": []}
    config.messages[1].content[0] = ThinkingContent("summary", json.dumps(item))
    request = openai_responses.OpenAIResponsesProvider().build_request(config)
    body = request.json_body()
    assert request.url == "https://api.openai.com/v1/responses" and body["instructions"] == "Be brief."
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    items = body["input"]
    assert items[0]["content"][1] == {"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8=",
                                      "detail": "auto"}
    assert items[1] == item
    assert items[2] == {"type": "message", "role": "assistant", "content": "A cat. Checking weather."}
    assert items[3] == {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                        "arguments": '{"city": "Paris"}'}
    assert items[4] == {"type": "function_call_output", "call_id": "call_1", "output": "18C, sunny"}
    assert items[5]["content"][1]["type"] == "input_image"
    assert body["tools"][0]["name"] == "get_weather" and body["tools"][0]["type"] == "function"


@pytest.mark.parametrize("base,options,url", [
    ("https://r.openai.azure.com/openai/v1", {}, "https://r.openai.azure.com/openai/v1/responses"),
    ("https://r.openai.azure.com/openai/deployments/d", {"api_version": "2025-01-01-preview"},
     "https://r.openai.azure.com/openai/deployments/d/responses?api-version=2025-01-01-preview"),
    ("https://r.openai.azure.com", {}, "https://r.openai.azure.com/openai/responses?api-version=2025-04-01-preview"),
    ("", {"resource": "res"}, "https://res.openai.azure.com/openai/v1/responses"),
])
def test_azure_endpoints(base, options, url) -> None:
    assert azure_openai.responses_url(base, options) == url


def test_azure_headers_and_deployment() -> None:
    mc = ModelConfig.azure_openai("my-deploy", resource="res", api_key="az-key")
    request = azure_openai.AzureOpenAIProvider().build_request(config_for(mc))
    assert request.headers["api-key"] == "az-key" and "authorization" not in request.headers
    assert request.json_body()["model"] == "my-deploy"


# --------------------------------------------------------------------------- google / vertex


def test_gemini_body_and_signatures_on_parts() -> None:
    mc = ModelConfig.google("gemini-x", api_key="g-key")
    config = config_for(mc, thinking_level=ThinkingLevel.LOW)
    # as the Gemini parser stores them: a signature-only thinking block before the part it rode on
    config.messages[1] = AssistantMessage([ThinkingContent("thought", "ts-0"), TextContent("A cat."),
                                           ThinkingContent("", "ts-1"), ToolCall("google-fc-0", "get_weather",
                                                                                 {"city": "Paris"})],
                                          StopReason.TOOL_USE, "gemini-x", "google")
    config.messages[2].tool_call_id = "google-fc-0"
    request = google.GoogleProvider().build_request(config)
    body = request.json_body()
    assert request.url.endswith("/v1beta/models/gemini-x:streamGenerateContent?alt=sse")
    assert "key=" not in request.url and request.headers["x-goog-api-key"] == "g-key"
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["tools"] == [{"functionDeclarations": [{"name": "get_weather", "description": "Weather for a city",
                                                        "parametersJsonSchema": TOOL.parameters}]}]
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 1024}
    user, model, results = body["contents"]  # the last user message joins the tool results (alternation)
    assert user["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": "aGVsbG8="}}
    assert model == {"role": "model", "parts": [
        {"text": "thought", "thought": True, "thoughtSignature": "ts-0"},
        {"text": "A cat."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "ts-1"},
    ]}
    assert results["parts"][0] == {"functionResponse": {"name": "get_weather", "response": {"output": "18C, sunny"}}}
    assert results["parts"][1]["inlineData"]["mimeType"] == "image/png"
    assert results["parts"][2:] == [{"text": "Thanks!"}]


def test_vertex_url_auth_and_streamed_args_flag() -> None:
    mc = ModelConfig.vertex("gemini-x", project="proj", location="europe-west4", access_token="ya29.tok",
                            options={"stream_function_call_arguments": True})
    request = google_vertex.GoogleVertexProvider().build_request(config_for(mc))
    assert request.url == ("https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/"
                           "publishers/google/models/gemini-x:streamGenerateContent?alt=sse")
    assert request.headers["authorization"] == "Bearer ya29.tok" and "x-goog-api-key" not in request.headers
    assert request.json_body()["toolConfig"] == {"functionCallingConfig": {"streamFunctionCallArguments": True}}
    assert google_vertex.vertex_url("m", "", {"project": "p", "location": "global"}).startswith(
        "https://aiplatform.googleapis.com/v1/projects/p/locations/global/")


# --------------------------------------------------------------------------- bedrock


def test_bedrock_body_and_bearer_auth() -> None:
    mc = ModelConfig.bedrock("us.anthropic.claude-x-v1:0", region="us-west-2", api_key="br-key")
    request = bedrock.build_request(config_for(mc, thinking_level=ThinkingLevel.HIGH))
    body = request.json_body()
    assert request.url == ("https://bedrock-runtime.us-west-2.amazonaws.com/model/"
                           "us.anthropic.claude-x-v1%3A0/converse-stream")
    assert request.headers["authorization"] == "Bearer br-key"
    assert body["system"] == [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    assert body["toolConfig"]["tools"][0] == {"toolSpec": {"name": "get_weather", "description": "Weather for a city",
                                                           "inputSchema": {"json": TOOL.parameters}}}
    assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 8192}}
    user, assistant, results = body["messages"]  # the last user message joins the tool results (alternation)
    assert user["content"][1] == {"image": {"format": "png", "source": {"bytes": "aGVsbG8="}}}
    assert assistant["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "Let me look.", "signature": "sig-1"}}},
        {"reasoningContent": {"redactedContent": "opaque"}},
        {"text": "A cat. Checking weather."},
        {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}},
        {"cachePoint": {"type": "default"}},  # on the second-to-last message
    ]
    assert results["content"][0]["toolResult"]["status"] == "success"
    assert results["content"][0]["toolResult"]["content"][0] == {"text": "18C, sunny"}
    assert results["content"][1:] == [{"text": "Thanks!"}]


def test_bedrock_sigv4_from_environment(monkeypatch) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example-key")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-tok")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    request = bedrock.build_request(StreamConfig(ModelConfig.bedrock("amazon.nova-micro-v1:0")))
    auth = request.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") and "/eu-central-1/bedrock/aws4_request" in auth
    assert "SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token" in auth
    assert request.headers["x-amz-security-token"] == "session-tok"
    assert "secret-example-key" in request.secrets and "secret-example-key" not in repr(request)


def test_sigv4_matches_the_aws_documentation_example() -> None:
    """The worked example of the AWS SigV4 guide (IAM ListUsers, 2015-08-30T12:36:00Z)."""
    creds = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    headers = sign("GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08",
                   {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}, b"", creds, "us-east-1",
                   "iam", dt.datetime(2015, 8, 30, 12, 36, tzinfo=dt.timezone.utc))
    assert headers["authorization"].endswith(
        "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7")


# --------------------------------------------------------------------------- headers on the wire, proxy, registry


def test_headers_reach_the_server(server) -> None:
    server.queue(Reply(fixture_bytes("anthropic__text_then_tool_use_streamed_args.txt")))
    mc = ModelConfig.anthropic("claude-x", api_key="sk-ant-wire", base_url=server.url, headers={"x-extra": "1"})
    message = get_provider(mc).stream(config_for(mc), Collector(), CancellationToken())
    assert message.stop_reason == StopReason.TOOL_USE
    (recorded,) = server.requests
    assert recorded.path == "/v1/messages" and recorded.headers["x-api-key"] == "sk-ant-wire"
    assert recorded.headers["x-extra"] == "1" and recorded.json()["system"][0]["text"] == "Be brief."


def test_proxy_round_trip(server) -> None:
    events = [
        {"type": "start"},
        {"type": "thinking_start", "contentIndex": 0}, {"type": "thinking_delta", "contentIndex": 0, "delta": "hm"},
        {"type": "thinking_end", "contentIndex": 0, "signature": "s"},
        {"type": "text_start", "contentIndex": 1}, {"type": "text_delta", "contentIndex": 1, "delta": "Hi "},
        {"type": "text_delta", "contentIndex": 1, "delta": "there"},
        {"type": "toolcall_start", "contentIndex": 2, "id": "t1", "toolName": "get_weather"},
        {"type": "toolcall_delta", "contentIndex": 2, "delta": '{"city":'},
        {"type": "toolcall_delta", "contentIndex": 2, "delta": '"Oslo"}'},
        {"type": "toolcall_end", "contentIndex": 2},
        {"type": "done", "reason": "toolUse", "usage": {"input": 3, "output": 4, "total_tokens": 7}},
    ]
    server.queue(Reply("".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()))
    mc = ModelConfig.proxy(server.url + "/api/stream", "claude-x", token="ptok")
    message = get_provider(mc).stream(config_for(mc), Collector(), CancellationToken())
    assert [type(b).__name__ for b in message.content] == ["ThinkingContent", "TextContent", "ToolCall"]
    assert message.text == "Hi there" and message.tool_calls[0].arguments == {"city": "Oslo"}
    assert message.content[0].signature == "s" and message.usage.total_tokens == 7
    assert message.stop_reason == StopReason.TOOL_USE
    (recorded,) = server.requests
    assert recorded.path == "/api/stream" and recorded.headers["authorization"] == "Bearer ptok"
    body = recorded.json()
    assert body["context"]["systemPrompt"] == "Be brief." and body["context"]["messages"][2]["role"] == "toolResult"
    assert proxy.build_body(config_for(mc))["model"]["id"] == "claude-x"


def test_registry_dispatch_and_errors() -> None:
    registry = ProviderRegistry()
    with pytest.raises(Exception, match="no provider registered for api 'x'"):
        registry.get("x")
    registry.register("x", "phi.providers.anthropic:AnthropicProvider")
    assert registry.get("x").provider_id == "anthropic" and registry.get("x") is registry.get("x")
    assert len(ProviderRegistry.default().apis()) == 8


def test_import_phi_providers_does_not_import_requests() -> None:
    import subprocess
    import sys

    code = ("import sys, phi, phi.providers, phi.providers.registry, phi.providers.model_config; "
            "assert 'requests' not in sys.modules, 'requests imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------- issue 10, item 7: SigV4 = the wire


def _sigv4_environment(monkeypatch) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token")


def test_sigv4_signature_verifies_on_the_received_request(server, monkeypatch) -> None:
    """A local server checks every received request the way AWS does: botocore re-signs the method,
    path, Host and signed headers *as received*; the signatures must agree whatever the base URL
    (upper-case host, user-info, //, ./.., %2E%2E)."""
    import random

    from .references import botocore_authorization, random_base_url

    _sigv4_environment(monkeypatch)
    rng = random.Random(7)
    body = fixture_bytes("bedrock__text_nova.bin")
    for case in range(25):
        base = random_base_url(rng, "http", "localhost", server.port)
        server.queue(Reply(body, content_type="application/vnd.amazon.eventstream"))
        mc = ModelConfig.bedrock("amazon.nova-micro-v1:0", region="eu-west-1", base_url=base)
        message = get_provider(mc).stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), Collector(),
                                          CancellationToken())
        assert message.stop_reason == StopReason.STOP, (base, message.error_message)
        got = server.requests[-1]
        signed = got.headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
        want = botocore_authorization("POST", f"http://{got.headers['host']}{got.path}",
                                      {k: got.headers[k] for k in signed}, got.body, "AKIDEXAMPLE",
                                      "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token", "eu-west-1",
                                      "bedrock", got.headers["x-amz-date"])
        assert got.headers["authorization"] == want, (case, base, got.path)


def test_sigv4_matches_botocore_on_random_urls(monkeypatch) -> None:
    """Differential slice against botocore (scripts/fuzz/provider_differential.py runs more): https
    URLs with :443, upper-case hosts, user-info, dot segments and queries."""
    import random
    from urllib.parse import urlsplit

    from phi.providers.http import prepared_url
    from phi.providers.sigv4 import host_header

    from .references import botocore_authorization, random_base_url, random_query

    rng = random.Random(11)
    creds = AwsCredentials("AKIDEXAMPLE", "secret/key+example", "tok" if rng.random() < 0.5 else None)
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    for case in range(200):
        base = random_base_url(rng, "https", "bedrock-runtime.us-east-1.amazonaws.com", rng.choice([None, 443, 8443]))
        url = bedrock.request_url(base.rstrip("/") + "/model/m%3A0/converse-stream" + "?" * (rng.random() < 0.5)
                                  + random_query(rng))
        assert prepared_url(url) == url and host_header(url) == urlsplit(url).netloc, (case, base, url)
        body = json.dumps({"n": case}).encode()
        headers = sign("POST", url, {"content-type": "application/json"}, body, creds, "us-east-1", "bedrock", when)
        assert headers["authorization"] == botocore_authorization(
            "POST", url, headers, body, creds.access_key, creds.secret_key, creds.session_token, "us-east-1",
            "bedrock", headers["x-amz-date"]), (case, url)


# --------------------------------------------------------------------------- issue 10, item 2: role alternation


def _histories() -> dict[str, list]:
    """Histories phi really produces that hold two consecutive messages of one role (for the LLM)."""
    from phi.loop import default_convert_to_llm

    call = ToolCall("t1", "get_weather", {"city": "Paris"})
    failed = AssistantMessage([], StopReason.ERROR, "m", "x", error_message="HTTP 500")
    aborted = AssistantMessage([TextContent("partial"), ToolCall("t2", "get_weather", {})], StopReason.ABORTED, "m", "x")
    raw = {
        "error reply dropped": [UserMessage.from_text("hi"), failed, UserMessage.from_text("try again")],
        "steering after tool results": [UserMessage.from_text("weather?"),
                                        AssistantMessage([call], StopReason.TOOL_USE, "m", "x"),
                                        ToolResultMessage("t1", "get_weather", [TextContent("18C")]),
                                        UserMessage.from_text("also Rome please")],
        "follow-ups": [UserMessage.from_text("a"), AssistantMessage([TextContent("ok")], StopReason.STOP, "m", "x"),
                       UserMessage.from_text("b"), UserMessage.from_text("c")],
        "compaction marker": [UserMessage.from_text("[Earlier conversation summarised: ...]"), UserMessage.from_text("next")],
        "aborted reply then retry": [UserMessage.from_text("q"), aborted,
                                     AssistantMessage([TextContent("answer")], StopReason.STOP, "m", "x"),
                                     UserMessage.from_text("thanks")],
    }
    return {name: default_convert_to_llm(history) for name, history in raw.items()}


def _turn_roles(turns: list[dict], key: str) -> tuple[list[str], list]:
    return [t["role"] for t in turns], [b for t in turns for b in t[key] if "cachePoint" not in b]


@pytest.mark.parametrize("history", sorted(_histories()))
@pytest.mark.parametrize("api", ["bedrock", "google", "google_vertex"])
def test_roles_alternate_and_nothing_is_lost(api, history) -> None:
    """Bedrock Converse and Gemini/Vertex reject two consecutive turns of one role: consecutive
    messages are merged into one turn, keeping every block in order."""
    messages = _histories()[history]
    if api == "bedrock":
        mc = ModelConfig.bedrock("us.anthropic.claude-x-v1:0", api_key="k")
        turns, key, convert = bedrock.build_body(StreamConfig(mc, messages=messages))["messages"], "content", \
            bedrock.convert_messages
    else:
        mc = (ModelConfig.google("gemini-x", api_key="k") if api == "google"
              else ModelConfig.vertex("gemini-x", project="p", access_token="t"))
        turns, key, convert = google.build_body(StreamConfig(mc, messages=messages))["contents"], "parts", \
            google.convert_messages
    expected = [b for m in messages for t in convert([m], mc) for b in t[key]]  # each message on its own
    roles, blocks = _turn_roles(turns, key)
    assert all(a != b for a, b in zip(roles, roles[1:])), roles
    assert roles[0] == "user" and blocks == expected


# --------------------------------------------------------------------------- issue 10, item 3: model-specific fields


def test_bedrock_tool_cache_point_is_sent_to_claude_only() -> None:
    """Nova refuses a cachePoint inside toolConfig.tools (it accepts them in system and messages)."""
    def tools_and_system(model: str) -> tuple[bool, bool]:
        body = bedrock.build_body(config_for(ModelConfig.bedrock(model, api_key="k")))
        return ("cachePoint" in body["toolConfig"]["tools"][-1], "cachePoint" in body["system"][-1])

    assert tools_and_system("amazon.nova-pro-v1:0") == (False, True)
    assert tools_and_system("us.anthropic.claude-sonnet-4-5-v1:0") == (True, True)
    assert tools_and_system("meta.llama3-70b-instruct-v1:0") == (False, False)


def _sent_temperature(mc: ModelConfig) -> object:
    config = StreamConfig(mc, messages=[UserMessage.from_text("hi")], temperature=0.3)
    builders = {"anthropic_messages": anthropic.build_body, "openai_completions": openai.build_body,
                "openai_responses": openai_responses.build_body, "azure_openai_responses": openai_responses.build_body,
                "google_generative_ai": google.build_body, "bedrock_converse_stream": bedrock.build_body,
                "proxy": proxy.build_body}
    text = json.dumps(builders[mc.api](config))
    return 0.3 if '"temperature": 0.3' in text else None


@pytest.mark.parametrize("mc,sent", [
    (ModelConfig.openai("gpt-5", api_key="k"), False),
    (ModelConfig.openai("o3-mini", api_key="k"), False),
    (ModelConfig.openai("gpt-4.1", api_key="k"), True),
    (ModelConfig.openai("gpt-5-chat-latest", api_key="k"), True),
    (ModelConfig.openai_responses("gpt-5.1", api_key="k"), False),
    (ModelConfig.openai_compatible("openrouter", "openai/o4-mini", api_key="k"), False),
    (ModelConfig.anthropic("claude-opus-4-7", api_key="k", reasoning=False), False),
    (ModelConfig.anthropic("claude-opus-4-1-20250805", api_key="k", reasoning=False), True),
    (ModelConfig.bedrock("us.anthropic.claude-opus-4-7-v1:0", api_key="k"), False),
    (ModelConfig.google("gemini-2.5-flash", api_key="k"), True),
    (ModelConfig.proxy("http://p", "gpt-5", token="t"), False),
    (ModelConfig.azure_openai("my-deployment", resource="r", api_key="k", capabilities={"temperature": False}), False),
    (ModelConfig.openai("gpt-5", api_key="k", capabilities={"temperature": True}), True),
])
def test_temperature_is_not_sent_to_models_that_refuse_it(mc, sent) -> None:
    """Reasoning models answer 400 to a non-default temperature: the capability table (overridable
    with ModelConfig.capabilities) decides whether it is sent."""
    assert (_sent_temperature(mc) is not None) == sent


def test_unknown_capability_is_a_config_error() -> None:
    from phi.errors import ConfigError

    with pytest.raises(ConfigError, match="temprature"):
        ModelConfig.openai("gpt-5", capabilities={"temprature": True})


def _openai_spec_validator(root: str):
    import jsonschema

    from .conftest import FIXTURES

    schema = json.loads((FIXTURES.parent / "openapi" / "openai-requests.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{root}"})


def _spec_configs(mc: ModelConfig) -> list[StreamConfig]:
    reasoning_item = {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "summary": []}
    replay = config_for(mc, thinking_level=ThinkingLevel.MEDIUM, temperature=0.2, max_tokens=300)
    replay.messages[1].content[0] = ThinkingContent("summary", json.dumps(reasoning_item))
    foreign = config_for(mc)
    foreign.messages[1].provider = "anthropic"  # foreign thinking goes back as assistant text
    failed = ToolResultMessage("call_1", "get_weather", [TextContent("boom")], is_error=True)
    return [replay, foreign, StreamConfig(mc, messages=[UserMessage([IMAGE])]),
            StreamConfig(mc, messages=conversation(mc.provider, mc.id)[:2] + [failed])]


@pytest.mark.parametrize("mc", [ModelConfig.openai_responses("gpt-5", api_key="k"),
                                ModelConfig.azure_openai("deploy", resource="r", api_key="k")])
def test_responses_bodies_validate_against_the_openai_spec(mc) -> None:
    """Official OpenAPI document (tests/fixtures/openapi/PROVENANCE.md): images need ``detail``,
    earlier assistant text must be a valid input item; strict servers (vLLM) enforce both."""
    validator = _openai_spec_validator("CreateResponse")
    for config in _spec_configs(mc):
        body = openai_responses.build_body(config, model=mc.id)
        errors = [f"{list(e.absolute_path)}: {e.message[:120]}" for e in validator.iter_errors(body)]
        assert not errors, errors


def test_chat_bodies_validate_against_the_openai_spec() -> None:
    validator = _openai_spec_validator("CreateChatCompletionRequest")
    for mc in (ModelConfig.openai("o3", api_key="k"), ModelConfig.preset("groq", "llama", api_key="k")):
        for config in _spec_configs(mc):
            errors = [e.message[:120] for e in validator.iter_errors(openai.build_body(config))]
            assert not errors, errors
