"""One thread that watches the time bounds of every model call in the process (SPEC PROV-4; issue 36).

Each :class:`~phi.providers.transport.CallStop` (a call's total bound and its idle bound) used to
start a thread of its own; with thousands of sessions in one process that was a thread per call in
flight. Here every bound waits in one heap, served by one daemon thread that runs while any call is
watched (and leaves after :data:`IDLE_S` without one). A bound is a function: called when it falls
due, it acts (cancels its call) and returns None, or returns the seconds until it should be asked
again (an idle bound whose call received something meanwhile). A watched call that ends is
forgotten at once (:meth:`Watch.stop`); its place in the heap is reclaimed when the heap holds more
ended entries than live ones, so a process making calls all day holds only the calls in flight.

A bound must be quick and must not wait: it runs on the thread every other call's bound waits for.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from typing import Callable

from ..log import get_logger

log = get_logger(__name__)

#: how long the thread stays without a call to watch before it leaves
IDLE_S = 30.0

Check = Callable[[], "float | None"]


class Watch:
    """One watched call's place in the heap."""

    __slots__ = ("check", "stopped", "queued")

    def __init__(self, check: Check) -> None:
        self.check = check
        self.stopped = False
        self.queued = False  # in the heap (not while its bound is being asked)

    def stop(self) -> None:
        """The call ended: its bound is not asked again."""
        _watchdog.forget(self)


class Watchdog:
    """The heap of bounds and the thread that serves it (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._due = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()  # ties in time are served in the order they were set
        self._ended = 0  # entries in the heap whose watch stopped
        self._running = False

    def watch(self, check: Check, after: float) -> Watch:
        """Ask ``check`` in ``after`` seconds (then as it says)."""
        entry = Watch(check)
        with self._lock:
            self._push(entry, after)
            start = not self._running
            self._running = True
            self._due.notify()
        if start:
            threading.Thread(target=self._serve, name="phi-call-watchdog", daemon=True).start()
        return entry

    def forget(self, entry: Watch) -> None:
        with self._lock:
            if entry.stopped:
                return
            entry.stopped = True
            if not entry.queued:
                return  # being asked now: it is not put back
            self._ended += 1
            if self._ended * 2 > len(self._heap):  # mostly ended calls: keep only the live ones
                for item in self._heap:
                    if item[2].stopped:
                        item[2].queued = False
                self._heap = [item for item in self._heap if not item[2].stopped]
                heapq.heapify(self._heap)
                self._ended = 0

    @property
    def watched(self) -> int:
        """Calls watched now."""
        with self._lock:
            return len(self._heap) - self._ended

    def _serve(self) -> None:
        while True:
            entry = self._next()
            if entry is None:
                return
            try:
                again = entry.check()
            except Exception:  # noqa: BLE001 - one call's bound must not stop the others'
                log.exception("a call's time bound failed")
                again = None
            with self._lock:
                if again is None or entry.stopped:
                    entry.stopped = True  # it acted, or its call ended: nothing of it stays in the heap
                    continue
                self._push(entry, again)

    def _push(self, entry: Watch, after: float) -> None:
        entry.queued = True
        heapq.heappush(self._heap, (time.monotonic() + max(0.0, after), next(self._order), entry))

    def _next(self) -> Watch | None:
        """The next bound that falls due (taken out of the heap), or None when the thread leaves."""
        with self._lock:
            while True:
                while self._heap and self._heap[0][2].stopped:
                    heapq.heappop(self._heap)[2].queued = False
                    self._ended -= 1
                if not self._heap:
                    if not self._due.wait(IDLE_S) and not self._heap:
                        self._running = False
                        return None
                    continue
                when, _, entry = self._heap[0]
                wait = when - time.monotonic()
                if wait <= 0:
                    heapq.heappop(self._heap)
                    entry.queued = False
                    return entry
                self._due.wait(wait)

    def after_fork(self) -> None:
        """In a forked child the thread does not exist: start again empty."""
        self.__init__()  # type: ignore[misc]


_watchdog = Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_watchdog.after_fork)


def watch(check: Check, after: float) -> Watch:
    """Ask ``check`` in ``after`` seconds on the process's watchdog thread (see the module docstring)."""
    return _watchdog.watch(check, after)


def watched() -> int:
    """How many calls the watchdog watches now."""
    return _watchdog.watched


__all__ = ["watch", "watched", "Watch", "Watchdog", "IDLE_S"]
