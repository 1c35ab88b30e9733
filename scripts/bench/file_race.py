#!/usr/bin/env python3
"""Issue 31 item 7: how often a user's edit made while ``write_file`` runs is lost (SPEC §9.1).

Each trial writes a file, lets the model's tools read it, then starts ``write_file`` with new content
while a second process — the "user" — rewrites the same file after a random delay (uniform over
``--max-delay-ms``, 3 ms by default, about twice what a small write takes here). The user's edit has
the same size and keeps the old modification time, the hardest kind to see: ``inplace`` rewrites the
file's bytes (an editor saving in place, ``cp -p``), ``rename`` renames a new file over it (``rsync
-a``, many editors). After both are done the file must hold the user's content: the user wrote after
the model's last read, so whatever the model's write did, the user's edit must survive. A trial where
it did not is a lost edit. Prints the counts per mode and ends with one JSON line.

    .venv/bin/python scripts/bench/file_race.py [--trials 300] [--mode inplace|rename|both]
                                                [--max-delay-ms 3] [--size 4096] [--seed 1]
                                                [--no-renameat2]

``--no-renameat2`` measures what systems without it get (macOS, file systems that refuse it): the
check right before a plain rename.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from phi.concurrency.cancel import CancellationToken  # noqa: E402
from phi.errors import ToolError  # noqa: E402
from phi.loop.tool import ToolContext  # noqa: E402
from phi.tools import coding_tools  # noqa: E402
from phi.tools.environment import LocalExecutionEnvironment  # noqa: E402

# The user: waits for a line "DELAY_NS MODE PATH", busy-waits DELAY_NS (sleep is too coarse), writes
# the content of PATH + ".user" over PATH keeping its times, answers "done".
USER = r"""
import os, sys, time
for line in sys.stdin:
    delay, mode, path = line.split(" ", 2)
    path = path.rstrip("\n")
    with open(path + ".user", "rb") as fh:
        data = fh.read()
    end = time.perf_counter_ns() + int(delay)
    while time.perf_counter_ns() < end:
        pass
    old = os.stat(path)
    if mode == "inplace":
        with open(path, "r+b") as fh:
            fh.write(data)
        os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    else:
        temp = path + ".new"
        with open(temp, "wb") as fh:
            fh.write(data)
        os.utime(temp, ns=(old.st_atime_ns, old.st_mtime_ns))
        os.replace(temp, path)
    sys.stdout.write("done\n")
    sys.stdout.flush()
"""


def trial(user: subprocess.Popen[str], tools: dict, root: str, number: int, mode: str, delay_ns: int,
          size: int) -> str:
    """One race; returns "lost", "refused" (the model's write was refused, the user's kept) or
    "kept" (the model's write went through and the user's came after it)."""
    path = os.path.join(root, f"f{number}.txt")
    original, mine, theirs = (bytes([c]) * (size - 1) + b"\n" for c in b"ABU")
    with open(path, "wb") as fh:
        fh.write(original)
    with open(path + ".user", "wb") as fh:
        fh.write(theirs)
    ctx = ToolContext("bench", "bench", CancellationToken())
    tools["read_file"].execute({"file_path": path}, ctx)
    assert user.stdin is not None and user.stdout is not None
    user.stdin.write(f"{delay_ns} {mode} {path}\n")
    user.stdin.flush()
    try:
        tools["write_file"].execute({"file_path": path, "content": mine.decode()}, ctx)
        refused = False
    except ToolError:
        refused = True
    if user.stdout.readline() != "done\n":
        raise RuntimeError("the user process stopped")
    with open(path, "rb") as fh:
        final = fh.read()
    for name in (path, path + ".user"):
        os.unlink(name)
    if final != theirs:
        return "lost"
    return "refused" if refused else "kept"


def write_duration_ms(tools: dict, root: str, size: int, runs: int = 50) -> float:
    path = os.path.join(root, "timing.txt")
    ctx = ToolContext("bench", "bench", CancellationToken())
    tools["write_file"].execute({"file_path": path, "content": "x" * size}, ctx)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        tools["write_file"].execute({"file_path": path, "content": "y" * size}, ctx)
        times.append((time.perf_counter() - started) * 1000)
    os.unlink(path)
    times.sort()
    return times[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300, help="trials per mode")
    parser.add_argument("--mode", choices=("inplace", "rename", "both"), default="both")
    parser.add_argument("--max-delay-ms", type=float, default=3.0)
    parser.add_argument("--size", type=int, default=4096, help="file size in bytes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-renameat2", action="store_true", help="as on a system without renameat2")
    args = parser.parse_args()
    if args.no_renameat2:
        from phi.tools import fs_safe

        fs_safe._renameat2 = False
    rng = random.Random(args.seed)
    modes = ("inplace", "rename") if args.mode == "both" else (args.mode,)
    figures: dict[str, object] = {"trials_per_mode": args.trials, "max_delay_ms": args.max_delay_ms,
                                  "size": args.size, "renameat2": not args.no_renameat2}
    with tempfile.TemporaryDirectory(prefix="phi-file-race-") as root:
        tools = {t.name: t for t in coding_tools(LocalExecutionEnvironment(root))}
        figures["write_file_ms_median"] = round(write_duration_ms(tools, root, args.size), 3)
        print(f"write_file of {args.size} bytes: {figures['write_file_ms_median']} ms (median)")
        user = subprocess.Popen([sys.executable, "-c", USER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
        try:
            for mode in modes:
                counts = {"lost": 0, "refused": 0, "kept": 0}
                for number in range(args.trials):
                    delay = int(rng.uniform(0, args.max_delay_ms) * 1_000_000)
                    counts[trial(user, tools, root, number, mode, delay, args.size)] += 1
                print(f"{mode}: {counts['lost']} of {args.trials} user edits lost "
                      f"({counts['refused']} writes refused, {counts['kept']} user edits landed after the write)")
                figures[mode] = counts
        finally:
            assert user.stdin is not None
            user.stdin.close()
            user.wait()
    figures["lost"] = sum(figures[m]["lost"] for m in modes)  # type: ignore[index]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
