"""Delivering events to the application (SPEC §3; the sink of §1).

:class:`EventChannel` is the sink a loop writes to: ``send`` never blocks, so a slow consumer can
never stall the loop or a provider's stream. :class:`EventStream` is what ``Agent.prompt`` returns:
iterate it for live events, call :meth:`EventStream.result` for the run's new messages. An exception
raised inside the loop is re-raised to the consumer, never swallowed.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Generic, Iterator, TypeVar, cast

from ..events import AgentEvent
from ..log import get_logger
from . import sync

log = get_logger(__name__)

T = TypeVar("T")

_CLOSED = object()


class EventChannel:
    """An unbounded, thread-safe queue of events. ``send`` never blocks."""

    __slots__ = ("_queue", "_closed")

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = sync.SimpleQueue()
        self._closed = False

    def send(self, event: AgentEvent) -> None:
        if not self._closed:
            self._queue.put(event)

    __call__ = send

    def close(self, discard: bool = False) -> None:
        """No more events: later sends are dropped. Iteration ends once the queued events are read,
        or at once with ``discard=True`` (the queued events are dropped too)."""
        if self._closed:
            return
        self._closed = True
        if discard:
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
        self._queue.put(_CLOSED)

    @property
    def closed(self) -> bool:
        return self._closed

    def get(self, timeout: float | None = None) -> AgentEvent | None:
        """The next event, or ``None`` once the channel is closed and drained.

        Raises ``queue.Empty`` if ``timeout`` passes first.
        """
        item = self._queue.get(timeout=timeout)
        if item is _CLOSED:
            self._queue.put(_CLOSED)  # keep later readers from blocking
            return None
        event: AgentEvent = item
        return event

    def __iter__(self) -> Iterator[AgentEvent]:
        while True:
            item = self._queue.get()
            if item is _CLOSED:
                self._queue.put(_CLOSED)
                return
            yield item


class EventStream(Generic[T]):
    """Live events of a run happening on another thread, then its result.

    ``for event in stream`` yields events as they happen and ends when the run ends; if the run
    raised, the exception is re-raised there (and by :meth:`result`). Breaking out of the loop early
    is fine: the run goes on and its result stays available.
    """

    def __init__(self, channel: EventChannel, done: threading.Event, abort: Callable[[], None] | None = None,
                 before_blocking: Callable[[], None] | None = None,
                 cancelled: Callable[[], bool] | None = None) -> None:
        self._channel = channel
        self._done = done
        self._result: T | None = None
        self._error: BaseException | None = None
        self._abort = abort
        self._cancelled = cancelled
        self._closed = False
        # set when the run's result is known — at its AgentEnd (or a parallel run's decision), while its
        # last callbacks may still run — or when it finished (Agent.run(timeout=), SPEC AGENT-2)
        self._known = sync.Event()
        self._known_result: T | None = None
        self._handed_out = False
        # raises instead of blocking where waiting could never end (see Agent: a run waited for
        # from inside the previous run's subscriber callback)
        self._before_blocking = before_blocking or _nothing

    # ------------------------------------------------------------ the producer's side: the run's own thread

    def know(self, result: T) -> None:
        """The run's result is settled (its AgentEnd was emitted); what follows cannot change it. Called
        by the thread running the run, not by consumers."""
        self._known_result = result
        self._known.set()

    @property
    def settled_result(self) -> T | None:
        """What :meth:`know` was given, if anything yet (for the run's own thread; consumers use
        :meth:`known_result` or :meth:`result`)."""
        return self._known_result

    def finish(self, result: T | None, error: BaseException | None) -> None:
        """The run is over with ``result``, or raised ``error``: the stream ends. Called by the thread
        running the run, not by consumers."""
        self._result, self._error = result, error
        self._done.set()
        self._known.set()
        self._channel.close()
        if error is not None and self._handed_out:  # nobody is left to raise it to
            log.error("a run raised after its caller stopped waiting for it (run(timeout=)): %s: %s",
                      type(error).__name__, error, exc_info=error)

    # ------------------------------------------------------------ the consumer's side

    @property
    def result_known(self) -> bool:
        """Whether the run's result is known (it emitted its AgentEnd, or it finished)."""
        return self._known.is_set()

    def wait_known(self, timeout: float | None = None) -> bool:
        """Block until the run's result is known; returns False if ``timeout`` passed first."""
        return self._known.wait(timeout)

    @property
    def cancelled(self) -> bool:
        """Whether the run was asked to abort (by anyone)."""
        return self._cancelled is not None and self._cancelled()

    def give_up(self) -> None:
        """Nobody will wait for this run any more: an exception it raises later is logged."""
        self._handed_out = True
        if self._done.is_set() and self._error is not None:
            log.error("a run raised after its caller stopped waiting for it: %s: %s", type(self._error).__name__,
                      self._error, exc_info=self._error)

    def known_result(self) -> T:
        """The result settled at the run's AgentEnd, before the run's last callbacks returned (an
        exception they raise afterwards is logged, as nobody waits for it then)."""
        self._handed_out = True  # first: a run finishing right now then logs what it raised, never drops it
        if self._done.is_set():
            return self.result()
        return cast(T, self._known_result)

    def __iter__(self) -> Iterator[AgentEvent]:
        self._before_blocking()
        for event in self._channel:
            yield event
        if self._closed:
            return  # closed by the consumer: no more events, and no error either
        self._done.wait()
        if self._error is not None:
            try:
                raise self._error
            finally:  # the error's traceback holds this frame: it must not hold the stream that holds the error
                del self

    def result(self, timeout: float | None = None) -> T:
        """Wait for the run to finish and return its result (re-raising the run's exception)."""
        if not self._done.is_set():
            self._before_blocking()
        if not self._done.wait(timeout):
            raise TimeoutError(f"the run did not finish within {timeout} s")
        if self._error is not None:
            try:
                raise self._error
            finally:  # the error's traceback holds this frame: it must not hold the stream that holds the error
                del self
        return cast(T, self._result)  # set by _finish whenever no error was

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def close(self) -> None:
        """Abort the run (if it is still going) and stop delivering events: the events not read yet
        are dropped and iteration ends. :meth:`result` still gives the run's result."""
        self._closed = True
        self.abort()
        self._channel.close(discard=True)

    def abort(self) -> None:
        """Abort the run if it is still going (events keep coming until it has ended)."""
        if self._abort is not None and not self._done.is_set():
            self._abort()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run has finished; returns False if ``timeout`` passed first."""
        if not self._done.is_set():
            self._before_blocking()
        return self._done.wait(timeout)

    def __enter__(self) -> EventStream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _nothing() -> None:
    return None
