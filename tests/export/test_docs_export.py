"""docs/export.md: its runnable example runs offline and prints what the page says (the generic
runner of docs/ blocks does the same once merged; this keeps the guide honest on its own)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "export.md"


def test_the_guide_example_runs_and_prints_its_output(tmp_path):
    text = GUIDE.read_text(encoding="utf-8")
    (code, expected), = re.findall(r"```python runnable\n(.*?)```\n\n```output\n(.*?)```", text, flags=re.S)
    env = {k: v for k, v in os.environ.items() if not re.search(r"API_KEY|_TOKEN", k)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**env, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    got, want = done.stdout.splitlines(), expected.splitlines()
    assert len(got) == len(want), done.stdout
    for line, pattern in zip(got, want):
        assert re.fullmatch(".*".join(map(re.escape, pattern.split("..."))), line), (line, pattern)
    assert (tmp_path / "paris.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
