"""An agent run end to end with MCP tools (SPEC §12.1, MCP-7): a scripted model calls tools of the
official SDK server; results (and failures) land in the history as tool results."""

from __future__ import annotations

from pathlib import Path

import pytest

import phi
from phi.mcp import McpClient, McpError, McpToolset
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.skills import SkillSet
from phi.types import ImageContent, ToolResultMessage

from .conftest import fake_cmd, http_servers, pid_gone, sdk_cmd, wait_until  # noqa: F401

pytestmark = pytest.mark.timeout(60)
SKILLS = Path(__file__).resolve().parents[1] / "fixtures" / "skills"


def tool_results(agent: phi.Agent) -> list[ToolResultMessage]:
    return [m for m in agent.messages if isinstance(m, ToolResultMessage)]


def test_agent_calls_mcp_tools_in_parallel():
    provider = ScriptedProvider([
        ScriptedResponse.tool_call("sdk__add", {"a": 2, "b": 3}, "t1"),
        ScriptedResponse.tool_call("sdk__image", {}, "t2"),
        "2 + 3 = 5, and here is your picture.",
    ])
    with McpClient.connect_stdio(*sdk_cmd(), timeout=20) as client:
        agent = phi.Agent(provider=provider, tools=McpToolset(client, prefix="sdk").tools())
        result = agent.run("Add 2 and 3, then show me an image.")
    assert result.outcome.value == "completed"
    add, image = tool_results(agent)
    assert (add.tool_name, add.text, add.is_error) == ("sdk__add", "5", False)
    assert add.details == {"structuredContent": {"result": 5}}
    assert isinstance(image.content[0], ImageContent)
    second_call = provider.calls[1]
    assert {t.name for t in second_call.tools} >= {"sdk__add", "sdk__echo", "sdk__grow"}
    assert any(isinstance(m, ToolResultMessage) and m.text == "5" for m in second_call.messages)


def test_failing_mcp_tools_give_error_results_and_the_run_goes_on():
    """A tool error, a JSON-RPC error and a dead server are error results, never a dead agent."""
    provider = ScriptedProvider([
        {"blocks": [{"type": "toolCall", "id": "t1", "name": "error", "arguments": {}},
                    {"type": "toolCall", "id": "t2", "name": "rpc", "arguments": {}}]},
        ScriptedResponse.tool_call("die", {}, "t3"),
        ScriptedResponse.tool_call("echo", {"text": "anyone there?"}, "t4"),
        ScriptedResponse.tool_call("echo", {}, "t5"),
        "The server is gone.",
    ])
    with McpClient.connect_stdio(*fake_cmd("serve"), timeout=20) as client:
        agent = phi.Agent(provider=provider, tools=McpToolset(client).tools())
        result = agent.run("Try the tools.")
    assert result.outcome.value == "completed"
    texts = [(m.tool_call_id, m.is_error, m.text) for m in tool_results(agent)]
    assert texts[0] == ("t1", True, "the tool failed: disk full")
    assert texts[1][1] and "error -32001: nope" in texts[1][2]
    assert texts[2][1] and "exited with code 5" in texts[2][2]
    assert texts[3][1] and "exited with code 5" in texts[3][2]
    assert texts[4] == ("t5", True, "Invalid arguments for tool echo: 'text' is a required property")


def test_an_mcp_stdio_source_offers_prefixed_tools_and_agent_close_ends_the_server():
    """``Agent(tool_sources=[McpToolset.stdio(...)])`` (AGENT-5): the server's tools at every run,
    and ``agent.close()`` ends the child process (no orphan)."""
    provider = ScriptedProvider([ScriptedResponse.tool_call("sdk__add", {"a": 40, "b": 2}, "t1"), "42."])
    toolset = McpToolset.stdio(*sdk_cmd(), prefix="sdk", timeout=20)
    agent = phi.Agent(provider=provider, tool_sources=[toolset])
    pid = toolset.client.pid
    with agent:
        assert agent.run("Add 40 and 2.").outcome.value == "completed"
        assert [(m.tool_name, m.text) for m in tool_results(agent)] == [("sdk__add", "42")]
        assert {t.name for t in provider.calls[0].tools} >= {"sdk__add", "sdk__echo"}
    wait_until(lambda: pid_gone(pid), what="the MCP server process to end")


def test_an_mcp_http_source(http_servers):
    provider = ScriptedProvider([ScriptedResponse.tool_call("echo", {"text": "over http"}, "t1"), "Echoed."])
    with phi.Agent(provider=provider, tool_sources=[McpToolset.http(http_servers("json").url, timeout=20)]) as agent:
        assert agent.run("Echo something.").outcome.value == "completed"
        assert [m.text for m in tool_results(agent)] == ["over http"]


def test_an_mcp_server_that_cannot_start_raises_a_typed_error(tmp_path):
    with pytest.raises(McpError):
        McpToolset.stdio(str(tmp_path / "no-such-server"))


def test_a_skill_set_and_an_mcp_toolset_serve_one_agent_together():
    """Two tool sources in one agent (AGENT-5): the skills' catalog ends the system prompt, the
    read_skill tool and the server's tools are offered side by side and both answer, and
    ``agent.close()`` ends the MCP server."""
    skills = SkillSet.load(SKILLS)
    toolset = McpToolset.stdio(*sdk_cmd(), prefix="sdk", timeout=20)
    pid = toolset.client.pid
    provider = ScriptedProvider([
        {"blocks": [{"type": "toolCall", "id": "t1", "name": "read_skill", "arguments": {"name": "canvas-design"}},
                    {"type": "toolCall", "id": "t2", "name": "sdk__add", "arguments": {"a": 1, "b": 2}}]},
        "A poster of 3.",
    ])
    with phi.Agent(provider=provider, system_prompt="You help.", tool_sources=[skills, toolset]) as agent:
        assert agent.run("Design a poster of 1 + 2.").outcome.value == "completed"
    request = provider.calls[0]
    assert request.system_prompt == f"You help.\n\n{skills.instructions()}"
    names = [tool.name for tool in request.tools]
    assert names[0] == "read_skill" and {"sdk__add", "sdk__echo"} <= set(names[1:])
    skill, add = tool_results(agent)
    assert skill.text.startswith('<skill_content name="canvas-design">') and not skill.is_error
    assert (add.tool_name, add.text, add.is_error) == ("sdk__add", "3", False)
    assert toolset.client.closed
    wait_until(lambda: pid_gone(pid), what="the MCP server process to end")
