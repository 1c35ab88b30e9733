"""SPEC §6 — the one seam through which phi's run machinery reaches threads, locks, queues and clocks.

Every thread the run machinery starts (a run's worker, tool workers, the cancel helper, parallel
branches), every lock, condition, event and queue it waits on, and every clock it reads or sleeps
on is made here: ``sync.Lock()``, ``sync.Thread(...)``, ``sync.monotonic()``. In a normal process
they are exactly the standard library's. The deterministic simulator
(:mod:`phi.concurrency.simulator`, a test utility) swaps them for its own while it runs, so one
seeded scheduler decides which thread runs next and time is virtual. Code of the run machinery
therefore names these through the module (``sync.Event()``), never ``from .sync import Event``:
a name bound at import would not see the swap.
"""

from __future__ import annotations

import queue
import threading
import time as _time
from typing import Callable

Lock = threading.Lock
RLock = threading.RLock
Condition = threading.Condition
Event = threading.Event
SimpleQueue = queue.SimpleQueue
Thread = threading.Thread

# The clocks are functions of this module that read a swappable source, so that a default bound
# once (``AgentLoopConfig.clock = sync.monotonic``) still follows the simulator. The sources are
# what the simulator swaps; everyone else calls the functions below.
monotonic_source: Callable[[], float] = _time.monotonic
wall_source: Callable[[], float] = _time.time
sleep_source: Callable[[float], None] = _time.sleep


def monotonic() -> float:
    """Seconds of a clock that never goes back (``time.monotonic``; virtual in a simulation)."""
    return monotonic_source()


def wall_time() -> float:
    """Seconds since the epoch (``time.time``; virtual in a simulation)."""
    return wall_source()


def sleep(seconds: float) -> None:
    """Block this thread for ``seconds`` (``time.sleep``; virtual in a simulation)."""
    sleep_source(seconds)


__all__ = ["Condition", "Event", "Lock", "RLock", "SimpleQueue", "Thread", "monotonic", "sleep", "wall_time"]
