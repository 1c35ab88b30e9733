#!/usr/bin/env python3
"""Parallel tool wall time and abort latency through the public Agent API (DESIGN §9; issue 11).

Tool phase — the wall time from the first ``ToolExecutionStart`` to the last ``ToolExecutionEnd``
that the consumer of ``Agent.prompt()`` receives, for one reply with
* 10 calls of a tool that sleeps 200 ms (target ≤ 220 ms), and
* 100 calls of a tool that sleeps 50 ms (target ≤ 80 ms);
median and max over ``--runs`` runs after one warm-up run.

Abort latency — ``Agent.run()`` runs on the main thread; once the run is in the phase under test,
another thread waits a random delay, notes the time and calls ``agent.abort()``; the latency is
the time from that call to ``run()`` returning (the result's outcome must be ``aborted``). Targets:
median ≤ 5 ms, max ≤ 20 ms, over ``--trials`` trials (≥ 30) for each of
* a scripted stream: ``ScriptedProvider`` streaming 500 text chunks 4 ms apart; abort 0–300 ms
  after the first ``MessageUpdate``;
* a real HTTP stream: a server on 127.0.0.1 speaking the OpenAI Chat Completions SSE format, one
  content chunk every 10 ms for 10 s, read by phi's OpenAI provider
  (``ModelConfig.openai_compatible``) over ``requests``; abort 0–300 ms after the first
  ``MessageUpdate``;
* a running shell command: the built-in ``bash`` tool running ``sleep 10`` (under the descendant
  reaper on Linux); abort 30–200 ms after ``ToolExecutionStart``.

Prints the figures next to the targets; the last line is one JSON object of all figures.
Benchmarks report, they never judge.

Usage: python3 scripts/bench/tools_and_abort.py [--runs 5] [--trials 30] [--seed 11]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from phi import Agent, FunctionTool, ModelConfig, ScriptedProvider  # noqa: E402
from phi.tools import BashTool  # noqa: E402

# --------------------------------------------------------------------------- tool phase


def tool_phase_ms(calls: int, sleep_s: float) -> float:
    """First ToolExecutionStart to last ToolExecutionEnd, as received by the consumer."""
    sleepy = FunctionTool("sleepy", "Sleeps, then says ok.", {"type": "object"},
                          lambda args, ctx: time.sleep(sleep_s) or "ok")
    reply = {"blocks": [{"type": "toolCall", "id": f"t{i}", "name": "sleepy", "arguments": {}} for i in range(calls)]}
    agent = Agent(provider=ScriptedProvider([reply, "done"]), tools=[sleepy])
    first = last = None
    ends = 0
    for event in agent.prompt("run the tools"):
        if event.type == "ToolExecutionStart" and first is None:
            first = time.perf_counter()
        elif event.type == "ToolExecutionEnd":
            last = time.perf_counter()
            ends += 1
    assert first is not None and last is not None and ends == calls, (first, last, ends)
    return (last - first) * 1000


def tool_phase(calls: int, sleep_s: float, runs: int) -> list[float]:
    tool_phase_ms(calls, sleep_s)  # warm-up: worker threads
    return [tool_phase_ms(calls, sleep_s) for _ in range(runs)]


# --------------------------------------------------------------------------- abort latency


def abort_latency_ms(agent: Agent, started_by: Callable[[object], bool], delay: tuple[float, float],
                     rng: random.Random) -> float:
    """Run ``agent`` on this thread; abort it from another thread a random delay after the first
    event for which ``started_by`` is true; milliseconds from ``abort()`` to ``run()`` returning."""
    started = threading.Event()
    unsubscribe = agent.subscribe(lambda event: started_by(event) and started.set())
    pause = rng.uniform(*delay)
    aborted_at: list[float] = []

    def aborter() -> None:
        if started.wait(30):
            time.sleep(pause)
            aborted_at.append(time.perf_counter())
            agent.abort()

    thread = threading.Thread(target=aborter, name="bench-aborter", daemon=True)
    thread.start()
    try:
        result = agent.run("go")
        returned = time.perf_counter()
    finally:
        unsubscribe()
    thread.join()
    if not aborted_at or result.outcome.value != "aborted":
        raise RuntimeError(f"the run was not aborted while in progress: outcome {result.outcome}")
    return (returned - aborted_at[0]) * 1000


def is_update(event: object) -> bool:
    return getattr(event, "type", None) == "MessageUpdate"


def is_tool_start(event: object) -> bool:
    return getattr(event, "type", None) == "ToolExecutionStart"


def scripted_stream_agent() -> Agent:
    reply = {"blocks": [{"type": "text", "chunks": [f"tok{i} " for i in range(500)]}], "chunk_delay_ms": 4}
    return Agent(provider=ScriptedProvider([reply]))


def slow_chat_server() -> ThreadingHTTPServer:
    """Chat Completions SSE: a role chunk, then one content chunk every 10 ms for 10 s, then stop."""

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1700000000,
                "model": "bench", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            try:
                self.wfile.write(chunk({"role": "assistant", "content": ""}))
                for i in range(1000):
                    self.wfile.write(chunk({"content": f"tok{i} "}))
                    self.wfile.flush()
                    time.sleep(0.01)
                self.wfile.write(chunk({}, "stop") + b"data: [DONE]\n\n")
            except OSError:  # the client went away: an abort
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="bench-server", daemon=True).start()
    return server


def http_stream_agent(url: str) -> Agent:
    return Agent(model_config=ModelConfig.openai_compatible(url, "bench", api_key="sk-bench"))


def shell_agent() -> Agent:
    call = {"blocks": [{"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "sleep 10"}}]}
    return Agent(provider=ScriptedProvider([call, "done"]), tools=[BashTool()])


def abort_trials(make_agent: Callable[[], Agent], started_by: Callable[[object], bool],
                 delay: tuple[float, float], trials: int, rng: random.Random) -> list[float]:
    abort_latency_ms(make_agent(), started_by, delay, rng)  # warm-up
    return [abort_latency_ms(make_agent(), started_by, delay, rng) for _ in range(trials)]


# --------------------------------------------------------------------------- main


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3),
            "min": round(min(values), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each tool phase")
    parser.add_argument("--trials", type=int, default=30, help="aborts per case")
    parser.add_argument("--seed", type=int, default=11, help="seed of the random abort moments")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    figures: dict[str, object] = {"runs": args.runs, "trials": args.trials}

    for calls, sleep_ms, target in ((10, 200, 220), (100, 50, 80)):
        s = summary(tool_phase(calls, sleep_ms / 1000, args.runs))
        figures[f"tools_{calls}x{sleep_ms}ms_ms"] = s
        print(f"tool phase, {calls} x {sleep_ms} ms: median {s['median']:.1f} ms, max {s['max']:.1f} ms "
              f"(target <= {target} ms)", flush=True)

    server = slow_chat_server()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    cases = (
        ("scripted_stream", "scripted stream", scripted_stream_agent, is_update, (0.0, 0.3)),
        ("http_stream", "HTTP stream on 127.0.0.1", lambda: http_stream_agent(url), is_update, (0.0, 0.3)),
        ("shell_command", "shell command (sleep 10)", shell_agent, is_tool_start, (0.03, 0.2)),
    )
    for key, label, make_agent, started_by, delay in cases:
        s = summary(abort_trials(make_agent, started_by, delay, args.trials, rng))
        figures[f"abort_{key}_ms"] = s
        print(f"abort -> run returned, {label}: median {s['median']:.2f} ms, max {s['max']:.2f} ms, "
              f"min {s['min']:.2f} ms over {args.trials} (target median <= 5, max <= 20)", flush=True)
    server.shutdown()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
