"""The session data model: Session, LoopRecord and the links between loops (SPEC §13.2; seed 000
REQ-211..213, REQ-218).

A :class:`Session` groups the loops (runs) of one ``session_id``; each :class:`LoopRecord` is one
run as the events of SPEC §3 describe it: identity, timing, status, the messages ``AgentEnd``
reported, usage, optionally the events themselves, and the tree links — same-session children
(continuations) in ``children_loop_ids``, sub-agent spawns in ``child_loop_refs`` (pointing at
another session, whose ``parent_spawn_ref`` points back), parallel evaluation in
``parallel_group``. phi adds two optional links phi-core does not have: ``history`` (what a
run's history was when it started, relative to the loop it followed) and ``evaluates`` (the judge's
loop of a parallel evaluation), which :meth:`Session.conversation` uses to rebuild conversations.

Times are unix seconds (floats, like the events' timestamps) held to whole microseconds, so the
JSON form (RFC 3339 strings with six decimals, see :mod:`phi.session.codec`) round-trips exactly.
JSON uses phi-core's field names.

This is the model's public module: every name of the model is imported from here (``__all__``) or
from ``phi.session``. They are defined, lowest first, in :mod:`phi.session.records` (the parts:
formations, statuses, references, snapshots, events, starting histories), :mod:`phi.session.codec`
(their JSON), :mod:`phi.session.loop_record` (``LoopRecord`` and its JSON),
:mod:`phi.session.history` (the walk behind :meth:`Session.conversation`) and here (``Session``, its
JSON, its navigation); each imports only the ones before it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..types import AgentMessage, Usage
from .codec import (
    formation_from_json,
    formation_to_json,
    read_list,
    read_nullable,
    read_object,
    read_str,
    read_time,
    required,
    spawn_from_json,
    spawn_to_json,
    unknown_keys,
    write_time,
)
from .history import conversation, latest_loop
from .loop_record import LoopRecord, loop_from_json, loop_to_json
from .preserve import Preserved
from .records import (
    ChildLoopRef,
    Explicit,
    FirstLoop,
    InactivityTimeout,
    LoopConfigSnapshot,
    LoopEvent,
    LoopStatus,
    ParallelGroupRecord,
    SessionFormation,
    SpawnRef,
    StartingHistory,
    exact_time,
    set_exact_time,
)

__all__ = [
    "ChildLoopRef",
    "Explicit",
    "FirstLoop",
    "InactivityTimeout",
    "LoopConfigSnapshot",
    "LoopEvent",
    "LoopRecord",
    "LoopStatus",
    "ParallelGroupRecord",
    "Session",
    "SessionFormation",
    "SpawnRef",
    "StartingHistory",
    "exact_time",
    "header_to_json",
    "loop_from_json",
    "loop_to_json",
    "replace_loops",
    "session_from_json",
    "session_to_json",
]


@dataclass(slots=True)
class Session:
    """The loops of one ``session_id``, ordered by ``started_at``, and how they link."""

    session_id: str
    agent_id: str
    created_at: float
    last_active_at: float
    formation: SessionFormation
    parent_spawn_ref: SpawnRef | None = None
    loops: list[LoopRecord] = field(default_factory=list[LoopRecord])
    extra: dict[str, Any] = field(default_factory=dict[str, Any])  # JSON keys phi does not know, kept as read
    preserved: Preserved | None = field(default=None, compare=False, repr=False)  # how it was read

    def __post_init__(self) -> None:
        set_exact_time(self, "created_at")
        set_exact_time(self, "last_active_at")

    @classmethod
    def explicit(cls, session_id: str, agent_id: str, timestamp: float | None = None) -> Session:
        """An empty session made by the application (formation ``Explicit``)."""
        moment = time.time() if timestamp is None else timestamp
        return cls(session_id, agent_id, moment, moment, Explicit(moment))

    # ------------------------------------------------------------- navigation (REQ-218)

    def get_loop(self, loop_id: str) -> LoopRecord | None:
        """The loop with this id, or None."""
        for record in self.loops:
            if record.loop_id == loop_id:
                return record
        return None

    def root_loops(self) -> list[LoopRecord]:
        """Loops whose parent is not in this session: origin runs, sub-agent runs (parent in
        another session) and continuations of loops recorded elsewhere."""
        ids = {record.loop_id for record in self.loops}
        return [r for r in self.loops if r.parent_loop_id is None or r.parent_loop_id not in ids]

    def children_of(self, loop_id: str) -> list[LoopRecord]:
        """The same-session loops that continue ``loop_id``, in start order ([] if unknown)."""
        record = self.get_loop(loop_id)
        if record is None:
            return []
        wanted = set(record.children_loop_ids)
        return [r for r in self.loops if r.loop_id in wanted]

    def parallel_siblings(self, loop_id: str) -> list[LoopRecord]:
        """Every branch of the parallel group ``loop_id`` belongs to, itself included, in config
        order; [] if the loop is not part of a finished group."""
        record = self.get_loop(loop_id)
        if record is None or record.parallel_group is None:
            return []
        by_id = {r.loop_id: r for r in self.loops}
        return [by_id[i] for i in record.parallel_group.all_loop_ids if i in by_id]

    def total_usage(self) -> Usage:
        """The usage of every loop of the session, summed."""
        total = Usage()
        for record in self.loops:
            total = total + record.usage
        return total

    # ------------------------------------------------------------- conversations (SPEC SESS-8)

    def conversation(self, at: str | None = None) -> list[AgentMessage]:
        """The conversation that led to loop ``at`` and through it (default: :meth:`latest_loop`):
        the history the run started from, then its messages — following recorded histories and
        continuations back, only the selected branch of a parallel evaluation, never the judge's
        exchange. KeyError if ``at`` is not a loop of this session; [] for an empty session."""
        return conversation(self, at)

    def latest_loop(self) -> LoopRecord | None:
        """The loop a conversation continues from: the last started loop that is neither a judge's
        nor an unselected branch of a parallel evaluation; None if there is none."""
        return latest_loop(self)

    # ------------------------------------------------------------- copies and JSON

    def copy(self) -> Session:
        """A copy that later recording does not change (loops copied, messages shared: immutable)."""
        return replace_loops(self, [r.copy() for r in self.loops])

    def to_json(self) -> dict[str, Any]:
        return session_to_json(self)

    @classmethod
    def from_json(cls, data: object, path: str = "session") -> Session:
        return session_from_json(data, path)


def replace_loops(session: Session, loops: list[LoopRecord]) -> Session:
    """A new Session with ``session``'s header (copied) and ``loops``."""
    return Session(session.session_id, session.agent_id, session.created_at, session.last_active_at,
                   session.formation, session.parent_spawn_ref, loops, dict(session.extra), session.preserved)


# --------------------------------------------------------------------------- JSON (the shape: phi.session.codec)

_SESSION_KEYS = ("session_id", "agent_id", "created_at", "last_active_at", "formation", "parent_spawn_ref", "loops")


def header_to_json(session: Session) -> dict[str, Any]:
    """Every key of the session's JSON form but ``loops`` (which goes last in the whole form)."""
    kept = session.preserved
    out: dict[str, Any] = {
        "session_id": session.session_id,
        "agent_id": session.agent_id,
        "created_at": write_time(kept, "created_at", session.created_at),
        "last_active_at": write_time(kept, "last_active_at", session.last_active_at),
        "formation": formation_to_json(session.formation, kept),
        "parent_spawn_ref": None if session.parent_spawn_ref is None else spawn_to_json(session.parent_spawn_ref),
    }
    out.update(session.extra)
    return out


def session_to_json(session: Session) -> dict[str, Any]:
    header = header_to_json(session)
    out = {key: header.pop(key) for key in _SESSION_KEYS[:-1]}
    out["loops"] = [loop_to_json(record) for record in session.loops]
    out.update(header)  # the unknown keys, after the known ones as they were
    return out


def session_from_json(data: object, path: str = "session", loops_required: bool = True) -> Session:
    """A session from its JSON form; ``loops_required=False`` reads a header alone (no ``loops``)."""
    data = read_object(data, path, "a session object")
    kept = Preserved()
    loops = read_list(data, "loops", path, loop_from_json) if loops_required or "loops" in data else []
    return Session(
        session_id=read_str(data, "session_id", path),
        agent_id=read_str(data, "agent_id", path),
        created_at=read_time(data, "created_at", path, kept),
        last_active_at=read_time(data, "last_active_at", path, kept),
        formation=formation_from_json(required(data, "formation", path), path + ".formation", kept),
        parent_spawn_ref=read_nullable(data, "parent_spawn_ref", path, spawn_from_json),
        loops=loops,
        extra=unknown_keys(data, _SESSION_KEYS),
        preserved=kept if kept else None,
    )
