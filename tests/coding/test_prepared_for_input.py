"""An input that arrived before the session prepared its tools and system prompt (SPEC CODE-5): the
prompt prepared after it is used as it is — it read the world (git, project documents) after the
input came — unless what the session would make it from has changed since; any other input gets a
prompt prepared afresh."""

from __future__ import annotations

import time

import pytest

from phi.coding import Session, SessionConfig, create_anthropic_profile
from phi.coding.registry import RegisteredTool
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.tools import LocalExecutionEnvironment
from phi.types import ToolDefinition


def make(tmp_path, replies=2):
    provider = ScriptedProvider([ScriptedResponse.text(f"answer {i}") for i in range(replies)])
    session = Session(create_anthropic_profile(provider=provider), LocalExecutionEnvironment(str(tmp_path)),
                      SessionConfig())
    return session, provider


def test_an_input_that_came_before_the_session_was_made_uses_the_prompt_made_for_it(tmp_path, prompt_builds):
    arrived = time.monotonic()
    session, provider = make(tmp_path)
    assert prompt_builds[0] == 1
    try:
        session.submit("hello", arrived_at=arrived)
        assert prompt_builds[0] == 1  # not built a second time
        assert provider.calls[0].system_prompt == session.system_prompt
        assert [tool.name for tool in provider.calls[0].tools] == [t.name for t in session.agent.tools]
        session.submit("and now")  # an input of no stated arrival: built afresh
        assert prompt_builds[0] == 2
    finally:
        session.close()


def test_an_input_that_came_after_the_prompt_was_made_gets_a_new_one(tmp_path, prompt_builds):
    session, provider = make(tmp_path)
    try:
        (tmp_path / "AGENTS.md").write_text("Always answer in haiku.\n")
        session.submit("hello", arrived_at=time.monotonic())
        assert prompt_builds[0] == 2
        assert "Always answer in haiku." in provider.calls[0].system_prompt
    finally:
        session.close()


def test_what_changed_in_the_session_since_is_not_missed(tmp_path, prompt_builds):
    arrived = time.monotonic()
    session, provider = make(tmp_path, replies=3)
    try:
        session.config.user_instructions = "Answer briefly."
        session.submit("one", arrived_at=arrived)
        assert prompt_builds[0] == 2 and "Answer briefly." in provider.calls[0].system_prompt

        def shout(arguments, context=None):
            return "!"

        session.profile.tool_registry.register(RegisteredTool(
            ToolDefinition("shout", "Shouts.", {"type": "object", "properties": {}}), shout, kind="read"))
        session.submit("two", arrived_at=arrived)  # prepared before it for "one": built afresh anyway
        assert prompt_builds[0] == 3 and "shout" in [tool.name for tool in provider.calls[1].tools]

        session.prepare_tools()  # prepared after "three" arrived, then the tool's description changes
        registered = session.profile.tool_registry.get("shout")
        assert registered is not None
        arrived = time.monotonic() - 1
        registered.definition = ToolDefinition("shout", "Shouts loudly.", {"type": "object", "properties": {}})
        session.submit("three", arrived_at=arrived)
        assert prompt_builds[0] == 5 and "shout: Shouts loudly." in provider.calls[2].system_prompt
    finally:
        session.close()


def test_a_tool_whose_schema_or_timeout_changed_is_sent_as_it_is_now(tmp_path, prompt_builds):
    arrived = time.monotonic()
    provider = ScriptedProvider([ScriptedResponse.text("ok")])
    profile = create_anthropic_profile(provider=provider)
    old = RegisteredTool(ToolDefinition("probe", "Probes.", {"type": "object", "properties": {"old": {"type": "string"}}}),
                         lambda arguments: "old", kind="read", timeout_ms=1000)
    profile.tool_registry.register(old)
    session = Session(profile, LocalExecutionEnvironment(str(tmp_path)), SessionConfig())
    try:
        old.definition = ToolDefinition("probe", "Probes.", {"type": "object", "properties": {"new": {"type": "integer"}}})
        old.timeout_ms = 5
        profile.tool_registry.register(old)
        session.submit("go", arrived_at=arrived)
        assert prompt_builds[0] == 1  # the prompt names the same tools, described the same way: kept
        sent = next(tool for tool in provider.calls[0].tools if tool.name == "probe")
        assert sent.parameters["properties"] == {"new": {"type": "integer"}}
        offered = next(tool for tool in session.agent.tools if tool.name == "probe")
        assert offered.timeout_ms == 5
    finally:
        session.close()


def test_a_profile_of_another_family_meanwhile_gets_its_own_prompt(tmp_path, prompt_builds):
    arrived = time.monotonic()
    session, provider = make(tmp_path)
    try:
        (tmp_path / "GEMINI.md").write_text("Gemini's own rules.\n")
        session.profile.id = "gemini"  # reads GEMINI.md, not CLAUDE.md
        session.submit("hello", arrived_at=arrived)
        assert prompt_builds[0] == 2 and "Gemini's own rules." in provider.calls[0].system_prompt
    finally:
        session.close()


@pytest.mark.parametrize("arrived", [float("nan"), float("inf"), "now", [1], True])
def test_an_arrival_that_is_no_moment_is_refused_before_anything_starts(tmp_path, arrived):
    from phi.coding import SessionState
    from phi.errors import ConfigError

    session, provider = make(tmp_path)
    events = []
    session.subscribe(events.append)
    try:
        with pytest.raises(ConfigError, match="arrived_at"):
            session.submit("hello", arrived_at=arrived)
        assert session.state == SessionState.IDLE and events == [] and provider.calls == []
        assert session.submit("hello").outcome == "completed"
    finally:
        session.close()


def test_plan_mode_switched_on_meanwhile_offers_only_reading_tools(tmp_path, prompt_builds):
    arrived = time.monotonic()
    session, provider = make(tmp_path)
    try:
        session.config.plan_mode = True
        session.submit("look only", arrived_at=arrived)
        assert prompt_builds[0] == 2
        offered = {tool.name for tool in provider.calls[0].tools}
        assert "read_file" in offered and "write_file" not in offered and "shell" not in offered
    finally:
        session.close()
