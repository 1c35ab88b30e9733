"""The tool registry of a provider profile (SPEC §14 CODE-4; seed 004 §3.7, §3.8).

A :class:`RegisteredTool` is a :class:`~phi.types.ToolDefinition` (what the model is told) plus an
``executor(arguments, env)`` — or ``executor(arguments, env, call)`` when it wants the
:class:`ToolCallContext` (cancellation, streamed output, the session). The executor returns text, a
:class:`~phi.types.ToolResult` or anything JSON-serialisable, and reports failures by raising
:class:`~phi.errors.ToolError`. Executors receive the environment at call time, so one registry
serves a session and its sub-agents, each on its own (possibly scoped) environment.

``kind`` tells the approval gate what a call may do: ``read`` (nothing outside the conversation
changes), ``write`` (files), ``execute`` (commands: anything), ``agent`` (sub-agent control).
Custom tools default to ``execute``, the cautious choice.

An executor sees the session it runs in as a :class:`ToolHost` (``call.session``): the few things a
tool may use of a :class:`~phi.coding.session.Session`, named here so that this module and the
tools below it need not import the session (which imports them).

Registration is latest-wins: registering a name that exists replaces it, so a custom tool
overrides a profile tool of the same name (§3.7). Any phi :class:`~phi.loop.tool.AgentTool`
(a ``@tool`` function, an MCP tool, ...) can be registered as it is.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..loop.tool import AgentTool, ToolContext
from ..tools.environment import ExecutionEnvironment
from ..types import ToolDefinition, ToolResult
from .config import SessionBasics, SessionConfig

if TYPE_CHECKING:
    from ..tools.tool_session import ToolSession
    from .sandboxing import CommandSandbox
    from .subagents import SubAgentManager

TOOL_KINDS = ("read", "write", "execute", "agent")

#: ``executor(arguments, env)`` or ``executor(arguments, env, call)``: which one is told by the number
#: of positional parameters when the tool is registered, so the type cannot say more than ``...``.
Executor = Callable[..., object]


class ToolHost(SessionBasics, Protocol):
    """The session a tool call runs in, as its tools see it (a :class:`~phi.coding.session.Session`
    is one)."""

    @property
    def tool_session(self) -> ToolSession:
        """What the session's tools share: the read-before-write record, saved outputs, background commands."""
        ...

    @property
    def subagents(self) -> SubAgentManager:
        """The session's sub-agents (what ``spawn_agent`` and its companions work on)."""
        ...

    @property
    def sandbox(self) -> CommandSandbox:
        """What protects the session's commands (SPEC §14 CODE-11)."""
        ...


@dataclass
class ToolCallContext:
    """What an executor that takes three arguments gets as the third: the core's
    :class:`~phi.loop.tool.ToolContext` (call id, cancellation token) and the session."""

    tool: ToolContext
    session: ToolHost | None = None  # None outside a session

    @property
    def cancel(self) -> CancellationToken:
        return self.tool.cancel

    @property
    def cancelled(self) -> bool:
        return self.tool.cancelled

    @property
    def config(self) -> SessionConfig | None:
        return self.session.config if self.session is not None else None

    def output(self, text: str) -> None:
        """Stream a piece of output (a ``TOOL_CALL_OUTPUT_DELTA`` event carrying ``text``)."""
        self.tool.update(ToolResult.from_text(text, {"output_delta": True}))

    def progress(self, text: str) -> None:
        self.tool.progress(text)


@dataclass
class RegisteredTool:
    """A tool definition and the function that runs it (seed 004 §3.8)."""

    definition: ToolDefinition
    executor: Executor
    kind: str = "execute"
    timeout_ms: int | None = None  # the core's per-call timeout (None: none)
    _wants_call: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in TOOL_KINDS:
            raise ConfigError(f"RegisteredTool {self.definition.name!r}: kind must be one of {TOOL_KINDS}, "
                              f"got {self.kind!r}")
        params = self.definition.parameters
        # the dict check stays: applications build tool definitions without a type checker
        if (not isinstance(params, dict)  # pyright: ignore[reportUnnecessaryIsInstance]
                or params.get("type") != "object"):
            raise ConfigError(f"tool {self.definition.name!r}: the parameter schema's root must be "
                              '{"type": "object", ...}')
        self._wants_call = _positional_count(self.executor) >= 3

    @property
    def name(self) -> str:
        return self.definition.name

    def run(self, arguments: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> object:
        if self._wants_call:
            return self.executor(arguments, env, call)
        return self.executor(arguments, env)

    @classmethod
    def from_agent_tool(cls, tool: AgentTool, kind: str = "execute") -> RegisteredTool:
        """Wrap a phi AgentTool (``name``, ``description``, ``parameters``, ``execute(args, ctx)``)."""
        definition = ToolDefinition(tool.name, tool.description, tool.parameters)

        def run(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> object:
            return tool.execute(args, call.tool)  # an AgentTool brings its own environment, if any

        timeout_ms: int | None = getattr(tool, "timeout_ms", None)  # optional on an AgentTool
        return cls(definition, run, kind, timeout_ms)


def _positional_count(fn: Executor) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


class ToolRegistry:
    """Name → :class:`RegisteredTool`, in registration order (seed 004 §3.8). Thread-safe."""

    def __init__(self, tools: Iterable[RegisteredTool | AgentTool] = ()) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._lock = threading.Lock()
        for tool in tools:
            self.register(tool)

    def register(self, tool: RegisteredTool | AgentTool, *, kind: str | None = None) -> RegisteredTool:
        """Add or replace a tool (latest wins). ``tool`` may be a RegisteredTool or a phi AgentTool."""
        if not isinstance(tool, RegisteredTool):
            if not all(hasattr(tool, a) for a in ("name", "description", "parameters", "execute")):
                raise ConfigError(f"cannot register {tool!r}: pass a RegisteredTool or an AgentTool "
                                  "(name, description, parameters, execute)")
            tool = RegisteredTool.from_agent_tool(tool, kind or "execute")
        elif kind is not None:
            tool.kind = kind
        with self._lock:
            self._tools.pop(tool.name, None)  # a replacement moves to the end, like a new registration
            self._tools[tool.name] = tool
        return tool

    def unregister(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)

    def get(self, name: str) -> RegisteredTool | None:
        with self._lock:
            return self._tools.get(name)

    def definitions(self) -> list[ToolDefinition]:
        return [tool.definition for tool in self.tools()]

    def names(self) -> list[str]:
        with self._lock:
            return list(self._tools)

    def tools(self) -> list[RegisteredTool]:
        with self._lock:
            return list(self._tools.values())

    def copy(self) -> ToolRegistry:
        return ToolRegistry(self.tools())

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)


__all__ = ["RegisteredTool", "ToolRegistry", "ToolCallContext", "ToolHost", "TOOL_KINDS", "Executor"]
