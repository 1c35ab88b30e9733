"""Project instruction documents for the system prompt (SPEC §14 CODE-6; seed 004 §6.5).

Walks from the git root around the working directory (the working directory itself outside a
repository) down to the working directory. In each directory, root first, it loads ``AGENTS.md``
(every profile) and then the active profile's own file: ``CLAUDE.md`` (anthropic), ``GEMINI.md``
(gemini) or ``.codex/instructions.md`` (openai); another profile's file is never loaded. Deeper
documents come later, so they take precedence.

Safety: only the directories from the root to the working directory are looked at; a document
that is a symlink resolving outside the root, a non-regular file, or not UTF-8 text (binary) is
skipped with a log line, as is one that cannot be read.

Budget: the whole section (headers included) holds at most ``budget_bytes`` bytes of UTF-8
(32 KB by default). When the documents need more, the text is cut at the budget (on a character
boundary), the document being cut is closed, later documents are dropped, and the seed's marker
``[Project instructions truncated at 32KB]`` ends the section.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass
from pathlib import Path

from ..log import get_logger
from ..tools.fs_safe import open_regular
from .git_context import git_root

__all__ = ["discover_project_docs", "find_project_docs", "ProjectDoc", "PROFILE_DOC_FILES",
           "UNIVERSAL_DOC", "DEFAULT_BUDGET_BYTES", "truncation_marker"]

log = get_logger(__name__)

DEFAULT_BUDGET_BYTES = 32 * 1024
#: Loaded for every profile.
UNIVERSAL_DOC = "AGENTS.md"
#: Each profile's own document, relative to a directory.
PROFILE_DOC_FILES: dict[str, str] = {
    "openai": ".codex/instructions.md",
    "anthropic": "CLAUDE.md",
    "gemini": "GEMINI.md",
}

_INTRO = ("# Project instructions\n\n"
          "The documents below come from the project, shallowest directory first; where they "
          "disagree, the deeper (later) document takes precedence.")


@dataclass(frozen=True)
class ProjectDoc:
    """One loaded document: its path relative to the root (``/`` separators) and its text."""

    path: str
    text: str


def _doc_names(profile: str) -> list[str]:
    own = PROFILE_DOC_FILES.get(profile)
    if own is None:
        log.debug("profile %r has no document of its own; loading %s only", profile, UNIVERSAL_DOC)
    return [UNIVERSAL_DOC] + ([own] if own else [])


def _walk(root: Path, cwd: Path) -> list[Path]:
    """The directories from ``root`` down to ``cwd``; just ``cwd`` if it is not beneath ``root``."""
    try:
        relative = cwd.relative_to(root)
    except ValueError:
        return [cwd]
    dirs = [root]
    for part in relative.parts:
        dirs.append(dirs[-1] / part)
    return dirs


def _decode(data: bytes, complete: bool) -> str | None:
    """UTF-8 text (BOM dropped), or None for binary / non-UTF-8 data; a cut-off last character is dropped."""
    if b"\0" in data:
        return None
    decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
    try:
        return decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return None


def _read_doc(path: Path, root: Path, limit: int) -> str | None:
    """At most ``limit`` bytes of ``path`` as text, or None (logged) when it must be skipped."""
    if not os.path.lexists(path):
        return None
    real = Path(os.path.realpath(path))
    if real != root and root not in real.parents:
        log.warning("skipping project document %s: it resolves to %s, outside %s", path, real, root)
        return None
    try:
        with open_regular(str(real)) as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        log.warning("skipping project document %s: %s", path, exc)
        return None
    text = _decode(data[:limit], complete=len(data) <= limit)
    if text is None:
        log.warning("skipping project document %s: not UTF-8 text", path)
    return text


def find_project_docs(cwd: str | os.PathLike[str], profile: str, *,
                      max_bytes_each: int = DEFAULT_BUDGET_BYTES, sandbox: str | None = None,
                      use_git: bool = True, known_root: str | None = None) -> list[ProjectDoc]:
    """The documents for ``profile`` from the root down to ``cwd``, in load order (root first).

    Each is read up to ``max_bytes_each`` bytes (more cannot fit the budget anyway). The git root is
    found by ``git`` run in ``sandbox`` (see :mod:`phi.coding.git_context`); without ``use_git``
    the root is ``cwd``. ``known_root``: the git root when the caller knows it already.
    """
    here = Path(os.path.realpath(cwd))
    found_root = known_root or (git_root(here, sandbox=sandbox) if use_git else None)
    root = Path(os.path.realpath(found_root)) if found_root else here
    docs: list[ProjectDoc] = []
    for directory in _walk(root, here):
        for name in _doc_names(profile):
            text = _read_doc(directory / name, root, max_bytes_each)
            if text is not None:
                docs.append(ProjectDoc((directory / name).relative_to(root).as_posix(), text))
    return docs


def truncation_marker(budget_bytes: int) -> str:
    """``[Project instructions truncated at 32KB]`` (``... at N bytes]`` for a budget not in whole KB)."""
    size = f"{budget_bytes // 1024}KB" if budget_bytes % 1024 == 0 else f"{budget_bytes} bytes"
    return f"[Project instructions truncated at {size}]"


def _cut(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``max_bytes``."""
    return text.encode("utf-8")[:max(max_bytes, 0)].decode("utf-8", errors="ignore")


def render_project_docs(docs: list[ProjectDoc], budget_bytes: int = DEFAULT_BUDGET_BYTES) -> str:
    """The prompt section for ``docs`` within ``budget_bytes`` ("" when there are none)."""
    if not docs:
        return ""
    pieces: list[str] = []
    used = 0
    for index, doc in enumerate(docs):
        head, tail = f'<project_doc path="{doc.path}">\n', "\n</project_doc>"
        block = (_INTRO if index == 0 else "") + "\n\n" + head + doc.text + tail
        size = len(block.encode("utf-8"))
        if used + size <= budget_bytes:
            pieces.append(block)
            used += size
            continue
        room = budget_bytes - used - len((block[:len(block) - len(doc.text) - len(tail)] + tail).encode("utf-8"))
        if room > 0:
            pieces.append(block[:len(block) - len(doc.text) - len(tail)] + _cut(doc.text, room) + tail)
        dropped = [d.path for d in docs[index + (1 if room > 0 else 0):]]
        log.info("project documents exceed %d bytes; truncated%s", budget_bytes,
                 f", dropped {', '.join(dropped)}" if dropped else "")
        pieces.append("\n\n" + truncation_marker(budget_bytes))
        break
    return "".join(pieces).lstrip("\n")


def discover_project_docs(cwd: str | os.PathLike[str], profile: str,
                          budget_bytes: int = DEFAULT_BUDGET_BYTES, *, sandbox: str | None = None,
                          use_git: bool = True, known_root: str | None = None) -> str:
    """The project-instructions section of the system prompt for ``profile`` ("" when none exist)."""
    if budget_bytes < 1:
        raise ValueError(f"budget_bytes must be positive, got {budget_bytes}")
    found = find_project_docs(cwd, profile, max_bytes_each=budget_bytes, sandbox=sandbox, use_git=use_git,
                              known_root=known_root)
    return render_project_docs(found, budget_bytes)
