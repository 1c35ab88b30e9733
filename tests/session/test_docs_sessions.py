"""docs/sessions.md (seed 000 REQ-219): its Python examples run, in order, as one program."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "sessions.md"


def test_the_guide_covers_what_req_219_lists():
    text = GUIDE.read_text(encoding="utf-8")
    for heading in ("## Session formation", "## LoopRecord anatomy", "### Status lifecycle",
                    "### `continuation_kind` classification", "### Why `LoopConfigSnapshot`", "## Navigating the tree",
                    "## Cross-session sub-agents", "## Parallel evaluation groups", "## The recorder",
                    "## Persistence", "## Design decisions"):
        assert heading in text, heading
    decisions = text.split("## Design decisions", 1)[1]
    assert len(re.findall(r"^\d+\. \*\*", decisions, flags=re.M)) >= 9
    assert decisions.count("*Why:*") == decisions.count("*Rejected:*") >= 9


def test_the_guide_examples_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 4
    program = "\n".join(blocks)
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "sessions").is_dir() and (tmp_path / "sessions.db").is_file()
    assert "gone:" in done.stdout
