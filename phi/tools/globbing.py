"""Glob matching for the environment's ``glob`` (SPEC §9.1 "Search operations").

Python's :mod:`glob` follows symlinked directories under ``**``, so a link such as ``loop -> ..``
makes it walk ``loop/loop/loop/...`` until it is killed. This walker keeps :mod:`glob`'s pattern
syntax (``*``, ``?``, ``[...]`` within one path segment, ``**`` for any number of directories, names
starting with ``.`` only matched by a segment that starts with ``.``) but ``**`` never descends into
a symlinked directory (as ripgrep and ``find`` do), never enters the same directory twice (bind-mount
cycles), and stops with :class:`GlobLimitError` after ``max_entries`` directory entries. A symlink
named by the literal part of a pattern (``link/*.py``) is followed. Only regular files are returned.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from typing import Callable

__all__ = ["GlobLimitError", "glob_files", "MAX_GLOB_ENTRIES"]

MAX_GLOB_ENTRIES = 500_000
_MAGIC = set("*?[")


class GlobLimitError(OSError):
    def __init__(self, limit: int, base: str) -> None:
        super().__init__(errno.EOVERFLOW, f"the pattern made the search look at more than {limit} entries; "
                         "use a narrower pattern or path", base)


def _visible(name: str, segment: str) -> bool:
    return not name.startswith(".") or segment.startswith(".")


def glob_files(
    pattern: str,
    base: str,
    *,
    max_entries: int = MAX_GLOB_ENTRIES,
    should_stop: Callable[[], bool] | None = None,
) -> list[str]:
    """Regular files matching ``pattern`` (relative to ``base`` unless absolute), as normalised paths."""
    start = "/" if pattern.startswith("/") else base
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    if not segments:
        return []
    found: dict[str, None] = {}
    seen_dirs: set[tuple[int, int]] = set()
    visited = 0
    stack: list[tuple[str, int]] = [(start, 0)]
    while stack:
        path, index = stack.pop()
        if index == len(segments):
            if os.path.isfile(path):
                found.setdefault(os.path.normpath(path), None)
            continue
        segment = segments[index]
        if not (_MAGIC & set(segment)):
            child = os.path.join(path, segment)
            if os.path.lexists(child):
                stack.append((child, index + 1))
            continue
        if should_stop is not None and should_stop():
            break
        recursive = segment == "**"
        if recursive:
            try:
                info = os.stat(path)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in seen_dirs:
                continue
            seen_dirs.add((info.st_dev, info.st_ino))
            stack.append((path, index + 1))  # "**" matching no directory at all
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    visited += 1
                    if visited > max_entries:
                        raise GlobLimitError(max_entries, base)
                    if recursive:
                        if entry.name.startswith("."):
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, index))
                        elif index == len(segments) - 1:  # a final "**" matches the files too
                            stack.append((entry.path, index + 1))
                    elif _visible(entry.name, segment) and fnmatch.fnmatch(entry.name, segment):
                        stack.append((entry.path, index + 1))
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            continue
    return list(found)
