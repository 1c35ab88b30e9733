"""Rebuilding a conversation from a recorded session, and branching from one of its loops
(SPEC §13.2 SESS-8).

A loop's ``messages`` are only what its run added (``AgentEnd.messages``); the conversation through
a loop is the history its run started from followed by those messages. That history is found, in
this order, from:

1. ``record.history`` (recorded by an Agent for each run): the first ``kept`` messages of the
   conversation through ``after_loop_id``, then ``added`` — so histories the application edited,
   restored or compacted are honoured;
2. a continuation (``parent_loop_id`` in the session, ``continuation_kind`` set): the whole
   conversation through the parent;
3. a sub-agent run (a parent with no ``continuation_kind``) or a continuation of a loop recorded
   elsewhere: nothing before it;
4. an origin run without a recorded history (phi-core's files): the conversation through the
   latest loop that ended before it started and is on a conversation line.

Loops on no conversation line are never followed: a judge's loop (``evaluates``), a branch of a
parallel evaluation that was not selected, and same-session sub-agent runs. The walk is iterative
(no recursion limit) and linear in the length of the result.

``Session.conversation`` and ``Session.latest_loop`` (:mod:`phi.session.model`) are these functions,
so this module reads a session through :class:`SessionView` — the Session's ``session_id``,
``agent_id`` and ``loops`` — rather than importing the class.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from ..ids import loop_key, loop_number
from ..types import AgentMessage, message_to_json
from .errors import SessionError
from .loop_record import LoopRecord

Step = tuple[LoopRecord, "int | None", tuple[AgentMessage, ...]]  # (loop, messages kept of the one before, added)


class SessionView(Protocol):
    """What this module reads of a :class:`~phi.session.model.Session`: its ids and its loops in
    start order."""

    @property
    def session_id(self) -> str: ...

    @property
    def agent_id(self) -> str: ...

    @property
    def loops(self) -> Sequence[LoopRecord]: ...


def _parent(record: LoopRecord, by_id: Mapping[str, LoopRecord]) -> LoopRecord | None:
    """The record's parent if it is a loop of the same session."""
    parent = by_id.get(record.parent_loop_id) if record.parent_loop_id is not None else None
    return parent if parent is not None and parent.session_id == record.session_id else None


def off_line(record: LoopRecord, by_id: Mapping[str, LoopRecord]) -> bool:
    """True for loops no conversation continues: a judge's, an unselected parallel branch, a
    sub-agent run whose parent is in the same session."""
    if record.evaluates or (record.parallel_group is not None and not record.parallel_group.is_selected):
        return True
    return record.continuation_kind is None and _parent(record, by_id) is not None


def latest_loop(session: SessionView) -> LoopRecord | None:
    """The last started loop that is on a conversation line (see :func:`off_line`) and has ended —
    a loop still pending or running is another writer's run in progress, or one whose process died
    (SESS-6) — else the last started one on a line."""
    by_id = {record.loop_id: record for record in session.loops}
    on_line = [r for r in reversed(session.loops) if not off_line(r, by_id)]
    return next((r for r in on_line if not r.status.is_open), on_line[0] if on_line else None)


class _Ends:
    """The on-line loops of a session by end time, to find what an origin run followed (rule 4)."""

    def __init__(self, session: SessionView, by_id: Mapping[str, LoopRecord]) -> None:
        ended = [(r.ended_at, i, r) for i, r in enumerate(session.loops)
                 if r.ended_at is not None and not off_line(r, by_id)]
        ended.sort(key=lambda item: (item[0], item[1]))
        self.times = [item[0] for item in ended]
        self.records = [item[2] for item in ended]

    def before(self, record: LoopRecord) -> LoopRecord | None:
        group = set(record.parallel_group.all_loop_ids) if record.parallel_group is not None else {record.loop_id}
        index = bisect.bisect_right(self.times, record.started_at)
        while index > 0:
            index -= 1
            found = self.records[index]
            if found.loop_id not in group and found.loop_id != record.loop_id:
                return found
        return None


def _start_of(record: LoopRecord, by_id: Mapping[str, LoopRecord], ends: _Ends | None,
              session: SessionView) -> tuple[LoopRecord | None, int | None, tuple[AgentMessage, ...], _Ends | None]:
    """What ``record``'s run started from: (the loop before, how many of its conversation's messages
    were kept — None for all —, messages added), and the end index (built on first need)."""
    history = record.history
    if history is not None:
        before = by_id.get(history.after_loop_id) if history.after_loop_id is not None else None
        if before is not None and before.session_id != record.session_id:
            before = None
        return before, (history.kept if before is not None else 0), history.added, ends
    parent = _parent(record, by_id)
    if parent is not None and record.continuation_kind is not None:
        return parent, None, (), ends
    if record.parent_loop_id is not None:
        return None, 0, (), ends  # a sub-agent's run, or a continuation of a loop recorded elsewhere
    ends = ends if ends is not None else _Ends(session, by_id)
    return ends.before(record), None, (), ends


def conversation(session: SessionView, at: str | None = None, cache: Mapping[str, list[AgentMessage]] | None = None,
                 by_id: Mapping[str, LoopRecord] | None = None) -> list[AgentMessage]:
    """The conversation through loop ``at`` (default: the latest on-line loop); see the module
    docstring. ``cache``: conversations already known, by loop id; ``by_id``: the loops by id (a
    map that may hold other sessions' loops too). KeyError for an unknown loop; :class:`SessionError`
    when recorded histories form a cycle."""
    by_id = by_id if by_id is not None else {record.loop_id: record for record in session.loops}
    if at is None:
        target = latest_loop(session)
        if target is None:
            return []
    elif at in by_id and by_id[at].session_id == session.session_id:
        target = by_id[at]
    else:
        raise KeyError(f"no loop {at!r} in session {session.session_id}")
    steps: list[Step] = []
    seen: set[str] = set()
    ends: _Ends | None = None
    record: LoopRecord | None = target
    result: list[AgentMessage] = []
    while record is not None:
        if cache is not None and record.loop_id in cache:
            result = list(cache[record.loop_id])
            break
        if record.loop_id in seen:
            raise SessionError(f"the recorded histories of session {session.session_id} form a cycle at loop "
                               f"{record.loop_id}", session_id=session.session_id)
        seen.add(record.loop_id)
        before, kept, added, ends = _start_of(record, by_id, ends, session)
        steps.append((record, kept, added))
        record = before
    for step, kept, added in reversed(steps):
        if kept is not None:
            del result[kept:]
        result.extend(added)
        result.extend(step.messages)
    return result


def loop_counters(session: SessionView) -> dict[str, int]:
    """For each ``{prefix}.{N}`` loop id of the session, the highest N: where an agent's counters
    must continue so its next loop ids are new."""
    counters: dict[str, int] = {}
    for record in session.loops:
        number = loop_number(record.loop_id)
        if number:
            key = loop_key(record.loop_id)
            counters[key] = max(counters.get(key, 0), number)
    return counters


@dataclass
class BranchPoint:
    """Where to continue a recorded session: the conversation through loop ``last_loop_id`` (SPEC
    DATA-6 JSON, like ``AgentSnapshot.messages``), the session's agent and session ids, and loop
    counters past every loop id of the session. ``agent.restore(point)`` takes it like a snapshot:
    the agent's next run starts a new branch after that loop."""

    messages: list[dict[str, Any]]
    agent_id: str
    session_id: str
    loop_counters: dict[str, int]
    last_loop_id: str | None
    system_prompt: str = ""  # a session does not record it: the agent keeps its own
    model: dict[str, str] = field(default_factory=dict[str, str])

    def conversation(self) -> list[AgentMessage]:
        """The messages as objects."""
        from ..types import messages_from_json

        return messages_from_json(self.messages)


def branch_point(session: SessionView, loop_id: str, messages: list[AgentMessage]) -> BranchPoint:
    """The branch point after loop ``loop_id`` of ``session``, whose conversation is ``messages``."""
    record = next((r for r in session.loops if r.loop_id == loop_id), None)
    agent_id = session.agent_id or (record.agent_id if record is not None else "")
    return BranchPoint([message_to_json(m) for m in messages], agent_id, session.session_id, loop_counters(session),
                       loop_id)
