"""SPEC §4–5 — the loop: one run of prompt → streamed reply → tool calls → results → repeat.

- :mod:`.run` — ``agent_loop`` / ``agent_loop_continue`` and the turn engine; read it next to SPEC §4.
- :mod:`.config` — what a run is given: :class:`AgentContext` and :class:`AgentLoopConfig` (§4.1).
- :mod:`.identity` — agent, session and loop ids (LOOP-13).
- :mod:`.filters` — input filters (LOOP-2).
- :mod:`.llm_view` — what the model is shown of the history (LOOP-11, LOOP-12).
- :mod:`.reply_stream` — a provider's stream as MessageStart / MessageUpdate / MessageEnd (EVT-6, EVT-7).
- :mod:`.tool` — the tool protocol (TOOL-1); :mod:`.tool_execution` — running a reply's tool calls (§5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run import agent_loop, agent_loop_continue, check_can_continue
    from .config import AgentContext, AgentLoopConfig, ToolExecution
    from .identity import config_segment
    from .llm_view import default_convert_to_llm, LLMView
    from .tool import AgentTool, FunctionTool, ToolContext
    from .filters import FilterResult, InputFilter

__all__ = [
    "AgentContext", "AgentLoopConfig", "AgentTool", "FilterResult", "FunctionTool", "InputFilter", "LLMView",
    "ToolContext", "ToolExecution", "agent_loop", "agent_loop_continue", "check_can_continue",
    "config_segment", "default_convert_to_llm",
]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from ..lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
