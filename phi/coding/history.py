"""The session's history as turns (SPEC §14 CODE-2; seed 004 §2.4).

The conversation the model sees is the core loop's message list (``session.agent.messages``); these
records are a typed view of it, built from the same core events the session's events come from.
Steering and loop-detection warnings are user-role messages for the model (§2.6) and
:class:`SteeringTurn` records here; a :class:`SystemTurn` records what the session itself noted
(a turn limit, an unrecoverable error) and is never sent to a model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Union

from ..types import ToolCall, ToolResultMessage, Usage


@dataclass(frozen=True)
class UserTurn:
    """A user input or follow-up of the session: its text ``content`` and when it was recorded
    (``timestamp``, unix seconds)."""

    content: str
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True)
class AssistantTurn:
    """One model reply: its text ``content``, its ``tool_calls``, its thinking text (``reasoning``, None
    when there was none), ``usage`` and ``stop_reason`` (a StopReason value such as ``"toolUse"``).
    ``response_id`` is optional and left None by the session."""

    content: str
    tool_calls: list[ToolCall]
    reasoning: str | None
    usage: Usage
    response_id: str | None = None
    stop_reason: str = "stop"
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True)
class ToolResultsTurn:
    """The toolResult messages of one turn, in call order, recorded when the turn ends."""

    results: list[ToolResultMessage]
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True)
class SystemTurn:
    """A note the session or the core loop added itself, such as a turn-limit or execution-limit notice;
    ``content`` is its text."""

    content: str
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True)
class SteeringTurn:
    """A message injected during an input, either steering (``Session.steer``) or a loop-detection
    warning (SPEC CODE-7); the model receives it as a user message."""

    content: str
    timestamp: float = field(default_factory=time.time)


Turn = Union[UserTurn, AssistantTurn, ToolResultsTurn, SystemTurn, SteeringTurn]


def turn_kind(turn: Turn) -> str:
    """``user``, ``assistant``, ``tool_results``, ``system`` or ``steering``."""
    return {UserTurn: "user", AssistantTurn: "assistant", ToolResultsTurn: "tool_results",
            SystemTurn: "system", SteeringTurn: "steering"}[type(turn)]


__all__ = ["UserTurn", "AssistantTurn", "ToolResultsTurn", "SystemTurn", "SteeringTurn", "Turn", "turn_kind"]
