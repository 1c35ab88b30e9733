"""Names removed when the tree was reshaped into SPEC sections, answering with what replaced them
(support module, no SPEC section; kept for one release, then deleted with its uses).

Asking for one raises the error Python would have raised (``AttributeError``,
``ModuleNotFoundError``), with a message that says what to use instead. Replacements are written
relative to the package (``.loop.config``) so a copy under another name names its own modules.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, Sequence

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

# Agent methods and attributes -> what to use (each loop setting's ``with_<setting>``: AGENT_SETTER)
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


def removed_attribute(owner: str, name: str, table: dict[str, str], package: str = "") -> AttributeError | None:
    """The error for ``owner.name`` when ``name`` was removed, else None."""
    if name not in table:
        return None
    return AttributeError(f"{owner}.{name} was removed: use {_named(table[name], package)}", name=name)


class Removed:
    """A class attribute standing for a removed method: reading it raises ``AttributeError`` saying what
    replaced it. Only the names listed get one, so no other attribute error is touched (a ``__getattr__``
    would also answer for an attribute error raised inside a property)."""

    def __init__(self, owner: str, name: str, use: str) -> None:
        self.message = f"{owner}.{name} was removed: use {use}"
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> None:
        raise AttributeError(self.message, name=self.name, obj=obj)


def attach_removed(cls: type, use: dict[str, str]) -> None:
    """Give ``cls`` a :class:`Removed` for each removed name (-> what to use), hidden from ``dir()``."""
    for name, replacement in use.items():
        setattr(cls, name, Removed(cls.__name__, name, replacement))
    hidden = frozenset(use)
    listed: Callable[[object], Iterable[str]] = getattr(cls, "__dir__")  # the instances' dir(), unbound

    def __dir__(self: object) -> list[str]:
        return [n for n in listed(self) if n not in hidden]

    setattr(cls, "__dir__", __dir__)


def agent_removed(settings: Iterable[str]) -> dict[str, str]:
    """Agent's removed names: the table, and ``with_<setting>`` for each loop setting."""
    generic = {f"with_{s}": AGENT_SETTER.format(s) for s in settings}
    return {**generic, **AGENT}


#: SubAgentTool's builder methods before ``clone``
SUB_AGENT_TOOL: dict[str, str] = {
    **{f"with_{s}": f"tool.clone({s}=...)" for s in ("max_turns", "on_event", "parent_loop_id", "system_prompt",
                                                     "thinking", "tools")},
    "with_provider_override": "tool.clone(provider=...)",
}


class RemovedModules:
    """A meta path finder (``find_spec`` is all the import system asks of one; importing
    ``importlib.abc`` for its base class would double the cost of ``import phi``), asked last: a module
    of the old layout is named with its new place."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> None:
        head, _, rest = fullname.rpartition(".")
        if head == self.package and rest in MODULES and not _probing():
            # no name=: `from phi import loop_config` drops a ModuleNotFoundError named after the module
            # it asked for and says only "cannot import name"
            raise ModuleNotFoundError(f"{fullname} was removed: use {_named(MODULES[rest], self.package)}")
        return None


def _probing() -> bool:
    """Whether ``importlib.util.find_spec`` asks (code testing whether a module exists, which must be
    told None), rather than an import statement (which is told where the module went)."""
    import inspect

    frame = inspect.currentframe()
    for _ in range(6):
        if frame is None:
            return False
        if frame.f_code.co_name == "find_spec" and frame.f_globals.get("__name__") == "importlib.util":
            return True
        frame = frame.f_back
    return False


def install_finder(package: str) -> None:
    """Put a :class:`RemovedModules` for ``package`` at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, RemovedModules) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(RemovedModules(package))
