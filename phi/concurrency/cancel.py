"""Cooperative cancellation (SPEC §6, CANCEL-1).

A :class:`CancellationToken` is a one-way switch with a tree of children and callbacks. Cancelling a
token cancels its whole subtree *at once*: every descendant reports ``is_cancelled()`` from the
moment the token does, before any callback runs, so a slow callback of one tool can never leave a
sibling tool un-cancelled (SPEC CANCEL-1, CANCEL-3). Blocking I/O registers a callback that
interrupts it (providers close their HTTP response, shell tools kill their process group), which is
how an abort takes effect within milliseconds.

Callbacks run once, with no lock held (so a callback may itself cancel tokens, report progress or
abort a run), on helper threads: the callbacks of each token of the tree in registration order, each
token's on a helper of its own, so a callback that blocks delays only the other callbacks of its own
token. ``cancel()`` waits for the helpers at most :data:`CALLBACK_WAIT_S` (SPEC LOOP-19); a callback
still running then goes on in the background (with a WARNING). ``cancel(wait=False)`` does not wait
at all: the loop uses it for a call it stops waiting for (a timeout, TOOL-6), which must not cost the
run the callback's time.
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


class CancellationToken:
    """A one-way switch: once cancelled, always cancelled."""

    __slots__ = ("_cancelled", "_event", "_lock", "_callbacks", "_children", "_parent", "_key", "__weakref__")

    def __init__(self) -> None:
        self._cancelled = False
        self._event: threading.Event | None = None  # made by the first wait(): most tokens never wait
        self._lock = sync.Lock()
        # registration key -> callback / child; both None once cancelled. Dicts make removal O(1).
        self._callbacks: dict[int, Callable[[], None]] | None = {}
        self._children: dict[int, CancellationToken] | None = {}
        self._parent: CancellationToken | None = None  # while attached: a cancelled parent cancels this token
        self._key = 0  # this token's key among its parent's children

    def cancel(self, wait: bool = True) -> None:
        """Cancel this token and its whole subtree at once, then run every registered callback once.

        With ``wait`` (the default) this waits for the callbacks at most :data:`CALLBACK_WAIT_S`;
        without, it returns as soon as the tree is marked. A callback that raises is logged and does
        not stop the others.
        """
        groups = self._mark()
        if groups is None:  # cancelled before
            return
        self._leave_parent()  # a cancelled token needs no parent to cancel it: the parent stops holding on to it
        if not groups:
            return
        helpers = [sync.Thread(target=_run_callbacks, args=(callbacks,), name="phi-cancel", daemon=True)
                   for callbacks in groups]
        for helper in helpers:
            helper.start()
        if not wait:
            return
        deadline = sync.monotonic() + CALLBACK_WAIT_S
        for helper in helpers:
            helper.join(max(0.0, deadline - sync.monotonic()))
        if any(helper.is_alive() for helper in helpers):
            log.warning("a cancellation callback is still running after %.1f s; cancel() returns without it",
                        CALLBACK_WAIT_S)

    def _mark(self) -> list[list[Callable[[], None]]] | None:
        """Mark this token and its subtree cancelled; their callbacks, one list per token (tree order,
        walked without recursion: a chain of any depth is fine). None when this token was cancelled
        before."""
        groups: list[list[Callable[[], None]]] = []
        pending: list[CancellationToken] = [self]
        while pending:
            token = pending.pop()
            with token._lock:
                if token._callbacks is None:
                    if token is self:
                        return None
                    continue
                callbacks, token._callbacks = token._callbacks, None
                children, token._children = token._children, None
                token._cancelled = True
                if token._event is not None:
                    token._event.set()
            if callbacks:
                groups.append(list(callbacks.values()))
            pending.extend(reversed(list((children or {}).values())))  # the first child is marked next
        return groups

    def is_cancelled(self) -> bool:
        """Whether this token — or an ancestor it is attached to — has been cancelled."""
        token: CancellationToken | None = self
        while token is not None:
            if token._cancelled:
                return True
            token = token._parent
        return False

    def descends_from(self, ancestor: CancellationToken) -> bool:
        """Whether this token is ``ancestor`` or attached below it (a run's token, a tool call's)."""
        token: CancellationToken | None = self
        while token is not None:
            if token is ancestor:
                return True
            token = token._parent
        return False

    @property
    def cancelled(self) -> bool:
        return self.is_cancelled()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` seconds pass; returns whether it was cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = sync.Event()
            event = self._event
        if self.is_cancelled():  # an ancestor is cancelled: this token is being marked right now
            return True
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
        """A token that is cancelled with this one (at the same moment), but can also be cancelled on
        its own.

        Call :meth:`release` on the child when the work it guards is over, so this token stops
        holding on to it.
        """
        child = CancellationToken()
        child._parent = self  # also for a child of a cancelled token: descends_from() follows it
        with self._lock:
            if self._children is not None:
                child._key = next(_keys)
                self._children[child._key] = child
                return child
        child.cancel()  # made from a cancelled token
        return child

    def release(self) -> None:
        """Detach this token from its parent (no-op for a root token or when already released)."""
        self._leave_parent()
        self._parent = None

    def _leave_parent(self) -> None:
        parent = self._parent
        if parent is not None:
            with parent._lock:
                if parent._children is not None:
                    parent._children.pop(self._key, None)

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self.is_cancelled()})"


_working = threading.local()  # .token: the token of the work this thread is doing for a run


def working_for(token: CancellationToken | None) -> CancellationToken | None:
    """Note that this thread now works for the run ``token`` belongs to (a tool call, a run's
    start-up); returns what it worked for before, for :func:`done_working`."""
    previous: CancellationToken | None = getattr(_working, "token", None)
    _working.token = token
    return previous


def done_working(previous: CancellationToken | None) -> None:
    _working.token = previous


def current_work() -> CancellationToken | None:
    """The token of the work this thread is doing for a run, if any (see :func:`working_for`). An
    Agent uses it to tell that it is called back from inside one of its own runs (SPEC AGENT-1)."""
    token: CancellationToken | None = getattr(_working, "token", None)
    return token


def _nothing() -> None:
    return None


def _run_callbacks(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception:  # a failing callback must not stop the others
            log.exception("cancellation callback failed")
