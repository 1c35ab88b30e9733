"""Typed end to end (issue 21): the README's own example passes ``mypy --strict`` with real types — an
event narrows on ``event.type`` and ``phi``'s names are not ``Any`` — and a mistake in it is caught.
(``scripts/test`` also runs ``mypy`` on ``phi/`` and ``examples/``, configured in ``setup.cfg``.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mypy", reason="mypy is in the test extra (pip install -e .[test])")


def readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Example"):]
    match = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert match is not None, "README.md has no python block under ## Example"
    return match.group(1)


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "example.py"
    program.write_text(source, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "setup.cfg"),
                           "--cache-dir", str(ROOT / ".cache" / "mypy"), str(program)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_readme_example_passes_mypy_strict(tmp_path: Path) -> None:
    done = mypy(tmp_path, readme_example())
    assert done.returncode == 0, done.stdout + done.stderr


def test_names_have_their_real_types_and_events_narrow(tmp_path: Path) -> None:
    checks = readme_example() + '''
reveal_type(add)
reveal_type(result.usage)
for seen in agent.prompt("again"):
    if seen.type == "ToolExecutionEnd":
        reveal_type(seen)
    seen.delta  # not every event has a delta: an error
'''
    done = mypy(tmp_path, checks)
    out = done.stdout
    assert 'Revealed type is "phi.tools.function_tool.DecoratedTool[[a: int, b: int], int]"' in out
    assert 'Revealed type is "phi.types.Usage"' in out
    assert 'Revealed type is "phi.events.ToolExecutionEnd"' in out
    assert re.search(r'Item "AgentStart" of "AgentStart \| AgentEnd \| .*" has no attribute "delta"', out), out
    assert "Any" not in "".join(line for line in out.splitlines() if "Revealed type" in line)
