"""Content search: phi-core ``search`` and the coding layer's ``grep`` (SPEC §9.3, §9.4;
REQ-052/106).

They stay two tools because their arguments differ in meaning, not only in name: ``search`` has a
fixed result cap and ``case_sensitive``; ``grep`` takes ``max_results`` and an ``output_mode`` per
call. Both call the environment's ``grep`` (ripgrep when installed, else ``grep -r``; ``backend`` forces
one) and return ``path:line:text`` lines, paths relative to the searched directory. Cancellation is
checked before the search and interrupts it (the search process group is killed). An invalid
regular expression, a missing path or a FIFO/device is a ToolError; no match is a normal, non-error
result. Result lines are always whole ``path:line:text`` lines, however many matches there are; a
path with a newline, another control character, a backslash or a double quote is shown quoted
(:func:`phi.tools.listing.quote_path`), so one result is always one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import check_cancel, finish, get_env, object_schema, os_error, resolve
from .search_backend import OUTPUT_MODES, GrepOptions, SearchError
from .tool_session import ToolSession

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment


def run_grep(env: ExecutionEnvironment, pattern: str, path: str, options: GrepOptions,
             ctx: ToolContext) -> tuple[list[str], bool]:
    """Search and return (lines, truncated); at most ``options.max_results`` lines."""
    check_cancel(ctx)
    _, shown = resolve(env, path)
    limit = options.max_results
    options.max_results = limit + 1
    try:
        output = env.grep(pattern, path, options, cancel=ctx.cancel)
    except SearchError as exc:
        check_cancel(ctx)
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise os_error(exc, shown) from None
    check_cancel(ctx)
    lines = output.split("\n") if output else []
    return lines[:limit], len(lines) > limit


def matches_result(tool_name: str, lines: list[str], truncated: bool, limit: int, *, no_match: str,
                   more: str, details: dict[str, object] | None = None,
                   session: ToolSession | None = None) -> ToolResult:
    """The result of a search: ``no_match`` when nothing matched, else the lines, with the ``more``
    note when ``limit`` cut them; the line limit lets every result line and the note through. When
    the lines exceed the tool's character limit, the first ones are kept (SPEC §9.2)."""
    if not lines:
        return finish(no_match, tool_name, {"matches": 0, "truncated": False}, session=session)
    text = "\n".join(lines) + (f"\n{more}" if truncated else "")
    return finish(text, tool_name, {"matches": len(lines), "truncated": truncated, **(details or {})},
                  max_lines=limit + 1, session=session)


@dataclass
class SearchTool:
    """phi-core's ``search`` tool: ``pattern``, ``path``, ``include``, ``case_sensitive``."""

    env: ExecutionEnvironment | None = None
    max_results: int = 200
    backend: str = "auto"
    timeout_ms: int = 30_000
    session: ToolSession | None = None
    name: str = "search"
    label: str = "Search"
    description: str = (
        "Search file contents for a regular expression (ripgrep syntax when available). Returns "
        "matching lines as path:line:text. Use include to limit the files searched, e.g. '*.py'."
    )
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "pattern": {"type": "string", "minLength": 1, "description": "Regular expression to search for."},
        "path": {"type": "string", "description": "File or directory to search (default: working directory)."},
        "include": {"type": "string", "description": "Glob of files to search, e.g. '*.rs'."},
        "case_sensitive": {"type": "boolean", "default": True, "description": "Match case (default true)."},
    }, ["pattern"]))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        env = get_env(self.env)
        path = args.get("path") or "."
        options = GrepOptions(glob_filter=args.get("include") or None,
                              case_insensitive=not args.get("case_sensitive", True),
                              max_results=self.max_results, backend=self.backend, timeout_ms=self.timeout_ms)
        lines, truncated = run_grep(env, args["pattern"], path, options, ctx)
        return matches_result(
            self.name, lines, truncated, self.max_results,
            no_match=f"No matches found for {args['pattern']!r} in {path}",
            more=f"... (results truncated at {self.max_results} matches; narrow the pattern or path)",
            session=self.session)


@dataclass
class GrepTool:
    """The coding layer's ``grep`` tool (seed 004 §3.3, ripgrep semantics)."""

    env: ExecutionEnvironment | None = None
    default_max_results: int = 100
    backend: str = "auto"
    timeout_ms: int = 30_000
    session: ToolSession | None = None
    name: str = "grep"
    label: str = "Grep"
    description: str = "Search file contents using regex patterns."
    parameters: dict[str, Any] = field(default_factory=lambda: object_schema({
        "pattern": {"type": "string", "minLength": 1, "description": "Regex pattern."},
        "path": {"type": "string", "description": "Directory or file to search (default: working dir)."},
        "glob_filter": {"type": "string", "description": "File pattern filter, e.g. '*.py'."},
        "case_insensitive": {"type": "boolean", "default": False},
        "max_results": {"type": "integer", "minimum": 1, "default": 100},
        "output_mode": {"type": "string", "enum": list(OUTPUT_MODES), "default": "content",
                        "description": "content (matching lines), files_with_matches (paths) or count."},
    }, ["pattern"]))

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        env = get_env(self.env)
        path = args.get("path") or "."
        limit = int(args.get("max_results") or self.default_max_results)
        options = GrepOptions(glob_filter=args.get("glob_filter") or None,
                              case_insensitive=bool(args.get("case_insensitive", False)), max_results=limit,
                              output_mode=args.get("output_mode") or "content", backend=self.backend,
                              timeout_ms=self.timeout_ms)
        lines, truncated = run_grep(env, args["pattern"], path, options, ctx)
        shown = resolve(env, path)[1]
        return matches_result(self.name, lines, truncated, limit, no_match=f"No matches found in {shown}",
                              more=f"[results limited to {limit}; raise max_results or narrow the search]",
                              details={"path": shown}, session=self.session)


__all__ = ["SearchTool", "GrepTool", "run_grep", "matches_result"]
