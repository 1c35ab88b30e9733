"""Attacks on issue 35's unattended modes: ``--json`` runs the prompts queued behind an input that
failed without waiting for another command, and SIGTERM while an MCP server is still starting ends
``phi -p`` with 143 and the server with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from coding.wire import Turn, user_texts
from providers.conftest import Reply

from cli.conftest import SlowServer
from cli.terminal_helpers import REPO

BAD = Reply(json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "bad thing"}}).encode(),
            status=400, content_type="application/json")


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PHI_HOME": str(home), "ANTHROPIC_API_KEY": "sk-test-key"}


def test_json_runs_prompts_queued_behind_a_failed_input_without_another_command(model: SlowServer, project: Path,
                                                                                 phi_home: Path) -> None:
    model.slow("First", chunk_size=16, delay=0.05)  # the failure comes while the other prompts are queued
    model.script("First", BAD, Turn("Second answer."), Turn("Third answer."))
    proc = subprocess.Popen([sys.executable, "-m", "phi.cli", "--provider", "anthropic", "--base-url", model.url,
                             "--json"], cwd=project, env=_env(phi_home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for text in ("First", "Second", "Third"):
            proc.stdin.write(json.dumps({"type": "prompt", "text": text}) + "\n")
        proc.stdin.flush()  # stdin stays open: nothing else comes to wake phi up
        ends: list[dict[str, Any]] = []
        while len(ends) < 2 or ends[-1].get("outcome") != "completed":
            line = proc.stdout.readline()
            assert line, "phi --json stopped writing before the queued prompts ran"
            event = json.loads(line)
            if event["type"] == "AgentEnd":
                ends.append(event)
        texts = user_texts("anthropic", model.requests_of("First")[-1])
        assert texts[-1] == "Third" and "Second" in texts  # each queued prompt reached the model, in order
    finally:
        proc.stdin.close()
        try:
            assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def test_sigterm_while_an_mcp_server_starts_ends_phi_p_and_the_server(project: Path, phi_home: Path) -> None:
    server = REPO / "tests" / "mcp" / "fake_server.py"  # "silent": reads stdin, never answers initialize
    config = json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [str(server), "silent"]}}})
    proc = subprocess.Popen([sys.executable, "-m", "phi.cli", "--provider", "anthropic", "--base-url",
                             "http://127.0.0.1:9", "--mcp", config, "-p", "hi"], cwd=project, env=_env(phi_home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = None
        while started is None:  # the server process exists: phi waits in its initialize
            assert proc.poll() is None, proc.communicate()
            started = next((pid for pid in _children(proc.pid)
                            if "fake_server.py" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")), None)
            time.sleep(0.02)  # polling for the child to appear, not a synchronisation by time
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 143, err
        assert "terminated" in err
        pidfd = os.pidfd_open(started)  # raises ProcessLookupError when it is gone already
        try:
            import select

            assert select.select([pidfd], [], [], 30)[0], "the MCP server outlived phi -p"
        finally:
            os.close(pidfd)
    except ProcessLookupError:
        pass  # the server was gone before we looked
    finally:
        if proc.poll() is None:
            proc.kill()


def _json_phi(model: SlowServer, project: Path, home: Path, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "phi.cli", "--provider", "anthropic", "--base-url", model.url,
                             "--json"], cwd=project, env=_env(home), stdin=subprocess.PIPE, text=True,
                            **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs})


def _send(proc: subprocess.Popen[str], **command: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(command) + "\n")
    proc.stdin.flush()


def test_json_takes_steering_and_prompts_after_an_error_closed_the_session(model: SlowServer, project: Path,
                                                                          phi_home: Path) -> None:
    """Attack 2: a rejected key closes the session; steering and the next prompt, sent once its
    AgentEnd was read, go to the session that follows (phi exited 2 with SessionClosed)."""
    refused = Reply(json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                           "message": "invalid x-api-key"}}).encode(),
                    status=401, content_type="application/json")
    model.script("AUTH please", refused, Turn("Done, tests mentioned."))
    proc = _json_phi(model, project, phi_home)
    assert proc.stdout is not None
    _send(proc, type="prompt", text="AUTH please")
    while json.loads(proc.stdout.readline())["type"] != "AgentEnd":
        pass
    _send(proc, type="steer", text="mention the tests")
    _send(proc, type="prompt", text="try again")
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        rest = [json.loads(line) for line in proc.stdout]
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [e["outcome"] for e in rest if e["type"] == "AgentEnd"] == ["completed"]
    texts = user_texts("anthropic", model.requests_of("AUTH please")[-1])
    assert "mention the tests" in " ".join(texts) and "try again" in " ".join(texts)


def test_json_with_stdout_on_a_full_disk_exits_1_without_hanging(model: SlowServer, project: Path,
                                                                 phi_home: Path) -> None:
    model.script("Hello", Turn("Hi."), Turn("Hi again."))
    with open("/dev/full", "w") as full:
        proc = _json_phi(model, project, phi_home, stdout=full)
        try:
            _send(proc, type="prompt", text="Hello")
            _send(proc, type="prompt", text="Hello")
            assert proc.stdin is not None
            proc.stdin.close()
            assert proc.wait(60) == 1
        finally:
            if proc.poll() is None:  # it hung: the failure is said above, the process must not outlive the test
                proc.kill()
                proc.wait()
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()


def test_json_retries_the_follow_up_that_overflowed_not_the_runs_first_prompt(project: Path, phi_home: Path) -> None:
    """Attack 2: prompts sent while one runs are follow-ups the run takes; when one of them
    overflows, that one is compacted and tried again — the first prompt is not sent twice — and
    when it never fits it is not kept in front of the next."""

    class Refusing(SlowServer):
        def _respond_scripted(self, request: Any) -> Any:
            texts = user_texts("anthropic", request.json())
            if texts and texts[-1].startswith("BIG"):
                return Reply(json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message":
                             "prompt is too long: 250000 tokens > 200000 maximum"}}).encode(), status=400,
                             content_type="application/json")
            return super()._respond_scripted(request)

    model = Refusing()
    try:
        model.slow("hello", chunk_size=8, delay=0.1)  # long enough for the follow-ups to be queued
        model.script("hello", Turn("Hello to you, with a reply that takes a while to arrive."),
                     Turn("After."), Turn("After again."))
        model.script("BIG", Turn("unused"))
        model.script("after", Turn("After."))
        proc = _json_phi(model, project, phi_home)
        try:
            for text in ("hello", "BIG input", "after"):
                _send(proc, type="prompt", text=text)
            assert proc.stdin is not None
            proc.stdin.close()
            assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        newest = [user_texts("anthropic", r.json())[-1] for r in model.requests]
        assert newest.count("hello") == 1, newest  # the run's first prompt was never sent again
        last = user_texts("anthropic", model.requests[-1].json())
        assert last[-1] == "after" and not any(t.startswith("BIG") for t in last), last
    finally:
        model.close()


def test_steering_between_runs_goes_with_the_next_input_and_never_becomes_one(tmp_path: Path) -> None:
    """A steer that reached the session between two runs (after an error closed it, in any order
    with the prompt behind it) waits for the next input: the watcher that starts queued prompts never
    starts it as an input, and a session that follows a closed one gets it as steering again."""
    import io

    from phi.cli.batch import unattended_session
    from phi.cli.options import CliOptions
    from phi.cli.sessions import CliSessions
    from phi.coding import SessionState, create_anthropic_profile
    from phi.providers.mock import ScriptedProvider, ScriptedResponse
    from phi.types import UserMessage

    provider = ScriptedProvider([ScriptedResponse.text("one"), ScriptedResponse.text("two")])
    unattended = unattended_session(CliOptions(cwd=str(tmp_path), color="never"),
                                    create_anthropic_profile(provider=provider), CliSessions(tmp_path / "s"),
                                    io.StringIO())
    try:
        unattended.steer("mention the tests")
        unattended.follow_up("later")
        assert unattended.take_queued_input() == ["later"]  # what starts next; the steering stays
        unattended.follow_up("later")
        unattended.session.close()  # as an error would: both given to a session that is now closed
        assert unattended.session.state == SessionState.CLOSED
        assert unattended.submit("try again").result().outcome == "completed"
        asked = [[m.text for m in call.messages if isinstance(m, UserMessage)] for call in provider.calls]
        assert asked == [["try again", "mention the tests"], ["try again", "mention the tests", "later"]]
    finally:
        unattended.close()


def test_taking_queued_input_never_loses_a_message_steered_meanwhile(tmp_path: Path) -> None:
    import threading

    from phi.coding import Session, create_anthropic_profile
    from phi.providers.mock import ScriptedProvider
    from phi.tools import LocalExecutionEnvironment

    session = Session(create_anthropic_profile(provider=ScriptedProvider([])), LocalExecutionEnvironment(str(tmp_path)))
    sent = [str(i) for i in range(5_000)]
    taken: list[str] = []
    done = threading.Event()

    def steer() -> None:
        for text in sent:
            session.steer(text)
        done.set()

    steering = threading.Thread(target=steer)
    steering.start()
    try:
        while not done.is_set():
            taken += session.take_queued_input()
        steering.join()
        taken += session.take_queued_input()
        assert taken == sent
    finally:
        session.close()
