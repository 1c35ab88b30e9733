"""The ``read_skill`` tool: a model loads a skill's instructions and files on demand (SPEC §12.3, SKILL-8).

Called with a skill ``name`` it returns the body of ``SKILL.md`` (frontmatter stripped) wrapped as
the Agent Skills client guide suggests::

    <skill_content name="pdf-processing">
    ...body...

    Skill directory: /home/me/.agents/skills/pdf-processing
    Relative paths in this skill are relative to the skill directory. ...
    <skill_resources>
    <file>scripts/extract.py</file>
    </skill_resources>
    </skill_content>

The resource list is bounded (``max_resources``) and nothing in it is read until asked for. Called
with a ``path`` as well it returns that file's text. The path is relative to the skill directory
(an absolute path inside it is accepted too) and the file is opened by walking down from the skill
directory (:func:`phi.tools.fs_safe.open_beneath`): ``..`` past the directory, absolute paths
elsewhere and symlinks leading out are refused, as are directories, FIFOs and devices. Text longer
than ``max_bytes`` is cut on a character boundary with a note; a file with NUL bytes is refused as
binary. An unknown skill name is an error that lists the available ones.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ToolError
from ..loop.tool import ToolContext
from ..tools._common import os_error
from ..tools.fs_safe import ConfinementError, check_path_text, open_beneath
from ..tools.paths import locate_beneath
from ..types import TextContent, ToolResult
from .errors import SkillError
from .skill import SKILL_FILE_NAMES, Skill


class Skills(Protocol):
    """What the tool reads of its :class:`~phi.skills.skillset.SkillSet`."""

    @property
    def names(self) -> list[str]: ...

    def get(self, name: str) -> Skill | None: ...

    def __len__(self) -> int: ...

__all__ = ["ReadSkillTool", "read_skill_tool"]

_BINARY_SNIFF = 8192
_LIST_SKIP = frozenset({".git", "node_modules", "__pycache__"})
_LIST_DEPTH = 4
_MAX_NAMES_LISTED = 100


@dataclass
class ReadSkillTool:
    """An AgentTool over a :class:`~phi.skills.skillset.SkillSet`; see the module docstring."""

    skills: Skills
    name: str = "read_skill"
    max_bytes: int = 256 * 1024
    max_resources: int = 100
    label: str = "Read skill"
    description: str = field(init=False)
    parameters: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.description = (
            "Load a skill listed in <available_skills>. With only `name`, returns the skill's instructions, "
            "its directory and a list of its files: call it before working on a task that matches the skill's "
            "description, then follow the instructions. With `path` as well, returns that file of the skill "
            "(relative to the skill directory), e.g. a reference or script the instructions mention."
        )
        skill_name: dict[str, Any] = {"type": "string", "description": "The skill's name, as in <available_skills>."}
        if len(self.skills):
            skill_name["enum"] = self.skills.names
        self.parameters = {
            "type": "object",
            "properties": {
                "name": skill_name,
                "path": {"type": "string", "description": "Optional: a file inside the skill directory, "
                                                          "relative to it (e.g. references/guide.md)."},
            },
            "required": ["name"],
            "additionalProperties": False,
        }

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        skill = self._skill(args.get("name"))
        path = args.get("path")
        if path is None or path == "":
            return self._instructions(skill)
        if not isinstance(path, str):
            raise ToolError("`path` must be a string: a file path relative to the skill directory.")
        return self._resource(skill, path)

    def _skill(self, name: object) -> Skill:
        if not isinstance(name, str) or not name:
            raise ToolError("`name` must be the name of a skill listed in <available_skills>.")
        skill = self.skills.get(name)
        if skill is None:
            names = self.skills.names
            listed = ", ".join(names[:_MAX_NAMES_LISTED]) or "(none)"
            if len(names) > _MAX_NAMES_LISTED:
                listed += f" and {len(names) - _MAX_NAMES_LISTED} more (see <available_skills>)"
            raise ToolError(f"Unknown skill {name!r}. Available skills: {listed}.")
        return skill

    def _instructions(self, skill: Skill) -> ToolResult:
        try:
            body = skill.read_body()
        except SkillError as exc:
            raise ToolError(f"Cannot load skill {skill.name!r}: {exc}") from None
        text, note = _clip(body.encode("utf-8"), self.max_bytes, str(skill.file_path))
        files, more = list_resources(skill, self.max_resources)
        parts = [f'<skill_content name="{html.escape(skill.name)}">', text + note, "",
                 f"Skill directory: {skill.base_dir}",
                 "Relative paths in this skill are relative to the skill directory. "
                 f'Read a file of the skill with {self.name}(name="{skill.name}", path="<relative path>").']
        if files:
            parts += ["<skill_resources>", *(f"<file>{html.escape(f, quote=False)}</file>" for f in files),
                      "</skill_resources>"]
        if more:
            parts.append(f"(Only the first {self.max_resources} files are listed.)")
        parts.append("</skill_content>")
        details = {"skill": skill.name, "directory": str(skill.base_dir), "resources": files}
        return ToolResult([TextContent("\n".join(parts))], details=details)

    def _resource(self, skill: Skill, path: str) -> ToolResult:
        root, parts = _locate(skill, path)
        try:
            with open_beneath(root, parts, path) as fh:
                size = os.fstat(fh.fileno()).st_size
                data = fh.read(self.max_bytes + 1)
        except OSError as exc:
            raise self._read_error(exc, skill, path) from None
        if b"\x00" in data[:_BINARY_SNIFF]:
            raise ToolError(f"{path} in skill {skill.name!r} is a binary file ({size} bytes) and is not shown as text; "
                            f"its full path is {os.path.join(str(skill.base_dir), path)}.")
        text, note = _clip(data, self.max_bytes, path, size)
        details = {"skill": skill.name, "path": path, "bytes": size, "truncated": bool(note)}
        return ToolResult([TextContent(text + note)], details=details)

    def _read_error(self, exc: OSError, skill: Skill, path: str) -> ToolError:
        where = f"{path} in skill {skill.name!r}"
        if isinstance(exc, ConfinementError):
            return ToolError(f"Reading {where} refused: {exc.how} leads outside the skill directory {skill.base_dir}.")
        if isinstance(exc, FileNotFoundError):
            return ToolError(f"{where} does not exist. Call {self.name} with only the name to see the skill's files.")
        return os_error(exc, where)


def read_skill_tool(skill_set: Skills, *, name: str = "read_skill", max_bytes: int = 256 * 1024,
                    max_resources: int = 100) -> ReadSkillTool:
    """The ``read_skill`` tool over ``skill_set`` (an AgentTool)."""
    return ReadSkillTool(skill_set, name=name, max_bytes=max_bytes, max_resources=max_resources)


def _locate(skill: Skill, path: str) -> tuple[str, list[str]]:
    """The root to walk from and the components below it; absolute paths must lie in the skill."""
    base = str(skill.base_dir)
    try:
        check_path_text(path)
    except OSError as exc:
        raise ToolError(f"Invalid path {path[:200]!r}: {exc.strerror}.") from None
    if not os.path.isabs(path):
        return base, path.split("/")
    located = locate_beneath(os.path.normpath(path), [base])
    if located is None:
        raise ToolError(f"Reading {path} refused: it is outside the directory of skill {skill.name!r} ({base}). "
                        "Give a path relative to the skill directory.")
    return located[0], list(located[1])


def _clip(data: bytes, limit: int, path: str, size: int | None = None) -> tuple[str, str]:
    """``data`` as text, cut to ``limit`` bytes on a character boundary, and a note saying so."""
    if len(data) <= limit:
        return data.decode("utf-8", errors="replace"), ""
    cut = limit
    while cut > 0 and limit - cut < 3 and data[cut] & 0xC0 == 0x80:  # inside a multi-byte character
        cut -= 1
    total = f"{size} bytes" if size is not None else f"{len(data)} bytes"
    note = f"\n[truncated: the first {cut} of {total} are shown; the file is {path}]"
    return data[:cut].decode("utf-8", errors="replace"), note


def list_resources(skill: Skill, limit: int) -> tuple[list[str], bool]:
    """Up to ``limit`` files of the skill directory (relative, sorted, SKILL.md left out), and
    whether there are more. Symlinked directories are not entered."""
    base = skill.base_dir
    files: list[str] = []
    pending: list[tuple[str, int]] = [("", 0)]
    while pending:
        rel, depth = pending.pop()
        try:
            with os.scandir(base / rel if rel else base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[str, int]] = []
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _LIST_SKIP and depth < _LIST_DEPTH:
                    subdirs.append((child, depth + 1))
            elif not (depth == 0 and entry.name in SKILL_FILE_NAMES):
                if len(files) == limit:
                    return files, True
                files.append(child)
        pending += reversed(subdirs)
    return files, False
