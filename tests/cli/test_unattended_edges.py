"""Attacks on issue 35's unattended modes: ``--json`` runs the prompts queued behind an input that
failed without waiting for another command, and SIGTERM while an MCP server is still starting ends
``phi -p`` with 143 and the server with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from coding.wire import Turn, user_texts
from providers.conftest import Reply

from cli.conftest import SlowServer
from cli.terminal_helpers import REPO

BAD = Reply(json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "bad thing"}}).encode(),
            status=400, content_type="application/json")


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PHI_HOME": str(home), "ANTHROPIC_API_KEY": "sk-test-key"}


def test_json_runs_prompts_queued_behind_a_failed_input_without_another_command(model: SlowServer, project: Path,
                                                                                 phi_home: Path) -> None:
    model.slow("First", chunk_size=16, delay=0.05)  # the failure comes while the other prompts are queued
    model.script("First", BAD, Turn("Second answer."), Turn("Third answer."))
    proc = subprocess.Popen([sys.executable, "-m", "phi.cli", "--provider", "anthropic", "--base-url", model.url,
                             "--json"], cwd=project, env=_env(phi_home), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for text in ("First", "Second", "Third"):
            proc.stdin.write(json.dumps({"type": "prompt", "text": text}) + "\n")
        proc.stdin.flush()  # stdin stays open: nothing else comes to wake phi up
        ends: list[dict[str, Any]] = []
        while len(ends) < 2 or ends[-1].get("outcome") != "completed":
            line = proc.stdout.readline()
            assert line, "phi --json stopped writing before the queued prompts ran"
            event = json.loads(line)
            if event["type"] == "AgentEnd":
                ends.append(event)
        texts = user_texts("anthropic", model.requests_of("First")[-1])
        assert texts[-1] == "Third" and "Second" in texts  # each queued prompt reached the model, in order
    finally:
        proc.stdin.close()
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def test_sigterm_while_an_mcp_server_starts_ends_phi_p_and_the_server(project: Path, phi_home: Path) -> None:
    server = REPO / "tests" / "mcp" / "fake_server.py"  # "silent": reads stdin, never answers initialize
    config = json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [str(server), "silent"]}}})
    proc = subprocess.Popen([sys.executable, "-m", "phi.cli", "--provider", "anthropic", "--base-url",
                             "http://127.0.0.1:9", "--mcp", config, "-p", "hi"], cwd=project, env=_env(phi_home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = None
        while started is None:  # the server process exists: phi waits in its initialize
            assert proc.poll() is None, proc.communicate()
            started = next((pid for pid in _children(proc.pid)
                            if "fake_server.py" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")), None)
            time.sleep(0.02)  # polling for the child to appear, not a synchronisation by time
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 143, err
        assert "terminated" in err
        pidfd = os.pidfd_open(started)  # raises ProcessLookupError when it is gone already
        try:
            import select

            assert select.select([pidfd], [], [], 30)[0], "the MCP server outlived phi -p"
        finally:
            os.close(pidfd)
    except ProcessLookupError:
        pass  # the server was gone before we looked
    finally:
        if proc.poll() is None:
            proc.kill()
