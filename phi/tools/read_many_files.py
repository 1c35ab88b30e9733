"""``read_many_files`` — several files (or glob patterns) in one call (SPEC §9.4; seed 004 §3.6).

Each entry of ``paths`` is a file path or a glob pattern (``*``, ``?``, ``[``); matches are read as
text and concatenated under ``--- path ---`` separators. Binary files, images, directories, FIFOs and
devices, files over the per-file size limit and patterns that cannot be searched (invalid, or
visiting too many entries) are listed as skipped instead of failing the whole call; a call where
nothing could be read is an error. Globs never follow symlinked directories under ``**``
(:mod:`phi.tools.globbing`), so a symlink loop cannot stall the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import check_cancel, display_path, finish, get_env, object_schema, resolve
from .read_file import IMAGE_MIME_TYPES, read_text_slice
from .tool_session import ToolSession, tool_session

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment

_GLOB_CHARS = set("*?[")


def expand_paths(env: ExecutionEnvironment, entries: list[str], max_files: int,
                 ctx: ToolContext) -> tuple[list[str], list[str]]:
    """(resolved, de-duplicated file paths for ``entries`` with globs expanded — at most
    ``max_files`` —, entries that could not be expanded with the reason)."""
    seen: dict[str, None] = {}
    problems: list[str] = []
    for entry in entries:
        check_cancel(ctx)
        try:
            if _GLOB_CHARS & set(entry):
                found = sorted(env.glob(entry, None, cancel=ctx.cancel))
            else:
                found = [resolve(env, entry)[0]]
        except (OSError, ValueError, ToolError) as exc:
            problems.append(f"{entry[:200]!r} ({getattr(exc, 'strerror', None) or exc})")
            continue
        for path in found:
            seen.setdefault(path, None)
            if len(seen) >= max_files:
                return list(seen), problems
    return list(seen), problems


@dataclass
class ReadManyFilesTool:
    """The ``read_many_files`` tool (SPEC §9.4): several files or glob matches in one call, each under a
    ``--- path ---`` header, with what could not be read listed as skipped. At most ``max_files``
    files, ``max_bytes_per_file`` each and about ``max_total_bytes`` in all."""

    env: ExecutionEnvironment | None = None
    max_files: int = 50
    max_bytes_per_file: int = 1024 * 1024
    max_total_bytes: int = 4 * 1024 * 1024
    session: ToolSession | None = None
    name: str = "read_many_files"
    label: str = "Read files"
    description: str = (
        "Read several text files at once. Each entry of paths is a file path or a glob pattern such as "
        "'src/**/*.py'. Contents are returned one after another under '--- path ---' headers."
    )
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "paths": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                  "description": "File paths or glob patterns."},
    }, ["paths"]))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        check_cancel(ctx)
        env = get_env(self.env)
        paths, skipped = expand_paths(env, list(args["paths"]), self.max_files, ctx)
        parts: list[str] = []
        read: list[str] = []
        budget = self.max_total_bytes
        for path in paths:
            check_cancel(ctx)
            shown = display_path(env, path)
            if budget <= 0:
                skipped.append(f"{shown} (not read: {self.max_total_bytes} bytes were already read; "
                               "read it separately)")
                continue
            if path.lower().endswith(tuple(IMAGE_MIME_TYPES)):
                skipped.append(f"{shown} (image; use read_file)")
                continue
            try:
                part = read_text_slice(env, path, None, None, ctx, self.max_bytes_per_file)
            except ToolError as exc:
                if ctx.cancelled:
                    raise
                skipped.append(f"{shown} ({exc})")
                continue
            if part.stamp is not None:
                tool_session(self.session).files.note(path, part.stamp)
            parts.append(f"--- {shown} ---\n" + "\n".join(part.lines))
            budget -= sum(len(line) for line in part.lines) + len(part.lines)
            read.append(shown)
        if not read:
            reason = "; ".join(skipped) if skipped else "no file matched"
            raise ToolError(f"No files could be read: {reason}")
        text = "\n\n".join(parts)
        if skipped:
            text += "\n\n[Skipped: " + "; ".join(skipped) + "]"
        if len(paths) >= self.max_files:
            text += f"\n[Stopped at {self.max_files} files; use narrower patterns to see others]"
        return finish(text, self.name, {"files": read, "skipped": skipped}, session=self.session)
