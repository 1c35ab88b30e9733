"""Path confinement for writing tools (SPEC §9.1 "Write confinement").

Reads are never confined. Writes (write_file, edit_file, apply_patch) go only to paths inside one of
the allowed roots — by default the environment's working directory. :func:`check_write_allowed` is
the early, friendly check (both sides compared after resolving symlinks, so ``..`` segments and a
symlink pointing outside are caught); the environment then performs the write by walking beneath
the root found by :func:`locate_beneath`, so nothing swapped in after the check can move it
outside. This is a guardrail against a model wandering off, not a sandbox: the shell tool can still
write anywhere.
"""

from __future__ import annotations

import os
from typing import Iterable

from ..errors import ToolError
from .fs_safe import check_path_text, split_parts


def resolve_against(base: str, path: str) -> str:
    """``path`` made absolute against ``base`` (``~`` expanded, ``.``/``..`` collapsed)."""
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(base, path)
    return os.path.normpath(path)


def _real(path: str) -> str:
    return os.path.realpath(path)


def is_within(path: str, root: str) -> bool:
    real_path, real_root = _real(path), _real(root)
    if real_path == real_root:
        return True
    return real_path.startswith(real_root.rstrip(os.sep) + os.sep)


def check_write_allowed(path: str, roots: Iterable[str], what: str = "Write") -> None:
    """Raise :class:`ToolError` unless the absolute ``path`` lies inside one of ``roots``.

    A path no system call could take (a NUL byte, longer than PATH_MAX) is a ToolError too.
    """
    try:
        check_path_text(path)
    except OSError as exc:
        raise ToolError(f"{what} to {path[:200]!r} refused: {exc.strerror}.") from None
    roots = list(roots)
    if any(is_within(path, root) for root in roots):
        return
    shown = ", ".join(roots) or "(none)"
    raise ToolError(
        f"{what} to {path} refused: it is outside the allowed directories ({shown}). "
        "Use a path inside the working directory, or configure allowed_roots to permit it."
    )


def locate_beneath(target: str, roots: Iterable[str]) -> tuple[str, list[str]] | None:
    """(root, components of ``target`` beneath it) for the deepest root containing ``target``.

    ``target`` is an absolute, normalised path. It is first compared as written (against each root
    as written and as resolved), then — for a path that reaches into a root through a symlink
    outside it — after resolving it. The caller walks the components without following anything
    out of the root (:mod:`phi.tools.fs_safe`), so a race between this lookup and the walk cannot
    move the write outside.
    """
    forms: list[tuple[str, str]] = []
    for root in roots:
        forms += [(root, root), (root, _real(root))]
    forms.sort(key=lambda f: len(f[1]), reverse=True)
    for candidate in (target, _real(target)):
        for _, form in forms:
            if candidate == form or candidate.startswith(form.rstrip(os.sep) + os.sep):
                return form, split_parts(candidate[len(form):])
    return None
