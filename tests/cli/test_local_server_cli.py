"""The ``phi`` command on a keyless local server (issue 35 items 3 and 4): the window it assumes is
the one the server says (``--context-window`` overrides it; 32,768 when the server says nothing),
the banner and ``/model`` name the server, not the Anthropic profile whose tools it gets, and the
status line estimates the usage such a server does not send (marked ``~``) and calls its cost
``local``. Fake servers answer over real HTTP on 127.0.0.1; the interactive test runs ``phi`` in a pty."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from providers.conftest import Recorded, Reply, ReplayServer

from cli.terminal_helpers import PtyPhi
from phi.cli.options import LOCAL_CONTEXT_WINDOW, CliOptions, make_profile, service_name
from phi.cli.trust import trust
from phi.cli.render import Renderer, Style, TurnStats, approx, status_line
from phi.coding import EventKind, SessionEvent
from phi.providers import local_servers
from phi.types import Usage

NO_KEYS = {k: "" for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")}


@pytest.fixture(autouse=True)
def _fresh_answers() -> Any:
    local_servers.forget()
    yield
    local_servers.forget()


def chat_sse(text: str) -> bytes:
    """A Chat Completions stream without any usage (as llama.cpp's and many local servers' are)."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


def llamacpp_server(n_ctx: int | None = 2048) -> tuple[ReplayServer, list[Recorded]]:
    server = ReplayServer()
    seen: list[Recorded] = []

    def respond(request: Recorded) -> Reply:
        seen.append(request)
        if request.path == "/props" and n_ctx is not None:
            return Reply(json.dumps({"default_generation_settings": {"n_ctx": n_ctx}}).encode(),
                         content_type="application/json")
        if request.path.endswith("/chat/completions"):
            return Reply(chat_sse("Hello from local."))
        return Reply(b'{"error": "not found"}', status=404, content_type="application/json")

    server.responder = respond
    return server, seen


def test_the_window_is_the_servers_unless_the_flag_says_otherwise() -> None:
    server, seen = llamacpp_server(2048)
    try:
        profile = make_profile(CliOptions(provider="llamacpp", base_url=f"{server.url}/v1"), env=NO_KEYS)
        assert profile.context_window_size == profile.model_config.context_window == 2048
        assert [r.path for r in seen] == ["/props"]
        flagged = make_profile(CliOptions(provider="llamacpp", base_url=f"{server.url}/v1", context_window=1500,
                                          model="other"), env=NO_KEYS)
        assert flagged.context_window_size == 1500 and len(seen) == 1  # the flag: the server is not asked
        again = make_profile(CliOptions(provider="llamacpp", base_url=f"{server.url}/v1"), env=NO_KEYS)
        assert again.context_window_size == 2048 and len(seen) == 1  # asked once
    finally:
        server.close()


def test_a_server_that_says_nothing_gets_the_default_window() -> None:
    server, _ = llamacpp_server(None)
    try:
        profile = make_profile(CliOptions(base_url=f"{server.url}/v1"), env=NO_KEYS)
        assert profile.context_window_size == LOCAL_CONTEXT_WINDOW
    finally:
        server.close()


def test_a_keyless_server_is_named_by_its_own_name() -> None:
    options = CliOptions(provider="ollama", model="qwen3", context_window=8192)
    assert service_name(make_profile(options, env=NO_KEYS), options) == "ollama"
    options = CliOptions(base_url="http://127.0.0.1:9/v1", context_window=8192)
    assert service_name(make_profile(options, env=NO_KEYS), options) == "openai_compatible"
    options = CliOptions(offline=True)
    assert service_name(make_profile(options, env=NO_KEYS), options) == "offline"
    hosted = CliOptions()
    assert service_name(make_profile(hosted, env={"ANTHROPIC_API_KEY": "k"}), hosted) == "anthropic"


def test_status_line_marks_estimates_and_says_local() -> None:
    turn = TurnStats()
    turn.add(Usage(input=1234, output=85), "local-model", estimated=True)
    line = status_line("local-model", turn, turn, 4096, Style(False), local=True)
    assert line == "local-model · ~in 1.2k ~out 85 · local · context [███░░░░░░░] 32%"
    assert [approx(n) for n in (0, 999, 1000, 12_345, 999_999, 1_500_000)] == ["0", "999", "1.0k", "12k", "1000k",
                                                                              "1.5M"]


def test_a_reply_without_usage_is_estimated_from_what_was_sent() -> None:
    renderer = Renderer(io.StringIO(), Style(False))
    renderer.start_turn(context_guess=1200)
    renderer.on_event(SessionEvent(EventKind.ASSISTANT_TEXT_END, "s", {
        "text": "x" * 400, "tool_calls": [], "stop_reason": "stop", "usage": Usage().to_json()}))
    assert renderer.turn.estimated and (renderer.turn.usage.input, renderer.turn.usage.output) == (1200, 100)
    renderer.start_turn(context_guess=1400)  # a server that reports usage: its figures, unmarked
    renderer.on_event(SessionEvent(EventKind.ASSISTANT_TEXT_END, "s", {
        "text": "ok", "tool_calls": [], "stop_reason": "stop", "usage": Usage(input=1500, output=2).to_json()}))
    assert not renderer.turn.estimated and renderer.turn.usage.input == 1500


def test_banner_model_command_and_status_line_on_a_local_server(tmp_path: Path) -> None:
    """With a project .mcp.json (the profile is then loaded before the banner) a keyless server used
    to be announced as ``(anthropic)``, ``/model`` said the same, and the status line said
    ``in 0 out 0`` and ``unknown (session unknown)``."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "/nonexistent/mcp"}}}))
    assert trust([str(project / ".mcp.json")], str(home)) == [str(project / ".mcp.json")]  # `phi trust`
    server, seen = llamacpp_server(4096)
    phi = PtyPhi(["--base-url", f"{server.url}/v1"], project, {**NO_KEYS, "PHI_HOME": str(home)})
    try:
        phi.expect(r"local-model \(openai_compatible\)")
        phi.prompt()
        phi.exchange("/model", r"model: local-model \(openai_compatible\)")
        phi.exchange("hi", "Hello from local.", r"~in \S+ ~out \S+ · local · context")
        assert "(anthropic)" not in phi.text and "in 0 out 0" not in phi.text and "unknown" not in phi.text
        assert [r.path for r in seen if not r.path.endswith("/chat/completions")] == ["/props"]
    finally:
        phi.close()
        server.close()
