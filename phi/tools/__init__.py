"""SPEC §9 — built-in tools: the execution environment, truncation, the six phi-core tools and the
coding-layer tools.

Importing this package is cheap: tool classes are loaded on first attribute access (PEP 562), and
nothing here imports ``requests``, ``jsonschema`` or ``yaml``.

* :func:`default_tools` — phi-core's six tools: ``bash``, ``read_file``, ``write_file``,
  ``edit_file``, ``list_files``, ``search`` (SPEC §9.3).
* :func:`coding_tools` — the coding layer's tools of seed 004 §3.3-3.6: ``read_file``,
  ``write_file``, ``edit_file``, ``shell``, ``grep``, ``glob``, ``list_dir``, ``read_many_files``,
  ``apply_patch`` (SPEC §9.4, §9.5). Provider profiles pick from these.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..lazy_exports import export_names, lazy_exports

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".environment": ("DirEntry", "ExecResult", "ExecutionEnvironment", "GrepOptions", "LocalExecutionEnvironment",
                     "LoggingEnvironment", "ReadOnlyEnvironment", "filter_environment"),
    ".truncation": ("truncate_lines", "truncate_output", "truncate_tool_output"),
    ".shell": ("BashTool", "ShellTool"),
    ".deny": ("DEFAULT_DENY_PATTERNS",),
    ".read_file": ("CodingReadFileTool", "ReadFileTool"),
    ".write_file": ("CodingWriteFileTool", "WriteFileTool"),
    ".edit_file": ("CodingEditFileTool", "EditFileTool"),
    ".search": ("GrepTool", "SearchTool"),
    ".find_files": ("GlobTool", "ListDirTool", "ListFilesTool"),
    ".read_many_files": ("ReadManyFilesTool",),
    ".apply_patch": ("ApplyPatchTool", "apply_patch"),
    ".patch_parser": ("PatchError", "PatchParseError", "parse_patch"),
    ".function_tool": ("tool",),
    ".tool_session": ("ToolSession",),
}

__all__ = sorted(  # pyright: ignore[reportUnsupportedDunderAll]  # one list (_EXPORTS); checkers see the `as` imports
    [*export_names(_EXPORTS), "default_tools", "coding_tools"])
__getattr__, _dir = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(_dir()) | {"default_tools", "coding_tools"})


class _ToolsPackage(types.ModuleType):
    """``phi.tools`` itself. Loading a submodule makes the import system set it as a package
    attribute, which would shadow an export of the same name (``apply_patch`` the function vs
    ``phi.tools.apply_patch`` the module) depending on import order: such an export wins."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS.get(f".{name}", ()) and isinstance(value, types.ModuleType) \
                and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ToolsPackage


def _given(**options: object) -> dict[str, Any]:
    """The options given (not None); a tool keeps its own default for the others."""
    return {name: value for name, value in options.items() if value is not None}


def default_tools(
    env: ExecutionEnvironment | None = None,
    *,
    deny_patterns: Sequence[str] | None = None,
    confirm_fn: Callable[[str], bool] | None = None,
    timeout_s: int | None = None,
    allowed_roots: Sequence[str] | None = None,
    session: ToolSession | None = None,
) -> list[AgentTool]:
    """phi-core's six built-in tools on ``env`` (default: a LocalExecutionEnvironment on the cwd).

    ``deny_patterns``, ``confirm_fn`` and ``timeout_s`` go to ``bash``, ``allowed_roots`` to
    ``write_file`` and ``edit_file``; an option left out (None) keeps the tool's default. The tools
    share ``session`` (default: a new :class:`ToolSession`, read-before-write on; SPEC §9.1): the
    record of what the model read, saved outputs and background commands.
    """
    from ._common import get_env
    from .edit_file import EditFileTool
    from .find_files import ListFilesTool
    from .read_file import ReadFileTool
    from .search import SearchTool
    from .shell import BashTool
    from .tool_session import ToolSession
    from .write_file import WriteFileTool

    env = get_env(env)
    shared = session if session is not None else ToolSession()
    return [
        BashTool(env=env, session=shared,
                 **_given(deny_patterns=deny_patterns, confirm_fn=confirm_fn, timeout_s=timeout_s)),
        ReadFileTool(env=env, session=shared), WriteFileTool(env=env, allowed_roots=allowed_roots, session=shared),
        EditFileTool(env=env, allowed_roots=allowed_roots, session=shared), ListFilesTool(env=env, session=shared),
        SearchTool(env=env, session=shared),
    ]


def coding_tools(
    env: ExecutionEnvironment | None = None,
    *,
    deny_patterns: Sequence[str] | None = None,
    confirm_fn: Callable[[str], bool] | None = None,
    default_timeout_ms: int | None = None,
    max_timeout_ms: int | None = None,
    allowed_roots: Sequence[str] | None = None,
    session: ToolSession | None = None,
) -> list[AgentTool]:
    """The coding layer's tools (seed 004 §3.3-3.6) on ``env``; profiles choose among them.

    ``deny_patterns``, ``confirm_fn``, ``default_timeout_ms`` and ``max_timeout_ms`` go to
    ``shell``, ``allowed_roots`` to ``write_file``, ``edit_file`` and ``apply_patch``; an option left
    out (None) keeps the tool's default. The tools share ``session`` (default: a new
    :class:`ToolSession`, read-before-write on).
    """
    from ._common import get_env
    from .apply_patch import ApplyPatchTool
    from .edit_file import CodingEditFileTool
    from .find_files import GlobTool, ListDirTool
    from .read_file import CodingReadFileTool
    from .read_many_files import ReadManyFilesTool
    from .search import GrepTool
    from .shell import ShellTool
    from .tool_session import ToolSession
    from .write_file import CodingWriteFileTool

    env = get_env(env)
    shared = session if session is not None else ToolSession()
    shell = ShellTool(env=env, session=shared,
                      **_given(deny_patterns=deny_patterns, confirm_fn=confirm_fn,
                               default_timeout_ms=default_timeout_ms, max_timeout_ms=max_timeout_ms))
    return [
        CodingReadFileTool(env=env, session=shared),
        CodingWriteFileTool(env=env, allowed_roots=allowed_roots, session=shared),
        CodingEditFileTool(env=env, allowed_roots=allowed_roots, session=shared), shell,
        GrepTool(env=env, session=shared), GlobTool(env=env, session=shared), ListDirTool(env=env, session=shared),
        ReadManyFilesTool(env=env, session=shared), ApplyPatchTool(env=env, allowed_roots=allowed_roots, session=shared),
    ]


if TYPE_CHECKING:
    from ..loop.tool import AgentTool
    from .apply_patch import ApplyPatchTool as ApplyPatchTool, apply_patch as apply_patch
    from .edit_file import CodingEditFileTool as CodingEditFileTool, EditFileTool as EditFileTool
    from .environment import (
        DirEntry as DirEntry, ExecResult as ExecResult, ExecutionEnvironment as ExecutionEnvironment,
        GrepOptions as GrepOptions, LocalExecutionEnvironment as LocalExecutionEnvironment,
        LoggingEnvironment as LoggingEnvironment, ReadOnlyEnvironment as ReadOnlyEnvironment,
        filter_environment as filter_environment,
    )
    from .find_files import GlobTool as GlobTool, ListDirTool as ListDirTool, ListFilesTool as ListFilesTool
    from .function_tool import tool as tool
    from .patch_parser import PatchError as PatchError, PatchParseError as PatchParseError, parse_patch as parse_patch
    from .read_file import CodingReadFileTool as CodingReadFileTool, ReadFileTool as ReadFileTool
    from .read_many_files import ReadManyFilesTool as ReadManyFilesTool
    from .search import GrepTool as GrepTool, SearchTool as SearchTool
    from .deny import DEFAULT_DENY_PATTERNS as DEFAULT_DENY_PATTERNS
    from .shell import BashTool as BashTool, ShellTool as ShellTool
    from .truncation import (
        truncate_lines as truncate_lines, truncate_output as truncate_output,
        truncate_tool_output as truncate_tool_output,
    )
    from .tool_session import ToolSession as ToolSession
    from .write_file import CodingWriteFileTool as CodingWriteFileTool, WriteFileTool as WriteFileTool
