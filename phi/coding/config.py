"""Session settings and states (SPEC §14 CODE-1, CODE-3; seed 004 §2.2, §2.3, §2.7), and
:class:`SessionClosed`, the error of an input given to a CLOSED session.

:class:`SessionConfig` has the fields of §2.2 with its defaults; a session reads it at every model
call and every tool call, so a change (``session.config.reasoning_effort = "high"``) takes effect on
the next one. Two deliberate differences from the seed's table:

* ``default_command_timeout_ms`` is ``None`` by default, meaning *the profile's* default: 10 s for
  the OpenAI and Gemini profiles (the seed's value, codex's), 120 s for the Anthropic profile
  (Claude Code's). Set it to force one value for every profile.
* ``tool_line_limits`` sits next to ``tool_output_limits`` (§5.3 says both are overridable).

Beyond §2.2: ``user_instructions`` (layer 5 of the system prompt, §6.1), ``approval`` and
``plan_mode`` (the approval gate, :mod:`phi.coding.approval`), ``subagent_max_turns`` (§7.3's 50),
``require_read_before_write`` (on: ``write_file`` and ``edit_file`` refuse to replace a file the
model has not read in this session, or that changed since; SPEC §9.1), ``sandbox`` (the command
sandbox, ``workspace-write`` by default; SPEC §9.1, §14 CODE-11).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import ConfigError, PhiError
from ..tools.environment import ExecutionEnvironment
from ..tools.sandbox import SandboxPolicy, as_policy
from ..types import ThinkingLevel
from .approval import ApprovalPolicy

#: reasoning_effort values and the core's thinking level each one asks for (None: provider default).
REASONING_EFFORTS: dict[str | None, ThinkingLevel] = {
    None: ThinkingLevel.OFF,
    "minimal": ThinkingLevel.MINIMAL,
    "low": ThinkingLevel.LOW,
    "medium": ThinkingLevel.MEDIUM,
    "high": ThinkingLevel.HIGH,
    "xhigh": ThinkingLevel.XHIGH,
}


class SessionState(str, enum.Enum):
    """Seed 004 §2.3."""

    IDLE = "idle"
    PROCESSING = "processing"
    AWAITING_INPUT = "awaiting_input"
    CLOSED = "closed"


class SessionClosed(PhiError):
    """The session is CLOSED: it takes no more input."""


@dataclass
class SessionConfig:
    """Limits, timeouts and settings of a session (seed 004 §2.2). See the module docstring."""

    max_turns: int = 0  # model calls over the whole session; 0 = unlimited
    max_tool_rounds_per_input: int = 200
    default_command_timeout_ms: int | None = None  # None: the profile's default
    max_command_timeout_ms: int = 600_000
    reasoning_effort: str | None = None  # "low" | "medium" | "high" (| "minimal" | "xhigh") | None
    tool_output_limits: dict[str, int] = field(default_factory=dict[str, int])  # per tool, characters
    tool_line_limits: dict[str, int | None] = field(default_factory=dict[str, int | None])  # per tool, lines
    enable_loop_detection: bool = True
    loop_detection_window: int = 10
    max_subagent_depth: int = 1
    subagent_max_turns: int = 50
    user_instructions: str | None = None
    approval: ApprovalPolicy | None = None  # see phi.coding.approval
    plan_mode: bool = False  # offer only read-only tools, the environment refuses writes and commands (per input)
    require_read_before_write: bool = True  # write_file/edit_file refuse files unread or changed since (SPEC §9.1)
    #: the command sandbox of a local environment that did not choose one: "workspace-write" (writes
    #: beneath the workspace only, network off), "read-only", "full" or a SandboxPolicy (SPEC §14 CODE-11)
    sandbox: SandboxPolicy | str | None = "workspace-write"

    def check(self) -> None:
        """Raise :class:`ConfigError` naming the first setting phi cannot work with."""
        if self.reasoning_effort not in REASONING_EFFORTS:
            raise ConfigError(f"reasoning_effort must be one of {sorted(k for k in REASONING_EFFORTS if k)} "
                              f"or None, got {self.reasoning_effort!r}")
        for name in ("max_turns", "max_subagent_depth"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("max_tool_rounds_per_input", "max_command_timeout_ms", "subagent_max_turns"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        as_policy(self.sandbox)
        if self.loop_detection_window < 2:  # a pattern must repeat at least twice to be a loop
            raise ConfigError(f"loop_detection_window must be >= 2, got {self.loop_detection_window}")
        if self.default_command_timeout_ms is not None and self.default_command_timeout_ms < 1:
            raise ConfigError(f"default_command_timeout_ms must be >= 1 or None, got {self.default_command_timeout_ms}")
        # the isinstance checks stay: limits set by callers without a type checker
        for name, limit in self.tool_output_limits.items():
            if not isinstance(limit, int) or limit < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(f"tool_output_limits[{name!r}] must be an integer >= 0, got {limit!r}")
        for name, lines in self.tool_line_limits.items():
            if (lines is not None
                    and (not isinstance(lines, int) or lines < 1)):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(f"tool_line_limits[{name!r}] must be an integer >= 1 or None, got {lines!r}")

    def thinking_level(self) -> ThinkingLevel:
        """The core's thinking level for the current ``reasoning_effort``."""
        self.check()
        return REASONING_EFFORTS[self.reasoning_effort]


class SessionBasics(Protocol):
    """What every part of the coding layer knows of a session (a :class:`~phi.coding.session.Session`
    is one); the tools' and the sub-agents' views add what each of them uses."""

    @property
    def id(self) -> str:
        """The session's id (``SessionEvent.session_id``)."""
        ...

    @property
    def config(self) -> SessionConfig:
        """The session's settings, read afresh at every call."""
        ...

    @property
    def depth(self) -> int:
        """0 for a top-level session, one more for each level of sub-agent."""
        ...

    @property
    def execution_env(self) -> ExecutionEnvironment:
        """The environment its tools work in (read-only in plan mode; a child's may be scoped to a
        subdirectory)."""
        ...


__all__ = ["SessionBasics", "SessionConfig", "SessionState", "SessionClosed", "REASONING_EFFORTS"]
