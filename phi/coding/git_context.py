"""The git snapshot of the system prompt (SPEC §14 CODE-5; seed 004 §6.4).

Taken once at session start by running ``git`` in the working directory: the current branch, how
many files are staged, modified, deleted, conflicted or untracked (counts, never the diff; an
untracked directory counts once, as ``git status`` lists it), and the subjects of the last few
commits. The model can always run ``git`` through the shell tool for the
current state; the snapshot only orients it.

Every ``git`` call has a timeout, does not take optional locks (``--no-optional-locks``: a snapshot
never rewrites the index), ignores the variables that would point git at another repository, and
runs with a fixed locale and without ``core.fsmonitor``; given a ``sandbox`` (the environment's
:meth:`~phi.tools.environment.LocalExecutionEnvironment.helper_sandbox`) it runs read-only inside
it, since the repository's config, hooks and filters may come from a sandboxed command. Outside a
work tree (where no git runs at all: :func:`may_be_in_repository`), without a ``git`` executable,
or when git fails or hangs, :func:`git_snapshot` returns None (logged at debug level) and the
prompt simply has no git section.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Sequence

from ..errors import PhiError
from ..log import get_logger

__all__ = ["GitSnapshot", "git_snapshot", "git_root", "may_be_in_repository", "root_and_snapshot",
           "DEFAULT_COMMIT_COUNT", "GIT_TIMEOUT_S"]

log = get_logger(__name__)

#: How many recent commit subjects the snapshot keeps.
DEFAULT_COMMIT_COUNT = 5
#: Seconds one git command may take before the snapshot gives up on it.
GIT_TIMEOUT_S = 5.0
#: what a sandboxed git command may print (its status of a large tree runs to megabytes; unsandboxed, git
#: is read whole, and the counts must not depend on the sandbox)
GIT_CAPTURE_BYTES = 64 << 20
#: The status counts a snapshot keeps, in the order they are shown.
_COUNT_KINDS = ("staged", "modified", "deleted", "conflicted", "untracked")
#: Longest commit subject kept (characters); longer ones end with "...".
MAX_SUBJECT_CHARS = 200

# Variables that make git look at another repository than the one around the working directory
# (set, for example, while running inside a git hook).
_REPOSITORY_VARIABLES = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES",
)


@dataclass(frozen=True)
class GitSnapshot:
    """What :func:`git_snapshot` saw. ``branch`` is None on a detached HEAD (then ``head`` names the commit)."""

    root: str
    branch: str | None
    head: str | None = None  # short commit id; None before the first commit
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    staged: int = 0
    modified: int = 0
    deleted: int = 0
    conflicted: int = 0
    untracked: int = 0
    recent_commits: tuple[str, ...] = ()  # "abc1234 subject", newest first

    @property
    def is_clean(self) -> bool:
        return not any(getattr(self, kind) for kind in _COUNT_KINDS)

    def branch_label(self) -> str:
        """The branch name, or ``(detached at abc1234)`` / ``(detached HEAD)``."""
        if self.branch is not None:
            return self.branch
        return f"(detached at {self.head})" if self.head else "(detached HEAD)"

    def status_summary(self) -> str:
        """``clean`` or counts such as ``1 staged, 2 modified, 3 untracked``."""
        shown = [f"{getattr(self, kind)} {kind}" for kind in _COUNT_KINDS if getattr(self, kind)]
        return ", ".join(shown) if shown else "clean"

    def render(self) -> str:
        """The ``<git>`` section of the system prompt."""
        branch = self.branch_label()
        if self.upstream:
            branch += f" (tracking {self.upstream}; ahead {self.ahead}, behind {self.behind})"
        lines = ["<git>", f"Branch: {branch}", f"Status: {self.status_summary()}"]
        if self.recent_commits:
            lines.append("Recent commits (newest first):")
            lines += [f"- {subject}" for subject in self.recent_commits]
        elif self.head is None:
            lines.append("Recent commits: none yet")
        lines.append("This is a snapshot from the start of the session; run git through the shell tool "
                     "for the current state.")
        lines.append("</git>")
        return "\n".join(lines)


def _git_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
    env.update(LC_ALL="C", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    return env


def _run_git(cwd: str, args: Sequence[str], timeout: float, sandbox: str | None = None) -> str | None:
    """stdout of ``git args`` in ``cwd``, or None when git is missing, fails or times out."""
    command = ["git", "--no-optional-locks", "-c", "core.quotepath=off", "-c", "log.showSignature=false",
               "-c", "core.fsmonitor=false", *args]
    if sandbox is not None:
        return _run_sandboxed(cwd, command, timeout, sandbox)
    try:
        done = subprocess.run(command, cwd=cwd, env=_git_environment(), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        log.debug("git %s in %s took longer than %.1fs; no git snapshot", args[0], cwd, timeout)
        return None
    except OSError as exc:  # no git executable, or cwd missing / not a directory
        log.debug("git %s in %s could not run: %s", args[0], cwd, exc)
        return None
    if done.returncode != 0:
        log.debug("git %s in %s exited %d: %s", args[0], cwd, done.returncode,
                  done.stderr.decode("utf-8", "replace").strip()[:200])
        return None
    return done.stdout.decode("utf-8", "replace")


def _run_sandboxed(cwd: str, command: list[str], timeout: float, sandbox: str) -> str | None:
    from ..tools.process import run_process

    try:
        done = run_process(command, cwd=cwd, env=_git_environment(), timeout_ms=max(1, int(timeout * 1000)),
                           sandbox=sandbox, max_capture_bytes=GIT_CAPTURE_BYTES)
    except (OSError, PhiError) as exc:
        log.debug("git %s in %s could not run: %s", command[-1], cwd, exc)
        return None
    if done.exit_code != 0 or done.timed_out:
        log.debug("git in %s exited %d%s: %s", cwd, done.exit_code, " (timed out)" if done.timed_out else "",
                  done.stderr.strip()[:200])
        return None
    return done.stdout


def git_root(cwd: str | os.PathLike[str], *, timeout: float = GIT_TIMEOUT_S, sandbox: str | None = None) -> str | None:
    """The top directory of the work tree around ``cwd``, or None outside one (or without git)."""
    where = os.fspath(cwd)
    return _top_level(where, timeout, sandbox) if may_be_in_repository(where) else None


def _top_level(where: str, timeout: float, sandbox: str | None) -> str | None:
    """What ``git rev-parse --show-toplevel`` says in ``where`` (None when it fails)."""
    out = _run_git(where, ["rev-parse", "--show-toplevel"], timeout, sandbox)
    return (out or "").strip() or None


def may_be_in_repository(cwd: str) -> bool:
    """False when git could not find a repository from ``cwd``: neither it nor any directory above
    it holds a ``.git`` entry or is itself a git directory (a bare repository, the inside of
    ``.git``). Only names are looked at, so asking costs no process; a sandboxed git costs one each.
    The directories above are the real ones, as git walks them: a ``cwd`` reached through a symbolic
    link is looked at where it lives."""
    try:
        here = os.path.realpath(cwd)
    except (OSError, ValueError, RecursionError):  # a vanished directory, a long chain of links: git decides
        return True
    while True:
        if os.path.lexists(os.path.join(here, ".git")) or _is_git_directory(here):
            return True
        above = os.path.dirname(here)
        if above == here:
            return False
        here = above


def _is_git_directory(path: str) -> bool:
    """What git itself checks before it takes a directory for a repository's own (HEAD, objects, refs)."""
    return (os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))
            and os.path.isdir(os.path.join(path, "refs")))


def _parse_status(text: str) -> tuple[dict[str, str], dict[str, int]]:
    """Branch headers and counts (keyed by :data:`_COUNT_KINDS`) from ``git status --porcelain=v2 --branch -z``."""
    headers: dict[str, str] = {}
    counts: dict[str, int] = dict.fromkeys(_COUNT_KINDS, 0)
    records = iter(text.split("\0"))
    for record in records:
        kind, _, rest = record.partition(" ")
        if kind == "#":  # "# branch.oid abc...", "# branch.head main", "# branch.ab +1 -0", ...
            key, _, value = rest.partition(" ")
            headers[key] = value
        elif kind in ("1", "2"):  # ordinary change / rename or copy: "<XY> ..."; "." means unchanged
            if len(rest) < 2:
                continue
            index, worktree = rest[0], rest[1]
            counts["staged"] += index != "."
            counts["deleted"] += worktree == "D"
            counts["modified"] += worktree not in (".", "D")
            if kind == "2":
                next(records, None)  # a rename's original path is the following field
        elif kind == "u":
            counts["conflicted"] += 1
        elif kind == "?":
            counts["untracked"] += 1
    return headers, counts


def _ahead_behind(value: str) -> tuple[int, int]:
    parts = value.split()  # "+1 -2"
    try:
        return (abs(int(parts[0])), abs(int(parts[1]))) if len(parts) == 2 else (0, 0)
    except ValueError:
        return 0, 0


def _subject(line: str) -> str:
    return line if len(line) <= MAX_SUBJECT_CHARS else line[:MAX_SUBJECT_CHARS - 3] + "..."


def git_snapshot(cwd: str | os.PathLike[str], *, commits: int = DEFAULT_COMMIT_COUNT,
                 timeout: float = GIT_TIMEOUT_S, sandbox: str | None = None,
                 root: str | None = None) -> GitSnapshot | None:
    """Branch, status counts and the last ``commits`` subjects of the repository around ``cwd``.

    None outside a git work tree, when ``git`` is not installed, or when a git command fails or
    takes longer than ``timeout`` seconds. ``root``: the work tree's top directory when the caller
    has just asked :func:`git_root` (each git command is a process, sandboxed: one fewer).
    """
    return root_and_snapshot(cwd, commits=commits, timeout=timeout, sandbox=sandbox, root=root)[1]


def root_and_snapshot(cwd: str | os.PathLike[str], *, commits: int = DEFAULT_COMMIT_COUNT,
                      timeout: float = GIT_TIMEOUT_S, sandbox: str | None = None,
                      root: str | None = None) -> tuple[str | None, GitSnapshot | None]:
    """:func:`git_root` and :func:`git_snapshot` at once. Outside a repository (no ``.git`` above
    ``cwd``: :func:`may_be_in_repository`) no git runs; inside, the root, the status and the log
    are asked side by side (each is a process, sandboxed, and a prompt is built before every input:
    their times should not add up)."""
    from concurrent.futures import ThreadPoolExecutor

    where = os.fspath(cwd)
    if root is None and not may_be_in_repository(where):
        return None, None
    status_args = ["status", "--porcelain=v2", "--branch", "-z"]
    log_args = ["log", f"-n{commits}", "--no-color", "--format=%h %s"]
    with ThreadPoolExecutor(2, thread_name_prefix="phi-git") as pool:  # the root and the log; the status here
        root_future = pool.submit(_top_level, where, timeout, sandbox) if root is None else None
        log_future = pool.submit(_run_git, where, log_args, timeout, sandbox) if commits > 0 else None
        status = _run_git(where, status_args, timeout, sandbox)
        log_out = log_future.result() if log_future is not None else ""
        if root_future is not None:
            root = root_future.result()
    if root is None:
        return None, None
    if status is None:
        return root, None
    headers, counts = _parse_status(status)
    oid = headers.get("branch.oid", "")
    head_name = headers.get("branch.head", "")
    has_commits = bool(oid) and oid != "(initial)"
    log_text = (log_out or "") if has_commits else ""
    ahead, behind = _ahead_behind(headers.get("branch.ab", ""))
    return root, GitSnapshot(
        root=root,
        branch=None if head_name in ("", "(detached)") else head_name,
        head=oid[:7] if has_commits else None,
        upstream=headers.get("branch.upstream") or None,
        ahead=ahead, behind=behind, **counts,
        recent_commits=tuple(_subject(line) for line in (log_text or "").splitlines() if line),
    )
