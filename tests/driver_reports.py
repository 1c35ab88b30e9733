"""What the tests of the drivers' reports share (tests/test_node_pi_report.py,
tests/test_phi_core_report.py): regenerating a REPORT.md from a run and comparing it with the
committed one, and making runner outcomes for the report functions."""

from __future__ import annotations

import difflib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

from phi.conformance.runner import Outcome


def assert_committed_report_regenerates(here: Path, tmp_path: Path,
                                        machine: Callable[[str], str] = lambda text: text) -> None:
    """Run ``here/report.py`` into ``tmp_path`` and require the committed ``here/REPORT.md`` —
    compared through ``machine``, which blanks what only names the machine it ran on (a toolchain's
    version)."""
    generated = tmp_path / "REPORT.md"
    # the run takes seconds (a persistent driver); the limit only keeps a broken build from hanging CI
    done = subprocess.run([sys.executable, str(here / "report.py"), "--output", str(generated)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    committed = (here / "REPORT.md").read_text(encoding="utf-8")
    text = generated.read_text(encoding="utf-8")
    diff = "".join(list(difflib.unified_diff(committed.splitlines(True), text.splitlines(True),
                                             "REPORT.md (committed)", "REPORT.md (generated)"))[:60])
    where = here.relative_to(here.parents[2])
    assert machine(text) == machine(committed), f"run {where}/report.py and commit REPORT.md:\n{diff}"


def outcomes(statuses: dict[str, str]) -> list[Outcome]:
    return [Outcome(fixture_id, status, [f"{fixture_id}: first problem"] if status != "pass" else [])
            for fixture_id, status in statuses.items()]


def load_report_script(here: Path, name: str) -> ModuleType:
    """``here/report.py`` as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, here / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module
