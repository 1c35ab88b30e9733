#!/usr/bin/env python3
"""The run contract in company, in real time (issue 30): the windows the simulator found, measured
with real threads on this machine, and what start-up on the run's thread costs.

- ``timeouts_8x100ms_slow_callbacks_ms``: eight parallel calls time out at 100 ms, each with a
  cancellation callback that blocks 0.5 s: how long the tool phase takes (was 4.1 s).
- ``abort_with_blocking_callback_ms``: ``abort()`` while one tool's cancellation callback blocks 2 s
  (bounded by 500 ms), and ``sibling_cancelled_after_abort_ms``: how long after ``abort()`` began a
  sibling tool's token reports cancelled (was: when the blocking callback returned).
- ``run_timeout_completed_slow_after_loop_ms``: ``run(timeout=0.3)`` of a run that completes at once
  but whose ``after_loop`` takes 10 s: back at the bound (0.3 + 0.5 + grace 1.0 + 0.25) with the
  completed result (was a TimeoutError after 6.3 s).
- ``run_timeout_slow_tool_source_ms``: ``run(timeout=0.3)`` with a tool source whose ``tools()`` takes
  2 s (was 2 s; bound 0.3 + 0.5 + grace 0.1 + 0.25).
- ``run_ms_with_tool_source`` / ``run_ms_without``: a one-reply run's cost with a trivial tool source
  (its ``tools()`` asked on a pool worker while the run waits) and without one (median of 300).

Figures are printed, never judged; the last line is one JSON object with all of them.
Usage: python3 scripts/bench/run_contract.py
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from phi import Agent, FunctionTool, RunTimeout, ScriptedProvider  # noqa: E402

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def calls(*names: str) -> dict[str, Any]:
    return {"blocks": [{"type": "toolCall", "id": f"c{i}", "name": n, "arguments": {}} for i, n in enumerate(names)]}


def timeouts_with_slow_callbacks() -> float:
    def slow(args: dict[str, Any], ctx: Any) -> str:
        ctx.cancel.on_cancel(lambda: time.sleep(0.5))
        ctx.cancel.wait(3.0)
        return "late"

    agent = Agent(provider=ScriptedProvider([calls(*["slow"] * 8), "done"]), tools=[FunctionTool("slow", "", SCHEMA, slow)],
                  tool_timeout_ms=100)
    marks: dict[str, float] = {}
    agent.subscribe(lambda e: marks.setdefault(e.type, time.perf_counter())
                    if e.type in ("ToolExecutionStart", "TurnEnd") else None)
    agent.run("go")
    return (marks["TurnEnd"] - marks["ToolExecutionStart"]) * 1000


def abort_with_blocking_callback() -> tuple[float, float]:
    started, seen = threading.Event(), {}

    def blocker(args: dict[str, Any], ctx: Any) -> str:
        ctx.cancel.on_cancel(lambda: time.sleep(2.0))
        started.set()
        ctx.cancel.wait(5.0)
        return "a"

    def careful(args: dict[str, Any], ctx: Any) -> str:
        while not ctx.cancel.is_cancelled():
            time.sleep(0.0005)
        seen["cancelled"] = time.perf_counter()
        return "b"

    agent = Agent(provider=ScriptedProvider([calls("blocker", "careful"), "done"]),
                  tools=[FunctionTool("blocker", "", SCHEMA, blocker), FunctionTool("careful", "", SCHEMA, careful)])
    stream = agent.prompt("go")
    started.wait(5)
    time.sleep(0.05)
    begun = time.perf_counter()
    agent.abort()
    took = time.perf_counter() - begun
    stream.result(timeout=10)
    return took * 1000, (seen["cancelled"] - begun) * 1000


def run_timeout_completed_slow_after_loop() -> float:
    agent = Agent(provider=ScriptedProvider(["done"]), after_loop=lambda *_: time.sleep(10.0))
    begun = time.perf_counter()
    result = agent.run("go", timeout=0.3)
    assert result.outcome.value == "completed" and not result.timed_out
    return (time.perf_counter() - begun) * 1000


def run_timeout_slow_tool_source() -> float:
    class Slow:
        def tools(self) -> list[Any]:
            time.sleep(2.0)
            return []

    agent = Agent(provider=ScriptedProvider(["done"]), tool_sources=[Slow()], tool_abort_grace_ms=100)
    begun = time.perf_counter()
    try:
        agent.run("go", timeout=0.3)
    except RunTimeout:
        pass
    return (time.perf_counter() - begun) * 1000


def run_cost(with_source: bool, n: int = 300) -> float:
    class Trivial:
        def tools(self) -> list[Any]:
            return []

    agent = Agent(provider=ScriptedProvider(default="ok", record_calls=False),
                  tool_sources=[Trivial()] if with_source else [])
    agent.run("warm")
    times = []
    for i in range(n):
        begun = time.perf_counter()
        agent.run("hi")
        times.append(time.perf_counter() - begun)
        if i % 50 == 0:
            agent.messages = []
    return statistics.median(times) * 1000


def main() -> None:
    logging.getLogger("phi").setLevel(logging.ERROR)  # every abandoned call is logged: noise here
    figures: dict[str, float] = {}
    figures["timeouts_8x100ms_slow_callbacks_ms"] = round(timeouts_with_slow_callbacks(), 1)
    abort_ms, sibling_ms = abort_with_blocking_callback()
    figures["abort_with_blocking_callback_ms"] = round(abort_ms, 1)
    figures["sibling_cancelled_after_abort_ms"] = round(sibling_ms, 2)
    figures["run_timeout_completed_slow_after_loop_ms"] = round(run_timeout_completed_slow_after_loop(), 1)
    figures["run_timeout_slow_tool_source_ms"] = round(run_timeout_slow_tool_source(), 1)
    figures["run_ms_with_tool_source"] = round(run_cost(True), 3)
    figures["run_ms_without"] = round(run_cost(False), 3)
    for name, value in figures.items():
        print(f"{name:<45} {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
