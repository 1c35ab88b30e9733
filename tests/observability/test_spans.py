"""Spans of single runs (SPEC §17 OTEL-1, OTEL-2, OTEL-5, OTEL-7): a tool run, a retry, an abort, an
error reply — names, kinds, attributes, parents and status against the GenAI conventions' tables
(semantic-conventions v1.41.0: gen-ai-spans.md, gen-ai-agent-spans.md)."""

from __future__ import annotations

import threading

from opentelemetry.trace import SpanKind, StatusCode

from phi import Agent, ScriptedProvider
from phi.events import ToolExecutionStart
from phi.loop.tool import FunctionTool
from phi.providers.mock import ScriptedResponse
from phi.providers.retry import RetryConfig

from .conftest import Spans

FAST_RETRIES = RetryConfig(initial_delay_ms=1, jitter=False)


def call(name: str, call_id: str, **args: object) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}],
            "usage": {"input": 10, "output": 4}}


def lookup_tool() -> FunctionTool:
    return FunctionTool("lookup", "Look a fact up.", {"type": "object", "properties": {"q": {"type": "string"}}},
                        lambda args, ctx: f"found {args.get('q')}")


def claude(script: list) -> ScriptedProvider:
    return ScriptedProvider(script, provider_id="anthropic")


def agent_on(script: list, tools: list[FunctionTool] | None = None) -> Agent:
    """An Agent on ``claude-sonnet-4-5`` whose replies come from ``script``."""
    return Agent(model="claude-sonnet-4-5", provider=claude(script), tools=tools or [])


def test_a_tool_run_is_an_agent_span_over_chat_and_execute_tool_spans(spans: Spans) -> None:
    provider = claude([call("lookup", "c1", q="capital of France"),
                       {"blocks": [{"type": "text", "chunks": ["Paris", "."]}],
                        "usage": {"input": 20, "output": 2, "cache_read": 12, "cache_write": 3}}])
    agent = Agent(model="claude-sonnet-4-5", provider=provider, tools=[lookup_tool()], agent_id="a-1",
                  session_id="s-1")
    agent.subscribe(spans.tracer(agent_name="geographer"))
    assert agent.run("Where is the capital of France?").text == "Paris."

    root = spans.one("invoke_agent geographer")
    assert spans.tree(root) == ["invoke_agent geographer", "  chat claude-sonnet-4-5", "  execute_tool lookup",
                                "  chat claude-sonnet-4-5"]
    assert root.kind == SpanKind.INTERNAL and root.parent is None and root.status.status_code == StatusCode.UNSET
    assert root.attributes is not None
    assert {k: root.attributes[k] for k in ("gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.agent.id",
                                            "gen_ai.conversation.id", "gen_ai.provider.name",
                                            "gen_ai.request.model", "phi.run.outcome", "phi.run.turns")} == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "geographer", "gen_ai.agent.id": "a-1",
        "gen_ai.conversation.id": "s-1", "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-5", "phi.run.outcome": "completed", "phi.run.turns": 2}
    assert root.attributes["gen_ai.usage.input_tokens"] == 10 + 20 + 12 + 3  # cached tokens included
    assert root.attributes["gen_ai.usage.output_tokens"] == 6

    first, tool, second = spans.children(root)
    for chat in (first, second):
        assert chat.kind == SpanKind.CLIENT and chat.status.status_code == StatusCode.UNSET
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "anthropic"
        assert "gen_ai.system" not in chat.attributes  # v1.36.0's name: only with legacy_names=True
        assert chat.attributes["gen_ai.conversation.id"] == "s-1"
        assert chat.attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
        assert chat.attributes["gen_ai.request.stream"] is True
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == (10, 4)
    assert second.attributes["gen_ai.usage.input_tokens"] == 35
    assert second.attributes["gen_ai.usage.cache_read.input_tokens"] == 12
    assert second.attributes["gen_ai.usage.cache_creation.input_tokens"] == 3
    assert "gen_ai.response.time_to_first_chunk" in second.attributes

    assert tool.kind == SpanKind.INTERNAL and tool.status.status_code == StatusCode.UNSET
    assert tool.attributes is not None
    assert {k: tool.attributes[k] for k in ("gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
                                            "gen_ai.tool.type")} == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function"}
    # content capture is off by default (gen-ai-spans.md "Capturing instructions, inputs, and outputs")
    for span in spans.all:
        assert span.attributes is not None
        assert not {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                    "gen_ai.tool.call.result"} & set(span.attributes)
    assert first.end_time is not None and tool.start_time is not None and first.end_time <= tool.start_time


def test_legacy_names_are_written_only_when_asked_for(spans: Spans) -> None:
    agent = agent_on(["hi"])
    agent.subscribe(spans.tracer(legacy_names=True, environ={}))
    agent.run("hello")
    chat, root = spans.one("chat claude-sonnet-4-5"), spans.one("invoke_agent")
    assert chat.attributes is not None and root.attributes is not None
    assert chat.attributes["gen_ai.system"] == chat.attributes["gen_ai.provider.name"] == "anthropic"
    assert root.attributes["gen_ai.system"] == "anthropic"


def test_the_opt_in_writes_only_the_latest_names(spans: Spans) -> None:
    agent = agent_on(["hi"])
    agent.subscribe(spans.tracer(legacy_names=True,
                                 environ={"OTEL_SEMCONV_STABILITY_OPT_IN": "http,gen_ai_latest_experimental"}))
    agent.run("hello")
    chat = spans.one("chat claude-sonnet-4-5")
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.provider.name"] == "anthropic" and "gen_ai.system" not in chat.attributes
    assert spans.one("invoke_agent").attributes.get("gen_ai.system") is None  # type: ignore[union-attr]


def test_a_retry_is_an_event_of_the_one_chat_span(spans: Spans) -> None:
    provider = claude([ScriptedResponse.failure("rate_limited", "slow down", status=429),
                       ScriptedResponse.failure("network", "connection reset"), "done"])
    agent = Agent(model="claude-sonnet-4-5", provider=provider, retry_config=FAST_RETRIES)
    tracer = spans.tracer()
    agent.subscribe(tracer)
    assert agent.run("go").text == "done"
    chat = spans.one("chat claude-sonnet-4-5")
    assert chat.status.status_code == StatusCode.UNSET  # retried errors are not the call's (recording-errors.md)
    assert chat.attributes is not None and chat.attributes["phi.retries"] == 2
    retries = [e for e in chat.events if e.name == "phi.retry"]
    assert [(e.attributes or {}).get("error.type") for e in retries] == ["rate_limited", "network"]
    assert [(e.attributes or {}).get("phi.retry.number") for e in retries] == [1, 2]
    assert (retries[0].attributes or {}).get("http.response.status_code") == 429
    assert chat.start_time is not None and chat.end_time is not None
    assert all(chat.start_time <= e.timestamp <= chat.end_time for e in retries)
    tracer.close()


def test_an_error_reply_fails_the_chat_and_the_run(spans: Spans) -> None:
    provider = claude([ScriptedResponse.failure("auth", "invalid x-api-key", status=401)])
    agent = Agent(model="claude-sonnet-4-5", provider=provider)
    agent.subscribe(spans.tracer())
    assert agent.run("go").outcome.value == "error"
    chat, root = spans.one("chat claude-sonnet-4-5"), spans.one("invoke_agent")
    for span in (chat, root):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes is not None and span.attributes["error.type"] == "auth"
        assert "invalid x-api-key" in (span.status.description or "")
    assert chat.attributes is not None and chat.attributes["gen_ai.response.finish_reasons"] == ("error",)
    assert root.attributes is not None and root.attributes["phi.run.outcome"] == "error"


def test_an_abort_cancels_the_running_tool_call_and_the_run(spans: Spans) -> None:
    started = threading.Event()

    def wait_for_abort(args: dict, ctx: object) -> str:
        started.set()
        ctx.cancel.wait(10)  # type: ignore[attr-defined]  # a ToolContext
        return "too late"

    slow = FunctionTool("slow", "Takes long.", {"type": "object", "properties": {}}, wait_for_abort)
    agent = agent_on([call("slow", "s1"), "never"], tools=[slow])
    agent.subscribe(spans.tracer())
    agent.subscribe(lambda e: agent.abort() if isinstance(e, ToolExecutionStart) else None)
    assert agent.run("go").outcome.value == "aborted"
    tool, root = spans.one("execute_tool slow"), spans.one("invoke_agent")
    assert spans.parent_of(tool) is root
    for span in (tool, root):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes is not None and span.attributes["error.type"] == "cancelled"
    assert root.attributes is not None and root.attributes["phi.run.outcome"] == "aborted"
    assert spans.one("chat claude-sonnet-4-5").status.status_code == StatusCode.UNSET


def test_failed_tool_calls_say_why_in_error_type(spans: Spans) -> None:
    def broken(args: dict, ctx: object) -> str:
        raise ValueError("no such row")

    tools = [FunctionTool("broken", "Fails.", {"type": "object", "properties": {}}, broken), lookup_tool()]
    provider = claude([{"blocks": [{"type": "toolCall", "id": "b1", "name": "broken", "arguments": {}},
                                   {"type": "toolCall", "id": "m1", "name": "missing", "arguments": {}},
                                   {"type": "toolCall", "id": "l1", "name": "lookup", "arguments": {"q": 3}}]},
                       "ok"])
    agent = Agent(model="claude-sonnet-4-5", provider=provider, tools=tools)
    agent.subscribe(spans.tracer())
    agent.run("go")
    kinds = {s.attributes["gen_ai.tool.call.id"]: s.attributes.get("error.type")  # type: ignore[index,union-attr]
             for s in spans.all if s.name.startswith("execute_tool")}
    assert kinds == {"b1": "ValueError", "m1": "tool_not_found", "l1": "invalid_arguments"}
    assert all(s.status.status_code == StatusCode.ERROR for s in spans.all if s.name.startswith("execute_tool"))
    assert all(s.status.description is None for s in spans.all if s.name.startswith("execute_tool"))


def test_retry_observers_hear_each_retry_and_cannot_break_the_call() -> None:
    """The core hook under OTEL-5: ``observe_retries`` names the loop; a raising observer is ignored."""
    from phi.providers.retry import RetryNotice, observe_retries

    heard: list[RetryNotice] = []

    def broken(notice: RetryNotice) -> None:
        raise RuntimeError("observer bug")

    stops = [observe_retries(heard.append), observe_retries(broken)]
    try:
        agent = Agent(provider=claude([ScriptedResponse.failure("network", "reset"), "ok"]), retry_config=FAST_RETRIES)
        assert agent.run("go").text == "ok"
    finally:
        for stop in stops:
            stop()
    assert [(n.loop_id, n.retry, n.failure.kind.value) for n in heard] == [(agent.last_loop_id, 1, "network")]
