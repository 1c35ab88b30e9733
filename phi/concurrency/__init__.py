"""SPEC §6 — cancellation and the threads a run uses.

- :mod:`.cancel` — :class:`CancellationToken` (CANCEL-1).
- :mod:`.channel` — :class:`EventChannel` (the sink a run writes to) and :class:`EventStream`
  (what ``Agent.prompt`` returns).
- :mod:`.queues` — :class:`MessageQueue`, the steering and follow-up queues (LOOP-9, LOOP-18).
- :mod:`.workers` — the shared pool of threads tool calls run on (TOOL-6).
- :mod:`.callbacks` — :class:`CallbackList`, process-wide callbacks read without a lock.
- :mod:`.sync` — the one seam through which the run machinery makes its threads, locks, queues and
  clocks (the standard library's, unless a simulation runs).
- :mod:`.simulator` — a test utility, never imported by phi: a deterministic, seeded scheduler of
  everything made through :mod:`.sync`, with virtual time (docs/simulation.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cancel import CancellationToken
    from .channel import EventChannel, EventStream
    from .queues import MessageQueue
    from .workers import configure_tool_pool

__all__ = ["CancellationToken", "EventChannel", "EventStream", "MessageQueue", "configure_tool_pool"]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from ..lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
