"""Runs on other threads joined into one trace (SPEC §17 OTEL-4): sub-agents under the tool call that
ran them, parallel-evaluation branches under their workflow, MCP tool calls with the MCP attributes
(semantic-conventions v1.41.0: gen-ai-agent-spans.md, mcp.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from phi import Agent, ScriptedProvider
from phi.evaluation import TokenEfficientEvaluation
from phi.loop.tool import FunctionTool
from phi.mcp import McpToolset
from phi.providers.mock import ScriptedResponse
from phi.providers.model_config import ModelConfig
from phi.subagent import SubAgentTool

from .conftest import Spans

SDK_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "sdk_server.py"


def call(name: str, call_id: str, **args: object) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}]}


def lookup_tool() -> FunctionTool:
    return FunctionTool("lookup", "Look a fact up.", {"type": "object", "properties": {}}, lambda args, ctx: "42")


def researcher(script: list) -> SubAgentTool:
    return SubAgentTool("researcher", model_config=ModelConfig.openai("gpt-5"),
                        provider=ScriptedProvider(script, provider_id="openai"),
                        system_prompt="Find facts.", tools=[lookup_tool()])


def test_a_sub_agent_run_hangs_under_the_tool_call_that_ran_it(spans: Spans) -> None:
    agent = Agent(model="claude-sonnet-4-5", provider=ScriptedProvider(
        [call("researcher", "r1", task="What is the answer?"), "It is 42."], provider_id="anthropic"),
        tools=[researcher([call("lookup", "k1"), "The answer is 42."])])
    spans.tracer(agent_name="lead").attach(agent)
    assert agent.run("ask the researcher").text == "It is 42."

    root = spans.one("invoke_agent lead")
    assert spans.tree(root) == [
        "invoke_agent lead",
        "  chat claude-sonnet-4-5",
        "  execute_tool researcher",
        "    invoke_agent researcher",
        "      chat gpt-5",
        "      execute_tool lookup",
        "      chat gpt-5",
        "  chat claude-sonnet-4-5",
    ]
    call_span, child = spans.one("execute_tool researcher"), spans.one("invoke_agent researcher")
    assert child.kind == SpanKind.INTERNAL and spans.parent_of(child) is call_span
    assert child.attributes is not None and call_span.attributes is not None
    assert call_span.attributes["phi.child_loop_id"] == child.attributes["phi.loop_id"]
    assert child.attributes["phi.parent_loop_id"] == root.attributes["phi.loop_id"]  # type: ignore[index]
    assert child.attributes["gen_ai.provider.name"] == "openai"
    assert child.attributes["gen_ai.agent.name"] == "researcher"
    assert child.attributes["gen_ai.conversation.id"] != root.attributes["gen_ai.conversation.id"]  # type: ignore
    assert {s.context.trace_id for s in spans.all} == {root.context.trace_id}
    assert call_span.start_time <= child.start_time and child.end_time <= call_span.end_time  # type: ignore


def test_concurrent_calls_of_one_sub_agent_tool_are_never_confused(spans: Spans) -> None:
    """Two calls of the same sub-agent tool run at once (parallel tool mode): each child hangs under
    its own call, whatever order their events arrive in."""
    def child_reply(config: object) -> dict:
        task = config.messages[-1].content[0].text  # type: ignore[attr-defined]
        return {"blocks": [{"type": "text", "chunks": [f"answer to {task}"]}], "chunk_delay_ms": 5}

    tool = SubAgentTool("researcher", provider=ScriptedProvider([child_reply, child_reply]))
    both = {"blocks": [{"type": "toolCall", "id": "r1", "name": "researcher", "arguments": {"task": "one"}},
                       {"type": "toolCall", "id": "r2", "name": "researcher", "arguments": {"task": "two"}}]}
    agent = Agent(provider=ScriptedProvider([both, "done"]), tools=[tool])
    spans.tracer().attach(agent)
    agent.run("ask twice")
    calls = spans.named("execute_tool researcher")
    children = spans.named("invoke_agent researcher")
    assert len(calls) == 2 and len(children) == 2
    for child in children:
        parent = spans.parent_of(child)
        assert parent is not None and parent.attributes is not None and child.attributes is not None
        assert parent.attributes["phi.child_loop_id"] == child.attributes["phi.loop_id"]


def test_without_attach_the_sub_agent_call_names_the_child_loop(spans: Spans) -> None:
    agent = Agent(provider=ScriptedProvider([call("researcher", "r1", task="q"), "ok"]),
                  tools=[researcher(["fact"])])
    agent.subscribe(spans.tracer())
    agent.run("go")
    assert [s.name for s in spans.all].count("invoke_agent") == 1
    call_span = spans.one("execute_tool researcher")
    assert call_span.attributes is not None and call_span.attributes["phi.child_loop_id"].endswith(".sub.1")


def test_three_parallel_branches_hang_under_one_workflow_span(spans: Spans) -> None:
    def variant(config_id: str, text: str, tokens: int) -> dict:
        return {"config_id": config_id, "provider": ScriptedProvider(
            [{"blocks": [{"type": "text", "chunks": [text]}], "usage": {"input": tokens, "output": tokens}}])}

    agent = Agent(provider=ScriptedProvider([]))
    spans.tracer().attach(agent)
    result = agent.run_parallel("question", [variant("a", "long answer", 50), variant("b", "short", 1),
                                             variant("c", "medium one", 20)], TokenEfficientEvaluation())
    assert result.text == "short"
    workflow = spans.one("invoke_workflow parallel_evaluation")
    assert workflow.kind == SpanKind.INTERNAL and workflow.parent is None
    assert workflow.status.status_code == StatusCode.UNSET
    branches = spans.children(workflow)
    assert [b.name for b in branches] == ["invoke_agent"] * 3
    assert workflow.attributes is not None
    assert workflow.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert workflow.attributes["gen_ai.workflow.name"] == "parallel_evaluation"
    loop_ids = {b.attributes["phi.loop_id"] for b in branches}  # type: ignore[index]
    assert loop_ids == set(workflow.attributes["phi.parallel.loop_ids"])  # type: ignore[arg-type]
    assert workflow.attributes["phi.parallel.selected_loop_id"] == result.selected_loop_id
    assert workflow.attributes["phi.parallel.selected_config_index"] == 1
    for branch in branches:
        assert [c.name for c in spans.children(branch)] == ["chat mock-model"]
        assert branch.start_time >= workflow.start_time and branch.end_time <= workflow.end_time  # type: ignore


def test_a_branch_retry_lands_on_its_own_chat_span(spans: Spans) -> None:
    """Branch events reach the tracer through the caller's queue; its retry notices come straight
    from the branch thread, and still land on the right call."""
    from phi.providers.retry import RetryConfig

    flaky = ScriptedProvider([ScriptedResponse.failure("network", "reset"), "fine"])
    agent = Agent(provider=ScriptedProvider([]), retry_config=RetryConfig(initial_delay_ms=1, jitter=False))
    tracer = spans.tracer()
    tracer.attach(agent)
    agent.run_parallel("q", [{"config_id": "a", "provider": flaky},
                             {"config_id": "b", "provider": ScriptedProvider(["steady"])}])
    chats = spans.named("chat mock-model")
    assert sorted(len([e for e in c.events if e.name == "phi.retry"]) for c in chats) == [0, 1]
    tracer.close()


@pytest.mark.timeout(60)
def test_an_mcp_tool_call_carries_the_mcp_attributes(spans: Spans) -> None:
    toolset = McpToolset.stdio(sys.executable, [str(SDK_SERVER)], timeout=20)
    provider = ScriptedProvider([{"blocks": [
        {"type": "toolCall", "id": "t1", "name": "add", "arguments": {"a": 40, "b": 2}},
        {"type": "toolCall", "id": "t2", "name": "fail", "arguments": {"message": "disk full"}}]},
        "42."])
    agent = Agent(provider=provider, tool_sources=[toolset])
    with agent:
        spans.tracer().attach(agent)
        assert agent.run("Add 40 and 2.").outcome.value == "completed"
    add, fail = spans.one("execute_tool add"), spans.one("execute_tool fail")
    for span in (add, fail):
        assert span.kind == SpanKind.INTERNAL and spans.parent_of(span) is spans.one("invoke_agent")
        assert span.attributes is not None
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert span.attributes["network.transport"] == "pipe"
        assert span.attributes["gen_ai.tool.type"] == "extension"
        assert str(span.attributes["mcp.protocol.version"]).startswith("20")
        assert span.attributes["gen_ai.tool.description"]
    assert add.status.status_code == StatusCode.UNSET and add.attributes["gen_ai.tool.name"] == "add"  # type: ignore
    assert fail.status.status_code == StatusCode.ERROR
    assert fail.attributes is not None and fail.attributes["error.type"] == "tool_error"  # mcp.md: isError


@pytest.mark.timeout(60)
def test_an_mcp_tool_call_sends_its_span_s_trace_context_in_meta(spans: Spans) -> None:
    """SPEC OTEL-10 (the MCP conventions' context propagation): the official SDK server receives the
    W3C ``traceparent`` of the call's ``execute_tool`` span in ``params._meta``."""
    import json

    toolset = McpToolset.stdio(sys.executable, [str(SDK_SERVER)], timeout=20)
    provider = ScriptedProvider([{"blocks": [{"type": "toolCall", "id": "m1", "name": "meta", "arguments": {}}]},
                                 "done"])
    agent = Agent(provider=provider, tool_sources=[toolset])
    with agent:
        tracer = spans.tracer()
        tracer.attach(agent)
        result = agent.run("What context do you get?")
        tracer.close()
    received = json.loads(next(m for m in result.messages if m.role == "toolResult").text)
    span = spans.one("execute_tool meta").context
    version, trace_id, span_id, flags = received["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", f"{span.trace_id:032x}", f"{span.span_id:016x}")
    assert int(flags, 16) & 1  # sampled
    # without a tracer the request carries no trace context
    toolset = McpToolset.stdio(sys.executable, [str(SDK_SERVER)], timeout=20)
    provider = ScriptedProvider([{"blocks": [{"type": "toolCall", "id": "m2", "name": "meta", "arguments": {}}]},
                                 "done"])
    with Agent(provider=provider, tool_sources=[toolset]) as plain:
        result = plain.run("And now?")
    assert "traceparent" not in json.loads(next(m for m in result.messages if m.role == "toolResult").text)
