"""Cooperative cancellation (SPEC §6).

A :class:`CancellationToken` is a ``threading.Event`` with a tree of children and callbacks. Cancelling
a token cancels every child made from it, and runs its callbacks once, on the cancelling thread.
Blocking I/O registers a callback that interrupts it (providers close their HTTP response, shell
tools kill their process group), which is how an abort takes effect within milliseconds.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("phi.cancel")


class CancellationToken:
    """A one-way switch: once cancelled, always cancelled."""

    __slots__ = ("_event", "_lock", "_callbacks", "__weakref__")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] | None = []

    def cancel(self) -> None:
        """Cancel this token and all its children; run the registered callbacks once."""
        with self._lock:
            if self._callbacks is None:
                return
            callbacks, self._callbacks = self._callbacks, None
            self._event.set()
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a failing callback must not stop the others
                log.exception("cancellation callback failed")

    def is_cancelled(self) -> bool:
        return self._event.is_set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; returns whether it was cancelled."""
        return self._event.wait(timeout)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when this token is cancelled (at once if it already is).

        Returns a function that unregisters the callback; call it when the guarded work is done.
        """
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if self._callbacks is not None:
                try:
                    self._callbacks.remove(callback)
                except ValueError:
                    pass

    def child_token(self) -> CancellationToken:
        """A token that is cancelled with this one, but can also be cancelled on its own."""
        child = CancellationToken()
        unregister = self.on_cancel(child.cancel)
        # When the child is cancelled first, stop the parent from holding on to it.
        child.on_cancel(unregister)
        return child

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self.is_cancelled()})"
