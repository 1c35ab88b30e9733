"""Issue 36: a finished run leaves nothing for the garbage collector.

With thousands of sessions in one process, an agent whose run formed a reference cycle stayed in
memory until a collection found it, and every young collection walked all of them: at C=1000 that
was 20 % of the wall time and 10 MB. A run's objects are freed by reference counting the moment the
last reference to the agent goes — on the caller's thread, on a worker (``prompt``), with tools on
the pool, with a timeout.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from typing import Callable

import pytest

from phi import Agent, ScriptedProvider, ScriptedResponse, tool


def _script() -> list[ScriptedResponse]:
    call = {"blocks": [{"type": "text", "chunks": ["checking"]},
                       {"type": "toolCall", "id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}]}
    return [ScriptedResponse.from_json(call), ScriptedResponse.from_json({"blocks": [{"type": "text", "chunks": ["3"]}]})]


def _agent(seen: list[int], provider: ScriptedProvider) -> Agent:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        seen.append(a + b)
        return a + b

    return Agent(provider=provider, tools=[tool(add)], system_prompt="s")


RUNS: dict[str, Callable[[Agent], str]] = {
    "run": lambda agent: agent.run("go").text,
    "run with a timeout": lambda agent: agent.run("go", timeout=30).text,
    "prompt": lambda agent: agent.prompt("go").result().text,
}


@pytest.mark.parametrize("how", list(RUNS))
def test_a_finished_run_is_freed_without_the_collector(how: str, no_collector: None) -> None:
    seen: list[int] = []
    provider = ScriptedProvider(_script())
    agent = _agent(seen, provider)
    assert RUNS[how](agent) == "3" and seen == [3]
    agent.wait_for_idle()
    # the agent (held by its run's objects if they formed a cycle), and its tool (held by the pool's
    # job of the call if that formed one)
    refs = [weakref.ref(agent), weakref.ref(agent.tools[0]), weakref.ref(provider)]
    del agent, provider
    deadline = time.monotonic() + 30  # the threads that served the run let go as they finish with it
    while any(ref() is not None for ref in refs) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [ref() for ref in refs] == [None, None, None]


def _gone(*refs: weakref.ref[object]) -> list[object]:
    deadline = time.monotonic() + 30  # the threads that served the run let go as they finish with it
    while any(ref() is not None for ref in refs) and time.monotonic() < deadline:
        time.sleep(0.01)
    return [ref() for ref in refs]


def _raising_hook(*args: object, **kwargs: object) -> None:
    raise RuntimeError("hook failed")


@pytest.mark.parametrize("how", list(RUNS))
def test_a_run_that_raised_is_freed_without_the_collector(how: str, no_collector: None) -> None:
    """The stream keeps what the run raised; its traceback holds the run's frames and, on the
    caller's thread, the caller's: none of them may hold the stream back."""
    agent = Agent(provider=ScriptedProvider(["x"]), before_turn=_raising_hook)
    with pytest.raises(RuntimeError, match="hook failed"):
        RUNS[how](agent)
    agent.wait_for_idle()
    ref = weakref.ref(agent)
    del agent
    assert _gone(ref) == [None]


def test_a_run_whose_model_call_failed_is_freed_without_the_collector(no_collector: None) -> None:
    agent = Agent(provider=ScriptedProvider([]))  # the script is exhausted: the call fails
    assert agent.run("go").outcome.value == "error"
    ref = weakref.ref(agent)
    del agent
    assert _gone(ref) == [None]


def test_a_recording_agent_is_freed_without_the_collector(no_collector: None) -> None:
    from phi.session import SessionRecorder

    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["x"]), recorder=recorder)
    agent.run("go")
    refs = [weakref.ref(agent), weakref.ref(recorder)]
    del agent, recorder
    assert _gone(*refs) == [None, None]


def test_work_abandoned_while_queued_lets_go_of_its_arguments_at_once() -> None:
    """A call aborted while it waits for a worker: what it would have run is released then, not when
    a worker reaches it in the queue, and the pool does not count it as waiting."""
    from phi.concurrency.workers import WorkerPool

    pool = WorkerPool(max_workers=1, max_threads=1)
    started, release = threading.Event(), threading.Event()
    busy = pool.submit(lambda: (started.set(), release.wait()))
    assert started.wait(30)  # the one worker is taken: the next call waits in the queue

    class Payload:
        pass

    payload = Payload()
    queued = pool.submit(lambda p: None, payload)
    assert pool.stats().queued == 1
    ref = weakref.ref(payload)
    queued.abandon()
    del payload
    assert ref() is None and pool.stats().queued == 0
    release.set()
    del busy


def test_a_run_whose_tool_raised_is_freed_without_the_collector(no_collector: None) -> None:
    """What a tool raises is its result (TOOL-7); the exception's traceback holds the worker's frame,
    which must not hold the call's state that holds the exception (a cycle only a collection frees)."""
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        raise ValueError(f"cannot add {a} and {b}")

    provider = ScriptedProvider(_script())
    agent = Agent(provider=provider, tools=[tool(add)], system_prompt="s")
    assert agent.run("go").text == "3"
    agent.wait_for_idle()
    refs = [weakref.ref(agent), weakref.ref(agent.tools[0]), weakref.ref(provider)]
    del agent, provider
    assert _gone(*refs) == [None, None, None]
