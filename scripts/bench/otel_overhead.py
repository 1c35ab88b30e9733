#!/usr/bin/env python3
"""Tracing overhead (SPEC §17 OTEL-1; issue 27): what an OtelTracer adds to a turn.

The workload is loop_overhead.py's: N turns, each a streamed reply (4 text deltas) with one call of a
local ``ok()`` tool, then a final answer; the events are consumed live from ``Agent.prompt()``. It
runs the same agent

- untraced (no tracer; checked: nothing of OpenTelemetry is imported),
- traced into the API's no-op tracer provider (``NoOpTracerProvider``),
- traced into the SDK with the in-memory exporter (``SimpleSpanProcessor``: each span is exported
  on the run's thread as it ends — the costliest in-process setup),

interleaved, ``--repeat`` times each, and reports ms per turn (median, and the fastest run: on a
shared machine the minimum is the steadier figure) and the traced runs' extra cost in percent of the
untraced turn. The workload's model and tool cost nothing, so a turn is ~0.3 ms and this is the
harshest ratio there is; it also prints what the SDK itself takes to start and end one bare span
(two spans per turn), the floor of the in-memory figure that no subscriber can go below. Figures are
printed, never judged; the last line is one JSON object with all of them.
Usage: python3 scripts/bench/otel_overhead.py [--turns 200] [--repeat 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from loop_overhead import ok, script  # noqa: E402  (the same workload: one tool call per turn)

from phi import Agent, ScriptedProvider  # noqa: E402


def run_turns(turns: int, attach: Callable[[Agent], object] | None) -> float:
    """Seconds for one run of ``turns`` turns, its events consumed."""
    agent = Agent(provider=ScriptedProvider(script(turns), record_calls=False), tools=[ok], system_prompt="bench")
    if attach is not None:
        attach(agent)
    started = time.perf_counter()
    stream = agent.prompt("go")
    for _ in stream:
        pass
    assert stream.result().text == "All done."
    return time.perf_counter() - started


def untraced_imports_nothing() -> bool:
    """A run without a tracer, in a fresh interpreter: is any opentelemetry module loaded?"""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from phi import Agent, ScriptedProvider; "
            "Agent(provider=ScriptedProvider(['hi'])).run('go'); "
            "print(any(m.startswith('opentelemetry') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, ROOT], capture_output=True, text=True, check=True).stdout
    return out.strip() == "False"


def sdk_span_us(spans: int = 4000) -> float:
    """Microseconds the SDK (in-memory exporter) takes to start and end one span with no attributes."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    tracer = provider.get_tracer("bench")
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(spans // 5):
            tracer.start_span("span").end()
        best = min(best, (time.perf_counter() - started) / (spans // 5))
    return best * 1e6


def replay_us_per_turn(turns: int, provider: object) -> float:
    """The tracer's own work, on one thread: the events of a ``turns``-turn run (recorded once) fed
    to a fresh OtelTracer; microseconds per turn, the fastest of 5 (steady on a busy machine)."""
    from phi.observability import OtelTracer

    agent = Agent(provider=ScriptedProvider(script(turns), record_calls=False), tools=[ok])
    events: list = []
    agent.subscribe(events.append)
    agent.run("go")
    best = float("inf")
    for _ in range(5):
        tracer = OtelTracer(provider)  # type: ignore[arg-type]  # a TracerProvider
        started = time.perf_counter()
        for event in events:
            tracer(event)
        best = min(best, time.perf_counter() - started)
    return best / turns * 1e6


def setups() -> dict[str, Callable[[Agent], object] | None]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import NoOpTracerProvider

    from phi.observability import OtelTracer

    exporter = InMemorySpanExporter()
    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(exporter))
    noop = NoOpTracerProvider()

    def in_memory(agent: Agent) -> object:
        exporter.clear()  # keep memory flat across repeats
        return OtelTracer(sdk).attach(agent)

    return {"untraced": None, "noop": lambda agent: OtelTracer(noop).attach(agent), "in_memory": in_memory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per run")
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per setup; the median is reported")
    args = parser.parse_args()
    clean = untraced_imports_nothing()
    chosen = setups()
    for attach in chosen.values():  # warm-up: imports, validator cache, worker threads
        run_turns(50, attach)
    samples: dict[str, list[float]] = {name: [] for name in chosen}
    for _ in range(args.repeat):
        for name, attach in chosen.items():
            samples[name].append(run_turns(args.turns, attach))
    print(f"tracing overhead: {args.turns} turns (streamed reply + one local tool call), {args.repeat} runs each")
    print(f"  untraced run imports OpenTelemetry: {'no' if clean else 'YES'}")
    figures: dict[str, object] = {"turns": args.turns, "repeat": args.repeat, "untraced_imports_otel": not clean}
    for label, pick in (("median", statistics.median), ("min", min)):
        per_turn = {name: pick(times) * 1000 / args.turns for name, times in samples.items()}
        base = per_turn["untraced"]
        for name, ms in per_turn.items():
            extra = (ms - base) / base * 100
            print(f"  {label:>6} {name:>10}: {ms:.3f} ms/turn" + ("" if name == "untraced" else
                                                                  f", +{extra:.1f} % (+{(ms - base) * 1000:.0f} us)"))
            figures[f"{name}_ms_per_turn_{label}"] = round(ms, 4)
            if name != "untraced":
                figures[f"{name}_overhead_pct_{label}"] = round(extra, 2)
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import NoOpTracerProvider

    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    base_us = min(samples["untraced"]) / args.turns * 1e6
    for name, provider in (("noop", NoOpTracerProvider()), ("in_memory", sdk)):
        cost = replay_us_per_turn(args.turns, provider)
        print(f"  tracer work alone ({name}, events replayed on one thread): {cost:.1f} us/turn = "
              f"{cost / base_us * 100:.1f} % of the fastest untraced turn")
        figures[f"{name}_tracer_us_per_turn"] = round(cost, 2)
        figures[f"{name}_tracer_pct_of_turn"] = round(cost / base_us * 100, 2)
    floor = sdk_span_us()
    print(f"  the SDK alone: {floor:.1f} us to start and end a bare span, so >= {2 * floor:.0f} us per turn of 2 spans")
    figures["sdk_bare_span_us"] = round(floor, 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
