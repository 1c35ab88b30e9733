"""Helpers shared by the built-in tools (SPEC §9.3, §9.4): environment lookup, cancellation checks,
path resolution and OS-error translation, line numbering and the final truncate-and-wrap step."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import ToolCancelled, ToolError
from ..loop.tool import ToolContext
from ..types import ToolResult
from .fs_safe import (
    ConfinementError,
    FileTooLargeError,
    NotRegularFileError,
    check_path_text,
)
from .full_output import FULL_OUTPUT_MAX_CHARS, Piece, pieces_error, pieces_size, save_full_output
from .paths import check_write_allowed
from .tool_session import ToolSession, tool_session
from .truncation import Omitted, Part, clip, render, tool_limits

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment

__all__ = ["FULL_OUTPUT_MAX_CHARS", "finish", "keep_full_output_in", "get_env", "check_cancel", "os_error", "resolve",
           "write_roots", "check_writable", "object_schema", "number_lines", "display_path"]


def get_env(env: ExecutionEnvironment | None) -> ExecutionEnvironment:
    """The tool's environment, or a LocalExecutionEnvironment on the current directory."""
    if env is not None:
        return env
    from .environment import LocalExecutionEnvironment

    return LocalExecutionEnvironment()


def check_cancel(ctx: ToolContext) -> None:
    """Raise ToolCancelled when the call was cancelled (checked before every I/O step)."""
    if ctx.cancelled:
        raise ToolCancelled()


def os_error(exc: OSError, path: str) -> ToolError:
    """A clear ToolError for a failed file operation on ``path``."""
    if isinstance(exc, ConfinementError):
        return ToolError(f"Write to {path} {exc.strerror}. Use a path inside the allowed directories.")
    if isinstance(exc, NotRegularFileError):
        return ToolError(f"{path} is {_in_parentheses(exc)}, not a regular file; "
                         "only regular files can be read or written.")
    if isinstance(exc, FileTooLargeError):
        return ToolError(f"File too large: {path} is {_in_parentheses(exc)}.")
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"File not found: {path}")
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{path} is a directory, not a file")
    if isinstance(exc, NotADirectoryError):
        return ToolError(f"Not a directory: {path}")
    if isinstance(exc, PermissionError):
        reason = exc.strerror if exc.strerror and exc.strerror != "Permission denied" else ""
        return ToolError(f"Permission denied: {path}" + (f" ({reason})" if reason else ""))
    return ToolError(f"Cannot access {path}: {exc.strerror or exc}")


def _in_parentheses(exc: OSError) -> str:
    """The part of fs_safe's message in parentheses: "a FIFO", "12 bytes; the limit is 10 bytes"."""
    return (exc.strerror or "").split("(", 1)[-1].rstrip(")")


def resolve(env: ExecutionEnvironment, path: str) -> tuple[str, str]:
    """(absolute path, path as shown to the model); a path no system call could take is a ToolError."""
    resolved = env.resolve_path(path)
    try:
        check_path_text(resolved)
    except OSError as exc:
        raise ToolError(f"Invalid path {path[:200]!r}: {exc.strerror}") from None
    return resolved, display_path(env, resolved)


def write_roots(env: ExecutionEnvironment, allowed_roots: Sequence[str] | None) -> list[str]:
    """The roots a write is confined to: the tool's own, else the environment's."""
    return list(allowed_roots) if allowed_roots is not None else list(env.allowed_write_roots)


def check_writable(env: ExecutionEnvironment, path: str, allowed_roots: Sequence[str] | None) -> str:
    """Resolve ``path`` in ``env`` and refuse it unless it is inside the allowed roots.

    This is the early check with a helpful message; the write itself is confined again by the
    environment (``env.write_file(..., roots=...)``), without a window between check and use.
    """
    resolved, _ = resolve(env, path)
    check_write_allowed(resolved, write_roots(env, allowed_roots))
    return resolved


def object_schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A tool's ``parameters``: an object with ``properties``, no others allowed (SPEC §9.3, §9.4)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def number_lines(lines: Sequence[str], first_number: int) -> str:
    """``NNN | content`` lines, numbers right-aligned to the widest one (at least 3 wide)."""
    if not lines:
        return ""
    width = max(3, len(str(first_number + len(lines) - 1)))
    return "\n".join(f"{n:>{width}} | {line}" for n, line in enumerate(lines, first_number))


def finish(
    text: str | Sequence[Part],
    tool_name: str,
    details: Mapping[str, object] | None = None,
    max_chars: int | None = None,
    max_lines: int | None = None,
    keep_full_output: bool = True,
    *,
    session: ToolSession | None = None,
    full: Sequence[Piece] | None = None,
) -> ToolResult:
    """Truncate ``text`` for the model (SPEC §9.2) and wrap it with ``details``.

    ``text`` may carry holes (:class:`~phi.tools.truncation.Omitted`); ``full`` is then the complete
    output (text and recorded streams, :mod:`phi.tools.full_output`). When the model's text is cut
    (here or by a hole), ``details["truncated_output"]`` is True and, with ``keep_full_output``, the
    complete output is kept: in ``details["full_output"]`` up to :data:`FULL_OUTPUT_MAX_CHARS`
    characters, else in a file of the tool session named by ``details["full_output_path"]`` (see
    :func:`keep_full_output`); the markers then name that file.
    """
    parts = [text] if isinstance(text, str) else list(text)
    chars, lines, mode = tool_limits(tool_name, {tool_name: max_chars} if max_chars is not None else None,
                                     {tool_name: max_lines} if max_lines is not None else None)
    shown = clip(parts, chars, lines, mode)
    out: dict[str, object] = dict(details or {})
    holes = any(isinstance(p, Omitted) for p in parts)
    saved_to = None
    if shown != parts or holes:
        out["truncated_output"] = True
        complete = full if full is not None else (None if holes else parts)
        if keep_full_output and complete is not None:
            saved_to = keep_full_output_in(out, tool_name, [p for p in complete if not isinstance(p, Omitted)],
                                           session)
    return ToolResult.from_text(render(shown, saved_to), out)


def keep_full_output_in(details: dict[str, object], tool_name: str, pieces: Sequence[Piece],
                        session: ToolSession | None) -> str | None:
    """Put the complete output ``pieces`` into ``details``: as ``full_output`` when it is at most
    :data:`FULL_OUTPUT_MAX_CHARS` characters, else saved to a file of ``session`` (``full_output_path``,
    ``full_output_bytes``, ``full_output_lines``). Returns the file's path, if one was written."""
    error = pieces_error(pieces)
    if error is not None:
        details["full_output_error"] = f"the full output could not be kept: {error}"
        return None
    size, in_file = pieces_size(pieces)
    if size <= FULL_OUTPUT_MAX_CHARS and not in_file:
        details["full_output"] = "".join(p if isinstance(p, str) else p.text() for p in pieces)
        return None
    try:
        path, size, newlines = save_full_output(tool_session(session), tool_name, pieces)
    except (OSError, RuntimeError) as exc:  # no room, or the session is closing: the model text still goes
        details["full_output_error"] = f"the full output could not be saved: {exc}"
        return None
    details.update(full_output_path=path, full_output_bytes=size, full_output_lines=newlines)
    return path


def display_path(env: ExecutionEnvironment, resolved: str) -> str:
    """``resolved`` relative to the working directory when it lies inside it, else absolute."""
    cwd = env.working_directory()
    prefix = cwd.rstrip("/") + "/"
    if resolved.startswith(prefix) and "/../" not in resolved and "/./" not in resolved:
        return resolved[len(prefix):] or "."  # the common case, without relpath's cost
    try:
        rel = os.path.relpath(resolved, cwd)
    except ValueError:
        return resolved
    return resolved if rel.startswith("..") else rel
