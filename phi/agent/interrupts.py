"""Ctrl+C during a blocking run on the main thread (SPEC AGENT-2; issue 36).

A blocking run without a timeout runs on the caller's thread. Python raises ``KeyboardInterrupt`` in
the main thread wherever it happens to be — inside the loop's own bookkeeping too — so while such a
run is on the main thread and Python's own SIGINT handler is in place, the first Ctrl+C aborts the
run instead (it winds down as ``abort()`` would, the history a valid conversation) and
``KeyboardInterrupt`` is raised to the caller once it has; a second Ctrl+C raises at once. An
application's own SIGINT handler is left alone, and so are runs on other threads (Python delivers
signals to the main thread only).
"""

from __future__ import annotations

import _thread
import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Callable, Generator

from ..log import get_logger

log = get_logger(__name__)

#: what each blocking run on the main thread would be aborted with, innermost last
_aborts: list[Callable[[], None]] = []
_pressed = False


def _on_ctrl_c(signum: int, frame: FrameType | None) -> None:
    global _pressed
    if _pressed:
        raise KeyboardInterrupt
    _pressed = True
    # not here: the main thread may be stopped inside a lock the abort takes. A bare thread, whose
    # start takes none of the threading module's locks, aborts the runs instead.
    _thread.start_new_thread(_abort_all, (list(_aborts),))


def _abort_all(aborts: list[Callable[[], None]]) -> None:
    for abort in aborts:
        try:
            abort()
        except Exception:  # noqa: BLE001 - one failing abort must not keep the others from running
            log.warning("aborting a run after Ctrl+C failed", exc_info=True)


@contextmanager
def ctrl_c_aborts(abort: Callable[[], None]) -> Generator[None, None, None]:
    """While the block runs: a Ctrl+C calls ``abort`` (see the module docstring); at its end, when
    one came, ``KeyboardInterrupt`` is raised."""
    global _pressed
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outermost = not _aborts
    if outermost and signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield  # the application handles Ctrl+C itself
        return
    if outermost:
        _pressed = False
        signal.signal(signal.SIGINT, _on_ctrl_c)
    _aborts.append(abort)
    try:
        yield
    finally:
        _aborts.pop()
        if outermost:
            if signal.getsignal(signal.SIGINT) is _on_ctrl_c:  # one the application set meanwhile stays
                signal.signal(signal.SIGINT, signal.default_int_handler)
            pressed, _pressed = _pressed, False
            if pressed:
                raise KeyboardInterrupt


__all__ = ["ctrl_c_aborts"]
