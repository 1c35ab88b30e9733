"""``phi --json`` without ``-p``: one long-lived session driven by another program (SPEC §15
CLI-6).

stdin carries commands, one JSON object per line (a line that is not JSON is a prompt):

* ``{"type": "prompt", "text": "..."}`` — start a run; while one runs it is queued as a follow-up;
* ``{"type": "steer", "text": "..."}`` — steering for the running run (or the next one);
* ``{"type": "abort"}`` — stop the running run; the session goes on.

stdout carries every event of every run as one JSON line (the shapes of :mod:`phi.cli.batch`), and
a command that cannot be carried out is answered with ``{"type": "CommandError", "message": ...}``
on stdout too, so a reader needs only one stream. At the end of stdin phi waits for the running run,
saves the session and exits: 0 when the last run completed, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

from ..json_values import is_object
from ..log import get_logger
from .batch import (
    EXIT_FAILED,
    EXIT_OK,
    SUCCESS_OUTCOMES,
    JsonLines,
    Unattended,
    interrupt_turn,
    sigterm_as_interrupt,
    unattended_session,
)
from .options import CliOptions
from .sessions import CliSessions

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session, SessionStream, SubmitResult


log = get_logger(__name__)


def parse_command(line: str) -> dict[str, Any]:
    """A command object from one input line (see the module docstring)."""
    try:
        command = json.loads(line)
    except ValueError:
        return {"type": "prompt", "text": line}
    if not is_object(command):
        return {"type": "prompt", "text": line}
    return command


class JsonSession:
    """The session and its one running input (see the module docstring). A watcher thread per
    input sees it end: an overflow is compacted and run once more, and prompts queued behind an
    input that failed (a failed run takes no follow-up) are started then, without waiting for the
    next command."""

    def __init__(self, unattended: Unattended, lines: JsonLines) -> None:
        self.unattended = unattended
        self.lines = lines
        self.stream: SessionStream | None = None  # the running input's (None: idle)
        self.text = ""  # the running input's
        self.outcome = ""
        self.stopping = False  # Ctrl+C or SIGTERM: start nothing more
        self._lock = threading.Condition()

    @property
    def session(self) -> Session:
        return self.unattended.session

    def error(self, message: str) -> None:
        self.lines.write({"type": "CommandError", "message": message})

    def running(self) -> bool:
        return self.stream is not None

    def handle(self, command: dict[str, Any]) -> None:
        kind, text = command.get("type"), command.get("text")
        if kind == "abort":
            interrupt_turn(self.session)
            return
        if kind not in ("prompt", "steer", "follow_up"):
            self.error(f"unknown command type {kind!r}: use prompt, steer, follow_up or abort")
            return
        if not isinstance(text, str) or not text.strip():
            self.error(f"a {kind} command needs a non-empty text")
            return
        if kind == "steer":
            self.unattended.steer(text)
            return
        with self._lock:
            if self.stopping:
                return
            if self.stream is not None:  # taken by the run when it ends well, else by its watcher
                self.unattended.follow_up(text)
                return
            self._start(text)

    def _start(self, text: str) -> None:
        """Submit ``text`` and watch it (the lock is held)."""
        self.text = text
        self._watch(self.unattended.submit(text))

    def _watch(self, stream: SessionStream) -> None:
        self.stream = stream
        threading.Thread(target=self._ended, args=(stream,), name="phi-json-input", daemon=True).start()

    def _ended(self, stream: SessionStream) -> None:
        try:
            result: SubmitResult | None = stream.result()
        except Exception:  # a run that raised (a listener failing): said, and the session goes on
            log.warning("the input's run raised", exc_info=True)
            result = None
        with self._lock:
            try:
                self.outcome = result.outcome if result is not None else "error"
                if self.lines.closed:
                    self.stopping = True  # nobody reads the events: start nothing more
                if self._next(result):
                    return
            except Exception:  # starting the next input failed: the session cannot go on
                log.warning("could not start the next input", exc_info=True)
                self.stopping = True
            self.stream = None
            self._lock.notify_all()

    def _next(self, result: SubmitResult | None) -> bool:
        """Start what follows an input that ended (lock held): its second try after an overflow,
        else the prompts queued behind it. False when nothing follows."""
        if self.stopping:
            return False
        again = self.unattended.after(self.text, result) if result is not None else None
        if again is not None:
            self.text = self.unattended.retry_text
            self._watch(again)
            return True
        queued = self.unattended.take_queued_input()
        if not queued:
            return False
        self._start(queued[0])
        for waiting in queued[1:]:
            self.unattended.follow_up(waiting)
        return True

    def finish(self, timeout: float | None = None) -> None:
        """Wait until no input runs or waits (see the class docstring)."""
        with self._lock:
            self._lock.wait_for(lambda: self.stream is None, timeout)

    def stop(self, timeout: float) -> None:
        """Ctrl+C or SIGTERM: abort the running input, start nothing more, wait for its end."""
        with self._lock:
            self.stopping = True
        interrupt_turn(self.session)
        self.finish(timeout)


def run_json_session(options: CliOptions, profile: ProviderProfile, sessions: CliSessions,
                     stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    """Serve commands from ``stdin`` until it ends (see the module docstring)."""
    # new names: sys.stdin is typed "TextIO | Any", so `stdin = stdin or sys.stdin` would stay "TextIO | None"
    source: TextIO = stdin or sys.stdin
    stdout: TextIO = out or sys.stdout
    unattended = unattended_session(options, profile, sessions)
    driver: JsonSession | None = None

    def reader_gone() -> None:  # stop the running input and start no other
        if driver is not None:
            driver.stopping = True
        unattended.abort()

    lines = JsonLines(stdout, on_closed=reader_gone)
    unattended.subscribe(lines)
    driver = JsonSession(unattended, lines)
    try:
        with sigterm_as_interrupt():
            for line in source:
                if line.strip():
                    driver.handle(parse_command(line.strip()))
                if lines.closed:
                    break
            driver.finish()
    except KeyboardInterrupt:  # Ctrl+C or SIGTERM: stop the run, let its AgentEnd out, save (below)
        driver.stop(timeout=10)
        raise
    finally:
        unattended.close()
        sessions.save()
    return EXIT_OK if driver.outcome in SUCCESS_OUTCOMES and not lines.closed else EXIT_FAILED


__all__ = ["run_json_session", "parse_command", "JsonSession"]
