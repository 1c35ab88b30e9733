"""codex's own apply_patch scenarios (tests/fixtures/apply-patch, Apache-2.0, see PROVENANCE.md).

Each scenario copies input/ to a temporary directory, applies patch.txt there and compares the whole
final tree (files and directories) byte for byte with expected/. Like upstream's runner, the exit
status is not compared; both the library function and the command-line entry point are exercised.
"""

from __future__ import annotations

import contextlib

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from phi.tools.apply_patch import apply_patch
from phi.tools.environment import LocalExecutionEnvironment
from phi.tools.patch_parser import PatchError

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "apply-patch"
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir())
REPO_ROOT = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> dict[str, bytes | None]:
    tree: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        tree[rel] = None if path.is_dir() else path.read_bytes()
    return tree


def prepare(name: str, tmp_path: Path) -> tuple[Path, str]:
    work = tmp_path / "work"
    source = SCENARIOS / name / "input"
    if source.is_dir():
        shutil.copytree(source, work)
    else:
        work.mkdir()
    return work, (SCENARIOS / name / "patch.txt").read_text(encoding="utf-8")


def test_all_scenarios_present():
    assert len(NAMES) == 23
    assert (SCENARIOS / "PROVENANCE.md").is_file()


@pytest.mark.parametrize("name", NAMES)
def test_scenario_library(name: str, tmp_path: Path):
    work, patch = prepare(name, tmp_path)
    # failure scenarios raise; only the final tree matters
    with contextlib.suppress(PatchError):
        apply_patch(patch, LocalExecutionEnvironment(str(work)))
    assert snapshot(work) == snapshot(SCENARIOS / name / "expected")


@pytest.mark.parametrize("name", ["001_add_file", "006_rejects_missing_context", "015_failure_after_partial_success_leaves_changes", "019_unicode_simple"])
def test_scenario_command_line(name: str, tmp_path: Path):
    work, patch = prepare(name, tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.run([sys.executable, "-m", "phi.tools.apply_patch", patch], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert snapshot(work) == snapshot(SCENARIOS / name / "expected")
    failing = "rejects" in name or "failure" in name
    assert (proc.returncode != 0) == failing, proc.stderr
    if failing:
        assert proc.stderr.strip()
    else:
        assert proc.stdout.startswith("Success. Updated the following files:")


def test_command_line_reads_stdin(tmp_path: Path):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    proc = subprocess.run([sys.executable, "-m", "phi.tools.apply_patch", "-"], cwd=tmp_path, env=env,
                          input=patch, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Success. Updated the following files:\nA a.txt\n"
    assert (tmp_path / "a.txt").read_text() == "hi\n"
