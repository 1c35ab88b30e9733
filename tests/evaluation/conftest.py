"""Evaluation tests: make ``evaluation_helpers`` importable regardless of how pytest was started."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
