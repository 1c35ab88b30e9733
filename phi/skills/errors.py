"""Errors of the skills loader (SPEC §12.3, SKILL-1 to SKILL-3).

Every error names the ``SKILL.md`` it is about, so a user with many skill directories can find the
file to fix.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import PhiError


class SkillError(PhiError):
    """A skill could not be loaded or read. ``path`` is the file (or directory) concerned."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class InvalidFrontmatter(SkillError, ValueError):
    """``SKILL.md`` has no frontmatter fences, unparseable YAML, or a field of the wrong shape."""


class MissingField(SkillError, ValueError):
    """A required frontmatter field (``name`` or ``description``) is missing, null or empty."""

    def __init__(self, path: str | Path, field: str, reason: str | None = None) -> None:
        self.field = field
        super().__init__(path, reason or f"the required frontmatter field {field!r} is missing")
