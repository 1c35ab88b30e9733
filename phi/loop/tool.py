"""Tools as the loop sees them (SPEC TOOL-1): the AgentTool protocol, ToolContext, FunctionTool.

An AgentTool has a ``name``, a ``description``, a JSON Schema ``parameters`` object and
``execute(args, ctx)``. ``execute`` returns a :class:`~phi.types.ToolResult` (or, for convenience,
a string, a list of content blocks, or any JSON-serialisable value) and reports failures by raising
:class:`~phi.errors.ToolError`. Optional attributes: ``label`` (display name) and ``timeout_ms``
(overrides the loop's default tool timeout) and ``inline`` (True: run on the loop's own thread,
for tools that return at once; see :mod:`phi.loop.tool_execution`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

from ..concurrency.cancel import CancellationToken
from ..json_values import is_array
from ..types import (
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResult,
)


@dataclass(slots=True)
class ToolContext:
    """What a running tool gets besides its arguments."""

    tool_call_id: str
    tool_name: str
    cancel: CancellationToken = field(default_factory=CancellationToken)
    on_update: Callable[[ToolResult], None] | None = None
    on_progress: Callable[[str], None] | None = None
    # True when the loop has already checked the arguments against the tool's schema (SPEC TOOL-2),
    # so a tool that validates on its own (``@tool``) need not do it again.
    arguments_validated: bool = False
    loop_id: str | None = None  # the calling run's loop id (a sub-agent names it as its parent)

    def update(self, partial: ToolResult | str) -> None:
        """Stream a partial result (becomes a ``ToolExecutionUpdate`` event)."""
        if self.on_update is not None:
            # made a result here, on the tool's thread: what it cannot be made into is the tool's error
            self.on_update(partial if isinstance(partial, ToolResult) else to_tool_result(partial))

    def progress(self, text: str) -> None:
        """Report user-facing status text (becomes a ``ProgressMessage`` event)."""
        if self.on_progress is not None:
            self.on_progress(text)

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_cancelled()


@runtime_checkable
class AgentTool(Protocol):
    """What the loop needs of a tool (SPEC TOOL-1): a ``name``, a ``description``, a JSON Schema
    ``parameters`` object and ``execute(args, ctx)``, which returns the result and raises
    :class:`~phi.errors.ToolError` on failure. Optional ``label``, ``timeout_ms`` and ``inline``: see
    the module docstring."""

    # read-only members: a tool may keep them as plain attributes or compute them as properties
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]: ...

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> object:
        ...


@dataclass
class FunctionTool:
    """An AgentTool made from a plain function ``fn(args, ctx)``."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[[dict[str, Any], ToolContext], object]
    label: str = ""
    timeout_ms: int | None = None
    inline: bool = False  # run on the loop's thread: for a function that returns at once (phi.loop.tool_execution)

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> object:
        return self.fn(args, ctx)


def tool_definition(tool: AgentTool) -> ToolDefinition:
    return ToolDefinition(tool.name, tool.description, tool.parameters)


_CONTENT_TYPES = (TextContent, ImageContent, ThinkingContent, ToolCall)


def to_tool_result(value: object) -> ToolResult:
    """Normalise what ``execute`` returned into a ToolResult."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult([TextContent(value)])
    if isinstance(value, _CONTENT_TYPES):
        return ToolResult([value])
    if is_array(value) and value and all(isinstance(v, _CONTENT_TYPES) for v in value):
        return ToolResult(list(value))
    if value is None:
        return ToolResult([TextContent("")])
    return ToolResult([TextContent(json.dumps(value, ensure_ascii=False, default=str))], details=value)
