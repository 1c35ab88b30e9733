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
JSON uses phi-core's field names; ``to_json``/``from_json`` are defined in the codec module.
"""

from __future__ import annotations

import enum
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from ..types import AgentMessage, ContinuationKind, RunOutcome, Usage
from .preserve import Preserved

if TYPE_CHECKING:
    from ..events import AgentEvent


def exact_time(seconds: float) -> float:
    """``seconds`` held to whole microseconds: the precision the JSON form keeps exactly."""
    if (isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            or not math.isfinite(seconds)):
        raise ValueError(f"a timestamp must be a finite number of unix seconds, got {seconds!r}")
    return round(seconds * 1_000_000) / 1_000_000


def _set_time(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if value is not None:
        object.__setattr__(obj, name, exact_time(value))


# --------------------------------------------------------------------------- formation


@dataclass(frozen=True, slots=True)
class Explicit:
    """The session was created by the application (``Session.explicit`` or ``recorder.open_session``)."""

    timestamp: float
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)  # JSON keys phi does not know

    def __post_init__(self) -> None:
        _set_time(self, "timestamp")


@dataclass(frozen=True, slots=True)
class FirstLoop:
    """The session was created when its ``session_id`` first appeared in an event."""

    timestamp: float
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)

    def __post_init__(self) -> None:
        _set_time(self, "timestamp")


@dataclass(frozen=True, slots=True)
class InactivityTimeout:
    """The session replaced ``previous_session_id`` of the same agent after more than
    ``threshold_secs`` without activity (the agent rotated its session id; the recorder saw why)."""

    threshold_secs: int
    previous_session_id: str | None
    timestamp: float
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)

    def __post_init__(self) -> None:
        _set_time(self, "timestamp")


SessionFormation = Union[Explicit, FirstLoop, InactivityTimeout]


# --------------------------------------------------------------------------- loop status


class LoopStatus(str, enum.Enum):
    """Where a loop is in its life. ``Pending`` → ``Running`` → one of the end states.

    ``Pending``: announced by ``ParallelLoopStart``, ``AgentStart`` not seen yet. ``Running``:
    between ``AgentStart`` and ``AgentEnd``. The end states follow ``AgentEnd.outcome`` (SPEC EVT-9):
    ``Completed``, ``Aborted`` (cancelled — or, with ``ended_at`` null, still open when the recorder
    was finalized), ``Error``, ``Limit``, ``Rejected`` (input filter), ``Vetoed`` (a hook).
    """

    PENDING = "Pending"
    RUNNING = "Running"
    COMPLETED = "Completed"
    ABORTED = "Aborted"
    ERROR = "Error"
    LIMIT = "Limit"
    REJECTED = "Rejected"
    VETOED = "Vetoed"

    @property
    def is_open(self) -> bool:
        return self in (LoopStatus.PENDING, LoopStatus.RUNNING)

    @classmethod
    def of_outcome(cls, outcome: RunOutcome) -> LoopStatus:
        return _STATUS_OF_OUTCOME[RunOutcome(outcome)]


_STATUS_OF_OUTCOME = {
    RunOutcome.COMPLETED: LoopStatus.COMPLETED,
    RunOutcome.ABORTED: LoopStatus.ABORTED,
    RunOutcome.ERROR: LoopStatus.ERROR,
    RunOutcome.LIMIT: LoopStatus.LIMIT,
    RunOutcome.REJECTED: LoopStatus.REJECTED,
    RunOutcome.VETOED: LoopStatus.VETOED,
}


# --------------------------------------------------------------------------- links and snapshots


@dataclass(frozen=True, slots=True)
class ChildLoopRef:
    """On the parent LoopRecord: tool call ``tool_call_id`` ran sub-agent loop ``child_loop_id``,
    recorded in session ``child_session_id``."""

    tool_call_id: str
    tool_name: str
    child_loop_id: str
    child_session_id: str
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)


@dataclass(frozen=True, slots=True)
class SpawnRef:
    """On a sub-agent's Session: the loop and tool call (in another session) that started it.

    ``tool_call_id``/``tool_name`` are empty until the parent's ``ToolExecutionEnd`` names them.
    """

    parent_session_id: str
    parent_loop_id: str
    tool_call_id: str = ""
    tool_name: str = ""
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)


@dataclass(frozen=True, slots=True)
class ParallelGroupRecord:
    """On each branch of one parallel evaluation: every branch (config order), the winner, the
    judge's usage, and whether this branch is the winner."""

    all_loop_ids: tuple[str, ...]
    selected_loop_id: str
    selected_config_index: int
    evaluation_usage: Usage
    is_selected: bool
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_loop_ids", tuple(self.all_loop_ids))


@dataclass(frozen=True, slots=True)
class LoopConfigSnapshot:
    """Which model ran the loop (no keys, no hooks): ``config_id`` is the configuration segment of
    the loop id (``AgentLoopConfig.config_id`` or ``{provider}.{model}``), when the id has one."""

    model: str
    provider: str
    config_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)  # e.g. phi-core's api, base_url, ...


@dataclass(frozen=True, slots=True)
class LoopEvent:
    """One kept event of a loop: ``sequence`` counts the loop's events from 0 (gaps are events not
    kept, e.g. streaming deltas); ``event`` is its SPEC EVT-1 JSON object."""

    sequence: int
    event: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)

    def decode(self) -> AgentEvent:
        """The event as an object (``phi.events``); its timestamp keeps milliseconds (EVT-1)."""
        from ..events import event_from_json

        return event_from_json(self.event)


@dataclass(frozen=True, slots=True)
class StartingHistory:
    """The history a run started from (phi's; not in phi-core's files): the first ``kept``
    messages of the conversation through loop ``after_loop_id`` of the same session (none when it
    is None), followed by ``added`` — messages the application put there (an edited, restored or
    compacted history). Recorded by an Agent for each of its runs; see ``Session.conversation``."""

    after_loop_id: str | None
    kept: int = 0
    added: tuple[AgentMessage, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "added", tuple(self.added))


# --------------------------------------------------------------------------- records


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
        _set_time(self, "started_at")
        _set_time(self, "ended_at")
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
        from .codec import loop_to_json

        return loop_to_json(self)

    @classmethod
    def from_json(cls, data: object, path: str = "loop") -> LoopRecord:
        from .codec import loop_from_json

        return loop_from_json(data, path)


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
        _set_time(self, "created_at")
        _set_time(self, "last_active_at")

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
        from .history import conversation

        return conversation(self, at)

    def latest_loop(self) -> LoopRecord | None:
        """The loop a conversation continues from: the last started loop that is neither a judge's
        nor an unselected branch of a parallel evaluation; None if there is none."""
        from .history import latest_loop

        return latest_loop(self)

    # ------------------------------------------------------------- copies and JSON

    def copy(self) -> Session:
        """A copy that later recording does not change (loops copied, messages shared: immutable)."""
        return replace_loops(self, [r.copy() for r in self.loops])

    def to_json(self) -> dict[str, Any]:
        from .codec import session_to_json

        return session_to_json(self)

    @classmethod
    def from_json(cls, data: object, path: str = "session") -> Session:
        from .codec import session_from_json

        return session_from_json(data, path)


def replace_loops(session: Session, loops: list[LoopRecord]) -> Session:
    """A new Session with ``session``'s header (copied) and ``loops``."""
    return Session(session.session_id, session.agent_id, session.created_at, session.last_active_at,
                   session.formation, session.parent_spawn_ref, loops, dict(session.extra), session.preserved)
