"""Path confinement for writing tools (SPEC §9.1 "Write confinement").

Reads are never confined. Writes (write_file, edit_file, apply_patch) go only to paths inside one of
the allowed roots — by default the environment's working directory. Both sides are compared after
resolving symlinks, so ``..`` segments and a symlink pointing outside are caught too. This is a
guardrail against a model wandering off, not a sandbox: the shell tool can still write anywhere.
"""

from __future__ import annotations

import os
from typing import Iterable

from ..errors import ToolError


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
    """Raise :class:`ToolError` unless the absolute ``path`` lies inside one of ``roots``."""
    roots = list(roots)
    if any(is_within(path, root) for root in roots):
        return
    shown = ", ".join(roots) or "(none)"
    raise ToolError(
        f"{what} to {path} refused: it is outside the allowed directories ({shown}). "
        "Use a path inside the working directory, or configure allowed_roots to permit it."
    )
