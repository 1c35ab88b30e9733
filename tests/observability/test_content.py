"""Content capture, off by default and opt-in (SPEC §17 OTEL-3), ``import phi`` without
OpenTelemetry (OTEL-1), and ``close()`` for runs that never ended (OTEL-7)."""

from __future__ import annotations

import json
import subprocess
import sys

from opentelemetry.trace import StatusCode

from phi import Agent, ScriptedProvider
from phi.events import AgentStart, TurnStart
from phi.loop.tool import FunctionTool

from .conftest import Spans


def lookup_tool() -> FunctionTool:
    return FunctionTool("lookup", "Look a fact up.", {"type": "object", "properties": {}},
                        lambda args, ctx: "Paris")


def run_with_content(spans: Spans, **options: object) -> None:
    script = [{"blocks": [{"type": "thinking", "chunks": ["hmm"]},
                          {"type": "toolCall", "id": "c1", "name": "lookup",
                           "arguments": {"city": "capital of France", "password": "hunter2-secret"}}]},
              "It is Paris."]
    agent = Agent(provider=ScriptedProvider(script), tools=[lookup_tool()])
    agent.subscribe(spans.tracer(**options))
    agent.run("Where is the capital of France?")


def test_content_is_captured_only_when_asked(spans: Spans) -> None:
    run_with_content(spans, capture_content=True)
    first, second = spans.named("chat mock-model")
    assert json.loads(str(first.attributes["gen_ai.input.messages"])) == [  # type: ignore[index]
        {"role": "user", "parts": [{"type": "text", "content": "Where is the capital of France?"}]}]
    output = json.loads(str(first.attributes["gen_ai.output.messages"]))  # type: ignore[index]
    assert output == [{"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "reasoning", "content": "hmm"},
        {"type": "tool_call", "id": "c1", "name": "lookup",
         "arguments": {"city": "capital of France", "password": "***"}}]}]
    history = json.loads(str(second.attributes["gen_ai.input.messages"]))  # type: ignore[index]
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"] == [{"type": "tool_call_response", "id": "c1", "response": "Paris"}]
    tool = spans.one("execute_tool lookup")
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {  # type: ignore[index]
        "city": "capital of France", "password": "***"}
    assert tool.attributes["gen_ai.tool.call.result"] == "Paris"  # type: ignore[index]
    root = spans.one("invoke_agent")
    assert json.loads(str(root.attributes["gen_ai.output.messages"]))[0]["parts"] == [  # type: ignore[index]
        {"type": "text", "content": "It is Paris."}]


def test_the_environment_variable_turns_capture_on(spans: Spans) -> None:
    run_with_content(spans, environ={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"})
    assert "gen_ai.tool.call.arguments" in spans.one("execute_tool lookup").attributes  # type: ignore[operator]


def test_content_is_cut_to_the_limit(spans: Spans) -> None:
    agent = Agent(provider=ScriptedProvider(["x" * 500]))
    agent.subscribe(spans.tracer(capture_content=True, content_limit=100))
    agent.run("long")
    output = json.loads(str(spans.one("chat mock-model").attributes["gen_ai.output.messages"]))  # type: ignore
    assert output[0]["parts"][0]["content"] == "x" * 100 + "…[400 more characters]"


def test_close_ends_what_never_ended(spans: Spans) -> None:
    tracer = spans.tracer()
    tracer(AgentStart("a", "s", "s.1"))
    tracer(TurnStart("s.1", 0))
    assert spans.all == []
    tracer.close()
    assert sorted(s.name for s in spans.all) == ["chat", "invoke_agent"]
    assert all(s.status.status_code == StatusCode.ERROR for s in spans.all)


def test_a_tracer_that_fails_never_breaks_the_run(spans: Spans) -> None:
    tracer = spans.tracer()
    tracer._handlers["TurnStart"] = lambda event, now: 1 / 0  # a bug inside the tracer
    agent = Agent(provider=ScriptedProvider(["fine"]))
    agent.subscribe(tracer)
    assert agent.run("go").text == "fine"


def test_import_phi_never_loads_opentelemetry() -> None:
    code = ("import sys, phi; phi.Agent; phi.ScriptedProvider; import phi.subagent, phi.evaluation; "
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
