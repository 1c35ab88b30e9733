"""The tracer's own bookkeeping against what it does not control (SPEC §17 OTEL-7, OTEL-12): span
processors that raise (user code) and a long-lived process attaching one tracer to many agents."""

from __future__ import annotations

import gc
import logging
from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from phi import Agent, ScriptedProvider
from phi.loop.tool import FunctionTool
from phi.observability import OtelTracer
from phi.observability import otel

from .conftest import Spans


class Raising(SpanProcessor):
    """A broken plugin: raises in ``on_end`` (and in ``on_start`` of the spans named ``start_prefix``)."""

    def __init__(self, start_prefix: str | None = None) -> None:
        self.start_prefix = start_prefix
        self.ends = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.start_prefix is not None and span.name.startswith(self.start_prefix):
            raise RuntimeError("plugin bug in on_start")

    def on_end(self, span: ReadableSpan) -> None:
        self.ends += 1
        raise RuntimeError("plugin bug in on_end")


def lookup_tool() -> FunctionTool:
    return FunctionTool("lookup", "Look a fact up.", {"type": "object", "properties": {}}, lambda args, ctx: "42")


def call(call_id: str) -> dict[str, Any]:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": "lookup", "arguments": {}}]}


def three_turns(runs: int = 1) -> Agent:
    """An agent whose every run is three turns: two tool calls, then "done"."""
    return Agent(model="claude-sonnet-4-5", provider=ScriptedProvider([call("c1"), call("c2"), "done"] * runs,
                                                                      provider_id="anthropic"),
                 tools=[lookup_tool()])


def traced_with(*processors: SpanProcessor) -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for processor in processors:
        provider.add_span_processor(processor)
    return exporter, provider


def assert_one_whole_tree(spans: list[ReadableSpan]) -> None:
    ids = {s.context.span_id for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert [r.name for r in roots] == ["invoke_agent"], [s.name for s in spans]
    orphans = [s.name for s in spans if s.parent is not None and s.parent.span_id not in ids]
    assert not orphans, f"children of spans never exported: {orphans}"


def test_a_processor_raising_in_on_end_breaks_neither_the_tree_nor_the_counts(
        caplog: pytest.LogCaptureFixture) -> None:
    broken = Raising()
    exporter, provider = traced_with(broken)
    agent = three_turns(runs=2)
    agent.subscribe(OtelTracer(provider))
    with caplog.at_level(logging.DEBUG, logger="phi"):
        assert agent.run("go").text == "done"
        assert agent.run("again").text == "done"  # the next run is not disturbed by the last one
    spans = list(exporter.get_finished_spans())
    names = sorted(s.name for s in spans)
    # each run: one invoke_agent, three chat spans (one per turn, each once), two tool calls
    assert names == sorted(["invoke_agent"] * 2 + ["chat claude-sonnet-4-5"] * 6 + ["execute_tool lookup"] * 4), names
    assert len({s.context.span_id for s in spans}) == len(spans)
    for trace_id in {s.context.trace_id for s in spans}:
        assert_one_whole_tree([s for s in spans if s.context.trace_id == trace_id])
    assert broken.ends == len(spans)  # every span was ended exactly once
    failures = [r for r in caplog.records if "span processor" in r.getMessage()]
    assert failures and sum(r.levelno >= logging.WARNING for r in failures) == 1  # said once, loudly


def test_a_processor_raising_in_on_start_loses_only_that_span() -> None:
    exporter, provider = traced_with(Raising(start_prefix="execute_tool"))
    agent = three_turns()
    agent.subscribe(OtelTracer(provider))
    assert agent.run("go").text == "done"
    spans = list(exporter.get_finished_spans())
    assert sorted(s.name for s in spans) == ["chat claude-sonnet-4-5"] * 3 + ["invoke_agent"]
    assert_one_whole_tree(spans)


def test_one_tracer_attached_to_many_agents_keeps_bounded_tables(monkeypatch: pytest.MonkeyPatch,
                                                                  spans: Spans) -> None:
    """A long ``phi --otel`` session or a server attaches a tracer to each agent it makes: once the
    agents have run and are gone, every table the tracer keeps is back to a constant size (the
    ended-run table is capped; the cap is lowered here so that the count shows it)."""
    monkeypatch.setattr(otel, "_REMEMBERED_LOOPS", 50)
    tracer = spans.tracer()

    def run_one(number: int) -> None:
        agent = Agent(provider=ScriptedProvider([call(f"c{number}"), "ok"]), tools=[lookup_tool()])
        tracer.attach(agent)
        assert agent.run("go").text == "ok"

    for number in range(2000):
        run_one(number)
    gc.collect()
    run_one(-1)  # one more run after the others are gone
    assert tracer.flush(5)
    tables = {name: len(value) for name, value in vars(tracer).items()
              if isinstance(value, (dict, set, list)) and name != "_handlers"}
    assert tables and max(tables.values()) <= 50, tables
    assert len(spans.named("invoke_agent")) == 2001
