"""The recorder's configuration and small helpers (SPEC §13.2; seed 000 REQ-213, REQ-215)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Union

from ..types import AgentMessage, AssistantMessage
from .model import LoopConfigSnapshot, LoopRecord


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
        if (isinstance(threshold, bool)
                or not isinstance(threshold, int)  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
                or threshold <= 0):
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


def insert_by_start(loops: list[LoopRecord], record: LoopRecord) -> None:
    """Add ``record`` to loops kept in start order (after those that started at the same time)."""
    if not loops or loops[-1].started_at <= record.started_at:
        loops.append(record)
    else:
        bisect.insort_right(loops, record, key=lambda r: r.started_at)


def resort(loops: list[LoopRecord], record: LoopRecord) -> None:
    """Move ``record`` (whose start time changed) to its place in start order."""
    for index in range(len(loops) - 1, -1, -1):
        if loops[index] is record:
            del loops[index]
            break
    insert_by_start(loops, record)


def common_prefix(messages: list[AgentMessage], base: list[AgentMessage]) -> int:
    """How many leading messages ``messages`` shares with ``base``."""
    if messages[:len(base)] == base:
        return len(base)
    count = 0
    for mine, theirs in zip(messages, base):
        if mine is not theirs and mine != theirs:
            break
        count += 1
    return count


def config_snapshot(record: LoopRecord, messages: list[AgentMessage]) -> LoopConfigSnapshot | None:
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
