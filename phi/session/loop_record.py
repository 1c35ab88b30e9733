"""One run of an agent as the session model records it: :class:`LoopRecord` and its JSON form
(SPEC §13.2; seed 000 REQ-211..213).

A LoopRecord is one run as the events of SPEC §3 describe it: identity, timing, status, the
messages ``AgentEnd`` reported, usage, optionally the events themselves, and its links — same-session
children (continuations) in ``children_loop_ids``, sub-agent spawns in ``child_loop_refs``, parallel
evaluation in ``parallel_group`` — plus phi's ``history`` and ``evaluates`` (see
:mod:`phi.session.model`). Its JSON (phi-core's field names; the shape is described in
:mod:`phi.session.codec`) is assembled here from the codec's parts, so ``to_json``/``from_json``
need nothing above this module. Exported as ``phi.session.model.LoopRecord``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..types import AgentMessage, ContinuationKind, Usage
from .codec import (
    child_from_json,
    child_to_json,
    config_from_json,
    config_to_json,
    continuation_from_json,
    continuation_to_json,
    group_from_json,
    group_to_json,
    history_from_json,
    history_to_json,
    loop_event_from_json,
    messages_to_json,
    read_list,
    read_nullable,
    read_nullable_str,
    read_nullable_time,
    read_object,
    read_str,
    read_str_list,
    read_time,
    read_usage,
    required,
    status_from_json,
    unknown_keys,
    usage_to_json,
    write_time,
)
from .message_codec import messages_from_json
from .preserve import Preserved
from .records import (
    ChildLoopRef,
    LoopConfigSnapshot,
    LoopEvent,
    LoopStatus,
    ParallelGroupRecord,
    StartingHistory,
    set_exact_time,
)


@dataclass(slots=True)
class LoopRecord:
    """One run (loop) of an agent. See docs/sessions.md for the field table."""

    loop_id: str
    session_id: str
    agent_id: str
    parent_loop_id: str | None = None
    continuation_kind: ContinuationKind | None = None
    started_at: float = 0.0
    ended_at: float | None = None
    status: LoopStatus = LoopStatus.RUNNING
    rejection: str | None = None
    config: LoopConfigSnapshot | None = None
    messages: list[AgentMessage] = field(default_factory=list[AgentMessage])
    usage: Usage = field(default_factory=Usage)
    metadata: Any = None
    events: list[LoopEvent] = field(default_factory=list[LoopEvent])
    children_loop_ids: list[str] = field(default_factory=list[str])
    child_loop_refs: list[ChildLoopRef] = field(default_factory=list[ChildLoopRef])
    parallel_group: ParallelGroupRecord | None = None
    extra: dict[str, Any] = field(default_factory=dict[str, Any])  # JSON keys phi does not know, kept as read
    history: StartingHistory | None = None  # phi's: what the run started from (JSON key omitted when None)
    evaluates: tuple[str, ...] = ()  # phi's: the judge's loop of the parallel group of these loops
    preserved: Preserved | None = field(default=None, compare=False, repr=False)  # how it was read

    def __post_init__(self) -> None:
        set_exact_time(self, "started_at")
        set_exact_time(self, "ended_at")
        self.status = LoopStatus(self.status)
        self.evaluates = tuple(self.evaluates)

    @property
    def duration(self) -> float | None:
        """Seconds from start to end; None while the loop has not ended."""
        return None if self.ended_at is None else self.ended_at - self.started_at

    def copy(self) -> LoopRecord:
        """A copy whose lists can change without touching this one (the items are immutable)."""
        return LoopRecord(
            self.loop_id, self.session_id, self.agent_id, self.parent_loop_id, self.continuation_kind,
            self.started_at, self.ended_at, self.status, self.rejection, self.config, list(self.messages),
            self.usage, self.metadata, list(self.events), list(self.children_loop_ids),
            list(self.child_loop_refs), self.parallel_group, dict(self.extra), self.history, self.evaluates,
            self.preserved,
        )

    def to_json(self) -> dict[str, Any]:
        return loop_to_json(self)

    @classmethod
    def from_json(cls, data: object, path: str = "loop") -> LoopRecord:
        return loop_from_json(data, path)


# --------------------------------------------------------------------------- JSON (the shape: phi.session.codec)

_LOOP_KEYS = ("loop_id", "session_id", "agent_id", "parent_loop_id", "continuation_kind", "started_at", "ended_at",
              "status", "rejection", "config", "messages", "usage", "metadata", "events", "children_loop_ids",
              "child_loop_refs", "parallel_group")
_PHI_LOOP_KEYS = ("history", "evaluates")  # phi's own, written only when set


def loop_to_json(record: LoopRecord) -> dict[str, Any]:
    kept = record.preserved
    out: dict[str, Any] = {
        "loop_id": record.loop_id,
        "session_id": record.session_id,
        "agent_id": record.agent_id,
        "parent_loop_id": record.parent_loop_id,
        "continuation_kind": continuation_to_json(record.continuation_kind, kept),
        "started_at": write_time(kept, "started_at", record.started_at),
        "ended_at": None if record.ended_at is None else write_time(kept, "ended_at", record.ended_at),
        "status": record.status.value,
        "rejection": record.rejection,
        "config": None if record.config is None else config_to_json(record.config),
        "messages": messages_to_json(record.messages, kept),
        "usage": usage_to_json(record.usage, kept),
        "metadata": record.metadata,
        "events": [{"sequence": e.sequence, "event": e.event, **e.extra} for e in record.events],
        "children_loop_ids": list(record.children_loop_ids),
        "child_loop_refs": [child_to_json(c) for c in record.child_loop_refs],
        "parallel_group": None if record.parallel_group is None else group_to_json(record.parallel_group, kept),
    }
    if record.history is not None:
        out["history"] = history_to_json(record.history, kept)
    if record.evaluates:
        out["evaluates"] = list(record.evaluates)
    out.update(record.extra)
    return out


def loop_from_json(data: object, path: str = "loop") -> LoopRecord:
    data = read_object(data, path, "a loop record object")
    kept = Preserved()
    continuation = required(data, "continuation_kind", path, "a continuation kind or null")
    metadata = required(data, "metadata", path, "a JSON value or null")
    history = data.get("history")
    evaluates = read_str_list(data, "evaluates", path) if "evaluates" in data else []
    return LoopRecord(
        loop_id=read_str(data, "loop_id", path),
        session_id=read_str(data, "session_id", path),
        agent_id=read_str(data, "agent_id", path),
        parent_loop_id=read_nullable_str(data, "parent_loop_id", path),
        continuation_kind=None if continuation is None else continuation_from_json(
            continuation, path + ".continuation_kind", kept),
        started_at=read_time(data, "started_at", path, kept),
        ended_at=read_nullable_time(data, "ended_at", path, kept),
        status=status_from_json(required(data, "status", path, "a loop status"), path + ".status"),
        rejection=read_nullable_str(data, "rejection", path),
        config=read_nullable(data, "config", path, config_from_json),
        messages=messages_from_json(data, "messages", path, kept),
        usage=read_usage(data, "usage", path, kept),
        metadata=metadata,
        events=read_list(data, "events", path, loop_event_from_json),
        children_loop_ids=read_str_list(data, "children_loop_ids", path),
        child_loop_refs=read_list(data, "child_loop_refs", path, child_from_json),
        parallel_group=read_nullable(data, "parallel_group", path, lambda v, p: group_from_json(v, p, kept)),
        extra=unknown_keys(data, _LOOP_KEYS + _PHI_LOOP_KEYS),
        history=None if history is None else history_from_json(history, path + ".history", kept),
        evaluates=tuple(evaluates),
        preserved=kept if kept else None,
    )
