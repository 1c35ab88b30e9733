"""SessionRecorder: events in, a navigable tree of Sessions and LoopRecords out (seed 000 REQ-213, REQ-214, REQ-221).

Give ``recorder.on_event`` (or the recorder itself) to ``agent.subscribe`` or as the ``sink`` of
``agent_loop``. Events may arrive from many threads at once (parallel branches, sub-agents running
on tool workers): one lock guards all state, and nothing outside this module is called while it is
held. Events are routed by ``loop_id`` (SPEC EVT-1):

* ``AgentStart`` opens a :class:`LoopRecord` (or promotes the ``Pending`` one ``ParallelLoopStart``
  pre-registered) in the Session of its ``session_id``, creating the Session on first sight with a
  formation chosen by the policy. A ``parent_loop_id`` in the same session links parent → child
  (``children_loop_ids``); a parent in another session with no ``continuation_kind`` is a sub-agent
  spawn: the child Session gets ``parent_spawn_ref``.
* ``ToolExecutionEnd`` with ``child_loop_id`` adds a :class:`ChildLoopRef` to the parent loop and
  fills in the child session's ``SpawnRef`` tool call. Until then the child session is held back
  from :meth:`flush`/:meth:`drain`, so a session is never handed out half-linked (REQ-221).
* ``AgentEnd`` closes the record: status from ``outcome``, messages, usage, end time.
* ``ParallelLoopEnd`` sets the :class:`ParallelGroupRecord` on every branch of the group.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Union

from ..events import (
    EVENT_TYPES,
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageUpdate,
    ParallelLoopEnd,
    ParallelLoopStart,
    ToolExecutionEnd,
    TurnEnd,
    event_to_json,
)
from ..log import get_logger
from ..types import AgentMessage, AssistantMessage
from .model import (
    ChildLoopRef,
    FirstLoop,
    InactivityTimeout,
    LoopConfigSnapshot,
    LoopEvent,
    LoopRecord,
    LoopStatus,
    ParallelGroupRecord,
    Session,
    SessionFormation,
    SpawnRef,
    exact_time,
)

log = get_logger(__name__)


@dataclass(frozen=True)
class PerSessionId:
    """Formation policy: every new ``session_id`` opens a Session with formation ``FirstLoop``."""


@dataclass(frozen=True)
class InactivityTimeoutPolicy:
    """Formation policy: a new ``session_id`` of an agent whose previous session was idle for at
    least ``threshold_secs`` gets formation ``InactivityTimeout`` (else ``FirstLoop``). The agent
    rotates its session id; the recorder only records why the new session began."""

    threshold_secs: int

    def __post_init__(self) -> None:
        threshold = self.threshold_secs
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:
            raise ValueError(f"threshold_secs must be a positive integer, got {self.threshold_secs!r}")


FormationPolicy = Union[PerSessionId, InactivityTimeoutPolicy]


@dataclass(frozen=True)
class SessionRecorderConfig:
    """``keep_events``: store each loop's events in ``LoopRecord.events`` (SPEC EVT-1 JSON);
    ``include_streaming_events``: keep ``MessageUpdate`` deltas too (only with ``keep_events``)."""

    formation_policy: FormationPolicy = field(default_factory=PerSessionId)
    keep_events: bool = False
    include_streaming_events: bool = False


def session_of_loop_id(loop_id: str) -> str:
    """The session id a loop id starts with (``{session_id}.{config}.{N}``, SPEC LOOP-13): used only
    for loops this recorder has not seen, whose session it cannot look up."""
    return loop_id.split(".", 1)[0]


class SessionRecorder:
    """Records every event it is given into Sessions; see the module docstring for the rules."""

    def __init__(self, config: SessionRecorderConfig | None = None) -> None:
        self.config = config or SessionRecorderConfig()
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._loops: dict[str, LoopRecord] = {}  # every loop of every session held here
        self._next_seq: dict[str, int] = {}  # open loop -> sequence number of its next event (keep_events)
        self._groups: dict[str, tuple[tuple[str, ...], str]] = {}  # branch -> (its group, session), until the end
        self._open_groups: dict[str, int] = {}  # session -> parallel groups started and not yet ended
        self._awaiting: dict[str, str] = {}  # child session -> parent loop whose ToolExecutionEnd will name the call
        self._early: dict[str, dict[str, SpawnRef]] = {}  # parent loop -> child loop -> ref, child not seen yet
        self._dirty: set[str] = set()  # sessions changed since they were last flushed
        self._agents: dict[str, tuple[str, float]] = {}  # agent -> (its latest session, last activity)

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

    # ------------------------------------------------------------------ output

    def flush(self) -> list[Session]:
        """Copies of the sessions that changed since the last flush and are settled (no loop pending
        or running, no parallel group or sub-agent link outstanding). They stay in the recorder, so
        later loops of the same session are added to the same Session: save what this returns."""
        with self._lock:
            ready = [s for sid, s in self._sessions.items() if sid in self._dirty and self._settled(s)]
            self._dirty.difference_update(s.session_id for s in ready)
            return sorted((s.copy() for s in ready), key=_created)

    def drain(self) -> list[Session]:
        """Hand over every settled session and forget it (its id, if used again, starts a new Session)."""
        with self._lock:
            ready = [s for s in self._sessions.values() if self._settled(s)]
            for session in ready:
                self._forget(session)
            return sorted(ready, key=_created)

    def finalize(self) -> list[Session]:
        """Shutdown: mark every pending or running loop ``Aborted`` (``ended_at`` stays null), hand
        over all sessions and forget them."""
        with self._lock:
            for record in self._loops.values():
                if record.status.is_open:
                    record.status = LoopStatus.ABORTED
            out = sorted(self._sessions.values(), key=_created)
            for session in out:
                self._forget(session)
            self._groups.clear()
            self._open_groups.clear()
            self._awaiting.clear()
            self._early.clear()
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

    # ------------------------------------------------------------------ handlers (lock held)

    def _handle(self, event: AgentEvent) -> None:
        if event.type == "AgentStart":
            self._on_agent_start(event)
        elif event.type == "AgentEnd":
            self._on_agent_end(event)
        elif event.type == "TurnEnd":
            self._on_turn_end(event)
        elif event.type == "ToolExecutionEnd":
            self._on_tool_end(event)
        elif event.type == "ParallelLoopStart":
            self._on_parallel_start(event)
        elif event.type == "ParallelLoopEnd":
            self._on_parallel_end(event)

    def _on_agent_start(self, event: AgentStart) -> None:
        started = exact_time(event.timestamp)
        session = self._session(event.session_id, event.agent_id, started)
        session.agent_id = session.agent_id or event.agent_id
        self._touch(session, started)
        record = self._loops.get(event.loop_id)
        if record is not None and not (record.status is LoopStatus.PENDING and record.session_id == event.session_id):
            log.warning("second AgentStart for loop %s ignored", event.loop_id)
            return
        if record is None:
            record = LoopRecord(event.loop_id, event.session_id, event.agent_id, started_at=started)
            self._loops[event.loop_id] = record
            session.loops.append(record)
        record.agent_id, record.parent_loop_id = event.agent_id, event.parent_loop_id
        record.continuation_kind, record.metadata = event.continuation_kind, event.metadata
        record.started_at, record.status = started, LoopStatus.RUNNING
        session.loops.sort(key=_started)  # stable; nearly sorted already
        if self.config.keep_events:
            self._next_seq[event.loop_id] = 0
        if event.parent_loop_id is not None:
            self._link_parent(session, record, event.parent_loop_id)

    def _link_parent(self, session: Session, record: LoopRecord, parent_id: str) -> None:
        parent = self._loops.get(parent_id)
        parent_session = parent.session_id if parent is not None else session_of_loop_id(parent_id)
        if parent_session == record.session_id:
            if parent is not None and record.loop_id not in parent.children_loop_ids:
                parent.children_loop_ids.append(record.loop_id)
            return
        if record.continuation_kind is not None or session.parent_spawn_ref is not None:
            return  # a continuation of a loop recorded elsewhere, or a second run of a sub-agent session
        early = self._early.get(parent_id, {}).pop(record.loop_id, None)
        if early is not None:
            session.parent_spawn_ref = early  # the parent's ToolExecutionEnd came first
        else:
            session.parent_spawn_ref = SpawnRef(parent_session, parent_id)
            if parent is not None and parent.status.is_open:
                self._awaiting[session.session_id] = parent_id

    def _on_agent_end(self, event: AgentEnd) -> None:
        record = self._loops.get(event.loop_id)
        if record is None or not record.status.is_open:
            log.debug("AgentEnd of loop %s, which the recorder has no open record of", event.loop_id)
            return
        record.status = LoopStatus.REJECTED if event.rejection is not None else LoopStatus.of_outcome(event.outcome)
        record.ended_at = exact_time(event.timestamp)
        record.messages = list(event.messages)
        record.usage, record.rejection = event.usage, event.rejection
        if record.config is None:
            record.config = _config_snapshot(record, event.messages)
        session = self._sessions[record.session_id]
        self._touch(session, record.ended_at)
        for child, parent in list(self._awaiting.items()):
            if parent == record.loop_id:  # the tool call never named its child: stop waiting
                del self._awaiting[child]
                self._dirty.add(child)
        self._early.pop(record.loop_id, None)

    def _on_turn_end(self, event: TurnEnd) -> None:
        record = self._loops.get(event.loop_id)
        if record is not None and record.config is None:
            record.config = _config_snapshot(record, [event.message])

    def _on_tool_end(self, event: ToolExecutionEnd) -> None:
        child_id = event.child_loop_id or event.result.child_loop_id
        if child_id is None:
            return
        parent, child = self._loops.get(event.loop_id), self._loops.get(child_id)
        child_sid = child.session_id if child is not None else session_of_loop_id(child_id)
        parent_sid = parent.session_id if parent is not None else session_of_loop_id(event.loop_id)
        if parent is not None:
            ref = ChildLoopRef(event.tool_call_id, event.tool_name, child_id, child_sid)
            if ref not in parent.child_loop_refs:
                parent.child_loop_refs.append(ref)
                self._dirty.add(parent_sid)
        if child_sid == parent_sid:
            return  # a sub-agent sharing the parent's session: linked as a same-session child
        spawn = SpawnRef(parent_sid, event.loop_id, event.tool_call_id, event.tool_name)
        session = self._sessions.get(child_sid)
        if session is None:
            if child is None and parent is not None and parent.status.is_open:
                self._early.setdefault(event.loop_id, {})[child_id] = spawn
            return
        current = session.parent_spawn_ref
        if current is None or (current.parent_loop_id == event.loop_id and not current.tool_call_id):
            session.parent_spawn_ref = spawn
            self._dirty.add(child_sid)
        if self._awaiting.get(child_sid) == event.loop_id:
            del self._awaiting[child_sid]

    def _on_parallel_start(self, event: ParallelLoopStart) -> None:
        started = exact_time(event.timestamp)
        session = self._session(event.session_id, "", started)
        group = tuple(event.loop_ids)
        for loop_id in group:
            self._groups[loop_id] = (group, event.session_id)
            if loop_id not in self._loops:
                record = LoopRecord(loop_id, event.session_id, session.agent_id, started_at=started,
                                    status=LoopStatus.PENDING)
                self._loops[loop_id] = record
                session.loops.append(record)
        session.loops.sort(key=_started)
        self._open_groups[event.session_id] = self._open_groups.get(event.session_id, 0) + 1

    def _on_parallel_end(self, event: ParallelLoopEnd) -> None:
        found = self._groups.get(event.selected_loop_id)
        if found is None:
            log.warning("ParallelLoopEnd selects loop %s of a group the recorder did not see start",
                        event.selected_loop_id)
            group: tuple[str, ...] = (event.selected_loop_id,)
        else:
            group, session_id = found
            for loop_id in group:
                self._groups.pop(loop_id, None)
            remaining = self._open_groups.get(session_id, 0) - 1
            if remaining > 0:
                self._open_groups[session_id] = remaining
            else:
                self._open_groups.pop(session_id, None)
        ended = exact_time(event.timestamp)
        for loop_id in group:
            record = self._loops.get(loop_id)
            if record is None:
                continue
            record.parallel_group = ParallelGroupRecord(group, event.selected_loop_id, event.selected_config_index,
                                                        event.evaluation_usage, loop_id == event.selected_loop_id)
            if record.status is LoopStatus.PENDING:  # the branch never started
                record.status, record.ended_at = LoopStatus.ABORTED, ended
            self._dirty.add(record.session_id)

    # ------------------------------------------------------------------ helpers (lock held)

    def _keep(self, loop_id: str, last: bool, encoded: dict[str, Any] | None) -> None:
        """Keep one encoded event of ``loop_id`` (None: not kept, but counted); ``last``: its AgentEnd."""
        sequence = self._next_seq.get(loop_id)
        if sequence is None:
            return  # not an open loop of this recorder
        record = self._loops[loop_id]
        if encoded is not None:
            record.events.append(LoopEvent(sequence, encoded))
            self._dirty.add(record.session_id)
        if last:
            del self._next_seq[loop_id]
        else:
            self._next_seq[loop_id] = sequence + 1

    def _session(self, session_id: str, agent_id: str, timestamp: float) -> Session:
        self._dirty.add(session_id)
        session = self._sessions.get(session_id)
        if session is None:
            formation = self._formation(agent_id, timestamp)
            session = self._sessions[session_id] = Session(session_id, agent_id, timestamp, timestamp, formation)
        return session

    def _formation(self, agent_id: str, timestamp: float) -> SessionFormation:
        policy = self.config.formation_policy
        previous = self._agents.get(agent_id) if agent_id else None
        if isinstance(policy, InactivityTimeoutPolicy) and previous is not None:
            if timestamp - previous[1] >= policy.threshold_secs:
                return InactivityTimeout(policy.threshold_secs, previous[0], timestamp)
        return FirstLoop(timestamp)

    def _touch(self, session: Session, timestamp: float) -> None:
        session.last_active_at = max(session.last_active_at, timestamp)
        if session.agent_id:
            self._agents[session.agent_id] = (session.session_id, session.last_active_at)
        self._dirty.add(session.session_id)

    def _settled(self, session: Session) -> bool:
        sid = session.session_id
        if sid in self._awaiting or self._open_groups.get(sid):
            return False
        return not any(record.status.is_open for record in session.loops)

    def _forget(self, session: Session) -> None:
        del self._sessions[session.session_id]
        self._dirty.discard(session.session_id)
        for record in session.loops:
            self._loops.pop(record.loop_id, None)
            self._next_seq.pop(record.loop_id, None)


# The events that change the tree (SessionRecorder._handle); the others are only kept (keep_events).
_HANDLED = frozenset({AgentStart, AgentEnd, TurnEnd, ToolExecutionEnd, ParallelLoopStart, ParallelLoopEnd})

_EVENT_CLASSES = frozenset(EVENT_TYPES.values())


def _created(session: Session) -> tuple[float, str]:
    return session.created_at, session.session_id


def _started(record: LoopRecord) -> float:
    return record.started_at


def _config_snapshot(record: LoopRecord, messages: list[AgentMessage]) -> LoopConfigSnapshot | None:
    """Model and provider of the loop's first reply; ``config_id`` from ``{session}.{config}.{N}``."""
    reply = next((m for m in messages if isinstance(m, AssistantMessage)), None)
    if reply is None:
        return None
    prefix, loop_id = record.session_id + ".", record.loop_id
    config_id = None
    if loop_id.startswith(prefix):
        segment, _, number = loop_id[len(prefix):].rpartition(".")
        config_id = segment if segment and number.isdigit() else None
    return LoopConfigSnapshot(reply.model, reply.provider, config_id)
