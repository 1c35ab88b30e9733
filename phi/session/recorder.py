"""SessionRecorder: events in, a navigable tree of Sessions and LoopRecords out (SPEC §13.2
SESS-1..4, SESS-8; seed 000 REQ-213, REQ-214, REQ-221).

Give ``recorder.on_event`` (or the recorder itself) to ``agent.subscribe`` or as the ``sink`` of
``agent_loop``. Events may arrive from many threads at once (parallel branches, sub-agents running
on tool workers): one lock guards all state, and nothing outside the session package is called
while it is held. Events are routed by ``loop_id`` (SPEC EVT-1):

* ``AgentStart`` opens a :class:`LoopRecord` (or promotes the ``Pending`` one ``ParallelLoopStart``
  pre-registered) in the Session of its ``session_id``, creating the Session on first sight with a
  formation chosen by the policy. A ``parent_loop_id`` in the same session links parent → child
  (``children_loop_ids``); a parent in another session with no ``continuation_kind`` is a sub-agent
  spawn: the child Session gets ``parent_spawn_ref``. A loop that starts, without a parent, while
  a parallel group of its session is open is that group's judge (``evaluates``).
* ``ToolExecutionEnd`` with ``child_loop_id`` adds a :class:`ChildLoopRef` to the parent loop and
  fills in the child session's ``SpawnRef`` tool call. Until then the child session is held back
  from :meth:`flush`/:meth:`drain`, so a session is never handed out half-linked (REQ-221).
* ``AgentEnd`` closes the record: status from ``outcome``, messages, usage, end time.
* ``ParallelLoopEnd`` sets the :class:`ParallelGroupRecord` on every branch of the group.

Continuing and branching (SESS-8): :meth:`continue_session` takes a stored session back, so new
loops join it; :meth:`note_history` records what a run is about to start from (an Agent does this
for each run); :meth:`branch_from` gives the agent snapshot that continues the conversation
through any loop.
"""

from __future__ import annotations

from typing import Sequence

from ..concurrency import sync
from ..events import EVENT_TYPES, AgentEnd, AgentEvent, MessageUpdate, event_to_json
from ..log import get_logger
from ..types import AgentMessage, ContinuationKind
from .history import BranchPoint, branch_point, conversation
from .model import LoopRecord, LoopStatus, Session, StartingHistory, exact_time, replace_loops
from .recorder_parts import (
    FormationPolicy,
    InactivityTimeoutPolicy,
    PerSessionId,
    SessionRecorderConfig,
    common_prefix,
    insert_by_start,
    resort,
    session_of_loop_id,
)
from .recorder_state import CACHED_CONVERSATIONS, PENDING_HISTORIES, RecorderState
from .store import plan_claim

log = get_logger(__name__)

__all__ = ["FormationPolicy", "InactivityTimeoutPolicy", "PerSessionId", "SessionRecorder", "SessionRecorderConfig",
           "session_of_loop_id"]


class SessionRecorder(RecorderState):
    """Records every event it is given into Sessions; see the module docstring for the rules."""

    # ------------------------------------------------------------------ input

    def on_event(self, event: AgentEvent) -> None:
        """Record one event. Safe to call from any thread; never raises for an unknown loop."""
        handled = type(event) in _HANDLED
        keep = self.config.keep_events
        if not handled and (not keep or type(event) not in _EVENT_CLASSES):
            return  # MessageUpdate, MessageStart, ...: nothing to record; not an event: not ours
        kept = None
        if keep and (type(event) is not MessageUpdate or self.config.include_streaming_events):
            kept = event_to_json(event)  # encoded outside the lock
        loop_id = getattr(event, "loop_id", None)  # the parallel pair has none
        with self._lock:
            if handled:
                self._handle(event)
            if keep and loop_id is not None:
                self._keep(loop_id, type(event) is AgentEnd, kept)

    __call__ = on_event  # the recorder itself is a sink

    def open_session(self, session_id: str, agent_id: str, timestamp: float | None = None) -> None:
        """Declare a session before its first loop (formation ``Explicit``); no-op if known."""
        session = Session.explicit(session_id, agent_id, timestamp)
        with self._lock:
            if session_id not in self._sessions:
                self._sessions[session_id] = session
                self._dirty.add(session_id)

    def continue_session(self, session: Session) -> bool:
        """Hold ``session`` (loaded from a store) so the loops of its id recorded from now on join
        it: continuations link to its loops, and saving appends to it (SPEC SESS-8). Nothing is
        handed out for it until something changes. False, and nothing done, if the recorder
        already holds a session of that id."""
        copy = session.copy()
        with self._lock:
            if copy.session_id in self._sessions:
                return False
            self._sessions[copy.session_id] = copy
            for record in copy.loops:
                self._loops.setdefault(record.loop_id, record)
            previous = self._agents.get(copy.agent_id) if copy.agent_id else None
            if copy.agent_id and (previous is None or previous[1] <= copy.last_active_at):
                self._agents[copy.agent_id] = (copy.session_id, copy.last_active_at)
            return True

    def absorb(self, session: Session) -> int:
        """Take in the loops of ``session`` (loaded from a store) that the recorder, holding a
        session of that id already, does not hold — what other writers stored since (SPEC SESS-6) —
        and the stored version of other writers' runs it holds as still open, so :meth:`branch_from`
        reaches them as they are now. They are not handed out again (they are stored).
        Returns how many were taken in; 0 if the recorder does not hold the session."""
        taken = 0
        with self._lock:
            held = self._sessions.get(session.session_id)
            if held is None:
                return 0
            opened_here = self._open.get(session.session_id, set())
            for record in session.loops:
                mine = self._loops.get(record.loop_id)
                if mine is not None:
                    if mine.status.is_open and record.loop_id not in opened_here and mine.session_id == held.session_id \
                            and record != mine:  # another writer's run, in progress when read: as it is now
                        index = next(i for i, r in enumerate(held.loops) if r is mine)
                        held.loops[index] = self._loops[record.loop_id] = fresh = record.copy()
                        resort(held.loops, fresh)
                        self._conversations.pop(record.loop_id, None)
                        taken += 1
                    continue
                copy = record.copy()
                self._loops[copy.loop_id] = copy
                insert_by_start(held.loops, copy)
                parent = self._loops.get(copy.parent_loop_id) if copy.parent_loop_id is not None else None
                if parent is not None and parent.session_id == held.session_id \
                        and copy.loop_id not in parent.children_loop_ids:
                    parent.children_loop_ids.append(copy.loop_id)
                taken += 1
        return taken

    def loop_ids(self, session_id: str) -> set[str]:
        """The ids of the loops the recorder holds in ``session_id``."""
        with self._lock:
            session = self._sessions.get(session_id)
            return {record.loop_id for record in session.loops} if session is not None else set()

    def holds(self, session_id: str) -> bool:
        """True if the recorder holds a session of this id."""
        with self._lock:
            return session_id in self._sessions

    def note_history(self, loop_ids: Sequence[str], messages: Sequence[AgentMessage],
                     after_loop_id: str | None) -> StartingHistory:
        """Record what the runs about to start as ``loop_ids`` start from: ``messages``, a history
        that continues the conversation through ``after_loop_id`` (the agent's previous run; None
        if it has none) — however the application changed it since. Stored as each loop's
        ``history`` (only what differs from that conversation is kept); call it before the runs
        start. An Agent that records does this for every run."""
        history = self._history_of(list(messages), after_loop_id)
        with self._lock:
            for loop_id in loop_ids:
                record = self._loops.get(loop_id)
                if record is not None and loop_id in self._open.get(record.session_id, ()):
                    record.history = history  # pre-registered by ParallelLoopStart
                    self._mark(record)
                else:
                    self._histories[loop_id] = history
                    while len(self._histories) > PENDING_HISTORIES:
                        self._histories.popitem(last=False)
        return history

    def claim(self, session_id: str, agent_id: str, loop_ids: Sequence[str], messages: Sequence[AgentMessage],
              after_loop_id: str | None, parent_loop_id: str | None = None,
              continuation_kind: ContinuationKind | None = None, timestamp: float | None = None,
              ) -> tuple[dict[str, str], Session]:
        """Runs of ``agent_id`` are about to start in ``session_id`` as ``loop_ids``, from the
        history ``messages`` (see :meth:`note_history`): hold a ``Pending`` record for each — under
        the proposed id, or the next free number of its key if the recorder holds that id already —
        so no other run recorded here takes it (SPEC SESS-6, SESS-7). Returns the ids the runs get
        (proposed -> given) and a copy of the session's header with those records, for a store's
        ``claim``. The session is created (policy formation) if the recorder does not hold it."""
        history = self._history_of(list(messages), after_loop_id)
        moment = exact_time(sync.wall_time() if timestamp is None else timestamp)
        with self._lock:
            session = self._session(session_id, agent_id, moment)
            session.agent_id = session.agent_id or agent_id
            names = plan_claim(loop_ids, self._loops.keys())
            records: list[LoopRecord] = []
            for final in names.values():
                record = LoopRecord(final, session_id, agent_id, parent_loop_id, continuation_kind, started_at=moment,
                                    status=LoopStatus.PENDING, history=history)
                self._loops[final] = record
                insert_by_start(session.loops, record)
                self._open.setdefault(session_id, set()).add(final)
                self._mark(record)
                records.append(record.copy())
            return names, replace_loops(session, records)

    def rename_claimed(self, names: dict[str, str]) -> None:
        """Loops :meth:`claim` holds get the ids a store gave them instead (old -> new), before
        their runs start."""
        with self._lock:
            for old, new in names.items():
                record = self._loops.get(old)
                if old == new or record is None or record.status is not LoopStatus.PENDING:
                    continue
                if new in self._loops:  # only a run recorded here without the store could hold it
                    log.error("loop %s cannot take the id %s the store gave it: the recorder holds that id", old, new)
                    continue
                del self._loops[old]
                record.loop_id = new
                self._loops[new] = record
                for table in (self._open, self._changed):
                    held = table.get(record.session_id)
                    if held is not None and old in held:
                        held.discard(old)
                        held.add(new)

    def _history_of(self, messages: list[AgentMessage], after_loop_id: str | None) -> StartingHistory:
        base = self._conversation_through(after_loop_id) if after_loop_id is not None else None
        if base is None:
            return StartingHistory(None, 0, tuple(messages))
        kept = common_prefix(messages, base)  # outside the lock: messages may be the application's objects
        return StartingHistory(after_loop_id, kept, tuple(messages[kept:]))

    def _conversation_through(self, loop_id: str) -> list[AgentMessage] | None:
        """The conversation through a held loop (None if it is not held), using and feeding the
        cache of recent ones."""
        with self._lock:
            record = self._loops.get(loop_id)
            if record is None:
                return None
            session = self._sessions[record.session_id]
            result = conversation(session, loop_id, self._conversations, self._loops)
            if record.loop_id not in self._open.get(record.session_id, ()):
                self._conversations[loop_id] = result
                self._conversations.move_to_end(loop_id)
                while len(self._conversations) > CACHED_CONVERSATIONS:
                    self._conversations.popitem(last=False)
            return result

    def branch_from(self, loop_id: str) -> BranchPoint:
        """Where to continue the conversation through ``loop_id`` (a loop the recorder holds —
        :meth:`continue_session` a stored session first): its messages, the session's agent and
        session ids, loop counters past every loop id of the session and ``last_loop_id`` =
        ``loop_id``. ``agent.restore(...)`` it: the next run starts a new branch there (its
        ``history`` records that). KeyError for a loop not held."""
        messages = self._conversation_through(loop_id)
        with self._lock:
            record = self._loops.get(loop_id)
            if messages is None or record is None:
                raise KeyError(f"the recorder holds no loop {loop_id!r}")
            session = replace_loops(self._sessions[record.session_id], list(self._sessions[record.session_id].loops))
        return branch_point(session, loop_id, list(messages))

    # ------------------------------------------------------------------ output

    def flush(self) -> list[Session]:
        """Copies of the sessions that changed since the last flush and are settled (no loop pending
        or running, no parallel group or sub-agent link outstanding). They stay in the recorder, so
        later loops of the same session are added to the same Session: save what this returns."""
        with self._lock:
            ready = [s for sid, s in self._sessions.items() if sid in self._dirty and self._settled(sid)]
            for session in ready:
                self._dirty.discard(session.session_id)
                self._changed.pop(session.session_id, None)
            return sorted((s.copy() for s in ready), key=_created)

    def flush_changes(self) -> list[Session]:
        """Like :meth:`flush`, but each session holds only its loops that changed since they were
        last handed out (its header in full): what a store's ``save`` needs to append, at a cost
        that does not grow with the session. A session that is not settled still hands out its
        changed loops that are: ended and not part of a parallel group still open — so a run that
        ended is saved while another run of its session (another agent sharing the recorder) goes
        on. A sub-agent session waiting for its spawn's tool call to be named hands out nothing.
        What ``drain``/``finalize`` hand out is whole."""
        with self._lock:
            out: list[Session] = []
            for session_id, session in self._sessions.items():
                if session_id not in self._dirty or session_id in self._awaiting:
                    continue
                changed = self._changed.pop(session_id, set())
                if self._settled(session_id):
                    self._dirty.discard(session_id)
                    ready = changed
                else:
                    held = set(self._open.get(session_id, ())).union(*self._open_groups.get(session_id, []))
                    ready = changed - held
                    if changed - ready:
                        self._changed[session_id] = changed - ready
                    if not ready:
                        continue
                loops = sorted((self._loops[i] for i in ready if i in self._loops), key=_started)
                out.append(replace_loops(session, [record.copy() for record in loops]))
            return sorted(out, key=_created)

    def requeue(self, session: Session) -> None:
        """Hand ``session``'s loops (those still held) out again at the next flush: a save of what
        :meth:`flush_changes` returned failed and should be retried."""
        with self._lock:
            if session.session_id not in self._sessions:
                return
            for record in session.loops:
                held = self._loops.get(record.loop_id)
                if held is not None and held.session_id == session.session_id:
                    self._mark(held)
            self._dirty.add(session.session_id)

    def drain(self) -> list[Session]:
        """Hand over every settled session and forget it (its id, if used again, starts a new Session)."""
        with self._lock:
            ready = [s for s in self._sessions.values() if self._settled(s.session_id)]
            for session in ready:
                self._forget(session)
            return sorted(ready, key=_created)

    def finalize(self) -> list[Session]:
        """Shutdown: mark every loop this recorder saw start and not end ``Aborted`` (``ended_at``
        stays null), hand over all sessions and forget them."""
        with self._lock:
            for loop_ids in self._open.values():
                for loop_id in loop_ids:
                    record = self._loops.get(loop_id)
                    if record is not None:
                        record.status = LoopStatus.ABORTED
            out = sorted(self._sessions.values(), key=_created)
            for session in out:
                self._forget(session)
            self._groups.clear()
            self._open_groups.clear()
            self._awaiting.clear()
            self._early.clear()
            self._histories.clear()
            return out

    def sessions(self) -> list[Session]:
        """Copies of every session held, settled or not, oldest first."""
        with self._lock:
            return sorted((s.copy() for s in self._sessions.values()), key=_created)

    def get_session(self, session_id: str) -> Session | None:
        """A copy of one held session, or None."""
        with self._lock:
            session = self._sessions.get(session_id)
            return None if session is None else session.copy()

    def get_loop(self, loop_id: str) -> LoopRecord | None:
        """A copy of one held loop record (open or closed), or None."""
        with self._lock:
            record = self._loops.get(loop_id)
            return None if record is None else record.copy()


# The events that change the tree (RecorderState._handle); the others are only kept (keep_events).
_HANDLED = frozenset(EVENT_TYPES[name] for name in ("AgentStart", "AgentEnd", "TurnEnd", "ToolExecutionEnd",
                                                     "ParallelLoopStart", "ParallelLoopEnd"))

_EVENT_CLASSES = frozenset(EVENT_TYPES.values())


def _created(session: Session) -> tuple[float, str]:
    return session.created_at, session.session_id


def _started(record: LoopRecord) -> float:
    return record.started_at
