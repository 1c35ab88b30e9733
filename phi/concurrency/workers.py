"""The shared pool of daemon threads that tool calls run on (SPEC TOOL-3, TOOL-6; DESIGN §3).

Tool calls run on worker threads so that the loop can keep streaming events, enforce timeouts and
abort. The pool is shared by every run in the process, so a run does not pay for starting threads,
and its threads are daemons: a tool that never returns cannot keep the interpreter from exiting.
Workers are made on demand, up to ``max_workers``, and leave after ``idle_seconds`` without work,
so an idle process holds none. Work beyond ``max_workers`` waits for a free worker.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable

from ..log import get_logger

log = get_logger(__name__)

DEFAULT_MAX_WORKERS = 256
DEFAULT_IDLE_SECONDS = 30.0


class WorkerPool:
    """Runs ``fn(*args)`` on daemon threads. ``fn`` reports its own outcome (it must not raise)."""

    def __init__(self, max_workers: int = DEFAULT_MAX_WORKERS, idle_seconds: float = DEFAULT_IDLE_SECONDS) -> None:
        self.max_workers = max(1, max_workers)
        self.idle_seconds = idle_seconds
        self._work: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0  # threads alive
        self._idle = 0  # threads waiting for work that no submitted item has claimed yet

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        with self._lock:
            self._work.put((fn, args))
            if self._idle > 0:
                self._idle -= 1  # that waiting worker will take this item
                return
            if self._workers >= self.max_workers:
                return  # queued until a worker is free
            self._workers += 1
        threading.Thread(target=self._serve, name="phi-tool", daemon=True).start()

    @property
    def size(self) -> int:
        """Threads alive now (busy or idle)."""
        return self._workers

    def _serve(self) -> None:
        while True:
            try:
                fn, args = self._work.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._work.empty():  # nobody claimed this worker meanwhile: leave
                        self._idle -= 1
                        self._workers -= 1
                        return
                continue
            try:
                fn(*args)
            except BaseException:  # fn reports its own failures; this is a last resort
                log.exception("worker task failed")
            with self._lock:
                self._idle += 1

    def _after_fork(self) -> None:
        """In a forked child no worker thread exists: start counting from zero."""
        self._work = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = self._idle = 0


_pool = WorkerPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool._after_fork)


def shared_pool() -> WorkerPool:
    """The process-wide pool the loop runs tool calls on."""
    return _pool
