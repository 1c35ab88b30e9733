"""docs/sessions.md (seed 000 REQ-219) covers what the requirement lists (its examples are run by
tests/test_docs_runnable.py)."""

from __future__ import annotations

import re
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

