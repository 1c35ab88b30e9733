"""The state of a :class:`~phi.session.recorder.SessionRecorder` and how each event changes it
(SPEC §13.2 SESS-1..4; seed 000 REQ-213, REQ-214, REQ-221). Every method here runs with the
recorder's lock held and calls nothing outside the session package.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    ParallelLoopEnd,
    ParallelLoopStart,
    ToolExecutionEnd,
    TurnEnd,
)
from ..concurrency import sync
from ..log import get_logger
from ..types import AgentMessage
from .model import (
    ChildLoopRef,
    FirstLoop,
    InactivityTimeout,
    LoopEvent,
    LoopRecord,
    LoopStatus,
    ParallelGroupRecord,
    Session,
    SessionFormation,
    SpawnRef,
    StartingHistory,
    exact_time,
)
from .recorder_parts import (
    InactivityTimeoutPolicy,
    SessionRecorderConfig,
    config_snapshot,
    insert_by_start,
    resort,
    session_of_loop_id,
)

log = get_logger(__name__)

PENDING_HISTORIES = 256  # starting histories noted for runs that have not started (yet), at most
CACHED_CONVERSATIONS = 8  # conversations of ended loops kept to rebuild the next one quickly


class RecorderState:
    """Sessions and loops being recorded; the event handlers. See ``SessionRecorder``."""

    def __init__(self, config: SessionRecorderConfig | None = None) -> None:
        self.config = config or SessionRecorderConfig()
        self._lock = sync.Lock()
        self._sessions: dict[str, Session] = {}
        self._loops: dict[str, LoopRecord] = {}  # every loop of every session held here
        self._open: dict[str, set[str]] = {}  # session -> loops this recorder opened that have not ended
        self._next_seq: dict[str, int] = {}  # open loop -> sequence number of its next event (keep_events)
        self._groups: dict[str, tuple[tuple[str, ...], str]] = {}  # branch -> (its group, session), until the end
        self._open_groups: dict[str, list[tuple[str, ...]]] = {}  # session -> its groups not yet ended
        self._awaiting: dict[str, str] = {}  # child session -> parent loop whose ToolExecutionEnd will name the call
        self._early: dict[str, dict[str, SpawnRef]] = {}  # parent loop -> child loop -> ref, child not seen yet
        self._dirty: set[str] = set()  # sessions changed since they were last flushed
        self._changed: dict[str, set[str]] = {}  # session -> its loops changed since they were last flushed
        self._agents: dict[str, tuple[str, float]] = {}  # agent -> (its latest session, last activity)
        self._histories: OrderedDict[str, StartingHistory] = OrderedDict()  # loop not started yet -> its history
        self._conversations: OrderedDict[str, list[AgentMessage]] = OrderedDict()  # ended loop -> conversation

    # ------------------------------------------------------------------ handlers

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
        if record is not None and not (record.status is LoopStatus.PENDING and record.session_id == event.session_id
                                       and event.loop_id in self._open.get(event.session_id, ())):
            log.error("loop %s is already recorded in session %s; this run of it is not recorded (two runs took "
                      "one loop id)", event.loop_id, record.session_id)
            return
        if record is None:
            record = LoopRecord(event.loop_id, event.session_id, event.agent_id, started_at=started)
            self._loops[event.loop_id] = record
            insert_by_start(session.loops, record)
            self._open.setdefault(event.session_id, set()).add(event.loop_id)
        elif record.started_at != started:
            record.started_at = started
            resort(session.loops, record)
        record.agent_id, record.parent_loop_id = event.agent_id, event.parent_loop_id
        record.continuation_kind, record.metadata = event.continuation_kind, event.metadata
        record.started_at, record.status = started, LoopStatus.RUNNING
        record.history = self._histories.pop(event.loop_id, record.history)
        self._mark(record)
        if self.config.keep_events:
            self._next_seq[event.loop_id] = 0
        if event.parent_loop_id is not None:
            self._link_parent(session, record, event.parent_loop_id)
        elif event.loop_id not in self._groups and self._open_groups.get(event.session_id):
            record.evaluates = self._open_groups[event.session_id][-1]  # the judge of the latest open group

    def _link_parent(self, session: Session, record: LoopRecord, parent_id: str) -> None:
        parent = self._loops.get(parent_id)
        parent_session = parent.session_id if parent is not None else session_of_loop_id(parent_id)
        if parent_session == record.session_id:
            if parent is not None and record.loop_id not in parent.children_loop_ids:
                parent.children_loop_ids.append(record.loop_id)
                self._mark(parent)
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
        self._histories.pop(event.loop_id, None)  # a run vetoed before it started
        record = self._loops.get(event.loop_id)
        if record is None or event.loop_id not in self._open.get(record.session_id, ()):
            log.debug("AgentEnd of loop %s, which the recorder has no open record of", event.loop_id)
            return
        self._close(record)
        record.status = LoopStatus.REJECTED if event.rejection is not None else LoopStatus.of_outcome(event.outcome)
        record.ended_at = exact_time(event.timestamp)
        record.messages = list(event.messages)
        record.usage, record.rejection = event.usage, event.rejection
        if record.config is None:
            record.config = config_snapshot(record, event.messages)
        self._mark(record)
        session = self._sessions[record.session_id]
        self._touch(session, record.ended_at)
        for child, parent in list(self._awaiting.items()):
            if parent == record.loop_id:  # the tool call never named its child: stop waiting
                del self._awaiting[child]
                self._dirty.add(child)
        self._early.pop(record.loop_id, None)

    def _on_turn_end(self, event: TurnEnd) -> None:
        record = self._loops.get(event.loop_id)
        if record is not None and record.config is None and event.loop_id in self._open.get(record.session_id, ()):
            record.config = config_snapshot(record, [event.message])
            self._mark(record)

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
                self._mark(parent)
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
                                    status=LoopStatus.PENDING, history=self._histories.pop(loop_id, None))
                self._loops[loop_id] = record
                insert_by_start(session.loops, record)
                self._open.setdefault(event.session_id, set()).add(loop_id)
                self._mark(record)
        self._open_groups.setdefault(event.session_id, []).append(group)

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
            remaining = [g for g in self._open_groups.get(session_id, []) if g != group]
            if remaining:
                self._open_groups[session_id] = remaining
            else:
                self._open_groups.pop(session_id, None)
        members = set(group)
        for end in event.unended:  # a branch that emitted no AgentEnd: recorded as it ended (SESS-3)
            if end.loop_id in members:
                self._on_agent_end(end)
        ended = exact_time(event.timestamp)
        for loop_id in group:
            record = self._loops.get(loop_id)
            if record is None:
                continue
            record.parallel_group = ParallelGroupRecord(group, event.selected_loop_id, event.selected_config_index,
                                                        event.evaluation_usage, loop_id == event.selected_loop_id)
            if record.status is LoopStatus.PENDING:  # the branch never started
                record.status, record.ended_at = LoopStatus.ABORTED, ended
                self._close(record)
            elif record.status is LoopStatus.RUNNING:  # it raised, or its worker was lost: no AgentEnd comes
                record.status, record.ended_at = LoopStatus.ERROR, ended
                self._close(record)
            self._mark(record)

    # ------------------------------------------------------------------ helpers

    def _keep(self, loop_id: str, last: bool, encoded: dict[str, Any] | None) -> None:
        """Keep one encoded event of ``loop_id`` (None: not kept, but counted); ``last``: its AgentEnd."""
        sequence = self._next_seq.get(loop_id)
        if sequence is None:
            return  # not an open loop of this recorder
        record = self._loops[loop_id]
        if encoded is not None:
            record.events.append(LoopEvent(sequence, encoded))
            self._mark(record)
        if last:
            del self._next_seq[loop_id]
        else:
            self._next_seq[loop_id] = sequence + 1

    def _mark(self, record: LoopRecord) -> None:
        """``record`` changed: hand it out at the next flush."""
        self._changed.setdefault(record.session_id, set()).add(record.loop_id)
        self._dirty.add(record.session_id)

    def _close(self, record: LoopRecord) -> None:
        open_loops = self._open.get(record.session_id)
        if open_loops is not None:
            open_loops.discard(record.loop_id)
            if not open_loops:
                del self._open[record.session_id]

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

    def _settled(self, session_id: str) -> bool:
        return not (session_id in self._awaiting or self._open_groups.get(session_id) or self._open.get(session_id))

    def _forget(self, session: Session) -> None:
        del self._sessions[session.session_id]
        self._dirty.discard(session.session_id)
        self._changed.pop(session.session_id, None)
        self._open.pop(session.session_id, None)
        for record in session.loops:
            if self._loops.get(record.loop_id) is record:
                del self._loops[record.loop_id]
            self._next_seq.pop(record.loop_id, None)
            self._conversations.pop(record.loop_id, None)
