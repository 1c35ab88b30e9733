"""Real runs for the session tests: the loop with scripted providers, and a tool that delegates to
a child loop the way ``phi.subagent.SubAgentTool`` does (own session id, ``parent_loop_id`` set,
first turn triggered by ``SubAgent``, events to the same recorder, ``child_loop_id`` on the result)."""

from __future__ import annotations

from typing import Any, Callable

from phi.loop.tool import FunctionTool, ToolContext
from phi.ids import random_uuid
from phi.loop import agent_loop
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.types import TextContent, ToolResult, TurnTrigger, Usage, UserMessage

Sink = Callable[[Any], None]


def config(provider: ScriptedProvider, **settings: Any) -> AgentLoopConfig:
    return AgentLoopConfig(provider=provider, **settings)


def run(prompt: str, context: AgentContext, provider: ScriptedProvider, sink: Sink, **settings: Any) -> list[Any]:
    return agent_loop([UserMessage.from_text(prompt)], context, config(provider, **settings), sink)


def delegate_tool(parent_loop_id: str, sink: Sink, answer: str = "child done", name: str = "delegate",
                  before_return: Callable[[str], None] | None = None) -> FunctionTool:
    """A tool that runs a child loop for ``args["task"]`` and returns its answer with ``child_loop_id``.

    ``before_return(child_loop_id)`` runs after the child's AgentEnd, before the tool returns (i.e.
    before the parent's ToolExecutionEnd): the REQ-221 window.
    """

    def execute(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        child = AgentContext(agent_id="sub-" + args["task"], session_id=random_uuid(), parent_loop_id=parent_loop_id)
        provider = ScriptedProvider([ScriptedResponse.text(answer, usage=Usage(input=3, output=2))])
        agent_loop([UserMessage.from_text(args["task"])], child,
                   config(provider, first_turn_trigger=TurnTrigger.SUB_AGENT), sink, ctx.cancel)
        if before_return is not None:
            before_return(child.loop_id)  # type: ignore[arg-type]
        return ToolResult([TextContent(answer)], child_loop_id=child.loop_id)

    schema = {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}
    return FunctionTool(name, "Delegate a task to a sub-agent.", schema, execute)


def calls(*tasks: str, name: str = "delegate") -> dict[str, Any]:
    """One assistant reply calling ``name`` once per task (ids call_0, call_1, ...), in fixture form."""
    return {"blocks": [{"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": {"task": task}}
                       for i, task in enumerate(tasks)],
            "usage": {"input": 10, "output": 5}}
