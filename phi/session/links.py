"""Links between stored sessions whose other end the store does not hold (SPEC §13.2 SESS-5, §16
EXPORT-5; issue 31 item 4).

A sub-agent's run is a session of its own, linked both ways by ids (SESS-2): a
:class:`~phi.session.ChildLoopRef` on the parent loop, a :class:`~phi.session.SpawnRef` on the child
session. The two sessions are two saves, so a process killed between them leaves a stored link to a
session — or a loop — that is not there. ``store.load`` returns what is stored and does not follow
links; :func:`dangling_links` follows one session's links and says, in words, which lead nowhere,
so a viewer (``phi --resume``, ``/sessions``, ``phi export``) reports them instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Union

from .errors import NotFound, SessionError
from .model import Session
from .store import SessionStore

Loaded = Union[Session, SessionError]


@dataclass(frozen=True)
class DanglingLink:
    """One link of session ``session_id`` whose target is not in the store.

    ``to_parent``: False for a sub-agent link (``ChildLoopRef`` on loop ``loop_id``), True for the
    session's ``parent_spawn_ref`` (``loop_id`` is then None). ``target_session_id`` /
    ``target_loop_id``: what the link names. ``session_missing``: the target session is not stored
    (else it is stored without the loop, or cannot be read: ``error`` says why). ``str()`` is the
    sentence to show."""

    session_id: str
    loop_id: str | None
    tool_call_id: str
    tool_name: str
    target_session_id: str
    target_loop_id: str
    to_parent: bool = False
    session_missing: bool = True
    error: str | None = None

    def __str__(self) -> str:
        call = f"tool call {self.tool_call_id}" if self.tool_call_id else "tool call not recorded"
        if self.to_parent:
            what = f"parent session {self.target_session_id}"
            where = f"(loop {self.target_loop_id}, {call}, which started session {self.session_id})"
            loop_what = f"parent loop {self.target_loop_id} ({call}, which started session {self.session_id})"
        else:
            what = f"sub-agent session {self.target_session_id}"
            where = f"(linked from loop {self.loop_id}, {call})"
            loop_what = f"sub-agent loop {self.target_loop_id} (linked from loop {self.loop_id}, {call})"
        if self.error is not None:
            return f"{what} {where} cannot be loaded: {self.error}"
        if self.session_missing:
            return f"{what} {where} is missing from the store"
        return f"{loop_what} is missing from session {self.target_session_id}"


def dangling_links(store: SessionStore, session: Session) -> list[DanglingLink]:
    """The links of ``session`` — its loops' sub-agent links and its ``parent_spawn_ref`` — whose
    session or loop ``store`` does not hold, in the order they appear. Loads each linked session once;
    a linked session that cannot be read is reported (with the store's error), never raised."""
    return find_dangling(session, remembering_loader(store, session))


def remembering_loader(store: SessionStore, *known: Session) -> Callable[[str], Loaded]:
    """``store.load`` that loads each session once and returns (not raises) its SessionError;
    ``known`` sessions count as loaded."""
    tried: dict[str, Loaded] = {session.session_id: session for session in known}

    def load(session_id: str) -> Loaded:
        if session_id not in tried:
            try:
                tried[session_id] = store.load(session_id)
            except SessionError as error:
                tried[session_id] = error
        return tried[session_id]

    return load


def find_dangling(session: Session, load: Callable[[str], Loaded]) -> list[DanglingLink]:
    """:func:`dangling_links` with ``load`` giving a linked session (or the error loading it raised)."""
    found: list[DanglingLink] = []
    for record in session.loops:
        for ref in record.child_loop_refs:
            link = DanglingLink(session.session_id, record.loop_id, ref.tool_call_id, ref.tool_name,
                                ref.child_session_id, ref.child_loop_id)
            found.extend(_check(link, load))
    spawn = session.parent_spawn_ref
    if spawn is not None:
        link = DanglingLink(session.session_id, None, spawn.tool_call_id, spawn.tool_name, spawn.parent_session_id,
                            spawn.parent_loop_id, to_parent=True)
        found.extend(_check(link, load))
    return found


def _check(link: DanglingLink, load: Callable[[str], Loaded]) -> list[DanglingLink]:
    target = load(link.target_session_id)
    if isinstance(target, NotFound):
        return [link]
    if isinstance(target, SessionError):
        return [replace(link, session_missing=False, error=str(target))]
    if target.get_loop(link.target_loop_id) is None:
        return [replace(link, session_missing=False)]
    return []


__all__ = ["DanglingLink", "dangling_links", "find_dangling", "remembering_loader"]
