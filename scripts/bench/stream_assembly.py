"""Stream assembly: a long reply in 16-byte deltas through the Agent, read and unread (SPEC EVT-6).

For replies of 64 KiB, 256 KiB and 1 MiB, streamed by a provider that feeds an AssistantBuilder
16 bytes at a time (no network, no parsing: what is measured is phi's assembly and event path):

- ``read``: the consumer iterates the EventStream as the reply streams;
- ``unread``: the consumer calls ``prompt(...).result()`` and never reads the events, so every event
  stays queued until the end.

It prints µs per delta (flat as the reply grows when assembly is linear) and the peak memory the run
allocated (tracemalloc, in a separate run) as a multiple of the reply size; the last line is JSON.

    .venv/bin/python scripts/bench/stream_assembly.py
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from phi import Agent  # noqa: E402
from phi.concurrency.cancel import CancellationToken  # noqa: E402
from phi.providers.base import AssistantBuilder, StreamConfig, StreamEventSink  # noqa: E402
from phi.types import AssistantMessage, StopReason  # noqa: E402

DELTA = 16
SIZES = {"64KiB": 64 * 1024, "256KiB": 256 * 1024, "1MiB": 1024 * 1024}


class DeltaProvider:
    """Streams ``size`` bytes of text in DELTA-byte pieces."""

    provider_id = "bench"

    def __init__(self, size: int) -> None:
        self.size = size

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        builder = AssistantBuilder(on_event, "bench-model", self.provider_id)
        body = "abcdefghijklmno"
        for i in range(self.size // DELTA):
            builder.text(body + "0123456789"[i % 10])  # a new 16-byte string per delta, as a decoder makes
        return builder.finish(StopReason.STOP)


def one_run(size: int, read: bool) -> float:
    agent = Agent(provider=DeltaProvider(size))
    gc.collect()
    started = time.perf_counter()
    stream = agent.prompt("go")
    if read:
        for _ in stream:
            pass
    result = stream.result()
    elapsed = time.perf_counter() - started
    assert len(result.text) == size
    return elapsed


def us_per_delta(size: int, read: bool, runs: int) -> float:
    return statistics.median(one_run(size, read) for _ in range(runs)) / (size // DELTA) * 1e6


def peak_ratio(size: int, read: bool) -> float:
    agent = Agent(provider=DeltaProvider(size))
    gc.collect()
    tracemalloc.start()
    stream = agent.prompt("go")
    if read:
        for _ in stream:
            pass
    stream.result()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / size


def main() -> None:
    figures: dict[str, float] = {}
    print(f"stream assembly: {DELTA}-byte deltas through Agent.prompt (median of runs)")
    for mode in ("read", "unread"):
        for label, size in SIZES.items():
            runs = 5 if size < 1024 * 1024 else 3
            us = us_per_delta(size, mode == "read", runs)
            ratio = peak_ratio(size, mode == "read")
            figures[f"{mode}_us_per_delta_{label}"] = round(us, 3)
            figures[f"{mode}_peak_x_reply_{label}"] = round(ratio, 2)
            print(f"  {mode:<6} {label:>6}: {us:6.2f} us/delta, peak memory {ratio:5.2f}x the reply")
    for mode in ("read", "unread"):
        growth = figures[f"{mode}_us_per_delta_1MiB"] / figures[f"{mode}_us_per_delta_64KiB"]
        figures[f"{mode}_growth_64KiB_to_1MiB"] = round(growth, 2)
        print(f"  {mode}: time per delta at 1 MiB / at 64 KiB = {growth:.2f} (1.0 = linear assembly)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
