"""The sub-agent tools (SPEC §14 CODE-9; seed 004 §7.2): ``spawn_agent``, ``send_input``, ``wait`` and
``close_agent``, the same in every profile.

Each reaches the calling session's children through the tool call's context
(``ToolCallContext.session.subagents``, a :class:`~phi.coding.subagents.SubAgentManager`); what the
tools do is described in :mod:`phi.coding.subagents`.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ToolError
from ..tools.environment import ExecutionEnvironment
from .registry import RegisteredTool, ToolCallContext
from .subagents import SubAgentManager
from .toolsets import PATH, STRING, described, tool


def _children(call: ToolCallContext) -> SubAgentManager:
    if call.session is None:
        raise ToolError("the sub-agent tools only work inside a phi.coding Session")
    return call.session.subagents


def _spawn(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    handle = _children(call).spawn(args["task"], args.get("working_dir"), args.get("model"), args.get("max_turns"),
                                   call.tool.loop_id)
    return json.dumps({"agent_id": handle.id, "status": handle.status,
                       "working_dir": handle.session.execution_env.working_directory()})


def _send(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    return _children(call).get(args["agent_id"]).send(args["message"])


def _wait(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    return json.dumps(_children(call).get(args["agent_id"]).wait(call.cancel).to_json())


def _close(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    handle = _children(call).get(args["agent_id"])
    result = handle.close()
    return json.dumps({"agent_id": handle.id, "status": handle.status, **result.to_json()})


def subagent_tools() -> list[RegisteredTool]:
    """``spawn_agent``, ``send_input``, ``wait``, ``close_agent`` (same schemas in every profile)."""
    agent_id = {"agent_id": described(PATH, "The id spawn_agent returned.")}
    return [
        tool("spawn_agent", (
            "Start a sub-agent on a self-contained task; it works in parallel with you, with its own "
            "conversation, on the same files. Returns its agent_id at once; collect its answer with wait. "
            "State the task completely: the sub-agent does not see this conversation."),
            {"task": described(PATH, "What the sub-agent should do, with all the context it needs."),
             "working_dir": described(STRING, "Subdirectory to confine it to (default: the working directory)."),
             "model": described(STRING, "Another model of the same provider (default: yours)."),
             "max_turns": {"type": "integer", "minimum": 1, "description": "Its turn limit (default 50)."}},
            ["task"], _spawn, "agent"),
        tool("send_input", "Send a message to a sub-agent: more instructions, a correction or an answer.",
             {**agent_id, "message": described(PATH, "The message.")}, ["agent_id", "message"], _send, "agent"),
        tool("wait", ("Wait until a sub-agent has finished and get its result: its final answer (output), "
                      "whether it succeeded, and how many turns it used."),
             agent_id, ["agent_id"], _wait, "agent"),
        tool("close_agent", "Stop a sub-agent (its running commands are ended) and get its final status.",
             agent_id, ["agent_id"], _close, "agent"),
    ]


__all__ = ["subagent_tools"]
