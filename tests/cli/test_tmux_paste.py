"""Issue 31 item 8 in a real terminal emulator (tmux): compiler output whose first line starts with
``/``, pasted with ``tmux paste-buffer -p`` (bracketed, because phi asks the terminal for it), is a
message for the model — at the prompt and while phi works — never an unknown command (SPEC §15
CLI-10)."""

from __future__ import annotations

import shutil
import time

import pytest
from coding.wire import Turn, user_texts

from cli.test_paste import MYPY, looping_until
from cli.test_tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed: these tests paste in a real terminal emulator")
DEADLINE_S = 30.0


def start(model, project, phi_home) -> Tmux:
    return Tmux(project, {"ANTHROPIC_API_KEY": "sk-test", "PHI_HOME": str(phi_home)},
                f"--provider anthropic --base-url {model.url}")


def paste(term: Tmux, text: str, where) -> None:
    source = where / "paste.txt"
    source.write_text(text + "\n")
    term.tmux("load-buffer", str(source))
    term.tmux("paste-buffer", "-p")


def requests_holding(model, key: str, text: str) -> list[dict]:
    """The requests of conversation ``key`` holding ``text`` in a user message, once there are any."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = [r for r in model.requests_of(key) if any(text in t for t in user_texts("anthropic", r))]
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no request of {key!r} holds {text!r}")


def test_mypy_output_pasted_at_the_prompt_reaches_the_model(model, project, phi_home, tmp_path):
    model.script("/home/me/app.py:3:5", Turn("Fixing the assignment."))
    term = start(model, project, phi_home)
    try:
        term.wait_for_prompt()
        paste(term, MYPY, tmp_path)
        term.wait_for("/home/me/app.py:9:1: note: defined here")
        term.keys("Enter")
        term.wait_for("Fixing the assignment.")
        term.wait_for_prompt()
        (request,) = requests_holding(model, "/home/me/app.py:3:5", "/home/me/app.py:3:5")
        assert user_texts("anthropic", request) == [MYPY + "\n"]
        assert "unknown command" not in term.screen()
    finally:
        term.close()


def test_mypy_output_pasted_while_phi_works_reaches_the_model(model, project, phi_home, tmp_path):
    model.script("Check the build", *[looping_until("/home/me/app.py:3:5", "Saw your mypy output.")] * 400)
    model.slow("Check the build", chunk_size=200, delay=0.05)
    term = start(model, project, phi_home)
    try:
        term.wait_for_prompt()
        term.keys("Check the build", "Enter")
        term.wait_for("✓ glob")
        paste(term, MYPY, tmp_path)
        term.keys("Enter")
        term.wait_for("Saw your mypy output.")
        term.wait_for_prompt()
        assert requests_holding(model, "Check the build", MYPY)
        assert "unknown command" not in term.screen()
    finally:
        term.close()


# ----------------------------------------------------------------------------- the review of item 8


def test_mypy_output_pasted_at_an_approval_question_answers_nothing(model, project, phi_home, tmp_path):
    """"app.py" holds an "a" (always) and a "y": the question stays, the file is not written, and the
    paste reaches the model whole after the question (SPEC §15 CLI-9)."""
    from coding.wire import Call

    model.script("Write hello", Turn("", [Call("write_file", {"file_path": "hello.txt", "content": "hi\n"})]),
                 *[looping_until("/home/me/app.py:3:5", "Got your output.")] * 400)
    term = start(model, project, phi_home)
    try:
        term.wait_for_prompt()
        term.keys("Write hello", "Enter")
        term.wait_for("[a]lways for this session:")
        paste(term, MYPY, tmp_path)
        term.wait_for("a paste does not answer this question")
        assert not (project / "hello.txt").exists()
        term.keys("y")
        term.wait_for("Got your output.")
        term.wait_for_prompt()
        assert (project / "hello.txt").read_text() == "hi\n"
        assert requests_holding(model, "Write hello", MYPY)
        assert "unknown command" not in term.screen()
    finally:
        term.close()


def test_mypy_output_pasted_unbracketed_while_phi_works_reaches_the_model_whole(model, project, phi_home, tmp_path):
    """``tmux paste-buffer`` without ``-p`` (a terminal without bracketed paste): each line arrives
    as typed; the ``/home/...`` lines are offered and go with the line after them (SPEC §15 CLI-10)."""
    whole = MYPY + "\nFound 1 error in 1 file"
    model.script("Check the build", *[looping_until("Found 1 error", "Saw your mypy output.")] * 400)
    model.slow("Check the build", chunk_size=200, delay=0.05)
    term = start(model, project, phi_home)
    try:
        term.wait_for_prompt()
        term.keys("Check the build", "Enter")
        term.wait_for("✓ glob")
        source = tmp_path / "paste.txt"
        source.write_text(whole + "\n")
        term.tmux("load-buffer", str(source))
        term.tmux("paste-buffer")
        term.wait_for("Saw your mypy output.")
        term.wait_for_prompt()
        assert requests_holding(model, "Check the build", whole)
    finally:
        term.close()


def test_a_paste_holding_its_own_end_mark_runs_none_of_its_lines(model, project, phi_home, tmp_path):
    """Text copied from a log that holds ``ESC[201~``: the lines after it are pasted text, not a typed
    ``/quit`` (SPEC §15 CLI-10)."""
    model.script("see this log line", Turn("A log line."))
    term = start(model, project, phi_home)
    try:
        term.wait_for_prompt()
        paste(term, "see this log line\x1b[201~\n/quit\n!touch pwned.txt", tmp_path)
        term.wait_for("!touch pwned.txt")
        term.keys("Enter")
        term.wait_for("A log line.")
        term.wait_for_prompt()
        assert "EXITED" not in term.screen() and not (project / "pwned.txt").exists()
        (request,) = requests_holding(model, "see this log line", "/quit")
        assert user_texts("anthropic", request) == ["see this log line\n/quit\n!touch pwned.txt\n"]
    finally:
        term.close()
