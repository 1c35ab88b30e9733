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


# --------------------------------------------------------------------------- findings 7 and 9: what JSON forgives


def test_load_json_names_every_repeated_key_and_refuses_nan() -> None:
    value, repeated = load_json('{"a": 1, "b": {"c": [{"x": 1, "x": 2}]}, "a": 3}')
    assert value == {"a": 3, "b": {"c": [{"x": 2}]}}
    assert repeated == [([], "a"), (["b", "c", 0], "x")]
    for text in ("[NaN]", '{"a": Infinity}', "[-Infinity]"):
        with pytest.raises(ValueError, match="is not JSON"):
            load_json(text)


def test_a_driver_line_with_a_repeated_key_is_refused() -> None:
    line = '{"kind": "hook", "name": "before_turn", "args": [{"n": 1, "n": 2}], "name": "after_turn"}'
    checked = check_lines([line])
    assert checked.items == []
    assert [str(p) for p in checked.problems] == [
        "line 1 (hook): /name: this key appears more than once in its object",
        "line 1 (hook): /args/0/n: this key appears more than once in its object"]


def fixture_problems(tmp_path: Path, name: str, text: str) -> list[str]:
    from phi.conformance.validation import load_checked

    (tmp_path / f"{name}.json").write_text(text, encoding="utf-8")
    fixtures, problems = load_checked(tmp_path)
    assert not fixtures
    return [f"{p.where}: {p.reason}" for p in problems]


def spoiled(change: Any) -> dict[str, Any]:
    fixture = json.loads(json.dumps({k: v for k, v in FIXTURE.items() if k != "_path"}))
    change(fixture)
    return fixture


def test_a_fixture_with_a_repeated_key_is_invalid(tmp_path: Path) -> None:
    text = json.dumps({k: v for k, v in FIXTURE.items() if k != "_path"})
    assert text.endswith("}}")
    text = text[:-1] + ', "expect": {}}'  # a second expect would silently check nothing
    assert fixture_problems(tmp_path, "tool-single-call", text) == [
        "$.expect: key 'expect' appears more than once in this object"]


@pytest.mark.parametrize("name, change, expected", [
    ("nan", lambda f: f["provider"]["responses"][0].update(usage={"input": float("nan")}),
     "$: not a JSON file: NaN is not JSON"),
    ("event-type", lambda f: f["expect"]["events"][2].update(type="TurnStrat"),
     "$.expect.events[2].type: 'TurnStrat' is not an event type of schema/event.schema.json"),
    ("grouped-event-type", lambda f: f["expect"].update(events=[{"unordered": [{"type": "ToolExecutionEnd"},
                                                                               {"type": "Nope"}]}]),
     "$.expect.events[0].unordered[1].type: 'Nope' is not an event type of schema/event.schema.json"),
    ("wait-for", lambda f: f["tools"][0].update(default=[{"wait_for_event": {"type": "TurnStrat"}}]),
     "$.tools[0].default[0].wait_for_event.type: 'TurnStrat' is not an event type of schema/event.schema.json"),
    ("step-typo", lambda f: f["tools"][0].update(calls={"t1": [{"reslut": "ok"}]}),
     "$.tools[0].calls.t1[0]: Additional properties are not allowed ('reslut' was unexpected)"),
])
def test_fixture_gaps_are_refused(tmp_path: Path, name: str, change: Any, expected: str) -> None:
    assert fixture_problems(tmp_path, "tool-single-call", json.dumps(spoiled(change))) == [expected]


def test_a_fixture_id_must_be_its_file_name(tmp_path: Path) -> None:
    text = json.dumps({k: v for k, v in FIXTURE.items() if k != "_path"})
    assert fixture_problems(tmp_path, "renamed", text) == [
        "$.id: 'tool-single-call' is not the file name without .json ('renamed')"]


def test_a_fixture_nested_too_deep_is_invalid(tmp_path: Path) -> None:
    deep = spoiled(lambda f: f.update(notes=[]))
    text = json.dumps(deep).replace('"notes": []', '"notes": ' + "[" * 100 + "]" * 100)
    assert fixture_problems(tmp_path, "tool-single-call", text) == [
        f"$: arrays and objects nested more than {MAX_DEPTH} deep"]


# --------------------------------------------------------------------------- finding 8: unsupported, unconfigured hooks


def reference_lines(fixture: dict[str, Any]) -> list[str]:
    import io

    from phi.conformance.driver import reset_loop_numbers, run_fixture

    reset_loop_numbers()
    out = io.StringIO()
    run_fixture({k: v for k, v in fixture.items() if k != "_path"}, out)
    return out.getvalue().splitlines()


UNSUPPORTED = '{"kind": "unsupported", "reason": "no tools here"}'


def test_unsupported_must_be_the_only_line() -> None:
    assert judge(FIXTURE, RawRun([UNSUPPORTED]), 0.0).status == "unsupported"
    wrong = [line for line in reference_lines(FIXTURE) if '"ToolExecutionEnd"' not in line]
    for lines in (wrong + [UNSUPPORTED], [UNSUPPORTED] + wrong):
        outcome = judge(FIXTURE, RawRun(lines), 0.0)
        assert outcome.status == "fail"
        assert f"protocol: an 'unsupported' line must be the only line, not one of {len(lines)}" in outcome.problems


def test_a_hook_line_for_a_hook_not_configured_fails() -> None:
    assert "hooks" not in FIXTURE.get("config", {})
    lines = reference_lines(FIXTURE)
    assert judge(FIXTURE, RawRun(lines), 0.0).status == "pass"
    stray = '{"kind": "hook", "name": "before_turn", "args": [1, 0]}'
    outcome = judge(FIXTURE, RawRun([stray] + lines), 0.0)
    assert outcome.status == "fail"
    assert outcome.problems[0].startswith("protocol: a hook line for 'before_turn', which the fixture does not "
                                          "configure")


# --------------------------------------------------------------------------- finding 15: lenient relaxes shape only


def test_lenient_excuses_a_wrong_shape_but_not_a_broken_protocol() -> None:
    lines = reference_lines(FIXTURE)
    shape = ['{"kind": "queues", "steering": [], "follow_up": [], "mood": "cheerful"}'] + lines
    assert judge(FIXTURE, RawRun(shape), 0.0).status == "fail"
    relaxed = judge(FIXTURE, RawRun(shape), 0.0, lenient_events=True)
    assert relaxed.status == "pass" and relaxed.warnings
    for broken in ("no JSON at all", "[1, 2]", nested_hook(MAX_DEPTH + 1),
                   '{"kind": "hook", "kind": "hook", "name": "before_turn", "args": []}'):
        outcome = judge(FIXTURE, RawRun([broken] + lines), 0.0, lenient_events=True)
        assert (outcome.status, outcome.warnings) == ("fail", []), broken
        assert outcome.problems[0].startswith("line 1"), outcome.problems


# --------------------------------------------------------------------------- findings 10 and 16: bytes as written


def test_a_line_that_is_not_utf8_is_refused() -> None:
    line = b'{"kind": "hook", "name": "before_turn", "args": ["caf\xe9"]}'.decode("utf-8", "surrogateescape")
    [problem] = check_lines([line]).problems
    assert str(problem).startswith("line 1: not UTF-8: byte 0xe9 at character 54, in ")
    assert problem.protocol


def bytes_driver(tmp_path: Path, spoil: str) -> str:
    """The reference driver's output for the fixture as bytes, passed through ``spoil`` (an
    expression over ``data``), written raw to stdout."""
    return write_driver(tmp_path, f"""
        import io, json, sys
        from phi.conformance.driver import run_fixture
        sink = io.StringIO()
        run_fixture(json.load(sys.stdin), sink)
        data = sink.getvalue().encode("utf-8")
        sys.stdout.buffer.write({spoil})
        sys.stdout.flush()
    """)


@pytest.fixture
def phi_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    root = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))


@pytest.mark.usefixtures("phi_importable")
def test_driver_bytes_that_are_not_utf8_fail_the_fixture(tmp_path: Path) -> None:
    driver = bytes_driver(tmp_path, 'data.replace(b\'"kind": "result"\', b\'"kind": "result", "x\\xff": 1\', 1)')
    [outcome] = run_all(driver, [FIXTURE], jobs=1, mode="per-fixture")
    assert outcome.status == "fail"
    assert [p for p in outcome.problems if "not UTF-8: byte 0xff" in p], outcome.problems


@pytest.mark.usefixtures("phi_importable")
def test_a_bare_carriage_return_inside_a_line_does_not_split_it(tmp_path: Path) -> None:
    driver = bytes_driver(tmp_path, 'data.replace(b\'"kind": \', b\'"kind":\\r\')')  # \r is JSON whitespace
    [outcome] = run_all(driver, [FIXTURE], jobs=1, mode="per-fixture")
    assert (outcome.status, outcome.problems) == ("pass", [])
    crlf = bytes_driver(tmp_path, 'data.replace(b"\\n", b"\\r\\n")')  # CRLF line ends are still fine
    [outcome] = run_all(crlf, [FIXTURE], jobs=1, mode="per-fixture")
    assert (outcome.status, outcome.problems) == ("pass", [])


def done_driver(tmp_path: Path, done_id: str) -> str:
    """A protocol 2 driver: the reference output of each fixture, closed by a ``done`` whose id
    is the expression ``done_id`` (over ``fixture``)."""
    return write_driver(tmp_path, f"""
        import io, json, sys
        from phi.conformance.driver import run_fixture
        from phi.loop.identity import reset_loop_numbers
        print(json.dumps({{"kind": "hello", "protocol": 2, "persistent": True}}), flush=True)
        for text in sys.stdin:
            fixture = json.loads(text)
            reset_loop_numbers()
            sink = io.StringIO()
            run_fixture(fixture, sink)
            sys.stdout.write(sink.getvalue())
            print(json.dumps({{"kind": "done", "id": {done_id}}}), flush=True)
    """)


@pytest.mark.usefixtures("phi_importable")
@pytest.mark.parametrize("done_id, first, later", [
    ("None", "protocol: 'done' names fixture None, not 'tool-single-call'",
     "protocol: 'done' without the fixture's id 'basic-text-reply'"),
    ('"someone-else"', "protocol: 'done' names fixture 'someone-else', not 'tool-single-call'",
     "protocol: 'done' names fixture 'someone-else', not 'basic-text-reply'"),
])
def test_a_done_line_must_name_its_fixture(tmp_path: Path, done_id: str, first: str, later: str) -> None:
    """The first fixture (the process that said hello) and the later ones (persistent) alike."""
    other = next(f for f in load_fixtures() if f["id"] == "basic-text-reply")
    outcomes = run_all(done_driver(tmp_path, done_id), [FIXTURE, other], jobs=1)
    assert [o.status for o in outcomes] == ["fail", "fail"]
    assert first in outcomes[0].problems
    assert later in outcomes[1].problems


@pytest.mark.usefixtures("phi_importable")
def test_a_done_line_naming_its_fixture_passes(tmp_path: Path) -> None:
    other = next(f for f in load_fixtures() if f["id"] == "basic-text-reply")
    outcomes = run_all(done_driver(tmp_path, 'fixture["id"]'), [FIXTURE, other], jobs=1)
    assert [(o.status, o.problems) for o in outcomes] == [("pass", []), ("pass", [])]


@pytest.mark.usefixtures("phi_importable")
def test_lines_after_the_last_done_are_not_lost(tmp_path: Path) -> None:
    """A driver that writes once its stdin ends, after the last fixture's done: that fixture fails."""
    driver = done_driver(tmp_path, 'fixture["id"]')
    script = Path(driver.split(" ", 1)[1])
    script.write_text(script.read_text(encoding="utf-8") + 'print(\'{"kind": "result", "messages": []}\')\n',
                      encoding="utf-8")
    other = next(f for f in load_fixtures() if f["id"] == "basic-text-reply")
    outcomes = run_all(driver, [FIXTURE, other], jobs=1)
    # the first went to the process that said hello, whose stdin ends after one fixture
    assert [o.status for o in outcomes] == ["fail", "fail"]
    assert outcomes[1].problems[0].startswith("protocol: 1 line(s) after the 'done' line, e.g. '{\"kind\": \"result\"")


def test_a_lone_surrogate_escape_is_refused_in_lines_and_fixtures(tmp_path: Path) -> None:
    """JSON lets ``"\\ud800"`` through, but no UTF-8 output (a report, the terminal) can hold it."""
    checked = check_lines(['{"kind": "bogus\\ud800"}', '{"kind": "hook", "name": "x", "args": ["\\ud83d\\ude00"]}'])
    assert str(checked.problems[0]) == \
        "line 1: /kind: a \\u escape of half a surrogate pair: not a Unicode character (not UTF-8)"
    assert not [p for p in checked.problems[1:] if "surrogate" in p.reason]  # a whole pair is a character
    text = json.dumps({k: v for k, v in FIXTURE.items() if k != "_path"}).replace('"title": "', '"title": "\\udc00', 1)
    assert fixture_problems(tmp_path, "tool-single-call", text) == [
        "$.title: a \\u escape of half a surrogate pair: not a Unicode character"]
