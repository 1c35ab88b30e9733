"""SPEC §6 — a process-wide list of callbacks that any thread may add to, remove from and call.

Readers never lock: the tuple is replaced, never changed in place, so a thread that is calling the
callbacks goes on with the ones it saw (used for retry observers, SPEC §17 OTEL-5, and trace-context
carriers, OTEL-10).
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., object])


class CallbackList(Generic[F]):
    """Callbacks added with :meth:`add` (which returns the function that removes the one added)."""

    def __init__(self) -> None:
        self._items: tuple[F, ...] = ()
        self._lock = threading.Lock()

    def add(self, callback: F) -> Callable[[], None]:
        with self._lock:
            self._items = (*self._items, callback)

        def remove() -> None:
            with self._lock:
                self._items = tuple(c for c in self._items if c is not callback)

        return remove

    def __iter__(self) -> Iterator[F]:
        return iter(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)
