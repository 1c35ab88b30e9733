"""Issue 35 item 5 (attack): with the session restored behind the prompt, a ``--resume ID`` whose
file is missing, empty or garbled still stops ``phi`` before the prompt (exit 2, one line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.terminal_helpers import REPO


@pytest.mark.parametrize("content", [None, b"", b"\x00\x00garbage\n", b"not json at all\n", "fifo"])
def test_an_unreadable_session_stops_phi_before_the_prompt(tmp_path: Path, content: bytes | str | None) -> None:
    home = tmp_path / "home"
    sessions = home / "sessions"
    sessions.mkdir(parents=True)
    session_id = "0b6f7c52-4a1e-4d7e-9a53-5f2f1d9e8c11"
    if content == "fifo":  # opening it to read would wait for a writer that never comes
        os.mkfifo(sessions / f"{session_id}.jsonl")
    elif isinstance(content, bytes):
        (sessions / f"{session_id}.jsonl").write_bytes(content)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PHI_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "phi.cli", "--offline", "--resume", session_id], cwd=tmp_path,
                          env=env, input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"no readable session {session_id}" in done.stderr
    assert "›" not in done.stdout  # no prompt was shown


def test_a_session_that_fails_behind_the_prompt_leaves_the_terminal_as_it_was(tmp_path: Path) -> None:
    """A session file whose first line is fine but whose rest is garbled passes the cheap check before
    the prompt and fails as it is restored behind it: phi exits 2 with the reason, and switches the
    terminal's bracketed paste off again on the way out."""
    from cli.terminal_helpers import PtyPhi

    home = tmp_path / "home"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PHI_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "phi.cli", "--offline", "-p", "first question"], cwd=tmp_path, env=env,
                   capture_output=True, check=True, timeout=60)
    stored = next((home / "sessions").glob("*.jsonl"))
    with open(stored, "a", encoding="utf-8") as garbled:
        garbled.write('{"garbage": \n\x00\x00{{{\n')
    phi = PtyPhi(["--offline", "-c"], tmp_path, {"PHI_HOME": str(home)})
    try:
        phi.prompt()
        phi.send_line("second")
        assert phi.proc.wait(60) == 2
        phi.expect("not sent: second")
        raw = phi.raw
        assert raw.rfind(b"\x1b[?2004l") > raw.rfind(b"\x1b[?2004h")  # bracketed paste is off at the end
    finally:
        phi.close()
