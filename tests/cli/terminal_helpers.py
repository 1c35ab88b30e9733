"""Driving the ``phi`` command in a pseudo-terminal, as a person would (issue 15 acceptance).

:class:`PtyPhi` starts ``python -m phi.cli ARGS`` with a pty as its stdin/stdout/stderr (so it sees
a terminal: readline, colours, Ctrl+C from the line discipline), reads everything it writes on a
thread, and offers ``expect`` (wait until the screen text matches; generous timeouts, only to catch
hangs), ``send_line``, ``ctrl_c`` and ``close``. ANSI escapes are removed from :attr:`text`.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|[\x01\x02]")
HANG_S = 30.0


def _controlling_tty() -> None:
    """In the child: a new session whose controlling terminal is the pty, so Ctrl+C is a SIGINT."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyPhi:
    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        full_env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm", "COLUMNS": "200", "LINES": "50",
                    "PYTHONUNBUFFERED": "1", **env}
        self.proc = subprocess.Popen([sys.executable, "-m", "phi.cli", *args], stdin=slave, stdout=slave,
                                     stderr=slave, cwd=cwd, env=full_env, preexec_fn=_controlling_tty,
                                     close_fds=True)
        os.close(slave)
        self.raw = b""
        self.stamps: list[tuple[float, int]] = []  # (time, len(raw)) after each read
        self._lock = threading.Lock()
        self._mark = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.raw += chunk
                self.stamps.append((time.monotonic(), len(self.raw)))

    @property
    def text(self) -> str:
        with self._lock:
            raw = self.raw
        return ANSI.sub("", raw.decode("utf-8", "replace")).replace("\r", "")

    def expect(self, pattern: str, timeout: float = HANG_S, since_mark: bool = True) -> re.Match[str]:
        """Wait until ``pattern`` (a regex) appears in the output (after the last :meth:`mark`)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text
            found = re.compile(pattern, re.S).search(text, self._mark if since_mark else 0)
            if found:
                return found
            if time.monotonic() > deadline or self.proc.poll() is not None and not self._grows():
                raise AssertionError(f"{pattern!r} did not appear; output so far:\n{text[-3000:]}")
            time.sleep(0.02)

    def _grows(self) -> bool:
        before = len(self.raw)
        time.sleep(0.1)
        return len(self.raw) != before

    def mark(self) -> None:
        """Later :meth:`expect` calls look only at output written from now on."""
        self._mark = len(self.text)

    def send(self, data: str) -> None:
        os.write(self.master, data.encode("utf-8"))

    def send_line(self, line: str) -> None:
        self.mark()
        self.send(line + "\r")

    def exchange(self, line: str, *patterns: str) -> None:
        """Send ``line``, wait for each of ``patterns`` in turn, then for the prompt."""
        self.send_line(line)
        for pattern in patterns:
            self.expect(pattern)
        self.prompt()

    def interrupt(self) -> float:
        """Ctrl+C during a run: wait until the abort is reported and the prompt is back; returns the
        seconds from the key to the output that brought the prompt."""
        self.mark()
        sent = time.monotonic()
        self.ctrl_c()
        self.expect(r"aborted — the conversation is kept")
        self.expect(r"› $")
        with self._lock:
            return self.stamps[-1][0] - sent

    def ctrl_c(self) -> None:
        self.send("\x03")

    def prompt(self, timeout: float = HANG_S) -> None:
        """Wait for the input prompt."""
        self.expect(r"(PLAN )?› $", timeout)

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                # a line sent while a run streams would be steering; the prompt may show a line put back
                if not re.search(r"› [^\n]*$", self.text):
                    try:
                        self.expect(r"› [^\n]*$", 10, since_mark=False)
                    except AssertionError:
                        pass
                self.send("\x15/quit\r")  # (Ctrl+U first: it empties such a line)
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self.master >= 0:  # once: the number may belong to another pty afterwards
            os.close(self.master)
            self.master = -1
        return self.proc.returncode
