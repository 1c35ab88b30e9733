"""Write confinement without a check-then-use window (SPEC §9.1; issue 10 item 10).

The racing tests flip a directory inside the root between a real directory and a symlink to a
directory outside, as fast as a thread can, while a tool writes through it. Before the writes were
resolved with directory descriptors, some writes landed outside within a fraction of a second.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from phi.errors import ToolError
from phi.tools.apply_patch import apply_patch
from phi.tools.edit_file import CodingEditFileTool
from phi.tools.environment import LocalExecutionEnvironment
from phi.tools.fs_safe import ConfinementError, NotRegularFileError, delete_beneath, write_beneath
from phi.tools.write_file import WriteFileTool

RACE_SECONDS = 0.6


class Flipper:
    """Swaps the symlink ``root/sub`` between ``sub.real`` (inside) and ``outside`` until stopped.

    Each swap is one atomic rename, so ``sub`` always exists: a check that resolves it sees the
    inside directory about half of the time, and the write that follows may see the other one.
    """

    def __init__(self, root: Path, outside: Path) -> None:
        self.root, self.outside = root, outside
        (root / "sub.real").mkdir()
        (root / "sub").symlink_to("sub.real")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _point(self, target: str) -> None:
        temp = self.root / "sub.tmp"
        os.symlink(target, temp)
        os.rename(temp, self.root / "sub")

    def _run(self) -> None:
        while not self.stop.is_set():
            self._point(str(self.outside))
            self._point("sub.real")

    def __enter__(self) -> "Flipper":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)


@pytest.fixture
def race(workdir: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    return workdir, outside


def _race(action, outside: Path, check) -> int:
    """Run ``action`` repeatedly for RACE_SECONDS; returns how many attempts reached ``check``."""
    attempts = 0
    deadline = time.monotonic() + RACE_SECONDS
    while time.monotonic() < deadline:
        try:
            action()
        except (ToolError, OSError):
            pass
        attempts += 1
        assert not check(), f"a write escaped to {outside} after {attempts} attempts"
    return attempts


def test_write_file_race_never_escapes(race, env, ctx):
    workdir, outside = race
    tool = WriteFileTool(env=env)
    with Flipper(workdir, outside):
        attempts = _race(lambda: tool.execute({"path": "sub/f.txt", "content": "pwned"}, ctx), outside,
                         lambda: (outside / "f.txt").exists())
    assert attempts > 50


def test_edit_file_race_never_escapes(race, env, ctx):
    workdir, outside = race
    (outside / "f.txt").write_text("secret = 1\n")
    tool = CodingEditFileTool(env=env)

    def edit() -> None:
        (workdir / "sub.real" / "f.txt").write_text("secret = 1\n")
        tool.execute({"file_path": "sub/f.txt", "old_string": "secret = 1", "new_string": "secret = 2"}, ctx)

    with Flipper(workdir, outside):
        _race(edit, outside, lambda: (outside / "f.txt").read_text() != "secret = 1\n")


def test_apply_patch_race_never_escapes(race, env):
    workdir, outside = race
    patch = "*** Begin Patch\n*** Add File: sub/p.txt\n+pwned\n*** End Patch\n"
    with Flipper(workdir, outside):
        _race(lambda: apply_patch(patch, env), outside, lambda: (outside / "p.txt").exists())


# -- the no-window walk ------------------------------------------------------------------------

def test_symlinks_inside_the_root_are_followed(workdir):
    (workdir / "real").mkdir()
    (workdir / "alias").symlink_to("real")
    (workdir / "abs").symlink_to(workdir / "real")
    (workdir / "real" / "target.txt").write_text("old")
    (workdir / "file-link").symlink_to("real/target.txt")
    write_beneath(str(workdir), ["alias", "a.txt"], b"1", "alias/a.txt")
    write_beneath(str(workdir), ["abs", "b.txt"], b"2", "abs/b.txt")
    write_beneath(str(workdir), ["file-link"], b"new", "file-link")
    assert (workdir / "real" / "a.txt").read_bytes() == b"1" and (workdir / "real" / "b.txt").read_bytes() == b"2"
    assert (workdir / "file-link").is_symlink() and (workdir / "real" / "target.txt").read_text() == "new"


@pytest.mark.parametrize("link", ["../outside", "ABS", "real/../../outside"])
def test_symlinks_leading_out_are_refused(workdir, tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "real").mkdir()
    (workdir / "out").symlink_to(str(outside) if link == "ABS" else link)
    with pytest.raises(ConfinementError, match="leads outside the allowed directory"):
        write_beneath(str(workdir), ["out", "x.txt"], b"x", "out/x.txt")
    with pytest.raises(ConfinementError):
        write_beneath(str(workdir), ["..", "outside", "x.txt"], b"x", "../outside/x.txt")
    assert list(outside.iterdir()) == []


def test_symlink_loop_is_an_error_not_a_hang(workdir):
    (workdir / "a").symlink_to("b")
    (workdir / "b").symlink_to("a")
    with pytest.raises(OSError, match="symbolic links"):
        write_beneath(str(workdir), ["a", "x"], b"x", "a/x")


def test_a_component_swapped_for_a_symlink_after_lookup_fails_closed(workdir, tmp_path, monkeypatch):
    """Simulate the worst interleaving: the swap happens right after the walk looked at ``sub``."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "sub").mkdir()
    real_stat = os.stat

    def stat_then_swap(name, *args, **kwargs):
        result = real_stat(name, *args, **kwargs)
        if name == "sub" and kwargs.get("dir_fd") is not None and (workdir / "sub").is_dir():
            (workdir / "sub").rmdir()
            (workdir / "sub").symlink_to(outside)
        return result

    monkeypatch.setattr(os, "stat", stat_then_swap)
    with pytest.raises(OSError):
        write_beneath(str(workdir), ["sub", "x.txt"], b"x", "sub/x.txt")
    assert list(outside.iterdir()) == []


def test_hard_links_are_replaced_not_written_through(workdir, tmp_path):
    outside = tmp_path / "victim.txt"
    outside.write_text("original")
    os.link(outside, workdir / "linked.txt")
    (workdir / "linked.txt").chmod(0o640)
    env = LocalExecutionEnvironment(str(workdir))
    env.write_file("linked.txt", "changed")
    assert outside.read_text() == "original"
    assert (workdir / "linked.txt").read_text() == "changed"
    assert (workdir / "linked.txt").stat().st_nlink == 1
    assert (workdir / "linked.txt").stat().st_mode & 0o777 == 0o640  # permission bits kept
    assert [p.name for p in workdir.iterdir()] == ["linked.txt"]  # no temporary file left behind


def test_special_and_directory_targets_are_refused(workdir):
    os.mkfifo(workdir / "fifo")
    (workdir / "dir").mkdir()
    with pytest.raises(NotRegularFileError, match="FIFO"):
        write_beneath(str(workdir), ["fifo"], b"x", "fifo")
    with pytest.raises(IsADirectoryError):
        write_beneath(str(workdir), ["dir"], b"x", "dir")
    with pytest.raises(IsADirectoryError):
        delete_beneath(str(workdir), ["dir"], "dir")


def test_delete_removes_the_link_not_its_target(workdir):
    (workdir / "t.txt").write_text("keep")
    (workdir / "l").symlink_to("t.txt")
    delete_beneath(str(workdir), ["l"], "l")
    assert not (workdir / "l").exists() and (workdir / "t.txt").read_text() == "keep"


def test_environment_roots(workdir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    env = LocalExecutionEnvironment(str(workdir))
    with pytest.raises(ConfinementError):
        env.write_file(str(other / "x.txt"), "x", roots=[str(workdir)])
    env.write_file(str(other / "x.txt"), "x", roots=[str(other)])
    env.write_file(str(other / "y.txt"), "y")  # no roots given and outside them: written as named
    assert (other / "x.txt").read_text() == "x" and (other / "y.txt").read_text() == "y"
    # a path that reaches into the root through a symlink outside it is confined to the root
    (tmp_path / "door").symlink_to(workdir)
    env.write_file(str(tmp_path / "door" / "z.txt"), "z")
    assert (workdir / "z.txt").read_text() == "z"


def test_dotdot_above_the_filesystem_root_stays_there(tmp_path):
    (tmp_path / "up").symlink_to("../../../../../../../../../../.." + str(tmp_path))
    write_beneath("/", [*str(tmp_path).strip("/").split("/"), "up", "x.txt"], b"x", "up/x.txt")
    assert (tmp_path / "x.txt").read_bytes() == b"x"
