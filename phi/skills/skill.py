"""One skill: a directory with a ``SKILL.md`` (SPEC §12.3, SKILL-1 to SKILL-3).

:meth:`Skill.from_file` reads only the frontmatter (the first :data:`MAX_FRONTMATTER_BYTES` at
most) and raises :class:`InvalidFrontmatter` / :class:`MissingField` naming the file. The body is
read when asked for (:meth:`Skill.read_body`), so a catalog of many skills costs little and an
activation sees the file as it is now.

Fields as real skills write them: ``name`` and ``description`` are required non-empty strings
(surrounding blanks stripped, as skills-ref does); ``metadata`` values are strings exactly as
written; ``allowed-tools`` may be the spec's space-separated string, a comma-separated one, or a
YAML list; any other key is kept in ``extra`` with its YAML type.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..json_values import is_array, is_object
from ..tools.fs_safe import FileTooLargeError, open_regular, read_limited
from .errors import InvalidFrontmatter, MissingField, SkillError
from .frontmatter import (
    MAX_FRONTMATTER_BYTES,
    Entry,
    parse_frontmatter,
    split_frontmatter,
)

__all__ = ["Skill", "SPEC_FIELDS", "MAX_SKILL_FILE_BYTES", "SKILL_FILE_NAMES", "split_tool_list"]

#: The file that makes a folder a skill, looked for in this order.
SKILL_FILE_NAMES = ("SKILL.md", "skill.md")

#: The frontmatter keys the Agent Skills specification defines.
SPEC_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
#: ``read_body`` refuses a SKILL.md larger than this.
MAX_SKILL_FILE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Skill:
    """A skill's frontmatter and where it lives. ``file_path`` and ``base_dir`` are absolute."""

    name: str
    description: str
    file_path: Path
    base_dir: Path
    source: str = ""
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict[str, str])
    allowed_tools: list[str] = field(default_factory=list[str])
    extra: dict[str, Any] = field(default_factory=dict[str, Any])

    @classmethod
    def from_file(cls, path: str | Path, source: str = "file") -> Skill:
        """Load the skill whose ``SKILL.md`` is ``path``; raises :class:`SkillError` subclasses."""
        path = Path(os.path.abspath(path))
        file_path = path.parent.resolve() / path.name
        data = _read(file_path, MAX_FRONTMATTER_BYTES)
        text, _ = split_frontmatter(data, file_path, truncated=len(data) >= MAX_FRONTMATTER_BYTES)
        entries = parse_frontmatter(text, file_path)
        return cls(
            name=_required(entries, "name", file_path),
            description=_required(entries, "description", file_path),
            file_path=file_path,
            base_dir=file_path.parent,
            source=source,
            license=_optional_text(entries, "license", file_path),
            compatibility=_optional_text(entries, "compatibility", file_path),
            metadata=_metadata(entries, file_path),
            allowed_tools=_allowed_tools(entries, file_path),
            extra={key: entry.value for key, entry in entries.items() if key not in SPEC_FIELDS},
        )

    def read_body(self, max_bytes: int = MAX_SKILL_FILE_BYTES) -> str:
        """The Markdown after the frontmatter, stripped, with ``\\n`` line ends."""
        data = _read(self.file_path, max_bytes, whole=True)
        _, offset = split_frontmatter(data, self.file_path)
        body = data[offset:].decode("utf-8", errors="replace")
        return body.replace("\r\n", "\n").replace("\r", "\n").strip()


def _read(path: Path, limit: int, *, whole: bool = False) -> bytes:
    """Up to ``limit`` bytes of ``path`` (all of it with ``whole``, or FileTooLarge as SkillError)."""
    try:
        with open_regular(str(path)) as fh:
            return read_limited(fh, limit, str(path)) if whole else fh.read(limit)
    except FileTooLargeError as exc:
        raise SkillError(path, f"SKILL.md is larger than {exc.limit} bytes") from None
    except OSError as exc:
        raise SkillError(path, f"cannot read SKILL.md: {exc.strerror or exc}") from None


def _kind(value: object) -> str:
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else type(value).__name__


def _required(entries: dict[str, Entry], key: str, path: Path) -> str:
    entry = entries.get(key)
    if entry is None or entry.text is None:
        raise MissingField(path, key)
    if not isinstance(entry.text, str):
        raise InvalidFrontmatter(path, f"the field {key!r} must be a string, not {_kind(entry.text)}")
    value = entry.text.strip()
    if not value:
        raise MissingField(path, key, f"the required frontmatter field {key!r} is empty")
    return value


def _optional_text(entries: dict[str, Entry], key: str, path: Path) -> str | None:
    entry = entries.get(key)
    if entry is None or entry.text is None:
        return None
    if not isinstance(entry.text, str):
        raise InvalidFrontmatter(path, f"the field {key!r} must be a string, not {_kind(entry.text)}")
    return entry.text


def _metadata(entries: dict[str, Entry], path: Path) -> dict[str, str]:
    entry = entries.get("metadata")
    if entry is None or entry.text is None:
        return {}
    if not is_object(entry.text):
        raise InvalidFrontmatter(path, f"the field 'metadata' must be a mapping, not {_kind(entry.text)}")
    # str() of a nested list or mapping, as skills-ref coerces it
    return {key: value if isinstance(value, str) else str(value) for key, value in entry.text.items()}


def _allowed_tools(entries: dict[str, Entry], path: Path) -> list[str]:
    entry = entries.get("allowed-tools")
    if entry is None or entry.text is None:
        return []
    if isinstance(entry.text, str):
        return split_tool_list(entry.text)
    if is_array(entry.text):
        items = (item if isinstance(item, str) else str(item) for item in entry.text)
        return [item.strip() for item in items if item.strip()]
    raise InvalidFrontmatter(path, "the field 'allowed-tools' must be a string or a list, not a mapping")


def split_tool_list(text: str) -> list[str]:
    """``"Bash(git add:*), Read Write"`` -> ``["Bash(git add:*)", "Read", "Write"]``.

    Blanks and commas separate tools except inside parentheses.
    """
    tools: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        if depth == 0 and (ch.isspace() or ch == ","):
            if current:
                tools.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        tools.append("".join(current))
    return tools
