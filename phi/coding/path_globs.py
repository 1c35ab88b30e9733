"""Which paths a tool call names, and path globs over them (SPEC §14 CODE-8; issue 34 item 4): the
file side of the permission rules (:mod:`phi.coding.permissions`).

A call names its paths in ``file_path``, ``path``, ``dir_path`` or ``notebook_path``, in a list of
``paths`` (or ``include``), or — ``apply_patch`` — in its patch's file headers; ``grep``, ``glob``
and ``list_dir`` without a path search the working directory. A path is taken against the call's
working directory, made absolute and normalised (``src/../.env`` is ``.env``), and also resolved
through symlinks as written (``link/..`` is beside the link's target).

A glob is rooted at the workspace when relative; ``*``, ``?`` and ``[...]`` stay within one path
segment and match dot files too, ``**`` crosses directories (``src/**`` is ``src`` and everything
below), ``~`` is the home directory. It matches as written and with its literal leading directories
resolved (a workspace reached through a symlink).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass

from ..json_values import is_array
from .approval import ApprovalRequest

PATH_ARGUMENTS = ("file_path", "path", "dir_path", "notebook_path")
PATH_LIST_ARGUMENTS = ("paths", "include")  # only as lists: grep's string `include` is a file-name filter
#: tools that search the working directory when no path is given
DIRECTORY_TOOLS = frozenset({"grep", "glob", "list_dir"})
_PATCH_HEADERS = ("*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: ")
_CASE_FOLDS = sys.platform in ("darwin", "win32")  # file systems that fold case usually


@dataclass(frozen=True)
class CallPaths:
    """The paths a call names, and whether that list is known to be whole (an ``apply_patch``
    that does not parse is not: only deny and ask rules look at what could be read of it)."""

    paths: tuple[str, ...]
    whole: bool = True


def call_paths(request: ApprovalRequest) -> CallPaths | None:
    """The paths a call names (see the module docstring), or None for a call naming none."""
    arguments = request.arguments
    found: list[str] = [arguments[key] for key in PATH_ARGUMENTS if isinstance(arguments.get(key), str)]
    for key in PATH_LIST_ARGUMENTS:
        value = arguments.get(key)
        if is_array(value):
            found += [item for item in value if isinstance(item, str)]
    whole = True
    if request.tool_name == "apply_patch":
        patch = arguments.get("input", arguments.get("patch"))
        if isinstance(patch, str):
            paths, whole = patch_paths(patch)
            found += paths
    if not found and request.tool_name in DIRECTORY_TOOLS:
        found = ["."]
    found = [path for path in found if path]
    return CallPaths(tuple(found), whole) if found or not whole else None


def patch_paths(patch: str) -> tuple[list[str], bool]:
    """Every path an ``apply_patch`` text touches (moves included), and whether it parsed: what
    ``apply_patch`` itself would change; else the file headers that can be read."""
    from ..tools.patch_parser import AddFile, DeleteFile, PatchParseError, parse_patch

    try:
        hunks = parse_patch(patch)
    except PatchParseError:
        headers = [line.strip() for line in patch.splitlines()]
        return [line[len(h):].strip() for line in headers for h in _PATCH_HEADERS if line.startswith(h)], False
    paths: list[str] = []
    for hunk in hunks:
        paths.append(hunk.path)
        if not isinstance(hunk, (AddFile, DeleteFile)) and hunk.move_path:
            paths.append(hunk.move_path)
    return paths, True


def _path_forms(path: str, base: str) -> list[str]:
    """``path`` absolute and normalised, and resolved when a symlink is on the way — resolved as
    written: ``link/..`` is the parent of the link's target, not the directory holding the link."""
    written = os.path.join(base, os.path.expanduser(path))
    absolute = os.path.normpath(written)
    try:
        real = os.path.realpath(written)
    except (OSError, ValueError):
        return [absolute]
    return [absolute] if real == absolute else [absolute, real]


@functools.lru_cache(maxsize=512)
def _glob_forms(glob: str, root: str) -> tuple[re.Pattern[str], ...]:
    """The regular expressions a path glob stands for under ``root``: as written, and with its
    literal leading directories resolved (a workspace reached through a symlink)."""
    absolute = os.path.normpath(os.path.join(root, os.path.expanduser(glob)))
    segments = absolute.split(os.sep)
    literal = 0
    while literal < len(segments) and not any(mark in segments[literal] for mark in "*?["):
        literal += 1
    forms = [absolute]
    prefix = os.sep.join(segments[:literal]) or os.sep
    try:
        real_prefix = os.path.realpath(prefix)
    except (OSError, ValueError):
        real_prefix = prefix
    if real_prefix != prefix:
        forms.append(os.path.join(real_prefix, *segments[literal:]))
    return tuple(_glob_regex(form) for form in forms)


def _glob_regex(glob: str) -> re.Pattern[str]:
    out = ""
    for segment in glob.split(os.sep):
        if not segment:
            continue
        out += "(?:/.*)?" if segment == "**" else "/" + _segment_regex(segment)
    return re.compile((out or "/") + r"\Z", re.DOTALL | (re.IGNORECASE if _CASE_FOLDS else 0))


def _segment_regex(segment: str) -> str:
    out, j = "", 0
    while j < len(segment):
        char = segment[j]
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[" and "]" in segment[j + 2:]:
            close = segment.index("]", j + 2)
            inner = segment[j + 1:close]
            negate = inner[:1] in ("!", "^")
            body = re.escape(inner[1:] if negate else inner).replace("\\-", "-")
            out += f"[{'^' if negate else ''}{body}]"
            j = close
        else:
            out += re.escape(char)
        j += 1
    return out


def path_forms(path: str, base: str) -> list[str]:
    """What a glob is matched against for ``path`` (see the module docstring)."""
    return _path_forms(path, base)


def glob_matches(glob: str, root: str, forms: list[str]) -> bool:
    """Whether ``glob``, rooted at ``root``, matches any of ``forms``."""
    return any(regex.match(form) for regex in _glob_forms(glob, root) for form in forms)


__all__ = ["CallPaths", "call_paths", "patch_paths", "path_forms", "glob_matches", "PATH_ARGUMENTS",
           "PATH_LIST_ARGUMENTS", "DIRECTORY_TOOLS"]
