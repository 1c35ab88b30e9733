"""Running fixtures on a driver, one process per fixture or one persistent process (SPEC §10;
``suite/README.md`` §2 and ``suite/DRIVERS.md`` describe the protocol).

Protocol 1: the runner starts the driver, writes the fixture on stdin, closes stdin and reads
lines until the driver exits. Protocol 2 adds a handshake: a driver started with
``PHI_CONFORMANCE_PROTOCOL=2`` in its environment may write ``{"kind": "hello", "protocol": 2,
"persistent": true}`` as its first line; it then reads one fixture per stdin line and ends the
output of each with ``{"kind": "done", "id": ...}``. The first fixture of a run is always given
protocol-1 style (stdin closed after it), so a driver that does not announce anything runs exactly
as before; when that first output began with a persistent hello, every later fixture goes to
long-lived processes that are killed and replaced only on a timeout or a crash.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable

from ..json_values import is_object
from ..log import get_logger
from .process import (KEPT_OPEN, TIMEOUT, TOO_LARGE, TOO_LARGE_PROBLEM, DriverProcess, DriverStartError, RawRun,
                      split_command)

log = get_logger(__name__)

TIMED_OUT = "driver did not finish within"
#: how long a persistent driver may take to start and write its hello line (not counted against a fixture;
#: at most one start per CPU runs at a time, see Mode.starting)
STARTUP_S = 15.0
MODES = ("auto", "persistent", "per-fixture")


def fixture_payload(fixture: dict[str, Any]) -> str:
    """The fixture as one line of JSON (the runner's own ``_`` keys left out)."""
    return json.dumps({k: v for k, v in fixture.items() if not k.startswith("_")})


def line_kind(line: str) -> tuple[str | None, dict[str, Any] | None]:
    """The ``kind`` of a protocol line and the line itself, or ``(None, None)`` when it is not one."""
    if '"kind"' not in line:
        return None, None
    try:
        item = json.loads(line)
    except ValueError:
        return None, None
    if not is_object(item):
        return None, None
    kind = item.get("kind")
    return (kind, item) if isinstance(kind, str) else (None, None)


def strip_handshake(lines: list[str], fixture_id: str | None = None) -> tuple[list[str], dict[str, Any] | None]:
    """Take a leading ``hello`` line and a closing ``done`` line out of one fixture's output; with
    ``fixture_id``, only a ``done`` naming that fixture (any other is left in, and fails it)."""
    hello = None
    if lines:
        kind, item = line_kind(lines[0])
        if kind == "hello":
            hello, lines = item, lines[1:]
    if hello is not None and lines:
        kind, item = line_kind(lines[-1])
        if kind == "done" and (fixture_id is None or (item or {}).get("id") == fixture_id):
            lines = lines[:-1]
    return lines, hello


def announces_persistence(hello: dict[str, Any] | None) -> bool:
    if hello is None or hello.get("persistent") is not True:
        return False
    version = hello.get("protocol")
    return isinstance(version, int) and version >= 2


class Mode:
    """The protocol the driver speaks, shared by the workers of a run: forced by ``--mode``, or
    learnt from the first fixture's output (one worker probes; the others wait for its verdict)."""

    def __init__(self, mode: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown driver mode {mode!r}; one of {', '.join(MODES)}")
        self.forced = mode
        self.persistent: bool | None = {"auto": None, "persistent": True, "per-fixture": False}[mode]
        self.hello: dict[str, Any] | None = None
        self.error: str | None = None
        self.confirmed = False  # some process of this run has said a persistent hello
        self._probing = False
        self._lock = threading.Lock()
        # persistent processes are started (up to their hello) a few at a time: with many jobs on
        # few CPUs, starting them all at once let some miss STARTUP_S
        self.starting = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))
        self._decided = threading.Event()
        if self.persistent is not None:
            self._decided.set()

    def claim(self) -> bool | None:
        """True/False once the mode is known; None: the caller is the prober and must :meth:`decide`."""
        with self._lock:
            if self.persistent is None and not self._probing:
                self._probing = True
                return None
        self._decided.wait()
        if self.error is not None:
            raise DriverStartError(self.error)
        return bool(self.persistent)

    def decide(self, hello: dict[str, Any] | None, error: str | None = None) -> None:
        with self._lock:
            if self.persistent is None:
                self.persistent = self.confirmed = announces_persistence(hello)
            self.hello = self.hello or hello
            self.error = self.error or error
        self._decided.set()

    def fail(self, error: str) -> None:
        self.decide(None, error)

    def confirm(self) -> None:
        """A driver process said a persistent hello."""
        self.confirmed = True


class DriverSession:
    """One worker's driver: runs fixtures one at a time, reusing a persistent process when the
    driver offers one and replacing it after a timeout or a crash. :meth:`abandon` (Ctrl-C) ends
    whatever process the session runs, from another thread."""

    def __init__(self, command: str, mode: Mode) -> None:
        self.argv = split_command(command)
        self.mode = mode
        self.process: DriverProcess | None = None  # the persistent process
        self._running: DriverProcess | None = None  # the process of the fixture under way, either kind
        self._abandoned = False
        self._lock = threading.Lock()

    def _track(self, process: DriverProcess) -> None:
        """Every process this session starts; one started after :meth:`abandon` is ended at once."""
        with self._lock:
            self._running = process
            abandoned = self._abandoned
        if abandoned:
            process.kill()

    def abandon(self) -> None:
        """End the session's processes (the run was interrupted); any it starts later is ended too."""
        with self._lock:
            self._abandoned = True
            running = self._running
        if running is not None:
            running.kill()
        self.discard()

    def run(self, fixture: dict[str, Any], limit_s: float) -> RawRun:
        persistent = self.mode.claim()
        if persistent:
            return self._persistent(fixture, limit_s)
        probing = persistent is None
        try:
            raw = run_once(self.argv, fixture, limit_s, offer_protocol=self.mode.forced != "per-fixture",
                           started=self._track)
        except BaseException as error:  # no start, or a runner bug: never leave the other workers waiting
            self.mode.fail(str(error) or type(error).__name__)
            raise
        if probing:
            silent = (raw.failure is not None and raw.failure != TOO_LARGE_PROBLEM and not raw.lines
                      and raw.hello is None and not raw.timed_out)
            self.mode.decide(raw.hello, _not_started(fixture, raw) if silent else None)
            if silent:
                raise DriverStartError(_not_started(fixture, raw))
        return raw

    # ------------------------------------------------------------------ protocol 2
    def _start(self) -> tuple[DriverProcess, str | None]:
        """A new persistent process and, when it did not say hello, why."""
        with self.mode.starting:
            process = DriverProcess(self.argv)
            self._track(process)
            line = process.read_line(time.monotonic() + STARTUP_S)
        if isinstance(line, str) and announces_persistence(line_kind(line)[1]):
            self.mode.confirm()
            return process, None
        process.kill()
        seen = "no output" if not isinstance(line, str) else f"{line[:120]!r}"
        if not self.mode.confirmed:  # --mode persistent, and the driver never said hello
            error = (f"the driver did not announce persistent mode (its first line: {seen}); "
                     f"see DRIVERS.md, or run with --mode auto")
            self.mode.fail(error)
            raise DriverStartError(error)
        return process, f"protocol: the driver announced persistent mode before, but a new process wrote {seen}"

    def _persistent(self, fixture: dict[str, Any], limit_s: float) -> RawRun:
        if self.process is not None and self.process.pending():
            self.discard()  # it wrote after its last "done": start clean
        if self.process is not None and not self.process.alive:
            self.discard()  # it exited after its last "done": end what it left running in its group
        fresh = self.process is None
        if self.process is None:
            process, problem = self._start()
            if problem is not None:
                return RawRun(stderr=process.stderr_since(0, settle=0.5), failure=problem)
            self.process = process
        process = self.process
        mark = process.stderr_mark()
        deadline = time.monotonic() + limit_s
        process.new_budget()
        process.send(fixture_payload(fixture) + "\n")
        lines: list[str] = []
        while True:
            line = process.read_line(deadline)
            if line is TOO_LARGE:  # what it wrote is not judged: the limit says nothing of where it went wrong
                self.discard()
                return RawRun([], process.stderr_since(mark), TOO_LARGE_PROBLEM)
            if line is TIMEOUT:
                self.discard()
                return RawRun(lines, process.stderr_since(mark), _timed_out(process, limit_s), timed_out=True)
            if line is None:
                status = process.wait(time.monotonic() + 1.0)
                self.discard()
                if status == 0 and not lines and not fresh and not process.kept_open:
                    # it ended cleanly after its last "done" (its exit raced the sending of this
                    # fixture): not this fixture's fault, which gets a new process (once: that one is fresh)
                    log.info("persistent driver %s exited after its 'done'; starting another", process.proc.pid)
                    return self._persistent(fixture, limit_s)
                failure = f"driver exited (status {status}) before its 'done' line"
                if process.kept_open:
                    failure = f"{KEPT_OPEN} (exit status {status}, before its 'done' line); its process group was ended"
                return RawRun(lines, process.stderr_since(mark, settle=0.5), failure)
            assert isinstance(line, str)
            kind, item = line_kind(line)
            if kind == "done":
                return self._done(fixture, lines, item or {}, process.stderr_since(mark))
            lines.append(line)

    def _done(self, fixture: dict[str, Any], lines: list[str], done: dict[str, Any], stderr: str) -> RawRun:
        said = done.get("id")
        if said != fixture.get("id"):  # a done without id (or null) cannot show which output it closes
            self.discard()
            wanted = fixture.get("id")
            return RawRun(lines, stderr, f"protocol: 'done' names fixture {said!r}, not {wanted!r}"
                          if isinstance(said, str) else f"protocol: 'done' without the fixture's id {wanted!r}")
        return RawRun(lines, stderr)

    def strays(self) -> list[str]:
        """Lines the persistent driver wrote after its last ``done`` (a protocol error: output of a
        fixture must end with ``done``); the process is replaced when there are any."""
        found = self.process.pending() if self.process is not None else []
        if found:
            self.discard()
        return found

    def last_strays(self, grace: float = 1.0) -> list[str]:
        """:meth:`strays` once there are no fixtures left: stdin is closed and what the driver
        writes until its output ends (at most ``grace`` seconds) is read, so lines written just
        after the last ``done`` are not lost with the process."""
        process = self.process
        if process is None:
            return []
        process.close_input()
        found: list[str] = []
        deadline = time.monotonic() + grace
        while isinstance(line := process.read_line(deadline), str):
            found.append(line)
        if found:
            self.discard()
        return found

    def discard(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    def close(self) -> None:
        if self.process is not None:
            self.process.finish()
            self.process = None


def run_once(argv: list[str], fixture: dict[str, Any], limit_s: float, offer_protocol: bool = True,
             started: Callable[[DriverProcess], None] | None = None) -> RawRun:
    """Protocol 1: a process of its own for ``fixture``, stdin closed after it (``started`` is
    told of the process). A process the driver left running is ended with it; one that kept the
    output open after the driver exited fails the fixture (:data:`.process.KEPT_OPEN`)."""
    process = DriverProcess(argv, offer_protocol)
    if started is not None:
        started(process)
    deadline = time.monotonic() + limit_s
    process.send(fixture_payload(fixture) + "\n", close=True)
    lines: list[str] = []
    while True:
        line = process.read_line(deadline)
        if line is TOO_LARGE:
            process.kill()
            return RawRun([], process.stderr_since(0), TOO_LARGE_PROBLEM)
        if line is TIMEOUT:
            process.kill()
            return RawRun(strip_handshake(lines)[0], process.stderr_since(0), _timed_out(process, limit_s),
                          timed_out=True)
        if line is None:
            break
        assert isinstance(line, str)
        lines.append(line)
    status = process.wait(deadline)
    if status is None:
        process.kill()
        return RawRun(strip_handshake(lines)[0], process.stderr_since(0), f"{TIMED_OUT} {limit_s:g}s",
                      timed_out=True)
    process.kill_leftovers()
    kept, hello = strip_handshake(lines, fixture.get("id"))
    failure = None if status == 0 else f"driver exited with status {status}"
    if process.kept_open:
        failure = f"{KEPT_OPEN} (exit status {status}); its process group was ended"
    return RawRun(kept, process.stderr_since(0, settle=1.0), failure, hello=hello)


def _timed_out(process: DriverProcess, limit_s: float) -> str:
    if process.exited and not process.kept_open:  # its group was empty: the output's holder is outside it
        return f"{TIMED_OUT} {limit_s:g}s: the driver exited, but a process outside its group kept its output open"
    return f"{TIMED_OUT} {limit_s:g}s"


def _not_started(fixture: dict[str, Any], raw: RawRun) -> str:
    tail = "\n".join(raw.stderr.strip().splitlines()[-8:])
    return (f"the driver wrote nothing and failed on its first fixture ({fixture.get('id')}): {raw.failure}"
            + (f"\n{tail}" if tail else ""))


__all__ = ["MODES", "STARTUP_S", "TIMED_OUT", "DriverSession", "Mode", "announces_persistence", "fixture_payload",
           "line_kind", "run_once", "strip_handshake"]
