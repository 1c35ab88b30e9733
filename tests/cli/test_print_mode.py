"""``phi -p`` and ``phi -p --json`` (issue 15): exit statuses and output shapes; ``--json`` output
validates against the events' JSON schema (phi/conformance/suite/schema/event.schema.json, SPEC EVT-1 / DATA-6)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from phi.session import JsonDirStore
from coding.wire import Call, Turn

from cli.terminal_helpers import REPO

SCHEMA = json.loads((Path(__file__).parents[2] / "phi" / "conformance" / "suite" / "schema" / "event.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
NO_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def run_phi(args: list[str], cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
    full.update({"PYTHONPATH": str(REPO), "PHI_HOME": str(home), **env})
    return subprocess.run([sys.executable, "-m", "phi.cli", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=60)


def wire(model) -> list[str]:
    return ["--provider", "anthropic", "--base-url", model.url]


def events_of(stdout: str) -> list[dict]:
    """The --json lines: each valid against the schema, together a well-formed run (the invariants the
    conformance suite checks: bracketing, turns, deltas that add up to the messages, tool calls)."""
    from phi.conformance.invariants import check

    events = [json.loads(line) for line in stdout.splitlines()]
    for event in events:
        VALIDATOR.validate(event)
    assert check(events, events[-1]["messages"]) == []
    return events


def test_print_mode_prints_the_final_answer_and_exits_0(model, project, phi_home):
    model.script("Count the notes", Turn("Reading.", [Call("read_file", {"file_path": "notes.txt"})]),
                 Turn("There are 3 lines."))
    done = run_phi(["-p", "Count the notes", *wire(model)], project, phi_home, ANTHROPIC_API_KEY="sk-test")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "There are 3 lines.\n"
    (saved,) = (phi_home / "sessions").glob("[!.]*.jsonl")  # recorded like an interactive run
    assert JsonDirStore(saved.parent).load(saved.stem).loops[0].status.value == "Completed"


def test_print_mode_exits_1_when_the_run_fails(model, project, phi_home):
    done = run_phi(["-p", "Nobody scripted this", *wire(model)], project, phi_home, ANTHROPIC_API_KEY="sk-test")
    assert done.returncode == 1
    assert "the run ended: error" in done.stderr and "no script for a conversation" in done.stderr


def test_json_writes_every_event_as_one_valid_json_line(model, project, phi_home):
    model.script("Write it", Turn("", [Call("write_file", {"file_path": "out.txt", "content": "x\n"})]), Turn("ok"))
    done = run_phi(["-p", "Write it", "--json", *wire(model)], project, phi_home, ANTHROPIC_API_KEY="sk-test")
    assert done.returncode == 0, done.stderr
    events = events_of(done.stdout)
    types = [e["type"] for e in events]
    assert types[0] == "AgentStart" and types[-1] == "AgentEnd" and events[-1]["outcome"] == "completed"
    assert {"TurnStart", "MessageUpdate", "ToolExecutionStart", "ToolExecutionEnd", "TurnEnd"} <= set(types)
    assert events[-1]["messages"][-1]["content"] == [{"type": "text", "text": "ok"}]
    assert (project / "out.txt").read_text() == "x\n"  # -p asks nobody: approval is off by default


def test_json_run_that_fails_ends_with_an_error_outcome_and_exit_1(model, project, phi_home):
    done = run_phi(["-p", "Unscripted", "--json", *wire(model)], project, phi_home, ANTHROPIC_API_KEY="sk-test")
    assert done.returncode == 1
    events = events_of(done.stdout)
    assert events[-1]["type"] == "AgentEnd" and events[-1]["outcome"] == "error"


def test_approval_in_print_mode_denies_what_it_would_ask(model, project, phi_home):
    model.script("Write anyway", Turn("", [Call("write_file", {"file_path": "no.txt", "content": "x"})]),
                 Turn("could not"))
    done = run_phi(["-p", "Write anyway", "--approve", "smart", "--json", *wire(model)], project, phi_home,
                   ANTHROPIC_API_KEY="sk-test")
    assert done.returncode == 0
    (end,) = [e for e in events_of(done.stdout) if e["type"] == "ToolExecutionEnd"]
    assert end["is_error"] and "nobody to ask" in end["result"]["content"][0]["text"]
    assert not (project / "no.txt").exists()


def test_offline_json_run_has_thinking_a_tool_call_and_validates(project, phi_home):
    done = run_phi(["-p", "what is here?", "--offline", "--json"], project, phi_home)
    assert done.returncode == 0, done.stderr
    events = events_of(done.stdout)
    kinds = {e["delta"]["type"] for e in events if e["type"] == "MessageUpdate"}
    assert kinds == {"thinking", "text", "toolCall"}
    assert "notes.txt" in events[-1]["messages"][-1]["content"][0]["text"]


def test_without_a_key_the_message_names_the_variables_and_exit_is_2(project, phi_home):
    done = run_phi(["-p", "hello"], project, phi_home)
    assert done.returncode == 2
    for name in NO_KEYS:
        assert name in done.stderr
    assert "--offline" in done.stderr


@pytest.mark.parametrize("args, expected", [(["version"], "phi "), (["demo"], "")])
def test_other_commands_still_work(args, expected, project, phi_home):
    done = run_phi(args, project, phi_home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(expected) and done.stdout.strip()


def test_the_schema_rejects_what_is_not_an_event():
    good = {"type": "InputRejected", "loop_id": "s.mock.m.1", "reason": "no"}
    VALIDATOR.validate(good)
    for bad in ({**good, "type": "Nope"}, {**good, "extra": 1}, {"type": "InputRejected", "loop_id": "x"},
                {"type": "TurnStart", "loop_id": "l", "turn_index": 0, "triggered_by": "User", "timestamp": 5}):
        assert not VALIDATOR.is_valid(bad), bad


def test_the_schema_accepts_every_event_of_every_conformance_fixture():
    """Differential: the reference driver's events over the whole conformance suite all validate."""
    import io

    from phi.conformance import default_fixtures_dir
    from phi.conformance.driver import run_fixture

    seen: set[str] = set()
    for path in sorted(default_fixtures_dir().glob("[!.]*.json")):
        out = io.StringIO()
        run_fixture(json.loads(path.read_text()), out)
        for line in out.getvalue().splitlines():
            record = json.loads(line)
            if record.get("kind") == "event":
                errors = [e.message for e in VALIDATOR.iter_errors(record["event"])]
                assert not errors, f"{path.name}: {record['event']['type']}: {errors[:2]}"
                seen.add(record["event"]["type"])
    assert len(seen) >= 13, seen


def test_a_run_that_reaches_max_turns_ends_in_turn_limit_and_exits_1(model, project, phi_home):
    model.script("Keep going", Turn("", [Call("read_file", {"file_path": "notes.txt"})]), Turn("never asked"))
    done = run_phi(["-p", "Keep going", "--json", "--max-turns", "1", *wire(model)], project, phi_home,
                   ANTHROPIC_API_KEY="sk-test")
    assert done.returncode == 1
    assert "the run ended: turn_limit" in done.stderr
    events = events_of(done.stdout)
    assert events[-1]["type"] == "AgentEnd"
    assert len(model.requests_of("Keep going")) == 1


@pytest.mark.parametrize("signum, status, said", [(signal.SIGINT, 130, "interrupted"),
                                                 (signal.SIGTERM, 143, "terminated")])
def test_a_signal_ends_a_print_run_the_json_stream_with_the_abort_and_saves(model, project, phi_home, signum,
                                                                           status, said):
    """Ctrl+C, or SIGTERM (a CI job's time limit): the run stops, AgentEnd comes out, the session is saved."""

    model.script("Ramble", Turn("words " * 3000)).slow("Ramble", chunk_size=200, delay=0.1)
    env = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
    env.update(PYTHONPATH=str(REPO), PHI_HOME=str(phi_home), ANTHROPIC_API_KEY="sk-test")
    stdout = phi_home.parent / "stdout.jsonl"
    with stdout.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "phi.cli", "-p", "Ramble", "--json", *wire(model)],
                                cwd=project, env=env, stdout=sink, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while '"MessageUpdate"' not in stdout.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)  # until the reply streams
        time.sleep(0.2)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == status, err
    assert f"phi: {said}" in err
    events = events_of(stdout.read_text())
    assert events[-1]["type"] == "AgentEnd" and events[-1]["outcome"] == "aborted"
    (saved,) = (phi_home / "sessions").glob("[!.]*.jsonl")  # saved on the way out
    assert JsonDirStore(saved.parent).load(saved.stem).loops[0].status.value == "Aborted"


def test_json_stdout_holds_only_json_when_something_goes_wrong_around_the_run(project, phi_home, tmp_path):
    """Diagnostics (a session that cannot be saved, log records) go to stderr; stdout stays JSON lines."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = run_phi(["-p", "what is here?", "--offline", "--json", "--sessions-dir", str(blocker / "sessions")],
                   project, phi_home)
    assert done.returncode == 0, done.stderr
    events_of(done.stdout)  # every line is JSON
    assert "could not save the session" in done.stderr
