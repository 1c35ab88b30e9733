"""Finding and listing files: phi-core ``list_files`` and the coding layer's ``glob`` and
``list_dir`` (SPEC §9.3, §9.4; REQ-051/105/137).

* ``list_files`` runs ``find`` through the environment (so it honours the environment's timeout,
  default 10 s, and cancellation), prunes ``.git``, ``node_modules`` and ``target``, and stops at
  ``max_results`` (200) with a note saying how many more there were.
* ``glob`` matches a glob pattern (``**`` recursive, never through symlinked directories, so a
  symlink loop cannot stall it) and lists files newest first.
* ``list_dir`` shows a directory tree down to ``depth`` levels with file sizes.

A listing longer than the tool's limits keeps its first entries — the newest files, the top of the
tree — and ends with a note saying exactly how many were left out (SPEC §9.2). Paths are shown one
a line, quoted when a name holds a newline or another special character (:mod:`phi.tools.listing`).

Three tools, not one with three wordings: each finds its entries its own way (``find``, a glob
walk, a directory listing) and reports them in its own form. What they share — the directory
check and the "N more not shown" cut — are the helpers below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..errors import ToolCancelled, ToolError
from ..json_values import is_object
from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import (
    check_cancel,
    display_path,
    finish,
    get_env,
    keep_full_output_in,
    object_schema,
    os_error,
    resolve,
)
from .environment import quote_command
from .listing import fitting, quote_path
from .tool_session import ToolSession
from .truncation import tool_limits

if TYPE_CHECKING:
    from .environment import DirEntry, ExecutionEnvironment

PRUNED_DIRS = (".git", "node_modules", "target")


def find_command(max_depth: int | None, pattern: str | None) -> str:
    argv = ["find", "."]
    if max_depth is not None:
        argv += ["-maxdepth", str(max_depth)]
    argv.append("(")
    for i, name in enumerate(PRUNED_DIRS):
        argv += (["-o"] if i else []) + ["-name", name]
    argv += [")", "-prune", "-o", "-type", "f"]
    if pattern:
        argv += ["-name", pattern]
    argv.append("-print")
    return quote_command(argv)


def _directory_argument(env: ExecutionEnvironment | None, args: dict[str, Any],
                        ctx: ToolContext) -> tuple[ExecutionEnvironment, str, str]:
    """(environment, ``path`` argument, path as shown) once ``path`` (default ".") is known to be a
    directory."""
    check_cancel(ctx)
    env = get_env(env)
    path = args.get("path") or "."
    _, shown = resolve(env, path)
    if not env.file_exists(path):
        raise ToolError(f"Directory not found: {shown}")
    if not env.is_dir(path):
        raise ToolError(f"Not a directory: {shown}")
    return env, path, shown


def _file_list(tool_name: str, files: list[str], limit: int, *, none_found: str, hint: str = "",
               show: Callable[[str], str] | None = None, session: ToolSession | None = None) -> ToolResult:
    """``files`` one a line (through ``show``, then quoted if need be): the first ones, at most
    ``limit`` and as many as the tool's limits allow, then a note on how many were left out."""
    total = len(files)
    if not files:
        return finish(none_found, tool_name, {"total": 0, "truncated": False}, session=session)
    every = [quote_path(show(f) if show is not None else f) for f in files]
    lines = every[:limit]
    chars, max_lines, _ = tool_limits(tool_name)
    shown = fitting(lines, chars, max_lines)
    text = "\n".join(lines[:shown])
    if shown < total:
        text += f"\n... ({total - shown} more files not shown{hint})"
    details = {"total": total, "shown": shown, "truncated": shown < total}
    result = finish(text, tool_name, details, session=session)
    if shown < total:  # the application gets the whole listing
        full = "\n".join(every)
        if is_object(result.details):
            keep_full_output_in(result.details, tool_name, [full], session)
            result.details["truncated_output"] = True
    return result


@dataclass
class ListFilesTool:
    """phi-core's ``list_files`` tool: ``path``, ``pattern``, ``max_depth``."""

    env: ExecutionEnvironment | None = None
    max_results: int = 200
    timeout_ms: int = 10_000
    session: ToolSession | None = None
    name: str = "list_files"
    label: str = "List files"
    description: str = (
        "List files under a directory (recursively, skipping .git, node_modules and target). "
        "Optionally filter by a file-name glob such as '*.py' and limit the depth."
    )
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "path": {"type": "string", "description": "Directory to list (default: working directory)."},
        "pattern": {"type": "string", "description": "File-name glob, e.g. '*.md'."},
        "max_depth": {"type": "integer", "minimum": 1, "description": "How many directory levels to descend."},
    }))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        env, path, shown = _directory_argument(self.env, args, ctx)
        try:
            result = env.exec_command(find_command(args.get("max_depth"), args.get("pattern")), self.timeout_ms,
                                      path, None, cancel=ctx.cancel)
        except OSError as exc:
            raise os_error(exc, shown) from None
        if result.cancelled:
            raise ToolCancelled()
        if result.timed_out:
            raise ToolError(f"Listing {shown} timed out after {self.timeout_ms // 1000}s; "
                            "use a narrower path, pattern or max_depth.")
        if result.exit_code != 0 and not result.stdout:
            reason = result.stderr.strip() or f"find exited with {result.exit_code}"
            raise ToolError(f"Listing {shown} failed: {reason}")
        files = sorted(line[2:] if line.startswith("./") else line for line in result.stdout.splitlines() if line)
        matching = f" matching {args['pattern']!r}" if args.get("pattern") else ""
        return _file_list(self.name, files, self.max_results, none_found=f"No files found in {shown}{matching}",
                          hint="; narrow the path or pattern", session=self.session)


@dataclass
class GlobTool:
    """The coding layer's ``glob`` tool (seed 004 §3.3): files matching a pattern, newest first."""

    env: ExecutionEnvironment | None = None
    max_results: int = 1000
    session: ToolSession | None = None
    name: str = "glob"
    label: str = "Glob"
    description: str = "Find files matching a glob pattern (e.g. '**/*.ts'), newest first."
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern, e.g. '**/*.ts'."},
        "path": {"type": "string", "description": "Base directory (default: working dir)."},
    }, ["pattern"]))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        env, path, shown = _directory_argument(self.env, args, ctx)
        try:
            matches = env.glob(args["pattern"], path, cancel=ctx.cancel)
        except OSError as exc:
            raise os_error(exc, shown) from None
        except ValueError as exc:
            raise ToolError(f"Invalid glob pattern {args['pattern']!r}: {exc}") from None
        check_cancel(ctx)
        return _file_list(self.name, matches, self.max_results,
                          none_found=f"No files matching {args['pattern']!r} in {shown}",
                          show=lambda match: display_path(env, match), session=self.session)


def _human_size(size: int | None) -> str:
    if size is None:
        return "?"
    if size < 1024:
        return f"{size} B"
    scaled = size / 1024
    for unit in ("KB", "MB"):
        if scaled < 1024:
            return f"{scaled:.1f} {unit}"
        scaled /= 1024
    return f"{scaled:.1f} GB"


def _tree_row(entry: DirEntry) -> str:
    indent = "  " * (entry.path.count("/") + 1)
    name = quote_path(entry.name)
    return f"{indent}{name}/" if entry.is_dir else f"{indent}{name} ({_human_size(entry.size)})"


@dataclass
class ListDirTool:
    """The coding layer's ``list_dir`` tool (seed 004 §3.6): a directory tree down to ``depth``."""

    env: ExecutionEnvironment | None = None
    max_entries: int = 1000
    session: ToolSession | None = None
    name: str = "list_dir"
    label: str = "List directory"
    description: str = "List the entries of a directory, optionally several levels deep, with file sizes."
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "path": {"type": "string", "description": "Directory to list (default: working dir)."},
        "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1,
                  "description": "How many levels to show (1 = only the directory's own entries)."},
    }))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        env, path, shown = _directory_argument(self.env, args, ctx)
        try:
            entries = env.list_directory(path, int(args.get("depth") or 1))
        except OSError as exc:
            raise os_error(exc, shown) from None
        check_cancel(ctx)
        rows = [_tree_row(entry) for entry in entries[: self.max_entries]]
        chars, max_lines, _ = tool_limits(self.name)
        count = fitting(rows, chars - len(shown) - 2, max_lines, reserve_lines=2)
        lines = [f"{quote_path(shown)}/", *rows[:count]]
        if count < len(entries):
            lines.append(f"... ({len(entries) - count} more entries not shown; list a subdirectory or use a "
                         "smaller depth)")
        if not entries:
            lines.append("  (empty)")
        return finish("\n".join(lines), self.name, {"entries": len(entries), "shown": count,
                                                    "truncated": count < len(entries)}, session=self.session)
