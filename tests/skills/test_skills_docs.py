"""docs/skills.md: the getting-started section works when copied (REQ-176).

Its ``python`` code blocks run in order in one namespace, in an empty working directory with an
empty home directory; what they print must be what the ``# comments`` after the prints say.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "skills.md"


def getting_started_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Getting started\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)


def test_the_getting_started_section_runs_as_written(tmp_path, monkeypatch):
    blocks = getting_started_blocks()
    assert len(blocks) == 3
    expected = [m.group(1) for block in blocks for m in re.finditer(r"^print\(.*\)\s+# (.+)$", block, re.M)]
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "work")
    out = io.StringIO()
    namespace: dict = {"__name__": "__docs__"}
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)
    assert out.getvalue().splitlines() == expected
    assert len(expected) == 3
