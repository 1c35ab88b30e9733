"""Hardening of how the conformance runner reads fixtures and driver lines (issue 32, attack
findings 1, 7-10, 15, 16; SPEC §10, suite README §2): every fixture keeps its outcome whatever a
driver writes, and what JSON silently forgives (repeated keys, NaN, bytes that are not UTF-8) is
refused by name."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from phi.conformance import runner
from phi.conformance.jsoncheck import MAX_DEPTH, load_json, too_deep
from phi.conformance.lines import check_lines
from phi.conformance.process import RawRun
from phi.conformance.runner import judge, load_fixtures, run_all

FIXTURE = next(f for f in load_fixtures() if f["id"] == "tool-single-call")


def nested_hook(depth: int) -> str:
    """A schema-valid hook line whose free-form args nest ``depth`` levels deep in all."""
    inner = depth - 2  # the line object and its args list are two levels
    return '{"kind": "hook", "name": "before_turn", "args": [%s]}' % ("[" * inner + "]" * inner)


def write_driver(tmp_path: Path, body: str) -> str:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return f"{sys.executable} {script}"


# --------------------------------------------------------------------------- finding 1: nesting, lost outcomes


def test_depth_is_measured_without_recursion() -> None:
    assert not too_deep("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert too_deep("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert not too_deep(json.dumps({"text": "[" * 500}))  # brackets inside strings do not nest
    assert too_deep(json.dumps({"text": '\\"['}) + "[" * 100_000)


def test_a_line_nested_deeper_than_the_bound_is_a_line_problem() -> None:
    assert check_lines([nested_hook(MAX_DEPTH)]).problems == []
    checked = check_lines([nested_hook(MAX_DEPTH + 1), nested_hook(600)])
    assert checked.items == []
    assert [str(p).split(" (README")[0] for p in checked.problems] == [
        f"line {n}: nested more than {MAX_DEPTH} deep" for n in (1, 2)]


def test_an_error_while_judging_fails_that_fixture_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(runner, "sort_output", broken)
    outcome = judge(FIXTURE, RawRun(['{"kind": "result", "messages": []}']), 0.5)
    assert (outcome.fixture_id, outcome.status) == ("tool-single-call", "fail")
    assert outcome.problems == ["runner: judging this fixture's output raised RecursionError: "
                                "maximum recursion depth exceeded"]


def test_a_deep_line_of_the_last_fixture_still_fails_it(tmp_path: Path) -> None:
    """The attack: the last fixture a worker handled lost its outcome and the run passed."""
    driver = write_driver(tmp_path, f"""
        import sys
        sys.stdin.read()
        print({nested_hook(600)!r})
        print('{{"kind": "result", "messages": []}}')
    """)
    [outcome] = run_all(driver, [FIXTURE], jobs=1, mode="per-fixture")
    assert outcome.status == "fail"
    assert outcome.problems[0].startswith(f"line 1: nested more than {MAX_DEPTH} deep")
