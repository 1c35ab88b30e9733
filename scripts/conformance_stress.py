#!/usr/bin/env python3
"""The conformance suite (SPEC §10) many times in a row on a loaded machine: does any fixture flake?

Starts ``--busy`` processes that spin (``stress -c N`` style; default 2, one per core of the
project's machines), runs the whole suite ``--runs`` times (default 20) with the reference driver
(or ``--driver``) the way ``phi-conformance run`` does, then stops the spinners. It prints one line
per run, then every fixture that did not pass at least once with how often — "always" when it
never passed (a fixture failing on purpose, not a flake) — and the first problems of each flaky
fixture's first failure, and ends with one JSON line. Exit status 1 when a fixture flaked.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))

from phi.conformance.runner import DEFAULT_JOBS, REFERENCE_DRIVER, Outcome, load_fixtures, run_all  # noqa: E402
from phi.conformance.selection import select  # noqa: E402

SPIN = "import time\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"


def spinners(count: int, limit_s: float) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that keep a core busy, each ending by itself after ``limit_s``."""
    return [subprocess.Popen([sys.executable, "-c", SPIN.format(limit=limit_s)]) for _ in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes (default 2)")
    parser.add_argument("--driver", default=REFERENCE_DRIVER)
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS)
    parser.add_argument("--mode", default="auto", choices=("auto", "persistent", "per-fixture"))
    parser.add_argument("--only", action="append", help="as phi-conformance run --only")
    args = parser.parse_args()
    fixtures = select(load_fixtures(), args.only)
    failures: dict[str, list[Outcome]] = {}
    seconds: list[float] = []
    busy = spinners(args.busy, limit_s=3600)
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            outcomes = run_all(args.driver, fixtures, jobs=args.jobs, mode=args.mode)
            seconds.append(time.monotonic() - started)
            bad = [o for o in outcomes if o.status in ("fail", "timeout")]
            for outcome in bad:
                failures.setdefault(outcome.fixture_id, []).append(outcome)
            unsupported = sum(o.status == "unsupported" for o in outcomes)
            print(f"run {run:2d}/{args.runs}: {len(outcomes) - len(bad) - unsupported} passed, {len(bad)} failed"
                  + (f", {unsupported} unsupported" if unsupported else "") + f" ({seconds[-1]:.1f} s)", flush=True)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    always = sorted(k for k, v in failures.items() if len(v) == args.runs)
    flaky = {k: len(v) for k, v in sorted(failures.items()) if len(v) < args.runs}
    print(f"\n{len(fixtures)} fixtures x {args.runs} runs, {args.busy} busy loop(s), {args.jobs} jobs")
    for fixture_id, found in sorted(failures.items()):
        label = "always" if fixture_id in always else "FLAKY"
        statuses = ", ".join(sorted({o.status for o in found}))
        print(f"  {fixture_id:<48} failed {len(found):2d}/{args.runs}  {label} ({statuses})")
    for fixture_id in flaky:
        first = failures[fixture_id][0]
        print(f"\nfirst failure of {fixture_id}:")
        print("\n".join(f"    {p[:200]}" for p in first.problems[:12]))
        if first.stderr.strip():
            print("\n".join(f"    stderr: {line[:200]}" for line in first.stderr.strip().splitlines()[-6:]))
    if not failures:
        print("  every fixture passed every run")
    print(json.dumps({"runs": args.runs, "busy": args.busy, "jobs": args.jobs, "fixtures": len(fixtures),
                      "run_s_median": round(statistics.median(seconds), 2), "run_s_max": round(max(seconds), 2),
                      "always_failed": always, "flaky": flaky}))
    return 1 if flaky else 0


if __name__ == "__main__":
    sys.exit(main())
