#!/usr/bin/env python3
"""Explore phi's concurrency under the deterministic simulator (issue 30; docs/simulation.md).

Each seed is one random scenario — agents, tools, hooks, subscribers, tool sources and actor threads
drawn from the seed (``scripts/simulation/plan.py``) — run under :mod:`phi.concurrency.simulator`
with the run contract checked at every step and at the end (``scripts/simulation/checks.py``,
``world.py``, ``actors.py``, ``explore.py``). The same seed replays the same interleaving.

    python scripts/simulate.py --seeds 50000 --jobs 2     # explore; the last line is one JSON object
    python scripts/simulate.py --seed 1234                # replay one seed: its scenario, every step, the failure
    python scripts/simulate.py --seed 1234 --tail 200     # ... only the last 200 steps

The summary counts the violations by kind, with the first seed of each, and sorts them into the
windows issue 30 names. Exit status: 0 when no seed broke a promise, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts")]  # the phi of this checkout, and the explorer

from simulation.explore import Outcome, quiet_logs, run_seed  # noqa: E402

# The windows issue 30 lists, and the violations that are each (kind, and words of the message).
WINDOWS: dict[str, tuple[tuple[str, str], ...]] = {
    "side effect after abort": (("effect_after_cancel", ""),),
    "hang by another road (workers counted busy)": (("pool_busy", ""),),
    "completed run reported as a timeout": (("completed_reported_timeout", ""), ("timeout_bound:completed", "")),
    "run(timeout=) does not bound start-up": (("timeout_bound:startup", ""),),
    "timeouts queue behind slow cancellation callbacks": (("timeout_late", ""),),
    "reset() from an AgentEnd subscriber stalls": (("reset_stalled", "subscriber:AgentEnd"),),
}


def window_of(kind: str | None, message: str) -> str | None:
    for window, signs in WINDOWS.items():
        if any(kind == k and words in message for k, words in signs):
            return window
    return None


def run_chunk(seeds: list[int]) -> list[Outcome]:
    quiet_logs()
    outcomes = []
    for seed in seeds:
        outcome = run_seed(seed)
        outcome.report = outcome.scenario = ""  # the parent needs the verdict; a replay shows the rest
        outcomes.append(outcome)
    return outcomes


def explore(start: int, count: int, jobs: int) -> dict[str, Any]:
    began = time.perf_counter()
    seeds = list(range(start, start + count))
    chunk = max(1, min(200, count // (jobs * 8) or 1))
    chunks = [seeds[i:i + chunk] for i in range(0, len(seeds), chunk)]
    kinds: Counter[str] = Counter()
    first: dict[str, Outcome] = {}
    windows: dict[str, dict[str, Any]] = {}
    done = steps = 0
    slowest = (0.0, start)
    if jobs > 1:
        pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"))
        results = pool.map(run_chunk, chunks)
    else:
        pool = None
        results = map(run_chunk, chunks)
    try:
        for outcomes in results:
            for outcome in outcomes:
                done += 1
                steps += outcome.steps
                slowest = max(slowest, (outcome.real_s, outcome.seed))
                if outcome.kind is None:
                    continue
                kinds[outcome.kind] += 1
                if outcome.kind not in first:
                    first[outcome.kind] = outcome
                    print(f"seed {outcome.seed}: {outcome.kind}: {outcome.message}", file=sys.stderr, flush=True)
                window = window_of(outcome.kind, outcome.message)
                if window is not None:
                    entry = windows.setdefault(window, {"count": 0, "first_seed": outcome.seed})
                    entry["count"] += 1
            print(f"{done}/{count} seeds, {sum(kinds.values())} violations, {time.perf_counter() - began:.0f}s",
                  file=sys.stderr, flush=True)
    finally:
        if pool is not None:
            pool.shutdown()
    return {
        "seeds": count, "start": start, "violations": sum(kinds.values()),
        "kinds": {k: {"count": n, "first_seed": first[k].seed} for k, n in kinds.most_common()},
        "windows": {w: windows.get(w, {"count": 0, "first_seed": None}) for w in WINDOWS},
        "steps": steps, "slowest_seed": {"seed": slowest[1], "seconds": round(slowest[0], 3)},
        "seconds": round(time.perf_counter() - began, 1), "jobs": jobs,
    }


def replay(seed: int, tail: int | None) -> int:
    quiet_logs()
    outcome = run_seed(seed, trace=True)
    print(outcome.scenario)
    lines = outcome.report.splitlines()
    trace_end = lines.index("") if "" in lines else len(lines)
    trace, rest = lines[:trace_end], lines[trace_end:]
    if tail is not None:
        trace = trace[-tail:]
    print("\n".join(trace))
    print("\n".join(rest))
    verdict = "every check held" if outcome.kind is None else f"{outcome.kind}: {outcome.message}"
    print(f"\nseed {seed}: {verdict} ({outcome.steps} steps, {outcome.virtual_s:.3f}s virtual, "
          f"{outcome.real_s:.2f}s real)")
    return 0 if outcome.kind is None else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1000, help="how many seeds to explore")
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument("--seed", type=int, help="replay this seed with its full trace")
    parser.add_argument("--tail", type=int, help="with --seed: only the last N steps of the trace")
    args = parser.parse_args(argv)
    if args.seed is not None:
        return replay(args.seed, args.tail)
    summary = explore(args.start, args.seeds, max(1, args.jobs))
    print(json.dumps(summary))
    return 1 if summary["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
