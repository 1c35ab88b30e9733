"""The sessions one export shows: a session and every sub-agent session it reaches (SPEC §16 EXPORT-2,
EXPORT-5).

A sub-agent's run lives in a session of its own, linked from the parent loop by a
:class:`~phi.session.ChildLoopRef` (docs/sessions.md "Cross-session sub-agents"). :func:`load_tree`
loads the requested session, then follows those links through the store, breadth first, so the
export shows the whole loop tree. The requested session must load (its errors are the store's:
``NotFound``, ``CorruptSession``, ``InvalidSessionId``, ``SessionError``); a child session that
cannot be loaded is kept in ``missing`` with the reason and shown as such — one bad child file does
not hide the rest of the run. Every link that leads nowhere (a child session or loop the store
lacks, a parent session or loop of the exported session that is not stored: a crash between two
saves) is in ``dangling``, in words, for the page and the command to report.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..session import DanglingLink, LoopRecord, Session, SessionError, SessionStore
from ..session.links import find_dangling, remembering_loader

MAX_SESSIONS = 10_000  # a guard against a store whose links never end


@dataclass
class ExportTree:
    """``root``: the exported session; ``sessions``: it and every child session loaded, by id;
    ``missing``: child session id -> why it could not be loaded; ``dangling``: every link of the
    loaded sessions that leads to a session or loop the store does not hold."""

    root: Session
    sessions: dict[str, Session] = field(default_factory=dict[str, Session])
    missing: dict[str, str] = field(default_factory=dict[str, str])
    dangling: list[DanglingLink] = field(default_factory=list[DanglingLink])

    def dangling_child(self, loop_id: str, tool_call_id: str) -> DanglingLink | None:
        """The dangling sub-agent link of this loop and tool call, if it is one."""
        return next((link for link in self.dangling if not link.to_parent and link.loop_id == loop_id
                     and link.tool_call_id == tool_call_id), None)

    def loop(self, loop_id: str) -> LoopRecord | None:
        """A loop of any loaded session, or None."""
        for session in self.sessions.values():
            record = session.get_loop(loop_id)
            if record is not None:
                return record
        return None

    def all_loops(self) -> list[LoopRecord]:
        return [record for session in self.sessions.values() for record in session.loops]


def load_tree(store: SessionStore, session_id: str) -> ExportTree:
    """The session ``session_id`` of ``store`` and the sub-agent sessions reachable from it."""
    root = store.load(session_id)
    tree = ExportTree(root, {root.session_id: root})
    load = remembering_loader(store, root)  # each session is loaded once, the tree's and its parent
    pending = deque(_child_session_ids(root))
    while pending and len(tree.sessions) < MAX_SESSIONS:
        child_id = pending.popleft()
        if child_id in tree.sessions or child_id in tree.missing:
            continue
        child = load(child_id)
        if isinstance(child, SessionError):
            tree.missing[child_id] = str(child)
            continue
        tree.sessions[child_id] = child
        pending.extend(_child_session_ids(child))
    tree.dangling = [link for session in tree.sessions.values() for link in find_dangling(session, load)]
    return tree


def _child_session_ids(session: Session) -> list[str]:
    return [ref.child_session_id for record in session.loops for ref in record.child_loop_refs
            if ref.child_session_id != session.session_id]
