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

from ..lazy_exports import export_names, lazy_exports

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".run": ("agent_loop", "agent_loop_continue", "check_can_continue"),
    ".config": ("AgentContext", "AgentLoopConfig", "ToolExecution"),
    ".identity": ("config_segment",),
    ".llm_view": ("LLMView", "default_convert_to_llm"),
    ".tool": ("AgentTool", "FunctionTool", "ToolContext"),
    ".filters": ("FilterResult", "InputFilter"),
}

__all__ = export_names(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from .config import (
        AgentContext as AgentContext,
    )
    from .config import (
        AgentLoopConfig as AgentLoopConfig,
    )
    from .config import (
        ToolExecution as ToolExecution,
    )
    from .filters import FilterResult as FilterResult
    from .filters import InputFilter as InputFilter
    from .identity import config_segment as config_segment
    from .llm_view import LLMView as LLMView
    from .llm_view import default_convert_to_llm as default_convert_to_llm
    from .run import (
        agent_loop as agent_loop,
    )
    from .run import (
        agent_loop_continue as agent_loop_continue,
    )
    from .run import (
        check_can_continue as check_can_continue,
    )
    from .tool import AgentTool as AgentTool
    from .tool import FunctionTool as FunctionTool
    from .tool import ToolContext as ToolContext
