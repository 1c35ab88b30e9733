"""``Agent.run_structured``: ask for an answer of a given shape (SPEC AGENT-4, TOOL-2).

A synthetic final-answer tool (:func:`phi.agent.final_answer.final_answer_tool`) is added for the run. The
model answers by calling it; the loop validates the arguments against the schema, so an invalid
answer comes back to the model as an error tool result with the validation message and it tries
again. Every call of the tool is an attempt; once ``1 + max_retries`` attempts fail (or the model
keeps answering without calling the tool) :class:`~phi.errors.StructuredOutputFailed` is raised.

The synthetic tool exists only for these runs, so afterwards the exchange is folded into plain text
(:func:`fold_tool_exchange`): a later request must not carry calls of a tool it does not define,
which the APIs reject.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Protocol

from ..errors import StructuredOutputFailed
from ..events import AgentEvent, ToolExecutionEnd
from ..loop.config import AgentLoopConfig
from ..loop.tool import AgentTool
from ..types import (
    AgentMessage,
    AssistantMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

from .result import AgentResult


class StructuredHost(Protocol):
    """What a structured run uses of its :class:`~phi.agent.agent.Agent`."""

    tools: list[AgentTool]
    config: AgentLoopConfig

    @property
    def messages(self) -> list[AgentMessage]: ...

    @messages.setter
    def messages(self, messages: Iterable[AgentMessage]) -> None: ...

    @property
    def is_streaming(self) -> bool: ...

    def subscribe(self, callback: Callable[[AgentEvent], None], *,
                  include_subagents: bool = False) -> Callable[[], None]: ...

    def run(self, text: str) -> AgentResult: ...


def run_structured(agent: StructuredHost, prompt: str, schema: object, max_retries: int = 2) -> Any:
    """The validated answer to ``prompt``: of type ``schema`` when it is a type, else a JSON value."""
    from .final_answer import final_answer_tool

    tool = final_answer_tool(schema)
    limit = 1 + max(0, max_retries)
    attempts = 0
    last_error = ""
    saved_tools, saved_before_turn = agent.tools, agent.config.before_turn

    def watch(event: Any) -> None:
        nonlocal attempts, last_error
        if isinstance(event, ToolExecutionEnd) and event.tool_name == tool.name:
            attempts += 1
            if event.is_error:
                last_error = "".join(b.text for b in event.result.content if isinstance(b, TextContent))

    def before_turn(messages: list[AgentMessage], turn_index: int) -> bool:
        if tool.accepted or attempts >= limit:
            return False  # answered, or out of attempts: no further model call
        return saved_before_turn is None or saved_before_turn(messages, turn_index) is not False

    unsubscribe = agent.subscribe(watch)
    agent.tools, agent.config.before_turn = [*saved_tools, tool], before_turn
    start = len(agent.messages)
    try:
        result = agent.run(f"{prompt}\n\nWhen you have the answer, call the `{tool.name}` tool with it as the arguments.")
        nudges = 0
        while not tool.accepted and attempts + nudges < limit and result.stop_reason != StopReason.ERROR:
            nudges += 1
            result = agent.run(f"You did not call `{tool.name}`. Call it now with your final answer.")
    finally:
        unsubscribe()
        agent.tools, agent.config.before_turn = saved_tools, saved_before_turn
        if not agent.is_streaming:
            agent.messages = agent.messages[:start] + fold_tool_exchange(agent.messages[start:], tool.name)
    if tool.accepted:
        return tool.typed
    reason = result.error or last_error or f"the model did not call the {tool.name} tool"
    raise StructuredOutputFailed(max(attempts + nudges, 1), reason)


def fold_tool_exchange(messages: list[AgentMessage], tool_name: str) -> list[AgentMessage]:
    """``messages`` with every call of ``tool_name`` turned into text: the call becomes a text block
    holding its JSON arguments, an error result becomes a user message with its text, and an
    accepted result is dropped. Other messages and blocks are kept as they are."""
    out: list[AgentMessage] = []
    for message in messages:
        if isinstance(message, ToolResultMessage) and message.tool_name == tool_name:
            if message.is_error:
                out.append(UserMessage([TextContent(f"[{tool_name}] {message.text}")], message.timestamp))
            continue
        if isinstance(message, AssistantMessage) and any(
                isinstance(b, ToolCall) and b.name == tool_name for b in message.content):
            content = [TextContent(json.dumps(b.arguments, ensure_ascii=False))
                       if isinstance(b, ToolCall) and b.name == tool_name else b for b in message.content]
            stop = message.stop_reason
            if stop == StopReason.TOOL_USE and not any(isinstance(b, ToolCall) for b in content):
                stop = StopReason.STOP
            message = AssistantMessage(content, stop, message.model, message.provider, message.usage,
                                       message.timestamp, message.error_message)
        out.append(message)
    return out
