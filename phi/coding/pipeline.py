"""The tool execution pipeline of a session (SPEC §14 CODE-2, CODE-8; seed 004 §3.8, §5; the approval step of §8).

Which registered tools a session offers for an input is decided here too (:func:`offered_tools`):
all of them, except that plan mode keeps only those that read and the sub-agent tools go once the
session is at the sub-agent depth limit.

The core loop (:mod:`phi.loop.tool_execution`) does LOOKUP (unknown tools become error results) and VALIDATE
(the arguments against the JSON Schema) before it calls a tool; each registered tool reaches it as
a :class:`SessionTool`, whose ``execute`` is the rest of the pipeline:

1. APPROVE — the session's approval callback sees the validated call and may deny it; a denial is
   a :class:`~phi.errors.ToolError`, so the model gets an error result it can react to.
2. EXECUTE — the registered executor runs with the session's execution environment.
3. TRUNCATE — the output is cut for the model with the session's limits (characters first, then
   lines, one marker per cut; :mod:`phi.tools.truncation`), starting from the tool's *full* output
   when the tool already cut it with its own defaults.
4. The full output stays in ``details["full_output"]`` (with ``details["truncated_output"]``), or —
   beyond :data:`~phi.tools.full_output.FULL_OUTPUT_MAX_CHARS` — in the file named by
   ``details["full_output_path"]`` (SPEC §9.2); the core's ``ToolExecutionEnd`` carries both, and the
   session's ``TOOL_CALL_END`` event shows them. The session's own cut starts from that complete
   output (read back as head, an exact hole and tail), so its marker counts are exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import ToolCancelled, ToolError
from ..json_values import is_object
from ..loop.tool import ToolContext, to_tool_result
from ..tools.full_output import file_parts
from ..tools.truncation import HEAD_TAIL, Part, clip, render, tool_limits
from ..types import TextContent, ToolResult
from .approval import ApprovalRequest, decide
from .config import SessionConfig
from .registry import RegisteredTool, ToolCallContext, ToolHost, ToolRegistry
from .subagents import SUBAGENT_TOOL_NAMES
from .tracking import WorkingThreads

#: Limits the session adds to the table of phi.tools.truncation: sub-agent results (``wait``) are
#: cut like ``spawn_agent`` results (seed 004 §5.2).
SESSION_TOOL_LIMITS: dict[str, int] = {"wait": 20_000}
SESSION_TOOL_MODES: dict[str, str] = {"wait": HEAD_TAIL}


def text_of(result: ToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def full_output(result: ToolResult) -> str:
    """The tool's whole output as text: ``details["full_output"]`` when it was cut, else its text (for
    an output saved to a file, ``details["full_output_path"]``, that is the model's view)."""
    details = result.details
    full = details.get("full_output") if is_object(details) else None
    return full if isinstance(full, str) else text_of(result)


def full_output_path(result: ToolResult) -> str | None:
    """The file holding the tool's whole output, when it was too large to carry (SPEC §9.2)."""
    details = result.details
    path = details.get("full_output_path") if is_object(details) else None
    return path if isinstance(path, str) else None


def _complete_parts(result: ToolResult, keep_chars: int) -> tuple[list[Part], str | None]:
    """The tool's complete output as parts (a saved file read back as head, hole and tail), and the
    file's path if there is one."""
    path = full_output_path(result)
    if path is not None:
        try:
            return file_parts(path, keep_chars), path
        except OSError:
            pass
    return [full_output(result)], None


def shape_for_model(result: ToolResult, tool_name: str, limits: Mapping[str, int],
                    line_limits: Mapping[str, int | None]) -> ToolResult:
    """``result`` with its text cut to the session's limits for ``tool_name`` (see module docs)."""
    all_limits = {**SESSION_TOOL_LIMITS, **limits}
    max_chars, max_lines, mode = tool_limits(tool_name, all_limits, line_limits, SESSION_TOOL_MODES)
    if tool_name not in SESSION_TOOL_LIMITS and (max_chars, max_lines, mode) == tool_limits(tool_name):
        return result  # the tool already cut its output to these very limits, in its own words
    parts, path = _complete_parts(result, max_chars)
    cut = clip(parts, max_chars, max_lines, mode)
    shown = render(cut, path)
    if shown == text_of(result):
        return result
    details: dict[str, Any] = dict(result.details) if is_object(result.details) else \
        ({} if result.details is None else {"value": result.details})
    if cut != parts:
        details["truncated_output"] = True
        if path is None:
            details["full_output"] = full_output(result)
    else:  # the session allows more than the tool's own defaults did: the model gets all of it
        details.pop("full_output", None)
        details.pop("truncated_output", None)
    others = [block for block in result.content if not isinstance(block, TextContent)]
    return ToolResult([TextContent(shown), *others], details, result.child_loop_id)


def offered_tools(registry: ToolRegistry, config: SessionConfig, depth: int) -> list[RegisteredTool]:
    """The tools of ``registry`` a session at sub-agent ``depth`` offers under ``config`` (see module docs)."""
    def offered(registered: RegisteredTool) -> bool:
        if config.plan_mode and registered.kind != "read":
            return False
        return not (registered.name in SUBAGENT_TOOL_NAMES and depth >= config.max_subagent_depth)

    return [registered for registered in registry.tools() if offered(registered)]


@dataclass
class SessionTool:
    """A registered tool as the core loop sees it (an :class:`~phi.loop.tool.AgentTool`), for one
    input: the session makes new ones for every input, so copying the definition here is safe."""

    registered: RegisteredTool
    session: ToolHost  # whose environment, config and approval apply
    workers: WorkingThreads  # the session's register of threads running its tool calls
    name: str = field(init=False)
    description: str = field(init=False)
    parameters: dict[str, Any] = field(init=False)
    timeout_ms: int | None = field(init=False)

    def __post_init__(self) -> None:
        definition = self.registered.definition
        self.name, self.description, self.parameters = definition.name, definition.description, definition.parameters
        self.timeout_ms = self.registered.timeout_ms

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        session = self.session
        config = session.config
        with self.workers.working():  # an abort from the callbacks below must not wait for this call
            unconfined = self.registered.kind == "execute" and session.sandbox.unconfined
            if unconfined and config.approval is None:
                raise ToolError(f"The {self.name} call was refused: commands cannot be sandboxed on this machine "
                                f"({session.sandbox.describe()}) and no approval callback is set to ask. "
                                "Tell the user; they can set SessionConfig.approval or sandbox='full'.")
            if config.approval is not None:
                request = ApprovalRequest(session.id, ctx.tool_call_id, self.name, dict(args), self.registered.kind,
                                          session.execution_env.working_directory())
                allowed, reason = decide(config.approval, request)
                if not allowed:
                    because = f": {reason.rstrip('.')}." if reason else "."
                    raise ToolError(f"The {self.name} call was denied by the user{because} Do not repeat it "
                                    "unchanged; choose another approach or ask the user.")
                if ctx.cancel.is_cancelled():  # aborted while the user was deciding: run nothing more
                    raise ToolCancelled()
            value = self.registered.run(args, session.execution_env, ToolCallContext(ctx, session))
        return shape_for_model(to_tool_result(value), self.name, config.tool_output_limits, config.tool_line_limits)


__all__ = ["SessionTool", "offered_tools", "shape_for_model", "full_output", "full_output_path", "text_of"]
