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

if TYPE_CHECKING:
    from ..loop.tool import AgentTool
    from .apply_patch import ApplyPatchTool, apply_patch
    from .deny import DEFAULT_DENY_PATTERNS
    from .edit_file import CodingEditFileTool, EditFileTool
    from .environment import (
        DirEntry, ExecResult, ExecutionEnvironment, GrepOptions, LocalExecutionEnvironment, LoggingEnvironment,
        ReadOnlyEnvironment, filter_environment,
    )
    from .find_files import GlobTool, ListDirTool, ListFilesTool
    from .function_tool import tool
    from .patch_parser import PatchError, PatchParseError, parse_patch
    from .read_file import CodingReadFileTool, ReadFileTool
    from .read_many_files import ReadManyFilesTool
    from .sandbox import SandboxPolicy, SandboxStatus, SandboxUnavailable, sandbox_status
    from .search import GrepTool, SearchTool
    from .shell import BashTool, ShellTool
    from .tool_session import ToolSession
    from .truncation import truncate_lines, truncate_output, truncate_tool_output
    from .write_file import CodingWriteFileTool, WriteFileTool

__all__ = [
    "DEFAULT_DENY_PATTERNS", "ApplyPatchTool", "BashTool", "CodingEditFileTool", "CodingReadFileTool",
    "CodingWriteFileTool", "DirEntry", "EditFileTool", "ExecResult", "ExecutionEnvironment", "GlobTool",
    "GrepOptions", "GrepTool", "ListDirTool", "ListFilesTool", "LocalExecutionEnvironment", "LoggingEnvironment",
    "PatchError", "PatchParseError", "ReadFileTool", "ReadManyFilesTool", "ReadOnlyEnvironment", "SandboxPolicy",
    "SandboxStatus", "SandboxUnavailable", "SearchTool", "ShellTool", "ToolSession", "WriteFileTool", "apply_patch",
    "coding_tools", "default_tools",
    "filter_environment", "parse_patch", "sandbox_status", "tool", "truncate_lines", "truncate_output",
    "truncate_tool_output",
]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from ..lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())


class _ToolsPackage(types.ModuleType):
    """``phi.tools`` itself. Loading a submodule makes the import system set it as a package
    attribute, which would shadow an export of the same name (``apply_patch`` the function vs
    ``phi.tools.apply_patch`` the module) depending on import order: such an export wins."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SAME_NAME_AS_MODULE and isinstance(value, types.ModuleType) \
                and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


_SAME_NAME_AS_MODULE = {"apply_patch"}  # exports named like the module that defines them
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


