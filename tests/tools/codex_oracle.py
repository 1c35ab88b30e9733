"""Differential harness: phi's apply_patch against the real codex ``apply_patch`` binary.

The oracle is the native binary shipped in npm ``@openai/codex`` (installed by ``scripts/install-codex``,
which ``scripts/test`` runs, into ``$PHI_CODEX_CACHE`` or ``~/.cache/phi-test/codex``; never into the
repository). ``--codex-run-as-apply-patch PATCH`` makes it behave as the apply_patch CLI in its cwd.

A case (files + patch text) runs twice in the same sandbox path, once per implementation, and the
outcomes are compared: success or failure, the bytes of every file and the set of directories under
the sandbox, and on success the summary printed on stdout. Two differences are intended and
checked as such (see docs/tools.md):

* confinement — a patch that touches a path outside the working directory: phi refuses it before
  changing anything, codex writes there;
* a move onto its own path — codex writes the file and then deletes it; phi keeps the updated
  file, so phi must end exactly as codex does on the same patch without that ``*** Move to:`` line.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from phi.errors import ToolError
from phi.tools.apply_patch import apply_patch
from phi.tools.environment import LocalExecutionEnvironment
from phi.tools.patch_parser import (
    END_OF_FILE, MOVE_TO, UPDATE_FILE, WHITESPACE, PatchParseError, UpdateFile, parse_patch,
)

DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "phi-test", "codex")
WORK = "work"  # the cwd inside a sandbox; ``..`` from it stays inside the sandbox


def scratch_base() -> str | None:
    """Where to put sandboxes: a memory-backed directory when there is one (the fuzz creates and
    removes thousands of small trees, several times faster there), else the default temp dir."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def codex_cache() -> str:
    return os.environ.get("PHI_CODEX_CACHE") or DEFAULT_CACHE


@dataclass
class Oracle:
    binary: str
    version: str


def find_codex() -> tuple[Oracle | None, str]:
    """The installed oracle, or None and the reason it is not available."""
    cache = codex_cache()
    pattern = os.path.join(cache, "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex")
    binaries = sorted(glob.glob(pattern))
    if not binaries:
        reason = f"the codex apply_patch oracle is not installed in {cache}"
        error_file = os.path.join(cache, "install-error.txt")
        if os.path.isfile(error_file):
            reason += ": " + Path(error_file).read_text(encoding="utf-8", errors="replace").strip()
        else:
            reason += " (run scripts/install-codex, which needs npm)"
        return None, reason
    manifest = os.path.join(cache, "node_modules", "@openai", "codex", "package.json")
    try:
        version = json.loads(Path(manifest).read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        version = "unknown"
    return Oracle(binaries[0], version), ""


@dataclass
class Outcome:
    ok: bool
    output: str  # stdout on success, the error text otherwise
    tree: dict[str, bytes | None] = field(default_factory=dict)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (None) under ``root``, by relative path."""
    tree: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        tree[rel] = None if path.is_dir() and not path.is_symlink() else path.read_bytes()
    return tree


def materialise(sandbox: Path, files: dict[str, bytes | None]) -> Path:
    """Empty ``sandbox``, then create ``files`` (paths relative to the work dir; None = directory)."""
    if sandbox.exists():
        shutil.rmtree(sandbox)
    work = sandbox / WORK
    work.mkdir(parents=True)
    for rel, data in files.items():
        target = work / rel
        if data is None:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return work


def initial_tree(files: dict[str, bytes | None]) -> dict[str, bytes | None]:
    """What :func:`snapshot` of a sandbox returns right after :func:`materialise` of ``files``."""
    tree: dict[str, bytes | None] = {WORK: None}
    for rel, data in files.items():
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            tree["/".join([WORK, *parts[:depth]])] = None
        tree[f"{WORK}/{rel}"] = data
    return dict(sorted(tree.items()))


def run_codex(oracle: Oracle, sandbox: Path, files: dict[str, bytes | None], patch: str) -> Outcome:
    work = materialise(sandbox, files)
    proc = subprocess.run([oracle.binary, "--codex-run-as-apply-patch", patch], cwd=work,
                          capture_output=True, timeout=60)
    ok = proc.returncode == 0
    text = (proc.stdout if ok else proc.stderr).decode("utf-8", errors="replace")
    return Outcome(ok, text.rstrip("\n"), snapshot(sandbox))


def run_phi(sandbox: Path, files: dict[str, bytes | None], patch: str) -> Outcome:
    work = materialise(sandbox, files)
    try:
        result = apply_patch(patch, LocalExecutionEnvironment(str(work)))
    except ToolError as exc:
        return Outcome(False, str(exc), snapshot(sandbox))
    return Outcome(True, result.summary(), snapshot(sandbox))


def _without_self_moves(patch: str, work: Path) -> str | None:
    """``patch`` minus its ``*** Move to:`` lines that name the file's own path (None: there are none)."""
    try:
        hunks = parse_patch(patch)
    except PatchParseError:
        return None
    env = LocalExecutionEnvironment(str(work))
    selves = {MOVE_TO + h.move_path for h in hunks if isinstance(h, UpdateFile) and h.move_path
              and env.resolve_path(h.path) == env.resolve_path(h.move_path)}
    if not selves:
        return None
    kept: list[str] = []
    for line in patch.split("\n"):
        header = next((k for k in reversed(kept) if k.rstrip(WHITESPACE) != END_OF_FILE), "")
        if not (line.rstrip(WHITESPACE) in selves and UPDATE_FILE in header):
            kept.append(line)
    return "\n".join(kept)


def _leaves_root(patch: str, work: Path) -> bool:
    try:
        hunks = parse_patch(patch)
    except PatchParseError:
        return False
    env = LocalExecutionEnvironment(str(work))
    root = str(work)
    for hunk in hunks:
        for path in (hunk.path, getattr(hunk, "move_path", None)):
            if path is not None and not (env.resolve_path(path) + os.sep).startswith(root + os.sep):
                return True
    return False


@dataclass
class Verdict:
    agree: bool
    intended: str = ""  # "" | "confinement" | "self-move"
    problem: str = ""
    codex: Outcome | None = None
    phi: Outcome | None = None


def _differences(expected: Outcome, actual: Outcome, summaries: bool = True) -> str:
    if expected.ok != actual.ok:
        return f"codex {'succeeded' if expected.ok else 'failed'} but phi {'succeeded' if actual.ok else 'failed'}"
    if expected.tree != actual.tree:
        paths = sorted(set(expected.tree) | set(actual.tree))
        changed = [p for p in paths if expected.tree.get(p, b"<absent>") != actual.tree.get(p, b"<absent>")]
        return "file trees differ at " + ", ".join(changed)
    if summaries and expected.ok and expected.output != actual.output:
        return "success summaries differ"
    return ""


def compare(oracle: Oracle, sandbox: Path, files: dict[str, bytes | None], patch: str) -> Verdict:
    """Run ``patch`` on ``files`` with both implementations and judge the difference."""
    work = sandbox / WORK
    codex = run_codex(oracle, sandbox, files, patch)
    phi = run_phi(sandbox, files, patch)
    if _leaves_root(patch, work):
        problem = "" if not phi.ok and phi.tree == initial_tree(files) else "phi did not refuse a path outside the root cleanly"
        return Verdict(not problem, "confinement", problem, codex, phi)
    rewritten = _without_self_moves(patch, work)
    if rewritten is not None:
        expected = run_codex(oracle, sandbox, files, rewritten)
        # phi's summary names the move target as codex prints it; when codex failed (e.g. deleting
        # the file it had just lost) there is no codex summary to compare with
        expected.output = codex.output
        problem = _differences(expected, phi, summaries=codex.ok)
        return Verdict(not problem, "self-move", problem, codex, phi)
    problem = _differences(codex, phi)
    return Verdict(not problem, "", problem, codex, phi)
