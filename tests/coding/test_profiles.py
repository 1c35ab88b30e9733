"""Provider profiles (seed 004 §3, §9.2): reference-agent tool interfaces, capability flags, the tool
registry with custom tools overriding profile tools, and provider options reaching the real request."""

from __future__ import annotations

import pytest

from phi.coding import (
    EventKind,
    RegisteredTool,
    Session,
    SessionConfig,
    ToolRegistry,
    create_anthropic_profile,
    create_gemini_profile,
    create_openai_profile,
    create_profile,
)
from phi.coding.registry import ToolCallContext
from phi.coding.toolsets import argv_to_command, command_timeouts
from phi.errors import ConfigError
from phi.tools.function_tool import tool
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.tools import LocalExecutionEnvironment
from phi.types import ToolDefinition

from .dialects import session_for
from .helpers import collect, of_kind
from .wire import server  # noqa: F401 (the fixture)
from .wire import Call, Turn

SUBAGENT_TOOLS = ["spawn_agent", "send_input", "wait", "close_agent"]


def params(profile, name):
    return set(profile.tool_registry.get(name).definition.parameters["properties"])


def test_each_profile_offers_its_reference_agents_tools():
    openai, anthropic, gemini = create_openai_profile(), create_anthropic_profile(), create_gemini_profile()
    assert openai.tool_registry.names() == ["read_file", "apply_patch", "write_file", "shell", "grep", "glob",
                                            *SUBAGENT_TOOLS]
    assert anthropic.tool_registry.names() == ["read_file", "write_file", "edit_file", "shell", "grep", "glob",
                                               *SUBAGENT_TOOLS]
    assert gemini.tool_registry.names() == ["read_file", "read_many_files", "write_file", "edit_file", "shell", "grep",
                                            "glob", "list_dir", *SUBAGENT_TOOLS]
    # codex: argv shell with workdir/timeout_ms, apply_patch {input}, grep_files' parameters
    # every shell also takes run_in_background (issue 25 item 14: commands otherwise end with what they started)
    assert params(openai, "shell") == {"command", "workdir", "timeout_ms", "run_in_background"}
    assert params(openai, "apply_patch") == {"input"}
    assert params(openai, "grep") == {"pattern", "include", "path", "limit"}
    # Claude Code: Bash {command, timeout, description}, Edit, Grep with output modes
    assert params(anthropic, "shell") == {"command", "timeout", "description", "run_in_background"}
    assert params(anthropic, "edit_file") == {"file_path", "old_string", "new_string", "replace_all"}
    assert params(anthropic, "grep") == {"pattern", "path", "glob", "output_mode", "-i", "head_limit"}
    assert anthropic.tool_registry.get("grep").definition.parameters["properties"]["output_mode"]["enum"] == [
        "content", "files_with_matches", "count"]
    # gemini-cli: replace's expected_replacements, run_shell_command's dir_path, list_directory, read_many_files
    assert params(gemini, "edit_file") == {"file_path", "old_string", "new_string", "expected_replacements"}
    assert params(gemini, "shell") == {"command", "description", "dir_path", "timeout_ms", "run_in_background"}
    assert params(gemini, "read_many_files") == {"include"}
    assert params(gemini, "list_dir") == {"dir_path", "depth"}
    for profile in (openai, anthropic, gemini):
        assert params(profile, "spawn_agent") == {"task", "working_dir", "model", "max_turns"}
        assert params(profile, "wait") == {"agent_id"}


def test_capabilities_and_protocols():
    openai, anthropic, gemini = create_profile("openai"), create_profile("anthropic"), create_profile("gemini")
    assert (openai.model_config.api, anthropic.model_config.api, gemini.model_config.api) == (
        "openai_responses", "anthropic_messages", "google_generative_ai")
    assert [p.default_command_timeout_ms for p in (openai, anthropic, gemini)] == [10_000, 120_000, 10_000]
    assert all(p.supports_streaming and p.supports_parallel_tool_calls and p.supports_reasoning
               for p in (openai, anthropic, gemini))
    assert (openai.context_window_size, anthropic.context_window_size, gemini.context_window_size) == (
        400_000, 200_000, 1_048_576)
    assert [d.name for d in openai.tools()] == openai.tool_registry.names()
    with pytest.raises(ConfigError, match="unknown profile"):
        create_profile("mistral")


def test_command_timeouts_profile_default_session_override_and_cap(tmp_path):
    def call_with(config):
        session = type("S", (), {"config": config})()
        return ToolCallContext(tool=None, session=session)

    assert command_timeouts(call_with(SessionConfig()), 120_000) == (120_000, 600_000)
    assert command_timeouts(call_with(SessionConfig(default_command_timeout_ms=2_000)), 120_000) == (2_000, 600_000)
    assert command_timeouts(call_with(SessionConfig(max_command_timeout_ms=5_000)), 120_000) == (5_000, 5_000)
    assert argv_to_command(["bash", "-lc", "ls -la | wc -l"]) == "ls -la | wc -l"
    assert argv_to_command(["ls", "my dir"]) == "ls 'my dir'"


def test_session_default_timeout_applies_when_the_call_gives_none(tmp_path):
    provider = ScriptedProvider([ScriptedResponse.tool_call("shell", {"command": "sleep 5"}), "gave up"])
    session = Session(create_anthropic_profile(provider=provider), LocalExecutionEnvironment(str(tmp_path)),
                      SessionConfig(default_command_timeout_ms=300))
    events, _ = collect(session, "sleep")
    (end,) = of_kind(events, EventKind.TOOL_CALL_END)
    assert "Command timed out after 300ms" in end.data["error"]


def test_custom_tools_are_registered_and_override_profile_tools(tmp_path):
    provider = ScriptedProvider([ScriptedResponse.tool_call("shell", {"command": "rm -rf build"}, call_id="a"),
                                 ScriptedResponse.tool_call("run_tests", {"filter": "unit"}, call_id="b"),
                                 ScriptedResponse.tool_call("double", {"x": 21}, call_id="c"), "done"])
    profile = create_anthropic_profile(provider=provider)
    ran = []
    shell_def = ToolDefinition("shell", "A safer shell.", {"type": "object", "required": ["command"],
                                                          "properties": {"command": {"type": "string"}}})
    dry_run = lambda args, env: ran.append(args["command"]) or "dry run"  # noqa: E731
    profile.tool_registry.register(RegisteredTool(shell_def, dry_run))
    tests_def = ToolDefinition("run_tests", "Run the test suite.", {"type": "object",
                                                                    "properties": {"filter": {"type": "string"}}})
    profile.tool_registry.register(RegisteredTool(tests_def, lambda args, env: f"ran {args['filter']} in "
                                                  f"{env.working_directory()}"))

    @tool
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    profile.tool_registry.register(double, kind="read")
    session = Session(profile, LocalExecutionEnvironment(str(tmp_path)))
    events, _ = collect(session, "go")
    outputs = [e.data["output"] for e in of_kind(events, EventKind.TOOL_CALL_END)]
    assert outputs == ["dry run", f"ran unit in {tmp_path}", "42"]
    assert ran == ["rm -rf build"]  # the custom shell replaced the profile's (latest wins)
    names = [t.name for t in provider.calls[0].tools]
    assert names.count("shell") == 1 and names[-3:] == ["shell", "run_tests", "double"]
    assert provider.calls[0].tools[names.index("shell")].description == "A safer shell."
    assert "run_tests: Run the test suite." in provider.calls[0].system_prompt  # the prompt lists the tools
    profile.tool_registry.unregister("run_tests")
    assert "run_tests" not in profile.tool_registry


def test_registry_refuses_what_it_cannot_run():
    registry = ToolRegistry()
    with pytest.raises(ConfigError, match="root must be"):
        registry.register(RegisteredTool(ToolDefinition("x", "", {"type": "string"}), lambda a, e: ""))
    with pytest.raises(ConfigError, match="kind must be one of"):
        RegisteredTool(ToolDefinition("x", "", {"type": "object"}), lambda a, e: "", kind="dangerous")
    with pytest.raises(ConfigError, match="cannot register"):
        registry.register(object())


def test_openai_options_and_reasoning_reach_the_responses_body(server, tmp_path):
    server.script("Hi", Turn("hello"))
    session = session_for("openai", server, str(tmp_path), SessionConfig(reasoning_effort="high"),
                          provider_options={"openai": {"body": {"text": {"verbosity": "low"}}}})
    session.submit("Hi there")
    request = server.requests[0]
    body = request.json()
    assert request.path == "/v1/responses" and request.headers["authorization"] == "Bearer test-key-openai"
    assert body["reasoning"]["effort"] == "high" and body["text"] == {"verbosity": "low"}
    assert body["model"] == "gpt-5.2-codex" and body["stream"] is True
    assert {t["name"] for t in body["tools"]} >= {"apply_patch", "shell"}


def test_anthropic_beta_headers_reach_the_request(server, tmp_path):
    server.script("Hi", Turn("hello"))
    session = session_for("anthropic", server, str(tmp_path),
                          provider_options={"anthropic": {"beta_headers": ["interleaved-thinking-2025-05-14",
                                                                           "context-1m-2025-08-07"]}})
    session.submit("Hi there")
    headers = server.requests[0].headers
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14,context-1m-2025-08-07"
    assert headers["x-api-key"] == "test-key-anthropic"


def test_gemini_safety_settings_reach_the_request_body(server, tmp_path):
    server.script("Hi", Turn("hello"))
    settings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_ONLY_HIGH"}]
    session = session_for("gemini", server, str(tmp_path), provider_options={"gemini": {"safety_settings": settings}})
    session.submit("Hi there")
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert request.json()["safetySettings"] == settings
    with pytest.raises(ConfigError, match="must be a dict"):
        create_gemini_profile(provider_options={"gemini": ["not", "a", "dict"]})


def test_options_of_one_session_do_not_leak_into_another(server, tmp_path):
    server.script("One", Turn("a"))
    server.script("Two", Turn("b"))
    first = session_for("gemini", server, str(tmp_path), provider_options={"gemini": {"body": {"marker": 1}}})
    second = session_for("gemini", server, str(tmp_path))
    first.submit("One")
    second.submit("Two")
    assert server.requests[0].json()["marker"] == 1 and "marker" not in server.requests[1].json()


def test_a_sub_agent_may_use_another_model_of_the_same_service(server, tmp_path):
    server.script("Parent", Turn(calls=[Call("spawn_agent", {"task": "Small job", "model": "claude-haiku-4-5"})]),
                  Turn("spawned"))
    server.script("Small job", Turn("small done"))
    session = session_for("anthropic", server, str(tmp_path))
    session.submit("Parent task")
    (handle,) = session.subagents.handles()
    assert handle.wait().output == "small done"
    assert server.seen["Small job"][0][1]["model"] == "claude-haiku-4-5"
    assert server.seen["Parent"][0][1]["model"] == "claude-sonnet-4-5"
    session.close()
