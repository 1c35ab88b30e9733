"""Details of the GenAI semantic conventions (semantic-conventions v1.41.0: gen-ai-spans.md,
gen-ai-agent-spans.md, gen-ai-output-messages.json, mcp.md) that SPEC §17 OTEL-2, OTEL-4 and OTEL-10
hold phi to: what a sampler sees, conversation ids, finish reasons, provider names, a workflow's
tokens, trace context inside a sub-agent and span ends that nest."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, StatusCode
from opentelemetry.util.types import Attributes
from providers.conftest import ReplayServer, Reply

from phi import Agent, ScriptedProvider
from phi.evaluation import TokenEfficientEvaluation
from phi.events import MessageUpdate
from phi.loop.tool import FunctionTool
from phi.mcp import McpToolset
from phi.observability import OtelTracer
from phi.providers.model_config import ModelConfig
from phi.providers.openai_responses import OpenAIResponsesProvider
from phi.subagent import SubAgentTool

from .conftest import Spans

SDK_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "sdk_server.py"
# gen-ai-output-messages.json, FinishReason
FINISH_REASONS = {"stop", "length", "content_filter", "tool_call", "error"}


class Recording(Sampler):
    """Samples everything; keeps the attributes each span had when it was created."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def should_sample(self, parent_context: Context | None, trace_id: int, name: str,
                      kind: SpanKind | None = None, attributes: Attributes = None,
                      links: Sequence[Link] | None = None, trace_state: Any = None) -> SamplingResult:
        with self._lock:
            self.seen.append((name, dict(attributes or {})))
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "Recording"


def call(name: str, call_id: str, **args: object) -> dict[str, Any]:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}]}


def test_a_sampler_sees_the_provider_and_model_of_a_run_when_its_span_starts() -> None:
    sampler, exporter = Recording(), InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    researcher = SubAgentTool("researcher", model_config=ModelConfig.openai("gpt-5"),
                              provider=ScriptedProvider(["found it"], provider_id="openai"))
    agent = Agent(model="claude-sonnet-4-5", tools=[researcher], provider=ScriptedProvider(
        [call("researcher", "r1", task="look"), "done"], provider_id="anthropic"))
    OtelTracer(provider).attach(agent)
    agent.run("go")
    started = {name: attributes for name, attributes in sampler.seen if name.startswith("invoke_agent")}
    assert started["invoke_agent"]["gen_ai.provider.name"] == "anthropic"
    assert started["invoke_agent"]["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert started["invoke_agent researcher"]["gen_ai.provider.name"] == "openai"
    assert started["invoke_agent researcher"]["gen_ai.request.model"] == "gpt-5"
    assert all(attributes["gen_ai.operation.name"] for _, attributes in sampler.seen)


def test_chat_spans_carry_the_conversation_id(spans: Spans) -> None:
    agent = Agent(provider=ScriptedProvider(["hi"]), session_id="conversation-7")
    agent.subscribe(spans.tracer())
    agent.run("hello")
    chat = spans.one("chat mock-model")
    assert chat.attributes is not None and chat.attributes["gen_ai.conversation.id"] == "conversation-7"


def test_an_aborted_reply_has_a_finish_reason_of_the_schema_and_phi_s_own_beside_it(spans: Spans) -> None:
    slow = {"blocks": [{"type": "text", "chunks": ["one ", "two ", "three"]}], "chunk_delay_ms": 20}
    agent = Agent(provider=ScriptedProvider([slow]))
    agent.subscribe(spans.tracer())
    agent.subscribe(lambda event: agent.abort() if isinstance(event, MessageUpdate) else None)
    assert agent.run("go").outcome.value == "aborted"
    chat, root = spans.one("chat mock-model"), spans.one("invoke_agent")
    for span in (chat, root):
        assert span.attributes is not None
        assert set(span.attributes["gen_ai.response.finish_reasons"]) <= FINISH_REASONS  # type: ignore[arg-type]
        assert span.attributes["gen_ai.response.finish_reasons"] == ("error",)
        assert span.attributes["phi.stop_reason"] == "aborted"
        assert span.status.status_code == StatusCode.ERROR and span.attributes["error.type"] == "cancelled"


def test_deprecated_gen_ai_system_is_not_written_by_default(spans: Spans) -> None:
    agent = Agent(provider=ScriptedProvider(["hi"]))
    agent.subscribe(spans.tracer(environ={}))
    agent.run("hello")
    assert spans.all and not any("gen_ai.system" in (s.attributes or {}) for s in spans.all)


@pytest.mark.timeout(60)
def test_a_failed_responses_call_names_the_conventions_provider(spans: Spans) -> None:
    """Over HTTP on 127.0.0.1: an OpenAI Responses call answered with a 400."""
    server = ReplayServer()
    body = {"error": {"type": "invalid_request_error", "message": "bad input", "code": None, "param": None}}
    server.queue(Reply(json.dumps(body).encode(), status=400, content_type="application/json"))
    try:
        agent = Agent(model_config=ModelConfig.openai_responses("gpt-5", api_key="sk-test-key-0000000000",
                                                                base_url=server.url),
                      provider=OpenAIResponsesProvider())
        agent.subscribe(spans.tracer())
        assert agent.run("go").outcome.value == "error"
    finally:
        server.close()
    assert len(server.requests) == 1
    for span in (spans.one("chat gpt-5"), spans.one("invoke_agent")):
        assert span.attributes is not None and span.attributes["gen_ai.provider.name"] == "openai"
        assert span.status.status_code == StatusCode.ERROR


def test_a_workflow_reports_the_tokens_of_its_branches(spans: Spans) -> None:
    def variant(config_id: str, text: str, tokens: int) -> dict[str, Any]:
        return {"config_id": config_id, "provider": ScriptedProvider(
            [{"blocks": [{"type": "text", "chunks": [text]}], "usage": {"input": tokens, "output": tokens + 1}}])}

    agent = Agent(provider=ScriptedProvider([]))
    spans.tracer().attach(agent)
    agent.run_parallel("q", [variant("a", "long answer", 50), variant("b", "short", 1), variant("c", "mid", 20)],
                       TokenEfficientEvaluation())
    workflow = spans.one("invoke_workflow parallel_evaluation")
    assert workflow.attributes is not None
    assert workflow.attributes["gen_ai.usage.input_tokens"] == 71
    assert workflow.attributes["gen_ai.usage.output_tokens"] == 74


def assert_children_end_within_their_parents(found: list[ReadableSpan]) -> None:
    by_id = {s.context.span_id: s for s in found}
    for span in found:
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        if parent is not None:
            assert span.end_time is not None and parent.end_time is not None
            assert span.end_time <= parent.end_time, f"{span.name} ends after {parent.name}"
            assert span.start_time is not None and parent.start_time is not None
            assert span.start_time >= parent.start_time, f"{span.name} starts before {parent.name}"


def test_in_a_parallel_run_no_span_ends_after_its_parent(spans: Spans) -> None:
    """A branch's events reach the tracer through the caller's queue, after they happened."""
    def branch(config_id: str) -> dict[str, Any]:
        both = {"blocks": [{"type": "toolCall", "id": f"{config_id}1", "name": "lookup", "arguments": {}},
                           {"type": "toolCall", "id": f"{config_id}2", "name": "researcher",
                            "arguments": {"task": "look"}}]}
        return {"config_id": config_id, "provider": ScriptedProvider(
            [both, {"blocks": [{"type": "text", "chunks": ["a", "b", "c"]}]}])}

    lookup = FunctionTool("lookup", "Look.", {"type": "object", "properties": {}}, lambda args, ctx: "42")
    researcher = SubAgentTool("researcher", provider=ScriptedProvider(default="fact"), tools=[lookup])
    agent = Agent(provider=ScriptedProvider([]), tools=[lookup, researcher])
    spans.tracer().attach(agent)
    for _ in range(5):
        agent.run_parallel("q", [branch("a"), branch("b"), branch("c")])
    assert len(spans.named("invoke_workflow parallel_evaluation")) == 5
    assert len(spans.named("invoke_agent researcher")) == 15
    assert_children_end_within_their_parents(spans.all)


@pytest.mark.timeout(60)
def test_an_mcp_call_inside_a_sub_agent_carries_the_trace_context(spans: Spans) -> None:
    """OTEL-10 inside a sub-agent: the child's spans are made as it runs, under the call that runs
    it, so its MCP request carries the ``traceparent`` of its own ``execute_tool`` span."""
    with McpToolset.stdio(sys.executable, [str(SDK_SERVER)], timeout=20) as toolset:
        child = SubAgentTool("researcher", tools=toolset.tools(), provider=ScriptedProvider(
            [call("meta", "m1"), "the child is done"]))
        agent = Agent(provider=ScriptedProvider([call("researcher", "r1", task="look"), "done"]), tools=[child])
        tracer = spans.tracer(agent_name="lead")
        tracer.attach(agent)
        seen: list[str] = []
        agent.subscribe(lambda e: seen.append(e.result.text) if e.type == "ToolExecutionEnd" else None,
                        include_subagents=True)
        assert agent.run("go").text == "done"
        tracer.close()
    received = json.loads(next(text for text in seen if "traceparent" in text or text.startswith("{")))
    meta = spans.one("execute_tool meta")
    assert spans.tree(spans.one("invoke_agent lead")) == [
        "invoke_agent lead", "  chat mock-model", "  execute_tool researcher", "    invoke_agent researcher",
        "      chat mock-model", "      execute_tool meta", "      chat mock-model", "  chat mock-model"]
    version, trace_id, span_id, _ = received["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", f"{meta.context.trace_id:032x}", f"{meta.context.span_id:016x}")
    assert_children_end_within_their_parents(spans.all)
