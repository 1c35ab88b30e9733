"""The shared pool of daemon threads that tool calls run on (SPEC TOOL-3, TOOL-6; DESIGN §3).

Tool calls run on worker threads so that the loop can keep streaming events, enforce timeouts and
abort. The pool is shared by every run in the process, so a run does not pay for starting threads,
and its threads are daemons: a tool that never returns cannot keep the interpreter from exiting.

Workers are made on demand, up to ``max_workers`` busy at once, and leave after ``idle_seconds``
without work, so an idle process holds none. Work beyond ``max_workers`` waits for a free worker;
a tool call's timeout counts from when a worker starts it (SPEC TOOL-6), so waiting here never turns
into a timed-out call. :func:`configure_tool_pool` sizes the pool for the process (many sessions
calling slow tools at once want more workers; see docs/many-sessions.md).

A call the loop stopped waiting for — timed out, or aborted past its grace period — may go on running
if its tool ignores its cancellation token. Its worker is then *abandoned*: it no longer counts
against ``max_workers`` (the pool starts another thread for new work, and a WARNING says so), and
when the tool finally returns the thread serves the pool again. Abandoned threads are bounded too:
the pool never holds more than ``max_threads`` threads, and past that a new call fails at once with
:class:`PoolExhausted` instead of waiting for threads that may never come back. :func:`stats` shows
the state.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any, Callable, NamedTuple, cast

from ..errors import ConfigError, PhiError
from ..log import get_logger
from . import sync

log = get_logger(__name__)

DEFAULT_MAX_WORKERS = 1024
DEFAULT_MAX_THREADS = 2048
DEFAULT_IDLE_SECONDS = 30.0

_QUEUED, _RUNNING, _DONE = "queued", "running", "done"


class PoolExhausted(PhiError):
    """Every thread the pool may hold is busy, most with calls abandoned by their runs."""


class PoolStats(NamedTuple):  # a NamedTuple, not a dataclass: this module loads with a process's first run
    """A snapshot of a :class:`WorkerPool`: ``threads`` alive = ``busy`` + ``abandoned`` + ``idle``."""

    threads: int
    busy: int  # running work the loop still waits for
    abandoned: int  # running work the loop gave up on (its tool ignores cancellation)
    idle: int
    queued: int
    max_workers: int
    max_threads: int


def _done(*args: Any) -> None:
    """A job's work once it has been taken (or dropped)."""


class Job:
    """One piece of work submitted to the pool."""

    __slots__ = ("fn", "args", "state", "abandoned", "_pool")

    def __init__(self, pool: WorkerPool, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.fn, self.args, self._pool = fn, args, pool
        self.state = _QUEUED
        self.abandoned = False

    def abandon(self) -> None:
        """The submitter no longer waits for this work: it stops counting against ``max_workers``
        (work not started yet is dropped)."""
        self._pool.abandon(self)


class WorkerPool:
    """Runs ``fn(*args)`` on daemon threads. ``fn`` reports its own outcome (it must not raise)."""

    def __init__(self, max_workers: int = DEFAULT_MAX_WORKERS, idle_seconds: float = DEFAULT_IDLE_SECONDS,
                 max_threads: int = DEFAULT_MAX_THREADS) -> None:
        self.max_workers = max(1, max_workers)
        self.max_threads = max(self.max_workers, max_threads)
        self.idle_seconds = idle_seconds
        self._lock = sync.Lock()
        self._ready = sync.Condition(self._lock)
        self._work: deque[Job] = deque()
        self._threads = 0  # alive
        self._idle = 0  # waiting for work
        self._abandoned = 0  # running abandoned work
        self._dropped = 0  # queued work abandoned before it started: still in the queue, never run

    def submit(self, fn: Callable[..., object], *args: Any) -> Job:
        """Queue ``fn(*args)``; raises :class:`PoolExhausted` when no thread can ever take it."""
        job = Job(self, fn, args)
        with self._lock:
            spawn = self._idle <= self._waiting() and self._threads - self._abandoned < self.max_workers
            if spawn and self._threads >= self.max_threads:
                raise PoolExhausted(
                    f"no worker thread is free: {self._abandoned} of the pool's {self._threads} threads are still "
                    f"running tool calls that timed out or were aborted and ignore their cancellation "
                    f"(limit {self.max_threads}); make those tools honour ctx.cancel")
            self._work.append(job)
            if spawn:
                self._threads += 1
            else:
                self._ready.notify()
        if spawn:
            sync.Thread(target=self._serve, name="phi-tool", daemon=True).start()
        return job

    @property
    def size(self) -> int:
        """Threads alive now (busy, abandoned or idle)."""
        return self._threads

    def stats(self) -> PoolStats:
        with self._lock:
            busy = self._threads - self._idle - self._abandoned
            return PoolStats(self._threads, busy, self._abandoned, self._idle, self._waiting(),
                             self.max_workers, self.max_threads)

    def resize(self, max_workers: int | None, max_threads: int | None, idle_seconds: float | None) -> PoolStats:
        """New limits (None: unchanged), for the next call (see :func:`configure_tool_pool`)."""
        with self._lock:
            if max_workers is not None:
                self.max_workers = max_workers
            if max_threads is not None:
                self.max_threads = max_threads
            self.max_threads = max(self.max_threads, self.max_workers)
            if idle_seconds is not None:
                self.idle_seconds = float(idle_seconds)
            # work already waiting gets the new room at once
            room = min(self._waiting() - self._idle, self.max_workers - (self._threads - self._abandoned),
                       self.max_threads - self._threads)
            spawn = max(0, room)
            self._threads += spawn
        for _ in range(spawn):
            sync.Thread(target=self._serve, name="phi-tool", daemon=True).start()
        return self.stats()

    def can_start_work(self) -> bool:
        """Whether queued work will ever be taken: a thread that is not running abandoned work is
        alive, or another may be started (False: every thread the pool may hold runs abandoned work)."""
        with self._lock:
            return self._threads - self._abandoned > 0 or self._threads < self.max_threads

    def abandon(self, job: Job) -> None:
        """``job``'s submitter no longer waits for it (see :meth:`Job.abandon`)."""
        with self._lock:
            if job.abandoned or job.state == _DONE:
                return
            job.abandoned = True
            if job.state == _QUEUED:  # _take skips it; what it would have run goes now, not when a worker gets to it
                job.fn, job.args = _done, ()
                self._dropped += 1
                return
            self._abandoned += 1
            count = self._abandoned
            spare = self._waiting() > self._idle and self._threads < self.max_threads
            if spare:
                self._threads += 1  # the abandoned thread no longer serves the queue
        log.warning("a tool call was abandoned while its tool still runs (it ignores cancellation); "
                    "%d worker thread(s) are held by such calls", count)
        if spare:
            sync.Thread(target=self._serve, name="phi-tool", daemon=True).start()

    def _waiting(self) -> int:
        """Queued work that will run (the lock is held)."""
        return len(self._work) - self._dropped

    def _take(self) -> Job | None:
        """The next job (lock held), or None when idle for ``idle_seconds``: the thread then leaves."""
        while True:
            while not self._work:
                self._idle += 1
                notified = self._ready.wait(self.idle_seconds)
                self._idle -= 1
                if not notified and not self._work:
                    self._threads -= 1
                    return None
            job = self._work.popleft()
            if not job.abandoned:
                job.state = _RUNNING
                return job
            job.state = _DONE
            self._dropped -= 1

    def _serve(self) -> None:
        while True:
            with self._lock:
                job = self._take()
            if job is None:
                return
            fn, args = job.fn, job.args
            # what the submitter passed lives no longer than its run (no cycle through the job)
            job.fn, job.args = _done, ()
            try:
                fn(*args)
            except BaseException:  # fn reports its own failures; this is a last resort
                log.exception("worker task failed")
            del fn, args  # an idle worker keeps nothing of the last call alive
            with self._lock:
                job.state = _DONE
                if job.abandoned:
                    self._abandoned -= 1

    def after_fork(self) -> None:
        """In a forked child no worker thread exists: start counting from zero."""
        self._lock = sync.Lock()
        self._ready = sync.Condition(self._lock)
        self._work = deque()
        self._threads = self._idle = self._abandoned = self._dropped = 0


_pool = WorkerPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.after_fork)


def shared_pool() -> WorkerPool:
    """The process-wide pool the loop runs tool calls on."""
    return _pool


def swap_shared_pool(pool: WorkerPool) -> WorkerPool:
    """Make ``pool`` the shared pool; returns the one it replaces. The simulator runs tool calls on
    a pool of simulated threads while it runs, then puts the real one back."""
    global _pool
    previous, _pool = _pool, pool
    return previous


def stats() -> PoolStats:
    """The state of the shared pool: threads alive, busy, abandoned, idle, queued."""
    return _pool.stats()


def configure_tool_pool(*, max_workers: int | None = None, max_threads: int | None = None,
                        idle_seconds: float | None = None) -> PoolStats:
    """Size the process-wide pool tool calls run on; what is not given stays. ``max_workers``: calls
    running at once (default 1024; more wait for a worker, their timeouts not counting meanwhile);
    ``max_threads``: threads the pool may hold, counting those still running calls that were
    abandoned (default 2048; raised to ``max_workers`` if below); ``idle_seconds``: how long an idle
    worker stays. Threads already running are kept; new limits apply to the next call. Returns the
    pool's state; a value that is not a count (or a positive time) raises ``ConfigError``."""
    for name, given in (("max_workers", cast(object, max_workers)), ("max_threads", cast(object, max_threads))):
        if given is not None and (isinstance(given, bool) or not isinstance(given, int) or given < 1):
            raise ConfigError(f"configure_tool_pool: {name} must be a whole number of threads >= 1, got {given!r}")
    idle = cast(object, idle_seconds)
    if idle is not None and (isinstance(idle, bool) or not isinstance(idle, (int, float))
                             or not 0 < idle < float("inf")):
        raise ConfigError(f"configure_tool_pool: idle_seconds must be a positive number of seconds, got {idle!r}")
    return _pool.resize(max_workers, max_threads, idle_seconds)
