"""The interactive ``phi`` in a real terminal emulator, tmux (send-keys, capture-pane): what is on
the screen, after the terminal has interpreted every escape — a running call's line rewritten in
place into one finished line, the diff (once: the change approved), the status line; Ctrl+C twice
at the prompt exits."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from cli.terminal_helpers import REPO

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, cwd, env: dict[str, str], args: str = "--offline") -> None:
        self.socket = f"phi-test-{os.getpid()}-{time.monotonic_ns()}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = f"env {exports} PYTHONPATH={REPO} {sys.executable} -m phi.cli {args}; echo EXITED $?; sleep 30"
        self.tmux("new-session", "-d", "-x", "120", "-y", "45", "-c", str(cwd), command)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20,
                              check=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def history(self) -> str:
        """The screen with everything scrolled off it (a long reply pushes earlier rows away)."""
        return self.tmux("capture-pane", "-p", "-S", "-")

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not on the screen:\n{self.screen()}")

    def wait_for_prompt(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = [row for row in self.screen().splitlines() if row.strip()]
            if rows and rows[-1] == "›":  # (capture-pane drops the space after it)
                return
            time.sleep(0.05)
        raise AssertionError(f"no prompt on the screen:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=20)


def test_the_screen_after_an_approved_write_and_ctrl_c_twice(project, phi_home):
    term = Tmux(project, {"PHI_HOME": str(phi_home)})
    try:
        term.wait_for_prompt()
        term.keys("write hello.txt: hi there", "Enter")
        term.wait_for("[a]lways for this session:")
        term.keys("y")  # one key answers
        screen = term.wait_for("context [")
        rows = screen.splitlines()
        call_rows = [row for row in rows if row.startswith("[1]")]
        assert len(call_rows) == 1, screen
        assert call_rows[0].startswith("[1] ✓ write_file(file_path=hello.txt, content=hi there)"), screen
        start = rows.index(call_rows[0])
        # the diff, shown before the question, is the change made: it is not shown a second time
        diff = rows.index("--- /dev/null")
        assert rows[diff:diff + 4] == ["--- /dev/null", "+++ b/hello.txt", "@@ -0,0 +1 @@", "+hi there"], screen
        assert diff < rows.index(next(row for row in rows if row.startswith("? allow write_file"))) < start, screen
        assert rows.count("+++ b/hello.txt") == 1, screen
        assert rows[start + 1].startswith("I am phi's offline model"), screen
        assert any(row.startswith("offline-scripted · in ") for row in rows), screen
        assert (project / "hello.txt").read_text() == "hi there\n"
        term.wait_for_prompt()
        term.keys("C-c")
        term.wait_for("Ctrl+C again to exit")
        term.keys("C-c")
        assert "EXITED 0" in term.wait_for("EXITED")
    finally:
        term.close()
