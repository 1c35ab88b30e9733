"""The "Seed 004 Definition of Done" table at the end of docs/coding.md stays true: every test it
cites exists, every §9 subsection has its rows, and the §9.12 parity matrix has its 15."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"`((?:tests/[\w/]+/)?test_\w+\.py)::(test_\w+)`")


def rows() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "coding.md").read_text(encoding="utf-8")
    table = text.split("## Seed 004 Definition of Done", 1)[1]
    found = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"9\.\d+", cells[0]):
            found.append((cells[0], cells[2]))
    return found


def test_every_cited_test_exists():
    missing = []
    for section, proof in rows():
        cited = REFERENCE.findall(proof)
        assert cited, f"a §{section} row cites no test: {proof!r}"
        for path, name in cited:
            file = ROOT / path if path.startswith("tests/") else Path(__file__).parent / path
            if not file.exists() or not re.search(rf"^def {name}\(", file.read_text(encoding="utf-8"), re.M):
                missing.append(f"{path}::{name}")
    assert not missing, f"docs/coding.md cites tests that do not exist: {missing}"


def test_every_subsection_has_its_rows():
    counts = Counter(section for section, _ in rows())
    assert set(counts) == {f"9.{n}" for n in range(1, 14)}
    assert counts["9.12"] == 15  # the parity matrix's rows
