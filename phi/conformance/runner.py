"""The conformance runner (SPEC §10): start a driver per fixture, compare, report.

For each fixture the runner starts the driver command, writes the fixture on its stdin, closes
stdin and reads JSON lines from stdout until the driver exits or the fixture's time limit passes.
The lines are then read and compared with the fixture (:mod:`.compare`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .compare import DriverOutput, compare, parse_output

DEFAULT_TIMEOUT_MS = 10_000
# this package's own name, so that a vendored copy runs its own driver
REFERENCE_DRIVER = f"{shlex.quote(sys.executable)} -m {__package__}.driver"


@dataclass
class Outcome:
    fixture_id: str
    status: str  # "pass" | "fail" | "timeout" | "unsupported"
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stderr: str = ""


def load_fixtures(directory: Path, pattern: str | None = None) -> list[dict[str, Any]]:
    """Every ``*.json`` under ``directory`` (sorted by path), optionally filtered by a glob on the
    fixture id or file name."""
    fixtures = []
    for path in sorted(directory.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.setdefault("id", path.stem)
        if pattern and not (fnmatch.fnmatch(data["id"], pattern) or fnmatch.fnmatch(path.name, pattern)):
            continue
        data["_path"] = str(path)
        fixtures.append(data)
    return fixtures


TIMED_OUT = "driver did not finish within"


def run_driver(command: str, fixture: dict[str, Any], timeout_s: float) -> tuple[list[str], str, str | None]:
    """Run the driver on one fixture; returns (stdout lines, stderr, failure or None)."""
    payload = json.dumps({k: v for k, v in fixture.items() if not k.startswith("_")})
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, encoding="utf-8", env=env)
    try:
        out, err = proc.communicate(payload, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return out.splitlines(), err, f"{TIMED_OUT} {timeout_s:g}s"
    failure = None if proc.returncode == 0 else f"driver exited with status {proc.returncode}"
    return out.splitlines(), err, failure


def run_one(command: str, fixture: dict[str, Any], timeout_ms: int | None = None) -> Outcome:
    started = time.monotonic()
    limit = (timeout_ms or fixture.get("timeout_ms") or DEFAULT_TIMEOUT_MS) / 1000.0
    lines, stderr, failure = run_driver(command, fixture, limit)
    output = parse_output(fixture, lines)
    elapsed = time.monotonic() - started
    if output.unsupported is not None:
        return Outcome(fixture["id"], "unsupported", [output.unsupported], elapsed, stderr)
    problems = ([failure] if failure else []) + compare(fixture, output)
    if failure is not None and failure.startswith(TIMED_OUT):
        return Outcome(fixture["id"], "timeout", problems, elapsed, stderr)
    return Outcome(fixture["id"], "fail" if problems else "pass", problems, elapsed, stderr)


def run_all(command: str, fixtures: list[dict[str, Any]], jobs: int = 4, timeout_ms: int | None = None,
            progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run every fixture (``jobs`` drivers at a time); outcomes come back in fixture order."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_one, command, f, timeout_ms) for f in fixtures]
        outcomes = []
        for future in futures:
            outcome = future.result()
            if progress is not None:
                progress(outcome)
            outcomes.append(outcome)
    return outcomes


def format_outcome(outcome: Outcome, verbose: bool = False) -> str:
    head = {"pass": "PASS", "fail": "FAIL", "timeout": "TIMEOUT", "unsupported": "UNSUPPORTED"}[outcome.status]
    text = f"{head:<11} {outcome.fixture_id}  ({outcome.seconds:.2f}s)"
    if outcome.status == "unsupported":
        return f"{text}  {outcome.problems[0]}"
    if outcome.status in ("fail", "timeout") or verbose:
        details = [f"    {p}" for p in outcome.problems[:40]]
        if outcome.status in ("fail", "timeout") and outcome.stderr.strip():
            tail = outcome.stderr.strip().splitlines()[-6:]
            details += ["    driver stderr:"] + [f"      {line}" for line in tail]
        text = "\n".join([text, *details])
    return text


__all__ = ["DEFAULT_TIMEOUT_MS", "REFERENCE_DRIVER", "TIMED_OUT", "DriverOutput", "Outcome", "compare",
           "format_outcome", "load_fixtures", "parse_output", "run_all", "run_driver", "run_one"]
