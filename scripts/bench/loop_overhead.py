#!/usr/bin/env python3
"""Loop overhead (DESIGN §9; issues 2 and 11): what phi costs per turn when the model and the tools
cost nothing.

The workload is the one the peer comparison (``compare_peers.py``) runs through every framework:
N turns, each a streamed reply with one call of a local ``ok()`` tool (an ``@tool`` function, so
its arguments are validated), then a final answer; the events are consumed live from
``Agent.prompt()`` while the run goes on its worker thread. Measured at N = 20, 200, 1000 and 2000:
ms per turn (median of the runs) and the growth from N=20 to N=2000 (1.0 = flat). Also:

- the tool phase of 10 parallel tools that each sleep 200 ms (first Start to last End);
- ``import phi; phi.Agent; phi.ScriptedProvider; phi.tool`` against ``python -c pass`` (median of 7);
- peak RSS of this process.

Figures are printed, never judged; the last line is one JSON object with all of them.
Usage: python3 scripts/bench/loop_overhead.py [--sizes 20,200,1000,2000] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from phi import Agent, FunctionTool, ScriptedProvider, tool  # noqa: E402


@tool
def ok(n: int) -> str:
    """Say ok.

    Args:
        n: Which call this is.
    """
    return "ok"


@tool(name="ok", inline=True)
def ok_inline(n: int) -> str:
    """Say ok.

    Args:
        n: Which call this is.
    """
    return "ok"


def script(turns: int) -> list[dict]:
    replies: list[dict] = [{"blocks": [{"type": "text", "chunks": ["Let", " me", " check", f" #{i}"]},
                                       {"type": "toolCall", "id": f"call_{i}", "name": "ok", "arguments": {"n": i}}],
                            "usage": {"input": 100 + i, "output": 20}} for i in range(turns - 1)]
    replies.append({"blocks": [{"type": "text", "chunks": ["All", " done", "."]}], "usage": {"input": 90, "output": 3}})
    return replies


def run_turns(turns: int, tool: object = ok) -> tuple[float, int]:
    """One run of ``turns`` turns through Agent.prompt; returns (seconds, events consumed)."""
    agent = Agent(provider=ScriptedProvider(script(turns), record_calls=False), tools=[tool], system_prompt="bench")
    started = time.perf_counter()
    stream = agent.prompt("go")
    events = sum(1 for _ in stream)
    result = stream.result()
    elapsed = time.perf_counter() - started
    assert result.text == "All done." and len(result.messages) == 2 * turns, (result.outcome, len(result.messages))
    return elapsed, events


def parallel_tools_wall(n: int = 10, sleep_s: float = 0.2) -> float:
    """Wall time from the first ToolExecutionStart to the last ToolExecutionEnd."""
    stamps: dict[str, float] = {}
    sleepy = FunctionTool("sleepy", "sleeps", {"type": "object"}, lambda a, c: time.sleep(sleep_s) or "ok")
    calls = [{"type": "toolCall", "id": f"t{i}", "name": "sleepy", "arguments": {}} for i in range(n)]
    agent = Agent(provider=ScriptedProvider([{"blocks": calls}, "done"]), tools=[sleepy])
    for event in agent.prompt("parallel"):
        if event.type == "ToolExecutionStart":
            stamps.setdefault("first", time.perf_counter())
        elif event.type == "ToolExecutionEnd":
            stamps["last"] = time.perf_counter()
    return stamps["last"] - stamps["first"]


def median_subprocess_ms(code: str, runs: int = 7) -> float:
    """Median wall time of ``python -c code``, with bytecode caches written first (as an installed
    package has them; some sandboxes set PYTHONDONTWRITEBYTECODE, which would time compiling)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)  # writes the .pyc files
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="20,200,1000,2000", help="turn counts, comma separated")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per size; the median is reported")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    run_turns(50)  # warm-up: jsonschema import, validator cache, worker threads
    figures: dict[str, float] = {}
    print(f"loop overhead: N turns of one streamed call to a local ok() tool + a final answer, events consumed "
          f"(median of {args.repeat})")
    for n in sizes:
        repeat = args.repeat if n <= 1000 else max(3, args.repeat // 2)
        samples = sorted(run_turns(n) for _ in range(repeat))
        elapsed, events = samples[len(samples) // 2]
        figures[f"ms_per_turn_{n}"] = round(elapsed * 1000 / n, 4)
        print(f"  N={n:>5}: {elapsed * 1000 / n:.3f} ms/turn, {events / elapsed:,.0f} events/s")
    growth = figures[f"ms_per_turn_{sizes[-1]}"] / figures[f"ms_per_turn_{sizes[0]}"]
    figures[f"growth_{sizes[0]}_to_{sizes[-1]}"] = round(growth, 3)
    print(f"  growth N={sizes[0]} -> N={sizes[-1]}: {growth:.2f}x (1.0 = flat)")
    print("the same with ok() marked inline (no thread hop per call):")
    for n in sizes:
        samples = sorted(run_turns(n, ok_inline) for _ in range(max(3, args.repeat // 2)))
        elapsed, _ = samples[len(samples) // 2]
        figures[f"inline_ms_per_turn_{n}"] = round(elapsed * 1000 / n, 4)
        print(f"  N={n:>5}: {elapsed * 1000 / n:.3f} ms/turn")

    parallel_s = parallel_tools_wall()
    print(f"parallel tools: 10 x 200 ms in {parallel_s * 1000:.1f} ms wall (tool phase)")
    import_ms = median_subprocess_ms("import phi; phi.Agent; phi.ScriptedProvider; phi.tool")
    bare_ms = median_subprocess_ms("pass")
    print(f"import phi; phi.Agent; phi.ScriptedProvider; phi.tool: median {import_ms:.1f} ms, bare interpreter "
          f"{bare_ms:.1f} ms, so phi costs {import_ms - bare_ms:.1f} ms")
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak RSS: {peak_rss_mb:.1f} MiB")
    figures.update({
        "parallel_tools_10x200ms_ms": round(parallel_s * 1000, 1),
        "import_agent_ms": round(import_ms, 1),
        "python_startup_ms": round(bare_ms, 1),
        "import_over_startup_ms": round(import_ms - bare_ms, 1),
        "peak_rss_mb": round(peak_rss_mb, 1),
    })
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
