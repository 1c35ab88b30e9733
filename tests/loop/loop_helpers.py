"""Shared helpers for the loop tests: run a scripted loop and look at what happened.

``run(script, tools, **config)`` builds a ScriptedProvider from ``script``, runs ``agent_loop`` on a
worker thread (joined with a timeout, so a hang fails the test instead of freezing the suite) and
returns a :class:`Outcome` with the events, returned messages, provider and context.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from phi.loop.tool import FunctionTool, ToolContext
from phi.concurrency.cancel import CancellationToken
from phi.loop import agent_loop, agent_loop_continue
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.providers.mock import ScriptedProvider
from phi.providers.retry import RetryConfig
from phi.types import AgentMessage, AssistantMessage, ToolResultMessage, UserMessage

JOIN_TIMEOUT = 10.0

OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}


@dataclass
class Outcome:
    events: list[Any]
    messages: list[AgentMessage]
    provider: ScriptedProvider
    context: AgentContext
    config: AgentLoopConfig
    error: BaseException | None = None
    elapsed: float = 0.0

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    @property
    def end(self) -> Any:
        ends = self.of("AgentEnd")
        assert len(ends) == 1, f"expected one AgentEnd, got {len(ends)}: {self.types}"
        return ends[0]

    @property
    def replies(self) -> list[AssistantMessage]:
        return [m for m in self.messages if isinstance(m, AssistantMessage)]

    @property
    def results(self) -> list[ToolResultMessage]:
        return [m for m in self.messages if isinstance(m, ToolResultMessage)]


def text_tool(name: str, fn: Callable[[dict, ToolContext], Any] | None = None, schema: dict | None = None,
              timeout_ms: int | None = None) -> FunctionTool:
    """A tool that answers ``{name}:{args}`` unless ``fn`` is given."""
    body = fn or (lambda args, ctx: f"{name}:{sorted(args.items())}")
    return FunctionTool(name, f"test tool {name}", schema or dict(OBJECT_SCHEMA), body, timeout_ms=timeout_ms)


def call(call_id: str, name: str, arguments: dict | None = None) -> dict:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments if arguments is not None else {}}


def tool_turn(*calls: dict, text: str | None = None, **extra: Any) -> dict:
    blocks = ([{"type": "text", "chunks": [text]}] if text else []) + list(calls)
    return {"blocks": blocks, **extra}


def make_config(provider: ScriptedProvider, **settings: Any) -> AgentLoopConfig:
    settings.setdefault("retry_config", RetryConfig(max_retries=3, initial_delay_ms=1, max_delay_ms=5, jitter=False))
    return AgentLoopConfig(provider=provider, **settings)


def run(script: Iterable[Any] = (), tools: Iterable[Any] = (), prompts: Iterable[Any] = ("hi",), *,
        cancel: CancellationToken | None = None, context: AgentContext | None = None,
        continue_: bool = False, sink: Callable[[Any], None] | None = None,
        provider: ScriptedProvider | None = None, timeout: float = JOIN_TIMEOUT, **settings: Any) -> Outcome:
    """Run one loop with a scripted provider on a thread; fail if it does not finish in ``timeout``."""
    provider = provider or ScriptedProvider(list(script))
    config = make_config(provider, **settings)
    if context is None:
        context = AgentContext(messages=[], tools=list(tools))
    prompt_messages = [UserMessage.from_text(p) if isinstance(p, str) else p for p in prompts]
    events: list[Any] = []

    def record(event: Any) -> None:
        events.append(event)
        if sink is not None:
            sink(event)

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            if continue_:
                box["messages"] = agent_loop_continue(context, config, record, cancel)
            else:
                box["messages"] = agent_loop(prompt_messages, context, config, record, cancel)
        except BaseException as error:  # re-raised below on the test thread
            box["error"] = error

    started = time.monotonic()
    thread = threading.Thread(target=target, daemon=True, name="test-loop")
    thread.start()
    thread.join(timeout)
    elapsed = time.monotonic() - started
    if thread.is_alive():
        if cancel is not None:
            cancel.cancel()
        raise AssertionError(f"the loop did not finish within {timeout}s; events so far: {[e.type for e in events]}")
    if "error" in box:
        raise box["error"]
    return Outcome(events, box["messages"], provider, context, config, None, elapsed)


def text_of(message: Any) -> str:
    return "".join(getattr(b, "text", "") for b in message.content)


def last_user_text(messages: list[AgentMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            return text_of(message)
    return ""


def announced(events: list[Any]) -> list[Any]:
    """The messages announced by MessageEnd, in order."""
    return [e.message for e in events if e.type == "MessageEnd"]


def check_announcements(outcome: Outcome) -> None:
    """Every returned message has exactly one MessageStart and one MessageEnd, in append order,
    and MessageUpdates fall between their message's Start and End."""
    open_message = None
    ends: list[Any] = []
    starts = 0
    for event in outcome.events:
        if event.type == "MessageStart":
            assert open_message is None, "MessageStart while another message is open"
            open_message = event.message
            starts += 1
        elif event.type == "MessageUpdate":
            assert open_message is not None, "MessageUpdate outside a message"
        elif event.type == "MessageEnd":
            assert open_message is not None, "MessageEnd without MessageStart"
            ends.append(event.message)
            open_message = None
    assert open_message is None, "a message was never ended"
    assert starts == len(ends)
    assert len(ends) == len(outcome.messages), (len(ends), len(outcome.messages))
    for got, expected in zip(ends, outcome.messages):
        assert got is expected or got == expected
