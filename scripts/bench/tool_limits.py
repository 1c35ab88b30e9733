#!/usr/bin/env python3
"""Issue 10 items 11-12: what the tool safety limits cost and what they bound.

Prints the start-up cost of running a command under the descendant reaper (median of 30 runs of
``true``, with and without it), the peak Python memory of edit_file on a 5 MB file (exact and
tolerant match) as a multiple of the file size, the peak memory and time of a ranged read_file deep
inside a 64 MB file, and the time of a grep with 300,000 matches limited to 100 results. Ends with
one JSON line of the figures.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from phi.loop.tool import ToolContext  # noqa: E402
from phi.concurrency.cancel import CancellationToken  # noqa: E402
from phi.tools.edit_file import CodingEditFileTool  # noqa: E402
from phi.tools.environment import LocalExecutionEnvironment  # noqa: E402
from phi.tools.process import reaper_available, run_process  # noqa: E402
from phi.tools.read_file import ReadFileTool  # noqa: E402
from phi.tools.search import GrepTool  # noqa: E402


def ctx() -> ToolContext:
    return ToolContext("bench", "bench", CancellationToken())


def start_cost_ms(kill_descendants: bool, runs: int = 30) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run_process(["/bin/bash", "-c", "true"], cwd="/", env=None, timeout_ms=10_000,
                    kill_descendants=kill_descendants)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def peak(call) -> tuple[int, float]:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        call()
        return tracemalloc.get_traced_memory()[1], time.perf_counter() - started
    finally:
        tracemalloc.stop()


def main() -> None:
    figures: dict[str, float] = {}
    figures["command_ms_direct"] = round(start_cost_ms(False), 2)
    if reaper_available():
        figures["command_ms_reaper"] = round(start_cost_ms(True), 2)
    print(f"command start (bash -c true): direct {figures['command_ms_direct']} ms, "
          f"under the reaper {figures.get('command_ms_reaper', 'n/a')} ms")
    with tempfile.TemporaryDirectory() as root:
        env = LocalExecutionEnvironment(root)
        path = os.path.join(root, "big.py")
        for label, old in (("exact", "greeting = “hello”"), ("tolerant", 'greeting = "hello"')):
            with open(path, "w") as fh:
                fh.write("".join(f"value_{i} = {i}\n" for i in range(250_000)) + "greeting = “hello”\n")
            size = os.path.getsize(path)
            used, _ = peak(lambda: CodingEditFileTool(env=env).execute(
                {"file_path": "big.py", "old_string": old, "new_string": "greeting = 'bye'"}, ctx()))
            figures[f"edit_{label}_peak_x_size"] = round(used / size, 2)
            print(f"edit_file ({label} match) on {size} bytes: peak {used} bytes = {used / size:.2f}x the file")
        with open(os.path.join(root, "log.txt"), "w") as fh:
            for block in range(64):
                fh.write("".join(f"{block:02d}-{i:06d} {'.' * 48}\n" for i in range(16_384)))
        used, seconds = peak(lambda: ReadFileTool(env=env).execute(
            {"path": "log.txt", "offset": 900_000, "limit": 50}, ctx()))
        figures["ranged_read_64mb_peak_mb"] = round(used / 2**20, 2)
        figures["ranged_read_64mb_s"] = round(seconds, 3)
        print(f"read_file offset=900000 limit=50 in a 64 MB file: peak {used / 2**20:.2f} MiB, {seconds:.3f} s")
        with open(os.path.join(root, "m.txt"), "w") as fh:
            fh.write("".join(f"match {i}\n" for i in range(300_000)))
        started = time.perf_counter()
        GrepTool(env=env, backend="grep").execute({"pattern": "match", "path": "m.txt"}, ctx())
        figures["grep_300k_matches_s"] = round(time.perf_counter() - started, 3)
        print(f"grep with 300,000 matches, 100 returned: {figures['grep_300k_matches_s']} s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
