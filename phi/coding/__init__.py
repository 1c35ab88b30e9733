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
* :mod:`~phi.coding.approval` — the approval gate, :class:`SmartApproval`, plan mode;
  :mod:`~phi.coding.permissions` — allow / ask / deny rules by tool and argument pattern
  (:class:`PermissionPolicy`), from settings files (:mod:`~phi.coding.permission_settings`),
  reading commands with :mod:`~phi.coding.shell_words` and paths with :mod:`~phi.coding.path_globs`.
* :mod:`~phi.coding.subagents` — the children a session spawns; their tools (``spawn_agent`` /
  ``send_input`` / ``wait`` / ``close_agent``) in :mod:`~phi.coding.subagent_tools`.
* The system prompt layers (:mod:`~phi.coding.prompt`, ``instructions``, ``environment_context``,
  ``git_context``, ``project_docs``) and :mod:`~phi.coding.loop_detection`.

``phi.coding.Session`` runs a coding agent; ``phi.session`` (a different package) records runs.
Nothing here is imported by ``import phi``; names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import Session
    from .session_stream import SessionStream, SubmitResult
    from .config import SessionClosed, SessionConfig, SessionState
    from .events import EventKind, SessionEvent
    from .profiles import (
        create_anthropic_profile, create_gemini_profile, create_openai_profile, create_profile,
        ProfileOptions, ProviderProfile,
    )
    from .registry import RegisteredTool, ToolCallContext, ToolHost, ToolRegistry
    from .approval import (
        allow_all, ApprovalDecision, ApprovalPolicy, ApprovalRequest, deny_changes, SmartApproval,
    )
    from .permissions import (
        PermissionPolicy, PermissionRule, PermissionRuleError, PermissionRules, suggest_rule, Verdict,
    )
    from .permission_settings import load_permission_rules, read_settings_rules
    from .sandboxing import CommandSandbox
    from .subagents import SubAgentHandle, SubAgentResult, SubAgentSession
    from .scoped_env import ScopedEnvironment
    from .history import AssistantTurn, SteeringTurn, SystemTurn, ToolResultsTurn, UserTurn

__all__ = [
    "ApprovalDecision", "ApprovalPolicy", "ApprovalRequest", "AssistantTurn", "CommandSandbox", "EventKind",
    "PermissionPolicy", "PermissionRule", "PermissionRuleError", "PermissionRules", "ProfileOptions",
    "ProviderProfile", "RegisteredTool", "ScopedEnvironment", "Session", "SessionClosed", "SessionConfig",
    "SessionEvent", "SessionState", "SessionStream", "SmartApproval", "SteeringTurn", "SubAgentHandle",
    "SubAgentResult", "SubAgentSession", "SubmitResult", "SystemTurn", "ToolCallContext", "ToolHost",
    "ToolRegistry", "ToolResultsTurn", "UserTurn", "Verdict", "allow_all", "create_anthropic_profile",
    "create_gemini_profile", "create_openai_profile", "create_profile", "deny_changes", "load_permission_rules",
    "read_settings_rules", "suggest_rule",
]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from ..lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
