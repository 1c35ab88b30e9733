"""One driver process of the conformance runner (SPEC §10; ``suite/README.md`` §2, ``suite/DRIVERS.md``).

A :class:`DriverProcess` starts the driver command with :data:`PROTOCOL_ENV` set (telling the driver
the runner speaks protocol 2), feeds its stdin from a writer thread (a driver that never reads
cannot block the runner) and reads stdout line by line and stderr on two reader threads, so every
wait has a deadline. The driver leads a process group of its own (``start_new_session``): every
kill, and the clean-up after it exited, ends the whole group, so nothing it started outlives it.

A driver can exit while its stdout stays open, because a process it started holds the pipe (a
``sleep 1000 &`` of a shell script): the end of output never comes. A third thread waits for the
driver's exit; once it has exited and its output has been quiet for :data:`EXIT_GRACE_S` (or
has stayed open for :data:`EXIT_LIMIT_S`, however busy), the group is ended, which closes the pipe, and :attr:`DriverProcess.kept_open` says why the output
ended (:data:`KEPT_OPEN`).

What a driver writes is bounded: at most :data:`OUTPUT_LIMIT` of stdout per fixture (a flood fails
the fixture with :data:`TOO_LARGE_PROBLEM` and the driver is killed), and only the last
:data:`STDERR_TAIL` characters of stderr are kept.

A process can leave the group (``setsid``) and still hold the driver's stdout or stderr. On Linux
:func:`pipe_writers` finds it through ``/proc/<pid>/fd`` (a link ``pipe:[inode]`` to the same pipe,
opened for writing) and it is ended like the group: when the output stays open after the driver
exited, and whenever the driver is killed or its leftovers are ended. Without ``/proc`` such a
process is not found: the fixture then times out and the process outlives the run.
"""

from __future__ import annotations

import io
import os
import collections
import queue
import shlex
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, TypeGuard

from ..log import get_logger

log = get_logger(__name__)

#: The environment variable through which the runner offers protocol 2 (hello/done lines, persistent mode).
PROTOCOL_ENV = "PHI_CONFORMANCE_PROTOCOL"
PROTOCOL = 2
_POSIX = os.name == "posix"
#: after the driver exited, how long its output may stay open without a line before its group is ended
EXIT_GRACE_S = 1.0
#: after the driver exited, how long its output may stay open at most, lines or not (a child that
#: keeps writing never lets EXIT_GRACE_S of quiet begin)
EXIT_LIMIT_S = 5.0
#: why a fixture's output ended when a process the driver started held it open after the driver exited
KEPT_OPEN = "driver exited, a child kept its output open"
#: the most stdout one fixture may produce, in characters; every line counts at least LINE_COST
OUTPUT_LIMIT = 64 * 1024 * 1024
#: what a line costs beyond its characters (so that a flood of empty lines is bounded in memory too)
LINE_COST = 64
#: how much of a driver's stderr is kept: the last this many characters
STDERR_TAIL = 1024 * 1024
#: how much is read from a pipe at once (a line without end is read in pieces this long)
_CHUNK = 64 * 1024
#: the problem of a fixture whose driver wrote more than OUTPUT_LIMIT
TOO_LARGE_PROBLEM = f"output too large: more than {OUTPUT_LIMIT // (1024 * 1024)} MiB on stdout; the driver was killed"


class DriverStartError(Exception):
    """The driver command could not be started at all (not found, not executable, bad quoting)."""


class _Timeout:
    """What :meth:`DriverProcess.read_line` returns when the deadline passed first."""


TIMEOUT = _Timeout()


class _TooLarge:
    """What :meth:`DriverProcess.read_line` returns once the fixture's output passed
    :data:`OUTPUT_LIMIT` (then nothing more is read)."""


TOO_LARGE = _TooLarge()


class _Exited:
    """Put on the line queue when the driver process has exited (its last lines may still follow)."""


_EXITED = _Exited()


@dataclass
class RawRun:
    """What a driver wrote for one fixture, before it is compared (the ``hello``/``done`` lines
    of protocol 2 already taken out)."""

    lines: list[str] = field(default_factory=list[str])
    stderr: str = ""
    failure: str | None = None
    timed_out: bool = False
    hello: dict[str, Any] | None = None


def _is_text_pipe(stream: IO[str] | None) -> TypeGuard[io.TextIOWrapper[io.BufferedReader]]:
    """True when ``stream`` is a ``TextIOWrapper``: a text-mode pipe with the default buffering,
    which wraps a ``BufferedReader`` (``isinstance`` alone cannot tell a type checker what it wraps)."""
    return isinstance(stream, io.TextIOWrapper)


def _exact_stdout(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """``proc`` with its stdout read as the protocol has it (README §2): lines end at ``\n`` only,
    so a bare ``\r`` inside a line does not split it, and bytes that are not UTF-8 are kept as
    lone surrogates (``surrogateescape``) for :mod:`.lines` to refuse instead of being replaced."""
    assert _is_text_pipe(proc.stdout)
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


def pipe_inode(fd: int) -> int | None:
    """The inode naming the pipe ``fd`` is an end of (None when it is no pipe)."""
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return info.st_ino if stat.S_ISFIFO(info.st_mode) else None


def pipe_writers(inodes: set[int]) -> list[int]:
    """Linux: the processes, other than this one, holding the write end of one of the pipes
    ``inodes`` names (the read end, which the runner holds and a process it is just starting may
    hold for a moment, does not count). Empty where there is no ``/proc``."""
    if not inodes or not os.path.isdir("/proc/self/fd"):
        return []
    links = {f"pipe:[{inode}]" for inode in inodes}
    me = os.getpid()
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if any(_writes_to(entry.name, fd.name, links) for fd in os.scandir(f"/proc/{entry.name}/fd")):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to look at
            continue
    return found


def _writes_to(pid: str, fd: str, links: set[str]) -> bool:
    try:
        if os.readlink(f"/proc/{pid}/fd/{fd}") not in links:
            return False
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as info:
            flags = next((line.split()[1] for line in info if line.startswith("flags:")), "0")
    except (OSError, IndexError):
        return False
    return int(flags, 8) & os.O_ACCMODE != os.O_RDONLY


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
        # the output pipes, by inode: a process outside the group that holds one is found by it
        self._pipes = {inode for stream in (self.proc.stdout, self.proc.stderr) if stream is not None
                       if (inode := pipe_inode(stream.fileno())) is not None}
        self.lines: queue.Queue[str | None | _Exited | _TooLarge] = queue.Queue()
        self._spent = 0  # stdout read since new_budget(), in characters plus LINE_COST a line
        self._budget_lock = threading.Lock()
        self.exited = False  # read_line has seen the driver's exit
        self.kept_open = False  # ... and ended its group because a process of it held the output open
        self._quiet_since = 0.0
        self._exited_at = 0.0
        self._stderr: collections.deque[str] = collections.deque()
        self._stderr_size = 0  # characters in _stderr
        self._stderr_dropped = 0  # pieces dropped from the front of _stderr (it keeps a tail)
        self._stderr_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True, name="driver-stdout"),
                         threading.Thread(target=self._read_stderr, daemon=True, name="driver-stderr")]
        for reader in self._readers:
            reader.start()
        threading.Thread(target=self._wait_for_exit, daemon=True, name="driver-exit").start()

    # ------------------------------------------------------------------ reading
    def new_budget(self) -> None:
        """A new fixture begins: it may write :data:`OUTPUT_LIMIT` again."""
        with self._budget_lock:
            self._spent = 0

    def _read_stdout(self) -> None:
        """Lines onto the queue, read in pieces of at most ``_CHUNK`` so that neither a line without
        end nor a flood of lines can hold more than about :data:`OUTPUT_LIMIT` in memory: past it,
        :data:`TOO_LARGE` is queued and reading stops (the driver then blocks until it is killed)."""
        stream = self.proc.stdout
        assert stream is not None
        try:
            pieces: list[str] = []
            while piece := stream.readline(_CHUNK):
                ended = piece.endswith("\n")
                with self._budget_lock:
                    self._spent += len(piece) + (LINE_COST if ended else 0)
                    over = self._spent > OUTPUT_LIMIT
                if over:
                    self.lines.put(TOO_LARGE)
                    return
                pieces.append(piece)
                if ended:
                    self.lines.put("".join(pieces).rstrip("\r\n"))
                    pieces = []
            if pieces:
                self.lines.put("".join(pieces).rstrip("\r\n"))
            stream.close()
        except (OSError, ValueError):  # the pipe was closed under us by kill()
            pass
        self.lines.put(None)

    def _read_stderr(self) -> None:
        """stderr in pieces; only the last :data:`STDERR_TAIL` characters are kept."""
        stream = self.proc.stderr
        assert stream is not None
        try:
            while piece := stream.readline(_CHUNK):
                with self._stderr_lock:
                    self._stderr.append(piece)
                    self._stderr_size += len(piece)
                    while self._stderr_size > STDERR_TAIL and len(self._stderr) > 1:
                        self._stderr_size -= len(self._stderr.popleft())
                        self._stderr_dropped += 1
            stream.close()
        except (OSError, ValueError):
            pass

    def _wait_for_exit(self) -> None:
        self.proc.wait()
        self.lines.put(_EXITED)

    def read_line(self, deadline: float) -> str | None | _Timeout | _TooLarge:
        """The next stdout line; None at end of output; :data:`TOO_LARGE` (again and again) once
        the fixture's output passed :data:`OUTPUT_LIMIT`; :data:`TIMEOUT` once ``deadline``
        (a :func:`time.monotonic` value) has passed. When the driver has exited and its output
        stays open and quiet for :data:`EXIT_GRACE_S`, its process group is ended (then
        :attr:`kept_open` is set) and the lines it wrote before still come, then None."""
        while True:
            now = time.monotonic()
            until = deadline
            if self.exited and not self.kept_open:
                end_by = min(self._quiet_since + EXIT_GRACE_S, self._exited_at + EXIT_LIMIT_S)
                if now >= end_by and now < deadline:
                    self._end_held_output()  # the lines already read still come
                    continue
                until = min(deadline, end_by)
            try:
                item = self.lines.get(timeout=until - now) if until > now else self.lines.get_nowait()
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return TIMEOUT
                continue
            if isinstance(item, _Exited):
                self._note_exit()
                continue
            if isinstance(item, _TooLarge):
                self.lines.put(item)
            self._quiet_since = time.monotonic()
            return item

    def _note_exit(self) -> None:
        self.exited = True
        self._quiet_since = self._exited_at = time.monotonic()

    def _end_held_output(self) -> None:
        """The driver exited and its output stayed open and quiet: a process of its group holds it,
        or one that left the group (found on Linux only; when none is found, only the deadline ends
        the wait)."""
        in_group = self._group_alive()
        outside = self._kill_writers()
        self.kept_open = in_group or bool(outside)
        if in_group:
            log.info("driver %s exited, a process of its group keeps its output open: ending the group", self.proc.pid)
            self._kill_group()
        if outside:
            log.info("driver %s exited, processes %s outside its group keep its output open: ended them",
                     self.proc.pid, outside)
        if not self.kept_open:  # nothing found to end: only the deadline ends the wait
            self._quiet_since = self._exited_at = float("inf")

    def _kill_writers(self) -> list[int]:
        """SIGKILL to every process still holding the driver's stdout or stderr for writing —
        after the group was ended these are the ones that left it (``setsid``)."""
        if not any(reader.is_alive() for reader in self._readers):  # both pipes closed: nobody holds them
            return []
        found = pipe_writers(self._pipes)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return found

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
                self._note_exit()
                continue
            if line is None or isinstance(line, _TooLarge):
                self.lines.put(line)
                if line is not None:  # stands for the flood the reader stopped at
                    found.append(f"(more than {OUTPUT_LIMIT} characters)")
                return found
            found.append(line)

    def stderr_mark(self) -> int:
        with self._stderr_lock:
            return self._stderr_dropped + len(self._stderr)

    def stderr_since(self, mark: int = 0, settle: float = 0.0) -> str:
        """stderr written since :meth:`stderr_mark` returned ``mark``; ``settle`` seconds are
        given to the reader to catch up when the process has ended."""
        if settle and self.proc.poll() is not None:
            self._readers[1].join(settle)
        with self._stderr_lock:
            skip = max(mark - self._stderr_dropped, 0)
            return "".join(piece for n, piece in enumerate(self._stderr) if n >= skip)

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
        self._kill_writers()
        self._close_stdin()

    def _close_stdin(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except (OSError, ValueError):  # a writer thread saw the pipe break; nothing left to do
            pass

    def kill_leftovers(self) -> None:
        """After the driver exited: end what it left running in its process group, and what left
        the group but holds its output."""
        self._close_stdin()
        self._kill_group()
        self._kill_writers()

    def finish(self, grace: float = 1.0) -> None:
        """Close stdin (a persistent driver then exits) and kill the driver if it has not ended
        within ``grace`` seconds."""
        self.close_input()
        if self.wait(time.monotonic() + grace) is None:
            self.kill()
        else:
            self.kill_leftovers()


__all__ = ["EXIT_GRACE_S", "EXIT_LIMIT_S", "KEPT_OPEN", "LINE_COST", "OUTPUT_LIMIT", "PROTOCOL", "PROTOCOL_ENV", "STDERR_TAIL",
           "TIMEOUT", "TOO_LARGE", "TOO_LARGE_PROBLEM", "DriverProcess", "DriverStartError",
           "RawRun", "pipe_inode", "pipe_writers", "split_command"]
