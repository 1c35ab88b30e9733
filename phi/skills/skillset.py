"""Skill sets: discovery, precedence, the ``<available_skills>`` catalog (SPEC §12.3, SKILL-4 to SKILL-7).

A directory given to :meth:`SkillSet.load_dir` is either one skill (it holds a ``SKILL.md``, or a
lowercase ``skill.md``; the path of that file is accepted too) or a root of skills: its
subdirectories are searched, in name order, for skill directories, :data:`MAX_DEPTH` levels down at
most, through at most :data:`MAX_DIRS` directories, skipping ``.git`` and ``node_modules`` and never
entering a skill directory or a directory twice (symlink loops). A directory that does not exist is
skipped.

A broken ``SKILL.md`` is logged, kept in :attr:`SkillSet.errors` and skipped (``strict=True``
raises instead), as the Agent Skills client guide recommends; rule breaks that do not stop a skill
from working (a name that is not its directory's, a long description) load and are reported by
:meth:`SkillSet.validate`.

Precedence: when two skills have the same name, the one found later wins (a later directory of
:meth:`SkillSet.load`, the other set of :meth:`SkillSet.merge`, a later directory of one walk) and a
warning is logged. The set is kept sorted by skill directory name, then name: for a skill that
follows the specification the directory name is the skill name, and for one that does not (the
``vercel-composition-patterns`` skill lives in ``composition-patterns/``) this is the order in
which the reference library lists a sorted list of skill directories.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

from ..log import get_logger
from .errors import SkillError
from .rules import SkillWarning, check_skill
from .skill import SKILL_FILE_NAMES, Skill

if TYPE_CHECKING:
    from .read_tool import ReadSkillTool

__all__ = ["SkillSet", "SKILL_FILE_NAMES", "MAX_DEPTH", "MAX_DIRS"]

log = get_logger(__name__)

#: How deep below a root skill directories are searched (1: only its direct subdirectories).
MAX_DEPTH = 4
#: How many directories one root's search visits at most.
MAX_DIRS = 2000
_SKIP_DIRS = frozenset({".git", "node_modules"})


#: The line before the catalog when the model has the ``read_skill`` tool.
SKILLS_INSTRUCTION = ("When a task matches a skill's description below, call read_skill with its name before you "
                      "start, then follow its instructions.")


class SkillSet:
    """An immutable, name-keyed collection of skills, sorted by directory name then name.

    It is also an Agent tool source (SPEC AGENT-5): ``Agent(tool_sources=[SkillSet.load(dirs)])``
    ends the system prompt of every run with the catalog (:meth:`instructions`) and offers the
    ``read_skill`` tool (:meth:`tools`), unless made with ``read_tool=False``.
    """

    def __init__(self, skills: Iterable[Skill] = (), errors: Iterable[SkillError] = (), *,
                 read_tool: bool = True) -> None:
        by_name: dict[str, Skill] = {}
        for skill in skills:
            _put(by_name, skill)
        self._skills = tuple(sorted(by_name.values(), key=lambda s: (s.base_dir.name, s.name, str(s.file_path))))
        self._by_name = {skill.name: skill for skill in self._skills}
        #: The skills that could not be loaded (each names its file), in the order met.
        self.errors: tuple[SkillError, ...] = tuple(errors)
        #: Whether, as a tool source, the set offers the ``read_skill`` tool.
        self.read_tool = read_tool
        self._read_skill: ReadSkillTool | None = None

    @classmethod
    def load(cls, dirs: Iterable[str | Path] | str | Path, *, strict: bool = False, read_tool: bool = True) -> SkillSet:
        """Load every directory of ``dirs`` in turn (sources ``dir:0``, ``dir:1``, ...); later ones win."""
        if isinstance(dirs, (str, os.PathLike)):
            dirs = [dirs]
        result = cls(read_tool=read_tool)
        for index, directory in enumerate(dirs):
            result = result.merge(cls.load_dir(directory, source=f"dir:{index}", strict=strict))
        return result

    @classmethod
    def load_dir(cls, dir: str | Path, source: str = "dir:0", *, strict: bool = False) -> SkillSet:
        """The skills of one directory (a skill directory or a root of them), tagged with ``source``."""
        skills: list[Skill] = []
        errors: list[SkillError] = []
        for file_path in _find_skill_files(Path(dir)):
            try:
                skills.append(Skill.from_file(file_path, source=source))
            except SkillError as exc:
                if strict:
                    raise
                log.warning("skipping skill: %s", exc)
                errors.append(exc)
        return cls(skills, errors)

    def merge(self, other: SkillSet) -> SkillSet:
        """A new set with the skills of both; ``other``'s win on a name conflict (``read_tool`` is this one's)."""
        return SkillSet([*self._skills, *other._skills], [*self.errors, *other.errors], read_tool=self.read_tool)

    def get(self, name: str) -> Skill | None:
        return self._by_name.get(name)

    @property
    def names(self) -> list[str]:
        return [skill.name for skill in self._skills]

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills)

    def __len__(self) -> int:
        return len(self._skills)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __repr__(self) -> str:
        return f"SkillSet({self.names!r}, errors={len(self.errors)})"

    def validate(self) -> list[SkillWarning]:
        """The specification rules the loaded skills break (they are loaded all the same)."""
        return [warning for skill in self._skills for warning in check_skill(skill)]

    def format_for_prompt(self) -> str:
        """The ``<available_skills>`` block, as skills-ref renders it; ``""`` for an empty set.

        Each tag and value on its own line; name and description HTML-escaped (quotes too);
        the location is the absolute path of ``SKILL.md``, unescaped.
        """
        if not self._skills:
            return ""
        lines = ["<available_skills>"]
        for skill in self._skills:
            lines += ["<skill>", "<name>", html.escape(skill.name), "</name>",
                      "<description>", html.escape(skill.description), "</description>",
                      "<location>", str(skill.file_path), "</location>", "</skill>"]
        lines.append("</available_skills>")
        return "\n".join(lines)


    # ----------------------------------------------------------------- as an Agent tool source

    def tools(self) -> list[ReadSkillTool]:
        """``[read_skill]`` over this set (none for an empty set or with ``read_tool=False``)."""
        if not self._skills or not self.read_tool:
            return []
        if self._read_skill is None:
            from .read_tool import read_skill_tool

            self._read_skill = read_skill_tool(self)
        return [self._read_skill]

    def instructions(self) -> str:
        """The catalog for the system prompt, after :data:`SKILLS_INSTRUCTION` when the model can read skills."""
        catalog = self.format_for_prompt()
        return f"{SKILLS_INSTRUCTION}\n{catalog}" if catalog and self.read_tool else catalog


def _put(by_name: dict[str, Skill], skill: Skill) -> None:
    old = by_name.get(skill.name)
    if old is not None and old.file_path != skill.file_path:
        log.warning("skill %r from %s (%s) overrides the one from %s (%s)",
                    skill.name, skill.file_path, skill.source, old.file_path, old.source)
    by_name[skill.name] = skill


def _skill_file(directory: Path) -> Path | None:
    for name in SKILL_FILE_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _find_skill_files(root: Path) -> list[Path]:
    """The SKILL.md files under ``root`` (see the module docstring), in walk order."""
    if not root.is_dir():
        if root.name in SKILL_FILE_NAMES and root.is_file():
            return [root]
        if root.exists():
            log.warning("skills directory %s is not a directory; skipped", root)
        else:
            log.debug("skills directory %s does not exist; skipped", root)
        return []
    own = _skill_file(root)
    if own is not None:
        return [own]
    found: list[Path] = []
    seen = {os.path.realpath(root)}
    pending = [(root, 0)]  # a stack: children pushed in reverse so they pop in name order
    visited = 0
    while pending:
        directory, depth = pending.pop()
        visited += 1
        if visited > MAX_DIRS:
            log.warning("stopped searching %s for skills after %d directories", root, MAX_DIRS)
            break
        if depth > 0:
            own = _skill_file(directory)
            if own is not None:
                found.append(own)
                continue
        if depth < MAX_DEPTH:
            pending += reversed(_subdirectories(directory, depth + 1, seen))
    return found


def _subdirectories(directory: Path, depth: int, seen: set[str]) -> list[tuple[Path, int]]:
    try:
        with os.scandir(directory) as entries:
            names = sorted(e.name for e in entries if e.name not in _SKIP_DIRS and _is_dir(e))
    except OSError as exc:
        log.warning("cannot list %s: %s", directory, exc.strerror or exc)
        return []
    out: list[tuple[Path, int]] = []
    for name in names:
        real = os.path.realpath(directory / name)
        if real not in seen:
            seen.add(real)
            out.append((directory / name, depth))
    return out


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
