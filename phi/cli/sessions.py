"""Recording the ``phi`` command's conversations and resuming them after a restart (SPEC §15 CLI-4,
§13.2 SESS-8).

Every run of the coding session's agent is recorded by a :class:`~phi.session.SessionRecorder`
(``Agent.record_sessions``) and, after each input, what changed is appended to a
:class:`~phi.session.JsonDirStore` (``$PHI_HOME/sessions`` by default; ``/save`` saves at once).

Resuming (``/resume ID [LOOP]``, ``phi --resume ID``) loads the stored session, lets the recorder
continue it (new loops are appended to it, links to its loops kept) and gives the new process's
agent the conversation through the session's latest loop — or through ``LOOP``, branching there —
as ``SessionRecorder.branch_from`` rebuilds it: a branch followed by its parent chain, only the
selected branch of a parallel run, no judge's exchange.

A stored link to a sub-agent's or a parent's session or run that the store lacks (a crash between
two saves, SPEC SESS-5) never stops a listing or a resume: each is said in words — under its row in
``/sessions`` and the ``--resume`` list, as a warning when the session is resumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..types import UserMessage

if TYPE_CHECKING:
    from ..agent import Agent
    from ..coding.session import Session


SAVE_WAIT_S = 5.0  # how long a save waits for an agent's run to finish saving itself


@dataclass
class StoredSummary:
    session_id: str
    last_active_at: float
    loops: int
    first_input: str
    dangling: tuple[str, ...] = ()  # links to sessions or runs the store lacks, in words


class CliSessions:
    """The store and the recorder of one ``phi`` process."""

    def __init__(self, directory: str | Path) -> None:
        from ..session import JsonDirStore, SessionRecorder, SessionRecorderConfig

        self.directory = Path(directory)
        self.store = JsonDirStore(self.directory)
        self.recorder = SessionRecorder(SessionRecorderConfig(keep_events=True, include_streaming_events=False))
        self.agents: list[Agent] = []  # attached: their runs save themselves as they end

    def attach(self, agent: Agent) -> None:
        """Record ``agent``'s runs (call once per agent): each run claims its loop ids in the store
        as it starts and is saved when it ends, so another ``phi`` continuing the same session at
        the same moment puts its turns on a branch of their own (SPEC SESS-6, CLI-4)."""
        agent.record_sessions(self.recorder, self.store)
        self.agents.append(agent)

    def attach_session(self, session: Session) -> None:
        """Record the runs of a coding session's agent (its ``spawn_agent`` children are not saved:
        their work reaches the parent as the ``wait`` tool's result)."""
        self.attach(session.agent)

    def save(self) -> list[str]:
        """Append what changed in every settled session; returns their ids. Store errors propagate
        (what was not saved is handed out again by the next save)."""
        from ..session import SessionConflict
        from ..agent.recording import save_whole
        from ..session.store import children_first

        for agent in self.agents:  # a run that just ended may still be saving what this would hand out
            agent.wait_for_saved(SAVE_WAIT_S)
        saved: list[str] = []
        for session in children_first(self.recorder.flush_changes()):
            try:
                save_whole(self.store, session)
            except SessionConflict:
                raise  # another process continued this session from the same point: retrying cannot help
            except Exception:
                self.recorder.requeue(session)
                raise
            saved.append(session.session_id)
        return saved

    def path_of(self, session_id: str) -> str:
        return self.store.path_of(session_id)

    def summaries(self, limit: int = 20) -> list[StoredSummary]:
        """The most recently saved sessions (unreadable files are reported by the store's error)."""
        from ..session.links import find_dangling, remembering_loader

        load = remembering_loader(self.store)  # a linked session is loaded once for all rows
        rows: list[StoredSummary] = []
        for session_id in self.store.list_ids()[:limit]:
            session = self.store.load(session_id)
            first = next((m.text for loop in session.loops for m in loop.messages
                          if isinstance(m, UserMessage)), "")
            dangling = tuple(str(link) for link in find_dangling(session, load))
            rows.append(StoredSummary(session_id, session.last_active_at, len(session.loops),
                                      " ".join(first.split())[:60], dangling))
        return rows

    def restore(self, session_id: str, agent: Agent, at: str | None = None,
                warn: Callable[[str], None] | None = None) -> int:
        """Give ``agent`` the stored session's identity and the conversation through loop ``at``
        (default: its latest loop); returns the number of messages restored. Raises the store's
        NotFound / CorruptSession / InvalidSessionId, and KeyError for a loop the session lacks.
        ``warn`` is told each link of the session to a session or run the store lacks."""
        from ..session import BranchPoint, dangling_links

        stored = self.store.load(session_id)
        if warn is not None:
            for link in dangling_links(self.store, stored):
                warn(str(link))
        if not self.recorder.continue_session(stored):
            self.recorder.absorb(stored)  # held already: take in what other writers stored since
        if at is None:
            latest = stored.latest_loop()
            at = latest.loop_id if latest is not None else None
        if at is None:
            snapshot = BranchPoint([], stored.agent_id, stored.session_id, {}, None)
        elif stored.get_loop(at) is None:
            raise KeyError(f"session {session_id} has no loop {at!r}")
        else:
            snapshot = self.recorder.branch_from(at)
        agent.restore(snapshot)
        return len(snapshot.messages)


__all__ = ["CliSessions", "StoredSummary"]
