"""Parallel tools really run at once (DESIGN §3, §9): 10 x 200 ms finish in about 200 ms."""

from __future__ import annotations

import threading
import time

from loop_helpers import call, run, text_of, text_tool, tool_turn

from phi.loop.config import ToolExecution


def _sleepy(active, peak, lock):
    def fn(args, ctx):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        return f"slept {args['n']}"

    return fn


def _tool_phase(n_calls, mode=ToolExecution.PARALLEL, **settings):
    stamps: dict[str, float] = {}
    active, peak, lock = [0], [0], threading.Lock()

    def sink(event):
        if event.type == "ToolExecutionStart":
            stamps.setdefault("first_start", time.monotonic())
        elif event.type == "ToolExecutionEnd":
            stamps["last_end"] = time.monotonic()

    calls = [call(f"t{i}", "sleepy", {"n": i}) for i in range(n_calls)]
    out = run([tool_turn(*calls), "ok"], [text_tool("sleepy", _sleepy(active, peak, lock))], sink=sink,
              tool_execution=mode, **settings)
    return out, stamps["last_end"] - stamps["first_start"], peak[0]


def test_ten_parallel_tools_of_200ms_finish_together():
    out, wall, peak = _tool_phase(10)
    assert peak == 10
    assert wall < 0.6, f"tool phase took {wall * 1000:.0f} ms"
    assert [text_of(r) for r in out.results] == [f"slept {i}" for i in range(10)]  # call order kept


def test_batched_mode_runs_groups_one_after_another():
    _, wall, peak = _tool_phase(4, ToolExecution.BATCHED, batch_size=2)
    assert peak == 2
    assert 0.38 < wall < 0.9


def test_parallel_tool_ends_arrive_in_completion_order():
    def fn(args, ctx):
        time.sleep(args["delay"])
        return "ok"

    calls = [call("slow", "wait", {"delay": 0.15}), call("fast", "wait", {"delay": 0.0})]
    out = run([tool_turn(*calls), "ok"], [text_tool("wait", fn)])
    assert [e.tool_call_id for e in out.of("ToolExecutionStart")] == ["slow", "fast"]
    assert [e.tool_call_id for e in out.of("ToolExecutionEnd")] == ["fast", "slow"]
    assert [r.tool_call_id for r in out.results] == ["slow", "fast"]
