"""docs/cli.md: its runnable blocks run offline and print what the page shows. (Once the docs
runner, tests/test_docs_runnable.py, is on this branch it covers this page too.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from cli.terminal_helpers import REPO

BLOCK = re.compile(r"^```python runnable\n(.*?)^```\n\n```output\n(.*?)^```", re.S | re.M)


def test_the_runnable_blocks_print_what_the_page_shows(tmp_path):
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    pairs = BLOCK.findall(page)
    assert len(pairs) == 2
    env = {k: v for k, v in os.environ.items() if not re.search(r"API_KEY|^PHI_HOME", k)}
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp_path))
    for code, expected in pairs:
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout == expected
