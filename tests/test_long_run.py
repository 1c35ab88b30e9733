"""REQ-171/172: a long run with compaction keeps what reaches the model inside the budget and the
history bounded; with running token totals (IncrementalCompaction, issue 11) every request is the
same as with the full recomputation (the 2,000-turn figures come from scripts/bench/long_run.py)."""

from __future__ import annotations

import dataclasses

import pytest

from phi import Agent, ContextConfig, ScriptedProvider
from phi.loop.tool import FunctionTool
from phi.context import IncrementalCompaction
from phi.context.tokens import total_tokens

TURNS = 800
CONFIG = ContextConfig(max_context_tokens=8_000, system_prompt_tokens=500, keep_recent=6, keep_first=2)


def long_run(strategy=None):
    """``TURNS`` turns of a tool call with a 120-line output; returns (requests, agent, result)."""
    requests: list[list] = []

    def model(config):
        requests.append(config.messages)
        if len(requests) >= TURNS:
            return "done"
        return {"blocks": [{"type": "toolCall", "id": f"c{len(requests)}", "name": "dump", "arguments": {}}]}

    dump = FunctionTool("dump", "Long output.", {"type": "object"},
                        lambda args, ctx: "\n".join(f"line {i}" for i in range(120)))
    agent = Agent(provider=ScriptedProvider(default=model), tools=[dump], context_config=CONFIG)
    agent.config.compaction_strategy = strategy
    result = agent.run("go")
    return requests, agent, result


@pytest.fixture(scope="module")
def full_run():
    """The run with compact_messages every turn (shared by the tests below)."""
    return long_run()


def test_long_run_with_compaction_stays_bounded(full_run):
    requests, agent, result = full_run
    sizes = [(len(messages), total_tokens(messages)) for messages in requests]
    assert len(sizes) == TURNS
    assert max(tokens for _, tokens in sizes) <= CONFIG.budget
    # Old turns become one-line summaries (level 2) until those fill the budget, then the middle is
    # dropped (level 3): the count is bounded by the budget, not by the number of turns.
    assert max(count for count, _ in sizes) <= CONFIG.budget // 10
    assert sizes[-1][0] < TURNS  # without compaction the last call would see ~800 messages
    assert len(agent.messages) < TURNS
    assert len(result.messages) == 2 * TURNS  # the run still reports every new message (EVT-4)


def timeless(messages: list) -> list:
    """The messages with timestamps zeroed: the two runs happen at different times."""
    return [dataclasses.replace(m, timestamp=0) if hasattr(m, "timestamp") else m for m in messages]


def test_incremental_compaction_sends_the_same_requests_through_the_loop(full_run):
    full_requests, full_agent, full_result = full_run
    requests, agent, result = long_run(IncrementalCompaction())
    assert len(requests) == len(full_requests) == TURNS
    differing = [turn for turn, (a, b) in enumerate(zip(requests, full_requests)) if timeless(a) != timeless(b)]
    assert differing == []
    assert timeless(agent.messages) == timeless(full_agent.messages)
    assert timeless(result.messages) == timeless(full_result.messages)
