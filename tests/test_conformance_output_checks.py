"""The conformance runner checks every line a driver writes (issue 32; SPEC §10, suite README §2):
against ``$defs/line`` of the shipped event schema and the SPEC §3 rules a schema cannot state. A
malformed line fails its fixture, named by line number, event type, JSON path and reason;
``--lenient-events`` turns it into a warning and judges the fixture on its expectations only."""

from __future__ import annotations

import functools
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from phi.conformance import suite_files
from phi.conformance.jsoncheck import SchemaError, compile_schema
from phi.conformance.lines import check_lines
from phi.conformance.runner import load_fixtures, run_all

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = next(f for f in load_fixtures() if f["id"] == "tool-single-call")
SCHEMA = json.loads((suite_files() / "schema" / "event.schema.json").read_text(encoding="utf-8"))

# Each way of spoiling the reference driver's output of tool-single-call: a Python function body
# over `lines` (the output as parsed JSON), returning the lines to write (a str is written as is).
SPOILERS = {
    "no timestamps": """
        for line in lines:
            if line["kind"] == "event":
                line["event"].pop("timestamp", None)
        return lines""",
    "unknown field": """
        first(lines, "TurnStart")["event"]["mood"] = "cheerful"
        return lines""",
    "no child_loop_id": """
        del first(lines, "ToolExecutionEnd")["event"]["child_loop_id"]
        return lines""",
    "assistant without model and provider": """
        def strip(value):  # everywhere, so that the messages still agree (EVT-4)
            if isinstance(value, dict):
                if value.get("role") == "assistant":
                    value.pop("model"), value.pop("provider")
                for item in value.values():
                    strip(item)
            elif isinstance(value, list):
                for item in value:
                    strip(item)
        strip(lines)
        return lines""",
    "not JSON": """
        return lines[:2] + ["this is no JSON"] + lines[2:]""",
    "not an object": """
        return lines[:2] + ["[1, 2]"] + lines[2:]""",
}


@functools.lru_cache(maxsize=1)
def _reference_text() -> str:
    from phi.conformance.driver import run_fixture
    from phi.loop.identity import reset_loop_numbers

    reset_loop_numbers()
    sink = io.StringIO()
    run_fixture({k: v for k, v in FIXTURE.items() if not k.startswith("_")}, sink)
    return sink.getvalue()


def reference_output() -> list[dict[str, Any]]:
    """What the reference driver writes for the fixture (parsed afresh on every call)."""
    return [json.loads(line) for line in _reference_text().splitlines()]


def line_of(event_type: str, role: str | None = None) -> int:
    """The line number (from 1) of the first event of that type in the reference output."""
    for number, line in enumerate(reference_output(), 1):
        event = line.get("event", {})
        if line["kind"] == "event" and event["type"] == event_type and (role is None or event["message"]["role"] == role):
            return number
    raise AssertionError(f"no {event_type} in the reference output")


def expected(case: str) -> list[str]:
    """The problems each spoiled output must be refused with (the first ones, in line order)."""
    if case == "no timestamps":
        return [f"line {line_of('AgentStart')} (AgentStart): /event/timestamp: required property missing",
                f"line {line_of('TurnStart')} (TurnStart): /event/timestamp: required property missing"]
    if case == "unknown field":
        return [f"line {line_of('TurnStart')} (TurnStart): /event/mood: unknown property (not in the schema)"]
    if case == "no child_loop_id":
        return [f"line {line_of('ToolExecutionEnd')} (ToolExecutionEnd): /event/child_loop_id: "
                "required property missing"]
    if case == "assistant without model and provider":
        number = line_of("MessageStart", role="assistant")
        return [f"line {number} (MessageStart): /event/message/model: required property missing",
                f"line {number} (MessageStart): /event/message/provider: required property missing"]
    if case == "not JSON":
        return ["line 3: not JSON (Expecting value: line 1 column 1 (char 0)): \"this is no JSON\""]
    return ["line 3: not a JSON object: [1, 2]"]


def spoiling_driver(tmp_path: Path, case: str) -> str:
    """A driver command: the reference driver's output for the fixture, spoiled as ``case`` says."""
    script = tmp_path / "spoiling_driver.py"
    body = textwrap.indent(textwrap.dedent(SPOILERS[case]).strip(), "    ")
    script.write_text(textwrap.dedent('''
        import io, json, sys
        from phi.conformance.driver import run_fixture

        def first(lines, event_type, role=None):
            return next(line for line in lines if line["kind"] == "event" and line["event"]["type"] == event_type
                        and (role is None or line["event"]["message"]["role"] == role))

        def spoil(lines):
        ''') + body + textwrap.dedent('''

        sink = io.StringIO()
        run_fixture(json.load(sys.stdin), sink)
        for line in spoil([json.loads(text) for text in sink.getvalue().splitlines()]):
            print(line if isinstance(line, str) else json.dumps(line))
        '''), encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


@pytest.fixture(autouse=True)
def phi_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


@pytest.mark.parametrize("case", list(SPOILERS))
def test_a_malformed_line_fails_its_fixture_and_is_a_warning_when_lenient(case: str, tmp_path: Path) -> None:
    command = spoiling_driver(tmp_path, case)
    strict = run_all(command, [FIXTURE], jobs=1, mode="per-fixture")[0]
    assert strict.status == "fail"
    assert strict.problems[:len(expected(case))] == expected(case)
    assert not strict.warnings
    lenient = run_all(command, [FIXTURE], jobs=1, mode="per-fixture", lenient_events=True)[0]
    if case in ("not JSON", "not an object"):  # the protocol itself, which lenient does not relax
        assert (lenient.status, lenient.problems, lenient.warnings) == ("fail", expected(case), [])
        return
    assert (lenient.status, lenient.problems) == ("pass", [])
    assert lenient.warnings[:len(expected(case))] == expected(case)


def test_the_command_line_names_fixture_line_type_and_path_and_relaxes_with_a_flag(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    shutil.copy(FIXTURE["_path"], fixtures / "tool-single-call.json")
    command = spoiling_driver(tmp_path, "assistant without model and provider")
    base = [sys.executable, "-m", "phi.conformance", "run", "--fixtures", str(fixtures), "--driver", command,
            "--mode", "per-fixture"]
    strict = subprocess.run(base, capture_output=True, text=True, timeout=120)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    head, first_problem = strict.stdout.splitlines()[:2]
    assert head.startswith("FAIL        tool-single-call")
    assert first_problem.strip() == expected("assistant without model and provider")[0]
    lenient = subprocess.run(base + ["--lenient-events"], capture_output=True, text=True, timeout=120)
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert lenient.stdout.splitlines()[0].startswith("PASS        tool-single-call")
    assert f"warning: {expected('assistant without model and provider')[0]}" in lenient.stdout
    assert "1 with malformed output lines (warnings: --lenient-events)" in lenient.stdout
    help_text = subprocess.run([sys.executable, "-m", "phi.conformance", "run", "--help"], capture_output=True,
                               text=True, timeout=60).stdout
    assert "--lenient-events" in help_text


def test_an_unsupported_line_must_be_well_formed_too() -> None:
    from phi.conformance.process import RawRun
    from phi.conformance.runner import judge

    raw = RawRun(['{"kind": "unsupported", "reason": "no sub-agents", "since": 2}'])
    strict = judge(FIXTURE, raw, 0.0)
    assert strict.status == "fail"
    assert strict.problems[0] == "line 1 (unsupported): /since: unknown property (not in the schema)"
    lenient = judge(FIXTURE, raw, 0.0, lenient_events=True)
    assert (lenient.status, lenient.problems) == ("unsupported", ["no sub-agents"])


# --------------------------------------------------------------------------- rules a schema cannot state


def event_line(event: dict[str, Any]) -> str:
    return json.dumps({"kind": "event", "event": event})


def test_tool_execution_end_repeats_the_results_child_loop_id() -> None:
    end = next(line["event"] for line in reference_output() if line.get("event", {}).get("type") == "ToolExecutionEnd")
    assert check_lines([event_line(end)]).problems == []
    spoiled = {**end, "child_loop_id": "sess-1.sub.1"}
    assert [str(p) for p in check_lines([event_line(spoiled)]).problems] == [
        "line 1 (ToolExecutionEnd): /event/child_loop_id: expected null, the result's child_loop_id "
        "(ToolExecutionEnd repeats it, SPEC TOOL-12), got \"sess-1.sub.1\""]


def test_a_message_update_names_a_block_of_its_snapshot() -> None:
    update = next(line["event"] for line in reference_output() if line.get("event", {}).get("type") == "MessageUpdate")
    assert check_lines([event_line(update)]).problems == []
    spoiled = {**update, "delta": {**update["delta"], "index": 5}}
    [problem] = check_lines([event_line(spoiled)]).problems
    assert (problem.line, problem.label, problem.where) == (1, "MessageUpdate", "/event/delta/index")


def test_a_child_event_is_checked_like_an_event() -> None:
    start = next(line["event"] for line in reference_output() if line.get("event", {}).get("type") == "AgentStart")
    line = json.dumps({"kind": "child_event", "tool": "helper", "event": {**start, "timestamp": "yesterday"}})
    [problem] = check_lines([line]).problems
    assert (problem.label, problem.where) == ("child_event AgentStart", "/event/timestamp")
    assert problem.reason.startswith('"yesterday" does not match ')


# --------------------------------------------------------------------------- the schema and its compiled check


def test_the_event_schema_is_a_valid_2020_12_schema_and_its_lines_name_every_kind() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    kinds = {SCHEMA["$defs"][ref["$ref"].rsplit("/", 1)[-1]]["properties"]["kind"]["const"]
             for ref in SCHEMA["$defs"]["line"]["oneOf"]}
    readme = (suite_files() / "README.md").read_text(encoding="utf-8")
    assert kinds == {"event", "hook", "provider_request", "tool_executed", "child_event", "child_provider_request",
                     "queues", "context", "result", "error", "unsupported", "hello", "done"}
    assert all(f'{{"kind": "{kind}"' in readme for kind in kinds)


def jsonschema_valid(value: Any, pointer: str) -> bool:
    import jsonschema

    referencing = pytest.importorskip("referencing", reason="jsonschema before 4.18 has no registry")
    Registry, Resource = referencing.Registry, referencing.Resource

    registry = Registry().with_resource(SCHEMA["$id"], Resource.from_contents(SCHEMA))
    return jsonschema.Draft202012Validator({"$ref": SCHEMA["$id"] + "#" + pointer}, registry=registry).is_valid(value)


def spoiled_lines() -> list[Any]:
    out = reference_output()
    event = out[0]["event"]
    message = next(line["event"]["message"] for line in out if line.get("event", {}).get("type") == "MessageEnd")
    return [
        {"kind": "event", "event": {**event, "timestamp": "2026-01-01T00:00:00+01:00"}},
        {"kind": "event", "event": {**event, "continuation_kind": {"Rerun": {"tag": 3}}}},
        {"kind": "event", "event": {**event, "type": "AgentStarted"}},
        {"kind": "event", "event": {"type": "MessageEnd", "loop_id": "l", "message": {**message, "timestamp": True}}},
        {"kind": "event", "event": {"type": "MessageEnd", "loop_id": "l", "message": {**message, "role": "robot"}}},
        {"kind": "result", "messages": [message], "extra": 1},
        {"kind": "provider_request", "index": -1, "request": {}},
        {"kind": "hook", "name": "before_turn"},
        {"kind": "telemetry"},
        {"event": event},
        {"kind": "context", "messages": [{**message, "content": [{"type": "text", "text": 1}]}]},
    ]


def test_the_compiled_check_agrees_with_jsonschema() -> None:
    check = compile_schema(SCHEMA, "/$defs/line")
    for line in reference_output():
        assert check(line) == [] and jsonschema_valid(line, "/$defs/line"), line
    for line in spoiled_lines():
        assert check(line) and not jsonschema_valid(line, "/$defs/line"), line
    event = reference_output()[0]["event"]
    assert compile_schema(SCHEMA)({**event, "timestamp": "2026-01-01T00:00:00.5+00:00"}) == []
    # a pattern's closing $ is the end of the text (ECMA-262), not "before a final newline" as in Python's re
    assert compile_schema(SCHEMA)({**event, "timestamp": "2026-01-01T00:00:00Z\n"}) != []


def test_the_compiled_check_refuses_keywords_it_does_not_know() -> None:
    with pytest.raises(SchemaError, match="uniqueItems"):
        compile_schema({"type": "array", "uniqueItems": True})
    with pytest.raises(SchemaError, match="leaves the document"):
        compile_schema({"$ref": "other.json#/x"})


# --------------------------------------------------------------------------- node-pi


def pi_cache() -> Path | None:
    for candidate in (os.environ.get("PI_CACHE"), str(Path.home() / ".cache" / "phi-conformance" / "node-pi")):
        if candidate and (Path(candidate) / "node_modules" / "@mariozechner" / "pi-agent-core").is_dir():
            return Path(candidate)
    return None


def test_node_pi_writes_only_well_formed_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = pi_cache()
    if shutil.which("node") is None or cache is None:
        pytest.skip("node-pi needs node and @mariozechner/pi-agent-core (conformance/drivers/node-pi/install.sh; "
                    "PI_CACHE names its directory)")
    monkeypatch.setenv("PI_CACHE", str(cache))
    command = f"node {shlex.quote(str(ROOT / 'conformance' / 'drivers' / 'node-pi' / 'driver.mjs'))}"
    outcomes = run_all(command, load_fixtures(), jobs=2)
    # pi's own deviations may show as malformed lines (arguments streamed as a JSON array stay an
    # array in pi's partial message); each must be a difference REPORT.md explains
    explained = json.loads((ROOT / "conformance" / "drivers" / "node-pi" / "differences.json").read_text())["differences"]
    malformed = [f"{o.fixture_id}: {p}" for o in outcomes for p in o.problems
                 if p.startswith("line ") and o.fixture_id not in explained]
    assert malformed == []
    assert sum(o.status == "pass" for o in outcomes) >= 40
