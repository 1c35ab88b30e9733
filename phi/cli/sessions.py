"""Recording the ``phi`` command's conversations and resuming them after a restart (SPEC §15 CLI-4).

Every run of the coding session's agent is recorded by a :class:`~phi.session.SessionRecorder`
(``Agent.record_sessions``) and, after each input, saved to a
:class:`~phi.session.JsonDirStore` (``$PHI_HOME/sessions`` by default; ``/save`` saves at once).

Resuming (``/resume ID``, ``phi --resume ID``) loads the stored session and gives the new process's
agent its identity and history: the session and agent ids, the messages of every loop in order, and
loop counters that continue after the stored loop ids. The recorder of the new process only sees the
new loops, so each save writes the stored loops followed by the new ones: nothing recorded before
the restart is lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..types import UserMessage

if TYPE_CHECKING:
    from ..agent import Agent
    from ..session import Session

_LOOP_ID = re.compile(r"\A(.*)\.(\d+)\Z")


@dataclass
class StoredSummary:
    session_id: str
    last_active_at: float
    loops: int
    first_input: str


class CliSessions:
    """The store and the recorder of one ``phi`` process."""

    def __init__(self, directory: str | Path) -> None:
        from ..session import JsonDirStore, SessionRecorder, SessionRecorderConfig

        self.directory = Path(directory)
        self.store = JsonDirStore(self.directory)
        self.recorder = SessionRecorder(SessionRecorderConfig(keep_events=True, include_streaming_events=False))
        self._previous: dict[str, Session] = {}  # session id -> the stored session it continues

    def attach(self, agent: Agent) -> None:
        """Record ``agent``'s runs (call once per agent)."""
        agent.record_sessions(self.recorder)

    def save(self) -> list[str]:
        """Save every session with new loops; returns their ids. Store errors propagate."""
        saved = []
        for session in self.recorder.flush():
            previous = self._previous.get(session.session_id)
            if previous is not None:
                known = {loop.loop_id for loop in session.loops}
                older = [loop for loop in previous.loops if loop.loop_id not in known]
                session = replace(session, agent_id=previous.agent_id, created_at=previous.created_at,
                                  formation=previous.formation, loops=[*older, *session.loops])
            self.store.save(session)
            saved.append(session.session_id)
        return saved

    def path_of(self, session_id: str) -> str:
        return self.store.path_of(session_id)

    def summaries(self, limit: int = 20) -> list[StoredSummary]:
        """The most recently saved sessions (unreadable files are reported by the store's error)."""
        rows = []
        for session_id in self.store.list_ids()[:limit]:
            session = self.store.load(session_id)
            first = next((m.text for loop in session.loops for m in loop.messages
                          if isinstance(m, UserMessage)), "")
            rows.append(StoredSummary(session_id, session.last_active_at, len(session.loops),
                                      " ".join(first.split())[:60]))
        return rows

    def restore(self, session_id: str, agent: Agent) -> int:
        """Give ``agent`` the stored session's identity and conversation; returns the number of
        messages restored. Raises the store's NotFound / CorruptSession / InvalidSessionId."""
        stored = self.store.load(session_id)
        loops = sorted(stored.loops, key=lambda loop: loop.started_at)
        messages = [m for loop in loops for m in loop.messages]
        counters: dict[str, int] = {}
        for loop in loops:
            match = _LOOP_ID.match(loop.loop_id)
            if match:
                counters[match.group(1)] = max(counters.get(match.group(1), 0), int(match.group(2)))
        from ..agent.snapshot import AgentSnapshot
        from ..types import message_to_json

        agent.restore(AgentSnapshot([message_to_json(m) for m in messages], stored.agent_id, stored.session_id,
                                    counters, loops[-1].loop_id if loops else None))
        self._previous[stored.session_id] = stored
        return len(messages)


__all__ = ["CliSessions", "StoredSummary"]
