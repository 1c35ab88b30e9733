"""Helpers shared by the built-in tools (SPEC §9.3, §9.4): environment lookup, cancellation checks,
OS-error translation, line numbering and the final truncate-and-wrap step."""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from ..agent_tool import ToolContext
from ..errors import ToolCancelled, ToolError
from ..types import ToolResult
from .paths import check_write_allowed
from .truncation import truncate_tool_output


def get_env(env: Any) -> Any:
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


def check_writable(env: Any, path: str, allowed_roots: Sequence[str] | None) -> str:
    """Resolve ``path`` in ``env`` and refuse it unless it is inside the allowed roots."""
    resolved = env.resolve_path(path)
    roots = list(allowed_roots) if allowed_roots is not None else list(env.allowed_write_roots)
    check_write_allowed(resolved, roots)
    return resolved


def number_lines(lines: Sequence[str], first_number: int) -> str:
    """``NNN | content`` lines, numbers right-aligned to the widest one (at least 3 wide)."""
    if not lines:
        return ""
    width = max(3, len(str(first_number + len(lines) - 1)))
    return "\n".join(f"{n:>{width}} | {line}" for n, line in enumerate(lines, first_number))


def finish(
    text: str,
    tool_name: str,
    details: dict[str, Any] | None = None,
    max_chars: int | None = None,
    max_lines: int | None = None,
    keep_full_output: bool = True,
) -> ToolResult:
    """Truncate ``text`` for the model (SPEC §9.2) and wrap it with ``details``.

    When truncation happened, ``details["truncated_output"]`` is True and, with
    ``keep_full_output``, ``details["full_output"]`` holds the untruncated text for the application.
    """
    limits: Mapping[str, int] | None = {tool_name: max_chars} if max_chars is not None else None
    line_limits: Mapping[str, int | None] | None = {tool_name: max_lines} if max_lines is not None else None
    shown = truncate_tool_output(text, tool_name, limits, line_limits)
    details = dict(details or {})
    if shown != text:
        details["truncated_output"] = True
        if keep_full_output:
            details["full_output"] = text
    return ToolResult.text(shown, details)


def display_path(env: Any, resolved: str) -> str:
    """``resolved`` relative to the working directory when it lies inside it, else absolute."""
    cwd = env.working_directory()
    try:
        rel = os.path.relpath(resolved, cwd)
    except ValueError:
        return resolved
    return resolved if rel.startswith("..") else rel
