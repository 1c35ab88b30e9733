"""Cooperative cancellation (SPEC §6, CANCEL-1).

A :class:`CancellationToken` is a ``threading.Event`` with a tree of children and callbacks. Cancelling
a token cancels every child made from it, and runs its callbacks once, with no lock held (so a
callback may itself cancel tokens, report progress or abort a run). Blocking I/O registers a callback
that interrupts it (providers close their HTTP response, shell tools kill their process group), which
is how an abort takes effect within milliseconds.

``cancel()`` never blocks for long, whatever a callback does (SPEC LOOP-19): the token is marked
cancelled at once, then the callbacks — the whole tree's, in registration order — run on a helper
thread that ``cancel()`` waits for at most :data:`CALLBACK_WAIT_S`. A callback still running after
that goes on in the background (with a WARNING); the caller has returned.
"""

from __future__ import annotations

import itertools
import threading
from typing import Callable

from ..log import get_logger
from . import sync

log = get_logger(__name__)

_keys = itertools.count()

#: How long ``cancel()`` waits for the callbacks before returning without them.
CALLBACK_WAIT_S = 0.5

_running_callbacks = threading.local()  # set on the thread that runs a cancel's callbacks


class CancellationToken:
    """A one-way switch: once cancelled, always cancelled."""

    __slots__ = ("_cancelled", "_event", "_lock", "_callbacks", "_detach", "__weakref__")

    def __init__(self) -> None:
        self._cancelled = False
        self._event: threading.Event | None = None  # made by the first wait(): most tokens never wait
        self._lock = sync.Lock()
        # registration key -> callback; None once cancelled. A dict makes unregistering O(1).
        self._callbacks: dict[int, Callable[[], None]] | None = {}
        self._detach: Callable[[], None] | None = None

    def cancel(self) -> None:
        """Cancel this token and all its children; run the registered callbacks once.

        Callbacks run in registration order, after the lock is released, on a helper thread that
        this call waits for at most :data:`CALLBACK_WAIT_S` (children's callbacks run on the same
        helper thread). One that raises is logged and does not stop the others.
        """
        with self._lock:
            if self._callbacks is None:
                return
            callbacks, self._callbacks = self._callbacks, None
            self._cancelled = True
            if self._event is not None:
                self._event.set()
        if not callbacks:
            return
        if getattr(_running_callbacks, "active", False):  # a child cancelled by its parent's callback
            _run_callbacks(list(callbacks.values()))
            return
        helper = sync.Thread(target=_run_callbacks, args=(list(callbacks.values()), True),
                                  name="phi-cancel", daemon=True)
        helper.start()
        helper.join(CALLBACK_WAIT_S)
        if helper.is_alive():
            log.warning("a cancellation callback is still running after %.1f s; cancel() returns without it",
                        CALLBACK_WAIT_S)

    def is_cancelled(self) -> bool:
        return self._cancelled

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; returns whether it was cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = sync.Event()
            event = self._event
        return event.wait(timeout)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when this token is cancelled (at once, on this thread, if it already is).

        Returns a function that unregisters the callback; call it when the guarded work is done.
        """
        with self._lock:
            if self._callbacks is not None:
                key = next(_keys)
                self._callbacks[key] = callback
                return lambda: self._remove(key)
        callback()
        return _nothing

    def _remove(self, key: int) -> None:
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.pop(key, None)

    def child_token(self) -> CancellationToken:
        """A token that is cancelled with this one, but can also be cancelled on its own.

        Call :meth:`release` on the child when the work it guards is over, so this token stops
        holding on to it (a cancelled child releases itself).
        """
        child = CancellationToken()
        child._detach = self.on_cancel(child.cancel)
        child.on_cancel(child.release)
        return child

    def release(self) -> None:
        """Detach this token from its parent (no-op for a root token or when already released)."""
        detach, self._detach = self._detach, None
        if detach is not None:
            detach()

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self.is_cancelled()})"


def _nothing() -> None:
    return None


def _run_callbacks(callbacks: list[Callable[[], None]], mark: bool = False) -> None:
    if mark:
        _running_callbacks.active = True
    for callback in callbacks:
        try:
            callback()
        except Exception:  # a failing callback must not stop the others
            log.exception("cancellation callback failed")
