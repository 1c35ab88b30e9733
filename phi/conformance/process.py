"""One driver process of the conformance runner (SPEC §10; ``suite/README.md`` §2, ``suite/DRIVERS.md``).

A :class:`DriverProcess` starts the driver command with :data:`PROTOCOL_ENV` set (telling the driver
the runner speaks protocol 2), feeds its stdin from a writer thread (a driver that never reads
cannot block the runner) and reads stdout line by line and stderr on two reader threads, so every
wait has a deadline. The driver leads a process group of its own (``start_new_session``): every
kill, and the clean-up after it exited, ends the whole group, so nothing it started outlives it.

A driver can exit while its stdout stays open, because a process it started holds the pipe (a
``sleep 1000 &`` of a shell script): the end of output never comes. A third thread waits for the
driver's exit; once it has exited and its output has been quiet for :data:`EXIT_GRACE_S`, the
group is ended, which closes the pipe, and :attr:`DriverProcess.kept_open` says why the output
ended (:data:`KEPT_OPEN`).
"""

from __future__ import annotations

import io
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..log import get_logger

log = get_logger(__name__)

#: The environment variable through which the runner offers protocol 2 (hello/done lines, persistent mode).
PROTOCOL_ENV = "PHI_CONFORMANCE_PROTOCOL"
PROTOCOL = 2
_POSIX = os.name == "posix"
#: after the driver exited, how long its output may stay open without a line before its group is ended
EXIT_GRACE_S = 1.0
#: why a fixture's output ended when a process the driver started held it open after the driver exited
KEPT_OPEN = "driver exited, a child kept its output open"


class DriverStartError(Exception):
    """The driver command could not be started at all (not found, not executable, bad quoting)."""


class _Timeout:
    """What :meth:`DriverProcess.read_line` returns when the deadline passed first."""


TIMEOUT = _Timeout()


class _Exited:
    """Put on the line queue when the driver process has exited (its last lines may still follow)."""


_EXITED = _Exited()


@dataclass
class RawRun:
    """What a driver wrote for one fixture, before it is compared (the ``hello``/``done`` lines
    of protocol 2 already taken out)."""

    lines: list[str] = field(default_factory=list)
    stderr: str = ""
    failure: str | None = None
    timed_out: bool = False
    hello: dict[str, Any] | None = None


def _exact_stdout(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """``proc`` with its stdout read as the protocol has it (README §2): lines end at ``\n`` only,
    so a bare ``\r`` inside a line does not split it, and bytes that are not UTF-8 are kept as
    lone surrogates (``surrogateescape``) for :mod:`.lines` to refuse instead of being replaced."""
    assert isinstance(proc.stdout, io.TextIOWrapper)
    proc.stdout = io.TextIOWrapper(proc.stdout.detach(), encoding="utf-8", errors="surrogateescape", newline="\n")
    return proc


def split_command(command: str) -> list[str]:
    """The driver command as an argument list (POSIX shell quoting)."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise DriverStartError(f"cannot parse the driver command {command!r}: {error}") from error
    if not argv:
        raise DriverStartError("the driver command is empty")
    return argv


class DriverProcess:
    """A running driver: send text, read stdout lines with a deadline, collect stderr, kill."""

    def __init__(self, argv: list[str], offer_protocol: bool = True) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop(PROTOCOL_ENV, None)
        if offer_protocol:
            env[PROTOCOL_ENV] = str(PROTOCOL)
        try:
            self.proc = _exact_stdout(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                       stderr=subprocess.PIPE, text=True, encoding="utf-8",
                                                       errors="replace", env=env, start_new_session=_POSIX))
        except OSError as error:
            raise DriverStartError(f"cannot start the driver {shlex.join(argv)!r}: {error}") from error
        self.lines: queue.Queue[str | None | _Exited] = queue.Queue()
        self.exited = False  # read_line has seen the driver's exit
        self.kept_open = False  # ... and ended its group because a process of it held the output open
        self._quiet_since = 0.0
        self._stderr: list[str] = []
        self._stderr_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True, name="driver-stdout"),
                         threading.Thread(target=self._read_stderr, daemon=True, name="driver-stderr")]
        for reader in self._readers:
            reader.start()
        threading.Thread(target=self._wait_for_exit, daemon=True, name="driver-exit").start()

    # ------------------------------------------------------------------ reading
    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self.lines.put(line.rstrip("\r\n"))
            self.proc.stdout.close()
        except (OSError, ValueError):  # the pipe was closed under us by kill()
            pass
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        try:
            for line in self.proc.stderr:
                with self._stderr_lock:
                    self._stderr.append(line)
            self.proc.stderr.close()
        except (OSError, ValueError):
            pass

    def _wait_for_exit(self) -> None:
        self.proc.wait()
        self.lines.put(_EXITED)

    def read_line(self, deadline: float) -> str | None | _Timeout:
        """The next stdout line; None at end of output; :data:`TIMEOUT` once ``deadline``
        (a :func:`time.monotonic` value) has passed. When the driver has exited and its output
        stays open and quiet for :data:`EXIT_GRACE_S`, its process group is ended (then
        :attr:`kept_open` is set) and the lines it wrote before still come, then None."""
        while True:
            now = time.monotonic()
            until = deadline
            if self.exited and not self.kept_open:
                until = min(deadline, self._quiet_since + EXIT_GRACE_S)
            try:
                item = self.lines.get(timeout=until - now) if until > now else self.lines.get_nowait()
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return TIMEOUT
                self._end_held_output()
                continue
            if isinstance(item, _Exited):
                self.exited, self._quiet_since = True, time.monotonic()
                continue
            self._quiet_since = time.monotonic()
            return item

    def _end_held_output(self) -> None:
        """The driver exited and its output stayed open and quiet: a process of its group holds it
        (when the group is empty, someone outside it does, and only the deadline ends the wait)."""
        self.kept_open = self._group_alive()
        if self.kept_open:
            log.info("driver %s exited, a process of its group keeps its output open: ending the group", self.proc.pid)
            self._kill_group()
        else:
            self._quiet_since = float("inf")

    def _group_alive(self) -> bool:
        if not _POSIX:
            return False
        try:
            os.killpg(self.proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _kill_group(self) -> None:
        """SIGKILL to the driver's process group — also after the driver itself exited, when only
        what it started is left (a no-op when nothing is)."""
        try:
            if _POSIX:
                os.killpg(self.proc.pid, signal.SIGKILL)
            elif self.proc.poll() is None:
                self.proc.kill()
        except (ProcessLookupError, PermissionError):
            pass

    def pending(self) -> list[str]:
        """Lines already written and not yet read (without waiting)."""
        found: list[str] = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return found
            if isinstance(line, _Exited):
                self.exited, self._quiet_since = True, time.monotonic()
                continue
            if line is None:
                self.lines.put(None)
                return found
            found.append(line)

    def stderr_mark(self) -> int:
        with self._stderr_lock:
            return len(self._stderr)

    def stderr_since(self, mark: int = 0, settle: float = 0.0) -> str:
        """stderr written since :meth:`stderr_mark` returned ``mark``; ``settle`` seconds are
        given to the reader to catch up when the process has ended."""
        if settle and self.proc.poll() is not None:
            self._readers[1].join(settle)
        with self._stderr_lock:
            return "".join(self._stderr[mark:])

    # ------------------------------------------------------------------ writing and ending
    def send(self, text: str, close: bool = False) -> None:
        """Write ``text`` on the driver's stdin (then close it when ``close``), on a thread of its
        own: a driver that does not read yet cannot block the runner."""
        threading.Thread(target=self._write, args=(text, close), daemon=True, name="driver-stdin").start()

    def _write(self, text: str, close: bool) -> None:
        assert self.proc.stdin is not None
        with self._write_lock:
            try:
                if text:
                    self.proc.stdin.write(text)
                    self.proc.stdin.flush()
                if close:
                    self.proc.stdin.close()
            except (OSError, ValueError):  # the driver exited or was killed; its output tells why
                pass

    def close_input(self) -> None:
        self.send("", close=True)

    def wait(self, deadline: float) -> int | None:
        """The exit status, or None when the process is still running at ``deadline``."""
        try:
            return self.proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            return None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """End the driver and everything in its process group (whether the driver is still running
        or not: what it started may be)."""
        self._kill_group()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("driver process %s did not end after SIGKILL", self.proc.pid)
        self._close_stdin()

    def _close_stdin(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except (OSError, ValueError):  # a writer thread saw the pipe break; nothing left to do
            pass

    def kill_leftovers(self) -> None:
        """After the driver exited: end what it left running in its process group."""
        self._close_stdin()
        self._kill_group()

    def finish(self, grace: float = 1.0) -> None:
        """Close stdin (a persistent driver then exits) and kill the driver if it has not ended
        within ``grace`` seconds."""
        self.close_input()
        if self.wait(time.monotonic() + grace) is None:
            self.kill()
        else:
            self.kill_leftovers()


__all__ = ["EXIT_GRACE_S", "KEPT_OPEN", "PROTOCOL", "PROTOCOL_ENV", "TIMEOUT", "DriverProcess", "DriverStartError",
           "RawRun", "split_command"]
