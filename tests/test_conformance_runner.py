"""The conformance runner as a product (SPEC §10): the persistent driver protocol, what happens on
timeouts, crashes and stray output, fixture selection, reports, failure output and exit statuses."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from phi.conformance import drivers, suite_files
from phi.conformance.drivers import DriverSession, Mode
from phi.conformance.process import DriverStartError
from phi.conformance.report import RunInfo, json_report, junit_xml
from phi.conformance.runner import REFERENCE_DRIVER, Outcome, format_outcome, load_fixtures, run_all
from phi.conformance.selection import parse_spec, select

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = load_fixtures()
BY_ID = {f["id"]: f for f in FIXTURES}
PY = shlex.quote(sys.executable)


@pytest.fixture(autouse=True)
def phi_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Driver scripts written by these tests import phi from this checkout."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def basic(fixture_id: str) -> dict[str, Any]:
    """basic-text-reply under another id."""
    return {**{k: v for k, v in BY_ID["basic-text-reply"].items() if k != "_path"}, "id": fixture_id}


def fake_driver(tmp_path: Path, body: str) -> str:
    """A driver command: a Python script that logs its pid to ``starts.log`` and runs ``body``
    (which may use ``serve_with(special)``: protocol 2 with the reference driver, except for
    fixture ids ``special`` handles)."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent('''
        import json, os, sys, time
        from phi.conformance.driver import HELLO, run_fixture as run_alone, serve
        from phi.loop.identity import reset_loop_numbers
        with open(os.path.join(os.path.dirname(__file__), "starts.log"), "a") as log:
            log.write(f"{os.getpid()}\\n")

        def run_fixture(fixture):
            reset_loop_numbers()
            run_alone(fixture)

        def serve_with(special):
            print(json.dumps(HELLO), flush=True)
            for line in sys.stdin:
                fixture = json.loads(line)
                if not special(fixture):
                    run_fixture(fixture)
                print(json.dumps({"kind": "done", "id": fixture["id"]}), flush=True)
        ''') + textwrap.dedent(body), encoding="utf-8")
    return f"{PY} {shlex.quote(str(script))}"


def starts(tmp_path: Path) -> int:
    log = tmp_path / "starts.log"
    return len(log.read_text().split()) if log.exists() else 0


# --------------------------------------------------------------------------- protocol 2


def test_the_reference_driver_runs_persistently_one_process_per_job(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, "serve(sys.stdin, sys.stdout)\n")
    fixtures = [basic(f"b{i}") for i in range(8)]
    mode = Mode()
    outcomes = run_all(command, fixtures, jobs=2, mode=mode)
    assert [o.status for o in outcomes] == ["pass"] * 8
    assert [o.fixture_id for o in outcomes] == [f"b{i}" for i in range(8)]
    assert mode.persistent is True
    assert starts(tmp_path) == 3  # the first fixture's process (stdin closed after it), then one per job


def test_a_driver_that_does_not_announce_gets_a_process_per_fixture(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, "run_fixture(json.load(sys.stdin))\n")
    mode = Mode()
    outcomes = run_all(command, [basic(f"b{i}") for i in range(4)], jobs=2, mode=mode)
    assert [o.status for o in outcomes] == ["pass"] * 4
    assert mode.persistent is False and starts(tmp_path) == 4


def test_per_fixture_mode_does_not_offer_protocol_2(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, "print(json.dumps({'kind': 'unsupported', 'reason': os.environ.get("
                                    "'PHI_CONFORMANCE_PROTOCOL', 'none')}))\n")
    offered = run_all(command, [basic("a")], jobs=1)[0]
    plain = run_all(command, [basic("a")], jobs=1, mode="per-fixture")[0]
    assert (offered.status, offered.problems) == ("unsupported", ["2"])
    assert (plain.status, plain.problems) == ("unsupported", ["none"])


def test_a_timeout_kills_the_persistent_driver_and_the_rest_run_on_a_new_one(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, '''
        def special(fixture):
            if fixture["id"] == "hang":
                time.sleep(60)
            return False
        serve_with(special)
        ''')
    fixtures = [basic("a"), basic("b"), {**basic("hang"), "timeout_ms": 500}, basic("c"), basic("d")]
    started = time.monotonic()
    outcomes = run_all(command, fixtures, jobs=1)
    assert [o.status for o in outcomes] == ["pass", "pass", "timeout", "pass", "pass"]
    assert time.monotonic() - started < 10
    assert starts(tmp_path) == 3  # probe, the persistent one that hung, its replacement
    assert outcomes[2].problems[0] == "driver did not finish within 0.5s"


def test_a_crash_fails_that_fixture_only(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, '''
        def special(fixture):
            if fixture["id"] == "crash":
                print(json.dumps({"kind": "event", "event": {"type": "AgentStart"}}), flush=True)
                sys.stderr.write("boom\\n")
                os._exit(3)
            return False
        serve_with(special)
        ''')
    outcomes = run_all(command, [basic("a"), basic("crash"), basic("b")], jobs=1)
    assert [o.status for o in outcomes] == ["pass", "fail", "pass"]
    assert outcomes[1].problems[0] == "driver exited (status 3) before its 'done' line"
    assert "boom" in outcomes[1].stderr


def test_done_must_name_the_fixture(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, '''
        print(json.dumps(HELLO), flush=True)
        for line in sys.stdin:
            run_fixture(json.loads(line))
            print(json.dumps({"kind": "done", "id": "someone-else"}), flush=True)
        ''')
    outcome = run_all(command, [basic("a"), basic("b")], jobs=1)[1]
    assert outcome.status == "fail"
    assert "'done' names fixture 'someone-else', not 'b'" in outcome.problems[0]


def test_lines_written_after_done_are_found_and_the_process_replaced(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, '''
        print(json.dumps(HELLO), flush=True)
        for line in sys.stdin:
            fixture = json.loads(line)
            run_fixture(fixture)
            print(json.dumps({"kind": "done", "id": fixture["id"]}), flush=True)
            print(json.dumps({"kind": "event", "event": {"type": "AgentEnd"}}), flush=True)
        ''')
    mode = Mode("persistent")
    session = DriverSession(command, mode)
    try:
        assert session.run(basic("a"), 10).failure is None
        process = session.process
        assert process is not None
        deadline = time.monotonic() + 5
        while process.lines.empty() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert session.strays() == ['{"kind": "event", "event": {"type": "AgentEnd"}}']
        assert session.process is None
        assert session.run(basic("b"), 10).failure is None  # on a new process
    finally:
        session.close()


def test_forcing_persistent_mode_on_a_driver_without_it_is_a_start_error(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drivers, "STARTUP_S", 1.0)
    command = fake_driver(tmp_path, "run_fixture(json.load(sys.stdin))\n")
    with pytest.raises(DriverStartError, match="did not announce persistent mode"):
        run_all(command, [basic("a"), basic("b")], jobs=2, mode="persistent")


def test_a_driver_that_cannot_start_is_a_start_error(tmp_path: Path) -> None:
    with pytest.raises(DriverStartError, match="cannot start"):
        run_all(str(tmp_path / "no-such-driver"), [basic("a")], jobs=2)
    with pytest.raises(DriverStartError, match="wrote nothing and failed"):
        run_all(f"{PY} -c 'import sys; sys.exit(3)'", [basic("a"), basic("b")], jobs=2)


def test_a_fixture_never_sees_the_output_of_threads_the_previous_one_left_behind() -> None:
    """The reference driver's gate: a tool that ignores cancellation outlives its fixture; the next
    fixture's output holds only its own lines, and nothing is written after the last done."""
    leaving = {**basic("leaves-a-thread"), "expect": {}, "invariants": False,
               "context": {"agent_id": "agent-1", "session_id": "left"},
               "config": {"tool_abort_grace_ms": 10},
               "tools": [{"name": "echo", "description": "Echo.", "parameters": {"type": "object"},
                          "default": [{"sleep_ms": 300}, {"update": "late"}, {"result": "late"}]}],
               "provider": {"responses": [{"blocks": [{"type": "toolCall", "id": "t1", "name": "echo",
                                                       "arguments": {}}]}, "after"]},
               "actions": [{"when": {"event": "ToolExecutionStart"}, "do": "abort"}]}
    source = io.StringIO(json.dumps(leaving) + "\n" + json.dumps(basic("next")) + "\n")
    sink = io.StringIO()
    from phi.conformance.driver import serve

    assert serve(source, sink) == 0
    time.sleep(0.5)  # the abandoned tool finishes now
    lines = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert lines[0]["kind"] == "hello" and lines[-1] == {"kind": "done", "id": "next"}
    first_done = lines.index({"kind": "done", "id": "leaves-a-thread"})
    second = lines[first_done + 1:-1]
    assert {line["event"]["loop_id"] for line in second if line["kind"] == "event"} == {"sess-1.mock.mock-model.1"}
    assert [line["kind"] for line in second][-3:] == ["queues", "context", "result"]
    assert not [line for line in second if line["kind"] == "tool_executed"]


def test_the_reference_driver_counts_loop_ids_from_1_for_every_fixture() -> None:
    from phi.conformance.driver import serve

    source = io.StringIO((json.dumps(basic("a")) + "\n") * 2)
    sink = io.StringIO()
    serve(source, sink)
    starts_ = [json.loads(line)["event"] for line in sink.getvalue().splitlines()
               if '"AgentStart"' in line]
    assert [e["loop_id"] for e in starts_] == ["sess-1.mock.mock-model.1"] * 2


# --------------------------------------------------------------------------- selection


def test_selectors_choose_by_id_glob_section_and_requirement() -> None:
    def ids(only: list[str] | None = None, skip: list[str] | None = None) -> set[str]:
        return {f["id"] for f in select(FIXTURES, only, skip)}

    tools = ids(["tool-*"])
    assert tools and all(i.startswith("tool-") for i in tools)
    assert ids(["tool-*"], ["tool-p*"]) == {i for i in tools if not i.startswith("tool-p")}
    loop8 = ids(["LOOP-8"])
    assert loop8 == {f["id"] for f in FIXTURES if "LOOP-8" in f.get("spec", [])} and loop8
    assert ids(["TOOL"]) == {f["id"] for f in FIXTURES if any(r.startswith("TOOL-") for r in f.get("spec", []))}
    assert ids(["LOOP-1?"]) == {f["id"] for f in FIXTURES if any(r.startswith("LOOP-1") and len(r) == 7
                                                                  for r in f.get("spec", []))}
    assert ids(["§5"]) == ids(["5"]) == ids(["TOOL"])  # every TOOL-n is defined in §5
    assert ids(["basic-text-reply,tool-error"]) == {"basic-text-reply", "tool-error"}
    assert ids(["§4"]) >= ids(["4.3"]) >= loop8


def test_sections_are_read_from_the_spec() -> None:
    index = parse_spec("# T\n## 4. The loop\n- **LOOP-1 [tested]** a\n### 4.3 Turns\n- **LOOP-8** b **LOOP-1** again\n")
    assert index.sections == {"4": "The loop", "4.3": "Turns"}
    assert index.requirements == {"LOOP-1": {"section": "4", "tested": True},
                                  "LOOP-8": {"section": "4.3", "tested": False}}


def test_the_shipped_requirements_json_is_current() -> None:
    from phi.conformance.coverage import find_spec

    spec = find_spec(Path(str(suite_files())))
    if spec is None:
        pytest.skip("SPEC.md not present")
    shipped = (suite_files() / "requirements.json").read_text(encoding="utf-8")
    assert shipped == parse_spec(spec.read_text(encoding="utf-8")).render(), \
        "run: python -m phi.conformance requirements --write"


# --------------------------------------------------------------------------- failure output


def test_a_failure_shows_the_first_differing_event_with_both_sides() -> None:
    fixture = json.loads(json.dumps(basic("changed-delta")))
    updates = [i for i, e in enumerate(fixture["expect"]["events"]) if e.get("type") == "MessageUpdate"]
    fixture["expect"]["events"][updates[0]]["delta"]["delta"] = "Howdy"
    outcome = run_all(REFERENCE_DRIVER, [fixture], jobs=1, mode="per-fixture")[0]
    text = format_outcome(outcome)
    assert outcome.status == "fail"
    assert f"events[{updates[0]}]: first difference (MessageUpdate)" in text
    assert '  expected: {"type": "MessageUpdate"' in text and '"Howdy"' in text
    assert '  actual:   {"type": "MessageUpdate"' in text
    assert 'delta.delta: expected "Howdy", got ' in text
    assert re.search(rf"\*\s+{updates[0]}\s+MessageUpdate\s+\| MessageUpdate", text)
    assert len(text.splitlines()) < 24


def test_an_extra_event_is_shown_with_the_types_around_it() -> None:
    fixture = json.loads(json.dumps(basic("missing-event")))
    del fixture["expect"]["events"][2]
    text = format_outcome(run_all(REFERENCE_DRIVER, [fixture], jobs=1, mode="per-fixture")[0])
    assert "events: expected 9 events, got 10" in text
    assert "events[2]: first difference" in text and "event types around it" in text


def test_long_problem_lines_are_cut_and_counted() -> None:
    outcome = Outcome("x", "fail", ["y" * 1000] + [f"p{i}" for i in range(40)], 0.1, "")
    lines = format_outcome(outcome).splitlines()
    assert max(len(line) for line in lines) < 240
    assert lines[-1].strip().startswith("... 25 more")


# --------------------------------------------------------------------------- reports

# Jenkins' junit-10.xsd: the attributes and children each element may have
JUNIT_ATTRIBUTES = {
    "testsuites": {"name", "time", "tests", "failures", "disabled", "errors"},
    "testsuite": {"name", "tests", "failures", "errors", "time", "disabled", "skipped", "skips", "timestamp",
                  "hostname", "id", "package", "assertions", "file", "skip", "log", "url"},
    "testcase": {"name", "assertions", "time", "timestamp", "classname", "status", "class", "file", "line", "log",
                 "group", "url"},
    "failure": {"type", "message"}, "error": {"type", "message"}, "skipped": {"type", "message"},
    "properties": set(), "property": {"name", "value"}, "system-out": set(), "system-err": set(),
}
JUNIT_CHILDREN = {
    "testsuites": {"testsuite"}, "testsuite": {"testsuite", "properties", "testcase", "system-out", "system-err"},
    "testcase": {"skipped", "error", "failure", "system-out", "system-err"}, "properties": {"property"},
}


def junit_problems(element: ET.Element) -> list[str]:
    problems = [f"{element.tag}: attribute {a}" for a in element.attrib if a not in JUNIT_ATTRIBUTES[element.tag]]
    for child in element:
        if child.tag not in JUNIT_CHILDREN.get(element.tag, set()):
            problems.append(f"{element.tag}: child {child.tag}")
        problems += junit_problems(child)
    return problems


def test_the_junit_report_follows_the_common_schema() -> None:
    outcomes = [Outcome("basic-text-reply", "pass", [], 0.01), Outcome("tool-error", "fail", ["a \x01 b", "c"], 0.2,
                                                                         "stderr line"),
                Outcome("tool-raises", "timeout", ["driver did not finish within 1s"], 1.0),
                Outcome("tool-not-found", "unsupported", ["no tools"], 0.0)]
    root = ET.fromstring(junit_xml(RunInfo("my driver", 1.5, "persistent"), FIXTURES, outcomes))
    assert junit_problems(root) == []
    suite = root.find("testsuite")
    assert suite is not None
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "4", "failures": "1", "errors": "1", "skipped": "1"}
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["tool-error"].find("failure") is not None and cases["tool-raises"].find("error") is not None
    assert cases["tool-not-found"].find("skipped") is not None and not list(cases["basic-text-reply"])
    assert cases["tool-error"].get("classname") == "conformance.TOOL"


def test_the_json_report_lists_every_fixture() -> None:
    outcomes = [Outcome("basic-text-reply", "pass", [], 0.01), Outcome("tool-error", "fail", ["x"], 0.2, "e")]
    report = json_report(RunInfo("d", 2.0, "per-fixture"), FIXTURES, outcomes)
    assert report["counts"] == {"pass": 1, "fail": 1, "timeout": 0, "unsupported": 0}
    assert report["fixtures"][1] == {"id": "tool-error", "title": BY_ID["tool-error"]["title"],
                                     "spec": BY_ID["tool-error"]["spec"], "status": "fail", "seconds": 0.2,
                                     "problems": ["x"], "warnings": [], "stderr_tail": ["e"]}
    json.dumps(report)


# --------------------------------------------------------------------------- the command line


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phi.conformance", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=120)


def test_cli_run_selects_reports_and_exits_0(tmp_path: Path) -> None:
    junit, report = tmp_path / "junit.xml", tmp_path / "report.json"
    done = cli("run", "--only", "basic-*,tool-single-call", "--report", str(junit), "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "2 passed, 0 failed"
    assert ET.parse(junit).getroot().get("tests") == "2"
    assert [f["id"] for f in json.loads(report.read_text())["fixtures"]] == ["basic-text-reply", "tool-single-call"]


def test_cli_lists_fixtures() -> None:
    listed = cli("list", "--only", "LOOP-20")
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[0].startswith("loop-no-prompts-refused ")
    assert listed.stdout.splitlines()[-1] == "1 fixtures"
    assert cli("run", "--list", "--only", "§13.3").stdout.splitlines()[-1] == \
        f"{sum(f['id'].startswith('parallel-') for f in FIXTURES)} fixtures"


def test_cli_exit_status_1_when_a_fixture_fails(tmp_path: Path) -> None:
    fixture = json.loads(json.dumps(basic("basic-text-reply")))
    fixture["expect"]["messages"][-1]["content"][0]["text"] = "Goodbye"
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "basic-text-reply.json").write_text(json.dumps(fixture))
    done = cli("run", "--fixtures", str(tmp_path / "fixtures"))
    assert done.returncode == 1 and done.stdout.splitlines()[-1] == "0 passed, 1 failed"


def test_cli_exit_status_2_for_usage_no_fixtures_and_drivers_that_cannot_start(tmp_path: Path) -> None:
    assert cli("run", "--jobs").returncode == 2
    nothing = cli("run", "--only", "no-such-fixture")
    assert nothing.returncode == 2 and "no fixtures selected" in nothing.stderr
    assert cli("run", "--fixtures", str(tmp_path / "missing")).returncode == 2
    broken = cli("run", "--only", "basic-*", "--driver", str(tmp_path / "no-such-driver"))
    assert broken.returncode == 2 and "could not be started" in broken.stderr
    help_text = cli("run", "--help").stdout
    assert "exit status:" in help_text and "2  bad usage" in help_text


def test_the_runner_is_quick_with_the_persistent_reference_driver() -> None:
    """A smoke check of protocol 2's point (scripts/bench/conformance_speed.py measures it)."""
    chosen = [f for f in FIXTURES if f["id"].startswith(("basic-", "tool-s", "steer-", "queue-"))]
    started = time.monotonic()
    outcomes = run_all(REFERENCE_DRIVER, chosen, jobs=2)
    assert {o.status for o in outcomes} == {"pass"}
    assert time.monotonic() - started < 20  # per-fixture processes take about 0.3 s each, these ~20 in 1-2 s


def test_worker_threads_do_not_outlive_a_run() -> None:
    before = threading.active_count()
    run_all(REFERENCE_DRIVER, [basic("a"), basic("b")], jobs=2)
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before


def test_the_stress_script_reports_fixtures_that_fail(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "conformance_stress.py"
    done = subprocess.run([sys.executable, str(script), "--runs", "2", "--busy", "1",
                           "--only", "basic-text-reply,tool-single-call"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout.splitlines()[-1])
    assert (figures["runs"], figures["fixtures"], figures["flaky"], figures["always_failed"]) == (2, 2, {}, [])
    assert "every fixture passed every run" in done.stdout


# --------------------------------------------------------------------------- limits (attack findings 4, 14)


def test_a_huge_time_limit_is_cut_to_the_maximum_and_the_run_goes_on() -> None:
    from phi.conformance.runner import MAX_TIMEOUT_MS, time_limit

    for huge in (10_000_000_000_000, 1e300, float("inf")):
        assert time_limit({"timeout_ms": huge}, None) == MAX_TIMEOUT_MS / 1000
        assert time_limit({}, huge) == MAX_TIMEOUT_MS / 1000  # type: ignore[arg-type]
    assert time_limit({"timeout_ms": 250}, None) == 0.25 and time_limit({"timeout_ms": 250}, 500) == 0.5
    fixtures = [{**basic("huge"), "timeout_ms": 1e300}, {**basic("huger"), "timeout_ms": 10_000_000_000_000}]
    for mode in ("per-fixture", "persistent"):
        assert [o.status for o in run_all(REFERENCE_DRIVER, fixtures, jobs=1, mode=mode)] == ["pass", "pass"]
        assert [o.status for o in run_all(REFERENCE_DRIVER, fixtures[:1], jobs=1, mode=mode,
                                          timeout_ms=99_999_999_999_999)] == ["pass"]


# --------------------------------------------------------------------------- output limits (attack finding 6)
# Every flood here is bounded (a few MiB) and the limits are made small, so that a runner without
# them would only read a few MiB too.

FLOOD = '''
        def flood(end="\\n"):
            line = json.dumps({"kind": "hook", "name": "before_turn", "args": [0, 0]}) + end
            for _ in range(4 * 1024 * 1024 // len(line)):
                sys.stdout.write(line)
            sys.stdout.flush()
        '''


@pytest.mark.parametrize("end", ["\\n", ""])
def test_a_per_fixture_driver_that_writes_too_much_fails_with_output_too_large(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: str) -> None:
    from phi.conformance import process

    monkeypatch.setattr(process, "OUTPUT_LIMIT", 256 * 1024)
    command = fake_driver(tmp_path, FLOOD + f'''
        json.load(sys.stdin)
        flood({end!r})
        ''')
    [outcome] = run_all(command, [basic("flood")], jobs=1)  # auto: the first fixture probes the driver
    assert outcome.status == "fail" and outcome.problems[0].startswith("output too large"), outcome.problems[:2]


def test_a_persistent_driver_that_writes_too_much_fails_that_fixture_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from phi.conformance import process

    monkeypatch.setattr(process, "OUTPUT_LIMIT", 256 * 1024)
    command = fake_driver(tmp_path, FLOOD + '''
        def special(fixture):
            if fixture["id"] == "flood":
                flood()
                return True
            return False
        serve_with(special)
        ''')
    outcomes = run_all(command, [basic("a"), basic("flood"), basic("b")], jobs=1, mode="persistent")
    assert [o.status for o in outcomes] == ["pass", "fail", "pass"]
    assert outcomes[1].problems[0].startswith("output too large")


def test_only_a_tail_of_the_drivers_stderr_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from phi.conformance import process

    monkeypatch.setattr(process, "STDERR_TAIL", 64 * 1024)
    command = fake_driver(tmp_path, '''
        fixture = json.load(sys.stdin)
        for n in range(3 * 1024):
            sys.stderr.write(f"{n:05} " + "x" * 1017 + "\\n")
        sys.stderr.write("the end\\n")
        sys.stderr.flush()
        run_fixture(fixture)
        ''')
    [outcome] = run_all(command, [basic("a")], jobs=1, mode="per-fixture")
    assert outcome.status == "pass"
    assert outcome.stderr.endswith("the end\n") and 0 < len(outcome.stderr) <= 64 * 1024 + 1024


def test_a_time_limit_below_1_ms_is_bad_usage() -> None:
    for bad in ("0", "-5", "1.5", "soon"):
        done = cli("run", "--only", "basic-text-reply", "--timeout-ms", bad)
        assert done.returncode == 2 and "--timeout-ms" in done.stderr, (bad, done.stderr)
    with pytest.raises(ValueError):
        run_all(REFERENCE_DRIVER, [basic("a")], timeout_ms=0)
    assert cli("run", "--only", "basic-text-reply", "--timeout-ms", "99999999999999").returncode == 0


def test_a_persistent_driver_that_exits_after_done_costs_the_next_fixture_nothing(tmp_path: Path) -> None:
    command = fake_driver(tmp_path, '''
        print(json.dumps(HELLO), flush=True)
        fixture = json.loads(sys.stdin.readline())
        run_fixture(fixture)
        print(json.dumps({"kind": "done", "id": fixture["id"]}), flush=True)
        sys.stdin.readline()  # the next fixture has come: leave without a word, status 0
        os._exit(0)
        ''')
    outcomes = run_all(command, [basic("a"), basic("b"), basic("c")], jobs=1, mode="persistent")
    assert [o.status for o in outcomes] == ["pass"] * 3, [o.problems for o in outcomes]
    assert starts(tmp_path) == 3  # every fixture went to a process of its own, none was failed for it


def test_many_jobs_start_persistent_drivers_a_few_at_a_time_and_the_summary_counts_jobs_used() -> None:
    fixtures = [basic(f"many-{n}") for n in range(12)]
    mode = Mode("persistent")
    assert [o.status for o in run_all(REFERENCE_DRIVER, fixtures, jobs=1000, mode=mode)] == ["pass"] * 12
    assert mode.starting.acquire(blocking=False)  # every start gave its slot back
    mode.starting.release()
    done = cli("run", "--only", "basic-text-reply", "-j", "1000")
    assert done.returncode == 0 and "1 job)" in done.stdout, done.stdout[-300:]
