"""Running a command and everything it starts (SPEC §9.1 "Command execution").

:func:`run_process` starts ``argv`` in a new session (so it leads a fresh process group), captures
stdout and stderr separately through one ``selectors`` loop (no deadlock however much either stream
produces), keeps at most ``max_capture_bytes`` of the head and of the tail of each stream in memory
(the middle is counted — bytes and newlines — and becomes an :class:`~phi.tools.truncation.Omitted`
hole), and stops the command on timeout or cancellation.

On Linux the command runs under :mod:`phi.tools._reaper`, a small child subreaper: processes the
command detaches with ``setsid``, ``nohup ... &`` or ``start_new_session=True`` cannot leave its
tree, and on timeout or cancellation all of them get SIGTERM, then after
:data:`KILL_GRACE_SECONDS` SIGKILL. Elsewhere (macOS) the command's process group gets the same
treatment, which misses processes that started a new session.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..cancel import CancellationToken
from .truncation import Omitted, Part, render

log = logging.getLogger("phi.tools.process")

KILL_GRACE_SECONDS = 2.0
# The parent's last resort (SIGKILL to the process group) if the reaper itself does not finish.
_REAPER_MARGIN_SECONDS = 2.0
_POLL_SECONDS = 0.05
_READ_CHUNK = 65536
# How long to keep reading after the main process exited while a background child still holds the
# pipes open. Output written later than this is not captured; the background process keeps running.
_DRAIN_AFTER_EXIT_SECONDS = 0.5
_REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_reaper.py")


def reaper_available() -> bool:
    """Whether commands run under the subreaper (Linux with /proc)."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self") and bool(sys.executable)


class _Capture:
    """Bounded capture of one stream: the first ``limit`` bytes, the last ``limit`` bytes, and the
    size (bytes and newlines) of what was dropped between them."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0
        self.dropped_bytes = 0
        self.dropped_lines = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.limit:
            self._drop(self.tail.popleft())

    def _drop(self, data: bytes) -> None:
        self.tail_size -= len(data)
        self.dropped_bytes += len(data)
        self.dropped_lines += data.count(b"\n")

    def parts(self) -> list[Part]:
        """The captured text (invalid UTF-8 replaced) with a hole where bytes were dropped."""
        tail = b"".join(self.tail)
        dropped, lines = self.dropped_bytes, self.dropped_lines
        if len(tail) > self.limit:
            cut = len(tail) - self.limit
            dropped, lines = dropped + cut, lines + tail.count(b"\n", 0, cut)
            tail = tail[cut:]
        if not dropped:
            return [(bytes(self.head) + tail).decode("utf-8", errors="replace")]
        return [bytes(self.head).decode("utf-8", errors="replace"), Omitted(dropped, lines),
                tail.decode("utf-8", errors="replace")]


@dataclass
class ProcessOutcome:
    stdout_parts: list[Part]
    stderr_parts: list[Part]
    exit_code: int
    timed_out: bool
    cancelled: bool
    duration_ms: int
    stdout_bytes: int
    stderr_bytes: int

    @property
    def stdout(self) -> str:
        return render(self.stdout_parts)

    @property
    def stderr(self) -> str:
        return render(self.stderr_parts)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a member changed user; treat as alive
        return True
    return True


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class _Runner:
    """One execution: the select loop plus the termination state machine."""

    def __init__(self, proc: subprocess.Popen, capture_limit: int,
                 on_output: Callable[[str, bytes], None] | None, reaper: bool):
        self.proc = proc
        self.pgid = proc.pid  # start_new_session makes the child its own group leader
        self.reaper = reaper
        self.out = _Capture(capture_limit)
        self.err = _Capture(capture_limit)
        self.on_output = on_output
        self.selector = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        self.selector.register(proc.stdout, selectors.EVENT_READ, ("stdout", self.out))
        self.selector.register(proc.stderr, selectors.EVENT_READ, ("stderr", self.err))
        self.term_sent_at: float | None = None
        self.killed = False
        self.exited_at: float | None = None

    def _read_ready(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            name, capture = key.data
            try:
                data = os.read(key.fd, _READ_CHUNK)
            except OSError:
                data = b""
            if not data:
                self.selector.unregister(key.fileobj)
                continue
            capture.add(data)
            if self.on_output is not None:
                try:
                    self.on_output(name, data)
                except Exception:  # a failing observer must not break the capture
                    log.exception("on_output callback failed")

    def terminate(self) -> None:
        if self.term_sent_at is None:
            self.term_sent_at = time.monotonic()
            if self.reaper:  # the reaper signals the whole tree, then escalates by itself
                try:
                    self.proc.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
            else:
                _signal_group(self.pgid, signal.SIGTERM)

    def _escalate(self, now: float) -> None:
        if self.term_sent_at is None or self.killed:
            return
        grace = KILL_GRACE_SECONDS + (_REAPER_MARGIN_SECONDS if self.reaper else 0.0)
        exited = self.proc.poll() is not None
        if now - self.term_sent_at >= grace or (exited and not _group_alive(self.pgid)):
            if _group_alive(self.pgid):
                log.debug("process group %d survived SIGTERM; sending SIGKILL", self.pgid)
                _signal_group(self.pgid, signal.SIGKILL)
            self.killed = True
        elif exited and self.reaper:  # the reaper is done: whatever is left of the group goes now
            _signal_group(self.pgid, signal.SIGKILL)
            self.killed = True

    def loop(self, deadline: float | None, cancel: CancellationToken | None) -> tuple[bool, bool]:
        timed_out = cancelled = False
        while True:
            now = time.monotonic()
            if self.term_sent_at is None:
                if cancel is not None and cancel.is_cancelled():
                    cancelled = True
                    self.terminate()
                elif deadline is not None and now >= deadline:
                    timed_out = True
                    self.terminate()
            self._escalate(now)
            if self.proc.poll() is not None and self.exited_at is None:
                self.exited_at = now
            if not self.selector.get_map():
                if self.proc.poll() is not None:
                    break
                time.sleep(_POLL_SECONDS / 5)
                continue
            if self.exited_at is not None and now - self.exited_at > _DRAIN_AFTER_EXIT_SECONDS and (
                self.term_sent_at is None or self.killed
            ):
                break
            self._read_ready(_POLL_SECONDS)
        self.selector.close()
        return timed_out, cancelled


def _exit_code(returncode: int | None) -> int:
    if returncode is None:
        return -1
    if returncode < 0:  # killed by a signal: report it the way a shell would
        return 128 - returncode
    return returncode


def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None,
    timeout_ms: int | None,
    cancel: CancellationToken | None = None,
    max_capture_bytes: int = 1 << 20,
    on_output: Callable[[str, bytes], None] | None = None,
    kill_descendants: bool = True,
) -> ProcessOutcome:
    """Run ``argv`` and wait for it, its timeout, or cancellation. Never raises on a bad exit code.

    With ``kill_descendants`` (and on Linux) the command runs under the subreaper, so a timeout or
    cancellation also ends the processes it detached. Raises ``OSError`` only when the process
    cannot be started (e.g. ``cwd`` does not exist).
    """
    started = time.monotonic()
    deadline = started + timeout_ms / 1000 if timeout_ms is not None and timeout_ms > 0 else None
    reaper = kill_descendants and reaper_available()
    command = list(argv)
    if reaper:
        lc_ctype = (env if env is not None else os.environ).get("LC_CTYPE")
        command = [sys.executable, "-I", "-S", _REAPER, str(KILL_GRACE_SECONDS),
                   "-" if lc_ctype is None else "=" + lc_ctype, *argv]
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    runner = _Runner(proc, max_capture_bytes, on_output, reaper)
    try:
        timed_out, cancelled = runner.loop(deadline, cancel)
    finally:
        if proc.poll() is None and runner.term_sent_at is not None:
            _signal_group(runner.pgid, signal.SIGKILL)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    try:
        returncode = proc.wait(timeout=KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:  # pragma: no cover - only if SIGKILL itself failed
        _signal_group(runner.pgid, signal.SIGKILL)
        returncode = proc.wait()
    return ProcessOutcome(
        stdout_parts=runner.out.parts(),
        stderr_parts=runner.err.parts(),
        exit_code=_exit_code(returncode),
        timed_out=timed_out,
        cancelled=cancelled,
        duration_ms=int((time.monotonic() - started) * 1000),
        stdout_bytes=runner.out.total,
        stderr_bytes=runner.err.total,
    )
