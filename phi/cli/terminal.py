"""Reading the person's input in the interactive ``phi`` (SPEC §15 CLI-3; seed 002 §16.4).

At the prompt a line is read blocking, with ``readline`` line editing and a history file when stdin
is a terminal. While a run streams, the main thread polls instead, so it can also ask approval
questions and notice Ctrl+C; a line typed then is steering, or — when the run ended meanwhile —
the next input (:meth:`Terminal.unread`).
"""

from __future__ import annotations

import os
import re
import select
import sys
import threading
from typing import TextIO

from ..log import get_logger

log = get_logger(__name__)

HISTORY_LINES = 1000


class Terminal:
    """Reading lines: blocking at the prompt, polled while a run streams (see the module docstring)."""

    def __init__(self, stdin: TextIO, out: TextIO, history: str | None = None) -> None:
        self.stdin = stdin
        self.out = out
        try:
            self.fd: int | None = stdin.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None
        self.tty = self.fd is not None and os.isatty(self.fd)
        self._pending = b""
        self.history = history if self.tty else None  # readline's history file, kept between runs
        if self.history is not None:
            import readline  # line editing and history for input()

            readline.set_history_length(HISTORY_LINES)
            try:
                readline.read_history_file(self.history)
            except OSError:
                pass  # no history yet

    def save_history(self) -> None:
        if self.history is None:
            return
        import readline

        try:
            os.makedirs(os.path.dirname(self.history) or ".", exist_ok=True)
            readline.write_history_file(self.history)
        except OSError as error:
            log.warning("could not save the input history to %s: %s", self.history, error)

    def unread(self, line: str) -> None:
        """Give ``line`` back: the next :meth:`prompt` returns it."""
        self._pending = line.encode("utf-8") + b"\n" + self._pending

    def prompt(self, text: str) -> str:
        """One input; raises EOFError (Ctrl+D) and KeyboardInterrupt (Ctrl+C). A line typed while the
        last run ended (already read from the terminal) comes first."""
        if b"\n" in self._pending:
            typed, _, self._pending = self._pending.partition(b"\n")
            line = typed.decode("utf-8", "replace")
            self.out.write(text + line + "\n")
            self.out.flush()
            return line
        if self.stdin is sys.stdin:
            if self.tty:  # readline must not count escape sequences as printed characters
                text = re.sub(r"(\x1b\[[0-9;]*m)", "\x01\\1\x02", text)
            return input(text)
        self.out.write(text)
        self.out.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def poll_line(self, timeout: float) -> str | None:
        """A line typed while a run streams, if one is complete within ``timeout`` (terminals only)."""
        if not self.tty or self.fd is None:
            threading.Event().wait(timeout)
            return None
        if b"\n" not in self._pending:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if ready:
                chunk = os.read(self.fd, 4096)
                self._pending += chunk if chunk else b"\n"
        if b"\n" not in self._pending:
            return None
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode("utf-8", "replace")

    def read_answer(self, question: str) -> str:
        self.out.write(question)
        self.out.flush()
        if not self.tty:
            return self.stdin.readline().strip()
        while True:
            line = self.poll_line(0.2)
            if line is not None:
                return line.strip()


__all__ = ["Terminal", "HISTORY_LINES"]
