"""Revealed types of phi's public entry points (issue 33), checked by tests/test_typing.py under mypy
--strict and pyright strict: each reveal_type line ends with the type it must show, so ``Any`` cannot
creep back into what users touch. Never run; only type-checked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from phi import (
    Agent,
    AgentEvent,
    AgentSnapshot,
    ScriptedProvider,
    ScriptedResponse,
    ToolContext,
    ToolResult,
    tool,
)
from phi.evaluation import agent_loop_parallel
from phi.session import JsonDirStore, SessionRecorder, SqliteStore


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="lookup", timeout_ms=5_000)
def lookup(key: str, ctx: ToolContext | None = None) -> ToolResult:
    """Look a key up."""
    return ToolResult.from_text(key)


@dataclass
class Answer:
    city: str
    population: int


class Point(TypedDict):
    x: int
    y: int


provider = ScriptedProvider([ScriptedResponse.text("hi")])
agent = Agent(provider=provider, tools=[add, lookup])

reveal_type(add(1, 2))  # reveals: int
reveal_type(lookup("k"))  # reveals: ToolResult
reveal_type(add.name)  # reveals: str
reveal_type(add.parameters)  # reveals: dict[str, Any]

result = agent.run("hello")
reveal_type(result)  # reveals: AgentResult
reveal_type(result.text)  # reveals: str
reveal_type(result.usage.total_tokens)  # reveals: int
reveal_type(result.messages)  # reveals: list[UserMessage | AssistantMessage | ToolResultMessage | ExtensionMessage]

stream = agent.prompt("again")
reveal_type(stream.result())  # reveals: AgentResult
for event in stream:
    if event.type == "ToolExecutionEnd":
        reveal_type(event)  # reveals: ToolExecutionEnd
        reveal_type(event.result)  # reveals: ToolResult
    elif event.type == "MessageUpdate":
        reveal_type(event.delta)  # reveals: StreamDelta

for message in result.messages:
    reveal_type(message.text)  # reveals: str
    if message.role == "toolResult":
        reveal_type(message)  # reveals: ToolResultMessage
        reveal_type(message.tool_call_id)  # reveals: str
    elif message.role == "assistant":
        reveal_type(message.tool_calls)  # reveals: list[ToolCall]
    for block in message.content if message.role != "extension" else []:
        if block.type == "toolCall":
            reveal_type(block)  # reveals: ToolCall

reveal_type(agent.run_structured("a city?", Answer))  # reveals: Answer
reveal_type(agent.run_structured("a point?", Point))  # reveals: Point
reveal_type(agent.run_structured("numbers?", list[int]))  # reveals: list[int]

snapshot = agent.checkpoint()
reveal_type(snapshot)  # reveals: AgentSnapshot
reveal_type(AgentSnapshot.load(Path("s.json")))  # reveals: AgentSnapshot

store = JsonDirStore(Path("sessions"))
reveal_type(store.list_ids())  # reveals: list[str]
reveal_type(store.load("id"))  # reveals: Session
reveal_type(SqliteStore(Path("s.db")).load("id"))  # reveals: Session
recorder = SessionRecorder()
reveal_type(recorder)  # reveals: SessionRecorder

parallel = agent.run_parallel("which?", [{"model": "a"}, {"model": "b"}])
reveal_type(parallel)  # reveals: ParallelLoopResult
reveal_type(parallel.selected)  # reveals: ParallelLoopOutcome
reveal_type(parallel.selected.new_messages)  # reveals: list[UserMessage | AssistantMessage | ToolResultMessage | ExtensionMessage]
reveal_type(agent_loop_parallel)  # reveals: a function


def on_event(event: AgentEvent) -> None:
    if event.type == "AgentEnd":
        reveal_type(event.messages)  # reveals: list[UserMessage | AssistantMessage | ToolResultMessage | ExtensionMessage]


unsubscribe = agent.subscribe(on_event)
reveal_type(unsubscribe)  # reveals: a function
