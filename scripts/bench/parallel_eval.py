#!/usr/bin/env python3
"""Parallel evaluation (phi.evaluation): branch concurrency, the cost of serialising the sink, and
branches in other processes (SPEC EVAL-7, EVAL-8).

Three figures:

* **wall time** of ``agent_loop_parallel`` with B branches whose scripted replies take about 200 ms
  each (20 chunks of 10 ms), against the same B runs of ``agent_loop`` one after another — the
  branches overlap, so the ratio should approach B;
* **events per second** through ``agent_loop_parallel`` when the replies stream as fast as the
  scripted provider can (B branches x T turns of 50 chunks), against the same runs made one after
  another with ``agent_loop`` — the price of the queue that hands every branch event to the sink on
  the calling thread;
* **wall time of 16 branches elsewhere** (``--remote``, each reply about 200 ms): in this process
  (16 threads), through a ``ProcessPoolExecutor`` (spawn, ``--processes`` workers) and through a Dask
  ``LocalCluster`` (2 worker processes x 8 threads; skipped without ``distributed``). Start-up of
  the pool or cluster is reported apart; the run times are medians of warm runs. Every branch
  is pickled, run in a worker and streamed back event by event, and the selection is checked.

Prints the figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from phi.evaluation import PickFirstEvaluation, agent_loop_parallel  # noqa: E402
from phi.loop import agent_loop  # noqa: E402
from phi.loop.config import AgentContext, AgentLoopConfig  # noqa: E402
from phi.providers.mock import ScriptedProvider  # noqa: E402
from phi.types import UserMessage  # noqa: E402


def _config(i: int, chunks: int, delay_ms: float, turns: int) -> AgentLoopConfig:
    reply = {"blocks": [{"type": "text", "chunks": [f"c{k} " for k in range(chunks)]}], "chunk_delay_ms": delay_ms,
             "usage": {"total_tokens": 100 + i}}
    script = [reply] * turns
    if turns == 1:  # no follow-up source: this config pickles, for the remote figures
        return AgentLoopConfig(provider=ScriptedProvider(script, record_calls=False), config_id=f"b{i}")
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


def _run_elsewhere(branches: int, executor: Any) -> float:
    """One parallel run of ``branches`` ~200 ms branches through ``executor``; its wall time."""
    configs = [_config(i, 20, 10, 1) for i in range(branches)]
    events = [0]

    def sink(event: Any) -> None:
        events[0] += 1

    started = time.perf_counter()
    result = agent_loop_parallel([UserMessage.from_text("go")], AgentContext(), configs, PickFirstEvaluation(), sink,
                                 max_workers=branches, executor=executor)
    elapsed = time.perf_counter() - started
    assert result.selected_config_index == 0 and all(o.succeeded for o in result.outcomes), result.outcomes
    assert events[0] == branches * 28 + 2, events[0]  # every branch's 28 events (20 deltas) came back
    return elapsed


def _median_run(branches: int, executor: Any, repeat: int) -> float:
    _run_elsewhere(branches, executor)  # warm-up: imports and connections in the workers
    return statistics.median(_run_elsewhere(branches, executor) for _ in range(repeat))


def _timed_start(make: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    made = make()
    return made, time.perf_counter() - started


def remote_figures(branches: int, processes: int, repeat: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"remote_branches": branches, "process_pool_workers": processes}
    figures["in_process_ms"] = round(_median_run(branches, None, repeat) * 1000, 1)
    spawn = multiprocessing.get_context("spawn")

    def process_pool() -> concurrent.futures.ProcessPoolExecutor:
        pool = concurrent.futures.ProcessPoolExecutor(processes, mp_context=spawn)
        list(pool.map(abs, range(processes * 4)))  # every worker up
        return pool

    pool, start = _timed_start(process_pool)
    with pool:
        figures["process_pool_start_ms"] = round(start * 1000)
        figures["process_pool_ms"] = round(_median_run(branches, pool, repeat) * 1000, 1)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        figures["dask_ms"] = None
        return figures
    cluster, start = _timed_start(lambda: LocalCluster(n_workers=2, threads_per_worker=8, processes=True,
                                                       dashboard_address=None, silence_logs=40))
    with cluster, Client(cluster) as client:
        figures["dask_start_ms"] = round(start * 1000)
        figures["dask_ms"] = round(_median_run(branches, client.get_executor(), repeat) * 1000, 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--branches", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; the median is reported")
    parser.add_argument("--remote-branches", type=int, default=16, help="branches of the remote figures")
    parser.add_argument("--processes", type=int, default=8, help="ProcessPoolExecutor workers")
    parser.add_argument("--no-remote", action="store_true", help="skip the process pool and Dask figures")
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
    figures: dict[str, Any] = {
        "branches": b,
        "parallel_200ms_ms": round(par * 1000, 1),
        "sequential_200ms_ms": round(seq * 1000, 1),
        "speedup": round(seq / par, 2),
        "parallel_events_per_s": round(events / par_fast),
        "sequential_events_per_s": round(events / seq_fast),
    }
    if not args.no_remote:
        remote = remote_figures(args.remote_branches, args.processes, args.repeat)
        n = remote["remote_branches"]
        print(f"{n} branches x one ~200 ms reply, in this process (16 threads): {remote['in_process_ms']:.0f} ms")
        print(f"  through a ProcessPoolExecutor ({remote['process_pool_workers']} spawned workers): "
              f"{remote['process_pool_ms']:.0f} ms (pool start {remote['process_pool_start_ms']} ms, not counted)")
        if remote["dask_ms"] is None:
            print("  Dask: skipped (distributed is not installed)")
        else:
            print(f"  through Dask (LocalCluster, 2 worker processes x 8 threads): {remote['dask_ms']:.0f} ms "
                  f"(cluster start {remote['dask_start_ms']} ms, not counted)")
        figures.update(remote)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
