"""Seed 004 §9.13, the integration smoke test, against the real services.

Each profile runs only when its key is in the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
``GEMINI_API_KEY``) and is skipped with that reason otherwise; the suite never needs the network.
Models can be changed with ``PHI_SMOKE_OPENAI_MODEL`` / ``PHI_SMOKE_ANTHROPIC_MODEL`` /
``PHI_SMOKE_GEMINI_MODEL``. A real model decides for itself, so the assertions check outcomes (files,
events), not wording. Every profile runs with the seed's 10 s default command timeout.
"""

from __future__ import annotations

import os

import pytest

from phi.coding import EventKind, Session, SessionConfig, create_profile
from phi.tools import LocalExecutionEnvironment

KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
MODELS = {"openai": "gpt-5", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash"}
MARKER = "[WARNING: Tool output was truncated."


def _param(profile_id: str):
    key = KEYS[profile_id]
    reason = f"{key} is not set: the real-API smoke test of the {profile_id} profile is skipped"
    return pytest.param(profile_id, marks=pytest.mark.skipif(not os.environ.get(key), reason=reason))


def run(session: Session, text: str) -> list:
    return list(session.submit_stream(text))


def tool_calls(events: list, name: str | None = None) -> list:
    return [e for e in events if e.kind == EventKind.TOOL_CALL_START and (name is None or e.data["tool_name"] == name)]


@pytest.mark.parametrize("profile_id", [_param(p) for p in ("openai", "anthropic", "gemini")])
def test_integration_smoke(profile_id, tmp_path):
    model = os.environ.get(f"PHI_SMOKE_{profile_id.upper()}_MODEL", MODELS[profile_id])
    env = LocalExecutionEnvironment(str(tmp_path))
    session = Session(create_profile(profile_id, model), env, SessionConfig(default_command_timeout_ms=10_000))
    try:
        # 1. simple file creation
        run(session, "Create a file called hello.py that prints 'Hello World'")
        assert env.file_exists("hello.py") and "Hello" in env.read_file("hello.py")
        # 2. read and edit
        run(session, "Read hello.py and add a second print statement that says 'Goodbye'")
        content = env.read_file("hello.py")
        assert "Hello" in content and "Goodbye" in content
        # 3. shell execution
        assert tool_calls(run(session, "Run hello.py and show the output"), "shell")
        # 4. truncation: the event has all 100k characters, the model got the marker
        env.write_file("big.txt", "x" * 100_000)
        events = run(session, "Read big.txt")
        full = [e for e in events if e.kind == EventKind.TOOL_CALL_END and e.data["output"].count("x") >= 100_000]
        assert full and full[0].data["truncated"] and MARKER in full[0].data["model_output"]
        # 5. steering
        stream = session.submit_stream("Create a Flask web application with multiple routes")
        session.steer("Actually, just create a single /health endpoint for now")
        assert any(e.kind == EventKind.STEERING_INJECTED for e in list(stream))
        # 6. sub-agent
        events = run(session, "Spawn a subagent to write tests for hello.py, then review its output")
        assert tool_calls(events, "spawn_agent")
        # 7. timeout handling
        events = run(session, "Run 'sleep 30' with the default timeout")
        ends = [e for e in events if e.kind == EventKind.TOOL_CALL_END and e.data["tool_name"] == "shell"]
        assert any("timed out after 10000ms" in (e.data.get("error") or "") for e in ends)
    finally:
        session.close()
