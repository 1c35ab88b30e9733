#!/usr/bin/env python3
"""Run the second-actor harness (issue 31; ``scripts/second_actors``): writer processes resuming one
stored session at the same moment, some killed with SIGKILL at random moments or right after a store
write, and the invariants checked from the store afterwards.

    python scripts/second_actor.py --trials 2000        # many trials; the last line is one JSON object
    python scripts/second_actor.py --trial 17           # replay one trial, saying what it drew

Exit status: 0 when no trial broke an invariant, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts")]  # the phi of this checkout, and the harness

from second_actors import Trial, run_trial  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="number of the first trial")
    parser.add_argument("--trial", type=int, help="replay this one trial")
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # writers killed mid-save log nothing useful here
    numbers = [args.trial] if args.trial is not None else range(args.first, args.first + args.trials)
    started, failed, acked, killed = time.monotonic(), [], 0, 0
    for number in numbers:
        with tempfile.TemporaryDirectory(prefix="phi-second-actor-") as where:
            outcome = run_trial(number, Path(where))
        acked += outcome.acked
        killed += outcome.killed
        if args.trial is not None:
            print(f"trial {number}: {Trial.of(number)}")
        if outcome.violations:
            failed.append(number)
            print(f"trial {number} broke an invariant:", *outcome.violations, sep="\n  ")
    figures = {"trials": len(numbers), "failed": len(failed), "first_failed": failed[:5], "acknowledged_turns": acked,
               "killed_writers": killed, "seconds": round(time.monotonic() - started, 1)}
    print(json.dumps(figures))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
