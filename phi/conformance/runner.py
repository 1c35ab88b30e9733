"""The conformance runner (SPEC §10): start a driver per fixture, compare, report.

For each fixture the runner starts the driver command, writes the fixture on its stdin, closes
stdin and reads JSON lines from stdout until the driver exits or the fixture's time limit passes.
The lines are normalised (:mod:`.normalize`), checked against the loop invariants
(:mod:`.invariants`) and against the fixture's ``expect`` (:mod:`.match`).
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
from typing import Any

from . import invariants
from .match import mismatches, sequence_mismatches
from .normalize import normalize_lines

DEFAULT_TIMEOUT_MS = 10_000
REFERENCE_DRIVER = f"{shlex.quote(sys.executable)} -m {__package__}.driver"


@dataclass
class Outcome:
    fixture_id: str
    status: str  # "pass" | "fail" | "timeout" | "unsupported"
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stderr: str = ""


@dataclass
class DriverOutput:
    events: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    child_events: list[dict[str, Any]] = field(default_factory=list)
    child_requests: list[dict[str, Any]] = field(default_factory=list)
    branch_requests: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    queues: dict[str, Any] | None = None
    context: list[Any] | None = None
    final: dict[str, Any] | None = None
    unsupported: str | None = None
    problems: list[str] = field(default_factory=list)


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


def parse_output(fixture: dict[str, Any], lines: list[str]) -> DriverOutput:
    parsed: list[dict[str, Any]] = []
    output = DriverOutput()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            output.problems.append(f"protocol: stdout line {n} is not JSON: {line[:120]!r}")
            continue
        if not isinstance(item, dict) or "kind" not in item:
            output.problems.append(f"protocol: stdout line {n} has no \"kind\"")
            continue
        parsed.append(item)
    for item in normalize_lines(fixture, parsed):
        kind = item["kind"]
        if output.final is not None and kind != "unsupported":
            output.problems.append(f"protocol: {kind!r} line after the final {output.final['kind']!r} line")
        if kind == "event":
            output.events.append(item.get("event", {}))
        elif kind == "hook":
            output.hooks.append({"name": item.get("name"), "args": item.get("args", []), "at": len(output.events)})
        elif kind == "provider_request" and "branch" in item:
            output.branch_requests.setdefault(int(item["branch"]), []).append(item.get("request", {}))
        elif kind == "provider_request":
            output.requests.append(item.get("request", {}))
        elif kind == "child_event":
            output.child_events.append(item.get("event", {}))
        elif kind == "child_provider_request":
            output.child_requests.append(item.get("request", {}))
        elif kind == "tool_executed":
            output.executed.append(str(item.get("tool_call_id")))
        elif kind == "queues":
            output.queues = {"steering": item.get("steering", []), "follow_up": item.get("follow_up", [])}
        elif kind == "context":
            output.context = item.get("messages")
        elif kind in ("result", "error"):
            output.final = item
        elif kind == "unsupported":
            output.unsupported = str(item.get("reason", "unsupported"))
        else:
            output.problems.append(f"protocol: unknown line kind {kind!r}")
    return output


def compare(fixture: dict[str, Any], output: DriverOutput) -> list[str]:
    """Every way the driver's output differs from the fixture's expectations."""
    expect = fixture.get("expect", {})
    problems = list(output.problems)
    final = output.final
    if "error" in expect:
        if final is None or final["kind"] != "error":
            problems.append(f"expected an error {expect['error']}, got {final['kind'] if final else 'no final line'}")
        else:
            problems += [f"error.{p}" for p in mismatches(expect["error"], final)]
    elif final is None:
        problems.append("protocol: no final result/error line")
    elif final["kind"] == "error":
        problems.append(f"unexpected error: {final.get('error')}: {final.get('message')}")
    parallel = fixture.get("entry") == "agent_loop_parallel"
    events, branches = invariants.split_parallel(output.events) if parallel else (output.events, [])
    if "events" in expect:
        problems += _event_problems(expect["events"], events)
    for i, expected in enumerate(expect.get("branch_events", [])):
        got = branches[i] if i < len(branches) else []
        problems += _event_problems(expected, got, f"branch_events[{i}]")
    for i, expected in enumerate(expect.get("branch_provider_requests", [])):
        problems += sequence_mismatches(expected, output.branch_requests.get(i, []), f"branch_provider_requests[{i}]")
    if "messages" in expect and final is not None and final["kind"] == "result":
        problems += list(mismatches(expect["messages"], final.get("messages"), "messages"))[:8]
    if "provider_requests" in expect:
        problems += sequence_mismatches(expect["provider_requests"], output.requests, "provider_requests")
    if "hooks" in expect:
        problems += sequence_mismatches(expect["hooks"], output.hooks, "hooks")
    if "child_events" in expect:
        problems += _event_problems(expect["child_events"], output.child_events, "child_events")
    if "child_provider_requests" in expect:
        problems += sequence_mismatches(expect["child_provider_requests"], output.child_requests,
                                        "child_provider_requests")
    if "tools_executed" in expect and sorted(expect["tools_executed"]) != sorted(output.executed):
        problems.append(f"tools_executed: expected {sorted(expect['tools_executed'])}, got {sorted(output.executed)}")
    for name, got in (("queues", output.queues), ("context", output.context)):
        if name in expect:
            if got is None:
                problems.append(f"protocol: the fixture checks {name}, but the driver wrote no {name!r} line")
            else:
                problems += list(mismatches(expect[name], got, name))[:8]
    if fixture.get("invariants", True):
        raised = final is not None and final["kind"] == "error"
        result = final.get("messages") if final is not None and final["kind"] == "result" else None
        if parallel:
            problems += invariants.check_parallel(output.events, result, raised=raised, context=output.context,
                                                  selected=final.get("selected_config_index") if final else None)
        else:
            problems += invariants.check(output.events, result, raised=raised, context=output.context)
        for loop_id, events in _by_loop(output.child_events).items():
            problems += [f"child run {loop_id}: {p}" for p in invariants.check(events, None)]
    return problems


def _by_loop(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        runs.setdefault(str(event.get("loop_id")), []).append(event)
    return runs


def _event_problems(expected: list[Any], actual: list[dict[str, Any]], what: str = "events") -> list[str]:
    problems = sequence_mismatches(expected, actual, what)
    if problems:
        want = []
        for item in expected:
            if isinstance(item, dict) and "unordered" in item and set(item) == {"unordered"}:
                want += ["~" + str(e.get("type")) for e in item["unordered"]]
            else:
                want.append(str(item.get("type")) if isinstance(item, dict) else "?")
        got = [str(e.get("type")) for e in actual]
        if [w.lstrip("~") for w in want] != got:
            problems.append("event types (expected | actual):")
            for i in range(max(len(want), len(got))):
                left = want[i] if i < len(want) else ""
                right = got[i] if i < len(got) else ""
                mark = " " if left.lstrip("~") == right else "*"
                problems.append(f"  {mark} {i:3d}  {left:<22} | {right}")
    return problems


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
            progress: Any = None) -> list[Outcome]:
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
