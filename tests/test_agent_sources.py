"""Agent tool sources without a real server: toolsets asked at every run, dead ones skipped,
close() and the context manager (phi/agent/sources.py, SPEC AGENT-5). The real MCP, OpenAPI and skills paths of the
builders are tested in tests/mcp, tests/openapi and tests/skills."""

from __future__ import annotations

import threading

from phi import Agent, ScriptedProvider
from phi.loop.tool import FunctionTool
from phi.errors import PhiError


def named_tool(name: str) -> FunctionTool:
    return FunctionTool(name, f"The {name} tool.", {"type": "object", "properties": {}}, lambda args, ctx: name)


class FakeToolset:
    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.asked = 0
        self.closed = 0
        self.fail: Exception | None = None

    def tools(self) -> list[FunctionTool]:
        self.asked += 1
        if self.fail is not None:
            raise self.fail
        return [named_tool(n) for n in self.names]

    def close(self) -> None:
        self.closed += 1


def offered(provider: ScriptedProvider, index: int = -1) -> list[str]:
    return [t.name for t in provider.calls[index].tools]


def test_toolset_is_asked_at_every_run_so_list_changes_reach_the_model():
    provider = ScriptedProvider([{"blocks": [{"type": "toolCall", "id": "c1", "name": "b", "arguments": {}}]},
                                 "one", "two"])
    toolset = FakeToolset("a", "b")
    agent = Agent(provider=provider, tools=[named_tool("own")], tool_sources=[toolset])
    result = agent.run("first")
    assert offered(provider, 0) == ["own", "a", "b"]
    assert result.messages[2].content[0].text == "b"  # the toolset's tool ran
    toolset.names = ["c"]
    agent.run("second")
    assert offered(provider) == ["own", "c"]
    assert toolset.asked == 2


def test_a_toolset_that_fails_is_left_out_of_the_run_not_fatal(caplog):
    provider = ScriptedProvider(["ok"])
    broken, healthy = FakeToolset("x"), FakeToolset("y")
    broken.fail = PhiError("server exited (code 1)")
    agent = Agent(provider=provider, tool_sources=[broken, healthy])
    assert agent.run("hi").text == "ok"
    assert offered(provider) == ["y"]
    assert "server exited (code 1)" in caplog.text


def test_close_closes_every_toolset_once_and_aborts_a_run():
    started = threading.Event()
    provider = ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["x"]}], "hang_after_chunks": 1}])
    toolsets = [FakeToolset("a"), FakeToolset("b")]
    agent = Agent(provider=provider, tool_sources=toolsets)
    agent.subscribe(lambda event: started.set())
    stream = agent.prompt("go")
    assert started.wait(5)
    agent.close()
    assert not agent.is_streaming
    assert stream.result(timeout=5).outcome.value == "aborted"
    agent.close()
    assert [t.closed for t in toolsets] == [1, 1]


def test_context_manager_closes_even_when_a_toolset_close_raises(caplog):
    bad, good = FakeToolset("a"), FakeToolset("b")
    bad.close = lambda: (_ for _ in ()).throw(RuntimeError("close failed"))  # type: ignore[method-assign]
    with Agent(provider=ScriptedProvider(["x"]), tool_sources=[bad, good]) as agent:
        agent.run("hi")
    assert good.closed == 1
    assert "close failed" in caplog.text


class Instructed(FakeToolset):
    def instructions(self) -> str:
        return f"Use {', '.join(self.names)}."


def test_a_source_with_instructions_ends_every_runs_system_prompt_and_a_clone_shares_it():
    provider = ScriptedProvider(["one", "two"])
    source = Instructed("a")
    agent = Agent(provider=provider, system_prompt="Base.", tool_sources=[source])
    agent.run("hi")
    assert provider.calls[0].system_prompt == "Base.\n\nUse a."
    source.names = ["b"]
    agent.clone().run("again")
    assert provider.calls[1].system_prompt == "Base.\n\nUse b." and offered(provider) == ["b"]
