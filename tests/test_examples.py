"""Every program in examples/ runs offline, end to end, as a user would start it (seed 000 REQ-175).

Each ``examples/*.py`` is started as a subprocess with ``--offline`` and ``PHI_OFFLINE=1``, in an
empty working directory, with no provider credentials in the environment, stdin from ``STDIN`` (an
interactive example's scripted keystrokes; empty for the rest). It must exit with status 0 and say
in its docstring how it runs offline. Examples added later are picked up without changing this file;
``CHECKS`` holds what a given example's output must show.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from docs_blocks import ROOT, offline_environment

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
pytestmark = pytest.mark.timeout(200)

STDIN = {
    "repl.py": "hello\n/model other-model\nand now?\n/clear\nafter clear\n/nonsense\n/quit\nnever read\n",
}


def check_repl(out: str) -> None:
    lines = out.split("> ")
    assert "(offline, scripted)" in lines[0]
    assert lines[1].strip() == "[claude-sonnet-4-5] You said: hello (history: 1 messages)"
    assert lines[2].strip() == "model: other-model"  # /model switches ...
    assert lines[3].strip() == "[other-model] You said: and now? (history: 3 messages)"  # ... and keeps the history
    assert lines[4].strip() == "conversation cleared"
    assert lines[5].strip() == "[other-model] You said: after clear (history: 1 messages)"  # /clear forgot it
    assert lines[6].startswith("commands: /quit, /clear")
    assert "never read" not in out  # /quit ended it


def check_multi_agent(out: str) -> None:
    lines = out.splitlines()
    assert lines[0].startswith("→ researcher: ") and lines[2].startswith("→ writer: ")
    assert re.fullmatch(r"← researcher \(loop [0-9a-f-]+\.sub\.1, 3 turns\)", lines[1])  # it used its own tool twice
    assert re.fullmatch(r"← writer \(loop [0-9a-f-]+\.sub\.1, 1 turns\)", lines[3])
    assert lines[4] == "Final text:" and "Kepler" in lines[5]


CHECKS: dict[str, Callable[[str], None]] = {"repl.py": check_repl, "multi_agent.py": check_multi_agent}


def run_example(path: Path, workdir: Path) -> subprocess.CompletedProcess[str]:
    (workdir / "home").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, str(path), "--offline"], cwd=workdir, input=STDIN.get(path.name, ""),
                          capture_output=True, text=True, timeout=180, env=offline_environment(workdir / "home"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_example_runs_offline(path: Path, tmp_path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert "--offline" in docstring, f"{path.name}: the docstring must say how it runs offline (--offline)"
    done = run_example(path, tmp_path)
    assert done.returncode == 0, f"{path.name} exited with {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert done.stdout.strip(), f"{path.name} printed nothing"
    if path.name in CHECKS:
        CHECKS[path.name](done.stdout)


def test_the_required_examples_exist() -> None:
    names = {path.name for path in EXAMPLES}
    assert {"repl.py", "multi_agent.py"} <= names
    assert len((ROOT / "examples" / "repl.py").read_text(encoding="utf-8").splitlines()) < 100


def test_repl_reports_a_bad_model_name_and_goes_on(tmp_path: Path) -> None:
    """With a key set (so not offline) an unknown model name is an error line, not a traceback; no
    request is sent, so the fake key never reaches a network."""
    env = offline_environment(tmp_path)
    env.pop("PHI_OFFLINE")
    env["ANTHROPIC_API_KEY"] = "sk-ant-not-a-real-key"
    repl = str(ROOT / "examples" / "repl.py")
    done = subprocess.run([sys.executable, repl], cwd=tmp_path, input="/model no-such-model\n/model claude-haiku-4-5\n"
                          "/model\n/quit\n", capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.split("> ")]
    assert "offline" not in lines[0]
    assert lines[1].startswith("(error: cannot tell which service serves model 'no-such-model'")
    assert lines[2:4] == ["model: claude-haiku-4-5", "model: claude-haiku-4-5"]
    started = subprocess.run([sys.executable, repl, "--model", "no-such-model"], cwd=tmp_path, input="",
                             capture_output=True, text=True, timeout=60, env=env)
    assert started.returncode == 2 and "cannot tell which service serves model" in started.stderr
    assert "Traceback" not in started.stderr


def test_a_failing_example_is_reported(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text('"""Runs offline with --offline."""\nraise SystemExit(3)\n', encoding="utf-8")
    (tmp_path / "work").mkdir()
    assert run_example(broken, tmp_path / "work").returncode == 3
