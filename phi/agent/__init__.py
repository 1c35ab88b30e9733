"""SPEC §11 — the Agent: phi's application API, a conversation with a model, its tools and settings.

- :mod:`.agent` — :class:`Agent`: runs on a worker thread, queues, abort, identity, resuming.
- :mod:`.result` — :class:`AgentResult` (AGENT-2).
- :mod:`.snapshot` — :class:`AgentSnapshot` and the resume point of an interrupted run (AGENT-6).
- :mod:`.sources` — tool sources asked for their tools at every run (AGENT-5).
- :mod:`.recording` — recording runs into sessions (SESS-7).
- :mod:`.structured` and :mod:`.final_answer` — ``run_structured`` (AGENT-4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .agent import Agent
    from .result import AgentResult, SessionFork
    from .snapshot import AgentSnapshot

__all__ = ["Agent", "AgentResult", "AgentSnapshot", "SessionFork"]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from ..lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
