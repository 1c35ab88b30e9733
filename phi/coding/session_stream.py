"""What one input of a session gives back (SPEC §14 CODE-1; seed 004 §2.9 "delivered via an iterator"): the live
events of the input, then its :class:`SubmitResult`."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Iterator

from ..events import AgentEnd
from ..types import AgentMessage, AssistantMessage, RunOutcome, Usage
from .config import SessionState
from .events import SessionEvent

#: The core's run outcomes as input outcomes; a run that just stops (no outcome of its own) completed,
#: unless the session's turn limit stopped it.
_OUTCOMES = {RunOutcome.COMPLETED: "completed", RunOutcome.ABORTED: "aborted", RunOutcome.ERROR: "error",
             RunOutcome.LIMIT: "turn_limit"}


@dataclass
class SubmitResult:
    """How an input ended.

    ``outcome``: ``completed`` (the model answered), ``awaiting_input`` (its answer asks the user a
    question), ``turn_limit``, ``error`` (the model call failed; ``error`` says why), ``aborted`` or
    ``closed``. ``state`` is the session's state afterwards; ``messages`` the conversation messages
    this input added (core :mod:`phi.types` messages).
    """

    text: str
    outcome: str
    state: SessionState
    rounds: int = 0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    messages: list[AgentMessage] = field(default_factory=list[AgentMessage])


class SessionStream:
    """Iterate for the input's :class:`~phi.coding.events.SessionEvent` s (iteration ends when the
    input is done); :meth:`result` waits for and returns the :class:`SubmitResult`.

    If the session's run raised (a bug in user code it called, such as a tool's ``execute`` is not
    one: those are results), iteration and ``result()`` re-raise that exception.
    """

    def __init__(self, keep_events: bool = True) -> None:
        # None in the queue marks the end of the input
        self._queue: queue.SimpleQueue[SessionEvent | None] | None = queue.SimpleQueue() if keep_events else None
        self._done = threading.Event()
        self._result: SubmitResult | None = None
        self._error: BaseException | None = None

    def put(self, event: SessionEvent) -> None:
        """The session's side: add ``event`` for the iterator (a stream of ``submit`` keeps none)."""
        if self._queue is not None:
            self._queue.put(event)

    def finish(self, result: SubmitResult, error: BaseException | None = None) -> None:
        """The session's side: the input is done with ``result`` (or the run raised ``error``); iteration
        ends and :meth:`result` returns. Only the first call counts."""
        if self._done.is_set():
            return
        self._result, self._error = result, error
        self._done.set()
        if self._queue is not None:
            self._queue.put(None)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def __iter__(self) -> Iterator[SessionEvent]:
        if self._queue is None:
            raise TypeError("this stream keeps no events (Session.submit); use Session.submit_stream to iterate")
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.put(None)  # a second iteration ends too
                break
            yield item
        if self._error is not None:
            raise self._error

    def result(self, timeout: float | None = None) -> SubmitResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"the input was not done within {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


def result_of_run(end: AgentEnd, state: SessionState, rounds: int, limit_hit: bool) -> SubmitResult:
    """The :class:`SubmitResult` of an input whose run ended with ``end``; ``limit_hit``: the session's
    turn limit stopped it."""
    text = next((m.text for m in reversed(end.messages) if isinstance(m, AssistantMessage)), "")
    outcome = _OUTCOMES.get(end.outcome, "turn_limit" if limit_hit else "completed")
    if outcome == "completed" and text.rstrip().endswith("?"):
        outcome = "awaiting_input"  # the model asked the user something (seed 004 §2.3)
    error = next((m.error_message for m in reversed(end.messages)
                  if isinstance(m, AssistantMessage) and m.error_message), None) if outcome == "error" else None
    return SubmitResult(text, outcome, state, rounds, end.usage, error, list(end.messages))


__all__ = ["SessionStream", "SubmitResult", "result_of_run"]
