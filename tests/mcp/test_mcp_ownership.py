"""Who stops an MCP server nobody closed (SPEC AGENT-5, MCP-11; issue 35 item 15): an ``Agent(...)``
that raises closes the toolsets handed to it, a toolset or client dropped without ``close()`` stops
its server when it is garbage-collected, and a bad prefix is refused before any server starts.
Each test runs the real stdio server ``fake_server.py`` and checks that its process is gone."""

from __future__ import annotations

import gc
import logging
import threading

import pytest

from phi import Agent, ScriptedProvider
from phi.errors import ConfigError
from phi.mcp import McpClient, McpToolset

from .conftest import fake_cmd, pid_gone

pytestmark = pytest.mark.timeout(60)


def started(tmp_path=None) -> tuple[McpToolset, int]:
    toolset = McpToolset.stdio(*fake_cmd("serve"), timeout=20)
    pid = toolset.client.pid
    assert pid is not None and not pid_gone(pid)
    return toolset, pid


def finish_releases() -> None:
    """Wait for the threads that stop the servers of dropped clients (started by the collection)."""
    for thread in threading.enumerate():
        if thread.name.startswith("phi-unclosed-mcp-"):
            thread.join(30)


def test_an_agent_with_a_bad_model_stops_the_server_it_was_given():
    toolset, pid = started()
    with pytest.raises(ConfigError, match="typo"):
        Agent(model="typo", tool_sources=[toolset])
    assert pid_gone(pid)
    assert toolset.client.closed


def test_an_agent_with_a_bad_setting_stops_every_server_it_was_given():
    (first, first_pid), (second, second_pid) = started(), started()
    with pytest.raises(TypeError, match="unknown settings"):
        Agent(provider=ScriptedProvider(["x"]), tool_sources=[first, second], max_tokenz=5)  # type: ignore[call-arg]
    assert pid_gone(first_pid) and pid_gone(second_pid)


def test_a_dropped_toolset_stops_its_server_when_collected(caplog):
    toolset, pid = started()
    toolset.tools()  # adapters hold the client too: dropped with the toolset
    with caplog.at_level(logging.WARNING, logger="phi"):
        del toolset
        gc.collect()
        finish_releases()
    assert pid_gone(pid)
    assert "was dropped without close(); the server is stopped now" in caplog.text


def test_a_dropped_agent_stops_the_servers_of_its_sources():
    toolset, pid = started()
    agent = Agent(provider=ScriptedProvider(["done"]), tool_sources=[toolset])
    assert agent.run("hi").text == "done"
    del agent, toolset
    gc.collect()
    finish_releases()
    assert pid_gone(pid)


def test_a_closed_client_is_not_closed_again_when_collected(caplog):
    client = McpClient.connect_stdio(*fake_cmd("serve"), timeout=20)
    pid = client.pid
    client.close()
    assert pid is not None and pid_gone(pid)
    with caplog.at_level(logging.WARNING, logger="phi"):
        del client
        gc.collect()
    assert "dropped without close()" not in caplog.text
    assert not [t for t in threading.enumerate() if t.name.startswith("phi-unclosed-mcp-")]


def test_a_bad_prefix_is_refused_before_a_server_starts(tmp_path):
    marker = tmp_path / "received.jsonl"
    with pytest.raises(ConfigError, match="prefix"):
        McpToolset.stdio(*fake_cmd("serve", str(marker)), prefix="my server")
    assert not marker.exists()  # no server was started, so none received a line
