"""apply_patch: applying v4a patches, the tool, and the codex-compatible command (SPEC §9.5).

Behaviour matches codex's ``apply_patch`` on its own scenario suite: the whole patch is parsed
before anything is touched; file operations then run in patch order and are not rolled back when a
later one fails (exactly like codex); updates locate each chunk with :func:`seek_sequence` (exact,
then whitespace- and punctuation-tolerant), keep each untouched line's own line ending, give new
lines the file's preferred ending (that of its first line) and always end the file with a newline.

Unlike codex, every path the patch writes, deletes or moves to must lie inside the allowed roots
(by default the environment's ``allowed_write_roots``, i.e. the working directory); this is checked
for all paths before the first change.

Command line (codex's convention)::

    python -m phi.tools.apply_patch 'PATCH TEXT'     # or '-' / no argument: read the patch from stdin

It works in the current directory, prints the summary on stdout, errors on stderr, and exits 1 on
failure. ``--allow-outside-cwd`` (before the patch argument) lifts the confinement.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..agent_tool import ToolContext
from ..errors import ToolCancelled, ToolError
from ..types import ToolResult
from .environment import ExecutionEnvironment
from .paths import check_write_allowed
from .patch_parser import AddFile, DeleteFile, Hunk, PatchError, UpdateChunk, UpdateFile, parse_patch
from .text_match import seek_sequence

log = logging.getLogger("phi.tools.apply_patch")

__all__ = ["PatchApplyError", "PatchResult", "apply_patch", "derive_new_contents", "ApplyPatchTool", "main"]


class PatchApplyError(PatchError):
    """A parsed patch could not be applied to the files (missing file, context not found, ...)."""


@dataclass
class PatchResult:
    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # "A path" / "M path" / "D path", in order

    def summary(self) -> str:
        return "Success. Updated the following files:\n" + "\n".join(self.lines)


# -- computing the new contents of an updated file ----------------------------------------------

def _split_with_endings(text: str) -> list[tuple[str, str]]:
    """Lines as (content, ending) with ending in '\\r\\n', '\\n' or '' (unterminated last line)."""
    out: list[tuple[str, str]] = []
    pieces = text.split("\n")
    for piece in pieces[:-1]:
        out.append((piece[:-1], "\r\n") if piece.endswith("\r") else (piece, "\n"))
    if pieces[-1]:
        out.append((pieces[-1], ""))
    return out


def _chunk_label(index: int, chunk: UpdateChunk) -> str:
    label = f"hunk {index + 1}"
    return label + (f" (@@ {chunk.change_context})" if chunk.change_context else "")


def _replacements(lines: list[str], chunks: Sequence[UpdateChunk], path: str) -> list[tuple[int, int, list[str]]]:
    result: list[tuple[int, int, list[str]]] = []
    line_index = 0
    for number, chunk in enumerate(chunks):
        if chunk.change_context is not None:
            found = seek_sequence(lines, [chunk.change_context], line_index, False)
            if found is None:
                raise PatchApplyError(
                    f"Failed to find context '{chunk.change_context}' in {path} ({_chunk_label(number, chunk)})")
            line_index = found + 1
        if not chunk.old_lines:
            result.append((len(lines), 0, list(chunk.new_lines)))
            continue
        old, new = list(chunk.old_lines), list(chunk.new_lines)
        found = seek_sequence(lines, old, line_index, chunk.is_end_of_file)
        if found is None and old and old[-1] == "":
            old = old[:-1]
            if new and new[-1] == "":
                new = new[:-1]
            found = seek_sequence(lines, old, line_index, chunk.is_end_of_file)
        if found is None:
            raise PatchApplyError(
                f"Failed to find expected lines in {path} ({_chunk_label(number, chunk)}):\n" + "\n".join(chunk.old_lines))
        result.append((found, len(old), new))
        line_index = found + len(old)
    result.sort(key=lambda r: r[0])
    return result


def derive_new_contents(original: str, chunks: Sequence[UpdateChunk], path: str = "<file>") -> str:
    """The text of a file after applying ``chunks`` to ``original``."""
    entries = _split_with_endings(original)
    preferred = entries[0][1] if entries and entries[0][1] else "\n"
    contents = [c for c, _ in entries]
    for start, length, new in reversed(_replacements(contents, chunks, path)):
        entries[start:start + length] = [(line, preferred) for line in new]
    if entries and entries[-1][1] == "":
        entries[-1] = (entries[-1][0], preferred)
    return "".join(c + e for c, e in entries)


# -- applying hunks through an environment ----------------------------------------------------

def _check_paths(hunks: Sequence[Hunk], env: ExecutionEnvironment, roots: Sequence[str]) -> None:
    for hunk in hunks:
        targets = [hunk.path] + ([hunk.move_path] if isinstance(hunk, UpdateFile) and hunk.move_path else [])
        for target in targets:
            check_write_allowed(env.resolve_path(target), roots, what="apply_patch write")


def _read_for_update(env: ExecutionEnvironment, path: str) -> str:
    resolved = env.resolve_path(path)
    try:
        data = env.read_bytes(path)
    except OSError as exc:
        raise PatchApplyError(f"Failed to read file to update {resolved}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchApplyError(f"Failed to read file to update {resolved}: the file is not valid UTF-8") from None


def _apply_one(hunk: Hunk, env: ExecutionEnvironment, result: PatchResult) -> None:
    if isinstance(hunk, AddFile):
        try:
            env.write_file(hunk.path, hunk.contents)
        except OSError as exc:
            raise PatchApplyError(f"Failed to write file {hunk.path}: {exc.strerror or exc}") from None
        result.added.append(hunk.path)
        result.lines.append(f"A {hunk.path}")
    elif isinstance(hunk, DeleteFile):
        try:
            if env.is_dir(hunk.path):
                raise IsADirectoryError(21, "Is a directory")
            env.delete_file(hunk.path)
        except OSError as exc:
            raise PatchApplyError(f"Failed to delete file {hunk.path}: {exc.strerror or exc}") from None
        result.deleted.append(hunk.path)
        result.lines.append(f"D {hunk.path}")
    else:
        original = _read_for_update(env, hunk.path)
        new_text = derive_new_contents(original, hunk.chunks, env.resolve_path(hunk.path))
        destination = hunk.move_path or hunk.path
        try:
            env.write_file(destination, new_text)
            if hunk.move_path and env.resolve_path(hunk.move_path) != env.resolve_path(hunk.path):
                env.delete_file(hunk.path)
        except OSError as exc:
            raise PatchApplyError(f"Failed to write file {destination}: {exc.strerror or exc}") from None
        result.modified.append(destination)
        result.lines.append(f"M {destination}")


def apply_patch(
    patch: str,
    env: ExecutionEnvironment,
    allowed_roots: Sequence[str] | None = None,
    ctx: ToolContext | None = None,
) -> PatchResult:
    """Parse and apply ``patch`` in ``env``. Raises PatchParseError / PatchApplyError / ToolError.

    ``allowed_roots=None`` uses ``env.allowed_write_roots``. Operations that succeeded before a
    failure stay applied (as in codex); the error names the file and the hunk that failed.
    """
    hunks = parse_patch(patch)
    if not hunks:
        raise PatchApplyError("No files were modified.")
    roots = list(allowed_roots) if allowed_roots is not None else list(env.allowed_write_roots)
    _check_paths(hunks, env, roots)
    result = PatchResult()
    for hunk in hunks:
        if ctx is not None and ctx.cancelled:
            raise ToolCancelled()
        try:
            _apply_one(hunk, env, result)
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

    env: Any = None
    allowed_roots: Sequence[str] | None = None
    name: str = "apply_patch"
    label: str = "Apply patch"
    description: str = (
        "Apply code changes using the patch format. Supports creating, deleting, and modifying files "
        "in a single operation. The patch starts with '*** Begin Patch' and ends with '*** End Patch'; "
        "each file operation is '*** Add File: <path>' (lines prefixed with '+'), '*** Delete File: <path>' "
        "or '*** Update File: <path>' (optionally followed by '*** Move to: <new path>') with '@@' chunks "
        "of ' ' context, '-' removed and '+' added lines. Paths are relative to the working directory."
    )
    parameters: dict = field(default_factory=lambda: {
        "type": "object",
        "properties": {"patch": {"type": "string", "description": "The patch content in v4a format."}},
        "required": ["patch"],
        "additionalProperties": False,
    })

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        from ._common import finish, get_env

        if ctx.cancelled:
            raise ToolCancelled()
        env = get_env(self.env)
        result = apply_patch(args["patch"], env, self.allowed_roots, ctx)
        details = {"added": result.added, "modified": result.modified, "deleted": result.deleted}
        return finish(result.summary(), self.name, details)


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
