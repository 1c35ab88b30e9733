"""The execution environment the built-in tools run on (SPEC §9.1; seed 004 §4).

Every file operation, command and search a built-in tool performs goes through an
:class:`ExecutionEnvironment`, so the same tools can run locally, in a container or over SSH.
:class:`LocalExecutionEnvironment` is the required implementation: paths are resolved against its
working directory; reads open only regular files and are bounded (:mod:`phi.tools.fs_safe`);
writes are resolved beneath their root without a check-then-use window; commands run under
``/bin/bash -c`` with a timeout and cancellation that end every process the command started
(:mod:`phi.tools.process`); the child's environment is filtered (:mod:`phi.tools.env_filter`).
:class:`ReadOnlyEnvironment` and :class:`LoggingEnvironment` wrap any environment (§4.4).
"""

from __future__ import annotations

import errno
import inspect
import logging
import os
from concurrent.futures import ThreadPoolExecutor
import platform as _platform
import shlex
import shutil
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import (
    Any,
    BinaryIO,
    Callable,
    Iterable,
    Mapping,
    Protocol,
    Sequence,
    runtime_checkable,
)

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..log import get_logger
from .env_filter import (
    CORE_ENV_VARS,
    ENV_POLICIES,
    filter_environment,
    is_secret_variable,
)
from .fs_safe import (
    ConfinementError,
    NotRegularFileError,
    Verify,
    check_path_text,
    delete_beneath,
    open_regular,
    read_limited,
    split_parts,
    write_beneath,
)
from .globbing import glob_files, glob_with_rg
from .paths import locate_beneath, resolve_against
from .process import run_process, start_background
from .sandbox import (
    PROTECTED_NAMES, PrivateTemp, ProtectedPathError, SandboxPolicy, SandboxUnavailable, as_policy, beneath, host_code,
    launcher_spec,
)
from .search_backend import GrepOptions, SearchError, run_search
from .text_lines import scan_lines
from .truncation import Part

log = get_logger(__name__)

__all__ = [
    "ExecResult", "DirEntry", "GrepOptions", "SearchError", "ExecutionEnvironment",
    "LocalExecutionEnvironment", "ReadOnlyEnvironment", "LoggingEnvironment", "filter_environment",
    "is_secret_variable", "ENV_POLICIES", "CORE_ENV_VARS", "DEFAULT_MAX_READ_BYTES", "write_verified",
    "delete_verified",
]

#: What ``read_bytes`` reads at most unless told otherwise (64 MiB).
DEFAULT_MAX_READ_BYTES = 64 << 20

_NOT_DESCENDED = (".git", "node_modules", "__pycache__")


@dataclass
class ExecResult:
    """What ``exec_command`` returns (a failing command is a result, not an exception): the captured
    ``stdout`` and ``stderr``, ``exit_code`` (128+N after signal N; -1 if a cancelled command had
    not exited), whether it ``timed_out`` or was ``cancelled``, and ``duration_ms``."""

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    duration_ms: int
    cancelled: bool = False
    #: stdout/stderr with what the capture dropped as ``Omitted`` holes (None: the text is complete)
    stdout_parts: list[Part] | None = field(default=None, repr=False)
    stderr_parts: list[Part] | None = field(default=None, repr=False)

    @property
    def output(self) -> str:
        """stdout and stderr combined (stderr after stdout)."""
        if self.stdout and self.stderr:
            sep = "" if self.stdout.endswith("\n") else "\n"
            return self.stdout + sep + self.stderr
        return self.stdout or self.stderr

    def parts(self, stream: str) -> list[Part]:
        """``stdout`` or ``stderr`` as text parts with holes (see :mod:`phi.tools.truncation`)."""
        given = self.stdout_parts if stream == "stdout" else self.stderr_parts
        return list(given) if given is not None else [self.stdout if stream == "stdout" else self.stderr]


@dataclass
class DirEntry:
    """One entry of ``list_directory``: its ``name``, ``is_dir``, ``size`` in bytes (None for a
    directory, or when it cannot be read) and ``path`` relative to the listed directory."""

    name: str
    is_dir: bool
    size: int | None
    path: str = ""  # relative to the listed directory ("sub/file.txt"); equals name at depth 1


@runtime_checkable
class ExecutionEnvironment(Protocol):
    """Where tools run (seed 004 §4.1), plus the byte-level file operations apply_patch needs.

    ``roots`` on the writing methods: the directories the write must stay beneath (default
    ``allowed_write_roots``); see :meth:`LocalExecutionEnvironment.write_file`. ``verify`` on
    ``write_file``: called with the file about to be replaced right before it is replaced, it may
    raise to abandon the write. An environment that cannot offer it may leave the parameter out: the
    tools then run the check just before calling ``write_file``, which leaves a window.
    """

    allowed_write_roots: tuple[str, ...]

    def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str: ...
    def read_bytes(self, path: str, max_bytes: int | None = None) -> bytes: ...
    def open_read(self, path: str) -> BinaryIO: ...
    def write_file(self, path: str, content: str | bytes, *, roots: Sequence[str] | None = None,
                   verify: Verify | None = None) -> None: ...
    def delete_file(self, path: str, *, roots: Sequence[str] | None = None,
                    verify: Verify | None = None) -> None: ...
    def file_exists(self, path: str) -> bool: ...
    def same_path(self, a: str, b: str) -> bool: ...
    def is_dir(self, path: str) -> bool: ...
    def file_size(self, path: str) -> int: ...
    def list_directory(self, path: str, depth: int = 1) -> list[DirEntry]: ...
    def exec_command(self, command: str, timeout_ms: int, working_dir: str | None = None,
                     env_vars: Mapping[str, str] | None = None, *, cancel: CancellationToken | None = None,
                     on_output: Callable[[str, bytes], None] | None = None) -> ExecResult: ...
    def grep(self, pattern: str, path: str, options: GrepOptions | None = None, *,
             cancel: CancellationToken | None = None) -> str: ...
    def glob(self, pattern: str, path: str | None = None, *, cancel: CancellationToken | None = None) -> list[str]: ...
    def resolve_path(self, path: str) -> str: ...
    def initialize(self) -> None: ...
    def cleanup(self) -> None: ...
    def working_directory(self) -> str: ...
    def platform(self) -> str: ...
    def os_version(self) -> str: ...


class LocalExecutionEnvironment:
    """Runs everything on this machine (seed 004 §4.2).

    ``env_policy`` is ``inherit_all`` (default), ``core_only`` or ``none``; variables that look like
    secrets (:func:`is_secret_variable`, or the name globs in ``secret_patterns``; ``()`` keeps all)
    are removed under every policy. ``allowed_write_roots`` confines writes (default: the working
    directory). ``max_capture_bytes`` bounds how much of each output stream is kept in memory (head
    and tail); ``max_read_bytes`` bounds :meth:`read_bytes`.

    ``sandbox`` confines every command it runs (:mod:`phi.tools.sandbox`): ``"workspace-write"``
    (writes beneath ``allowed_write_roots`` and a private temporary directory only, network off),
    ``"read-only"``, a :class:`~phi.tools.sandbox.SandboxPolicy`, or None / ``"full"`` (no sandbox,
    the default here; the coding layer and ``phi`` default to ``workspace-write``). Sandboxed
    commands get ``TMPDIR`` pointing at the private directory, which :meth:`cleanup` removes. Where
    the kernel cannot keep the policy a command raises
    :class:`~phi.tools.sandbox.SandboxUnavailable` rather than run unconfined.
    """

    def __init__(
        self,
        working_dir: str | None = None,
        *,
        env_policy: str = "inherit_all",
        secret_patterns: Iterable[str] | None = None,
        allowed_write_roots: Sequence[str] | None = None,
        shell: str = "/bin/bash",
        max_capture_bytes: int = 1 << 20,
        base_env: Mapping[str, str] | None = None,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        glob_backend: str = "auto",
        sandbox: SandboxPolicy | str | None = None,
    ) -> None:
        if env_policy not in ENV_POLICIES:
            raise ConfigError(f"unknown env_policy {env_policy!r}; use one of {', '.join(ENV_POLICIES)}")
        if glob_backend not in ("auto", "rg", "scandir"):
            raise ConfigError(f"unknown glob_backend {glob_backend!r}; use auto, rg or scandir")
        self.glob_backend = glob_backend
        self._cwd = os.path.abspath(os.path.expanduser(working_dir or os.getcwd()))
        self.env_policy = env_policy
        self.secret_patterns = None if secret_patterns is None else tuple(secret_patterns)
        roots = allowed_write_roots if allowed_write_roots is not None else [self._cwd]
        self.allowed_write_roots = tuple(resolve_against(self._cwd, r) for r in roots)
        self.shell = shell
        self.max_capture_bytes = max_capture_bytes
        self.max_read_bytes = max_read_bytes
        self._base_env = base_env
        self._grep_perl: bool | None = None
        self.sandbox = as_policy(sandbox)
        #: whether ``sandbox=`` was given (the coding layer applies its own default otherwise)
        self.sandbox_chosen = sandbox is not None
        self._temp = PrivateTemp()
        self._real_roots: dict[str, str] = {}
        self._watched: set[str] = set()  # protected names absent when a background command started
        self._roots_lock = threading.Lock()
        for root in self.allowed_write_roots:  # resolved now, before any command could move them
            self._real_root(root)

    def __repr__(self) -> str:
        return (f"LocalExecutionEnvironment(working_dir={self._cwd!r}, env_policy={self.env_policy!r}, "
                f"sandbox={self.sandbox.mode!r})")

    # -- metadata and lifecycle ----------------------------------------------------------------
    def working_directory(self) -> str:
        return self._cwd

    def platform(self) -> str:
        if sys.platform.startswith("linux"):
            return "linux"
        if sys.platform == "darwin":
            return "darwin"
        if sys.platform in ("win32", "cygwin"):
            return "windows"
        return sys.platform

    def os_version(self) -> str:
        return f"{_platform.system()} {_platform.release()}".strip()

    def initialize(self) -> None:
        if not os.path.isdir(self._cwd):
            raise ConfigError(f"working directory {self._cwd} does not exist")

    def cleanup(self) -> None:
        """Removes the sandbox's private temporary directory (if a sandboxed command made one). Every
        command's processes end with it, and background commands belong to the tool session that
        started them (:class:`~phi.tools.tool_session.ToolSession`). A ``.phi`` or ``.mcp.json`` that a
        background command created meanwhile is set aside (see :meth:`exec_command`)."""
        with self._roots_lock:
            watched, self._watched = self._watched, set()
        self._set_aside(watched)
        self._temp.remove()

    def resolve_path(self, path: str) -> str:
        """``path`` made absolute and normalised (a string operation; nothing is checked)."""
        return resolve_against(self._cwd, path)

    def _checked(self, path: str) -> str:
        """The resolved path, or OSError for one no system call could take (NUL byte, too long)."""
        resolved = resolve_against(self._cwd, path)
        check_path_text(resolved)
        return resolved

    # -- files ---------------------------------------------------------------------------------
    def open_read(self, path: str) -> BinaryIO:
        """A binary file object for ``path``; only regular files (FIFOs, devices, ... are refused)."""
        return open_regular(self._checked(path))

    def read_bytes(self, path: str, max_bytes: int | None = None) -> bytes:
        """The content of ``path``; FileTooLargeError beyond ``max_bytes`` (default ``max_read_bytes``)."""
        target = self._checked(path)
        with open_regular(target) as fh:
            return read_limited(fh, self.max_read_bytes if max_bytes is None else max_bytes, target)

    def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        r"""Text of ``path`` (invalid UTF-8 replaced); ``offset`` is a 1-based line, ``limit`` a line count.

        A whole-file read is bounded by ``max_read_bytes``; a ranged one streams the file and returns
        at most ``max_read_bytes`` of lines, whatever the file's size, each ending in ``\n`` (a
        ``\r`` before it is dropped).
        """
        if offset is None and limit is None:
            return self.read_bytes(path).decode("utf-8", errors="replace")
        with self.open_read(path) as fh:
            part = scan_lines(fh, offset or 1, limit, self.max_read_bytes)
        return "".join(line + "\n" for line in part.lines)

    def _write_location(self, path: str, roots: Sequence[str] | None) -> tuple[str, list[str], str]:
        """(root, components beneath it, absolute path) a write to ``path`` is resolved from."""
        target = self._checked(path)
        in_force = self.allowed_write_roots if roots is None else [resolve_against(self._cwd, r) for r in roots]
        located = locate_beneath(target, in_force)
        if self.sandbox.sandboxed:
            self._refuse_protected(target)
        if located is not None:
            return located[0], located[1], target
        if roots is not None:
            raise ConfinementError(target, ", ".join(in_force) or "(none)", "the path")
        return "/", split_parts(target), target

    def _guard(self) -> tuple[frozenset[str], frozenset[str]] | None:
        """The names the write's walk must not pass (see :func:`phi.tools.fs_safe.write_beneath`)."""
        if not self.sandbox.sandboxed:
            return None
        anywhere = {name for name in PROTECTED_NAMES if name != ".mcp.json"}
        if not self.sandbox.git_writable:
            anywhere.add(".git")
        return frozenset(anywhere), frozenset({".mcp.json"})

    def _refuse_protected(self, target: str) -> None:
        """Under a sandbox the file tools keep to what commands may change: nothing in ``read-only``,
        nothing of phi's own code; ``.git``, ``.phi`` and a top-level ``.mcp.json`` are refused by the
        write's own walk (:meth:`_guard`), where a symlink swapped in meanwhile cannot slip past."""
        if self.sandbox.mode == "read-only":
            raise ProtectedPathError(errno.EACCES, "refused: the read-only sandbox allows no writes", target)
        code = beneath(os.path.realpath(target), host_code())
        if code is not None:
            raise ProtectedPathError(errno.EACCES, f"refused: {code} holds code phi runs (phi or a library it "
                                     f"uses); the {self.sandbox.mode} sandbox keeps it read-only", target)

    def write_file(self, path: str, content: str | bytes, *, roots: Sequence[str] | None = None,
                   verify: Verify | None = None) -> None:
        """Create or replace ``path`` (parents created) without ever leaving its root.

        The path is resolved beneath the root that contains it (see :mod:`phi.tools.fs_safe`): a
        symlink or ``..`` leading out, even one swapped in while the write runs, raises
        ConfinementError (a PermissionError). With ``roots`` a path outside all of them is refused;
        without, a path outside ``allowed_write_roots`` is written as named (tools always pass their
        roots). The file is replaced by rename: hard links to it keep the old content; a symlink is
        written through (its target is replaced). ``verify`` is called with the file about to be
        replaced (open for reading, or None) once the new content is in its temporary file, right
        before the rename; what it raises abandons the write and leaves the file as it is (with
        ``renameat2``, a change landing after that check is caught too: see
        :func:`phi.tools.fs_safe.write_beneath`).
        """
        root, parts, target = self._write_location(path, roots)
        data = content.encode("utf-8") if isinstance(content, str) else content
        write_beneath(root, parts, data, target, verify, self._guard())

    def delete_file(self, path: str, *, roots: Sequence[str] | None = None,
                    verify: Verify | None = None) -> None:
        """Remove the file ``path`` (a symlink itself, not its target); directories are refused.
        ``verify`` is called with the file about to be removed (open for reading) and what it raises
        keeps the file (see :func:`phi.tools.fs_safe.delete_beneath`)."""
        root, parts, target = self._write_location(path, roots)
        delete_beneath(root, parts, target, verify, self._guard())

    def file_exists(self, path: str) -> bool:
        return os.path.exists(self.resolve_path(path))

    def same_path(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` lead to the same place once symlinks are followed (hard links are
        different names: a write replaces one of them by rename)."""
        return os.path.realpath(self.resolve_path(a)) == os.path.realpath(self.resolve_path(b))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self.resolve_path(path))

    def file_size(self, path: str) -> int:
        return os.stat(self._checked(path)).st_size

    def list_directory(self, path: str, depth: int = 1, max_entries: int = 5000) -> list[DirEntry]:
        """Entries of ``path`` down to ``depth`` levels, directories first, then by name.

        Symlinked directories are listed but not entered, so links cannot make it loop; the walk
        keeps its own stack, so no depth of tree can exhaust Python's recursion limit.
        """
        root = self._checked(path)
        if not os.path.isdir(root):
            if os.path.exists(root):
                raise NotADirectoryError(20, "Not a directory", root)
            raise FileNotFoundError(2, "No such file or directory", root)
        out: list[DirEntry] = []
        stack = [(iter(_sorted_entries(root)), "", max(depth, 1))]
        while stack and len(out) < max_entries:
            entries, prefix, levels = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            size = None
            if not is_dir:
                try:
                    size = entry.stat(follow_symlinks=False).st_size
                except OSError:
                    size = None
            out.append(DirEntry(entry.name, is_dir, size, prefix + entry.name))
            if is_dir and levels > 1 and entry.name not in _NOT_DESCENDED:
                stack.append((iter(_sorted_entries(entry.path)), prefix + entry.name + "/", levels - 1))
        return out

    # -- commands ------------------------------------------------------------------------------
    def command_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        source = self._base_env if self._base_env is not None else os.environ
        env = filter_environment(source, self.env_policy, self.secret_patterns)
        if self.sandbox.sandboxed:
            temp = self._temp.path()
            env.update({"TMPDIR": temp, "TMP": temp, "TEMP": temp})
        if extra:
            env.update(extra)
        return env

    def sandbox_spec(self) -> str | None:
        """The launcher's instructions for this environment's sandbox (None: ``full``); raises
        :class:`~phi.tools.sandbox.SandboxUnavailable` where it cannot be kept."""
        if not self.sandbox.sandboxed:
            return None
        roots = [self._real_root(root) for root in (*self.allowed_write_roots, *self.sandbox.writable_roots)]
        return launcher_spec(self.sandbox, roots, self._temp.path())

    def helper_sandbox(self) -> str | None:
        """The launcher's instructions for a command phi itself runs in this environment (``git`` for
        the system prompt): ``read-only`` when commands are sandboxed (a repository's config, hooks
        and filters are the workspace's, which a command may have written), else None."""
        if not self.sandbox.sandboxed:
            return None
        return launcher_spec(SandboxPolicy("read-only"), [], self._temp.path())

    def _real_root(self, root: str) -> str:
        """``root``'s real path as it was the first time it was asked (a command cannot redirect it)."""
        with self._roots_lock:
            if root not in self._real_roots:
                self._real_roots[root] = os.path.realpath(resolve_against(self._cwd, root))
            return self._real_roots[root]

    def exec_command(
        self,
        command: str,
        timeout_ms: int,
        working_dir: str | None = None,
        env_vars: Mapping[str, str] | None = None,
        *,
        cancel: CancellationToken | None = None,
        on_output: Callable[[str, bytes], None] | None = None,
    ) -> ExecResult:
        """Run ``command`` under ``bash -c``; a bad exit status is a result, not an exception."""
        cwd = self.resolve_path(working_dir) if working_dir else self._cwd
        if not os.path.isdir(cwd):
            raise FileNotFoundError(2, "Working directory does not exist", cwd)
        sandbox = self.sandbox_spec()
        absent: set[str] = self._absent_protected() if sandbox is not None else set()
        outcome = run_process(
            [self.shell, "-c", command], cwd=cwd, env=self.command_env(env_vars), timeout_ms=timeout_ms,
            cancel=cancel, max_capture_bytes=self.max_capture_bytes, on_output=on_output, sandbox=sandbox,
        )
        notes = self._set_aside(absent)
        stderr_parts = outcome.stderr_parts + [note + "\n" for note in notes] if notes else outcome.stderr_parts
        stderr = outcome.stderr + "".join(note + "\n" for note in notes)
        return ExecResult(outcome.stdout, stderr, outcome.exit_code, outcome.timed_out,
                          outcome.duration_ms, outcome.cancelled, outcome.stdout_parts, stderr_parts)

    def _absent_protected(self) -> set[str]:
        """The protected names (``.phi``, ``.mcp.json``) missing from the writable roots: a sandboxed
        command could create them, which no mount can stop (see :meth:`_set_aside`)."""
        if self.sandbox.mode != "workspace-write":
            return set()
        roots = [self._real_root(root) for root in (*self.allowed_write_roots, *self.sandbox.writable_roots)]
        return {path for root in roots for name in PROTECTED_NAMES
                if not os.path.lexists(path := os.path.join(root, name))}

    def _set_aside(self, absent: set[str]) -> list[str]:
        """Rename what appeared at ``absent`` paths (``NAME.phi-set-aside-N``), saying so: phi reads
        ``.phi/settings.json`` and starts ``.mcp.json``'s servers outside the sandbox, so a command must
        not be able to write them. Nothing is deleted."""
        notes: list[str] = []
        for path in sorted(absent):
            if not os.path.lexists(path):
                continue
            number = 1
            while os.path.lexists(aside := f"{path}.phi-set-aside-{number}"):
                number += 1
            try:
                os.rename(path, aside)
            except OSError as exc:
                log.warning("a sandboxed command created %s and phi could not set it aside: %s", path, exc)
                continue
            note = (f"phi: this command created {os.path.basename(path)}, which phi would read or run outside "
                    f"the sandbox; it was set aside as {os.path.basename(aside)}")
            log.warning("%s (%s)", note, path)
            notes.append(note)
        return notes

    def start_background(self, command: str, working_dir: str | None, env_vars: Mapping[str, str] | None,
                         output: int) -> subprocess.Popen[bytes]:
        """Start ``command`` to run on after the call (see :mod:`phi.tools.background`): stdin
        ``/dev/null``, stdout and stderr to the descriptor ``output``, the environment filtered as
        for :meth:`exec_command`. An optional method of an environment: tools check for it."""
        cwd = self.resolve_path(working_dir) if working_dir else self._cwd
        if not os.path.isdir(cwd):
            raise FileNotFoundError(2, "Working directory does not exist", cwd)
        sandbox = self.sandbox_spec()
        if sandbox is not None:
            absent = self._absent_protected()
            with self._roots_lock:
                self._watched |= absent  # checked when the environment is cleaned up
        return start_background([self.shell, "-c", command], cwd=cwd, env=self.command_env(env_vars), output=output,
                                sandbox=sandbox)

    # -- search --------------------------------------------------------------------------------
    def _grep_supports_perl(self) -> bool:
        if self._grep_perl is None:
            probe = self.exec_command("echo ab1 | grep -qP 'b\\d'", 5000)
            self._grep_perl = probe.exit_code == 0
        return self._grep_perl

    def grep(self, pattern: str, path: str, options: GrepOptions | None = None, *,
             cancel: CancellationToken | None = None) -> str:
        """Matching lines as ``path:line:text`` (paths relative to ``path`` when it is a directory)."""
        options = options or GrepOptions()
        target = self._checked(path)
        mode = os.stat(target).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):  # a FIFO would block the search
            raise NotRegularFileError(target, mode)
        backend = options.backend
        if backend == "auto":
            backend = "rg" if shutil.which("rg") else "grep"
        if backend not in ("rg", "grep"):
            raise ConfigError(f"unknown search backend {backend!r}; use auto, rg or grep")
        if os.path.isdir(target):
            directory, rel_target = target, "."
        else:
            directory, rel_target = os.path.dirname(target), os.path.basename(target)
        perl = backend == "grep" and self._grep_supports_perl()
        lines = run_search(self.exec_command, pattern, directory, rel_target, options, backend, perl, cancel)
        return "\n".join(lines[: max(options.max_results, 0)] if options.max_results else lines)

    def glob(self, pattern: str, path: str | None = None, *, cancel: CancellationToken | None = None) -> list[str]:
        """Absolute paths of regular files matching ``pattern`` under ``path``, newest first.

        ``**`` does not follow symlinked directories; see :mod:`phi.tools.globbing`. Patterns with
        ``**`` are answered by ``rg --files`` when ripgrep is installed (``glob_backend``: ``auto``,
        ``rg`` or ``scandir``), the others by a pruned walk.
        """
        base = self.resolve_path(path) if path else self._cwd
        check_path_text(pattern)
        if not os.path.isdir(base):
            raise FileNotFoundError(2, "No such directory", base)
        matches = None
        if self.glob_backend != "scandir":
            try:
                matches = glob_with_rg(pattern, base, cancel=cancel, sandbox=self.sandbox_spec())
            except SandboxUnavailable:  # the walk in this process needs no sandbox
                matches = None
            if matches is None and self.glob_backend == "rg" and "**" in pattern:
                raise ConfigError("glob_backend='rg' but ripgrep (rg) could not be run")
        if matches is None:
            should_stop = cancel.is_cancelled if cancel is not None else None
            matches = glob_files(pattern, base, should_stop=should_stop)
        return newest_first(matches)


def _dated(paths: Sequence[str]) -> list[tuple[int, str]]:
    dated: list[tuple[int, str]] = []
    for match in paths:
        try:
            dated.append((-os.stat(match).st_mtime_ns, match))
        except OSError:
            continue
    return dated


def newest_first(paths: Sequence[str]) -> list[str]:
    """``paths`` sorted by modification time, newest first (ties by path); vanished ones dropped.
    Many paths are stat'ed by a few threads (``stat`` releases the GIL)."""
    if len(paths) < 20_000:
        dated = _dated(paths)
    else:
        step = -(-len(paths) // 4)
        with ThreadPoolExecutor(4, thread_name_prefix="phi-glob-stat") as pool:
            dated = [d for part in pool.map(_dated, [paths[i:i + step] for i in range(0, len(paths), step)])
                     for d in part]
    dated.sort()
    return [p for _, p in dated]


def _sorted_entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
    except OSError as exc:
        log.debug("cannot list %s: %s", directory, exc)
        return []


class _Wrapper:
    """Delegates everything to ``inner``; subclasses override what they change."""

    def __init__(self, inner: ExecutionEnvironment) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def allowed_write_roots(self) -> tuple[str, ...]:
        return self.inner.allowed_write_roots


class ReadOnlyEnvironment(_Wrapper):
    """Rejects every file write and delete; commands still run unless ``allow_commands`` is False."""

    MESSAGE = "Write operations are disabled in read-only mode"

    def __init__(self, inner: ExecutionEnvironment, *, allow_commands: bool = True) -> None:
        super().__init__(inner)
        self.allow_commands = allow_commands

    def write_file(self, path: str, content: str | bytes, **kwargs: Any) -> None:
        raise PermissionError(13, self.MESSAGE, path)

    def delete_file(self, path: str, **kwargs: Any) -> None:
        raise PermissionError(13, self.MESSAGE, path)

    def exec_command(self, command: str, timeout_ms: int, working_dir: str | None = None,
                     env_vars: Mapping[str, str] | None = None, **kwargs: Any) -> ExecResult:
        if not self.allow_commands:
            raise PermissionError(13, "Command execution is disabled in read-only mode", command)
        return self.inner.exec_command(command, timeout_ms, working_dir, env_vars, **kwargs)

    def start_background(self, command: str, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        if not self.allow_commands:
            raise PermissionError(13, "Command execution is disabled in read-only mode", command)
        start: Callable[..., subprocess.Popen[bytes]] = getattr(self.inner, "start_background")
        return start(command, *args, **kwargs)


class LoggingEnvironment(_Wrapper):
    """Logs commands (with exit status and duration), writes and deletes; never logs env values."""

    def __init__(self, inner: ExecutionEnvironment, logger: logging.Logger | None = None,
                 level: int = logging.INFO) -> None:
        super().__init__(inner)
        self.logger = logger or get_logger(f"{__name__}.log")
        self.level = level

    def exec_command(self, command: str, timeout_ms: int, working_dir: str | None = None,
                     env_vars: Mapping[str, str] | None = None, **kwargs: Any) -> ExecResult:
        self.logger.log(self.level, "exec: %s", command)
        result = self.inner.exec_command(command, timeout_ms, working_dir, env_vars, **kwargs)
        self.logger.log(self.level, "exit: %d in %dms%s", result.exit_code, result.duration_ms,
                        " (timed out)" if result.timed_out else "")
        return result

    def start_background(self, command: str, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        self.logger.log(self.level, "background: %s", command)
        start: Callable[..., subprocess.Popen[bytes]] = getattr(self.inner, "start_background")
        proc = start(command, *args, **kwargs)
        self.logger.log(self.level, "background pid: %d", proc.pid)
        return proc

    def write_file(self, path: str, content: str | bytes, *, roots: Sequence[str] | None = None,
                   verify: Verify | None = None) -> None:
        self.logger.log(self.level, "write: %s (%d bytes)", path,
                        len(content.encode("utf-8") if isinstance(content, str) else content))
        write_verified(self.inner, path, content, roots, verify)

    def delete_file(self, path: str, *, roots: Sequence[str] | None = None,
                    verify: Verify | None = None) -> None:
        self.logger.log(self.level, "delete: %s", path)
        delete_verified(self.inner, path, roots, verify)


def _takes_verify(method: Callable[..., None]) -> bool:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "verify" for p in parameters)


def write_verified(env: ExecutionEnvironment, path: str, content: str | bytes, roots: Sequence[str] | None,
                   verify: Verify | None) -> None:
    """``env.write_file`` with ``verify`` run on the file it replaces right before the replacement.
    An environment whose ``write_file`` has no ``verify`` parameter (one written before it existed,
    or a wrapper taking ``**kwargs``) gets the check just before the call instead: a window stays."""
    if verify is None:
        env.write_file(path, content, roots=roots)
        return
    if _takes_verify(env.write_file):
        env.write_file(path, content, roots=roots, verify=verify)
        return
    try:
        fh = env.open_read(path)
    except FileNotFoundError:
        verify(None)
    else:
        with fh:
            verify(fh)
    env.write_file(path, content, roots=roots)


def delete_verified(env: ExecutionEnvironment, path: str, roots: Sequence[str] | None,
                    verify: Verify | None) -> None:
    """``env.delete_file`` with ``verify`` run on the file right before it is removed (as
    :func:`write_verified`: an environment without the parameter gets the check just before)."""
    if verify is None:
        env.delete_file(path, roots=roots)
        return
    if _takes_verify(env.delete_file):
        env.delete_file(path, roots=roots, verify=verify)
        return
    with env.open_read(path) as fh:
        verify(fh)
    env.delete_file(path, roots=roots)


def quote_command(argv: Sequence[str]) -> str:
    """``argv`` as one shell command line (for running a fixed program through ``exec_command``)."""
    return shlex.join(argv)
