"""Issue 35 item 1: one session setup for the prompt, ``-p`` and ``--json`` (SPEC §15 CLI-16).

Each flag is run through the three modes against one scripted model on 127.0.0.1 and what reaches
the server is compared: the system-prompt flags, the MCP servers of ``./.mcp.json`` and ``--mcp``,
automatic compaction at ``--compact-at``, and the recovery from a context overflow — including the
input that never fits, which must not stay in front of the next one after ``--resume``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from coding.wire import Turn, system_prompt_of, user_texts
from providers.conftest import Reply

from cli.conftest import SlowServer
from cli.terminal_helpers import REPO, PtyPhi

NO_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
OVERFLOW = Reply(json.dumps({"type": "error", "error": {
    "type": "invalid_request_error", "message": "prompt is too long: 212000 tokens > 200000 maximum"}}).encode(),
    status=400, content_type="application/json")
MCP_SERVER = REPO / "tests" / "mcp" / "fake_server.py"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
    env.update({"PYTHONPATH": str(REPO), "PHI_HOME": str(home), "ANTHROPIC_API_KEY": "sk-test-key"})
    return env


def _wire(model: SlowServer) -> list[str]:
    return ["--provider", "anthropic", "--base-url", model.url]


def run_print(model: SlowServer, project: Path, home: Path, text: str, *args: str,
              reply: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phi.cli", *_wire(model), *args, "-p", text], cwd=project,
                          env=_env(home), capture_output=True, text=True, timeout=120)


def run_json(model: SlowServer, project: Path, home: Path, text: str, *args: str,
             reply: str = "") -> subprocess.CompletedProcess[str]:
    command = json.dumps({"type": "prompt", "text": text}) + "\n"
    return subprocess.run([sys.executable, "-m", "phi.cli", *_wire(model), *args, "--json"], cwd=project,
                          env=_env(home), input=command, capture_output=True, text=True, timeout=120)


def run_prompt(model: SlowServer, project: Path, home: Path, text: str, *args: str, reply: str = "") -> str:
    phi = PtyPhi([*_wire(model), "--approve", "off", *args], project,
                 {"ANTHROPIC_API_KEY": "sk-test-key", "PHI_HOME": str(home)})
    try:
        phi.prompt()
        if "--mcp" in args or (project / ".mcp.json").exists():
            # the prompt connects MCP servers in the background and their tools join between inputs
            # (issue 35 item 5): /mcp waits for them, as a person would who wants them on the first input
            phi.exchange("/mcp", r"✓ \d+ tools")
        phi.send_line(text)
        phi.expect(reply)
        phi.prompt()
        return phi.text
    finally:
        phi.close()


MODES: dict[str, Callable[..., Any]] = {"prompt": run_prompt, "print": run_print, "json": run_json}


def _comparable(body: dict[str, Any]) -> dict[str, Any]:
    """A request body without what differs by nature between two processes (none expected today:
    kept to say so if a field ever carries an id)."""
    return {k: v for k, v in body.items() if k not in ("metadata",)}


def _trusted_project(project: Path, home: Path) -> None:
    from phi.cli.trust import trust

    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "fake": {"command": sys.executable, "args": [str(MCP_SERVER), "serve"]}}}))
    assert trust([str(project / ".mcp.json")], str(home)) == [str(project / ".mcp.json")]


def test_every_flag_reaches_the_server_the_same_way_in_every_mode(model, project, phi_home):
    _trusted_project(project, phi_home)
    extra = json.dumps({"mcpServers": {"extra": {"command": sys.executable, "args": [str(MCP_SERVER), "serve"]}}})
    flags = ["--system-prompt", "You are a terse pirate.", "--append-system-prompt", "Always say arr.",
             "--mcp", extra, "--max-turns", "3", "--compact-at", "50"]
    model.script("Hello pirate", *[Turn("Arr, matey.") for _ in MODES])
    for name, run in MODES.items():
        done = run(model, project, phi_home, "Hello pirate", *flags, reply="Arr, matey.")
        if name != "prompt":
            assert done.returncode == 0, (name, done.stderr)
    bodies = model.requests_of("Hello pirate")
    assert len(bodies) == 3
    prompt, printed, json_mode = (_comparable(b) for b in bodies)
    system = system_prompt_of("anthropic", bodies[0])
    assert "You are a terse pirate." in system and "Always say arr." in system
    tools = [tool["name"] for tool in bodies[0]["tools"]]
    assert any(n.startswith("fake__") for n in tools) and any(n.startswith("extra__") for n in tools)
    assert printed == prompt, "phi -p sent another request than the prompt"
    assert json_mode == prompt, "phi --json sent another request than the prompt"


def test_a_malformed_project_mcp_file_stops_every_mode_with_status_2(model, project, phi_home):
    (project / ".mcp.json").write_text('{"mcpServers": {"x": {"args": []}}}')
    for run in (run_print, run_json):
        done = run(model, project, phi_home, "Hello")
        assert done.returncode == 2, done.stderr
        assert "mcpServers.x needs either a command or a url" in done.stderr
    assert model.requests == []


def _story_session(model: SlowServer, project: Path, home: Path) -> str:
    """A stored conversation with one long reply; its session id."""
    done = run_print(model, project, home, "Tell me a long story", "--compact-at", "0")
    assert done.returncode == 0, done.stderr
    (saved,) = (home / "sessions").glob("[!.]*.jsonl")
    return saved.stem


def _in_every_mode(tmp_path: Path, project: Path, script: Callable[[SlowServer], None], *args: str,
                   reply: str, story: int = 2500) -> dict[str, tuple[SlowServer, Any]]:
    """A stored conversation with one long reply, resumed by each mode with ``args`` against its own
    model scripted by ``script``: ``{mode: (its model, what the run returned)}``."""
    home = tmp_path / "home"
    teller = SlowServer()
    try:
        teller.script("Tell me a long story", Turn("Once upon a time " * story))
        session = _story_session(teller, project, home)
    finally:
        teller.close()
    runs: dict[str, tuple[SlowServer, Any]] = {}
    for name, run in MODES.items():
        copy = tmp_path / f"home-{name}"  # each mode resumes the same stored conversation
        shutil.copytree(home, copy)
        model = SlowServer()
        script(model)
        try:
            runs[name] = (model, run(model, project, copy, "And then?", "--resume", session, *args, reply=reply))
        finally:
            model.close()
    return runs


def test_compact_at_compacts_a_resumed_conversation_alike_in_every_mode(project, tmp_path):
    def script(model: SlowServer) -> None:
        model.script("[... ", Turn("And so on."))  # the conversation as compaction cut it

    runs = _in_every_mode(tmp_path, project, script, "--compact-at", "3", reply="And so on.")
    bodies = []
    for name, (model, done) in runs.items():
        if name != "prompt":
            assert done.returncode == 0, (name, done.stderr)
        (body,) = [r.json() for r in model.requests]
        assert len(json.dumps(body["messages"])) < 30_000  # 3 % of a 200k window: the 42 KB reply was cut
        assert user_texts("anthropic", body)[-1] == "And then?"
        bodies.append(body)
    assert bodies[1] == bodies[0] and bodies[2] == bodies[0]


def test_an_overflow_is_recovered_alike_in_every_mode(project, tmp_path):
    def script(model: SlowServer) -> None:  # the request overflows, so does the loop's own tighter retry
        model.script("Tell me a long story", OVERFLOW, OVERFLOW, Turn("Short again."))
        model.script("[... ", OVERFLOW, Turn("Short again."))  # the conversation as the loop's compaction cut it

    runs = _in_every_mode(tmp_path, project, script, reply="Short again.", story=400)
    last = []
    for name, (model, done) in runs.items():
        if name == "prompt":
            assert "did not fit the model's context: compacted it" in done
        else:
            assert done.returncode == 0, (name, done.stderr)
            assert "did not fit the model's context: compacted it" in done.stderr
            assert "Short again." in done.stdout
        body = model.requests[-1].json()
        assert user_texts("anthropic", body).count("And then?") == 1
        assert len(json.dumps(body)) < 20_000
        last.append(body)
    assert last[1] == last[0] and last[2] == last[0], "the three modes sent different retries"


class HugeRefusingServer(SlowServer):
    """Refuses, as a context overflow, every request carrying the word HUGE."""

    def _respond_scripted(self, request: Any) -> Any:
        if b"HUGE" in request.body:
            return OVERFLOW
        return super()._respond_scripted(request)


def test_an_input_that_never_fits_is_not_sent_again_after_resume(project, tmp_path):
    model = HugeRefusingServer()
    try:
        home = tmp_path / "home"
        model.script("Tell me a long story", Turn("Once upon a time."), Turn("Next answer."), Turn("JSON answer."))
        session = _story_session(model, project, home)
        failed = run_print(model, project, home, "HUGE paste", "--resume", session)
        assert failed.returncode == 1
        assert "did not fit the model's context even after compaction" in failed.stderr
        done = run_print(model, project, home, "Next question", "--resume", session)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Next answer.\n"
        body = model.requests_of("Tell me a long story")[-1]
        assert user_texts("anthropic", body) == ["Tell me a long story", "Next question"]
        roles = [m["role"] for m in body["messages"]]
        assert all(a != b for a, b in zip(roles, roles[1:])), roles  # never two user messages in a row
        json_done = run_json(model, project, home, "Last question", "--resume", session)
        assert json_done.returncode == 0, json_done.stderr
        body = model.requests_of("Tell me a long story")[-1]
        assert "HUGE" not in json.dumps(body)
    finally:
        model.close()


def test_the_banner_names_the_session_the_turns_are_written_to(model, project, phi_home):
    """Issue 35 item 2: after ``--resume ID`` or ``-c`` the banner shows the id that is written."""
    import re

    model.script("Tell me a long story", Turn("Once upon a time."), Turn("Again."), Turn("And again."))
    session = _story_session(model, project, phi_home)
    for how in (["--resume", session], ["-c"]):
        text = run_prompt(model, project, phi_home, "More", *how, reply="gain.")
        shown = re.search(r"session ([0-9a-f-]{36}) \(resumed\) · /help", text)
        assert shown is not None and shown.group(1) == session, text
    assert [p.stem for p in (phi_home / "sessions").glob("[!.]*.jsonl")] == [session]
