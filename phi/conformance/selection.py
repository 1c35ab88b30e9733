"""Choosing fixtures by id, SPEC section or requirement id (SPEC §10; ``--only`` / ``--skip``).

A selector is one of:

- a SPEC section, ``§4``, ``4`` or ``4.3`` — the fixtures citing a requirement defined in that
  section or a subsection of it;
- a requirement id or family in capitals, ``LOOP-8``, ``LOOP`` (every ``LOOP-n``) or a glob such
  as ``TOOL-1?`` — the fixtures whose ``spec`` array cites a matching id;
- anything else is a glob on the fixture id or file name (``tool-*``, ``basic-text-reply``).

Several selectors may be given, repeated or comma-separated; a fixture is chosen when any
``only`` selector matches it (all fixtures when there is none) and no ``skip`` selector does.
Which section defines a requirement is read from SPEC.md in a checkout, else from
``suite/requirements.json``, which ships with the package (``python -m phi.conformance
requirements --write`` regenerates it).
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

_HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s+(.*?)\s*$")
_REQUIREMENT = re.compile(r"\*\*([A-Z]+-\d+)(\s+\[tested\])?\*\*")
_SECTION = re.compile(r"^§?\s*(\d+(?:\.\d+)*)$")
_REQUIREMENT_SELECTOR = re.compile(r"^[A-Z][A-Z0-9*?\[\]-]*$")


@dataclass
class RequirementIndex:
    """Sections (number → title) and requirements (id → section, tested) of SPEC.md."""

    sections: dict[str, str]
    requirements: dict[str, dict[str, Any]]

    def section_of(self, requirement: str) -> str | None:
        entry = self.requirements.get(requirement)
        return None if entry is None else str(entry["section"])

    def render(self) -> str:
        """``requirements.json``: JSON with one section or requirement per line."""
        def block(items: dict[str, Any]) -> str:
            rows = [f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in items.items()]
            return "{\n" + ",\n".join(rows) + "\n  }"

        return ("{\n  \"generated_by\": \"python -m phi.conformance requirements --write (from SPEC.md)\",\n"
                f"  \"sections\": {block(self.sections)},\n  \"requirements\": {block(self.requirements)}\n}}\n")


def parse_spec(text: str) -> RequirementIndex:
    """Every numbered heading and, for each requirement id, the section that defines it (its
    first bold occurrence) and whether it is marked ``[tested]``."""
    sections: dict[str, str] = {}
    requirements: dict[str, dict[str, Any]] = {}
    current = ""
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(1)
            sections[current] = heading.group(2)
            continue
        for found in _REQUIREMENT.finditer(line):
            requirements.setdefault(found.group(1), {"section": current, "tested": bool(found.group(2))})
    return RequirementIndex(sections, requirements)


def load_index(suite: Any = None) -> RequirementIndex | None:
    """From SPEC.md when the suite sits in a checkout, else from the shipped ``requirements.json``."""
    from . import suite_files
    from .coverage import find_spec

    root = suite if suite is not None else suite_files()
    spec = find_spec(root) if isinstance(root, Path) else None
    if spec is not None:
        return parse_spec(spec.read_text(encoding="utf-8"))
    shipped = suite_files() / "requirements.json"
    if not shipped.is_file():
        return None
    data = json.loads(shipped.read_text(encoding="utf-8"))
    return RequirementIndex(dict(data.get("sections", {})), dict(data.get("requirements", {})))


def split_selectors(values: Iterable[str] | None) -> list[str]:
    """``["a,b", "c"]`` → ``["a", "b", "c"]``."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def matches_fixture_glob(pattern: str, fixture_id: str, file_name: str = "") -> bool:
    return fnmatch.fnmatchcase(fixture_id, pattern) or bool(file_name) and fnmatch.fnmatchcase(file_name, pattern)


def selector_kind(selector: str) -> str:
    """``section``, ``requirement`` or ``fixture``."""
    if _SECTION.match(selector):
        return "section"
    if _REQUIREMENT_SELECTOR.match(selector):
        return "requirement"
    return "fixture"


def matches(selector: str, fixture: dict[str, Any], index: RequirementIndex | None) -> bool:
    """Whether ``selector`` (one of the three kinds above) chooses ``fixture``."""
    cited = [str(r) for r in fixture.get("spec", [])]
    kind = selector_kind(selector)
    if kind == "section":
        match = _SECTION.match(selector)
        assert match is not None
        wanted = match.group(1)
        if index is None:
            raise LookupError("selecting by SPEC section needs SPEC.md or suite/requirements.json")
        sections = [index.section_of(r) or "" for r in cited]
        return any(s == wanted or s.startswith(wanted + ".") for s in sections)
    if kind == "requirement":
        pattern = selector if "-" in selector or any(c in selector for c in "*?[") else selector + "-*"
        return any(fnmatch.fnmatchcase(r, pattern) for r in cited)
    return matches_fixture_glob(selector, str(fixture.get("id", "")), Path(str(fixture.get("_path", ""))).name)


def select(fixtures: list[dict[str, Any]], only: Iterable[str] | None = None, skip: Iterable[str] | None = None,
           index: RequirementIndex | None = None) -> list[dict[str, Any]]:
    """The fixtures ``only`` chooses (all when empty) minus those ``skip`` chooses, in their order."""
    wanted, unwanted = split_selectors(only), split_selectors(skip)
    if index is None and any(selector_kind(s) == "section" for s in wanted + unwanted):
        index = load_index()
    return [f for f in fixtures
            if (not wanted or any(matches(s, f, index) for s in wanted))
            and not any(matches(s, f, index) for s in unwanted)]


__all__ = ["RequirementIndex", "load_index", "matches", "matches_fixture_glob", "parse_spec", "select",
           "selector_kind", "split_selectors"]
