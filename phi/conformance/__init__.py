"""SPEC §10 — the conformance suite's Python side: runner, reference driver, fixture checks.

The suite itself is language-neutral data shipped inside this package, in ``suite/``: the fixtures
(``suite/fixtures/*.json``), their JSON Schema (``suite/schema/``), the format and driver protocol
(``suite/README.md``) and the requirement → fixture table (``suite/COVERAGE.md``); drivers for other
implementations live in ``conformance/drivers/`` of the repository. This package holds:

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
    """The suite's data directory (``suite/`` in this package), wherever the package is installed."""
    return Path(__file__).resolve().parent / "suite"


def default_fixtures_dir() -> Path:
    return default_conformance_dir() / "fixtures"
