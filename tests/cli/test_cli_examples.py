"""examples/coding_assistant.py and examples/json_driver.py run offline as their docstrings say,
and show what they are for (tests/test_examples.py runs every example too; these check content)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from cli.terminal_helpers import REPO

NO_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def run_example(name: str, cwd) -> str:
    env = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
    env.update(PYTHONPATH=str(REPO), HOME=str(cwd), PHI_OFFLINE="1")
    done = subprocess.run([sys.executable, str(REPO / "examples" / name), "--offline"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_coding_assistant_uses_every_kind_of_builtin_tool(tmp_path):
    out = run_example("coding_assistant.py", tmp_path)
    used = re.findall(r"^→ (\w+) ", out, re.M)
    assert used == ["write_file", "edit_file", "shell", "grep", "read_file", "glob"]
    assert "✓ Hello, phi!" in out and "✗" not in out
    assert out.rstrip().endswith("[completed, 6 tool rounds, 0 tokens in]")
    assert list(tmp_path.iterdir()) == []  # it worked in a temporary directory


def test_json_driver_watches_two_runs_of_one_session(tmp_path):
    (tmp_path / "marker.txt").write_text("x")
    out = run_example("json_driver.py", tmp_path)
    runs = re.findall(r"^run ([0-9a-f-]{36})\.\S+\.(\d+)$", out, re.M)
    assert [n for _, n in runs] == ["1", "2"] and runs[0][0] == runs[1][0]  # --resume continued the session
    assert out.count("  tool glob({\"pattern\": \"*\"})") == 2 and "ok: marker.txt" in out
    assert out.count("outcome: completed") == 2
