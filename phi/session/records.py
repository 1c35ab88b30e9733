"""The parts the session records are made of (SPEC §13.2; seed 000 REQ-211..213): how a session
was formed, where a loop is in its life, the links between loops and sessions, which model ran a
loop, its kept events and the history a run started from — and :func:`exact_time`, the time
precision of all of them.

These are leaves: :mod:`phi.session.codec` gives their JSON, :mod:`phi.session.loop_record` and
:mod:`phi.session.model` build ``LoopRecord`` and ``Session`` from them, and ``phi.session.model``
exports them too (their public path).

Times are unix seconds (floats, like the events' timestamps) held to whole microseconds, so the
JSON form (RFC 3339 strings with six decimals) round-trips exactly.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from ..types import AgentMessage, RunOutcome, Usage

if TYPE_CHECKING:
    from ..events import AgentEvent


def exact_time(seconds: float) -> float:
    """``seconds`` held to whole microseconds: the precision the JSON form keeps exactly."""
    if (isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            or not math.isfinite(seconds)):
        raise ValueError(f"a timestamp must be a finite number of unix seconds, got {seconds!r}")
    return round(seconds * 1_000_000) / 1_000_000


def set_exact_time(obj: object, name: str) -> None:
    """Hold attribute ``name`` of ``obj`` (a frozen dataclass too) to :func:`exact_time`; None stays None."""
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
        set_exact_time(self, "timestamp")


@dataclass(frozen=True, slots=True)
class FirstLoop:
    """The session was created when its ``session_id`` first appeared in an event."""

    timestamp: float
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)

    def __post_init__(self) -> None:
        set_exact_time(self, "timestamp")


@dataclass(frozen=True, slots=True)
class InactivityTimeout:
    """The session replaced ``previous_session_id`` of the same agent after more than
    ``threshold_secs`` without activity (the agent rotated its session id; the recorder saw why)."""

    threshold_secs: int
    previous_session_id: str | None
    timestamp: float
    extra: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)

    def __post_init__(self) -> None:
        set_exact_time(self, "timestamp")


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
