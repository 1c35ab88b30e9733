"""docs/api/ is the API reference scripts/gen-api-docs writes from the docstrings (seed 000 REQ-173),
and it is not stale: a docstring or signature changed without regenerating fails here."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import phi

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"
SCRIPT = ROOT / "scripts" / "gen-api-docs"


def check(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(out)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def test_the_committed_reference_is_current() -> None:
    done = check(API)
    assert done.returncode == 0, done.stdout + done.stderr + "\n(run scripts/gen-api-docs and commit docs/api/)"


def test_a_stale_or_missing_page_is_reported(tmp_path: Path) -> None:
    shutil.copytree(API, tmp_path / "api")
    page = tmp_path / "api" / "phi.context.md"
    page.write_text(page.read_text(encoding="utf-8").replace("compact", "squash", 1), encoding="utf-8")
    (tmp_path / "api" / "phi.mcp.md").unlink()
    (tmp_path / "api" / "phi.gone.md").write_text("# old page\n", encoding="utf-8")
    done = check(tmp_path / "api")
    assert done.returncode == 1
    assert done.stdout.splitlines()[:3] == [f"stale: {tmp_path / 'api' / 'phi.context.md'}",
                                            f"stale: {tmp_path / 'api' / 'phi.gone.md'}",
                                            f"missing: {tmp_path / 'api' / 'phi.mcp.md'}"]


def test_every_public_name_is_documented() -> None:
    text = (API / "phi.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### (?:class )?`(\w+)(?:\(\))?`$", text, flags=re.M))
    assert set(phi.__all__) <= headings, sorted(set(phi.__all__) - headings)
    index = (API / "index.md").read_text(encoding="utf-8")
    for package in ("phi", "phi.context", "phi.mcp", "phi.openapi", "phi.providers", "phi.session", "phi.skills",
                    "phi.tools"):
        assert f"]({package}.md)" in index and (API / f"{package}.md").is_file()
