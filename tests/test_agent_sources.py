"""Agent tool sources without a real server: toolsets asked at every run, dead ones skipped,
close() and the context manager (phi/agent/sources.py, SPEC AGENT-5). The real MCP, OpenAPI and skills paths of the
builders are tested in tests/mcp, tests/openapi and tests/skills."""

from __future__ import annotations

import logging
import threading

import pytest

from phi import Agent, ScriptedProvider
from phi.loop.tool import FunctionTool
from phi.errors import ConfigError, PhiError

pytestmark = pytest.mark.usefixtures("blocking_run_path")  # the run contract on both paths (issue 36)


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


# --------------------------------------------------------------------------- issue 35 item 14: any Exception leaves a source out


class BrokenInstructions(FakeToolset):
    def __init__(self, *names: str, error: BaseException) -> None:
        super().__init__(*names)
        self.error = error

    def instructions(self) -> str:
        raise self.error


class SecretRepr(FakeToolset):
    """A source whose repr would tell a credential: warnings must name it another way."""

    def __repr__(self) -> str:
        return "SecretRepr(api_key='sk-live-do-not-log-0123456789')"


def test_a_source_whose_tools_raise_any_exception_is_left_out_with_a_warning(caplog):
    provider = ScriptedProvider([{"blocks": [{"type": "toolCall", "id": "c1", "name": "y", "arguments": {}}]}, "ok"])
    broken, healthy = SecretRepr("x"), FakeToolset("y")
    broken.fail = KeyError("no such server entry: 'filesystem'")
    agent = Agent(provider=provider, tools=[named_tool("own")], tool_sources=[broken, healthy])
    with caplog.at_level(logging.WARNING, logger="phi"):
        result = agent.run("hi")
    assert result.outcome.value == "completed" and result.text == "ok"
    assert offered(provider, 0) == ["own", "y"]
    assert result.messages[2].text == "y"  # the run went on: the healthy source's tool ran
    assert ("tool_sources[0] (SecretRepr) is left out of this run: tools() raised KeyError: "
            "\"no such server entry: 'filesystem'\"") in caplog.text
    assert "sk-live" not in caplog.text
    assert not agent.is_streaming


def test_a_source_whose_instructions_raise_adds_nothing_and_its_tools_stay(caplog):
    provider = ScriptedProvider(["ok"])
    source = BrokenInstructions("a", error=ValueError("template {name} not filled"))
    agent = Agent(provider=provider, system_prompt="Base.", tool_sources=[source, Instructed("b")])
    with caplog.at_level(logging.WARNING, logger="phi"):
        assert agent.run("hi").text == "ok"
    assert provider.calls[0].system_prompt == "Base.\n\nUse b."
    assert offered(provider) == ["a", "b"]
    assert ("tool_sources[0] (BrokenInstructions) is left out of this run: instructions() raised ValueError: "
            "template {name} not filled") in caplog.text


class Interrupting(FakeToolset):
    def tools(self) -> list[FunctionTool]:
        raise KeyboardInterrupt


def test_a_base_exception_from_a_source_still_ends_the_run():
    agent = Agent(provider=ScriptedProvider(["never"]), tool_sources=[Interrupting("a")])
    with pytest.raises(KeyboardInterrupt):
        agent.run("hi")
    assert not agent.is_streaming
    agent.tool_sources = [BrokenInstructions("a", error=SystemExit(3))]
    with pytest.raises(SystemExit):
        agent.run("again")


# --------------------------------------------------------------------------- issue 35 item 13: an agent's own names


def test_own_tools_with_one_name_are_refused_when_made_and_when_a_run_starts():
    with pytest.raises(ConfigError, match=r"tools\[0\] and tools\[2\] are both named 'a'"):
        Agent(provider=ScriptedProvider(["x"]), tools=[named_tool("a"), named_tool("b"), named_tool("a")])
    agent = Agent(provider=ScriptedProvider(["x"]), tools=[named_tool("a")])
    agent.tools.append(named_tool("a"))
    with pytest.raises(ConfigError, match="both named 'a'"):
        agent.run("hi")
    assert not agent.is_streaming and agent.messages == []


def test_a_source_repeating_a_name_of_its_own_offers_the_first():
    provider = ScriptedProvider([{"blocks": [{"type": "toolCall", "id": "c1", "name": "a", "arguments": {}}]}, "ok"])
    source = FakeToolset("a", "b")
    first, second = named_tool("a"), FunctionTool("a", "Another a.", {"type": "object"}, lambda args, ctx: "second")
    source.tools = lambda: [first, named_tool("b"), second]  # type: ignore[method-assign]
    result = Agent(provider=provider, tool_sources=[source]).run("hi")
    assert offered(provider, 0) == ["a", "b"] and provider.calls[0].tools[0].description == "The a tool."
    assert result.messages[2].text == "a"


# --------------------------------------------------------------------------- issue 35 item 15: a failed Agent() closes


def test_an_agent_that_cannot_be_made_closes_the_sources_handed_to_it():
    sources = [FakeToolset("a"), FakeToolset("b")]
    with pytest.raises(ConfigError):
        Agent(model="typo", tool_sources=sources)
    assert [s.closed for s in sources] == [1, 1]
    with pytest.raises(ValueError):
        Agent(provider=ScriptedProvider(["x"]), steering_mode="sometimes", tool_sources=sources[:1])
    assert sources[0].closed == 2


def test_a_clone_that_cannot_be_made_leaves_the_shared_sources_open():
    shared, extra = FakeToolset("a"), FakeToolset("b")
    agent = Agent(provider=ScriptedProvider(["ok"]), tool_sources=[shared])
    with pytest.raises(ConfigError):
        agent.clone(model="typo", provider=None, tool_sources=[shared, extra])
    assert (shared.closed, extra.closed) == (0, 1)
    assert agent.run("still works").text == "ok"


class BadShapeTool(FunctionTool):
    """A source tool whose schema is a property of application code that fails."""

    @property  # type: ignore[override]
    def parameters(self) -> dict[str, object]:
        raise RuntimeError("schema unavailable")

    @parameters.setter
    def parameters(self, value: object) -> None:
        pass


class BadShapeToolset(FakeToolset):
    def tools(self) -> list[FunctionTool]:
        return [BadShapeTool("broken", "Broken.", {}, lambda args, ctx: "x")]


def test_a_source_whose_tool_definition_raises_is_left_out_not_fatal(caplog):
    """Attack on issue 35 item 14: the failure was raised from building the request."""
    provider = ScriptedProvider(["ok"])
    agent = Agent(provider=provider, tool_sources=[BadShapeToolset(), FakeToolset("y")])
    assert agent.run("hi").text == "ok"
    assert offered(provider) == ["y"]
    assert "schema unavailable" in caplog.text
