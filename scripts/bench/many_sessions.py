#!/usr/bin/env python3
"""Many sessions in one process: phi against three peers, C blocking runs at once (issue 36).

The workload per session: one fresh agent, one blocking run of 5 model calls; the first 4 replies
each call a cheap local tool once (``ok(n=i)``, i = 0 … 3), the 5th is the final answer
``All done.``. Every model call waits the model latency L with a real sleep before it replies, as a
service would before its first token. C sessions run at once on a ``ThreadPoolExecutor(max_workers=C)``
— the pattern a threaded server uses — so up to C runs, their model waits and their tool calls
overlap in one interpreter. Every run's outcome is checked (the final answer, and the tool saw
exactly 0 … 3 in order); one wrong outcome fails the cell loudly.

* **phi** — ``ScriptedProvider`` plays the replies (text ``"Let me check #i"`` and the tool call, as
  in ``compare_peers.py``), each with ``first_chunk_delay_ms = L``; the tool is an ``@tool``
  function; the run is ``Agent.run("go")`` (no timeout: the run runs on the calling thread).
* **openai-agents** — a ``Model`` whose ``get_response`` does ``await asyncio.sleep(L)`` and returns
  the message and the ``function_call`` item; ``@function_tool``; ``Runner.run_sync`` (its own event
  loop per thread), tracing disabled.
* **pydantic-ai** — ``FunctionModel(function=...)``, an async function that sleeps L and returns
  a ``TextPart`` and a ``ToolCallPart``; ``@agent.tool_plain``; ``agent.run_sync`` with no request limit.
* **smolagents** — a ``Model`` whose ``generate`` does ``time.sleep(L)`` and returns the reply;
  ``ToolCallingAgent(stream_outputs=False, verbosity_level=OFF)``, ``agent.run("go")``. smolagents ends
  a run with its ``final_answer`` tool, so its 5th reply calls ``final_answer(answer="All done.")``.

* **floor** (not a peer) — no framework: each session waits L before each of its 5 "model calls",
  hands each of its 4 tool calls to a shared ``ThreadPoolExecutor`` and in between burns, in a busy
  loop, phi's own CPU time per model call (measured first in that process: phi's session 200 times
  in a row with L=0). It is what phi's work would cost at that C if phi added nothing of its own —
  threads, locks, hops — beyond the one hop per tool call: ``phi / floor`` near 1 means phi's
  wall is its CPU work plus what CPython makes of C threads sharing the interpreter lock. It runs
  the cells with C >= ``--floor-min`` (100) and the long cell. ``--floor-cpu-ms X`` makes it burn X ms
  per session instead (0: none at all, so that what is left is the threads, the sleeps and the hops —
  what any Python framework pays in that setting); ``--floor-inline`` calls its tool on the session's
  thread (no hop).

Each (framework, C, L) cell runs in a FRESH worker process (same interpreter and venv as
``compare_peers.py``: ``.cache/peers-venv``, made on first use; phi imported from this checkout);
imports and building the model fixtures are not timed: wall = from the first submit to the last
result. Measured per cell: wall seconds, turns/s (C*5 / wall), peak RSS of the worker process
(``ru_maxrss``, imports included) and its RSS before the first submit, peak thread count (the
``Threads`` line of ``/proc/self/status`` sampled every 5 ms by a sampler thread, plus the count at
the last result; for phi also its tool pool's threads at the end and how many "waited N s to start"
warnings it logged), CPU seconds over the timed span (``os.times`` user + system, and the system part
alone: thousands of threads waiting for the GIL show up there). Cells are
interleaved across frameworks (per round of a (C, L): phi first, then the peers, their order
rotating); each figure is the median of ``--repeat`` fresh processes (peak RSS and threads: the
maximum). The grid: C = ``--sizes`` for phi, those up to ``--peer-max`` for the peers, each at every
L of ``--latencies``; then the ``--long`` cell (default C=4000, L=2 s) for phi, and for each peer
that has not gone over budget. A run whose timed span passes ``--budget`` seconds is stopped (the
sessions done by then are counted); a peer is then recorded as "over budget" and skipped at every
larger C, while phi runs its remaining rounds (an over-budget round counts as an infinite wall in
the median).

Knobs that change the setting, not the workload (off by default, recorded in the JSON line):
``--prestart`` starts the executor's C threads before the timed span (a server whose pool is up);
``--switch-interval S`` sets ``sys.setswitchinterval(S)`` in every cell (CPython's default is
5 ms: with thousands of threads waiting for the GIL, each wakes every interval to ask for it, and
the process spends its time in the kernel); ``--phi-inline-tools`` makes phi's tool ``inline=True``
(it runs on the run's thread, no hop to the tool pool); ``--cpus 0`` runs every cell on one core (on
a virtual machine, waking a thread on an idle second core costs more than the thread's work: a tool
call's hop to the pool and back then dominates); ``--gc-threshold N`` calls ``gc.freeze()`` once the
cell's imports are done and ``gc.set_threshold(N)`` (with thousands of sessions in flight each holding
its history, CPython's cyclic collector, run every 700 new objects, walks them again and again; phi's
runs make no cycles, so reference counting frees them anyway).

Printed: one line per cell, the ratios peer ÷ phi of the median walls per (C, L), and the long cell's
wall ÷ ideal (5 × L: what the model's latency alone costs). The last line is ONE JSON object with
every figure, the ratios and the issue's targets as computed numbers (long-cell wall ÷ ideal for phi;
phi's wall at C=1000, L=50 ms; the smallest peer ratio at L=0 for each C; the smallest peer ratio of
the N=20 single run; phi's wall over the floor's per cell). Benchmarks report, they
never judge. Then, unless ``--no-tuned`` (or the run already sets ``--switch-interval`` or
``--gc-threshold``), a *tuned pass* runs phi's C=1000, L=50 ms cell and the long cell again with the
process settings docs/many-sessions.md recommends for thousands of threads — ``sys.setswitchinterval(0.05)``,
``gc.freeze()`` and ``gc.set_threshold(50_000)`` — and the JSON line's targets gain the same two figures
under ``tuned_``. The N=20 single-run comparison is ``compare_peers.py``'s (its "N=20 fresh" row: one run
in a fresh process); after the grid this script runs it (``--sizes 20 --repeat 3 --fresh 3``, about
15 s) and quotes its figures in the JSON line (``--no-n20`` skips that).

Usage: python3 scripts/bench/many_sessions.py [--sizes 1,10,100,1000,4000] [--peer-max 1000]
                                              [--latencies 0,0.05] [--long 4000:2] [--repeat 3]
                                              [--peers openai-agents,pydantic-ai,smolagents]
                                              [--budget 120] [--quick] [--no-n20] [--phi-root DIR]
                                              [--prestart] [--switch-interval S] [--phi-inline-tools] [--cpus LIST]
                                              [--floor-min 100] [--floor-cpu-ms X] [--floor-inline]
                                              [--gc-threshold N] [--no-tuned]
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
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_peers import FINAL, ROOT, ensure_venv, ok_tool, text_chunks, versions  # noqa: E402

PEERS = ("openai-agents", "pydantic-ai", "smolagents")
FLOOR = "floor"  # not a peer: phi's CPU work with no framework around it (floor_session)
FLOOR_CPU: dict[str, float] = {}  # set by floor_session: the CPU it burns per session
# the process settings docs/many-sessions.md recommends for thousands of threads (the tuned pass)
TUNED_SWITCH_INTERVAL = 0.05
TUNED_GC_THRESHOLD = 50_000
TURNS = 5  # model calls per run: 4 with a tool call, then the final answer
ANSWER = "".join(FINAL)

# One session: build a fresh agent, run it to the end, raise unless the outcome is the scripted one.
Session = Callable[[], None]


def reply_text(i: int) -> str:
    return "".join(text_chunks(i)) if i < TURNS - 1 else ANSWER


def check(answer: Any, seen: list[int]) -> None:
    if answer != ANSWER or seen != list(range(TURNS - 1)):
        raise RuntimeError(f"wrong outcome: answer {answer!r}, tool arguments {seen}")


# --------------------------------------------------------------------------- phi


def phi_session(latency: float) -> Session:
    sys.path.insert(0, os.environ.get("PHI_BENCH_ROOT", str(ROOT)))
    from phi import Agent, ScriptedProvider, ScriptedResponse, tool

    delay_ms = latency * 1000.0

    def reply(i: int) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [{"type": "text", "chunks": [reply_text(i)]}]
        if i < TURNS - 1:
            blocks.append({"type": "toolCall", "id": f"call_{i}", "name": "ok", "arguments": {"n": i}})
        return {"blocks": blocks, "usage": {"input": 100 + i, "output": 20}, "first_chunk_delay_ms": delay_ms}

    # parsed once: a reply is only read while it plays, so every session's provider shares them (the
    # test double's parsing is not the loop's cost)
    script = [ScriptedResponse.from_json(reply(i)) for i in range(TURNS)]

    inline = os.environ.get("PHI_BENCH_INLINE_TOOLS") == "1"  # --phi-inline-tools: no hop to the tool pool

    def session() -> None:
        seen: list[int] = []
        provider = ScriptedProvider(script, record_calls=False)
        agent = Agent(provider=provider, tools=[tool(ok_tool(seen), inline=inline)], system_prompt="bench")
        check(agent.run("go").text, seen)

    return session


# --------------------------------------------------------------------------- openai-agents


def openai_agents_session(latency: float) -> Session:
    import asyncio

    from agents import Agent, ModelResponse, RunConfig, Runner, Usage, function_tool
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    def response(i: int) -> ModelResponse:
        text = ResponseOutputText.model_construct(annotations=[], text=reply_text(i), type="output_text", logprobs=[])
        output: list[Any] = [ResponseOutputMessage.model_construct(id=f"msg_{i}", content=[text], role="assistant",
                                                                   status="completed", type="message")]
        if i < TURNS - 1:
            output.append(ResponseFunctionToolCall.model_construct(
                arguments=json.dumps({"n": i}), call_id=f"call_{i}", name="ok", type="function_call", id=f"fc_{i}",
                status="completed"))
        usage = Usage(requests=1, input_tokens=100 + i, output_tokens=20, total_tokens=120 + i)
        return ModelResponse(output=output, usage=usage, response_id=f"resp_{i}")

    class FakeModel(Model):
        def __init__(self) -> None:
            self.calls = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            i, self.calls = self.calls, self.calls + 1
            if latency:
                await asyncio.sleep(latency)
            return response(i)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the benchmark's runs are not streamed")

    config = RunConfig(tracing_disabled=True)

    def session() -> None:
        seen: list[int] = []
        agent = Agent(name="bench", instructions="bench", model=FakeModel(), tools=[function_tool(ok_tool(seen))])
        result = Runner.run_sync(agent, "go", max_turns=TURNS + 5, run_config=config)
        check(result.final_output, seen)

    return session


# --------------------------------------------------------------------------- pydantic-ai


def pydantic_ai_session(latency: float) -> Session:
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import UsageLimits

    limits = UsageLimits(request_limit=None)

    def session() -> None:
        seen: list[int] = []
        calls = [0]

        async def model(messages: list[Any], info: Any) -> ModelResponse:
            i = calls[0]
            calls[0] += 1
            if latency:
                await asyncio.sleep(latency)
            parts: list[Any] = [TextPart(reply_text(i))]
            if i < TURNS - 1:
                parts.append(ToolCallPart("ok", json.dumps({"n": i}), tool_call_id=f"call_{i}"))
            return ModelResponse(parts=parts)

        agent = Agent(FunctionModel(function=model), instructions="bench")
        agent.tool_plain(ok_tool(seen))
        check(agent.run_sync("go", usage_limits=limits).output, seen)

    return session


# --------------------------------------------------------------------------- smolagents


def smolagents_session(latency: float) -> Session:
    from smolagents import LogLevel, Model, ToolCallingAgent, tool
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

    def reply(i: int) -> ChatMessage:
        name, arguments = ("ok", {"n": i}) if i < TURNS - 1 else ("final_answer", {"answer": ANSWER})
        call = ChatMessageToolCall(id=f"call_{i}", type="function",
                                   function=ChatMessageToolCallFunction(name=name, arguments=json.dumps(arguments)))
        return ChatMessage(role=MessageRole.ASSISTANT, content=reply_text(i), tool_calls=[call])

    class FakeModel(Model):
        def __init__(self) -> None:
            super().__init__(model_id="fake")
            self.calls = 0

        def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
            i, self.calls = self.calls, self.calls + 1
            if latency:
                time.sleep(latency)
            return reply(i)

    def session() -> None:
        seen: list[int] = []
        agent = ToolCallingAgent(tools=[tool(ok_tool(seen))], model=FakeModel(), stream_outputs=False,
                                 max_steps=TURNS + 5, verbosity_level=LogLevel.OFF, instructions="bench")
        check(agent.run("go"), seen)

    return session


# --------------------------------------------------------------------------- the floor


def busy(seconds: float) -> None:
    """Spend ``seconds`` of this thread's own CPU time (waiting for the GIL does not count)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def floor_session(latency: float) -> Session:
    """No framework: what phi's own CPU work costs in this setting. Each session waits L before each
    of its 5 "model calls", hands each of its 4 tool calls to a shared ``ThreadPoolExecutor`` (the
    hop phi makes to its tool pool) and between them burns, in a busy loop, phi's CPU time per
    model call — measured first in this process, phi's session run 200 times in a row with L=0."""
    given = os.environ.get("PHI_BENCH_FLOOR_CPU_MS")  # --floor-cpu-ms: the CPU per session, not phi's
    if given is not None:
        per_call = float(given) / 1000.0 / TURNS
    else:
        phi = phi_session(0.0)
        for _ in range(50):
            phi()
        started = time.process_time()
        for _ in range(200):
            phi()
        per_call = (time.process_time() - started) / 200 / TURNS
    FLOOR_CPU["phi_cpu_per_session_ms"] = round(per_call * TURNS * 1000, 4)
    tools = ThreadPoolExecutor(max_workers=1024, thread_name_prefix="floor-tool")
    hop = os.environ.get("PHI_BENCH_FLOOR_INLINE") != "1"  # --floor-inline: tool calls on the session's thread

    def session() -> None:
        seen: list[int] = []
        ok = ok_tool(seen)
        for i in range(TURNS):
            if latency:
                threading.Event().wait(latency)
            if per_call:
                busy(per_call)
            if i < TURNS - 1:
                if hop:
                    tools.submit(ok, i).result()
                else:
                    ok(i)
        check(ANSWER, seen)

    return session


SESSIONS: dict[str, Callable[[float], Session]] = {"phi": phi_session, "openai-agents": openai_agents_session,
                                                   "pydantic-ai": pydantic_ai_session,
                                                   "smolagents": smolagents_session, FLOOR: floor_session}


# --------------------------------------------------------------------------- worker process (one cell)


def os_threads() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return threading.active_count()


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def watch_phi_tool_pool() -> list[str]:
    """Collect phi's "tool ... waited N s to start" warnings (SPEC TOOL-6) instead of printing them."""
    import logging

    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "s to start (" in record.getMessage():
                seen.append(record.getMessage())

    logging.getLogger("phi").addHandler(Collect())
    logging.getLogger("phi").propagate = False  # nothing else of phi's is logged at WARNING in this workload
    return seen


def cell(name: str, sessions: int, latency: float, budget: float, prestart: bool) -> None:
    """Run one cell and answer one JSON line on the original stdout (frameworks' output goes nowhere)."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    session = SESSIONS[name](latency)
    slow_starts = watch_phi_tool_pool() if name == "phi" else None
    if os.environ.get("PHI_BENCH_GC_THRESHOLD"):  # --gc-threshold N: the collector's first threshold
        import gc

        gc.freeze()  # what the imports made is never collected: a service does this after start-up
        gc.set_threshold(int(os.environ["PHI_BENCH_GC_THRESHOLD"]))
    if os.environ.get("PHI_BENCH_SWITCH_INTERVAL"):
        sys.setswitchinterval(float(os.environ["PHI_BENCH_SWITCH_INTERVAL"]))
    if os.environ.get("PHI_BENCH_CPUS"):  # before any thread of the cell starts: each inherits it
        os.sched_setaffinity(0, {int(cpu) for cpu in os.environ["PHI_BENCH_CPUS"].split(",")})
    pool = ThreadPoolExecutor(max_workers=sessions)
    if prestart:  # the executor's C threads exist before the timed span, as in a server that is up
        everyone = threading.Barrier(sessions + 1)
        warm = [pool.submit(everyone.wait) for _ in range(sessions)]  # each blocks: a new thread per submit
        everyone.wait()
        for warmed in warm:
            warmed.result()
    peak = [os_threads()]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], os_threads())

    futures: list[Future[None]] = []

    def watchdog() -> None:
        if not done.wait(budget):
            finished = sum(1 for f in list(futures) if f.done())
            answers.write(json.dumps({"over_budget": True, "completed": finished}) + "\n")
            answers.flush()
            os._exit(0)  # threads still running their sessions are not waited for

    base_rss = rss_mb()
    threading.Thread(target=sample, daemon=True).start()
    cpu0 = os.times()
    threading.Thread(target=watchdog, daemon=True).start()
    started = time.perf_counter()
    for _ in range(sessions):
        futures.append(pool.submit(session))
    errors: list[str] = []
    for future in futures:
        error = future.exception()
        if error is not None:
            errors.append(f"{type(error).__name__}: {error}"[:300])
    wall = time.perf_counter() - started
    cpu1 = os.times()
    threads_at_end = os_threads()
    done.set()
    peak[0] = max(peak[0], threads_at_end)
    pool.shutdown(wait=True)
    answer: dict[str, Any] = {
        "wall_s": wall, "cpu_s": (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system),
        "cpu_system_s": cpu1.system - cpu0.system,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "base_rss_mb": base_rss,
        "peak_threads": peak[0], "threads_at_end": threads_at_end,
    }
    answer.update(FLOOR_CPU)
    if slow_starts is not None:
        from phi.concurrency.workers import stats

        answer["phi_tool_pool_threads"] = stats().threads
        answer["phi_slow_start_warnings"] = len(slow_starts)
    if errors:
        answer["error"] = f"{len(errors)} of {sessions} sessions failed; first: {errors[0]}"
    answers.write(json.dumps(answer) + "\n")
    answers.flush()
    os._exit(0)  # a framework's leftover non-daemon threads must not hold the cell's process


# --------------------------------------------------------------------------- driver


def run_cell(python: Path, name: str, sessions: int, latency: float, budget: float,
             prestart: bool) -> dict[str, Any]:
    command = [str(python), str(Path(__file__).resolve()), "--cell", name, str(sessions), repr(latency), repr(budget),
               *(["--prestart"] if prestart else [])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=budget + 300)
    except subprocess.TimeoutExpired:
        return {"over_budget": True, "completed": None}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": f"worker exited with {done.returncode}: {done.stderr.strip()[-500:]}"}
    return dict(json.loads(lines[-1]))


def summarize(runs: list[dict[str, Any]], over: list[Any], sessions: int, budget: float) -> dict[str, Any]:
    """The cell's figures; a round over budget counts as an infinite wall in the median."""
    walls = sorted([r["wall_s"] for r in runs] + [float("inf")] * len(over))
    wall = statistics.median(walls)
    if wall == float("inf"):
        return {"over_budget": f"> {budget:g} s in {len(over)} of {len(walls)} rounds ({over} of {sessions} done)",
                "walls_s": [round(w, 4) for w in walls if w != float("inf")]}
    figures = {"wall_s": round(wall, 4), "turns_per_s": round(sessions * TURNS / wall, 1),
               "cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
               "cpu_system_s": round(statistics.median(r["cpu_system_s"] for r in runs), 3),
               "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
               "base_rss_mb": round(statistics.median(r["base_rss_mb"] for r in runs), 1),
               "peak_threads": max(r["peak_threads"] for r in runs),
               "threads_at_end": max(r["threads_at_end"] for r in runs),
               "runs": len(walls), "walls_s": [round(w, 4) for w in walls if w != float("inf")]}
    for key in ("phi_tool_pool_threads", "phi_slow_start_warnings"):
        if runs and key in runs[0]:
            figures[key] = max(r[key] for r in runs)
    if runs and "phi_cpu_per_session_ms" in runs[0]:
        figures["phi_cpu_per_session_ms"] = round(statistics.median(r["phi_cpu_per_session_ms"] for r in runs), 4)
    if over:
        figures["rounds_over_budget"] = len(over)
    return figures


def label(latency: float) -> str:
    return f"{latency * 1000:g}ms" if latency < 1 else f"{latency:g}s"


def print_cell(name: str, sessions: int, latency: float, figures: dict[str, Any]) -> None:
    head = f"  {name:14s} C={sessions:<5d} L={label(latency):6s}"
    if "error" in figures:
        print(f"{head} FAILED: {figures['error']}", flush=True)
    elif "over_budget" in figures:
        print(f"{head} over budget ({figures['over_budget']}; within budget: {figures['walls_s']})", flush=True)
    else:
        f = figures
        if f.get("rounds_over_budget"):
            head += f" ({f['rounds_over_budget']} round(s) over budget)"
        print(f"{head} wall {f['wall_s']:8.3f} s  {f['turns_per_s']:9.1f} turns/s  CPU {f['cpu_s']:7.2f} s (sys {f['cpu_system_s']:6.2f})  "
              f"peak RSS {f['peak_rss_mb']:7.1f} MiB (base {f['base_rss_mb']:5.1f})  "
              f"threads peak {f['peak_threads']:5d}  (median of {f['runs']})"
              + (f"  tool pool {f['phi_tool_pool_threads']} threads after, {f['phi_slow_start_warnings']} "
                 f"slow-start warnings" if "phi_tool_pool_threads" in f else ""), flush=True)


def measure(python: Path, names: list[str], sessions: int, latency: float, repeat: int, budget: float,
            prestart: bool) -> dict[str, dict[str, Any]]:
    """Interleaved rounds of one (C, L): per round phi, then each peer (their order rotating). A peer
    over budget skips the remaining rounds; phi runs them all (its median may still be within budget)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    over: dict[str, list[Any]] = {name: [] for name in names}
    failed: dict[str, str] = {}
    peers = [n for n in names if n != "phi"]
    for round_index in range(repeat):
        shift = round_index % len(peers) if peers else 0
        for name in ([n for n in names if n == "phi"] + peers[shift:] + peers[:shift]):
            if name in failed or (name != "phi" and over[name]):
                continue
            result = run_cell(python, name, sessions, latency, budget, prestart)
            if "error" in result:
                failed[name] = result["error"]
            elif result.get("over_budget"):
                over[name].append(result.get("completed"))
            else:
                runs[name].append(result)
    return {name: {"error": failed[name]} if name in failed else summarize(runs[name], over[name], sessions, budget)
            for name in names}


def n20_quote(peers: list[str]) -> dict[str, Any]:
    """The N=20 single-run comparison of compare_peers.py (its "N=20 fresh" row), quoted."""
    command = [sys.executable, str(Path(__file__).resolve().parent / "compare_peers.py"), "--sizes", "20",
               "--repeat", "3", "--fresh", "3", "--peers", ",".join(peers)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-500:]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: value for key, value in out.items() if key.endswith("_20_fresh") or key.endswith("_20")}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,100,1000,4000", help="sessions at once (C), comma separated")
    parser.add_argument("--peer-max", type=int, default=1000, help="the peers run the sizes up to this one")
    parser.add_argument("--latencies", default="0,0.05", help="model latency L in seconds, comma separated")
    parser.add_argument("--long", default="4000:2", help="one more cell C:L (phi; peers within budget); '' skips it")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per cell; medians are reported")
    parser.add_argument("--peers", default=",".join(PEERS), help="which peers to run, comma separated")
    parser.add_argument("--budget", type=float, default=120.0,
                        help="seconds a cell's timed span may take; past it the cell is over budget and that "
                             "framework skips every larger C")
    parser.add_argument("--quick", action="store_true", help="C=1,10,100, L=0, one round, no long cell, no N=20 quote")
    parser.add_argument("--no-n20", action="store_true",
                        help="skip quoting compare_peers.py at N=20 (about 15 s; --quick skips it too)")
    parser.add_argument("--phi-root", default=str(ROOT), help="directory phi is imported from (default: this checkout)")
    parser.add_argument("--prestart", action="store_true",
                        help="start the executor's C threads before the timed span (a server's pool that is up)")
    parser.add_argument("--switch-interval", type=float,
                        help="sys.setswitchinterval(S) in every cell (default: CPython's 0.005 s)")
    parser.add_argument("--gc-threshold", type=int,
                        help="in every cell, gc.freeze() after the imports and gc.set_threshold(N): the cyclic "
                             "collector's first threshold (CPython's default is 700)")
    parser.add_argument("--cpus", help="run every cell on these CPUs only (e.g. 0: one core; Linux)")
    parser.add_argument("--phi-inline-tools", action="store_true",
                        help="phi's tool made with inline=True (runs on the run's thread: no hop to the tool pool)")
    parser.add_argument("--floor-min", type=int, default=100,
                        help="the floor (phi's CPU work with no framework, see floor_session) runs the cells with "
                             "at least this many sessions and the long cell; 0: never")
    parser.add_argument("--floor-cpu-ms", type=float,
                        help="the floor burns this CPU per session instead of phi's as measured (0: none, so the "
                             "floor is the threads, the sleeps and the hops alone)")
    parser.add_argument("--floor-inline", action="store_true",
                        help="the floor calls its tool on the session's thread (no hop to a pool)")
    parser.add_argument("--no-tuned", dest="tuned", action="store_false",
                        help="skip the tuned pass (phi at C=1000, L=50 ms and the long cell again with the process "
                             "settings docs/many-sessions.md recommends; it runs only when neither --switch-interval "
                             "nor --gc-threshold is given)")
    parser.add_argument("--cell", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cell:
        name, sessions, latency, budget = args.cell
        cell(name, int(sessions), float(latency), float(budget), args.prestart)
        return
    if args.quick:
        args.sizes, args.latencies, args.repeat, args.long, args.tuned = "1,10,100", "0", 1, "", False
    sizes = sorted(int(s) for s in args.sizes.split(",") if s)
    latencies = [float(s) for s in args.latencies.split(",") if s]
    peers = [p for p in args.peers.split(",") if p]
    unknown = set(peers) - set(PEERS)
    if unknown:
        raise SystemExit(f"unknown peers {sorted(unknown)}; known: {', '.join(PEERS)}")
    python = ensure_venv()
    found = versions(python)
    os.environ["PHI_BENCH_ROOT"] = str(Path(args.phi_root).resolve())
    if args.switch_interval is not None:
        os.environ["PHI_BENCH_SWITCH_INTERVAL"] = repr(args.switch_interval)
    if args.phi_inline_tools:
        os.environ["PHI_BENCH_INLINE_TOOLS"] = "1"
    if args.cpus:
        os.environ["PHI_BENCH_CPUS"] = args.cpus
    if args.gc_threshold is not None:
        os.environ["PHI_BENCH_GC_THRESHOLD"] = str(args.gc_threshold)
    if args.floor_cpu_ms is not None:
        os.environ["PHI_BENCH_FLOOR_CPU_MS"] = repr(args.floor_cpu_ms)
    if args.floor_inline:
        os.environ["PHI_BENCH_FLOOR_INLINE"] = "1"
    print("versions: " + ", ".join(f"{k} {v}" for k, v in found.items()), flush=True)
    print(f"workload: C sessions at once, each a fresh agent and one blocking run of {TURNS} model calls "
          f"(4 with a local tool), each call after a sleep of L; a fresh process per cell, median of "
          f"{args.repeat}; {os.cpu_count()} CPUs; switch interval {args.switch_interval or sys.getswitchinterval():g} s"
          + ("; phi's tool inline" if args.phi_inline_tools else "")
          + (f"; cells on CPUs {args.cpus}" if args.cpus else "")
          + (f"; gc.freeze() and gc threshold {args.gc_threshold}" if args.gc_threshold else "")
          + ("; executor threads prestarted" if args.prestart else ""), flush=True)

    cells: list[dict[str, Any]] = []
    over: dict[str, int] = {}  # framework -> the C at which it went over budget or failed

    def grid_cell(sessions: int, latency: float, names: list[str]) -> None:
        names = [n for n in names if n not in over or sessions <= over[n]]
        print(f"C={sessions} L={label(latency)}", flush=True)
        for name, figures in measure(python, names, sessions, latency, args.repeat, args.budget, args.prestart).items():
            print_cell(name, sessions, latency, figures)
            cells.append({"framework": name, "sessions": sessions, "latency_s": latency, **figures})
            if "error" in figures or "over_budget" in figures:
                over[name] = min(over.get(name, sessions), sessions)

    for sessions in sizes:
        for latency in latencies:
            grid_cell(sessions, latency, ["phi", *(peers if sessions <= args.peer_max else []),
                                          *([FLOOR] if 0 < args.floor_min <= sessions else [])])
    long_cell: tuple[int, float] | None = None
    if args.long:
        c, l_s = args.long.split(":")
        long_cell = (int(c), float(l_s))
        grid_cell(long_cell[0], long_cell[1], ["phi", *peers, *([FLOOR] if args.floor_min else [])])

    out = report(cells, peers, long_cell)
    if args.tuned and (args.switch_interval is None and args.gc_threshold is None):
        out["tuned"] = tuned_pass(python, sizes, long_cell, args.repeat, args.budget, args.prestart)
        out["targets"].update(out["tuned"]["targets"])
    out = {"versions": found, "repeat": args.repeat, "budget_s": args.budget, "cpus": os.cpu_count(),
           "prestart": args.prestart, "switch_interval_s": args.switch_interval or sys.getswitchinterval(),
           "gc_threshold": args.gc_threshold,
           "cell_cpus": args.cpus,
           "phi_inline_tools": args.phi_inline_tools, "floor_cpu_ms": args.floor_cpu_ms,
           "floor_inline": args.floor_inline,
           "phi_root": os.environ["PHI_BENCH_ROOT"], **out}
    if not args.no_n20 and not args.quick:
        print("N=20 single run (compare_peers.py --sizes 20 --repeat 3 --fresh 3) ...", flush=True)
        out["compare_peers_n20"] = n20_quote(peers)
        fresh = {k: v for k, v in out["compare_peers_n20"].items() if k.startswith("ratio_") and k.endswith("_20_fresh")}
        out["targets"]["min_peer_ratio_N20_fresh"] = min(fresh.values()) if fresh else None
        print(f"  {out['compare_peers_n20']}", flush=True)
    print(json.dumps(out))
    if any("error" in c for c in cells):
        sys.exit(1)  # a wrong outcome is a failed benchmark, whatever the figures


def tuned_pass(python: Path, sizes: list[int], long_cell: tuple[int, float] | None, repeat: int, budget: float,
               prestart: bool) -> dict[str, Any]:
    """phi's cells at C=1000, L=50 ms and the long cell again, with the two process settings
    docs/many-sessions.md recommends for thousands of threads: ``sys.setswitchinterval(0.05)`` and
    ``gc.freeze()`` + ``gc.set_threshold(50_000)``."""
    settings = {"PHI_BENCH_SWITCH_INTERVAL": repr(TUNED_SWITCH_INTERVAL), "PHI_BENCH_GC_THRESHOLD": str(TUNED_GC_THRESHOLD)}
    print(f"tuned: phi again with sys.setswitchinterval({TUNED_SWITCH_INTERVAL}), gc.freeze() and "
          f"gc.set_threshold({TUNED_GC_THRESHOLD})", flush=True)
    grid = [(1000, 0.05)] if 1000 in sizes else []
    if long_cell is not None:
        grid.append(long_cell)
    cells: list[dict[str, Any]] = []
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        for sessions, latency in grid:
            figures = measure(python, ["phi"], sessions, latency, repeat, budget, prestart)["phi"]
            print_cell("phi", sessions, latency, figures)
            cells.append({"framework": "phi", "sessions": sessions, "latency_s": latency, **figures})
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    targets: dict[str, Any] = {}
    for c in cells:
        wall = c.get("wall_s", c.get("over_budget") and "over budget" or c.get("error") and "failed")
        if (c["sessions"], c["latency_s"]) == (1000, 0.05):
            targets["tuned_phi_C1000_L50ms_wall_s"] = wall
        if long_cell is not None and (c["sessions"], c["latency_s"]) == long_cell:
            ideal = TURNS * long_cell[1]
            c["wall_over_ideal"] = round(c["wall_s"] / ideal, 3) if "wall_s" in c else None
            targets[f"tuned_phi_C{long_cell[0]}_L{label(long_cell[1])}_wall_over_ideal"] = c["wall_over_ideal"] or wall
            print(f"  tuned phi C={long_cell[0]} L={label(long_cell[1])}: {c['wall_over_ideal']}x the ideal", flush=True)
    return {"switch_interval_s": TUNED_SWITCH_INTERVAL, "gc_threshold": TUNED_GC_THRESHOLD, "cells": cells,
            "targets": targets}


def report(cells: list[dict[str, Any]], peers: list[str], long_cell: tuple[int, float] | None) -> dict[str, Any]:
    """Print the ratios and the long cell against the ideal; the figures for the JSON line."""
    by_key = {(c["framework"], c["sessions"], c["latency_s"]): c for c in cells}
    ratios: dict[str, dict[str, Any]] = {}
    print("peer / phi (median wall)")
    for (name, sessions, latency), figures in by_key.items():
        if name != "phi":
            continue
        key = f"C={sessions},L={label(latency)}"
        row: dict[str, Any] = {}
        for peer in peers:
            other = by_key.get((peer, sessions, latency))
            if other is None or "wall_s" not in figures:
                continue
            row[peer] = round(other["wall_s"] / figures["wall_s"], 2) if "wall_s" in other else (
                "over budget" if "over_budget" in other else "failed")
        if row:
            ratios[key] = row
            print(f"  {key:18s} " + "  ".join(f"{p} {v if isinstance(v, str) else f'{v:6.2f}x'}"
                                               for p, v in row.items()))
    targets: dict[str, Any] = {}
    if long_cell is not None:
        ideal = TURNS * long_cell[1]
        print(f"C={long_cell[0]} L={label(long_cell[1])}: wall / ideal ({ideal:g} s)")
        for name in ["phi", *peers, FLOOR]:
            c = by_key.get((name, *long_cell))
            if c is not None and "wall_s" in c:
                c["wall_over_ideal"] = round(c["wall_s"] / ideal, 3)
                print(f"  {name:14s} {c['wall_over_ideal']:.2f}x")
        phi_long = by_key.get(("phi", *long_cell), {})
        targets[f"phi_C{long_cell[0]}_L{label(long_cell[1])}_wall_over_ideal"] = phi_long.get(
            "wall_over_ideal", phi_long.get("over_budget") and "over budget" or phi_long.get("error") and "failed")
    floor: dict[str, float] = {}
    for (name, sessions, latency), figures in by_key.items():
        under = by_key.get((FLOOR, sessions, latency), {})
        if name == "phi" and "wall_s" in figures and "wall_s" in under:
            floor[f"C={sessions},L={label(latency)}"] = round(figures["wall_s"] / under["wall_s"], 2)
    if floor:
        print("phi / floor (median wall; the floor: phi's CPU work with no framework)")
        for key, value in floor.items():
            print(f"  {key:18s} {value:.2f}x")
        targets["phi_over_floor"] = floor
    phi_1000 = by_key.get(("phi", 1000, 0.05), {})
    targets["phi_C1000_L50ms_wall_s"] = phi_1000.get(
        "wall_s", phi_1000.get("over_budget") and "over budget" or phi_1000.get("error") and "failed")
    minima: dict[str, Any] = {}
    for (name, sessions, latency), figures in by_key.items():
        at_l0 = ratios.get(f"C={sessions},L={label(0.0)}")
        if name == "phi" and latency == 0 and at_l0:
            numbers = [v for v in at_l0.values() if not isinstance(v, str)]
            minima[str(sessions)] = min(numbers) if numbers else None
    targets["min_peer_ratio_L0"] = minima
    return {"cells": cells, "ratios": ratios, "targets": targets}


if __name__ == "__main__":
    main()
