#!/usr/bin/env python3
"""Loop overhead benchmark (DESIGN §9; issue 2).

Measures, with the scripted provider (no network):
- ms per turn and events per second for a 200-turn run, one tool call per turn, streamed, with the
  events consumed live through an EventStream while the loop runs on a worker thread (as
  Agent.prompt does);
- peak RSS of this process;
- the median wall time of ``python -c "import phi"`` over 15 runs (and of ``python -c pass`` for
  reference, so the import's own cost can be read off);
- the wall time of the tool phase for 10 parallel tools that each sleep 200 ms.

Figures are printed, never judged; the last line is one JSON object with all of them.
Usage: python3 scripts/bench/loop_overhead.py [--turns N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from phi.agent_tool import FunctionTool  # noqa: E402
from phi.cancel import CancellationToken  # noqa: E402
from phi.channel import EventChannel, EventStream  # noqa: E402
from phi.loop import agent_loop  # noqa: E402
from phi.loop_config import AgentContext, AgentLoopConfig  # noqa: E402
from phi.providers.mock import ScriptedProvider  # noqa: E402
from phi.types import UserMessage  # noqa: E402

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _script(turns: int) -> list[dict]:
    script = []
    for i in range(turns - 1):
        script.append({
            "blocks": [{"type": "text", "chunks": ["Let", " me", " check", f" #{i}"]},
                       {"type": "toolCall", "id": f"call_{i}", "name": "lookup", "arguments": {"n": i}}],
            "usage": {"input": 100 + i, "output": 20},
        })
    script.append({"blocks": [{"type": "text", "chunks": ["All", " done", "."]}], "usage": {"input": 90, "output": 3}})
    return script


def _start(provider: ScriptedProvider, tools: list, prompt: str) -> EventStream:
    """Run agent_loop on a worker thread and hand back the live EventStream, like Agent.prompt."""
    channel = EventChannel()
    done = threading.Event()
    cancel = CancellationToken()
    stream: EventStream = EventStream(channel, done, abort=cancel.cancel)
    context = AgentContext(system_prompt="bench", messages=[], tools=tools)
    config = AgentLoopConfig(provider=provider)

    def work() -> None:
        try:
            result = agent_loop([UserMessage.from_text(prompt)], context, config, channel, cancel)
        except BaseException as error:  # re-raised to the consumer
            stream._finish(None, error)
        else:
            stream._finish(result, None)

    threading.Thread(target=work, name="phi-bench-loop", daemon=True).start()
    return stream


def run_turns(turns: int) -> tuple[float, int, int]:
    """One run of ``turns`` turns; returns (seconds, events consumed, messages returned)."""
    tool = FunctionTool("lookup", "look a number up", SCHEMA, lambda args, ctx: f"value {args['n']}")
    provider = ScriptedProvider(_script(turns))
    started = time.perf_counter()
    stream = _start(provider, [tool], "go")
    events = 0
    for _ in stream:
        events += 1
    messages = stream.result()
    elapsed = time.perf_counter() - started
    assert len(provider.calls) == turns, (len(provider.calls), turns)
    return elapsed, events, len(messages)


def parallel_tools_wall(n: int = 10, sleep_s: float = 0.2) -> float:
    """Wall time from the first ToolExecutionStart to the last ToolExecutionEnd."""
    stamps: dict[str, float] = {}
    tool = FunctionTool("sleepy", "sleeps", {"type": "object"}, lambda a, c: time.sleep(sleep_s) or "ok")
    calls = [{"type": "toolCall", "id": f"t{i}", "name": "sleepy", "arguments": {}} for i in range(n)]
    provider = ScriptedProvider([{"blocks": calls}, "done"])
    stream = _start(provider, [tool], "parallel")
    for event in stream:
        if event.type == "ToolExecutionStart":
            stamps.setdefault("first", time.perf_counter())
        elif event.type == "ToolExecutionEnd":
            stamps["last"] = time.perf_counter()
    stream.result()
    return stamps["last"] - stamps["first"]


def median_subprocess_ms(code: str, runs: int = 15) -> float:
    times = []
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def import_self_ms(runs: int = 15) -> float:
    """Median cumulative time of the ``phi`` package import alone, from ``-X importtime``."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    times = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import phi"], check=True, env=env,
                              cwd=ROOT, capture_output=True, text=True)
        for line in done.stderr.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == "phi":
                times.append(int(parts[1]) / 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; the median is reported")
    parser.add_argument("--long-turns", type=int, default=1000, help="one long run, to show how cost grows (0: skip)")
    args = parser.parse_args()

    import jsonschema  # noqa: F401  warm-up: the first validation imports jsonschema

    run_turns(20)  # warm-up: thread pool, validator cache, code paths
    samples = [run_turns(args.turns) for _ in range(args.repeat)]
    elapsed, events, messages = sorted(samples)[len(samples) // 2]
    ms_per_turn = elapsed * 1000 / args.turns
    events_per_s = events / elapsed
    long_ms_per_turn = None
    if args.long_turns:
        long_elapsed, _, _ = run_turns(args.long_turns)
        long_ms_per_turn = long_elapsed * 1000 / args.long_turns
    parallel_s = parallel_tools_wall()
    import_ms = median_subprocess_ms("import phi")
    baseline_ms = median_subprocess_ms("pass")
    self_ms = import_self_ms()
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    print(f"loop overhead: {args.turns} turns (1 streamed tool call each), median of {args.repeat} runs")
    print(f"  {elapsed * 1000:.1f} ms total, {ms_per_turn:.3f} ms per turn (target <= 0.5)")
    print(f"  {events} events consumed via EventStream, {events_per_s:,.0f} events/s, {messages} messages")
    if long_ms_per_turn is not None:
        print(f"  a {args.long_turns}-turn run: {long_ms_per_turn:.3f} ms per turn (each request re-converts the "
              f"whole history, so the cost per turn grows with its length)")
    print(f"parallel tools: 10 x 200 ms in {parallel_s * 1000:.1f} ms wall (tool phase)")
    print(f"python -c 'import phi': median {import_ms:.1f} ms over 15 runs (target <= 40); "
          f"bare interpreter (python -c pass) {baseline_ms:.1f} ms; "
          f"the phi package itself (-X importtime, cumulative) {self_ms:.2f} ms")
    print(f"peak RSS: {peak_rss_mb:.1f} MiB")
    print(json.dumps({
        "turns": args.turns,
        "ms_per_turn": round(ms_per_turn, 4),
        "events_per_s": round(events_per_s),
        "events_per_run": events,
        "long_turns": args.long_turns,
        "ms_per_turn_long": None if long_ms_per_turn is None else round(long_ms_per_turn, 4),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "import_phi_ms": round(import_ms, 1),
        "python_startup_ms": round(baseline_ms, 1),
        "import_phi_self_ms": round(self_ms, 2),
        "parallel_tools_10x200ms_ms": round(parallel_s * 1000, 1),
    }))


if __name__ == "__main__":
    main()
