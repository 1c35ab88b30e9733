"""The examples in docs/coding.md run as written (offline, with a ScriptedProvider) and print what
the guide says they print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "coding.md"
ROOT = DOC.parents[1]


def examples() -> list[tuple[str, str]]:
    """(code, expected output) for every python block followed by a 'prints' block."""
    text = DOC.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```\s*\nprints\s*\n\s*```\n(.*?)```", text, re.S)


EXPECTED_BLOCKS = 8


def test_every_python_block_has_its_output():
    assert len(examples()) == text_blocks() == EXPECTED_BLOCKS


def text_blocks() -> int:
    return len(re.findall(r"```python\n", DOC.read_text(encoding="utf-8")))


@pytest.mark.parametrize("index", range(EXPECTED_BLOCKS))
def test_example_runs_and_prints_what_the_guide_says(index, tmp_path):
    code, expected = examples()[index]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == expected.strip().splitlines()
