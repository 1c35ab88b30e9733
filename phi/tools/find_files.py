"""Finding and listing files: phi-core ``list_files`` and the coding layer's ``glob`` and
``list_dir`` (SPEC §9.3, §9.4; REQ-051/105/137).

* ``list_files`` runs ``find`` through the environment (so it honours the environment's timeout,
  default 10 s, and cancellation), prunes ``.git``, ``node_modules`` and ``target``, and stops at
  ``max_results`` (200) with a note saying how many more there were.
* ``glob`` matches a glob pattern (``**`` recursive, never through symlinked directories, so a
  symlink loop cannot stall it) and lists files newest first.
* ``list_dir`` shows a directory tree down to ``depth`` levels with file sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolCancelled, ToolError
from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import check_cancel, display_path, finish, get_env, os_error, resolve
from .environment import quote_command

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


def _require_dir(env: Any, path: str) -> str:
    _, shown = resolve(env, path)
    if not env.file_exists(path):
        raise ToolError(f"Directory not found: {shown}")
    if not env.is_dir(path):
        raise ToolError(f"Not a directory: {shown}")
    return shown


@dataclass
class ListFilesTool:
    """phi-core's ``list_files`` tool: ``path``, ``pattern``, ``max_depth``."""

    env: Any = None
    max_results: int = 200
    timeout_ms: int = 10_000
    name: str = "list_files"
    label: str = "List files"
    description: str = (
        "List files under a directory (recursively, skipping .git, node_modules and target). "
        "Optionally filter by a file-name glob such as '*.py' and limit the depth."
    )
    parameters: dict = field(default_factory=lambda: {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory to list (default: working directory)."},
            "pattern": {"type": "string", "description": "File-name glob, e.g. '*.md'."},
            "max_depth": {"type": "integer", "minimum": 1, "description": "How many directory levels to descend."},
        },
        "additionalProperties": False,
    })

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        check_cancel(ctx)
        env = get_env(self.env)
        path = args.get("path") or "."
        shown = _require_dir(env, path)
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
            raise ToolError(f"Listing {shown} failed: {result.stderr.strip() or 'find exited with ' + str(result.exit_code)}")
        files = sorted(line[2:] if line.startswith("./") else line for line in result.stdout.splitlines() if line)
        total = len(files)
        truncated = total > self.max_results
        shown_files = files[: self.max_results]
        if not files:
            text = f"No files found in {shown}" + (f" matching {args['pattern']!r}" if args.get("pattern") else "")
        else:
            text = "\n".join(shown_files)
            if truncated:
                text += f"\n... ({total - self.max_results} more files not shown; narrow the path or pattern)"
        return finish(text, self.name, {"total": total, "truncated": truncated})


@dataclass
class GlobTool:
    """The coding layer's ``glob`` tool (seed 004 §3.3): files matching a pattern, newest first."""

    env: Any = None
    max_results: int = 1000
    name: str = "glob"
    label: str = "Glob"
    description: str = "Find files matching a glob pattern (e.g. '**/*.ts'), newest first."
    parameters: dict = field(default_factory=lambda: {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern, e.g. '**/*.ts'."},
            "path": {"type": "string", "description": "Base directory (default: working dir)."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    })

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        check_cancel(ctx)
        env = get_env(self.env)
        path = args.get("path") or "."
        shown = _require_dir(env, path)
        try:
            matches = env.glob(args["pattern"], path, cancel=ctx.cancel)
        except OSError as exc:
            raise os_error(exc, shown) from None
        except ValueError as exc:
            raise ToolError(f"Invalid glob pattern {args['pattern']!r}: {exc}") from None
        check_cancel(ctx)
        total = len(matches)
        truncated = total > self.max_results
        if not matches:
            return finish(f"No files matching {args['pattern']!r} in {shown}", self.name, {"total": 0, "truncated": False})
        text = "\n".join(display_path(env, m) for m in matches[: self.max_results])
        if truncated:
            text += f"\n... ({total - self.max_results} more files not shown)"
        return finish(text, self.name, {"total": total, "truncated": truncated})


def _human_size(size: int | None) -> str:
    if size is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return str(size)  # pragma: no cover


@dataclass
class ListDirTool:
    """The coding layer's ``list_dir`` tool (seed 004 §3.6): a directory tree down to ``depth``."""

    env: Any = None
    max_entries: int = 1000
    name: str = "list_dir"
    label: str = "List directory"
    description: str = "List the entries of a directory, optionally several levels deep, with file sizes."
    parameters: dict = field(default_factory=lambda: {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory to list (default: working dir)."},
            "depth": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1,
                      "description": "How many levels to show (1 = only the directory's own entries)."},
        },
        "additionalProperties": False,
    })

    def execute(self, args: dict, ctx: ToolContext) -> ToolResult:
        check_cancel(ctx)
        env = get_env(self.env)
        path = args.get("path") or "."
        shown = _require_dir(env, path)
        try:
            entries = env.list_directory(path, int(args.get("depth") or 1))
        except OSError as exc:
            raise os_error(exc, shown) from None
        check_cancel(ctx)
        truncated = len(entries) > self.max_entries
        lines = [f"{shown}/"]
        for entry in entries[: self.max_entries]:
            indent = "  " * (entry.path.count("/") + 1)
            lines.append(f"{indent}{entry.name}/" if entry.is_dir else f"{indent}{entry.name} ({_human_size(entry.size)})")
        if truncated:
            lines.append(f"... ({len(entries) - self.max_entries} more entries not shown)")
        if not entries:
            lines.append("  (empty)")
        return finish("\n".join(lines), self.name, {"entries": len(entries), "truncated": truncated})
