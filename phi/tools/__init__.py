"""Built-in tools (SPEC §9): the execution environment, truncation, the six phi-core tools and the
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

import importlib
import sys
import types
from typing import Any

_EXPORTS = {
    "ExecutionEnvironment": "environment", "LocalExecutionEnvironment": "environment",
    "ReadOnlyEnvironment": "environment", "LoggingEnvironment": "environment", "ExecResult": "environment",
    "DirEntry": "environment", "GrepOptions": "environment", "filter_environment": "environment",
    "truncate_output": "truncation", "truncate_lines": "truncation", "truncate_tool_output": "truncation",
    "BashTool": "shell", "ShellTool": "shell", "DEFAULT_DENY_PATTERNS": "shell",
    "ReadFileTool": "read_file", "CodingReadFileTool": "read_file",
    "WriteFileTool": "write_file", "CodingWriteFileTool": "write_file",
    "EditFileTool": "edit_file", "CodingEditFileTool": "edit_file",
    "SearchTool": "search", "GrepTool": "search",
    "ListFilesTool": "find_files", "GlobTool": "find_files", "ListDirTool": "find_files",
    "ReadManyFilesTool": "read_many_files",
    "ApplyPatchTool": "apply_patch", "apply_patch": "apply_patch",
    "parse_patch": "patch_parser", "PatchError": "patch_parser", "PatchParseError": "patch_parser",
}

__all__ = sorted([*_EXPORTS, "default_tools", "coding_tools"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'phi.tools' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


class _ToolsPackage(types.ModuleType):
    """``phi.tools`` itself. Loading a submodule makes the import system set it as a package
    attribute, which would shadow an export of the same name (``apply_patch`` the function vs
    ``phi.tools.apply_patch`` the module) depending on import order: such an export wins."""

    def __setattr__(self, name: str, value: Any) -> None:
        if _EXPORTS.get(name) == name and isinstance(value, types.ModuleType) \
                and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ToolsPackage


def default_tools(env: Any = None, **options: Any) -> list[Any]:
    """phi-core's six built-in tools on ``env`` (default: a LocalExecutionEnvironment on the cwd).

    ``options`` may carry ``deny_patterns``, ``confirm_fn`` and ``timeout_s`` (bash) and
    ``allowed_roots`` (write_file, edit_file).
    """
    from .edit_file import EditFileTool
    from .environment import LocalExecutionEnvironment
    from .find_files import ListFilesTool
    from .read_file import ReadFileTool
    from .search import SearchTool
    from .shell import BashTool
    from .write_file import WriteFileTool

    env = env if env is not None else LocalExecutionEnvironment()
    bash_opts = {k: options.pop(k) for k in ("deny_patterns", "confirm_fn", "timeout_s") if k in options}
    roots = options.pop("allowed_roots", None)
    if options:
        raise TypeError(f"default_tools() got unexpected options: {', '.join(sorted(options))}")
    return [
        BashTool(env=env, **bash_opts), ReadFileTool(env=env), WriteFileTool(env=env, allowed_roots=roots),
        EditFileTool(env=env, allowed_roots=roots), ListFilesTool(env=env), SearchTool(env=env),
    ]


def coding_tools(env: Any = None, **options: Any) -> list[Any]:
    """The coding layer's tools (seed 004 §3.3-3.6) on ``env``; profiles choose among them.

    ``options``: ``deny_patterns``, ``confirm_fn``, ``default_timeout_ms``, ``max_timeout_ms`` (shell)
    and ``allowed_roots`` (write_file, edit_file, apply_patch).
    """
    from .apply_patch import ApplyPatchTool
    from .edit_file import CodingEditFileTool
    from .environment import LocalExecutionEnvironment
    from .find_files import GlobTool, ListDirTool
    from .read_file import CodingReadFileTool
    from .read_many_files import ReadManyFilesTool
    from .search import GrepTool
    from .shell import ShellTool
    from .write_file import CodingWriteFileTool

    env = env if env is not None else LocalExecutionEnvironment()
    shell_keys = ("deny_patterns", "confirm_fn", "default_timeout_ms", "max_timeout_ms")
    shell_opts = {k: options.pop(k) for k in shell_keys if k in options}
    roots = options.pop("allowed_roots", None)
    if options:
        raise TypeError(f"coding_tools() got unexpected options: {', '.join(sorted(options))}")
    return [
        CodingReadFileTool(env=env), CodingWriteFileTool(env=env, allowed_roots=roots),
        CodingEditFileTool(env=env, allowed_roots=roots), ShellTool(env=env, **shell_opts), GrepTool(env=env),
        GlobTool(env=env), ListDirTool(env=env), ReadManyFilesTool(env=env),
        ApplyPatchTool(env=env, allowed_roots=roots),
    ]
