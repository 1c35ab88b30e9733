"""SPEC §14 — the coding-agent layer (seed 004): sessions that pair a provider-aligned profile with an execution
environment, on top of the core loop.

    from phi.coding import Session, SessionConfig, create_anthropic_profile
    from phi.tools import LocalExecutionEnvironment

    session = Session(create_anthropic_profile("claude-sonnet-4-5"), LocalExecutionEnvironment("."))
    print(session.submit("Add type hints to utils.py").text)

Map (each module's docstring names the seed sections it implements):

* :mod:`~phi.coding.session` — :class:`Session` (submit / submit_stream / steer / follow_up /
  abort / close), the state machine, shutdown; :mod:`~phi.coding.config` — :class:`SessionConfig`,
  :class:`SessionState`; :mod:`~phi.coding.events` — :class:`SessionEvent`, :class:`EventKind`.
* :mod:`~phi.coding.profiles` — :class:`ProviderProfile`, ``create_openai_profile`` /
  ``create_anthropic_profile`` / ``create_gemini_profile``; their tools in
  :mod:`~phi.coding.profile_tools`; :mod:`~phi.coding.registry` — :class:`ToolRegistry`,
  :class:`RegisteredTool`.
* :mod:`~phi.coding.approval` — the approval gate, :class:`SmartApproval`, plan mode.
* :mod:`~phi.coding.subagents` — the children a session spawns; their tools (``spawn_agent`` /
  ``send_input`` / ``wait`` / ``close_agent``) in :mod:`~phi.coding.subagent_tools`.
* The system prompt layers (:mod:`~phi.coding.prompt`, ``instructions``, ``environment_context``,
  ``git_context``, ``project_docs``) and :mod:`~phi.coding.loop_detection`.

``phi.coding.Session`` runs a coding agent; ``phi.session`` (a different package) records runs.
Nothing here is imported by ``import phi``; names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_exports import export_names, lazy_exports

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".session": ("Session",),
    ".session_stream": ("SessionStream", "SubmitResult"),
    ".config": ("SessionClosed", "SessionConfig", "SessionState"),
    ".events": ("EventKind", "SessionEvent"),
    ".profiles": ("ProfileOptions", "ProviderProfile", "create_anthropic_profile", "create_gemini_profile",
                  "create_openai_profile", "create_profile"),
    ".registry": ("RegisteredTool", "ToolCallContext", "ToolHost", "ToolRegistry"),
    ".approval": ("ApprovalDecision", "ApprovalPolicy", "ApprovalRequest", "SmartApproval", "allow_all",
                  "deny_changes"),
    ".subagents": ("SubAgentHandle", "SubAgentResult", "SubAgentSession"),
    ".scoped_env": ("ScopedEnvironment",),
    ".history": ("AssistantTurn", "SteeringTurn", "SystemTurn", "ToolResultsTurn", "UserTurn"),
}

__all__ = export_names(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from .approval import (
        ApprovalDecision as ApprovalDecision, ApprovalPolicy as ApprovalPolicy, ApprovalRequest as ApprovalRequest,
        SmartApproval as SmartApproval, allow_all as allow_all, deny_changes as deny_changes,
    )
    from .config import (
        SessionClosed as SessionClosed, SessionConfig as SessionConfig, SessionState as SessionState,
    )
    from .events import EventKind as EventKind, SessionEvent as SessionEvent
    from .history import (
        AssistantTurn as AssistantTurn, SteeringTurn as SteeringTurn, SystemTurn as SystemTurn,
        ToolResultsTurn as ToolResultsTurn, UserTurn as UserTurn,
    )
    from .profiles import (
        ProfileOptions as ProfileOptions, ProviderProfile as ProviderProfile,
        create_anthropic_profile as create_anthropic_profile, create_gemini_profile as create_gemini_profile,
        create_openai_profile as create_openai_profile, create_profile as create_profile,
    )
    from .registry import (
        RegisteredTool as RegisteredTool, ToolCallContext as ToolCallContext, ToolHost as ToolHost,
        ToolRegistry as ToolRegistry,
    )
    from .scoped_env import ScopedEnvironment as ScopedEnvironment
    from .session import Session as Session
    from .session_stream import SessionStream as SessionStream, SubmitResult as SubmitResult
    from .subagents import (
        SubAgentHandle as SubAgentHandle, SubAgentResult as SubAgentResult, SubAgentSession as SubAgentSession,
    )
