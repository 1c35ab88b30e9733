"""docs/evaluation.md: its Python examples run as written, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "evaluation.md"


def test_every_python_example_in_the_guide_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 4
    namespace: dict = {}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{DOC.name} example {number}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "fewest tokens (20)" in printed and "Original query:\nCapital of France?" in printed
