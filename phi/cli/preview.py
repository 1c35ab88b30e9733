"""What a write tool call would change, shown before the person approves it (SPEC §15 CLI-9).

:func:`preview_diff` computes, without touching the disk, the unified diff of every file a call of
a write tool would change: ``write_file`` (the new content against the file's), ``edit_file`` and
gemini's ``replace`` (the exact replacement; the tool itself may still match more loosely), and
codex's ``apply_patch`` (parsed and applied to the current files with the tool's own parser). A
call it cannot foresee (a patch that does not apply, an old text not in the file) gets a one-line
reason instead, and the question is still asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .render import file_diff


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _path_argument(arguments: dict[str, Any]) -> str | None:
    for key in ("file_path", "path", "absolute_path"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _replacement(before: str | None, arguments: dict[str, Any]) -> str:
    """The file after an ``edit_file`` / ``replace`` call; ValueError when it cannot be foreseen."""
    old = arguments.get("old_string", arguments.get("old_text"))
    new = arguments.get("new_string", arguments.get("new_text"))
    if not isinstance(old, str) or not isinstance(new, str):
        raise ValueError("the edit names no old and new text")
    if before is None:
        if old == "":
            return new
        raise ValueError("the file does not exist")
    if old not in before:
        raise ValueError("the old text is not in the file as written (the tool may still find it)")
    every = bool(arguments.get("replace_all")) or int(arguments.get("expected_replacements") or 1) > 1
    return before.replace(old, new) if every else before.replace(old, new, 1)


def _patch_diff(cwd: Path, patch: str) -> list[str]:
    from ..tools.patch_contents import derive_new_contents
    from ..tools.patch_parser import AddFile, DeleteFile, parse_patch

    lines: list[str] = []
    for hunk in parse_patch(patch):
        before = _read(cwd / hunk.path)
        if isinstance(hunk, AddFile):
            lines += file_diff(hunk.path, before, hunk.contents)
        elif isinstance(hunk, DeleteFile):
            lines += file_diff(hunk.path, before, None)
        else:
            if before is None:
                raise ValueError(f"{hunk.path} does not exist")
            after = derive_new_contents(before, hunk.chunks, hunk.path)
            target = hunk.move_path or hunk.path
            lines += file_diff(target, before, after) if target == hunk.path else [
                *file_diff(hunk.path, before, None), *file_diff(target, None, after)]
    return lines


def preview_diff(tool_name: str, arguments: dict[str, Any], cwd: str | Path) -> tuple[list[str], str]:
    """``(diff lines, reason)``: the diff the call would make, or no lines and why (or ``""`` when
    the tool is not one whose changes can be shown)."""
    root = Path(cwd)
    try:
        patch = arguments.get("input", arguments.get("patch"))
        if isinstance(patch, str) and "*** Begin Patch" in patch:
            return _patch_diff(root, patch), ""
        path = _path_argument(arguments)
        if path is None:
            return [], ""
        before = _read(root / path)
        if isinstance(arguments.get("content"), str):
            return file_diff(path, before, arguments["content"]), ""
        if any(key in arguments for key in ("old_string", "old_text")):
            return file_diff(path, before, _replacement(before, arguments)), ""
    except Exception as error:  # a patch that does not parse or apply: say so, still ask
        return [], f"cannot show the change in advance: {error}"
    return [], ""


__all__ = ["preview_diff"]
