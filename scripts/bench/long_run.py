#!/usr/bin/env python3
"""Long run with compaction (REQ-171/172; issue 11): one agent, 2,000 turns.

Every turn the scripted model says a sentence and calls a tool that returns a 200-line log (~1,700
tokens), so without compaction the history would grow by ~1,800 tokens a turn; with a 19,000-token
budget, compaction works on almost every turn (level 1 most turns, level 2 every few, level 3
rarely). Events are consumed live from ``Agent.prompt``, as an application would.

Three set-ups are measured, each in a fresh interpreter, through the real loop:

* ``full`` — ``compaction_strategy=DefaultCompaction()``: ``compact_messages`` every turn;
* ``incremental`` — ``compaction_strategy=IncrementalCompaction()``: the same results with running
  token totals;
* ``default`` — no strategy: whatever the loop does by default (``compact_with`` is timed).

Printed per mode: the loop's ms/turn, the time spent inside compaction per turn (mean, and the
slowest call), and every 100 turns the history size, the RSS, and the bytes of the messages the run
has produced so far — the run must keep them, since ``AgentEnd`` (and ``AgentResult``) lists every
new message. "RSS − returned messages" is what the run holds beyond that; it should stay flat.
(``ScriptedProvider`` records every request it receives, each holding the history sent; the bench
clears that record after every turn, so that it measures the run and not the test double.)

``--check`` also compares every result with ``compact_messages`` (slow: the loop's ms/turn then
include it; the compaction figures do not).
Figures are printed, never judged; the last line is one JSON object with all of them.
Usage: python3 scripts/bench/long_run.py [--turns N] [--check]
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from phi import Agent, ContextConfig, ScriptedProvider  # noqa: E402
from phi.loop.tool import FunctionTool  # noqa: E402
from phi.context import DefaultCompaction, IncrementalCompaction, compact_messages  # noqa: E402
from phi.context import compaction  # noqa: E402
from phi.events import MessageEnd  # noqa: E402

SAMPLE_EVERY = 100
MODES = ("full", "incremental", "default")


def rss_bytes() -> int:
    """Current resident set size (Linux /proc; elsewhere the peak, which only grows)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of ``obj`` and everything it holds (enums and None are shared, so not counted)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or obj is None or isinstance(obj, enum.Enum):
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        size += sum(deep_size(item, seen) for item in obj)
    elif dataclasses.is_dataclass(obj):
        size += sum(deep_size(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    return size


class Timed:
    """Times a function shaped like ``compact_with(strategy, messages, config, budget)`` (and, with
    ``check``, compares its results with ``compact_messages``)."""

    def __init__(self, compact: Callable[..., list], check: bool) -> None:
        self.inner, self.check = compact, check
        self.seconds = self.slowest = 0.0
        self.calls = 0

    def __call__(self, strategy: Any, messages: list, config: ContextConfig, budget: int | None = None) -> list:
        started = time.perf_counter()
        result = self.inner(strategy, messages, config, budget)
        spent = time.perf_counter() - started
        self.seconds += spent
        self.slowest = max(self.slowest, spent)
        self.calls += 1
        if self.check and result != compact_messages(messages, config, budget):
            raise AssertionError(f"turn {self.calls}: compaction differs from compact_messages")
        return result

    def compact(self, messages: list, config: ContextConfig) -> list:
        """As a CompactionStrategy (the loop passes a tighter budget as ``config.budget``)."""
        return self(None, messages, config)


def timed_setup(mode: str, check: bool) -> tuple[Timed, Any]:
    """(the timer, the compaction_strategy to configure) for ``mode``."""
    if mode == "default":  # no strategy: time the loop's own call, whatever it does
        timer = compaction.compact_with = Timed(compaction.compact_with, check)
        return timer, None
    inner = DefaultCompaction() if mode == "full" else IncrementalCompaction()
    timer = Timed(lambda strategy, messages, config, budget: inner.compact(messages, config), check)
    return timer, timer


def run(mode: str, turns: int, check: bool) -> dict:
    """One agent, ``turns`` turns, in this interpreter; returns the figures."""
    calls = {"n": 0}

    def model(config: Any) -> Any:
        calls["n"] += 1
        if calls["n"] >= turns:
            return "All done."
        return {"blocks": [{"type": "text", "chunks": ["Reading the next chunk."]},
                           {"type": "toolCall", "id": f"c{calls['n']}", "name": "dump",
                            "arguments": {"n": calls["n"]}}],
                "usage": {"input": 1000, "output": 20}}

    dump = FunctionTool("dump", "Return a long log.", {"type": "object", "properties": {"n": {"type": "integer"}}},
                        lambda args, ctx: "\n".join(f"log line {i} of chunk {args.get('n')}" for i in range(200)))
    timer, strategy = timed_setup(mode, check)
    provider = ScriptedProvider(default=model)
    agent = Agent(provider=provider, tools=[dump],
                  context_config=ContextConfig(max_context_tokens=20_000, system_prompt_tokens=1_000,
                                               keep_recent=10, keep_first=2))
    agent.config.compaction_strategy = strategy
    produced = {"messages": 0, "bytes": 0, "by_role": {}}
    samples: list[dict] = []

    def on_event(event: Any) -> None:
        if type(event) is MessageEnd:
            size = deep_size(event.message) + 8  # + its slot in the run's list
            produced["messages"] += 1
            produced["bytes"] += size
            count, total = produced["by_role"].get(event.message.role, (0, 0))
            produced["by_role"][event.message.role] = (count + 1, total + size)

    def after_turn(messages: list, usage: Any) -> None:
        provider.calls.clear()  # the test double keeps every request it got; a real provider does not
        if calls["n"] % SAMPLE_EVERY == 0:
            samples.append({"turn": calls["n"], "history": len(messages), "rss": rss_bytes(),
                            "returned_messages": produced["messages"], "returned_bytes": produced["bytes"]})

    agent.subscribe(on_event)
    agent.config.after_turn = after_turn
    started = time.perf_counter()
    stream = agent.prompt("Read every chunk.")
    for _ in stream:
        pass
    result = stream.result()
    elapsed = time.perf_counter() - started
    return {"mode": mode, "turns": calls["n"], "seconds": elapsed, "loop_ms_per_turn": elapsed * 1000 / calls["n"],
            "compaction_ms_per_turn": timer.seconds * 1000 / max(1, timer.calls),
            "compaction_slowest_ms": timer.slowest * 1000, "run_messages": len(result.messages),
            "history_after": len(agent.messages), "samples": samples,
            "bytes_by_role": {role: total // count for role, (count, total) in produced["by_role"].items()}}


def report(figures: dict) -> dict:
    """Print one mode's figures; return the ones for the JSON line."""
    samples = figures["samples"]
    print(f"\n{figures['mode']}: {figures['turns']} turns in {figures['seconds']:.2f} s — loop "
          f"{figures['loop_ms_per_turn']:.3f} ms/turn, compaction {figures['compaction_ms_per_turn']:.4f} ms/turn "
          f"(slowest call {figures['compaction_slowest_ms']:.2f} ms)")
    print(f"  {'turn':>5} {'history':>8} {'RSS MB':>8} {'returned':>9} {'ret. MB':>8} {'RSS-ret MB':>11}")
    for s in samples:
        rest = (s["rss"] - s["returned_bytes"]) / 2**20
        print(f"  {s['turn']:5d} {s['history']:8d} {s['rss'] / 2**20:8.1f} {s['returned_messages']:9d} "
              f"{s['returned_bytes'] / 2**20:8.1f} {rest:11.1f}")
    first, last = samples[0], samples[-1]
    returned = last["returned_bytes"] - first["returned_bytes"]
    per_message = returned / max(1, last["returned_messages"] - first["returned_messages"])
    rest = [(s["rss"] - s["returned_bytes"]) / 2**20 for s in samples]
    later = rest[len(rest) // 2 :]
    by_role = ", ".join(f"{role} {size} B" for role, size in figures["bytes_by_role"].items())
    print(f"  turns {first['turn']}→{last['turn']}: RSS {(last['rss'] - first['rss']) / 2**20:+.1f} MB, of which the "
          f"returned messages {returned / 2**20:+.1f} MB ({per_message:.0f} bytes/message: {by_role}); "
          f"the rest {rest[-1] - rest[0]:+.1f} MB, and within {max(later) - min(later):.1f} MB over the second half")
    key = figures["mode"]
    return {f"{key}_loop_ms_per_turn": round(figures["loop_ms_per_turn"], 4),
            f"{key}_compaction_ms_per_turn": round(figures["compaction_ms_per_turn"], 4),
            f"{key}_compaction_slowest_ms": round(figures["compaction_slowest_ms"], 3),
            f"{key}_rss_mb_first": round(first["rss"] / 2**20, 1), f"{key}_rss_mb_last": round(last["rss"] / 2**20, 1),
            f"{key}_returned_mb": round(last["returned_bytes"] / 2**20, 1),
            f"{key}_returned_bytes_per_message": round(per_message),
            f"{key}_rss_minus_returned_growth_mb": round(rest[-1] - rest[0], 2),
            f"{key}_rss_minus_returned_second_half_range_mb": round(max(later) - min(later), 2),
            f"{key}_history_max": max(s["history"] for s in samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=int(os.environ.get("PHI_BENCH_TURNS", "2000")))
    parser.add_argument("--check", action="store_true", help="compare every incremental result with compact_messages")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one mode in this interpreter
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(run(args.mode, args.turns, args.check)))
        return
    print(f"{args.turns} turns, a 200-line tool output each; budget 19,000 tokens; each mode in a fresh interpreter")
    figures: dict[str, Any] = {"turns": args.turns}
    for mode in MODES:
        command = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--turns", str(args.turns)]
        out = subprocess.run(command + (["--check"] if args.check else []), check=True, capture_output=True, text=True)
        figures.update(report(json.loads(out.stdout.strip().splitlines()[-1])))
    figures["compaction_speedup"] = round(figures["full_compaction_ms_per_turn"]
                                          / max(1e-9, figures["incremental_compaction_ms_per_turn"]), 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
