"""The conformance suite (SPEC §10) against the reference driver, plus its coverage table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from phi.conformance import coverage, default_conformance_dir
from phi.conformance.match import mismatches, sequence_mismatches
from phi.conformance.runner import REFERENCE_DRIVER, load_fixtures, run_all

CONFORMANCE = default_conformance_dir()
FIXTURES = load_fixtures(CONFORMANCE / "fixtures")
SPEC = coverage.find_spec(CONFORMANCE)  # the repository's SPEC.md (an installed package has only the suite's copy)


def test_fixtures_follow_the_schema() -> None:
    schema = json.loads((CONFORMANCE / "schema" / "fixture.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for fixture in FIXTURES:
        data = {k: v for k, v in fixture.items() if not k.startswith("_")}
        problems += [f"{fixture['id']}: {e.message}" for e in validator.iter_errors(data)]
        if Path(fixture["_path"]).stem != fixture["id"]:
            problems.append(f"{fixture['id']}: file name differs from id")
    assert not problems, "\n".join(problems[:20])
    assert len(FIXTURES) >= 60


def test_every_fixture_passes_with_the_reference_driver() -> None:
    outcomes = run_all(REFERENCE_DRIVER, FIXTURES, jobs=4)
    failed = [f"{o.fixture_id}: " + "; ".join(o.problems[:5]) for o in outcomes if o.status != "pass"]
    assert not failed, "\n".join(failed)


@pytest.mark.skipif(SPEC is None, reason="SPEC.md not present")
def test_every_tested_requirement_has_a_fixture_and_coverage_is_current() -> None:
    assert SPEC is not None
    text = SPEC.read_text(encoding="utf-8")
    assert coverage.missing(text, FIXTURES) == []
    assert coverage.unknown(text, FIXTURES) == []
    mutants = coverage.load_mutants(CONFORMANCE)
    assert coverage.stale_mutant_killers(mutants, FIXTURES) == [], "rerun scripts/mutants.py"
    committed = (CONFORMANCE / "COVERAGE.md").read_text(encoding="utf-8")
    blind = coverage.load_blind_sets(CONFORMANCE)
    assert committed == coverage.render(text, FIXTURES, mutants, blind), \
        "run: python -m phi.conformance coverage --write"


def test_matching_rules() -> None:
    assert not list(mismatches({"a": 1}, {"a": 1, "b": 2}))
    assert list(mismatches({"a": 1}, {"a": 2}))
    assert list(mismatches([1], [1, 2]))
    assert list(mismatches(True, 1))
    assert not list(mismatches({"x": {"$regex": "^ab"}}, {"x": "abc"}))
    assert not list(mismatches({"x": None}, {}))
    seq = [{"t": 0}, {"unordered": [{"t": 1}, {"t": 2}]}, {"t": 3}]
    assert sequence_mismatches(seq, [{"t": 0}, {"t": 2}, {"t": 1}, {"t": 3}], "s") == []
    assert sequence_mismatches(seq, [{"t": 0}, {"t": 1}, {"t": 3}, {"t": 2}], "s")


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The suite can fail: change one expected text and the fixture must not pass."""
    fixture = json.loads((CONFORMANCE / "fixtures" / "basic-text-reply.json").read_text(encoding="utf-8"))
    fixture["expect"]["messages"][-1]["content"][0]["text"] = "Goodbye"
    fixture["id"] = "broken"
    outcome = run_all(REFERENCE_DRIVER, [fixture], jobs=1)[0]
    assert outcome.status == "fail"
    assert any("Goodbye" in p for p in outcome.problems)


def test_cli_prints_summary_line() -> None:
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "phi.conformance", "run", "--filter", "basic-*"],
                          capture_output=True, text=True, cwd=CONFORMANCE.parent, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "1 passed, 0 failed"


def test_a_driver_that_runs_out_of_time_is_reported_as_timeout() -> None:
    import shlex

    from phi.conformance.runner import format_outcome, run_one

    fixture = json.loads((CONFORMANCE / "fixtures" / "basic-text-reply.json").read_text(encoding="utf-8"))
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(30)'"
    outcome = run_one(sleeper, fixture, timeout_ms=300)
    assert outcome.status == "timeout"
    assert format_outcome(outcome).startswith("TIMEOUT")


def test_a_context_left_with_unanswered_calls_breaks_an_invariant() -> None:
    from phi.conformance import invariants

    call = {"role": "assistant", "stopReason": "toolUse", "content": [{"type": "toolCall", "id": "t1"},
                                                                      {"type": "toolCall", "id": "t2"}]}
    result = {"role": "toolResult", "toolCallId": "t1"}
    assert invariants.check([], None, context=[call, result])
    assert invariants.check([], None, context=[call, result, {"role": "user"}])
    assert not invariants.check([], None, context=[call, result, {"role": "toolResult", "toolCallId": "t2"}])
    failed = {**call, "stopReason": "aborted"}
    assert not invariants.check([], None, context=[failed, {"role": "user"}])


def test_parallel_invariants_catch_misordered_runs() -> None:
    """SPEC EVAL-1: Start first, End last, branches complete, the judge only after every branch."""
    from phi.conformance import invariants

    def run(loop_id: str) -> list[dict]:
        return [{"type": "AgentStart", "loop_id": loop_id},
                {"type": "AgentEnd", "loop_id": loop_id, "messages": []}]

    start = {"type": "ParallelLoopStart", "loop_ids": ["a", "b"]}
    end = {"type": "ParallelLoopEnd", "selected_loop_id": "a"}
    a, b, judge = run("a"), run("b"), run("j")
    assert not invariants.check_parallel([start, a[0], b[0], a[1], b[1], *judge, end], None)
    assert invariants.check_parallel([start, a[0], b[0], a[1], judge[0], b[1], judge[1], end], None)
    assert invariants.check_parallel([start, *a, *b], None)  # no ParallelLoopEnd
    assert invariants.check_parallel([a[0], start, a[1], *b, end], None)  # Start not first
    assert invariants.check_parallel([start, a[0], *b, end], None)  # branch a never ended


def test_the_mutant_sweep_kills_enough_and_explains_every_survivor() -> None:
    """suite/mutants.json (scripts/mutants.py): at least 95 % of the planted violations of SPEC are
    caught, and every survivor says why the protocol cannot observe it."""
    mutants = coverage.load_mutants(CONFORMANCE)
    if mutants is None:
        pytest.skip("no suite/mutants.json")
    entries = mutants["mutants"]
    killed = [e for e in entries if e["killed"]]
    assert len(entries) >= 80
    assert len(killed) >= 0.95 * len(entries), f"{len(killed)} of {len(entries)} killed"
    assert [e["id"] for e in entries if not e["killed"] and not e.get("survives_because")] == []


def test_an_action_bound_to_a_hook_the_fixture_does_not_configure_is_a_fixture_error() -> None:
    import io

    from phi.conformance.driver import run_fixture

    fixture = json.loads((CONFORMANCE / "fixtures" / "basic-text-reply.json").read_text(encoding="utf-8"))
    fixture["actions"] = [{"when": {"hook": "before_turn"}, "do": "abort"}]
    out = io.StringIO()
    run_fixture(fixture, out)
    last = json.loads(out.getvalue().splitlines()[-1])
    assert last["error"] == "FixtureError" and "before_turn" in last["message"]


def test_hook_and_tool_moments_fire_their_actions_where_they_happen() -> None:
    """An abort while before_tool_execution runs, and a steer while a tool executes (README §1.5)."""
    import io

    from phi.conformance.driver import run_fixture

    fixture = json.loads((CONFORMANCE / "fixtures" / "steer-read-once-per-tool-turn.json").read_text(encoding="utf-8"))
    fixture["config"] = {"hooks": {"before_tool_execution": {}}}
    fixture["actions"] = [{"when": {"hook": "before_tool_execution", "where": {"tool_call_id": "t1"}}, "do": "abort"}]
    out = io.StringIO()
    run_fixture(fixture, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert not [line for line in lines if line["kind"] == "tool_executed"]
    assert lines[-1]["kind"] == "result" and lines[-1]["messages"][-1]["content"][0]["text"] == "Tool execution aborted."


def test_a_sub_agent_fixture_without_limits_keeps_the_implementation_defaults() -> None:
    """The reference driver passes a sub-agent's max_turns and max_depth only when the fixture gives them, so
    fixtures that leave them out check SubAgentTool's own defaults (SPEC SUB-1: 10 turns; SUB-4: depth 1)."""
    import io

    from phi.conformance.scripted import Recorder, make_tool
    from phi.subagent import SubAgentTool

    spec = {"name": "helper", "description": "Delegate.", "sub_agent": {"provider": {"responses": []}}}
    tool = make_tool(spec, Recorder(io.StringIO()))
    assert isinstance(tool, SubAgentTool) and (tool.max_turns, tool.max_depth) == (10, 1)
    given = make_tool({**spec, "sub_agent": {"provider": {"responses": []}, "max_turns": 3, "max_depth": 2}},
                      Recorder(io.StringIO()))
    assert isinstance(given, SubAgentTool) and (given.max_turns, given.max_depth) == (3, 2)
