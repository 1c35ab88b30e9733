#!/usr/bin/env python3
"""REQ-171/172: one agent, 1,000 turns with compaction. Prints the message count, the estimated
context tokens and the peak RSS at turns 100, 500 and 1000; ends with one JSON line of the figures.

Every turn the scripted model calls a tool that returns ~200 lines, so without compaction the
history would grow by ~2,000 tokens a turn (about 2M tokens by the end)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from phi import Agent, ContextConfig, ScriptedProvider  # noqa: E402
from phi.agent_tool import FunctionTool  # noqa: E402
from phi.context.tokens import total_tokens  # noqa: E402

TURNS = int(os.environ.get("PHI_BENCH_TURNS", "1000"))
CHECKPOINTS = {100, 500, 1000, TURNS}


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    counter = {"n": 0}

    def model(config):
        counter["n"] += 1
        if counter["n"] > TURNS - 1:
            return "All done."
        return {"blocks": [{"type": "text", "chunks": ["Reading the next chunk."]},
                           {"type": "toolCall", "id": f"c{counter['n']}", "name": "dump", "arguments": {"n": counter["n"]}}],
                "usage": {"input": 1000, "output": 20}}

    dump = FunctionTool("dump", "Return a long log.", {"type": "object", "properties": {"n": {"type": "integer"}}},
                        lambda args, ctx: "\n".join(f"log line {i} of chunk {args.get('n')}" for i in range(200)))
    context_config = ContextConfig(max_context_tokens=20_000, system_prompt_tokens=1_000, keep_recent=10, keep_first=2)
    agent = Agent(provider=ScriptedProvider(default=model), tools=[dump], context_config=context_config)
    figures: dict[str, float] = {}
    started = time.perf_counter()

    def after_turn(messages, usage):
        turn = counter["n"]
        if turn in CHECKPOINTS:
            tokens = total_tokens(messages)
            print(f"turn {turn:5d}: {len(messages):4d} messages, ~{tokens:6d} tokens in context, peak RSS {rss_mb():.1f} MB")
            figures[f"messages_at_{turn}"] = len(messages)
            figures[f"rss_mb_at_{turn}"] = round(rss_mb(), 1)

    agent.config.after_turn = after_turn
    result = agent.run("Read every chunk.")
    elapsed = time.perf_counter() - started
    figures["turns"] = counter["n"]
    figures["seconds"] = round(elapsed, 2)
    figures["ms_per_turn"] = round(elapsed * 1000 / max(1, counter["n"]), 3)
    figures["final_history_messages"] = len(agent.messages)
    figures["run_new_messages"] = len(result.messages)
    print(f"{counter['n']} turns in {elapsed:.1f} s; history after the run: {len(agent.messages)} messages")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
