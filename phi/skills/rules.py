"""The Agent Skills specification's rules, reported as warnings (SPEC §12.3, SKILL-7).

The same checks as the reference validator skills-ref, phrased for a user: unknown frontmatter keys;
the name's length (64), case, hyphens, characters (letters and digits after NFKC normalisation,
and ``-``) and its match with the directory name; the description's length (1024); the
compatibility field's length (1 to 500). Loading never fails on these: real, widely used skills
break several of them (a name that is not the directory's, a description over 1024 characters).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .skill import SPEC_FIELDS, Skill

__all__ = ["SkillWarning", "check_skill", "MAX_NAME_CHARS", "MAX_DESCRIPTION_CHARS", "MAX_COMPATIBILITY_CHARS"]

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500


@dataclass(frozen=True)
class SkillWarning:
    """A rule a skill breaks. ``rule`` is a short stable code, ``message`` says what to change."""

    path: Path
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def check_skill(skill: Skill) -> list[SkillWarning]:
    """Every specification rule ``skill`` breaks, in a fixed order."""
    found: list[tuple[str, str]] = []
    unknown = sorted(set(skill.extra) - set(SPEC_FIELDS))
    if unknown:
        found.append(("unknown-fields",
                      f"frontmatter keys the specification does not define: {', '.join(unknown)} "
                      f"(it defines {', '.join(SPEC_FIELDS)}; put client-specific keys under metadata)"))
    found += _name_rules(skill)
    if len(skill.description) > MAX_DESCRIPTION_CHARS:
        found.append(("description-length", f"the description has {len(skill.description)} characters; "
                                            f"the limit is {MAX_DESCRIPTION_CHARS}"))
    if skill.compatibility is not None and not 1 <= len(skill.compatibility) <= MAX_COMPATIBILITY_CHARS:
        found.append(("compatibility-length", f"the compatibility field has {len(skill.compatibility)} characters; "
                                              f"it must have 1 to {MAX_COMPATIBILITY_CHARS}"))
    return [SkillWarning(skill.file_path, rule, message) for rule, message in found]


def _name_rules(skill: Skill) -> list[tuple[str, str]]:
    name = unicodedata.normalize("NFKC", skill.name)
    found: list[tuple[str, str]] = []
    if len(name) > MAX_NAME_CHARS:
        found.append(("name-length", f"the name {name!r} has {len(name)} characters; the limit is {MAX_NAME_CHARS}"))
    if name != name.lower():
        found.append(("name-case", f"the name {name!r} must be lowercase"))
    if name.startswith("-") or name.endswith("-"):
        found.append(("name-hyphen-edge", f"the name {name!r} must not start or end with '-'"))
    if "--" in name:
        found.append(("name-double-hyphen", f"the name {name!r} must not contain '--'"))
    if not all(ch.isalnum() or ch == "-" for ch in name):
        found.append(("name-chars", f"the name {name!r} may hold only letters, digits and '-'"))
    directory = unicodedata.normalize("NFKC", skill.base_dir.name)
    if directory != name:
        found.append(("name-dir-mismatch", f"the name {name!r} differs from its directory's name {directory!r}"))
    return found
