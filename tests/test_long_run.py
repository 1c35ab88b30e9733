"""REQ-171/172: a long run with compaction keeps what reaches the model inside the budget and the
history bounded (the full 1,000-turn figures come from scripts/bench/long_run.py)."""

from __future__ import annotations

from phi import Agent, ContextConfig, ScriptedProvider
from phi.agent_tool import FunctionTool
from phi.context.tokens import total_tokens


def test_long_run_with_compaction_stays_bounded():
    turns = 800
    sizes: list[tuple[int, int]] = []

    def model(config):
        sizes.append((len(config.messages), total_tokens(config.messages)))
        if len(sizes) >= turns:
            return "done"
        return {"blocks": [{"type": "toolCall", "id": f"c{len(sizes)}", "name": "dump", "arguments": {}}]}

    dump = FunctionTool("dump", "Long output.", {"type": "object"},
                        lambda args, ctx: "\n".join(f"line {i}" for i in range(120)))
    config = ContextConfig(max_context_tokens=8_000, system_prompt_tokens=500, keep_recent=6, keep_first=2)
    agent = Agent(provider=ScriptedProvider(default=model), tools=[dump], context_config=config)
    result = agent.run("go")
    assert len(sizes) == turns
    assert max(tokens for _, tokens in sizes) <= config.budget
    # Old turns become one-line summaries (level 2) until those fill the budget, then the middle is
    # dropped (level 3): the count is bounded by the budget, not by the number of turns.
    assert max(count for count, _ in sizes) <= config.budget // 10
    assert sizes[-1][0] < turns  # without compaction the last call would see ~800 messages
    assert len(agent.messages) < turns
    assert len(result.messages) == 2 * turns  # the run still reports every new message (EVT-4)
