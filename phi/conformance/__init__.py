"""SPEC §10 — the conformance suite's Python side: runner, reference driver, fixture checks.

The suite itself is language-neutral data shipped inside this package, in ``suite/``: SPEC.md
(a copy of the repository's, :func:`spec_file`), the fixtures (``suite/fixtures/*.json``), their JSON
Schema (``suite/schema/``), the format and driver protocol (``suite/README.md``, ``suite/DRIVERS.md``)
and the requirement → fixture table (``suite/COVERAGE.md``); drivers for other implementations live
in ``conformance/drivers/`` of the repository. This package holds:

- :mod:`phi.conformance.driver` — the reference driver: runs one fixture against phi's loop and
  writes the protocol's JSON lines (``python -m phi.conformance.driver < fixture.json``);
- :mod:`phi.conformance.runner` — runs fixtures on any driver (one process per fixture, or a
  persistent one: :mod:`.drivers`, :mod:`.process`) and compares what it wrote with the fixture's
  expectations (``phi-conformance run [--driver CMD] [--only SEL] [--report FILE]``);
- :mod:`phi.conformance.selection` — ``--only``/``--skip`` by fixture id, SPEC section or requirement id;
- :mod:`phi.conformance.report` — Markdown, JUnit XML and JSON reports of a run;
- :mod:`phi.conformance.normalize` and :mod:`phi.conformance.match` — placeholders for generated
  ids and timestamps, and the subset/unordered matching rules;
- :mod:`phi.conformance.coverage` — the SPEC requirement id → fixture table (``COVERAGE.md``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable

__all__ = ["default_conformance_dir", "default_fixtures_dir", "spec_file", "suite_files"]


def suite_files() -> Traversable:
    """The suite's data (``suite/`` in this package: fixtures, schemas, README.md, DRIVERS.md,
    COVERAGE.md, requirements.json), read through :mod:`importlib.resources`."""
    return resources.files(__package__ or __name__).joinpath("suite")


def spec_file() -> Traversable:
    """SPEC.md as shipped with the suite (``suite/SPEC.md``): the normative text the fixtures test,
    so that a reader with only the installed package has it. In a checkout it is a copy of the
    repository's SPEC.md, refreshed by ``python -m phi.conformance requirements --write``."""
    return suite_files().joinpath("SPEC.md")


def default_conformance_dir() -> Path:
    """:func:`suite_files` as a file system path (what writing COVERAGE.md in a checkout needs);
    a package installed as a zip has none."""
    root = suite_files()
    if not isinstance(root, Path):
        raise FileNotFoundError(f"the conformance suite is not a directory on the file system: {root}")
    return root


def default_fixtures_dir() -> Path:
    return default_conformance_dir() / "fixtures"
