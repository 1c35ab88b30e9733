"""Names removed when the tree was reshaped into SPEC sections, answering with what replaced them
(support module, no SPEC section; kept for one release, then deleted with its uses).

Asking for one raises the error Python would have raised (``AttributeError``,
``ModuleNotFoundError``), with a message that says what to use instead. Replacements are written
relative to the package (``.loop.config``) so a copy under another name names its own modules.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

# modules of the old flat layout -> where their contents live now
MODULES: dict[str, str] = {
    "agent_recording": ".agent.recording", "agent_settings": ".agent.agent (Agent keyword settings)",
    "agent_snapshot": ".agent.snapshot", "agent_sources": ".agent.sources", "agent_structured": ".agent.structured",
    "agent_tool": ".loop.tool", "cancel": ".concurrency.cancel", "channel": ".concurrency.channel",
    "queues": ".concurrency.queues", "workers": ".concurrency.workers", "filters": ".loop.filters",
    "loop_config": ".loop.config", "reply_stream": ".loop.reply_stream", "tool_exec": ".loop.tool_execution",
    "function_tool": ".tools.function_tool", "schema": ".tools.schema", "structured": ".agent.final_answer",
    "parallel": ".evaluation.parallel", "judge": ".evaluation.judge", "judge_compaction": ".evaluation.judge_prompt",
    "pricing": ".providers.pricing", "demo": ".cli.demo",
    "cli_approval": ".cli.approval", "cli_batch": ".cli.batch", "cli_commands": ".cli.commands",
    "cli_export": ".export.command", "cli_json": ".cli.json_mode", "cli_offline": ".cli.offline",
    "cli_options": ".cli.options", "cli_render": ".cli.render", "cli_repl": ".cli.repl", "cli_sessions": ".cli.sessions",
    "export_assets": ".export.assets", "export_diff": ".export.diff", "export_html": ".export.html",
    "export_redact": ".tools.redact", "export_tree": ".export.tree",
}

# names ``phi`` no longer exports -> what to use
PACKAGE_NAMES: dict[str, str] = {
    "McpClient": ".mcp.McpClient", "McpToolset": ".mcp.McpToolset", "McpError": ".mcp.McpError",
    "SkillSet": ".skills.SkillSet", "OpenApiConfig": ".openapi.OpenApiConfig", "Checkpoint": ".AgentSnapshot",
    **MODULES,
}

# Agent methods and attributes -> what to use (every other ``with_<setting>`` is AGENT_SETTER now)
AGENT_SETTER = "Agent({0}=...), agent.clone({0}=...) or agent.config.{0} = ..."
AGENT: dict[str, str] = {
    "with_tools": "Agent(tools=[...]), agent.clone(tools=[...]) or agent.tools = [...]",
    "with_system_prompt": "Agent(system_prompt=...), agent.clone(system_prompt=...) or agent.system_prompt = ...",
    "with_model": "Agent(model=...) or agent.clone(model=...)",
    "with_api_key": "Agent(api_key=...) or agent.clone(api_key=...)",
    "with_steering_mode": "Agent(steering_mode=...) or agent.steering_queue.mode",
    "with_follow_up_mode": "Agent(follow_up_mode=...) or agent.follow_up_queue.mode",
    "with_input_filter": "Agent(input_filters=[...]), agent.clone(input_filters=[...]) or agent.config.input_filters",
    "with_tool": "Agent(tools=[...]), agent.clone(tools=[...]) or agent.tools.append(tool)",
    "with_provider_override": "Agent(provider=...) or agent.clone(provider=...)",
    "with_session_recorder": "Agent(recorder=..., store=...) or agent.record_sessions(recorder, store)",
    "session_recorder": "agent.recorder",
    "prompt_with_sender": "agent.prompt(text, sender=...)",
    "clear_steering": "agent.steering_queue.clear()",
    "clear_follow_up": "agent.follow_up_queue.clear()",
    "has_queued_messages": "bool(agent.steering_queue) or bool(agent.follow_up_queue)",
    "unsubscribe_all": "the function agent.subscribe(...) returns, once per subscription",
    "skills": "Agent(tool_sources=[phi.skills.SkillSet.load(dirs)])",
    "loop_counters": "agent.checkpoint() and agent.restore(snapshot)",
}


def _named(replacement: str, package: str) -> str:
    return package + replacement if replacement.startswith(".") else replacement


def removed_attribute(owner: str, name: str, table: dict[str, str], package: str = "",
                      setter: str = "") -> AttributeError | None:
    """The error for ``owner.name`` when ``name`` was removed, else None. With ``setter`` (a format
    string of the setting's name), every ``with_<setting>`` method counts as removed too."""
    if name in table:
        use = _named(table[name], package)
    elif setter and name.startswith("with_") and len(name) > 5:
        use = setter.format(name[5:])
    else:
        return None
    return AttributeError(f"{owner}.{name} was removed: use {use}", name=name)


class RemovedModules:
    """A meta path finder (``find_spec`` is all the import system asks of one; importing
    ``importlib.abc`` for its base class would double the cost of ``import phi``), asked last: a module
    of the old layout is named with its new place."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> None:
        head, _, rest = fullname.rpartition(".")
        if head == self.package and rest in MODULES:
            # no name=: `from phi import loop_config` drops a ModuleNotFoundError named after the module
            # it asked for and says only "cannot import name"
            raise ModuleNotFoundError(f"{fullname} was removed: use {_named(MODULES[rest], self.package)}")
        return None


def install_finder(package: str) -> None:
    """Put a :class:`RemovedModules` for ``package`` at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, RemovedModules) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(RemovedModules(package))
