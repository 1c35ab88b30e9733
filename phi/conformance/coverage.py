"""SPEC requirement id → fixture table (SPEC §10; ``phi/conformance/suite/COVERAGE.md``).

Requirement ids are read from SPEC.md (``**LOOP-4 [tested]** ...``); every id marked ``[tested]``
MUST be listed in the ``spec`` array of at least one fixture. :func:`render` produces COVERAGE.md;
:func:`missing` names the tested requirements no fixture covers.

The table's last column comes from ``suite/mutants.json``, which ``scripts/mutants.py`` writes: the
violations planted in phi's code for each requirement and the fixture (or unit test) that caught
each one — the evidence that the fixtures test what they cite. Blind sets (``suite/blind/*.json``:
violations planted by someone who had not seen the fixtures, measured by ``scripts/mutants.py
--set``) get a table of their own: each set's first measurement (the blind score) and its latest.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..json_values import is_object

_REQUIREMENT = re.compile(r"\*\*([A-Z]+-\d+)(\s+\[tested\])?\*\*")
_TABLE_HEADER = "| Requirement | Tested | Fixtures | Mutants: what killed each |"
MUTANTS_FILE = "mutants.json"
BLIND_DIR = "blind"
BLIND_GOAL = 0.9  # the blind score three consecutive sets should reach


def spec_requirements(spec_text: str) -> dict[str, bool]:
    """``{id: marked [tested]}`` in order of appearance."""
    found: dict[str, bool] = {}
    for match in _REQUIREMENT.finditer(spec_text):
        found.setdefault(match.group(1), bool(match.group(2)))
    return found


def fixture_map(fixtures: list[dict[str, Any]]) -> dict[str, list[str]]:
    covered: dict[str, list[str]] = {}
    for fixture in fixtures:
        for requirement in fixture.get("spec", []):
            covered.setdefault(requirement, []).append(fixture["id"])
    return covered


def missing(spec_text: str, fixtures: list[dict[str, Any]]) -> list[str]:
    covered = fixture_map(fixtures)
    return [rid for rid, tested in spec_requirements(spec_text).items() if tested and rid not in covered]


def unknown(spec_text: str, fixtures: list[dict[str, Any]]) -> list[str]:
    """Ids fixtures cite that SPEC.md does not define."""
    known = spec_requirements(spec_text)
    return sorted(rid for rid in fixture_map(fixtures) if rid not in known)


def load_mutants(conformance_dir: Path) -> dict[str, Any] | None:
    """``suite/mutants.json`` (written by ``scripts/mutants.py``), or None when there is none."""
    path = conformance_dir / MUTANTS_FILE
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def mutant_map(mutants: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """requirement id → its mutant entries, in table order."""
    by_requirement: dict[str, list[dict[str, Any]]] = {}
    for entry in (mutants or {}).get("mutants", []):
        by_requirement.setdefault(entry["requirement"], []).append(entry)
    return by_requirement


def stale_mutant_killers(mutants: dict[str, Any] | None, fixtures: list[dict[str, Any]]) -> list[str]:
    """Fixtures that mutants.json says killed a mutant but that no longer exist (rerun the sweep)."""
    ids = {f["id"] for f in fixtures}
    return sorted({killer for entry in (mutants or {}).get("mutants", []) if entry.get("judge") == "suite"
                   for killer in entry.get("killed_by", []) if killer not in ids})


def load_blind_sets(conformance_dir: Path) -> list[dict[str, Any]]:
    """The blind mutant sets (``suite/blind/*.json``), by file name; [] when there are none."""
    folder = conformance_dir / BLIND_DIR
    if not folder.is_dir():
        return []
    sets: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if is_object(data):
            sets.append({**data, "_file": path.name})
    return sets


def _rate(measurement: dict[str, Any]) -> str:
    return (f"{measurement.get('kill_rate', 0.0):.0%} ({measurement.get('killed', 0)} of "
            f"{measurement.get('applied', 0)}; {str(measurement.get('date', '?'))[:10]}, "
            f"suite of {measurement.get('fixtures', '?')})")


def _blind_lines(sets: list[dict[str, Any]]) -> list[str]:
    """The blind-set table: per set, its first measurement (the blind score) and its latest."""
    if not sets:
        return ["No blind mutant sets yet (`suite/blind/*.json`, measured by `scripts/mutants.py --set`).", ""]
    lines = ["Blind mutant sets (`suite/blind/`, planted by someone who had not seen the fixtures; "
             "`scripts/mutants.py --set` appends each measurement). The first measurement is the set's blind "
             f"score; the goal is three consecutive sets at {BLIND_GOAL:.0%} or more.", "",
             "A survivor listed as unobservable is behaviour no driver output can show; its set file says why "
             "and which unit test catches it in phi.", "",
             "| Set | Planted by | Mutants | First (blind) | Latest | Measurements | Unobservable survivors |",
             "|---|---|---|---|---|---|---|"]
    for blind in sets:
        runs = [m for m in blind.get("measurements", []) if is_object(m)]
        first = _rate(runs[0]) if runs else "not measured"
        latest = _rate(runs[-1]) if len(runs) > 1 else "—"
        unobservable = ", ".join(sorted(blind.get("unobservable", {}))) or "—"
        lines.append(f"| {blind.get('set', blind['_file'])} | {blind.get('planted_by', '?')} | "
                     f"{len(blind.get('mutants', []))} | {first} | {latest} | {len(runs)} | {unobservable} |")
    return lines + [""]


def _mutant_cell(entries: list[dict[str, Any]]) -> str:
    """``a ← `fixture`; b ← `fixture`; c survives: why`` for one requirement's mutants."""
    cells: list[str] = []
    for entry in entries:
        letter = entry["id"][len(entry["requirement"]):]
        if entry.get("applied") is False:
            cells.append(f"{letter} does not apply to the current code (update it)")
        elif entry["killed"]:
            killer = entry["killed_by"][0] if entry["killed_by"] else "?"
            what = "unit tests" if entry.get("judge") == "session-tests" else f"`{killer}`"
            cells.append(f"{letter} ← {what}")
        else:
            cells.append(f"{letter} survives: {entry.get('survives_because', 'NOT EXPLAINED')}")
    return "; ".join(cells) if cells else "—"


def _summary(mutants: dict[str, Any] | None) -> list[str]:
    if mutants is None:
        return ["No mutant table (`suite/mutants.json`): run `scripts/mutants.py`.", ""]
    totals = mutants.get("totals", {})
    stale: list[str] = totals.get("not_applied") or []
    apart = f" {len(stale)} more do not apply to the current code: {', '.join(stale)}." if stale else ""
    return [f"Mutants (`scripts/mutants.py`, each a violation of one SPEC statement planted in phi's code; "
            f"the letter follows the requirement id): {totals.get('killed', 0)} of {totals.get('mutants', 0)} "
            f"killed. A survivor is behaviour the driver protocol cannot observe; its reason is given.{apart}", ""]


def render(spec_text: str, fixtures: list[dict[str, Any]], mutants: dict[str, Any] | None = None,
           blind_sets: list[dict[str, Any]] | None = None) -> str:
    requirements = spec_requirements(spec_text)
    covered = fixture_map(fixtures)
    planted = mutant_map(mutants)
    lines = [
        "# Conformance coverage",
        "",
        "Generated by `python -m phi.conformance coverage --write` from SPEC.md, the `spec` arrays of",
        "`phi/conformance/suite/fixtures/*.json`, `phi/conformance/suite/mutants.json` and",
        "`phi/conformance/suite/blind/*.json`. Do not edit by hand.",
        "Every requirement marked **[tested]** in SPEC.md must have at least one fixture; the test run fails",
        "otherwise.",
        "",
        f"{len(fixtures)} fixtures; {sum(1 for r, t in requirements.items() if t and r in covered)} of "
        f"{sum(requirements.values())} tested requirements covered.",
        "",
        *_summary(mutants),
        *_blind_lines(blind_sets or []),
        _TABLE_HEADER,
        "|---|---|---|---|",
    ]
    for rid, tested in requirements.items():
        names = covered.get(rid, [])
        shown = ", ".join(f"`{n}`" for n in sorted(names)) if names else ("**MISSING**" if tested else "—")
        lines.append(f"| {rid} | {'yes' if tested else 'no'} | {shown} | {_mutant_cell(planted.get(rid, []))} |")
    extra = unknown(spec_text, fixtures)
    if extra:
        lines += ["", "Ids cited by fixtures but not defined in SPEC.md: " + ", ".join(extra)]
    return "\n".join(lines) + "\n"


def find_spec(conformance_dir: Path) -> Path | None:
    """SPEC.md of the checkout the suite lives in, looked for in the folders above the suite — the
    file being edited, never the copy shipped in ``suite/`` (an installed package has only that copy,
    so this finds none there)."""
    for folder in list(conformance_dir.resolve().parents)[:4]:
        candidate = folder / "SPEC.md"
        if candidate.exists():
            return candidate
    return None
