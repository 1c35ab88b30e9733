"""Issue 25, items 1-8 (providers), each over real HTTP on 127.0.0.1 against a local server that
answers the way the real service does (the rule it enforces is named in each test)."""

from __future__ import annotations

import json
import logging

import pytest

from phi.agent import Agent
from phi.concurrency.cancel import CancellationToken
from phi.errors import ConfigError
from phi.providers.base import ErrorKind, ProviderError, StreamConfig
from phi.providers.model_config import ModelConfig
from phi.providers.registry import get_provider
from phi.providers.retry import RetryConfig
from phi.types import StopReason, UserMessage

from .conftest import Collector, Reply
from .test_faults import PROVIDERS, _with_key, sample_reply

# --------------------------------------------------------------------------- item 4: keys HTTP cannot carry

SMART_KEY = "sk-\u201cqzxw-0123456789\u201d"  # a key pasted with typographic quotes
NBSP_KEY = "sk-qzxw\u00a0def-0123456789"  # ... or with a non-breaking space (Latin-1, still not a key)


@pytest.mark.parametrize("key", [SMART_KEY, NBSP_KEY])
@pytest.mark.parametrize("where", ["model", "get_api_key"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_key_with_a_non_ascii_character_is_a_typed_auth_error(server, provider, where, key, caplog) -> None:
    """Item 4: refused before anything is sent, as ``auth`` (not ``other``), naming where the key
    came from and never showing it; no ERROR record (no traceback) in the log."""
    if where == "model":
        with pytest.raises(ConfigError) as config_error:
            ModelConfig.anthropic("claude", api_key=key)
        assert "ModelConfig.api_key" in str(config_error.value) and "qzxw" not in str(config_error.value)
        where = "get_api_key"  # the same key reaching a call through the loop's get_api_key
    prov, config, sink, cancel = _with_key(server, provider, sample_reply(provider), key, where)
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(ProviderError) as info:
            prov.stream(config, sink, cancel)
    error = info.value
    assert error.kind == ErrorKind.AUTH and "get_api_key" in str(error) and "non-ASCII" in str(error)
    for text in (str(error), repr(error), error.args, caplog.text):
        assert "qzxw" not in str(text)
    assert not server.requests and not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("variable,mc", [
    ("OPENAI_API_KEY", lambda url: ModelConfig.openai("gpt-4.1", base_url=url)),
    ("ANTHROPIC_API_KEY", lambda url: ModelConfig.anthropic("claude-x", base_url=url)),
    ("GEMINI_API_KEY", lambda url: ModelConfig.google("gemini-x", base_url=url)),
    ("AWS_BEARER_TOKEN_BEDROCK", lambda url: ModelConfig.bedrock("amazon.nova-micro-v1:0", base_url=url)),
    ("AWS_SECRET_ACCESS_KEY", lambda url: ModelConfig.bedrock("amazon.nova-micro-v1:0", base_url=url)),
])
def test_key_from_the_environment_names_the_variable(server, monkeypatch, caplog, variable, mc) -> None:
    """Item 4, through an Agent: the run ends with an ``auth`` error naming the variable; the key
    is in no event, message, error or log line, and nothing reached the server."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    if variable == "AWS_SECRET_ACCESS_KEY":
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv(variable, SMART_KEY)
    agent = Agent(model_config=mc(server.url), retry_config=RetryConfig.none())
    with caplog.at_level(logging.DEBUG):
        stream = agent.prompt("hi")
        events = [repr(e) for e in stream]
        messages = stream.result(10).messages
    reply = messages[-1]
    assert reply.stop_reason == StopReason.ERROR and variable in reply.error_message
    assert "non-ASCII" in reply.error_message
    for text in (events, agent.save_messages(), repr(messages), caplog.text):
        assert "qzxw" not in str(text)
    assert not server.requests and not [r for r in caplog.records if r.levelno >= logging.ERROR]


# --------------------------------------------------------------------------- stream builders (recorded shapes)


def sse(events: list[dict], named: bool = True) -> bytes:
    """SSE bytes for payloads; ``named`` adds the ``event: <type>`` line (Anthropic, Responses)."""
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named and "type" in event else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(out).encode()


def anthropic_text(text: str, extra_blocks: list[dict] | None = None) -> bytes:
    """A Messages API stream of one text block (shape of anthropic__thinking_signature_then_text.txt),
    after ``extra_blocks`` sent whole in their content_block_start."""
    events: list[dict] = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                                "content": [], "model": "claude-test",
                                                                "usage": {"input_tokens": 5, "output_tokens": 1}}}]
    blocks = list(extra_blocks or [])
    for index, block in enumerate(blocks):
        events += [{"type": "content_block_start", "index": index, "content_block": block},
                   {"type": "content_block_stop", "index": index}]
    index = len(blocks)
    events += [{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
               {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
               {"type": "content_block_stop", "index": index},
               {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
               {"type": "message_stop"}]
    return sse(events)


def bedrock_text(text: str) -> bytes:
    """A ConverseStream body of one text block (shape of bedrock__text_nova.bin)."""
    from phi.providers.eventstream import encode_message

    frames = [("messageStart", {"role": "assistant"}),
              ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}}),
              ("contentBlockStop", {"contentBlockIndex": 0}),
              ("messageStop", {"stopReason": "end_turn"}),
              ("metadata", {"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}, "metrics": {}})]
    return b"".join(encode_message({":event-type": kind, ":content-type": "application/json",
                                    ":message-type": "event"}, json.dumps(payload).encode())
                    for kind, payload in frames)


def chat_chunks(choices_per_chunk: list[list[dict]], usage: dict | None = None) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1754693439, "model": "gpt-test"}
    chunks = [{**base, "choices": choices} for choices in choices_per_chunk]
    if usage is not None:
        chunks.append({**base, "choices": [], "usage": usage})
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


# --------------------------------------------------------------------------- item 1: Responses reasoning replay


def _responses_service(request) -> Reply:
    """The Responses API's rule with ``store: false``: a reasoning item in the input can only be
    resolved from its ``encrypted_content``; reasoning items carry that content only when the
    request asked for it with ``include``. (The reasoning model reasons whatever was asked.)"""
    from .conftest import sse_from_jsonl

    body = request.json()
    assert body["store"] is False
    for item in body["input"]:
        if item.get("type") == "reasoning" and not item.get("encrypted_content"):
            message = (f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` is set to "
                       "false. Try again with `store` set to true, or remove this item from your input.")
            error = {"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": None}}
            return Reply(json.dumps(error).encode(), status=404, content_type="application/json")
    if any(item.get("type") == "function_call_output" for item in body["input"]):
        from .conftest import fixture_bytes

        return Reply(fixture_bytes("openai_responses__text.txt"))
    stream = sse_from_jsonl("openai_responses__reasoning_summary_then_function_call.jsonl", "named")
    if "reasoning.encrypted_content" not in body.get("include", []):
        lines = []
        for line in stream.decode().split("\n"):
            if line.startswith("data: ") and '"reasoning"' in line:
                event = json.loads(line[6:])
                for item in [event.get("item")] + list((event.get("response") or {}).get("output") or []):
                    if isinstance(item, dict) and item.get("type") == "reasoning":
                        item.pop("encrypted_content", None)
                line = "data: " + json.dumps(event)
            lines.append(line)
        stream = "\n".join(lines).encode()
    return Reply(stream)


def _calculator():
    from phi.tools.function_tool import tool

    @tool
    def calculator(a: float, b: float, op: str) -> str:
        """Compute a op b.

        Args:
            a: First operand.
            b: Second operand.
            op: add, sub, mul or div.
        """
        return str({"add": a + b, "sub": a - b, "mul": a * b, "div": a / b if b else float("nan")}[op])

    return calculator


@pytest.mark.parametrize("thinking", ["off", "medium"])
@pytest.mark.parametrize("api", ["openai_responses", "azure_openai"])
def test_responses_second_call_of_a_reasoning_model_is_accepted(server, thinking, api) -> None:
    """Item 1: a reasoning model (gpt-5) calls a tool, phi answers; the second call must not
    replay the reasoning item by id alone (404 with ``store: false``). With thinking off the model
    still reasons: phi asks for the encrypted content anyway and replays it."""
    server.responder = _responses_service
    mc = (ModelConfig.openai_responses("gpt-5", api_key="sk-test", base_url=server.url) if api == "openai_responses"
          else ModelConfig.azure_openai("gpt-5", api_key="az-test", base_url=server.url + "/openai/v1",
                                        capabilities={"encrypted_reasoning": True}))
    agent = Agent(model_config=mc, tools=[_calculator()], thinking_level=thinking, retry_config=RetryConfig.none())
    messages = agent.prompt("12 + 7?").result(20).messages
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[-1].stop_reason == StopReason.STOP, messages[-1].error_message
    assert messages[2].text == "19.0" and len(server.requests) == 2
    second = server.requests[1].json()
    assert second["include"] == ["reasoning.encrypted_content"]
    (reasoning,) = [item for item in second["input"] if item.get("type") == "reasoning"]
    assert reasoning["encrypted_content"].startswith("gAAAAA") and reasoning["id"].startswith("rs_")


def test_responses_reasoning_item_without_encrypted_content_is_never_replayed(server) -> None:
    """Item 1: a history holding a reasoning item saved without its encrypted content (a model the
    capability table does not know, thinking off) still works: the bare item is left out."""
    server.responder = _responses_service
    mc = ModelConfig.openai_responses("my-reasoner", api_key="sk-test", base_url=server.url)
    agent = Agent(model_config=mc, tools=[_calculator()], retry_config=RetryConfig.none())
    messages = agent.prompt("12 + 7?").result(20).messages
    assert messages[-1].stop_reason == StopReason.STOP, messages[-1].error_message
    assert "include" not in server.requests[0].json()
    assert not [item for item in server.requests[1].json()["input"] if item.get("type") == "reasoning"]
    thinking = messages[1].content[0]
    assert thinking.thinking.startswith("**Calculating") and "encrypted_content" not in (thinking.signature or "")


# --------------------------------------------------------------------------- item 2: whitespace-only text


def _no_whitespace_text(service: str):
    """Anthropic and Bedrock answer 400 to a text block with nothing but whitespace, wherever it
    is (system, user, assistant, inside a tool result); otherwise they reply ``reply``."""
    def blank_texts(value) -> list[str]:
        found = []
        if isinstance(value, dict):
            text = value.get("text")
            if isinstance(text, str) and not text.strip() and (service == "bedrock" or value.get("type") == "text"):
                found.append(text)
            for child in value.values():
                found += blank_texts(child)
        elif isinstance(value, list):
            for child in value:
                found += blank_texts(child)
        return found

    replies = []

    def respond(request) -> Reply:
        body = request.json()
        if blank_texts({k: v for k, v in body.items() if k in ("system", "messages")}):
            if service == "anthropic":
                error = {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "messages: text content blocks must contain "
                                                               "non-whitespace text"}}
                return Reply(json.dumps(error).encode(), status=400, content_type="application/json")
            error = {"message": "The text field in the ContentBlock object at messages.0.content.0 is blank. "
                                "Add text to the text field, and try again."}
            return Reply(json.dumps(error).encode(), status=400, content_type="application/json",
                         headers={"x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/"})
        reply_text = "Sure." if replies else "\n\n"  # the first reply is blank
        replies.append(reply_text)
        if service == "anthropic":
            return Reply(anthropic_text(reply_text))
        return Reply(bedrock_text(reply_text), content_type="application/vnd.amazon.eventstream")

    return respond


def _service_model(service: str, url: str) -> ModelConfig:
    if service == "anthropic":
        return ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=url)
    return ModelConfig.bedrock("us.anthropic.claude-test-v1:0", api_key="br-test", base_url=url)


@pytest.mark.parametrize("service", ["anthropic", "bedrock"])
def test_a_blank_reply_does_not_block_the_next_turn(server, service) -> None:
    """Item 2: the model answered "\\n\\n"; the next turn replays that history and is accepted
    (the blank block is left out of the request; the history keeps it)."""
    server.responder = _no_whitespace_text(service)
    agent = Agent(model_config=_service_model(service, server.url), system_prompt="  \n",
                  retry_config=RetryConfig.none())
    first = agent.prompt("hi").result(10).messages
    assert first[-1].text == "\n\n" and first[-1].stop_reason == StopReason.STOP
    second = agent.prompt("and now?").result(10).messages
    assert second[-1].stop_reason == StopReason.STOP, second[-1].error_message
    assert second[-1].text == "Sure."
    assert [m.text for m in agent.messages if m.role == "assistant"] == ["\n\n", "Sure."]


@pytest.mark.parametrize("service", ["anthropic", "bedrock"])
def test_a_blank_prompt_is_a_clear_error_and_the_session_goes_on(server, service) -> None:
    """Item 2: a prompt of "   \\n" is refused with a clear error before anything is sent (the
    request would end on the model's own turn); the next prompt of the session is accepted."""
    server.responder = _no_whitespace_text(service)
    agent = Agent(model_config=_service_model(service, server.url), retry_config=RetryConfig.none())
    blank = agent.prompt("   \n").result(10).messages
    assert blank[-1].stop_reason == StopReason.ERROR and "whitespace" in blank[-1].error_message
    assert not server.requests
    after = agent.prompt("hello").result(10).messages
    assert after[-1].stop_reason == StopReason.STOP, after[-1].error_message
    sent = server.requests[-1].json()["messages"]
    assert len(sent) == 1 and "hello" in json.dumps(sent)


@pytest.mark.parametrize("service", ["anthropic", "bedrock"])
def test_blank_text_beside_other_content_is_left_out(server, service) -> None:
    """Item 2: a blank text block next to an image, or as a tool's whole output, is left out or
    replaced by "(no output)"; the call is accepted."""
    from phi.types import AssistantMessage, ImageContent, TextContent, ToolCall, ToolResultMessage

    server.responder = _no_whitespace_text(service)
    mc = _service_model(service, server.url)
    history = [UserMessage([TextContent(" "), ImageContent("aGVsbG8=", "image/png")]),
               AssistantMessage([TextContent("\n"), ToolCall("t1", "calculator", {"a": 1})], StopReason.TOOL_USE,
                                mc.id, mc.provider),
               ToolResultMessage("t1", "calculator", [TextContent("\t\n")]),
               UserMessage.from_text("thanks")]
    message = get_provider(mc).stream(StreamConfig(mc, messages=history), Collector(), CancellationToken())
    assert message.stop_reason == StopReason.STOP, message.error_message
    assert "(no output)" in json.dumps(server.requests[0].json())


# --------------------------------------------------------------------------- item 3: n > 1 choices


def test_several_choices_are_never_merged(server) -> None:
    """Item 3: a Chat Completions stream with two interleaved choices (``n: 2``). The official SDK
    accumulates them apart (['AB', 'XY']); phi keeps choice 0 only, tool calls included."""
    call = {"index": 0, "id": "call_other", "type": "function", "function": {"name": "calculator",
                                                                            "arguments": "{}"}}
    body = chat_chunks([
        [{"index": 0, "delta": {"role": "assistant", "content": "A"}, "finish_reason": None}],
        [{"index": 1, "delta": {"role": "assistant", "content": "X"}, "finish_reason": None}],
        [{"index": 0, "delta": {"content": "B"}, "finish_reason": None},
         {"index": 1, "delta": {"content": "Y", "tool_calls": [call]}, "finish_reason": None}],
        [{"index": 1, "delta": {}, "finish_reason": "tool_calls"}],
        [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    ], usage={"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9})
    server.queue(Reply(body))
    mc = ModelConfig.openai("gpt-test", api_key="sk-test", base_url=server.url)
    sink = Collector()
    message = get_provider(mc).stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), sink,
                                      CancellationToken())
    assert message.text == "AB" and sink.deltas("text_delta") == "AB"
    assert not message.tool_calls and message.stop_reason == StopReason.STOP
    assert message.usage.total_tokens == 9


# --------------------------------------------------------------------------- item 7: tool ids across services

LONG_ID = "toolu_" + "x" * 50 + ".|/" + "y" * 58  # 117 characters, with characters Anthropic refuses
assert len(LONG_ID) == 117


def _id_rules(limit: int, pattern: str | None = None):
    """A service that refuses tool-call ids longer than ``limit`` (Chat Completions: 40, Responses:
    64) or not matching ``pattern``, and results that answer no call of the conversation."""
    import re

    def respond(request) -> Reply:
        body = request.json()
        calls, answers = [], []
        for item in body.get("messages") or body.get("input"):
            for call in item.get("tool_calls") or []:
                calls.append(call["id"])
            if item.get("role") == "tool":
                answers.append(item["tool_call_id"])
            if item.get("type") == "function_call":
                calls.append(item["call_id"])
            if item.get("type") == "function_call_output":
                answers.append(item["call_id"])
            for block in item.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls.append(block["id"])
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    answers.append(block["tool_use_id"])
        bad = [i for i in calls + answers if len(i) > limit or (pattern and not re.fullmatch(pattern, i))]
        if bad or set(answers) - set(calls) or len(set(calls)) != len(calls):
            error = {"error": {"message": f"Invalid 'tool_call_id': string too long. Expected a string with maximum "
                                          f"length {limit}, but got a string with length {len(bad[0]) if bad else 0}",
                               "type": "invalid_request_error"}}
            return Reply(json.dumps(error).encode(), status=400, content_type="application/json")
        from .conftest import fixture_bytes

        if "messages" in body and "max_tokens" in body and "system" in body or "anthropic-version" in request.headers:
            return Reply(anthropic_text("ok"))
        name = "openai_responses__text.txt" if "input" in body else "openai_chat__tool_call_streamed_args.txt"
        return Reply(fixture_bytes(name))

    return respond


@pytest.mark.parametrize("target", ["openai", "openai_responses", "anthropic"])
def test_long_tool_ids_from_another_service_are_mapped(server, target) -> None:
    """Item 7: a conversation from another service carries a 117-character id (and a second one
    that shares its first 100 characters); each target gets ids within its rules, the same for a
    call and for its result, and the two stay different."""
    from phi.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage

    other = LONG_ID[:100] + "z" * 17
    history = [UserMessage.from_text("compute"),
               AssistantMessage([ToolCall(LONG_ID, "calculator", {"a": 1}), ToolCall(other, "calculator", {"a": 2})],
                                StopReason.TOOL_USE, "gemini-x", "google"),
               ToolResultMessage(LONG_ID, "calculator", [TextContent("1")]),
               ToolResultMessage(other, "calculator", [TextContent("2")]),
               UserMessage.from_text("and?")]
    limit, pattern = {"openai": (40, None), "openai_responses": (64, None),
                      "anthropic": (64, "[A-Za-z0-9_-]+")}[target]
    server.responder = _id_rules(limit, pattern)
    mc = {"openai": ModelConfig.openai("gpt-4.1", api_key="sk-test", base_url=server.url),
          "openai_responses": ModelConfig.openai_responses("gpt-5", api_key="sk-test", base_url=server.url),
          "anthropic": ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url)}[target]
    message = get_provider(mc).stream(StreamConfig(mc, messages=history), Collector(), CancellationToken())
    assert message.stop_reason in (StopReason.STOP, StopReason.TOOL_USE), message.error_message
    again = get_provider(mc).stream(StreamConfig(mc, messages=history), Collector(), CancellationToken())
    assert again.stop_reason == message.stop_reason
    assert server.requests[0].body == server.requests[1].body  # deterministic


def test_tool_id_mapping_keeps_ids_that_fit() -> None:
    from phi.providers import convert

    assert convert.chat_tool_id("call_abc") == "call_abc"
    assert convert.safe_tool_id("toolu_01") == "toolu_01"
    mapped = convert.chat_tool_id(LONG_ID)
    assert len(mapped) == 40 and mapped == convert.chat_tool_id(LONG_ID) and mapped.startswith("toolu_xxx")
    assert convert.safe_tool_id("a.b") != convert.safe_tool_id("a_b")
    assert convert.chat_tool_id("") and len(convert.responses_tool_id("é" * 80)) <= 64


# --------------------------------------------------------------------------- item 8: tool_choice, parallel_tool_calls

CHOICES = ["auto", "none", "required", "calculator"]
PARALLEL = [None, False, True]
SCHEMAS = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures"


def _weather_tools():
    from phi.types import ToolDefinition

    params = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}
    return [ToolDefinition("calculator", "Compute.", params), ToolDefinition("get_weather", "Weather.", params)]


def _validator(kind: str):
    import jsonschema

    if kind in ("CreateResponse", "CreateChatCompletionRequest"):
        schema = json.loads((SCHEMAS / "openapi" / "openai-requests.schema.json").read_text(encoding="utf-8"))
        return jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{kind}"})
    name = {"anthropic": "anthropic-messages.schema.json", "gemini": "gemini-request.schema.json"}[kind]
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / "sdk-schemas" / name).read_text(encoding="utf-8")))


def _bedrock_errors(body: dict, model_id: str) -> list[str]:
    """botocore's own validation of ConverseStream parameters (the AWS service model)."""
    import botocore.session
    from botocore.validate import ParamValidator

    shape = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model(
        "ConverseStream").input_shape
    report = ParamValidator().validate({"modelId": model_id, **body}, shape)
    return [report.generate_report()] if report.has_errors() else []


def _schema_errors(api: str, body: dict, mc: ModelConfig) -> list[str]:
    if api == "bedrock":
        return _bedrock_errors(body, mc.id)
    kind = {"openai": "CreateChatCompletionRequest", "openai_responses": "CreateResponse",
            "azure_openai": "CreateResponse", "anthropic": "anthropic", "google": "gemini",
            "google_vertex": "gemini"}[api]
    return [f"{list(e.absolute_path)}: {e.message[:160]}" for e in _validator(kind).iter_errors(body)]


def _model(api: str, url: str) -> ModelConfig:
    return {
        "anthropic": lambda: ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=url),
        "openai": lambda: ModelConfig.openai("gpt-4.1", api_key="sk-test", base_url=url),
        "openai_responses": lambda: ModelConfig.openai_responses("gpt-5", api_key="sk-test", base_url=url),
        "azure_openai": lambda: ModelConfig.azure_openai("deploy", api_key="az-test", base_url=url + "/openai/v1"),
        "google": lambda: ModelConfig.google("gemini-test", api_key="g-test", base_url=url),
        "google_vertex": lambda: ModelConfig.vertex("gemini-test", project="p", access_token="ya29.t", base_url=url,
                                                    options={"stream_function_call_arguments": True}),
        "bedrock": lambda: ModelConfig.bedrock("us.anthropic.claude-test-v1:0", api_key="br-test", base_url=url),
        "proxy": lambda: ModelConfig.proxy(url + "/stream", "m", token="proxy-token"),
    }[api]()


EXPECTED_CHOICE = {  # what each protocol sends for (tool_choice, parallel_tool_calls=False)
    "anthropic": {"auto": {"type": "auto", "disable_parallel_tool_use": True}, "none": {"type": "none"},
                  "required": {"type": "any", "disable_parallel_tool_use": True},
                  "calculator": {"type": "tool", "name": "calculator", "disable_parallel_tool_use": True}},
    "openai": {"auto": "auto", "none": "none", "required": "required",
               "calculator": {"type": "function", "function": {"name": "calculator"}}},
    "openai_responses": {"auto": "auto", "none": "none", "required": "required",
                         "calculator": {"type": "function", "name": "calculator"}},
    "google": {"auto": {"mode": "AUTO"}, "none": {"mode": "NONE"}, "required": {"mode": "ANY"},
               "calculator": {"mode": "ANY", "allowedFunctionNames": ["calculator"]}},
    "bedrock": {"auto": {"auto": {}}, "none": None, "required": {"any": {}},
                "calculator": {"tool": {"name": "calculator"}}},
}


def _sent_choice(api: str, body: dict):
    if api == "anthropic":
        return body.get("tool_choice")
    if api in ("openai", "openai_responses", "azure_openai"):
        return body.get("tool_choice")
    if api in ("google", "google_vertex"):
        config = dict(body.get("toolConfig", {}).get("functionCallingConfig", {}))
        config.pop("streamFunctionCallArguments", None)
        return config or None
    if api == "bedrock":
        return body.get("toolConfig", {}).get("toolChoice")
    return body["options"].get("toolChoice")


@pytest.mark.parametrize("parallel", PARALLEL)
@pytest.mark.parametrize("choice", CHOICES)
@pytest.mark.parametrize("api", ["anthropic", "openai", "openai_responses", "azure_openai", "google", "google_vertex",
                                 "bedrock", "proxy"])
def test_tool_choice_reaches_each_service_in_its_own_schema(server, api, choice, parallel) -> None:
    """Item 8: every protocol sends ``tool_choice``/``parallel_tool_calls`` in its own form, and the
    received body validates against the service's published types (OpenAI's OpenAPI document, the
    Anthropic and Google Gen AI SDK types, botocore's service model)."""
    from .test_faults import proxy_body
    from .test_recordings import reply_for

    mc = _model(api, server.url)
    samples = {"anthropic": "anthropic__text_then_tool_use_streamed_args.txt",
               "openai": "openai_chat__tool_call_streamed_args.txt", "openai_responses": "openai_responses__text.txt",
               "azure_openai": "azure_responses__text.jsonl", "google": "gemini__function_call_single_chunk.txt",
               "google_vertex": "vertex__thought_summaries_then_text.txt", "bedrock": "bedrock__text_nova.bin"}
    server.queue(Reply(proxy_body()) if api == "proxy" else reply_for(samples[api], 4096))
    config = StreamConfig(mc, system_prompt="Be brief.", messages=[UserMessage.from_text("12+7?")],
                          tools=_weather_tools(), tool_choice=choice, parallel_tool_calls=parallel, max_tokens=100)
    message = get_provider(mc).stream(config, Collector(), CancellationToken())
    assert message.stop_reason != StopReason.ERROR, message.error_message
    body = server.requests[0].json()
    sent = _sent_choice(api, body)
    family = {"azure_openai": "openai_responses", "google_vertex": "google"}.get(api, api)
    if api == "proxy":
        assert sent == choice and body["options"].get("parallelToolCalls") == parallel
        return
    want = EXPECTED_CHOICE[family][choice]
    if family == "anthropic" and parallel is not False and isinstance(want, dict):
        want = {k: v for k, v in want.items() if k != "disable_parallel_tool_use"}
    assert sent == want, (api, choice, parallel, sent)
    if family in ("openai", "openai_responses"):
        assert body.get("parallel_tool_calls") == parallel
    if family == "bedrock" and choice == "none":
        assert "toolConfig" not in body  # no tool blocks in this history: the tools are not offered
    assert not _schema_errors(api, body, mc), _schema_errors(api, body, mc)


@pytest.mark.parametrize("api", ["anthropic", "bedrock"])
def test_forcing_a_tool_with_thinking_is_refused_clearly(server, api) -> None:
    """Item 8: Anthropic refuses thinking with a forced tool; phi says so before sending."""
    mc = _model(api, server.url)
    config = StreamConfig(mc, messages=[UserMessage.from_text("hi")], tools=_weather_tools(), tool_choice="required",
                          thinking_level="high")
    with pytest.raises(ProviderError) as info:
        get_provider(mc).stream(config, Collector(), CancellationToken())
    assert info.value.kind == ErrorKind.API and "thinking" in str(info.value) and not server.requests


def test_bedrock_none_with_tool_history_keeps_the_tools(server) -> None:
    """Item 8: Converse needs toolConfig once the history has tool blocks, and has no "none"."""
    from phi.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage
    from .test_recordings import reply_for

    mc = _model("bedrock", server.url)
    history = [UserMessage.from_text("12+7?"),
               AssistantMessage([ToolCall("t1", "calculator", {"a": 1})], StopReason.TOOL_USE, mc.id, "bedrock"),
               ToolResultMessage("t1", "calculator", [TextContent("19")])]
    server.queue(reply_for("bedrock__text_nova.bin", 4096))
    config = StreamConfig(mc, messages=history, tools=_weather_tools(), tool_choice="none")
    get_provider(mc).stream(config, Collector(), CancellationToken())
    body = server.requests[0].json()
    assert "toolChoice" not in body["toolConfig"] and body["toolConfig"]["tools"]
    assert not _bedrock_errors(body, mc.id)


@pytest.mark.parametrize("choice,problem", [("weather", "not among this call's tools"), ("required", None)])
def test_tool_choice_naming_no_tool_is_an_error_before_sending(server, choice, problem) -> None:
    """Item 8: a name that is no tool of the call, or "required" without tools, is an ``api`` error."""
    mc = _model("openai", server.url)
    tools = _weather_tools() if problem else []
    config = StreamConfig(mc, messages=[UserMessage.from_text("hi")], tools=tools, tool_choice=choice)
    with pytest.raises(ProviderError) as info:
        get_provider(mc).stream(config, Collector(), CancellationToken())
    assert info.value.kind == ErrorKind.API and (problem or "needs tools") in str(info.value) and not server.requests


def test_tool_choice_is_a_run_setting(server) -> None:
    """Item 8: ``tool_choice`` and ``parallel_tool_calls`` are AgentLoopConfig settings (Agent
    keywords) that reach the request; a choice that forces a tool applies to the call answering
    the user, not to the one after the tool results (else the run would loop); a bad value is a
    ConfigError at configuration time."""
    from phi.loop.config import AgentLoopConfig
    from .conftest import fixture_bytes

    server.queue(Reply(fixture_bytes("openai_chat__tool_call_streamed_args.txt")),
                 Reply(fixture_bytes("openai_chat__text_usage_chunk_then_moderation_chunk.txt")))
    mc = ModelConfig.openai("gpt-4.1", api_key="sk-test", base_url=server.url)
    agent = Agent(model_config=mc, tools=[_calculator()], tool_choice="calculator", parallel_tool_calls=False,
                  retry_config=RetryConfig.none())
    agent.prompt("12+7?").result(20)
    assert len(server.requests) == 2
    body = server.requests[0].json()
    assert body["tool_choice"] == {"type": "function", "function": {"name": "calculator"}}
    assert body["parallel_tool_calls"] is False
    after_results = server.requests[1].json()  # a forced choice does not outlive the tool results
    assert "tool_choice" not in after_results and after_results["parallel_tool_calls"] is False
    with pytest.raises(ConfigError):
        AgentLoopConfig(tool_choice="")
    with pytest.raises(ConfigError):
        AgentLoopConfig(parallel_tool_calls="no")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- item 5: a stalled stream gives up


def _stall_body(provider: str) -> tuple[bytes, int]:
    """A body that never completes an event, and the size of each piece it is sent in: keep-alive
    comments for the SSE protocols, the first bytes of an event-stream frame for Bedrock."""
    if provider == "bedrock":
        frame = bedrock_text("x" * 2000)
        return frame[:1500], 1
    return b": keep-alive\n\n" * 400, len(b": keep-alive\n\n")


@pytest.mark.parametrize("kind", ["comments", "drip"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stalled_stream_stops_at_the_idle_timeout(server, provider, kind) -> None:
    """Item 5: a server sending only keep-alive comments, or dripping one byte at a time, makes no
    event; the read timeout never fires, and the call stops at ``idle_timeout`` (here 1 s) with a
    retryable ``network`` error, not at the total bound (here 30 s)."""
    import time

    from .test_faults import start

    body, piece = _stall_body(provider)
    if kind == "drip":
        piece = 1
    reply = Reply(body, chunk_size=piece, delay=0.05)
    prov, config, sink, cancel = start(server, provider, reply, read_timeout=10.0)
    config.model_config.options.update(idle_timeout=1.0, total_timeout=30.0)
    began = time.monotonic()
    with pytest.raises(ProviderError) as info:
        prov.stream(config, sink, cancel)
    elapsed = time.monotonic() - began
    assert info.value.kind == ErrorKind.NETWORK and "idle_timeout" in str(info.value), str(info.value)
    assert 0.9 <= elapsed < 4, elapsed


def test_a_stall_after_output_keeps_the_partial_reply(server) -> None:
    """Item 5: text arrived, then only pings: the reply ends with stopReason ``error`` and the text."""
    import time

    events = anthropic_text("Hello there").split(b"event: content_block_stop")[0]
    body = events + b": keep-alive\n\n" * 200
    server.queue(Reply(body, chunk_size=len(b": keep-alive\n\n"), delay=0.05))
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url,
                               options={"idle_timeout": 1.0, "read_timeout": 10.0})
    began = time.monotonic()
    message = get_provider(mc).stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), Collector(),
                                      CancellationToken())
    assert time.monotonic() - began < 4
    assert message.stop_reason == StopReason.ERROR and message.text == "Hello there"
    assert "stalled" in message.error_message


def test_keep_alive_events_that_carry_nothing_do_not_hold_the_idle_bound_open(server) -> None:
    """Issue 35 item 7: after some text the server sends only complete ``ping`` events (Anthropic's
    real keep-alive) every 0.05 s; they make no progress, so the call stops at the idle bound (1 s),
    not at the server's end nor the total bound, and keeps the text."""
    import time

    events = anthropic_text("Hello there").split(b"event: content_block_stop")[0]
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    server.queue(Reply(events + ping * 400, chunk_size=len(ping), delay=0.05))
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url,
                               options={"idle_timeout": 1.0, "read_timeout": 10.0, "total_timeout": 60.0})
    began = time.monotonic()
    message = get_provider(mc).stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), Collector(),
                                      CancellationToken())
    assert time.monotonic() - began < 10  # the pings alone would last 20 s
    assert message.stop_reason == StopReason.ERROR and message.text == "Hello there"
    assert "stalled" in message.error_message


def test_empty_deltas_do_not_hold_the_idle_bound_open_either(server) -> None:
    """A server that keeps the stream alive with empty text deltas makes no progress either."""
    import time

    events = anthropic_text("Hello there").split(b"event: content_block_stop")[0]
    empty = (b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
             b'"delta": {"type": "text_delta", "text": ""}}\n\n')
    server.queue(Reply(events + empty * 400, chunk_size=len(empty), delay=0.05))
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url,
                               options={"idle_timeout": 1.0, "read_timeout": 10.0, "total_timeout": 60.0})
    began = time.monotonic()
    message = get_provider(mc).stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), Collector(),
                                      CancellationToken())
    assert time.monotonic() - began < 10  # the empty deltas alone would last 20 s
    assert message.stop_reason == StopReason.ERROR and message.text == "Hello there"
    assert "stalled" in message.error_message


def test_a_slow_but_steady_stream_is_not_cut(server) -> None:
    """Item 5: events 0.3 s apart with an idle bound of 1 s: every gap is under it, the whole
    stream (about 3 s) over it; the call completes."""
    texts = anthropic_text("x").split(b"\n\n")
    server.queue(Reply(b"\n\n".join(texts), chunk_size=1, delay=0.0))
    pieces = [chunk + b"\n\n" for chunk in texts if chunk]
    server.replies[-1].body = b"".join(pieces)
    server.replies[-1].chunk_size = max(len(p) for p in pieces)
    server.replies[-1].delay = 0.3
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url,
                               options={"idle_timeout": 1.0})
    message = get_provider(mc).stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), Collector(),
                                      CancellationToken())
    assert message.stop_reason == StopReason.STOP, message.error_message


def test_idle_defaults_are_per_protocol_and_documented() -> None:
    """Item 5: each protocol has a default in the tens of seconds (local servers: longer), shown
    in docs/providers.md next to the other time bounds."""
    from pathlib import Path

    from phi.providers.registry import ProviderRegistry

    registry = ProviderRegistry.default()
    defaults = {api: registry.get(api).protocol.idle_timeout for api in registry.apis() if api != "mock"}
    assert all(10 <= value <= 120 for value in defaults.values()), defaults
    assert ModelConfig.preset("llamacpp", "m").options["idle_timeout"] >= 300
    assert ModelConfig.openai_compatible("http://127.0.0.1:8080/v1", "m").options["idle_timeout"] >= 300
    docs = (Path(__file__).resolve().parents[2] / "docs" / "providers.md").read_text(encoding="utf-8")
    assert "idle_timeout" in docs and "total_timeout" in docs


# --------------------------------------------------------------------------- item 6: blocks phi does not model

COMPACTION_SUMMARY = "The user asked for 12+7; the calculator said 19."


def _anthropic_with_unknown_blocks() -> bytes:
    """A reply with a compaction block (streamed as ``compaction_delta``s, the shape of the SDK's
    BetaCompactionBlock and BetaCompactionContentBlockDelta), a server tool call with streamed
    input, its result sent whole, then text."""
    events: list[dict] = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                                "content": [], "model": "claude-test",
                                                                "usage": {"input_tokens": 5, "output_tokens": 1}}},
                          {"type": "content_block_start", "index": 0,
                           "content_block": {"type": "compaction", "content": None}}]
    for piece in (COMPACTION_SUMMARY[:20], COMPACTION_SUMMARY[20:]):
        events.append({"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta",
                                                                            "content": piece}})
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta",
                                                                     "encrypted_content": "Ek0KAgvEnc=="}},
               {"type": "content_block_stop", "index": 0},
               {"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use",
                                                                            "id": "srvtoolu_1", "name": "web_search",
                                                                            "input": {}}},
               {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta",
                                                                     "partial_json": '{"query": "phi'}},
               {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta",
                                                                     "partial_json": ' agent"}'}},
               {"type": "content_block_stop", "index": 1},
               {"type": "content_block_start", "index": 2, "content_block": {
                   "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                   "content": [{"type": "web_search_result", "url": "https://example.com/phi", "title": "phi",
                                "encrypted_content": "EqgfCio=", "page_age": None}]}},
               {"type": "content_block_stop", "index": 2}]
    text = anthropic_text("Done.").split(b"\n\n")
    tail = b"\n\n".join(chunk for chunk in text if b"content_block" in chunk or b"message_delta" in chunk
                        or b"message_stop" in chunk).replace(b'"index": 0', b'"index": 3')
    return sse(events) + tail + b"\n\n"


def _anthropic_replay_checker(received: list):
    """An Anthropic server that answers the first call with the unknown blocks and checks that the
    next call sends them back verbatim, valid against the SDK's block types."""
    defs = {"$defs": _validator("anthropic").schema["$defs"]}

    def respond(request) -> Reply:
        body = request.json()
        received.append(body)
        if len(received) == 1:
            return Reply(_anthropic_with_unknown_blocks())
        import jsonschema

        assistant = [m for m in body["messages"] if m["role"] == "assistant"][0]["content"]
        compaction = assistant[0]
        assert compaction == {"type": "compaction", "content": COMPACTION_SUMMARY, "encrypted_content": "Ek0KAgvEnc=="}
        jsonschema.Draft202012Validator({**defs, "$ref": "#/$defs/BetaCompactionBlockParam"}).validate(compaction)
        jsonschema.Draft202012Validator({**defs, "$ref": "#/$defs/ServerToolUseBlockParam"}).validate(assistant[1])
        jsonschema.Draft202012Validator({**defs, "$ref": "#/$defs/WebSearchToolResultBlockParam"}).validate(
            assistant[2])
        assert assistant[1]["input"] == {"query": "phi agent"} and assistant[3]["text"] == "Done."
        return Reply(anthropic_text("Sure."))

    return respond


def test_unknown_anthropic_blocks_survive_save_load_and_go_back(server) -> None:
    """Item 6: compaction and server-tool blocks are kept (as opaque blocks), survive a JSON
    save/load of the history (DATA-6), and are sent back verbatim to Anthropic on the next turn."""
    received: list = []
    server.responder = _anthropic_replay_checker(received)
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url)
    agent = Agent(model_config=mc, retry_config=RetryConfig.none())
    reply = agent.prompt("search").result(10).messages[-1]
    assert reply.text == "Done." and len(reply.content) == 4
    saved = agent.save_messages()
    restored = Agent(model_config=mc.with_(id="claude-other"), retry_config=RetryConfig.none())
    restored.restore_messages(saved)
    again = restored.prompt("and?").result(10).messages[-1]
    assert again.stop_reason == StopReason.STOP, again.error_message
    assert len(received) == 2 and again.text == "Sure."


@pytest.mark.parametrize("api", ["openai", "openai_responses", "google", "bedrock", "anthropic-elsewhere"])
def test_opaque_blocks_never_reach_another_service(server, api) -> None:
    """Item 6: the same history sent to any other service (or to another Anthropic-protocol
    service) carries none of the opaque blocks' content."""
    from phi.providers.anthropic import AnthropicParser
    from phi.providers.base import AssistantBuilder
    from phi.providers.http import parse_body
    from phi.types import AssistantMessage

    builder = AssistantBuilder(lambda event: None, "claude-test", "anthropic")
    reply = parse_body(AnthropicParser(builder), [_anthropic_with_unknown_blocks()])
    history = [UserMessage.from_text("search"), reply, UserMessage.from_text("and?")]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == StopReason.STOP
    if api == "anthropic-elsewhere":
        mc = ModelConfig.anthropic("claude-test", api_key="k", base_url=server.url).with_(provider="my-gateway")
        from phi.providers import anthropic as module
    else:
        mc = _model(api, server.url)
        module = __import__(f"phi.providers.{api}", fromlist=["build_body"])
    body = json.dumps(module.build_body(StreamConfig(mc, messages=history)))
    for secret in ("compaction", "Ek0KAgvEnc", "srvtoolu_1", "EqgfCio", "phi agent", "opaque"):
        assert secret not in body, (api, secret)
    assert "Done." in body


def test_unknown_responses_items_round_trip_to_the_same_service_only() -> None:
    """Item 6: a Responses output item of a type phi does not model is replayed as an input item to
    the same service, and to no other."""
    from phi.providers import openai_responses
    from phi.providers.base import AssistantBuilder
    from phi.providers.http import parse_body

    item = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search",
                                                                                        "query": "phi"}}
    events = [{"type": "response.created", "response": {"id": "resp_1"}},
              {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
              {"type": "response.output_item.done", "output_index": 0, "item": item},
              {"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1"}},
              {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Found it."},
              {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}]
    builder = AssistantBuilder(lambda event: None, "gpt-5", "openai")
    reply = parse_body(openai_responses.ResponsesParser(builder), [sse(events)])
    history = [UserMessage.from_text("search"), reply, UserMessage.from_text("and?")]
    mc = ModelConfig.openai_responses("gpt-5", api_key="k")
    items = openai_responses.build_body(StreamConfig(mc, messages=history))["input"]
    assert item in items
    errors = [e.message for e in _validator("CreateResponse").iter_errors(
        openai_responses.build_body(StreamConfig(mc, messages=history)))]
    assert not errors, errors
    azure = ModelConfig.azure_openai("gpt-5", resource="r", api_key="k")
    assert "ws_1" not in json.dumps(openai_responses.build_body(StreamConfig(azure, messages=history)))
