"""Helpers for the skills tests: the real sample skills and a factory for synthetic ones."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "skills"


@pytest.fixture
def make_skill(tmp_path: Path) -> Callable[..., Path]:
    """``make_skill("dir", "name: x\\ndescription: y", body="...")`` writes dir/SKILL.md under tmp_path.

    ``raw=`` writes the bytes as given instead (for broken files).
    """

    def make(directory: str, frontmatter: str = "", body: str = "Body.\n", *, raw: bytes | None = None,
             file_name: str = "SKILL.md", root: Path | None = None) -> Path:
        skill_dir = (root or tmp_path) / directory
        skill_dir.mkdir(parents=True, exist_ok=True)
        path = skill_dir / file_name
        path.write_bytes(raw if raw is not None else f"---\n{frontmatter}\n---\n{body}".encode("utf-8"))
        return path

    return make
