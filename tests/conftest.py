"""Make the shared test helpers (``tests/history_checks.py``, ``tests/loop/loop_helpers.py``) importable."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.join(HERE, "loop")):
    if path not in sys.path:
        sys.path.insert(0, path)
