"""The coding-agent layer (seed 004): sessions that pair a provider-aligned profile with an execution
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
* :mod:`~phi.coding.subagents` — ``spawn_agent`` / ``send_input`` / ``wait`` / ``close_agent``.
* The system prompt layers (:mod:`~phi.coding.prompt`, ``instructions``, ``environment_context``,
  ``git_context``, ``project_docs``) and :mod:`~phi.coding.loop_detection`.

``phi.coding.Session`` runs a coding agent; ``phi.session`` (a different package) records runs.
Nothing here is imported by ``import phi``; names load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Session": "session", "SessionClosed": "session",
    "SessionStream": "session_stream", "SubmitResult": "session_stream",
    "SessionConfig": "config", "SessionState": "config",
    "SessionEvent": "events", "EventKind": "events",
    "ProviderProfile": "profiles", "create_openai_profile": "profiles", "create_anthropic_profile": "profiles",
    "create_gemini_profile": "profiles", "create_profile": "profiles",
    "ToolRegistry": "registry", "RegisteredTool": "registry", "ToolCallContext": "registry",
    "ApprovalRequest": "approval", "ApprovalDecision": "approval", "SmartApproval": "approval",
    "allow_all": "approval", "deny_changes": "approval",
    "SubAgentResult": "subagents", "SubAgentHandle": "subagents",
    "ScopedEnvironment": "scoped_env",
    "UserTurn": "history", "AssistantTurn": "history", "ToolResultsTurn": "history", "SystemTurn": "history",
    "SteeringTurn": "history",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'phi.coding' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
