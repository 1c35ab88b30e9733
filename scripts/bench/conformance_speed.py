#!/usr/bin/env python3
"""Wall time of the whole conformance suite (SPEC §10) with the reference driver, per driver mode.

Runs every fixture through the runner (``phi.conformance.runner.run_all``, as ``phi-conformance
run`` does) four ways: a persistent driver per job (protocol 2) and a process per fixture
(protocol 1), each with one job and with the default number of jobs. A mode is repeated
``--repeat`` times and the median kept; the outcome counts are printed so a speed-up that came
from fixtures not running would show. ``--driver`` measures another driver instead (e.g.
``node conformance/drivers/node-pi/driver.mjs``); ``--quick`` skips the slow one-job,
process-per-fixture run.

Prints the figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))  # for the driver

from phi.conformance.runner import DEFAULT_JOBS, REFERENCE_DRIVER, load_fixtures, run_all  # noqa: E402


def timed(command: str, fixtures: list[dict], mode: str, jobs: int) -> tuple[float, dict[str, int]]:
    started = time.perf_counter()
    outcomes = run_all(command, fixtures, jobs=jobs, mode=mode)
    seconds = time.perf_counter() - started
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    return seconds, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", default=REFERENCE_DRIVER)
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode (median kept; default 3)")
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help=f"the 'default' job count ({DEFAULT_JOBS})")
    parser.add_argument("--quick", action="store_true", help="leave out per-fixture with 1 job (the slowest)")
    args = parser.parse_args()
    fixtures = load_fixtures()
    runs = [("persistent", args.jobs), ("persistent", 1), ("per-fixture", args.jobs)]
    if not args.quick:
        runs.append(("per-fixture", 1))
    figures: dict[str, float] = {}
    print(f"{len(fixtures)} fixtures, driver: {args.driver}, {os.cpu_count()} cores, median of {args.repeat}")
    for mode, jobs in runs:
        samples = [timed(args.driver, fixtures, mode, jobs) for _ in range(max(1, args.repeat))]
        median = statistics.median(s[0] for s in samples)
        counts = ", ".join(f"{n} {status}" for status, n in sorted(samples[-1][1].items()))
        print(f"{mode:<12} jobs={jobs}: {median:6.2f} s  ({counts})")
        figures[f"{mode.replace('-', '_')}_jobs{jobs}_s"] = round(median, 2)
    base, fast = figures.get("per_fixture_jobs1_s"), figures[f"persistent_jobs{args.jobs}_s"]
    per_default = figures[f"per_fixture_jobs{args.jobs}_s"]
    print(f"persistent vs per-fixture at {args.jobs} jobs: {per_default / fast:.1f}x faster"
          + (f"; vs per-fixture at 1 job: {base / fast:.1f}x" if base else ""))
    print(json.dumps({"fixtures": len(fixtures), "cores": os.cpu_count(), "default_jobs": args.jobs, **figures,
                      "speedup_at_default_jobs": round(per_default / fast, 1)}))


if __name__ == "__main__":
    main()
