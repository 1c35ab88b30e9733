"""What a coding session keeps track of besides its state (SPEC §14 CODE-2, CODE-10; seed 004 §2.9,
Appendix B): who listens to its events, which queued messages it made, and which threads are working
for it.

Each is a small thread-safe register a :class:`~phi.coding.session.Session` owns:

* :class:`Subscribers` — the event callbacks, each with whether it wants the events of sub-agents
  too. Delivery reads an immutable snapshot, so a callback may subscribe or unsubscribe others.
* :class:`MessageTags` — what each user message the session queued is (``input``, ``follow_up``,
  ``steering``, ``loop_warning``), so that the event bridge can tell them apart when the core
  loop announces them.
* :class:`WorkingThreads` — the threads running one of the session's tool calls, so that an abort
  called from inside such a call (an approval callback, say) does not wait for itself.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Generator

from ..log import get_logger
from ..types import AgentMessage
from .events import SessionEvent

log = get_logger(__name__)

EventCallback = Callable[[SessionEvent], None]


class Subscribers:
    """The event callbacks of one session."""

    def __init__(self) -> None:
        self._entries: tuple[tuple[EventCallback, bool], ...] = ()  # replaced, never changed in place
        self._lock = threading.Lock()

    def add(self, callback: EventCallback, include_subagents: bool = False) -> Callable[[], None]:
        """Register ``callback``; returns the function that removes it again."""
        entry = (callback, include_subagents)
        with self._lock:
            self._entries = (*self._entries, entry)

        def remove() -> None:
            with self._lock:
                self._entries = tuple(e for e in self._entries if e is not entry)

        return remove

    def deliver(self, event: SessionEvent, own: bool) -> None:
        """Call every callback that wants ``event`` (``own``: it is the session's own, not a sub-agent's)."""
        for callback, include_subagents in self._entries:
            if own or include_subagents:
                try:
                    callback(event)
                except Exception:  # a failing subscriber must not take the session down
                    log.exception("session event subscriber raised on %s", event.kind.name)


class MessageTags:
    """Message -> tag, for the messages a session queued until the core loop announces them."""

    def __init__(self) -> None:
        self._tags: dict[int, tuple[str, AgentMessage]] = {}
        self._lock = threading.Lock()

    def tag(self, message: AgentMessage, tag: str) -> None:
        with self._lock:
            self._tags[id(message)] = (tag, message)  # the message is kept, so its id stays unique

    def untag(self, message: AgentMessage) -> str | None:
        """Forget ``message``; its tag, or None for a message the session did not make."""
        with self._lock:
            entry = self._tags.pop(id(message), None)
        return entry[0] if entry is not None and entry[1] is message else None


class WorkingThreads:
    """The threads running a tool call for one session (a thread may run nested calls)."""

    def __init__(self) -> None:
        self._calls: dict[int, int] = {}  # thread ident -> tool calls of the session it runs
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def working(self) -> Generator[None, None, None]:
        """Count the calling thread as working for the session while in the block."""
        ident = threading.get_ident()
        with self._lock:
            self._calls[ident] = self._calls.get(ident, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._calls.pop(ident) - 1
                if left:
                    self._calls[ident] = left

    def __contains__(self, ident: object) -> bool:
        with self._lock:
            return ident in self._calls


__all__ = ["Subscribers", "MessageTags", "WorkingThreads", "EventCallback"]
