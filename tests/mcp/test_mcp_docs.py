"""docs/mcp.md's getting-started section works when copied (REQ-176): its server is the official
SDK's, its client code runs as written, and what it prints matches the comments."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
pytestmark = pytest.mark.timeout(120)


def getting_started_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Getting started\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def expected_output(code: str) -> list[str]:
    """The ``# ...`` comments after ``print(...)`` calls, without a trailing ``(explanation)``."""
    found = []
    for line in code.splitlines():
        if "print(" in line and "  # " in line:
            found.append(re.sub(r"\s+\(.*\)$", "", line.split("  # ", 1)[1]).strip())
    return found


def test_the_getting_started_section_runs(tmp_path):
    blocks = getting_started_blocks()
    assert len(blocks) == 3 and blocks[0].startswith("# server.py")
    (tmp_path / "server.py").write_text(blocks[0], encoding="utf-8")
    for n, code in enumerate(blocks[1:], 1):
        script = tmp_path / f"step{n}.py"
        script.write_text(code, encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        position = 0
        for expected in expected_output(code):
            found = done.stdout.find(expected, position)
            assert found >= 0, f"step {n}: {expected!r} not in the output after position {position}:\n{done.stdout}"
            position = found + len(expected)
        assert expected_output(code), f"step {n} checks nothing"
