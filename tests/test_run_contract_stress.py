"""Stress: seven ways applications drive a run, 50 runs each, all at once (issue 9 acceptance).

The patterns — steer, follow up, abort, abort from a callback, raise from a callback, a prompt
chained on AgentEnd, reset during a run — act from other threads (or from callbacks) while a
scripted provider streams slowly. Every run must end within a bound (no hang), every steered or
followed-up message must be in the history or still queued exactly once, and every history must be
a valid conversation.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from history_checks import assert_valid_conversation

from phi import Agent, FunctionTool, ScriptedProvider
from phi.errors import AlreadyRunning
from phi.providers.base import StreamConfig
from phi.types import ToolResultMessage, UserMessage

RUNS = 50
BOUND = 10.0  # seconds any single run may take before it counts as a hang


class CallbackFailed(Exception):
    pass


def slow_reply(config: StreamConfig) -> dict:
    """A tool call after a user message, a text answer after the tool result; streamed slowly."""
    last = config.messages[-1] if config.messages else None
    if not isinstance(last, ToolResultMessage):
        return {"blocks": [{"type": "text", "chunks": ["look", "ing"]},
                           {"type": "toolCall", "id": f"c{random.randrange(10**9)}", "name": "lookup", "arguments": {}}],
                "chunk_delay_ms": 1}
    return {"blocks": [{"type": "text", "chunks": [f"w{i} " for i in range(6)]}], "chunk_delay_ms": 1}


def make_agent() -> Agent:
    tool = FunctionTool("lookup", "look something up", {"type": "object"},
                        lambda args, ctx: ctx.cancel.wait(random.random() * 0.003) or "found")
    return Agent(provider=ScriptedProvider(default=slow_reply), tools=[tool])


def queued_once(agent: Agent, texts: list[str]) -> None:
    """Each text is, exactly once, in the history or in one of the queues."""
    where = [m.text for m in agent.messages if isinstance(m, UserMessage)]
    where += [m.text for m in agent.steering_queue.snapshot() + agent.follow_up_queue.snapshot()]
    for text in texts:
        assert where.count(text) == 1, f"{text!r} appears {where.count(text)} times"


def after_first_update(agent: Agent, action: Callable[[], Any]) -> Callable[[], Callable[[], None]]:
    """Subscribe so that ``action`` runs on another thread once the next run starts streaming;
    arming returns the unsubscribe function."""
    started = threading.Event()
    unsubscribe = agent.subscribe(lambda e: started.set() if e.type == "MessageUpdate" else None)

    def arm() -> Callable[[], None]:
        started.clear()
        threading.Thread(target=lambda: started.wait(BOUND) and action(), daemon=True).start()
        return unsubscribe

    return arm


def finish(stream: Any) -> Any:
    assert stream.wait(BOUND), "a run did not end in time"
    return stream


# --------------------------------------------------------------------------- the seven patterns


def queued_input(kind: str) -> Callable[[], None]:
    """Steer or follow up from another thread once each run streams; nothing may be lost."""

    def pattern() -> None:
        agent, sent = make_agent(), []
        push = agent.steer if kind == "steer" else agent.follow_up
        for i in range(RUNS):
            text = f"{kind} {i}"
            unsubscribe = after_first_update(agent, lambda text=text: push(text))()
            sent.append(text)
            finish(agent.prompt(f"prompt {i}")).result()
            unsubscribe()
        assert agent.wait_for_idle(BOUND)
        queued_once(agent, sent)
        assert_valid_conversation(agent.messages)

    pattern.__name__ = kind
    return pattern


def abort_from_another_thread() -> None:
    agent = make_agent()
    for i in range(RUNS):
        timer = threading.Timer(random.random() * 0.02, agent.abort)
        stream = agent.prompt(f"prompt {i}")
        timer.start()
        finish(stream).result()
        timer.join()
        assert_valid_conversation(agent.messages)


def on_nth_event(action: Callable[[], Any]) -> Callable[[Any], None]:
    """A subscriber that runs ``action`` at a random event (1st to 24th) of the run."""
    nth, count = random.randrange(1, 25), [0]

    def on_event(event: Any) -> None:
        count[0] += 1
        if count[0] == nth:
            action()

    return on_event


def abort_from_a_callback() -> None:
    agent = make_agent()
    for i in range(RUNS):
        unsubscribe = agent.subscribe(on_nth_event(agent.abort))
        finish(agent.prompt(f"prompt {i}")).result()
        unsubscribe()
        assert_valid_conversation(agent.messages)


def raise_from_a_callback() -> None:
    agent, raised = make_agent(), 0

    def fail() -> None:
        raise CallbackFailed("from a subscriber")

    for i in range(RUNS):
        on_event = on_nth_event(fail)
        unsubscribe = agent.subscribe(on_event)
        stream = finish(agent.prompt(f"prompt {i}"))
        try:
            stream.result()
        except CallbackFailed:
            raised += 1
        unsubscribe()
        assert not agent.is_streaming
        assert_valid_conversation(agent.messages)
    assert raised > RUNS // 2


def prompt_chained_on_agent_end() -> None:
    agent = make_agent()
    done = threading.Event()
    errors: list[BaseException] = []
    streams: list[Any] = []

    def on_event(event: Any) -> None:
        if event.type == "AgentEnd":
            if len(streams) == RUNS:
                done.set()
                return
            try:
                streams.append(agent.prompt(f"chained {len(streams)}"))
            except AlreadyRunning as error:  # the agent must already be idle here (AGENT-1)
                errors.append(error)
                done.set()

    agent.subscribe(on_event)
    streams.append(agent.prompt("chained 0"))
    assert done.wait(BOUND * 5), f"the chain stopped after {len(streams)} runs"
    assert not errors, errors[0]
    assert agent.wait_for_idle(BOUND)
    prompts = [m.text for m in agent.messages if isinstance(m, UserMessage)]
    assert prompts == [f"chained {i}" for i in range(RUNS)]
    assert_valid_conversation(agent.messages)


def reset_during_a_run() -> None:
    agent = make_agent()
    for i in range(RUNS):
        timer = threading.Timer(random.random() * 0.02, agent.reset)
        stream = agent.prompt(f"prompt {i}")
        timer.start()
        finish(stream)
        timer.join()
        assert agent.wait_for_idle(BOUND)
        # whether the reset came before or after the run ended, it is never undone by the run
        assert agent.messages == [] or stream.done and [m.text for m in agent.messages][:1] == [f"prompt {i}"]
        agent.reset()
        assert agent.messages == []


PATTERNS = [queued_input("steer"), queued_input("follow_up"), abort_from_another_thread, abort_from_a_callback, raise_from_a_callback,
            prompt_chained_on_agent_end, reset_during_a_run]


def test_seven_patterns_fifty_runs_each_concurrently() -> None:
    random.seed(9)
    with ThreadPoolExecutor(len(PATTERNS)) as pool:
        futures = {pattern.__name__: pool.submit(pattern) for pattern in PATTERNS}
        failures = {name: f.exception(timeout=BOUND * RUNS) for name, f in futures.items()}
    assert not any(failures.values()), {k: repr(v) for k, v in failures.items() if v}
