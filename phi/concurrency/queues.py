"""Steering and follow-up queues (SPEC LOOP-9, LOOP-18).

A :class:`MessageQueue` is written by the application (from any thread) and read by the loop at
fixed points. ``one_at_a_time`` hands out one message per read; ``all`` drains the queue. Messages
the loop took but could not deliver before its run ended come back with :meth:`put_back`, at the
front and in their order, so no queued input is ever lost.
"""

from __future__ import annotations

from collections import OrderedDict, deque

from ..types import AgentMessage, QueueMode
from . import sync


_TAKEN_MAX = 4096


class MessageQueue:
    """A thread-safe steering or follow-up queue (SPEC LOOP-9, LOOP-18): the application ``push``-es from
    any thread, the loop ``drain``-s one message or all of them per ``mode``, and messages a run
    took but could not deliver return to the front with ``put_back``."""

    def __init__(self, mode: QueueMode = QueueMode.ONE_AT_A_TIME) -> None:
        self.mode = QueueMode(mode)
        self._items: deque[AgentMessage] = deque()
        # handed out since the last clear(), newest last: what put_back may restore. Bounded: a run gives
        # back only what it took in its last few reads, so old entries are never asked for.
        self._taken: OrderedDict[int, AgentMessage] = OrderedDict()
        self._lock = sync.Lock()

    def push(self, message: AgentMessage) -> None:
        with self._lock:
            self._items.append(message)

    def drain(self) -> list[AgentMessage]:
        """What the loop reads: one message or all of them, per ``mode``."""
        with self._lock:
            if not self._items:
                return []
            if self.mode == QueueMode.ALL:
                items = list(self._items)
                self._items.clear()
            else:
                items = [self._items.popleft()]
            for item in items:
                self._taken[id(item)] = item
            while len(self._taken) > _TAKEN_MAX:
                self._taken.popitem(last=False)
            return items

    def put_back(self, messages: list[AgentMessage]) -> None:
        """Return messages taken by :meth:`drain` to the front of the queue, in their order.

        Messages taken before the queue was last cleared are dropped: :meth:`clear` (``Agent.reset``)
        forgets what a run still holds as well as what waits here."""
        with self._lock:
            kept = [m for m in messages if self._taken.pop(id(m), None) is m]
            self._items.extendleft(reversed(kept))

    def take_all(self) -> list[AgentMessage]:
        """Remove and return every queued message, oldest first, in one step (a message pushed
        meanwhile is either taken or left queued, never lost)."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
            return items

    def snapshot(self) -> list[AgentMessage]:
        """The queued messages, oldest first (the queue is unchanged)."""
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        """Forget every queued message, and the messages runs took and may still give back."""
        with self._lock:
            self._items.clear()
            self._taken.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)
