#!/usr/bin/env python3
"""phi against the Python agent frameworks on one workload, in one run (DESIGN §9; issue 11).

The workload (the one ``loop_overhead.py`` measures for phi alone): N turns, each a streamed
model reply — the text deltas ``"Let" " me" " check" " #i"`` and one call of a local tool
``ok(n=i)`` — except the last, which streams the final answer ``"All" " done" "."``; every
framework validates the call's arguments against the tool's schema, runs the tool, feeds its result
back to the model, and the benchmark consumes the run's events as they are produced. So N model
requests, N-1 tool executions; ms per turn = wall time / N. Nothing goes over a network: each
framework gets a fake model that streams exactly these replies through the framework's own model
interface, so the figures are the frameworks' own overhead:

* **phi** — ``ScriptedProvider`` (``phi.providers.mock``) plays the replies; the tool is an
  ``@tool`` function; the run is ``Agent.prompt("go")`` with its events iterated.
* **openai-agents** — a subclass of ``agents.models.interface.Model`` whose ``stream_response``
  yields the Responses API event sequence a real stream has (``response.created``, output item
  added, content part added, one ``output_text.delta`` per chunk, text done, content part done, item
  done; for the call: item added, one ``function_call_arguments.delta`` with the JSON arguments,
  arguments done, item done; ``response.completed`` carrying the output items and usage). The
  events are built with ``model_construct`` (no validation), as the OpenAI SDK builds streamed
  events. The tool is a ``@function_tool`` (pydantic validates its arguments); the run is
  ``Runner.run_streamed(...)`` with ``stream_events()`` iterated; tracing is disabled.
* **pydantic-ai** — ``FunctionModel(stream_function=...)``: an async generator yielding the text
  chunks as ``str`` and the call as ``{0: DeltaToolCall(name, json_args, tool_call_id)}``. The tool
  is registered with ``@agent.tool_plain`` (pydantic validates its arguments); the run is
  ``agent.run_stream_events("go")`` iterated, with no request limit.
* **smolagents** — a subclass of ``smolagents.Model`` whose ``generate_stream`` yields
  ``ChatMessageStreamDelta`` objects (one per text chunk, then one with the tool-call delta);
  ``ToolCallingAgent(stream_outputs=True, verbosity_level=OFF)``, the tool a ``@tool`` function
  (smolagents checks argument names and types). smolagents ends a run with its ``final_answer``
  tool, so its last reply streams the same text and then calls ``final_answer(answer="All
  done.")``. The run is ``agent.run("go", stream=True)`` iterated. In this streamed mode smolagents
  renders a rich ``Live`` Markdown view of the reply so far on every delta (unconditionally; it is
  written to /dev/null here), which dominates its cost at small N. **smolagents-unstreamed** is the
  same agent with ``stream_outputs=False``: the fake model's ``generate`` returns the whole reply
  (the same deltas, joined by ``agglomerate_stream_deltas``) and only the agent's step events are
  streamed — not the workload as specified, printed so that the cost of smolagents' loop without
  its display can be read off.

Every run starts from a fresh agent and checks its outcome: the final answer is ``All done.`` and
the tool saw exactly the arguments 0 … N-2 in order. Each framework runs in its own long-lived
worker process (same interpreter, from a venv outside the package: ``.cache/peers-venv``, created
with the peers on first use; phi is imported from this checkout). The runs are interleaved — per
round phi first, then each peer (the peers' order rotates) — and every peer's time is divided by
the phi time of the same round: the paired ratio ``peer ÷ phi`` (median over rounds). Printed per
N: the median ms/turn of each framework, the paired ratios, events consumed per run, how much the
worker's RSS grew from before a run to its end (agent and history still alive; median), and the
worker's peak RSS (imports included). A peer whose runs at one N exceed
``--budget`` seconds in total is given fewer rounds there (the count is printed). The last line is
one JSON object of all figures. Benchmarks report, they never judge.

Usage: python3 scripts/bench/compare_peers.py [--sizes 20,200,1000,2000] [--repeat 5] [--quick]
                                             [--peers openai-agents,pydantic-ai,smolagents,...] [--budget S]
                                             [--phi-root DIR]
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
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".cache" / "peers-venv"
PEERS = ("openai-agents", "pydantic-ai", "smolagents", "smolagents-unstreamed")
PACKAGES = ("openai-agents", "pydantic-ai-slim", "smolagents", "requests", "jsonschema", "pyyaml")
DISTRIBUTIONS = ("openai-agents", "pydantic-ai-slim", "smolagents")
FINAL = ("All", " done", ".")

# Runs the workload with N turns; returns the events consumed and the RSS (MiB) at the end of the
# run, while the agent and its history are still alive.
Run = Callable[[int], "tuple[int, float]"]


def text_chunks(i: int) -> tuple[str, ...]:
    return ("Let", " me", " check", f" #{i}")


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def ok_tool(seen: list[int]) -> Callable[[int], str]:
    """The workload's tool, undecorated (each framework wraps it its own way); records ``n``."""

    def ok(n: int) -> str:
        """Say ok.

        Args:
            n: Which call this is.
        """
        seen.append(n)
        return "ok"

    return ok


def check_outcome(answer: Any, seen: list[int], turns: int) -> float:
    """Raise unless the run answered and called the tool as scripted; the RSS now (MiB)."""
    if answer != "All done." or seen != list(range(turns - 1)):
        raise RuntimeError(f"wrong outcome: answer {answer!r}, tool arguments {seen[:5]}... ({len(seen)} calls)")
    return rss_mb()


# --------------------------------------------------------------------------- phi


def phi_runner() -> Run:
    sys.path.insert(0, os.environ.get("PHI_BENCH_ROOT", str(ROOT)))
    from phi import Agent, ScriptedProvider, tool

    def script(turns: int) -> list[dict]:
        replies: list[dict] = [{"blocks": [{"type": "text", "chunks": list(text_chunks(i))},
                                           {"type": "toolCall", "id": f"call_{i}", "name": "ok", "arguments": {"n": i}}],
                                "usage": {"input": 100 + i, "output": 20}} for i in range(turns - 1)]
        replies.append({"blocks": [{"type": "text", "chunks": list(FINAL)}], "usage": {"input": 90, "output": 3}})
        return replies

    def run(turns: int) -> tuple[int, float]:
        seen: list[int] = []
        ok = tool(ok_tool(seen))
        agent = Agent(provider=ScriptedProvider(script(turns)), tools=[ok], system_prompt="bench")
        stream = agent.prompt("go")
        events = sum(1 for _ in stream)
        return events, check_outcome(stream.result().text, seen, turns)

    return run


# --------------------------------------------------------------------------- openai-agents


def openai_agents_runner() -> Run:
    import asyncio

    from agents import Agent, RunConfig, Runner, function_tool
    from agents.models.interface import Model
    from openai.types.responses import (
        Response, ResponseCompletedEvent, ResponseContentPartAddedEvent, ResponseContentPartDoneEvent,
        ResponseCreatedEvent, ResponseFunctionCallArgumentsDeltaEvent, ResponseFunctionCallArgumentsDoneEvent,
        ResponseFunctionToolCall, ResponseOutputItemAddedEvent, ResponseOutputItemDoneEvent, ResponseOutputMessage,
        ResponseOutputText, ResponseTextDeltaEvent, ResponseTextDoneEvent, ResponseUsage,
    )
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    def response(i: int, output: list, usage: ResponseUsage | None) -> Response:
        return Response.model_construct(
            id=f"resp_{i}", created_at=1700000000.0, model="fake", object="response", output=output,
            parallel_tool_calls=True, tool_choice="auto", tools=[], status="completed" if usage else "in_progress",
            usage=usage)

    def reply_events(i: int, chunks: tuple[str, ...], call: tuple[str, str] | None) -> list:
        """The Responses stream of one reply; ``call`` = (call id, JSON arguments)."""
        seq = iter(range(1_000))
        text = "".join(chunks)
        msg_id = f"msg_{i}"
        part = ResponseOutputText.model_construct(annotations=[], text="", type="output_text", logprobs=[])
        done_part = ResponseOutputText.model_construct(annotations=[], text=text, type="output_text", logprobs=[])
        message = ResponseOutputMessage.model_construct(id=msg_id, content=[done_part], role="assistant",
                                                        status="completed", type="message")
        events = [
            ResponseCreatedEvent.model_construct(response=response(i, [], None), sequence_number=next(seq),
                                                 type="response.created"),
            ResponseOutputItemAddedEvent.model_construct(
                item=ResponseOutputMessage.model_construct(id=msg_id, content=[], role="assistant",
                                                           status="in_progress", type="message"),
                output_index=0, sequence_number=next(seq), type="response.output_item.added"),
            ResponseContentPartAddedEvent.model_construct(content_index=0, item_id=msg_id, output_index=0, part=part,
                                                          sequence_number=next(seq), type="response.content_part.added"),
        ]
        events += [ResponseTextDeltaEvent.model_construct(content_index=0, delta=chunk, item_id=msg_id, logprobs=[],
                                                          output_index=0, sequence_number=next(seq),
                                                          type="response.output_text.delta") for chunk in chunks]
        events += [
            ResponseTextDoneEvent.model_construct(content_index=0, item_id=msg_id, logprobs=[], output_index=0,
                                                  sequence_number=next(seq), text=text, type="response.output_text.done"),
            ResponseContentPartDoneEvent.model_construct(content_index=0, item_id=msg_id, output_index=0,
                                                         part=done_part, sequence_number=next(seq),
                                                         type="response.content_part.done"),
            ResponseOutputItemDoneEvent.model_construct(item=message, output_index=0, sequence_number=next(seq),
                                                        type="response.output_item.done"),
        ]
        output: list = [message]
        if call is not None:
            call_id, arguments = call
            item = ResponseFunctionToolCall.model_construct(arguments=arguments, call_id=call_id, name="ok",
                                                            type="function_call", id=f"fc_{i}", status="completed")
            started = ResponseFunctionToolCall.model_construct(arguments="", call_id=call_id, name="ok",
                                                               type="function_call", id=f"fc_{i}", status="in_progress")
            events += [
                ResponseOutputItemAddedEvent.model_construct(item=started, output_index=1, sequence_number=next(seq),
                                                             type="response.output_item.added"),
                ResponseFunctionCallArgumentsDeltaEvent.model_construct(
                    delta=arguments, item_id=f"fc_{i}", output_index=1, sequence_number=next(seq),
                    type="response.function_call_arguments.delta"),
                ResponseFunctionCallArgumentsDoneEvent.model_construct(
                    arguments=arguments, item_id=f"fc_{i}", output_index=1, sequence_number=next(seq),
                    type="response.function_call_arguments.done"),
                ResponseOutputItemDoneEvent.model_construct(item=item, output_index=1, sequence_number=next(seq),
                                                            type="response.output_item.done"),
            ]
            output.append(item)
        usage = ResponseUsage.model_construct(
            input_tokens=100 + i, input_tokens_details=InputTokensDetails.model_construct(cached_tokens=0),
            output_tokens=20, output_tokens_details=OutputTokensDetails.model_construct(reasoning_tokens=0),
            total_tokens=120 + i)
        events.append(ResponseCompletedEvent.model_construct(response=response(i, output, usage),
                                                             sequence_number=next(seq), type="response.completed"))
        return events

    class FakeModel(Model):
        def __init__(self, turns: int) -> None:
            self.turns = turns
            self.calls = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the benchmark streams every reply")

        async def stream_response(self, *args: Any, **kwargs: Any):  # type: ignore[override]
            i, self.calls = self.calls, self.calls + 1
            if i < self.turns - 1:
                events = reply_events(i, text_chunks(i), (f"call_{i}", json.dumps({"n": i})))
            else:
                events = reply_events(i, FINAL, None)
            for event in events:
                yield event

    loop = asyncio.new_event_loop()

    def run(turns: int) -> tuple[int, float]:
        seen: list[int] = []
        ok = function_tool(ok_tool(seen))
        agent = Agent(name="bench", instructions="bench", model=FakeModel(turns), tools=[ok])

        async def main() -> tuple[int, float]:
            result = Runner.run_streamed(agent, "go", max_turns=turns + 5, run_config=RunConfig(tracing_disabled=True))
            events = 0
            async for _ in result.stream_events():
                events += 1
            return events, check_outcome(result.final_output, seen, turns)

        return loop.run_until_complete(main())

    return run


# --------------------------------------------------------------------------- pydantic-ai


def pydantic_ai_runner() -> Run:
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel
    from pydantic_ai.usage import UsageLimits

    loop = asyncio.new_event_loop()

    def run(turns: int) -> tuple[int, float]:
        seen: list[int] = []
        calls = [0]

        async def stream_function(messages: list, info: Any):
            i = calls[0]
            calls[0] += 1
            if i < turns - 1:
                for chunk in text_chunks(i):
                    yield chunk
                yield {0: DeltaToolCall(name="ok", json_args=json.dumps({"n": i}), tool_call_id=f"call_{i}")}
            else:
                for chunk in FINAL:
                    yield chunk

        agent = Agent(FunctionModel(stream_function=stream_function), instructions="bench")
        agent.tool_plain(ok_tool(seen))

        async def main() -> tuple[int, float]:
            events = 0
            async with agent.run_stream_events("go", usage_limits=UsageLimits(request_limit=None)) as stream:
                async for _ in stream:
                    events += 1
            return events, check_outcome(stream.result.output, seen, turns)

        return loop.run_until_complete(main())

    return run


# --------------------------------------------------------------------------- smolagents


def smolagents_runner(streamed: bool = True) -> Run:
    from smolagents import LogLevel, Model, ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessageStreamDelta, ChatMessageToolCallFunction, ChatMessageToolCallStreamDelta, agglomerate_stream_deltas,
    )

    def call_delta(call_id: str, name: str, arguments: dict) -> ChatMessageStreamDelta:
        function = ChatMessageToolCallFunction(name=name, arguments=json.dumps(arguments))
        return ChatMessageStreamDelta(tool_calls=[ChatMessageToolCallStreamDelta(index=0, id=call_id, type="function",
                                                                                 function=function)])

    class FakeModel(Model):
        def __init__(self, turns: int) -> None:
            super().__init__(model_id="fake")
            self.turns = turns
            self.calls = 0

        def generate(self, messages: list, **kwargs: Any) -> Any:
            return agglomerate_stream_deltas(list(self.generate_stream(messages, **kwargs)))

        def generate_stream(self, messages: list, **kwargs: Any):
            i, self.calls = self.calls, self.calls + 1
            final = i >= self.turns - 1
            for chunk in FINAL if final else text_chunks(i):
                yield ChatMessageStreamDelta(content=chunk)
            if final:
                yield call_delta(f"call_{i}", "final_answer", {"answer": "All done."})
            else:
                yield call_delta(f"call_{i}", "ok", {"n": i})

    def run(turns: int) -> tuple[int, float]:
        seen: list[int] = []
        ok = tool(ok_tool(seen))
        agent = ToolCallingAgent(tools=[ok], model=FakeModel(turns), stream_outputs=streamed, max_steps=turns + 5,
                                 verbosity_level=LogLevel.OFF, instructions="bench")
        events = 0
        answer = None
        for event in agent.run("go", stream=True):
            events += 1
            answer = getattr(event, "output", answer)
        return events, check_outcome(answer, seen, turns)

    return run


RUNNERS: dict[str, Callable[[], Run]] = {"phi": phi_runner, "openai-agents": openai_agents_runner,
                                         "pydantic-ai": pydantic_ai_runner, "smolagents": smolagents_runner,
                                         "smolagents-unstreamed": lambda: smolagents_runner(streamed=False)}


# --------------------------------------------------------------------------- worker process


def worker(name: str) -> None:
    """Serve runs: read N per line on stdin, answer one JSON line on the original stdout."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # frameworks' console output (smolagents' live display) goes nowhere
    import gc

    run = RUNNERS[name]()
    run(20)  # warm-up: imports, caches, worker threads
    for line in sys.stdin:
        turns = int(line)
        gc.collect()
        before = rss_mb()
        started = time.perf_counter()
        try:
            events, held = run(turns)
        except Exception as exc:  # reported, not fatal: the driver prints it
            answers.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:500]}) + "\n")
            continue
        seconds = time.perf_counter() - started
        answers.write(json.dumps({"seconds": seconds, "events": events, "rss_delta_mb": held - before,
                                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}) + "\n")


# --------------------------------------------------------------------------- driver


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    check = [str(python), "-c", "import agents, pydantic_ai, smolagents, requests, jsonschema, yaml"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"creating {VENV} with {', '.join(PACKAGES)} (one-time) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return python


def versions(python: Path) -> dict[str, str]:
    code = ("import json, importlib.metadata as m; "
            f"print(json.dumps({{d: m.version(d) for d in {list(DISTRIBUTIONS)!r}}}))")
    found = json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)
    found["python"] = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                                     capture_output=True, text=True, check=True).stdout.strip()
    return found


class Worker:
    def __init__(self, python: Path, name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen([str(python), str(Path(__file__).resolve()), "--worker", name],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, turns: int) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{turns}\n")
        line = self.proc.stdout.readline()
        if not line:
            return {"error": f"worker exited with {self.proc.wait()}"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def measure_size(workers: dict[str, Worker], turns: int, repeat: int, budget: float) -> dict[str, Any]:
    """Interleaved rounds at one N: phi, then every peer (rotating order); paired ratios."""
    samples: dict[str, list[dict]] = {name: [] for name in workers}
    ratios: dict[str, list[float]] = {name: [] for name in workers if name != "phi"}
    spent = dict.fromkeys(workers, 0.0)
    errors: dict[str, str] = {}
    peers = [name for name in workers if name != "phi"]
    for round_index in range(repeat):
        phi = workers["phi"].run(turns)
        if "error" in phi:
            raise SystemExit(f"phi failed: {phi['error']}")
        samples["phi"].append(phi)
        order = peers[round_index % len(peers):] + peers[:round_index % len(peers)] if peers else []
        for name in order:
            if name in errors or (samples[name] and spent[name] > budget):
                continue
            result = workers[name].run(turns)
            if "error" in result:
                errors[name] = result["error"]
                continue
            spent[name] += result["seconds"]
            samples[name].append(result)
            ratios[name].append(result["seconds"] / phi["seconds"])
    figures: dict[str, Any] = {"errors": errors}
    for name, runs in samples.items():
        if not runs:
            continue
        figures[name] = {
            "ms_per_turn": statistics.median(r["seconds"] for r in runs) * 1000 / turns,
            "runs": len(runs),
            "events": runs[-1]["events"],
            "rss_delta_mb": statistics.median(r["rss_delta_mb"] for r in runs),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        }
        if name != "phi":
            figures[name]["paired_ratio"] = statistics.median(ratios[name])
    return figures


def report(turns: int, figures: dict[str, Any], out: dict[str, Any]) -> None:
    print(f"N={turns}")
    for name in ["phi", *PEERS]:
        if name not in figures:
            if name in figures["errors"]:
                print(f"  {name:21s} failed: {figures['errors'][name]}")
            continue
        f = figures[name]
        ratio = "" if name == "phi" else f"  peer/phi {f['paired_ratio']:7.2f}x (paired, median of {f['runs']})"
        print(f"  {name:21s} {f['ms_per_turn']:9.3f} ms/turn  {f['events']:>7} events/run  "
              f"RSS +{f['rss_delta_mb']:6.1f} MiB  peak RSS {f['peak_rss_mb']:6.1f} MiB{ratio}")
        key = name.replace("-", "_")
        out[f"{key}_ms_per_turn_{turns}"] = round(f["ms_per_turn"], 4)
        out[f"{key}_rss_delta_mb_{turns}"] = round(f["rss_delta_mb"], 2)
        out[f"{key}_peak_rss_mb_{turns}"] = round(f["peak_rss_mb"], 1)
        out[f"{key}_runs_{turns}"] = f["runs"]
        if name != "phi":
            out[f"ratio_{key}_over_phi_{turns}"] = round(f["paired_ratio"], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="20,200,1000,2000", help="turn counts, comma separated")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds per size; medians are reported")
    parser.add_argument("--quick", action="store_true", help="sizes 20,100 and 3 rounds")
    parser.add_argument("--peers", default=",".join(PEERS), help="which peers to run, comma separated")
    parser.add_argument("--budget", type=float, default=240.0,
                        help="seconds one peer may spend at one size before it skips the remaining rounds")
    parser.add_argument("--phi-root", default=str(ROOT),
                        help="directory phi is imported from (default: this checkout), e.g. an exported other revision")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    sizes = [20, 100] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeat = 3 if args.quick else args.repeat
    peers = [p for p in args.peers.split(",") if p]
    unknown = set(peers) - set(PEERS)
    if unknown:
        raise SystemExit(f"unknown peers {sorted(unknown)}; known: {', '.join(PEERS)}")
    python = ensure_venv()
    found = versions(python)
    print("versions: " + ", ".join(f"{k} {v}" for k, v in found.items()), flush=True)
    print(f"workload: N turns of one streamed call to a local ok() + a final answer, events consumed; "
          f"{repeat} interleaved rounds per N", flush=True)
    os.environ["PHI_BENCH_ROOT"] = str(Path(args.phi_root).resolve())
    workers = {name: Worker(python, name) for name in ["phi", *peers]}
    out: dict[str, Any] = {"versions": found, "repeat": repeat, "phi_root": os.environ["PHI_BENCH_ROOT"]}
    try:
        for turns in sizes:
            figures = measure_size(workers, turns, repeat, args.budget)
            report(turns, figures, out)
            for name, error in figures["errors"].items():
                out[f"{name.replace('-', '_')}_error_{turns}"] = error
            sys.stdout.flush()
    finally:
        for w in workers.values():
            w.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
