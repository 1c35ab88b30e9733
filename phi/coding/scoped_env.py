"""An execution environment scoped to a subdirectory (SPEC §14 CODE-9; seed 004 §7.1: a sub-agent shares the parent's
filesystem, "same working directory or a subdirectory"; §4.4 composing environments).

:class:`ScopedEnvironment` wraps any :class:`~phi.tools.environment.ExecutionEnvironment`: relative
paths resolve against the subdirectory, commands run there, searches default to it, and writes are
confined to it (its ``allowed_write_roots`` is the subdirectory alone). Everything else is the inner
environment's, so the scoped agent sees the same files as its parent at the same moment.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO, Callable, Mapping, Sequence

from ..concurrency.cancel import CancellationToken
from ..errors import ToolError
from ..tools.environment import (
    DirEntry,
    ExecResult,
    ExecutionEnvironment,
    GrepOptions,
    delete_verified,
    write_verified,
)
from ..tools.fs_safe import Verify
from ..tools.paths import is_within, resolve_against


class ScopedEnvironment:
    """``inner`` with ``subdir`` (relative to inner's working directory, or absolute) as its cwd."""

    def __init__(self, inner: ExecutionEnvironment, subdir: str) -> None:
        root = resolve_against(inner.working_directory(), subdir)
        if not is_within(root, inner.working_directory()):
            raise ToolError(f"working_dir {subdir!r} is outside the working directory "
                            f"{inner.working_directory()}; give a subdirectory of it")
        if not inner.is_dir(root):
            raise ToolError(f"working_dir {subdir!r} is not a directory (looked for {root})")
        self.inner = inner
        self._root = root
        self.allowed_write_roots: tuple[str, ...] = (root,)

    def __repr__(self) -> str:
        return f"ScopedEnvironment({self.inner!r}, {self._root!r})"

    def __getattr__(self, name: str) -> Any:  # what the inner environment has beyond the protocol
        return getattr(self.inner, name)

    def working_directory(self) -> str:
        return self._root

    def resolve_path(self, path: str) -> str:
        return resolve_against(self._root, path)

    def _abs(self, path: str) -> str:
        return path if os.path.isabs(path) else resolve_against(self._root, path)

    # -- the machine: the inner environment's ---------------------------------------------------
    def platform(self) -> str:
        return self.inner.platform()

    def os_version(self) -> str:
        return self.inner.os_version()

    def initialize(self) -> None:
        self.inner.initialize()

    def cleanup(self) -> None:
        self.inner.cleanup()

    # -- files: resolve here, let the inner environment do the work ---------------------------
    def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        return self.inner.read_file(self._abs(path), offset, limit)

    def read_bytes(self, path: str, max_bytes: int | None = None) -> bytes:
        return self.inner.read_bytes(self._abs(path), max_bytes)

    def open_read(self, path: str) -> BinaryIO:
        return self.inner.open_read(self._abs(path))

    def write_file(self, path: str, content: str | bytes, *, roots: Sequence[str] | None = None,
                   verify: Verify | None = None) -> None:
        write_verified(self.inner, self._abs(path), content, list(roots) if roots is not None else [self._root],
                       verify)

    def delete_file(self, path: str, *, roots: Sequence[str] | None = None,
                    verify: Verify | None = None) -> None:
        delete_verified(self.inner, self._abs(path), list(roots) if roots is not None else [self._root], verify)

    def file_exists(self, path: str) -> bool:
        return self.inner.file_exists(self._abs(path))

    def same_path(self, a: str, b: str) -> bool:
        return self.inner.same_path(self._abs(a), self._abs(b))

    def is_dir(self, path: str) -> bool:
        return self.inner.is_dir(self._abs(path))

    def file_size(self, path: str) -> int:
        return self.inner.file_size(self._abs(path))

    def list_directory(self, path: str, depth: int = 1) -> list[DirEntry]:
        return self.inner.list_directory(self._abs(path), depth)

    # -- commands and searches ----------------------------------------------------------------
    def exec_command(self, command: str, timeout_ms: int, working_dir: str | None = None,
                     env_vars: Mapping[str, str] | None = None, *, cancel: CancellationToken | None = None,
                     on_output: Callable[[str, bytes], None] | None = None) -> ExecResult:
        return self.inner.exec_command(command, timeout_ms, self._abs(working_dir or "."), env_vars, cancel=cancel,
                                       on_output=on_output)

    def grep(self, pattern: str, path: str, options: GrepOptions | None = None, *,
             cancel: CancellationToken | None = None) -> str:
        return self.inner.grep(pattern, self._abs(path or "."), options, cancel=cancel)

    def glob(self, pattern: str, path: str | None = None, *, cancel: CancellationToken | None = None) -> list[str]:
        return self.inner.glob(pattern, self._abs(path or "."), cancel=cancel)


__all__ = ["ScopedEnvironment"]
