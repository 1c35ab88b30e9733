"""A blocking run without a timeout runs on the caller's thread (issue 36; SPEC AGENT-2): one thread
per session in flight, the same contract (the agent tests run on both paths: ``blocking_run_path``),
and Ctrl+C on the main thread aborts the run before it reaches the caller."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from phi import Agent, ScriptedProvider
from phi.events import AgentEvent
from phi.providers.mock import ScriptedResponse
from phi.types import RunOutcome

REPO = Path(__file__).resolve().parents[1]


def phi_run_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("phi-agent-")]


def test_a_blocking_run_delivers_its_events_on_the_callers_thread_and_starts_none():
    agent = Agent(provider=ScriptedProvider(["hello"]))
    seen: list[tuple[str, int, list[str]]] = []
    agent.subscribe(lambda event: seen.append((event.type, threading.get_ident(), phi_run_threads())))
    result = agent.run("hi")
    assert result.outcome == RunOutcome.COMPLETED and result.text == "hello"
    assert {ident for _, ident, _ in seen} == {threading.get_ident()}
    assert all(threads == [] for _, _, threads in seen)
    assert seen[0][0] == "AgentStart" and seen[-1][0] == "AgentEnd"


def test_a_run_with_a_timeout_still_runs_on_a_worker_so_its_bound_holds():
    agent = Agent(provider=ScriptedProvider(["hello"]))
    names: list[str] = []
    agent.subscribe(lambda event: names.append(threading.current_thread().name))
    assert agent.run("hi", timeout=30).text == "hello"
    assert names and all(name.startswith("phi-agent-") for name in names)


def test_a_parallel_blocking_run_runs_on_the_callers_thread():
    agent = Agent(provider=ScriptedProvider(["a"]))
    idents: set[int] = set()
    agent.subscribe(lambda event: idents.add(threading.get_ident()) if event.type == "ParallelLoopEnd" else None)
    result = agent.run_parallel("hi", [{"provider": ScriptedProvider(["one"])}, {"provider": ScriptedProvider(["two"])}])
    assert result.selected.outcome == RunOutcome.COMPLETED
    assert idents == {threading.get_ident()}


def test_many_sessions_in_flight_cost_one_thread_each():
    """200 blocking runs at once, each on its executor thread: no run thread is started for any."""
    started = threading.Barrier(200, timeout=30)
    extra: list[list[str]] = []

    def session(i: int) -> str:
        agent = Agent(provider=ScriptedProvider([f"answer {i}"]))

        def at_start(event: AgentEvent) -> None:
            if event.type == "AgentStart":
                started.wait()  # every run is in flight now
                extra.append(phi_run_threads())

        agent.subscribe(at_start)
        return agent.run(f"question {i}").text

    with ThreadPoolExecutor(200) as pool:
        answers = list(pool.map(session, range(200)))
    assert answers == [f"answer {i}" for i in range(200)]
    assert len(extra) == 200 and all(threads == [] for threads in extra)


CTRL_C = '''
import os, signal, sys, threading
from phi import Agent, FunctionTool, ScriptedProvider
from phi.providers.mock import ScriptedResponse
from phi.types import AssistantMessage, ToolResultMessage

MODE = sys.argv[1]
presses = 2 if MODE == "twice" else 1

def work(args, ctx):
    for _ in range(presses):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C while the tool runs
    if MODE == "honours":
        ctx.cancel.wait(30)
        return "stopped"
    threading.Event().wait(3 if MODE == "twice" else 30)  # ignores its cancellation
    return "late"

if MODE == "own-handler":
    signal.signal(signal.SIGINT, lambda *a: print("own handler", flush=True))
agent = Agent(provider=ScriptedProvider([ScriptedResponse.tool_call("work", {}), "after"]),
              tools=[FunctionTool("work", "works", {"type": "object"}, work)], tool_abort_grace_ms=200)
try:
    result = agent.run("go")
    print("returned", result.outcome.value, result.text)
except KeyboardInterrupt:
    print("KeyboardInterrupt")
calls = [c.id for m in agent.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
answered = [m.tool_call_id for m in agent.messages if isinstance(m, ToolResultMessage)]
print("answered", calls == answered, "idle", not agent.is_streaming,
      "handler restored", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
'''


def _ctrl_c(mode: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", CTRL_C, mode], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    return done.stdout.splitlines()


def test_ctrl_c_on_the_main_thread_aborts_the_run_then_reaches_the_caller():
    lines = _ctrl_c("honours")
    assert lines == ["KeyboardInterrupt", "answered True idle True handler restored True"], lines


def test_ctrl_c_aborts_a_run_whose_tool_ignores_it_after_the_grace_period():
    lines = _ctrl_c("ignores")
    assert lines == ["KeyboardInterrupt", "answered True idle True handler restored True"], lines


def test_a_second_ctrl_c_raises_at_once():
    lines = _ctrl_c("twice")
    assert lines[0] == "KeyboardInterrupt" and lines[-1].startswith("answered True"), lines


def test_an_applications_own_sigint_handler_is_left_alone():
    lines = _ctrl_c("own-handler")
    assert lines[0] == "own handler" and lines[1] == "returned completed after", lines
    assert lines[2] == "answered True idle True handler restored False", lines  # still the application's


def test_a_scripted_reply_object_works_on_the_callers_thread_too():
    agent = Agent(provider=ScriptedProvider([ScriptedResponse.text("a", "b")]))
    assert agent.run("x").text == "ab"


def test_under_a_running_event_loop_the_run_goes_to_a_worker():
    """A notebook cell or an async app calling run(): application code of the run may start an
    asyncio loop of its own, which it cannot on a thread whose loop is running."""
    import asyncio

    agent = Agent(provider=ScriptedProvider(["hello"]))
    names: list[str] = []
    agent.subscribe(lambda event: names.append(threading.current_thread().name))

    async def cell() -> str:
        return agent.run("hi").text

    assert asyncio.run(cell()) == "hello"
    assert names and all(name.startswith("phi-agent-") for name in names)


def test_context_variables_set_by_the_runs_callbacks_stay_in_the_run():
    import contextvars

    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")
    where.set("caller")
    seen: list[str] = []

    def subscriber(event: AgentEvent) -> None:
        seen.append(where.get())
        where.set("subscriber")

    agent = Agent(provider=ScriptedProvider(["hello"]))
    agent.subscribe(subscriber)
    agent.run("hi")
    assert seen[0] == "caller" and where.get() == "caller"


HANDLER_SET_DURING_RUN = '''
import signal
from phi import Agent, ScriptedProvider

def own(*args):
    print("own handler")

agent = Agent(provider=ScriptedProvider(["hello"]))
agent.subscribe(lambda event: signal.signal(signal.SIGINT, own) if event.type == "AgentStart" else None)
agent.run("hi")
print("kept", signal.getsignal(signal.SIGINT) is own)
'''


def test_a_sigint_handler_the_application_sets_during_the_run_is_kept():
    done = subprocess.run([sys.executable, "-c", HANDLER_SET_DURING_RUN], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.stdout.splitlines() == ["kept True"], done.stdout + done.stderr


def test_an_interrupt_landing_in_the_wind_up_still_ends_the_agents_bookkeeping(monkeypatch):
    """A second Ctrl+C may land while the run saves its sessions: the run still leaves the agent's
    table of running threads, and its stream is finished."""
    import phi.agent.agent as agent_module

    real = agent_module._Run.wind_up

    def interrupted(self, error):
        real(self, error)
        raise KeyboardInterrupt

    monkeypatch.setattr(agent_module._Run, "wind_up", interrupted)
    agent = Agent(provider=ScriptedProvider(["hello", "again"]))
    try:
        agent.run("hi")
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interrupt was lost")
    assert agent._runs == {} and not agent.is_streaming
    monkeypatch.setattr(agent_module._Run, "wind_up", real)
    stream = agent.prompt("next")  # another thread's run: waiting for it from here is not waiting for ourselves
    assert agent.wait_for_idle(10) and stream.result().text == "again"
