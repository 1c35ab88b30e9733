"""apply_patch: applying v4a patches, the tool, and the codex-compatible command (SPEC §9.5).

phi ends every patch exactly where the real codex binary (npm ``@openai/codex`` 0.169.0) ends it —
same success or failure, same file bytes, same summary — as checked by a differential fuzz against
that binary (``scripts/apply-patch-fuzz``; a slice runs in the test suite). The whole patch is
parsed first (:mod:`.patch_parser`); file operations then run in patch order and, like codex, are not
rolled back when a later one fails; an update's new text comes from :mod:`.patch_contents`.

These differences are intended (docs/tools.md):

* Confinement: every path the patch writes, deletes or moves to must lie inside the allowed
  roots (by default the environment's ``allowed_write_roots``, i.e. the working directory); this
  is checked for all paths before the first change. codex writes wherever the path points.
* A move onto the file's own path (``*** Move to:`` naming the same file, e.g. ``./f`` for ``f``,
  or a path through a symlink to its directory) keeps the updated file. codex writes it and then deletes it as the move's source.
* An update replaces the file (or, for a move, deletes its source) only if it still holds exactly
  the bytes the update was derived from, checked right before the rename (:mod:`phi.tools.file_state`):
  a change someone else makes meanwhile fails the operation and is kept. codex writes over it.
* Read before write, in the tool with a :class:`~phi.tools.tool_session.ToolSession` that requires
  it (SPEC §9.1): ``*** Add File`` over an existing file, ``*** Move to:`` onto one and ``*** Delete
  File`` need the model to have read that file, unchanged since, as ``write_file`` does; the whole
  patch is refused before its first change when one of them fails (a path an earlier operation of
  the same patch wrote is known). A file added or moved onto a missing path is created with
  ``RENAME_NOREPLACE``, so a file someone else creates meanwhile is kept. Without such a session
  (the command line, the differential fuzz) codex's behaviour is kept.

Command line (codex's convention)::

    python -m phi.tools.apply_patch 'PATCH TEXT'     # or '-' / no argument: read the patch from stdin

It works in the current directory, prints the summary on stdout, errors on stderr, and exits 1 on
failure. ``--allow-outside-cwd`` (before the patch argument) lifts the confinement.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import ToolCancelled, ToolError
from ..log import get_logger
from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import finish, get_env, object_schema
from .environment import ExecutionEnvironment, delete_verified, write_verified
from .file_state import Expected, FileRecord, FileStamp, stamp_of_bytes
from .patch_contents import PatchApplyError, derive_new_contents
from .patch_parser import AddFile, DeleteFile, Hunk, UpdateFile, parse_patch
from .paths import check_write_allowed
from .tool_session import ToolSession, tool_session

log = get_logger(__name__)

__all__ = ["PatchApplyError", "PatchResult", "apply_patch", "derive_new_contents", "ApplyPatchTool", "main"]


@dataclass
class PatchResult:
    added: list[str] = field(default_factory=list[str])
    modified: list[str] = field(default_factory=list[str])
    deleted: list[str] = field(default_factory=list[str])
    lines: list[str] = field(default_factory=list[str])  # "A path" / "M path" / "D path", in order
    #: what each added or modified path (as the patch names it) was left holding
    written: dict[str, FileStamp] = field(default_factory=dict[str, FileStamp])

    def summary(self) -> str:
        """codex's report: added, then modified, then deleted files, each group in patch order."""
        grouped = [line for kind in "AMD" for line in self.lines if line[0] == kind]
        return "Success. Updated the following files:\n" + "\n".join(grouped)


# -- applying hunks through an environment ----------------------------------------------------

def _check_paths(hunks: Sequence[Hunk], env: ExecutionEnvironment, roots: Sequence[str]) -> None:
    for hunk in hunks:
        targets = [hunk.path] + ([hunk.move_path] if isinstance(hunk, UpdateFile) and hunk.move_path else [])
        for target in targets:
            check_write_allowed(env.resolve_path(target), roots, what="apply_patch write")


def _read_for_update(env: ExecutionEnvironment, path: str) -> tuple[str, Expected]:
    """The file's text and what it must still be when the update replaces it."""
    resolved = env.resolve_path(path)
    try:
        data = env.read_bytes(path)
    except OSError as exc:
        raise PatchApplyError(f"Failed to read file to update {resolved}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8"), Expected(resolved, path, stamp_of_bytes(data))
    except UnicodeDecodeError:
        raise PatchApplyError(f"Failed to read file to update {resolved}: the file is not valid UTF-8") from None


def _guard(files: FileRecord | None, env: ExecutionEnvironment, path: str) -> Expected | None:
    """Read before write (SPEC §9.1) for the existing file at ``path`` that an operation replaces or
    deletes: what it must still be then, or None without a record (or with the check off)."""
    if files is None:
        return None
    try:
        return files.check(env, env.resolve_path(path), path)
    except ToolError as exc:
        raise PatchApplyError(str(exc)) from None


def _check_all_first(hunks: Sequence[Hunk], env: ExecutionEnvironment, files: FileRecord) -> None:
    """Refuse, before the first change, a patch that would replace or delete a file the model has
    not read (or that changed since). A path an earlier operation of the patch touched is checked
    when its own turn comes (by then the record knows what the patch left there)."""
    touched: set[str] = set()
    for hunk in hunks:
        paths = [hunk.path]
        replaced = [hunk.path]
        if isinstance(hunk, UpdateFile):
            replaced = []  # an update in place is checked against its context lines and the bytes it read
            if hunk.move_path:
                paths.append(hunk.move_path)
                if not env.same_path(hunk.move_path, hunk.path):
                    replaced = [hunk.move_path]
        for path in replaced:
            if env.resolve_path(path) not in touched:
                _guard(files, env, path)
        touched.update(env.resolve_path(path) for path in paths)


def _apply_one(hunk: Hunk, env: ExecutionEnvironment, result: PatchResult, roots: Sequence[str],
               files: FileRecord | None) -> None:
    if isinstance(hunk, AddFile):
        data = hunk.contents.encode("utf-8")
        expected = _guard(files, env, hunk.path)  # absent: created with RENAME_NOREPLACE
        try:
            write_verified(env, hunk.path, data, roots, expected)
        except OSError as exc:
            raise PatchApplyError(f"Failed to write file {hunk.path}: {exc.strerror or exc}") from None
        except ToolError as exc:  # changed or created by someone else meanwhile (file_state.Expected)
            raise PatchApplyError(str(exc)) from None
        result.written[hunk.path] = stamp_of_bytes(data)
        if files is not None:
            files.note(env.resolve_path(hunk.path), result.written[hunk.path])
        result.added.append(hunk.path)
        result.lines.append(f"A {hunk.path}")
    elif isinstance(hunk, DeleteFile):
        expected = _guard(files, env, hunk.path)
        try:
            if env.is_dir(hunk.path):
                raise IsADirectoryError(21, "Is a directory")
            delete_verified(env, hunk.path, roots, expected)
        except OSError as exc:
            raise PatchApplyError(f"Failed to delete file {hunk.path}: {exc.strerror or exc}") from None
        except ToolError as exc:
            raise PatchApplyError(str(exc)) from None
        if files is not None:
            files.forget(env.resolve_path(hunk.path))
        result.deleted.append(hunk.path)
        result.lines.append(f"D {hunk.path}")
    else:
        original, source = _read_for_update(env, hunk.path)
        data = derive_new_contents(original, hunk.chunks, env.resolve_path(hunk.path)).encode("utf-8")
        destination = hunk.move_path or hunk.path
        moved_away = bool(hunk.move_path) and not env.same_path(destination, hunk.path)
        try:
            if moved_away:  # a move onto the file itself (even through a symlink) keeps it
                write_verified(env, destination, data, roots, _guard(files, env, destination))
                delete_verified(env, hunk.path, roots, source)  # still what the update was made from
            else:
                write_verified(env, destination, data, roots, source)
        except OSError as exc:
            raise PatchApplyError(f"Failed to write file {destination}: {exc.strerror or exc}") from None
        except ToolError as exc:  # changed by someone else meanwhile (file_state.Expected)
            raise PatchApplyError(str(exc)) from None
        result.written[destination] = stamp_of_bytes(data)
        if files is not None:
            if moved_away:
                files.forget(env.resolve_path(hunk.path))
            files.note(env.resolve_path(destination), result.written[destination])
        result.modified.append(destination)
        result.lines.append(f"M {destination}")


def apply_patch(
    patch: str,
    env: ExecutionEnvironment,
    allowed_roots: Sequence[str] | None = None,
    ctx: ToolContext | None = None,
    files: FileRecord | None = None,
) -> PatchResult:
    """Parse and apply ``patch`` in ``env``. Raises PatchParseError / PatchApplyError / ToolError.

    ``allowed_roots=None`` uses ``env.allowed_write_roots``. Operations that succeeded before a
    failure stay applied (as in codex); the error names the file and the hunk that failed.
    ``files``: the session's record (the tool's :class:`~phi.tools.tool_session.ToolSession`); when
    its check is on, a file the patch adds over, moves onto or deletes must have been read and be
    unchanged since (SPEC §9.1), and each operation's result is noted in it as it is applied.
    """
    hunks = parse_patch(patch)
    if not hunks:
        raise PatchApplyError("No files were modified.")
    roots = list(allowed_roots) if allowed_roots is not None else list(env.allowed_write_roots)
    _check_paths(hunks, env, roots)
    if files is not None and files.enabled:
        _check_all_first(hunks, env, files)
    result = PatchResult()
    for hunk in hunks:
        if ctx is not None and ctx.cancelled:
            raise ToolCancelled()
        try:
            _apply_one(hunk, env, result, roots, files)
        except PatchApplyError as exc:
            if result.lines:
                done = ", ".join(result.lines)
                raise PatchApplyError(f"{exc}\n(Already applied before this failure: {done})") from None
            raise
    log.debug("applied patch: %s", result.lines)
    return result


# -- the tool --------------------------------------------------------------------------------

@dataclass
class ApplyPatchTool:
    """The codex-style ``apply_patch`` tool (seed 004 §3.4)."""

    env: ExecutionEnvironment | None = None
    allowed_roots: Sequence[str] | None = None
    session: ToolSession | None = None
    name: str = "apply_patch"
    label: str = "Apply patch"
    description: str = (
        "Apply code changes using the patch format. Supports creating, deleting, and modifying files "
        "in a single operation. The patch starts with '*** Begin Patch' and ends with '*** End Patch'; "
        "each file operation is '*** Add File: <path>' (lines prefixed with '+'), '*** Delete File: <path>' "
        "or '*** Update File: <path>' (optionally followed by '*** Move to: <new path>') with '@@' chunks "
        "of ' ' context, '-' removed and '+' added lines. Paths are relative to the working directory."
    )
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema(
        {"patch": {"type": "string", "description": "The patch content in v4a format."}}, ["patch"]))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.cancelled:
            raise ToolCancelled()
        env = get_env(self.env)
        # the record is checked and kept up to date operation by operation (an update's context
        # lines were checked against the file, so what it wrote counts as seen)
        result = apply_patch(args["patch"], env, self.allowed_roots, ctx, tool_session(self.session).files)
        details = {"added": result.added, "modified": result.modified, "deleted": result.deleted}
        return finish(result.summary(), self.name, details, session=self.session)


# -- command line ----------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    """``python -m phi.tools.apply_patch 'PATCH'`` — codex's calling convention."""
    from .environment import LocalExecutionEnvironment

    args = list(sys.argv[1:] if argv is None else argv)
    allow_outside = False
    if args and args[0] == "--allow-outside-cwd":
        allow_outside, args = True, args[1:]
    if len(args) > 1:
        sys.stderr.write("usage: python -m phi.tools.apply_patch [--allow-outside-cwd] 'PATCH' | -\n")
        return 2
    patch = sys.stdin.read() if not args or args[0] == "-" else args[0]
    env = LocalExecutionEnvironment(os.getcwd(), allowed_write_roots=["/"] if allow_outside else None)
    try:
        result = apply_patch(patch, env)
    except ToolError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    sys.stdout.write(result.summary() + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through subprocess in the tests
    sys.exit(main())
