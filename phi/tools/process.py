"""Running a command and everything it starts (SPEC §9.1 "Command execution").

:func:`run_process` starts ``argv`` in a new session (so it leads a fresh process group), captures
stdout and stderr separately through one ``selectors`` loop (no deadlock however much either stream
produces), keeps at most ``max_capture_bytes`` of the head and of the tail of each stream in memory
(the middle is counted — bytes and newlines — and becomes an :class:`~phi.tools.truncation.Omitted`
hole), and stops the command on timeout or cancellation.

On Linux the command runs under :mod:`phi.tools._reaper`, a small child subreaper: processes the
command detaches with ``setsid``, ``nohup ... &`` or ``start_new_session=True`` cannot leave its
tree, and on timeout or cancellation — and, unless ``keep_background`` is set, when the command
returns — all of them get SIGTERM, then after :data:`KILL_GRACE_SECONDS` SIGKILL. Elsewhere (macOS)
the command's process group gets the same treatment, which misses processes that started a new
session. :func:`start_background` starts a command that is meant to outlive the call (a server, a
watcher): same reaper, in its ``keep`` mode, output to a file.

The wait never polls for cancellation: the token's callback writes to a self-pipe that is part of
the ``select`` set, so the loop wakes at once. A cancelled call then returns in milliseconds with
the output written so far; the SIGTERM → grace → SIGKILL sequence, the draining of the pipes (so a
command cleaning up on SIGTERM is not killed by SIGPIPE) and the reaping of the process finish on a
short-lived daemon thread, which ends with them (:func:`stopping_count` counts those still going).
A timeout, by contrast, waits for the command to stop and keeps what it writes during the grace
period.
"""

from __future__ import annotations

import _thread
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import types
from collections import deque
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..concurrency.cancel import CancellationToken
from ..log import get_logger
from .truncation import Omitted, Part, render

log = get_logger(__name__)

KILL_GRACE_SECONDS = 2.0
# The parent's last resort (SIGKILL to the process group) if the reaper itself does not finish.
_REAPER_MARGIN_SECONDS = 2.0
# Only where no descriptor announces the event: without pidfd (process exit), and an emptied
# process group when the command runs without the reaper.
_POLL_SECONDS = 0.05
# Reads of up to _READ_CHUNK per stream that a cancelled run spends collecting output written before
# the cancellation (a full pipe buffer is 64 KiB).
_READ_WRITTEN_PASSES = 4
_READ_CHUNK = 65536
# How long to keep reading after the main process exited while a background child still holds the
# pipes open. Output written later than this is not captured; the background process keeps running.
_DRAIN_AFTER_EXIT_SECONDS = 0.5
_REAPER_DIR = os.path.dirname(os.path.abspath(__file__))
# The reaper is imported, not run as a script, so its compiled code is cached in __pycache__ (one
# compilation less per command). Its directory goes last on sys.path: nothing there shadows stdlib.
_REAPER_BOOT = "import sys; sys.path.append(sys.argv.pop(1)); import _reaper; _reaper.run()"
# A sandboxed command's launcher runs before it is confined, so it must not read anything a sandboxed
# command could have changed: its code comes from this process's memory (read once, the first time a
# sandbox asks for it) as marshalled bytecode, the interpreter by its real path, and the dynamic
# loader's variables are kept aside until the command starts (see phi.tools._reaper.program_env).
_SANDBOX_BOOT = ("import sys,marshal,binascii\nM=type(sys)\n"
                 "for n,c in marshal.loads(binascii.a2b_base64(sys.argv.pop(1))):\n"
                 " m=M(n);sys.modules[n]=m;exec(c,m.__dict__)\n"
                 "sys.modules['_reaper'].run()")
_LOADER_VARIABLES = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT")
KEPT_PREFIX = "PHI_LAUNCHER_KEPT_"
_launcher_payload: str | None = None
_payload_lock = threading.Lock()


def sandbox_launcher() -> tuple[str, str]:
    """(interpreter, code) of the sandboxed launcher: the real path of this Python and the launcher's
    modules as base64 of marshalled bytecode, made once per process."""
    global _launcher_payload
    with _payload_lock:
        if _launcher_payload is None:
            import binascii
            import marshal

            modules: list[tuple[str, types.CodeType]] = []
            for name in ("_sandbox", "_reaper"):
                modules.append((name, _launcher_code(name)))
            _launcher_payload = binascii.b2a_base64(marshal.dumps(modules), newline=False).decode("ascii")
        return os.path.realpath(sys.executable), _launcher_payload


def _launcher_code(name: str) -> types.CodeType:
    """The code of the launcher's module ``name``: the compiled copy beside it in ``__pycache__``
    while it matches the source (what the sandbox probe, run with ``-I``, imported too) — never one
    under a ``PYTHONPYCACHEPREFIX``, which may lie where commands write — else compiled now."""
    from importlib.machinery import SourceFileLoader

    path = os.path.join(_REAPER_DIR, name + ".py")
    if sys.pycache_prefix is None:
        try:
            code = SourceFileLoader(name, path).get_code(name)
        except Exception:  # noqa: BLE001 - a truncated or garbled cache file: the source decides
            code = None
        if code is not None:
            return code
    with open(path, encoding="utf-8") as handle:
        return compile(handle.read(), path, "exec")


def launcher_env(env: Mapping[str, str] | None, sandbox: str | None) -> dict[str, str] | None:
    """The environment the launcher starts with: ``env``, and for a sandboxed command the dynamic
    loader's variables renamed (``PHI_LAUNCHER_KEPT_...``) so that no library they name loads before
    the sandbox; the launcher gives them back to the command."""
    if sandbox is None:
        return dict(env) if env is not None else None
    given = dict(env if env is not None else os.environ)
    for name in _LOADER_VARIABLES:
        if name in given:
            given[KEPT_PREFIX + name] = given.pop(name)
    return given


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


def _exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux ≥ 5.3), else None (then the
    runner polls every :data:`_POLL_SECONDS`)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class _Wakeup:
    """A self-pipe: :meth:`set`, from any thread, makes the runner's ``select`` return at once.

    The lock keeps a late :meth:`set` (a cancellation racing the end of the run) from writing to a
    descriptor number that :meth:`close` has already given back to the system.
    """

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._lock = threading.Lock()
        self._closed = False

    def set(self) -> None:
        with self._lock:
            if not self._closed:
                try:
                    os.write(self._write_fd, b"\0")
                except BlockingIOError:  # the pipe is full: a wake-up is pending anyway
                    pass

    def clear(self) -> None:
        try:
            os.read(self.read_fd, 512)
        except BlockingIOError:
            pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            os.close(self.read_fd)
            os.close(self._write_fd)


_WAKE = "wake"
_EXIT = "exit"


class _Runner:
    """One execution: the select loop plus the termination state machine.

    The loop sleeps in ``select`` until something happens: output, the command's exit (a pidfd),
    a cancellation (the :class:`_Wakeup` pipe, written from the token's callback), or the next
    deadline (timeout, kill escalation, the post-exit drain). It never polls for cancellation.
    """

    def __init__(self, proc: subprocess.Popen[bytes], capture_limit: int,
                 on_output: Callable[[str, bytes], None] | None, reaper: bool, end_group: bool = True):
        self.proc = proc
        self.end_group = end_group  # end what the command left in its process group when it returns
        self.pgid = proc.pid  # start_new_session makes the child its own group leader
        self.reaper = reaper
        self.out = _Capture(capture_limit)
        self.err = _Capture(capture_limit)
        self.on_output = on_output
        self.capturing = True
        self.wakeup = _Wakeup()
        self.selector = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        self.selector.register(proc.stdout, selectors.EVENT_READ, ("stdout", self.out))
        self.selector.register(proc.stderr, selectors.EVENT_READ, ("stderr", self.err))
        self.selector.register(self.wakeup.read_fd, selectors.EVENT_READ, _WAKE)
        self.exit_fd = _exit_fd(proc.pid)
        if self.exit_fd is not None:
            self.selector.register(self.exit_fd, selectors.EVENT_READ, _EXIT)
        self.open_streams = 2
        self.term_sent_at: float | None = None
        self.killed = False
        self.exited_at: float | None = None

    def _read_ready(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds for events and handle them; whether any output arrived."""
        got_output = False
        for key, _ in self.selector.select(timeout):
            if key.data == _WAKE:
                self.wakeup.clear()
                continue
            if key.data == _EXIT:  # the exit status is collected by the loop's poll()
                self._forget_exit_fd()
                continue
            name, capture = key.data
            try:
                data = os.read(key.fd, _READ_CHUNK)
            except OSError:
                data = b""
            if not data:
                self.selector.unregister(key.fileobj)
                self.open_streams -= 1
                continue
            got_output = True
            if self.capturing:
                self._keep(name, capture, data)
        return got_output

    def _keep(self, name: str, capture: _Capture, data: bytes) -> None:
        capture.add(data)
        if self.on_output is not None:
            try:
                self.on_output(name, data)
            except Exception:  # a failing observer must not break the capture
                log.exception("on_output callback failed")

    def _forget_exit_fd(self) -> None:
        if self.exit_fd is not None:
            self.selector.unregister(self.exit_fd)
            os.close(self.exit_fd)
            self.exit_fd = None

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

    def _grace(self) -> float:
        return KILL_GRACE_SECONDS + (_REAPER_MARGIN_SECONDS if self.reaper else 0.0)

    def _escalate(self, now: float) -> None:
        if self.term_sent_at is None or self.killed:
            return
        exited = self.exited_at is not None
        if now - self.term_sent_at >= self._grace() or (exited and not _group_alive(self.pgid)):
            if _group_alive(self.pgid):
                log.debug("process group %d survived SIGTERM; sending SIGKILL", self.pgid)
                _signal_group(self.pgid, signal.SIGKILL)
            self.killed = True
        elif exited and self.reaper:  # the reaper is done: whatever is left of the group goes now
            _signal_group(self.pgid, signal.SIGKILL)
            self.killed = True

    def _timeout(self, now: float, deadline: float | None) -> float | None:
        """Seconds until the loop has something to do that no descriptor will announce."""
        waits: list[float] = []
        if self.term_sent_at is None:
            if deadline is not None:
                waits.append(deadline - now)
        elif not self.killed:
            waits.append(self.term_sent_at + self._grace() - now)
            if not self.reaper:  # whether the group is empty has no descriptor to watch
                waits.append(_POLL_SECONDS)
        if self.exited_at is not None:
            waits.append(self.exited_at + _DRAIN_AFTER_EXIT_SECONDS - now)
        elif self.exit_fd is None:
            waits.append(_POLL_SECONDS)
        return max(0.0, min(waits)) if waits else None

    def loop(self, deadline: float | None, cancel: CancellationToken | None) -> tuple[bool, bool]:
        """Run until the command is done; ``(timed_out, cancelled)``.

        When ``cancel`` fires (also during a timeout's grace period) the command is sent SIGTERM,
        the output it already wrote is read, and the loop returns at once; :meth:`finish_stopping`
        completes the termination."""
        timed_out = False
        while True:
            now = time.monotonic()
            if cancel is not None and cancel.is_cancelled():
                self.terminate()
                self._read_written()
                return timed_out, True
            if self.term_sent_at is None and deadline is not None and now >= deadline:
                timed_out = True
                self.terminate()
            if self.exited_at is None and self.proc.poll() is not None:
                self.exited_at = now
                if self.end_group and not self.reaper and _group_alive(self.pgid):
                    self.terminate()  # the reaper does this itself; without it, the group is ended
            self._escalate(now)
            if self.exited_at is not None and (not self.open_streams or (
                    now - self.exited_at >= _DRAIN_AFTER_EXIT_SECONDS
                    and (self.term_sent_at is None or self.killed))):
                return timed_out, False
            self._read_ready(self._timeout(now, deadline))

    def _read_written(self) -> None:
        """Read what the command wrote before now, without waiting for more."""
        for _ in range(_READ_WRITTEN_PASSES):
            if not self._read_ready(0):
                return

    def finish_stopping(self) -> None:
        """Complete a cancelled run in the background: SIGTERM, grace, SIGKILL as for a timeout,
        output read and discarded (so a command cleaning up on SIGTERM is not killed by SIGPIPE),
        the process reaped. Ends within about ``KILL_GRACE_SECONDS`` plus the reaper's margin."""
        self.capturing = False
        self.on_output = None
        try:
            self.loop(None, None)
        except Exception:  # pragma: no cover - the loop handles OSError itself
            log.exception("stopping a cancelled command failed")
        finally:
            try:
                self.close()
            finally:
                _stopping.discard(self)

    def close(self) -> int | None:
        """Release the pipes and descriptors and reap the process; its return code."""
        try:
            if self.proc.poll() is None and self.term_sent_at is not None:
                _signal_group(self.pgid, signal.SIGKILL)
            _close_pipes(self.proc)
            try:
                return self.proc.wait(timeout=KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:  # pragma: no cover - only if SIGKILL itself failed
                _signal_group(self.pgid, signal.SIGKILL)
                return self.proc.wait()
        finally:
            self._forget_exit_fd()
            self.selector.close()
            self.wakeup.close()


# Cancelled runs whose termination goes on in the background (see _Runner.finish_stopping).
_stopping: set[_Runner] = set()


def stopping_count() -> int:
    """How many cancelled commands are still being stopped in the background (at most for about
    ``KILL_GRACE_SECONDS`` plus 2.5 s each); a host may wait for 0 before it exits."""
    return len(_stopping)


def _stop_in_background(runner: _Runner) -> None:
    _stopping.add(runner)
    try:
        # Not threading.Thread: its start() waits until the new thread runs, which on a busy
        # machine adds milliseconds to the cancelled call. Such a thread is a daemon thread.
        _thread.start_new_thread(runner.finish_stopping, ())
    except RuntimeError:  # no thread to spare: finish here, late rather than leaving a zombie
        runner.finish_stopping()


def _exit_code(returncode: int | None) -> int:
    if returncode is None:
        return -1
    if returncode < 0:  # killed by a signal: report it the way a shell would
        return 128 - returncode
    return returncode


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _stop_unwatched(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc.pid, signal.SIGKILL)
    _close_pipes(proc)
    proc.wait()


def reaper_command(argv: Sequence[str], env: Mapping[str, str] | None, mode: str,
                   sandbox: str | None = None) -> list[str]:
    """``argv`` run under the subreaper in ``mode`` (``end``, ``leave`` or ``keep``, see
    :mod:`phi.tools._reaper`), confined first by the ``sandbox`` policy (JSON from
    :func:`phi.tools.sandbox.launcher_spec`) when given."""
    lc_ctype = (env if env is not None else os.environ).get("LC_CTYPE")
    tail = [str(KILL_GRACE_SECONDS), mode, "-" if lc_ctype is None else "=" + lc_ctype, sandbox or "-", *argv]
    if sandbox is not None:
        python, code = sandbox_launcher()
        return [python, "-I", "-S", "-c", _SANDBOX_BOOT, code, *tail]
    return [sys.executable, "-I", "-S", "-c", _REAPER_BOOT, _REAPER_DIR, *tail]


def _require_reaper(sandbox: str | None) -> None:
    if sandbox is not None and not reaper_available():
        from .sandbox import SandboxUnavailable

        raise SandboxUnavailable("a sandboxed command needs the Linux launcher, which is not available here")


def start_background(argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None,
                     output: int, sandbox: str | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` to run on after the call (stdin ``/dev/null``, stdout and stderr to the file
    descriptor ``output``) in its own session, under the subreaper in ``keep`` mode where available,
    confined by ``sandbox`` when given. Stop it with :func:`stop_background`."""
    _require_reaper(sandbox)
    command = reaper_command(argv, env, "keep", sandbox) if reaper_available() else list(argv)
    return subprocess.Popen(command, cwd=cwd, env=launcher_env(env, sandbox), stdin=subprocess.DEVNULL,
                            stdout=output, stderr=output, start_new_session=True, close_fds=True)


def stop_background(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """End background commands and everything they started: SIGTERM (the reaper passes it to the
    whole tree), up to :data:`KILL_GRACE_SECONDS` plus the reaper's margin, then SIGKILL to the
    process group; each is reaped."""
    for proc in procs:
        if proc.poll() is None:
            if reaper_available():
                try:
                    proc.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
            else:
                _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_SECONDS + _REAPER_MARGIN_SECONDS
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        if _group_alive(proc.pid):  # without the reaper: what is left of the group
            _signal_group(proc.pid, signal.SIGKILL)


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
    keep_background: bool = False,
    sandbox: str | None = None,
) -> ProcessOutcome:
    """Run ``argv`` and wait for it, its timeout, or cancellation. Never raises on a bad exit code.

    With ``kill_descendants`` (and on Linux) the command runs under the subreaper, so a timeout or
    cancellation also ends the processes it detached, and so does its return unless
    ``keep_background`` (then they keep running, as a shell would leave them). Without the reaper
    the process group is ended on return in the same way. A cancelled run returns at once (see the
    module docstring); its ``exit_code`` is -1 unless the command had already exited. With
    ``sandbox`` (JSON from :func:`phi.tools.sandbox.launcher_spec`) the launcher confines the command
    before it starts (always under the reaper). Raises ``OSError`` only when the process cannot be
    started (e.g. ``cwd`` does not exist).
    """
    _require_reaper(sandbox)
    started = time.monotonic()
    deadline = started + timeout_ms / 1000 if timeout_ms is not None and timeout_ms > 0 else None
    reaper = (kill_descendants or sandbox is not None) and reaper_available()
    mode = "leave" if keep_background or not kill_descendants else "end"
    command = reaper_command(argv, env, mode, sandbox) if reaper else list(argv)
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=launcher_env(env, sandbox),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    try:
        runner = _Runner(proc, max_capture_bytes, on_output, reaper, end_group=not keep_background)
    except BaseException:  # e.g. out of file descriptors: the command must not outlive the call
        _stop_unwatched(proc)
        raise
    unregister = cancel.on_cancel(runner.wakeup.set) if cancel is not None else None
    try:
        timed_out, cancelled = runner.loop(deadline, cancel)
    except BaseException:  # e.g. KeyboardInterrupt: the command is stopped as if cancelled
        runner.terminate()
        _stop_in_background(runner)
        raise
    finally:
        if unregister is not None:
            unregister()
    returncode = proc.poll() if cancelled else runner.close()
    outcome = ProcessOutcome(
        stdout_parts=runner.out.parts(),
        stderr_parts=runner.err.parts(),
        exit_code=_exit_code(returncode),
        timed_out=timed_out,
        cancelled=cancelled,
        duration_ms=int((time.monotonic() - started) * 1000),
        stdout_bytes=runner.out.total,
        stderr_bytes=runner.err.total,
    )
    if cancelled:  # the caller has its answer; the grace period and the reaping go on without it
        _stop_in_background(runner)
    return outcome
