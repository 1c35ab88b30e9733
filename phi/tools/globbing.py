"""Glob matching for the environment's ``glob`` (SPEC §9.1 "Search and listing").

Pattern syntax is Python's :mod:`glob`'s: ``*``, ``?`` and ``[...]`` within one path segment, ``**``
for any number of directories, and names starting with ``.`` only matched by a segment that starts
with ``.``. Unlike :mod:`glob`, ``**`` never descends into a symlinked directory (as ripgrep and
``find`` behave), so a link such as ``loop -> ..`` cannot make it walk forever; a symlink named by the
literal part of a pattern (``link/*.py``) is followed. Only regular files are returned — not
symlinks, FIFOs or devices — and ``.git`` and ``node_modules`` below the start directory are never
entered.

Two walkers give the same answer:

* :func:`glob_with_rg` — for patterns with ``**`` when ripgrep is installed: ``rg --files`` (in
  parallel, without ignore files, hidden entries only when the pattern names one) lists the files
  under the pattern's literal prefix, and one compiled regular expression picks the matches;
* :func:`glob_files` — a pruned ``os.scandir`` walk that only enters directories the pattern can
  still match below, used for everything else.

Both stop with :class:`GlobLimitError` after ``max_entries`` entries and honour ``should_stop``.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from typing import Callable, Sequence

from ..concurrency.cancel import CancellationToken
from .process import run_process

__all__ = ["GlobLimitError", "GlobPattern", "glob_files", "glob_with_rg", "MAX_GLOB_ENTRIES", "PRUNED"]

MAX_GLOB_ENTRIES = 500_000
PRUNED = frozenset({".git", "node_modules"})
_MAGIC = set("*?[")
_ANY_DIRS = r"(?:(?!\.)[^/]+/)*"
_RG_TIMEOUT_MS = 120_000


class GlobLimitError(OSError):
    def __init__(self, limit: int, base: str) -> None:
        super().__init__(errno.EOVERFLOW, f"the pattern made the search look at more than {limit} entries; "
                         "use a narrower pattern or path", base)


def _segment_regex(segment: str) -> str:
    """One path segment as a regular expression (no ``/`` matched; a leading ``.`` only literally)."""
    out = [] if segment.startswith(".") else [r"(?!\.)"]
    i = 0
    while i < len(segment):
        ch = segment[i]
        i += 1
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = i
            if end < len(segment) and segment[end] in "!^":
                end += 1
            if end < len(segment) and segment[end] == "]":
                end += 1
            end = segment.find("]", end)
            if end < 0:
                out.append(r"\[")
                continue
            body = segment[i:end].replace("\\", "\\\\")
            if body[:1] == "!":
                body = "^" + body[1:]
            elif body[:1] == "^":
                body = "\\" + body
            out.append(f"(?![/])[{body}]")
            i = end + 1
        else:
            out.append(re.escape(ch))
    return "".join(out)


class GlobPattern:
    """A pattern split into its literal prefix (the start directory) and the rest, compiled."""

    def __init__(self, pattern: str, base: str) -> None:
        self.start = "/" if pattern.startswith("/") else base
        segments = [s for s in pattern.split("/") if s not in ("", ".")]
        self.literal: list[str] = []
        while segments and not (_MAGIC & set(segments[0])):
            self.literal.append(segments.pop(0))
        self.rest = segments
        self.recursive = "**" in segments
        self.hidden = any(s.startswith(".") for s in segments)
        self.segment_match = [None if s == "**" else re.compile(_segment_regex(s)).fullmatch for s in segments]
        self.full_match = re.compile(self._regex()).fullmatch if segments else None

    def _regex(self) -> str:
        pieces: list[str] = []
        last = len(self.rest) - 1
        for i, segment in enumerate(self.rest):
            if segment == "**":
                pieces.append(_ANY_DIRS + (r"(?!\.)[^/]+" if i == last else ""))
            else:
                pieces.append(_segment_regex(segment) + ("" if i == last else "/"))
        return "".join(pieces)

    def root(self) -> str:
        return os.path.join(self.start, *self.literal) if self.literal else self.start


def _is_regular(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def glob_files(
    pattern: str,
    base: str,
    *,
    max_entries: int = MAX_GLOB_ENTRIES,
    should_stop: Callable[[], bool] | None = None,
) -> list[str]:
    """Regular files matching ``pattern`` (relative to ``base`` unless absolute), by a pruned walk."""
    compiled = GlobPattern(pattern, base)
    root = os.path.normpath(compiled.root())
    if not compiled.rest:  # a literal path
        return [root] if compiled.literal and _is_regular(root) else []
    found: list[str] = []
    seen_dirs: set[tuple[int, int, int]] = set()  # (device, inode, pattern position) walked by a "**"
    visited = 0
    last = len(compiled.rest) - 1
    stack: list[tuple[str, int]] = [(root, 0)]
    while stack:
        path, index = stack.pop()
        if should_stop is not None and should_stop():
            break
        match = compiled.segment_match[index]
        if match is None:  # "**": this directory, once
            try:
                info = os.stat(path)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino, index)
            if key in seen_dirs:
                continue
            seen_dirs.add(key)
            if index < last:
                stack.append((path, index + 1))  # "**" matching no directory at all
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    visited += 1
                    if visited > max_entries:
                        raise GlobLimitError(max_entries, base)
                    name = entry.name
                    if match is None:
                        if name.startswith(".") or name in PRUNED:
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, index))
                        elif index == last and entry.is_file(follow_symlinks=False):
                            found.append(entry.path)  # a final "**" matches the files too
                    elif match(name) is not None:
                        if index == last:
                            if entry.is_file(follow_symlinks=False):
                                found.append(entry.path)
                        elif name not in PRUNED and entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, index + 1))
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            continue
    return list(dict.fromkeys(found))


def rg_available() -> bool:
    return shutil.which("rg") is not None


def rg_files_command(compiled: GlobPattern) -> list[str]:
    argv = ["rg", "--files", "--null", "--no-config", "--no-ignore", "--no-messages", "--color", "never"]
    if compiled.hidden:
        argv.append("--hidden")
    for name in sorted(PRUNED):
        argv += ["--glob", f"!{name}"]
    return argv  # no path: rg lists its working directory, and its output has no "./" prefix


def glob_with_rg(
    pattern: str,
    base: str,
    *,
    max_entries: int = MAX_GLOB_ENTRIES,
    cancel: CancellationToken | None = None,
    env: dict[str, str] | None = None,
    sandbox: str | None = None,
) -> list[str] | None:
    """Regular files matching ``pattern`` listed by ``rg --files`` (confined by ``sandbox``, the
    launcher's JSON, when given); None when rg cannot be used (not installed, or a pattern without
    ``**``, which the pruned walk answers as fast)."""
    compiled = GlobPattern(pattern, base)
    root = os.path.normpath(compiled.root())
    if not compiled.recursive or compiled.full_match is None or not rg_available():
        return None
    if not os.path.isdir(root):
        return []
    collector = _NulCollector(max_entries, compiled.full_match)
    stop = cancel.child_token() if cancel is not None else CancellationToken()
    try:
        outcome = run_process(rg_files_command(compiled), cwd=root, env=env, timeout_ms=_RG_TIMEOUT_MS,
                              cancel=stop, max_capture_bytes=4096, on_output=collector.feed_stream(stop),
                              sandbox=sandbox)
    except OSError:
        return None
    finally:
        stop.cancel()
    if collector.overflow:
        raise GlobLimitError(max_entries, base)
    if outcome.cancelled or outcome.timed_out or outcome.exit_code not in (0, 1, 2):
        if cancel is not None and cancel.is_cancelled():
            return []
        return None  # rg failed: the walk answers instead
    collector.finish()
    prefix = root.rstrip("/") + "/"
    return [prefix + rel for rel in collector.matches]


class _NulCollector:
    """NUL-terminated paths from ``rg --files --null`` (a name may hold a newline), matched as they come."""

    def __init__(self, limit: int, match: Callable[[str], object]) -> None:
        self.limit = limit
        self.match = match
        self.count = 0
        self.overflow = False
        self.partial = b""
        self.matches: list[str] = []

    def feed_stream(self, stop: CancellationToken) -> Callable[[str, bytes], None]:
        def feed(stream: str, data: bytes) -> None:
            if stream != "stdout" or self.overflow:
                return
            pieces = (self.partial + data).split(b"\0")
            self.partial = pieces.pop()
            self._add(pieces)
            if self.overflow:
                stop.cancel()
        return feed

    def _add(self, raw_paths: Sequence[bytes]) -> None:
        self.count += len(raw_paths)
        if self.count > self.limit:
            self.overflow = True
            return
        match = self.match
        names = b"\0".join(raw_paths).decode("utf-8", "surrogateescape").split("\0")  # os.fsdecode, at once
        self.matches.extend([rel for rel in names if match(rel) is not None])

    def finish(self) -> None:
        if self.partial:
            self._add([self.partial])
            self.partial = b""
