"""Runs and span processors that end badly (SPEC §17 OTEL-7, OTEL-12): a processor losing a run's
own span in ``on_start``, a processor raising a ``BaseException``, and runs that raise instead of
ending with ``AgentEnd`` — their spans are written when ``run()`` raises and nothing of them is kept."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import StatusCode

from phi import Agent, ScriptedProvider
from phi.events import AgentEvent
from phi.loop.tool import FunctionTool
from phi.observability import OtelTracer

from .conftest import Spans


class Raises(SpanProcessor):
    """A broken plugin: raises ``error`` in ``hook`` (``"start"`` or ``"end"``) for spans named ``prefix``…"""

    def __init__(self, hook: str, prefix: str, error: type[BaseException] = RuntimeError) -> None:
        self.hook, self.prefix, self.error = hook, prefix, error

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.hook == "start" and span.name.startswith(self.prefix):
            raise self.error("plugin bug in on_start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.hook == "end" and span.name.startswith(self.prefix):
            raise self.error("plugin bug in on_end")


class PluginExit(BaseException):
    """A plugin's own BaseException subclass."""


def lookup_tool() -> FunctionTool:
    return FunctionTool("lookup", "Look a fact up.", {"type": "object", "properties": {}}, lambda args, ctx: "42")


def call(call_id: str) -> dict[str, Any]:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": "lookup", "arguments": {}}]}


def two_turns(**settings: Any) -> Agent:
    """A run of two turns: a tool call, then "done"."""
    return Agent(model="claude-sonnet-4-5", provider=ScriptedProvider([call("c1"), "done"], provider_id="anthropic"),
                 tools=[lookup_tool()], **settings)


def orphans(spans: list[ReadableSpan]) -> list[str]:
    ids = {s.context.span_id for s in spans}
    return [s.name for s in spans if s.parent is not None and s.parent.span_id not in ids]


# ----------------------------------------------------------------- OTEL-7: on_start loses the run's own span

def test_a_root_run_span_lost_in_on_start_still_has_its_children_written_in_one_trace(spans: Spans) -> None:
    spans.provider.add_span_processor(Raises("start", "invoke_agent"))
    agent = two_turns()
    agent.subscribe(spans.tracer())
    assert agent.run("go").text == "done"
    found = spans.all
    assert sorted(s.name for s in found) == ["chat claude-sonnet-4-5"] * 2 + ["execute_tool lookup"]
    # the lost span's stand-in is their parent: one trace, one (missing) parent, not three roots
    assert len({s.context.trace_id for s in found}) == 1
    assert len({s.parent.span_id for s in found if s.parent is not None}) == 1
    assert all(s.parent is not None for s in found)


def test_a_run_span_lost_in_on_start_puts_its_children_under_its_parent(spans: Spans) -> None:
    """A child run (``attach(parent_loop_id=)``, as ``spawn_agent`` children are) whose own span a
    processor loses: its chat and tool spans hang under the parent run's span."""
    tracer = spans.tracer()
    parent, loop_ids = two_turns(), []
    parent.subscribe(lambda event: loop_ids.append(event.loop_id) if event.type == "AgentStart" else None)
    tracer.attach(parent)
    assert parent.run("go").text == "done"
    spans.provider.add_span_processor(Raises("start", "invoke_agent"))
    child = two_turns()
    tracer.attach(child, parent_loop_id=loop_ids[0])
    assert child.run("go").text == "done"
    top = spans.one("invoke_agent")
    assert sorted(s.name for s in spans.children(top)) == ["chat claude-sonnet-4-5"] * 4 + ["execute_tool lookup"] * 2
    assert not orphans(spans.all)


# ----------------------------------------------------------------- OTEL-7: a BaseException from a processor

@pytest.mark.parametrize("hook, prefix, error", [("start", "chat", KeyboardInterrupt), ("end", "", PluginExit)],
                         ids=["KeyboardInterrupt-in-on_start", "BaseException-in-on_end"])
def test_a_processor_raising_a_base_exception_reaches_the_run_and_leaves_no_span_open(
        spans: Spans, hook: str, prefix: str, error: type[BaseException]) -> None:
    spans.provider.add_span_processor(Raises(hook, prefix, error))
    tracer = spans.tracer()
    agent = two_turns()
    agent.subscribe(tracer)
    with pytest.raises(error):
        agent.run("go")
    found = spans.all
    assert not orphans(found), [s.name for s in found]
    run = spans.one("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None and run.attributes["error.type"] == error.__name__
    assert "execute_tool lookup" in [s.name for s in found]
    assert tracer.flush(5) and not tracer._runs and not tracer._silent


def test_a_tool_call_open_when_the_run_raises_is_ended_cancelled(spans: Spans) -> None:
    """An event subscriber after the tracer raises at the tool call's start: the run ends there
    (LOOP-5) with the call's span open — it is ended with the run, not left an orphan."""
    tracer = spans.tracer()
    agent = two_turns()
    agent.subscribe(tracer)

    def broken_subscriber(event: AgentEvent) -> None:
        if event.type == "ToolExecutionStart":
            raise ValueError("subscriber bug")

    agent.subscribe(broken_subscriber)
    with pytest.raises(ValueError):
        agent.run("go")
    tool, run = spans.one("execute_tool lookup"), spans.one("invoke_agent")
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert tool.attributes is not None and tool.attributes["error.type"] == "cancelled"
    assert run.attributes is not None and run.attributes["error.type"] == "ValueError"
    assert run.end_time is not None and tool.end_time is not None and tool.end_time <= run.end_time


# ----------------------------------------------------------------- OTEL-12: runs without AgentEnd

def test_runs_ended_by_a_raising_hook_are_written_at_once_and_forgotten(spans: Spans) -> None:
    """One tracer attached to many agents whose runs raise (a ``before_turn`` bug): each run's span
    is exported as its ``run()`` raises, with status ERROR, and no table keeps the runs."""
    tracer = spans.tracer()

    def bad_hook(messages: Any, index: int) -> bool:
        if index == 1:  # the second turn: a chat and a tool call are already written
            raise ValueError("hook bug")
        return True

    for number in range(300):
        agent = two_turns(before_turn=bad_hook)
        tracer.attach(agent)
        with pytest.raises(ValueError):
            agent.run("go")
        assert len(spans.named("invoke_agent")) == number + 1  # before close(), before the next run
        agent.close()
        del agent
    gc.collect()
    assert tracer.flush(5)
    tables = {name: len(value) for name, value in vars(tracer).items()
              if isinstance(value, (dict, set, list)) and name != "_handlers" and name != "_ended"}
    assert max(tables.values()) == 0, tables
    runs = spans.named("invoke_agent")
    assert {r.status.status_code for r in runs} == {StatusCode.ERROR}
    assert {(r.attributes or {}).get("error.type") for r in runs} == {"ValueError"}
    assert len(spans.named("execute_tool lookup")) == 300 and not orphans(spans.all)
    tracer.close()
    assert len(spans.named("invoke_agent")) == 300  # close() found nothing left to end


def test_a_run_raising_in_a_tracer_that_does_not_trace_it_changes_nothing(spans: Spans) -> None:
    tracer = spans.tracer()
    traced, other = two_turns(), two_turns(before_turn=lambda m, i: (_ for _ in ()).throw(ValueError("x")))
    traced.subscribe(tracer)
    with pytest.raises(ValueError):
        other.run("go")
    assert traced.run("go").text == "done"
    assert [s.status.status_code for s in spans.named("invoke_agent")] == [StatusCode.UNSET]


def test_the_notice_of_a_raised_run_stops_with_the_tracer(spans: Spans) -> None:
    tracer: OtelTracer | None = spans.tracer()
    assert tracer is not None
    tracer.close()
    agent = two_turns(before_turn=lambda m, i: (_ for _ in ()).throw(ValueError("x")))
    agent.subscribe(tracer)
    with pytest.raises(ValueError):
        agent.run("go")  # listening again after close(): this run's span is ended too
    assert spans.one("invoke_agent").status.status_code is StatusCode.ERROR


def test_a_run_the_tracer_is_detached_from_is_written_then_and_forgotten(spans: Spans) -> None:
    """Attack 2 on OTEL-12: detached mid-run (from a tool), the run hears no AgentEnd any more; its
    spans end at the detach, without an error status (nothing failed), and no table keeps it."""
    tracer = spans.tracer()
    for index in range(50):
        holder: dict[str, Any] = {}

        def detaching(args: Any, ctx: Any) -> str:
            holder["detach"]()
            return "42"

        agent = Agent(model="claude-sonnet-4-5", provider=ScriptedProvider([call("c1"), "done"], provider_id="anthropic"),
                      tools=[FunctionTool("lookup", "Look it up.", {"type": "object", "properties": {}}, detaching)])
        holder["detach"] = tracer.attach(agent)
        assert agent.run(f"go {index}").text == "done"
        agent.close()
        del agent
    assert tracer.flush()
    runs = spans.named("invoke_agent claude-sonnet-4-5") or [s for s in spans.all if s.name.startswith("invoke_agent")]
    assert len(runs) == 50
    assert all(s.status.status_code != StatusCode.ERROR for s in runs)
    assert all(s.attributes and s.attributes.get("phi.tracing_detached") for s in runs)
    assert len(tracer._runs) == 0  # noqa: SLF001 (the table OTEL-12 bounds)
    tracer.close()
