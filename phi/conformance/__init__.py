"""SPEC §10 — the conformance suite's Python side: runner, reference driver, fixture checks.

The fixtures, their JSON Schema and the driver protocol live in ``conformance/`` at the repository
root and are language-neutral. This package holds:

- :mod:`phi.conformance.driver` — the reference driver: runs one fixture against phi's loop and
  writes the protocol's JSON lines (``python -m phi.conformance.driver < fixture.json``);
- :mod:`phi.conformance.runner` — starts any driver per fixture and compares what it wrote with the
  fixture's expectations (``python -m phi.conformance run [--driver CMD] [--filter GLOB]``);
- :mod:`phi.conformance.normalize` and :mod:`phi.conformance.match` — placeholders for generated
  ids and timestamps, and the subset/unordered matching rules;
- :mod:`phi.conformance.coverage` — the SPEC requirement id → fixture table (``COVERAGE.md``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["default_fixtures_dir", "default_conformance_dir"]


def default_conformance_dir() -> Path:
    """``conformance/`` next to the ``phi`` package (the repository checkout)."""
    return Path(__file__).resolve().parent.parent.parent / "conformance"


def default_fixtures_dir() -> Path:
    return default_conformance_dir() / "fixtures"
