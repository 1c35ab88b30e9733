"""Issue 36: a finished run leaves nothing for the garbage collector.

With thousands of sessions in one process, an agent whose run formed a reference cycle stayed in
memory until a collection found it, and every young collection walked all of them: at C=1000 that
was 20 % of the wall time and 10 MB. A run's objects are freed by reference counting the moment the
last reference to the agent goes — on the caller's thread, on a worker (``prompt``), with tools on
the pool, with a timeout.
"""

from __future__ import annotations

import gc
import time
import weakref
from typing import Callable, Iterator

import pytest

from phi import Agent, ScriptedProvider, ScriptedResponse, tool


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off: what a cycle holds stays alive."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
