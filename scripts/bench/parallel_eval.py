#!/usr/bin/env python3
"""Parallel evaluation (phi.evaluation): branch concurrency and the cost of serialising the sink.

Two figures:

* **wall time** of ``agent_loop_parallel`` with B branches whose scripted replies take about 200 ms
  each (20 chunks of 10 ms), against the same B runs of ``agent_loop`` one after another — the
  branches overlap, so the ratio should approach B;
* **events per second** through ``agent_loop_parallel`` when the replies stream as fast as the
  scripted provider can (B branches x T turns of 50 chunks), against the same runs made one after
  another with ``agent_loop`` — the price of the queue that hands every branch event to the sink on
  the calling thread.

Prints the figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from phi.evaluation import PickFirstEvaluation, agent_loop_parallel  # noqa: E402
from phi.loop import agent_loop  # noqa: E402
from phi.loop.config import AgentContext, AgentLoopConfig  # noqa: E402
from phi.providers.mock import ScriptedProvider  # noqa: E402
from phi.types import UserMessage  # noqa: E402


def _config(i: int, chunks: int, delay_ms: float, turns: int) -> AgentLoopConfig:
    reply = {"blocks": [{"type": "text", "chunks": [f"c{k} " for k in range(chunks)]}], "chunk_delay_ms": delay_ms}
    script = [reply] * turns
    follow_ups = [[UserMessage.from_text("more")] for _ in range(turns - 1)]
    return AgentLoopConfig(provider=ScriptedProvider(script, record_calls=False), config_id=f"b{i}",
                           get_follow_up_messages=lambda: follow_ups.pop() if follow_ups else [])


def _timed(fn) -> tuple[float, int]:
    events = [0]

    def sink(event) -> None:
        events[0] += 1

    started = time.perf_counter()
    fn(sink)
    return time.perf_counter() - started, events[0]


def parallel_vs_sequential(branches: int, chunks: int, delay_ms: float, turns: int) -> tuple[float, float, int]:
    prompt = [UserMessage.from_text("go")]

    def parallel(sink) -> None:
        configs = [_config(i, chunks, delay_ms, turns) for i in range(branches)]
        agent_loop_parallel(prompt, AgentContext(), configs, PickFirstEvaluation(), sink)

    def sequential(sink) -> None:
        for i in range(branches):
            agent_loop(prompt, AgentContext(), _config(i, chunks, delay_ms, turns), sink)

    par, events = _timed(parallel)
    seq, _ = _timed(sequential)
    return par, seq, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--branches", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; the median is reported")
    args = parser.parse_args()
    b = args.branches
    parallel_vs_sequential(b, 50, 0, 2)  # warm-up

    samples = [parallel_vs_sequential(b, 20, 10, 1) for _ in range(args.repeat)]
    par = statistics.median(s[0] for s in samples)
    seq = statistics.median(s[1] for s in samples)
    print(f"{b} branches x one ~200 ms reply: parallel {par * 1000:.0f} ms, sequential {seq * 1000:.0f} ms, "
          f"speed-up {seq / par:.2f}x (ideal {b}x)")

    samples = [parallel_vs_sequential(b, 50, 0, 20) for _ in range(args.repeat)]
    par_fast = statistics.median(s[0] for s in samples)
    seq_fast = statistics.median(s[1] for s in samples)
    events = samples[0][2]
    print(f"{b} branches x 20 turns x 50 chunks, no delay ({events} events): parallel {events / par_fast:,.0f} "
          f"events/s, sequential agent_loop {events / seq_fast:,.0f} events/s "
          f"(ratio {seq_fast / par_fast:.2f}; 2 cores shared)")
    print(json.dumps({
        "branches": b,
        "parallel_200ms_ms": round(par * 1000, 1),
        "sequential_200ms_ms": round(seq * 1000, 1),
        "speedup": round(seq / par, 2),
        "parallel_events_per_s": round(events / par_fast),
        "sequential_events_per_s": round(events / seq_fast),
    }))


if __name__ == "__main__":
    main()
