"""Files that are not regular files (issue 10 item 9): FIFOs, devices, symlink loops.

Each call runs in a worker thread with a deadline, so a tool that blocks (on a FIFO) or reads
without end (``/dev/zero``) fails the test instead of hanging the suite.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from phi.errors import ToolError
from phi.tools.apply_patch import ApplyPatchTool
from phi.tools.edit_file import CodingEditFileTool, EditFileTool
from phi.tools.find_files import GlobTool, ListDirTool
from phi.tools.read_file import CodingReadFileTool, ReadFileTool
from phi.tools.read_many_files import ReadManyFilesTool
from phi.tools.search import GrepTool, SearchTool
from phi.tools.write_file import WriteFileTool

DEADLINE = 10.0


def bounded(call: Callable[[], Any]) -> Any:
    """``call()`` in a thread; fails if it takes longer than DEADLINE. Exceptions are re-raised."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(DEADLINE)
    assert not worker.is_alive(), "the tool call did not finish (blocked or reading without end)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


@pytest.fixture
def fifo(workdir: Path):
    path = workdir / "pipe"
    os.mkfifo(path)
    yield path
    # unblock any reader/writer an old implementation left waiting on the FIFO
    for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
        try:
            os.close(os.open(path, flags))
        except OSError:
            pass


FIFO_CALLS = {
    "read_file": lambda env, ctx: ReadFileTool(env=env).execute({"path": "pipe"}, ctx),
    "read_file ranged": lambda env, ctx: ReadFileTool(env=env).execute({"path": "pipe", "offset": 2}, ctx),
    "coding read_file": lambda env, ctx: CodingReadFileTool(env=env).execute({"file_path": "pipe"}, ctx),
    "edit_file": lambda env, ctx: EditFileTool(env=env).execute(
        {"path": "pipe", "old_text": "a", "new_text": "b"}, ctx),
    "coding edit_file": lambda env, ctx: CodingEditFileTool(env=env).execute(
        {"file_path": "pipe", "old_string": "a", "new_string": "b"}, ctx),
    "write_file": lambda env, ctx: WriteFileTool(env=env).execute({"path": "pipe", "content": "x"}, ctx),
    "apply_patch update": lambda env, ctx: ApplyPatchTool(env=env).execute(
        {"patch": "*** Begin Patch\n*** Update File: pipe\n@@\n-a\n+b\n*** End Patch"}, ctx),
    "grep": lambda env, ctx: GrepTool(env=env, backend="grep").execute({"pattern": "a", "path": "pipe"}, ctx),
    "search": lambda env, ctx: SearchTool(env=env, backend="grep").execute({"pattern": "a", "path": "pipe"}, ctx),
}


@pytest.mark.parametrize("name", list(FIFO_CALLS))
def test_tools_refuse_a_fifo_at_once(env, ctx, fifo, name):
    with pytest.raises(ToolError) as info:
        bounded(lambda: FIFO_CALLS[name](env, ctx))
    assert "FIFO" in str(info.value) or "regular file" in str(info.value)
    assert fifo.exists() and not fifo.is_file()  # never replaced by a regular file


def test_read_many_files_skips_a_fifo(env, ctx, workdir, fifo):
    (workdir / "ok.txt").write_text("fine\n")
    result = bounded(lambda: ReadManyFilesTool(env=env).execute({"paths": ["pipe", "ok.txt", "*"]}, ctx))
    out = result.content[0].text
    assert "--- ok.txt ---\nfine" in out and "pipe (pipe is a FIFO" in out


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_not_read_forever(env, ctx, device):
    if not os.path.exists(device):
        pytest.skip(f"{device} does not exist on this system")
    with pytest.raises(ToolError, match="character device"):
        bounded(lambda: ReadFileTool(env=env).execute({"path": device}, ctx))
    with pytest.raises(ToolError, match="character device"):
        bounded(lambda: CodingReadFileTool(env=env).execute({"file_path": device, "offset": 1, "limit": 1}, ctx))


def test_reads_stop_at_their_limit(env, workdir):
    from phi.tools.fs_safe import FileTooLargeError

    (workdir / "big.bin").write_bytes(b"x" * 5000)
    assert env.read_bytes("big.bin", 5000) == b"x" * 5000
    with pytest.raises(FileTooLargeError, match="5000 bytes; the limit is 4999 bytes"):
        env.read_bytes("big.bin", 4999)


@pytest.fixture
def looped(workdir: Path) -> Path:
    """A tree with directory symlink loops: a/loop -> .., a/self -> ., b -> a."""
    (workdir / "a").mkdir()
    (workdir / "a" / "one.py").write_text("1")
    (workdir / "a" / "deeper").mkdir()
    (workdir / "a" / "deeper" / "two.py").write_text("2")
    (workdir / "a" / "loop").symlink_to("..")
    (workdir / "a" / "self").symlink_to(".")
    (workdir / "a" / "deeper" / "up").symlink_to("../..")
    (workdir / "b").symlink_to("a")
    return workdir


def test_glob_does_not_follow_symlink_loops(env, ctx, looped):
    result = bounded(lambda: GlobTool(env=env).execute({"pattern": "**/*.py"}, ctx))
    assert sorted(result.content[0].text.split("\n")) == ["a/deeper/two.py", "a/one.py"]
    # a symlink named in the pattern itself is followed
    assert bounded(lambda: env.glob("b/*.py")) == [str(looped / "b" / "one.py")]


def test_read_many_files_with_symlink_loops(env, ctx, looped):
    result = bounded(lambda: ReadManyFilesTool(env=env).execute({"paths": ["**/*.py"]}, ctx))
    assert result.details["files"] == ["a/deeper/two.py", "a/one.py"]


def test_list_dir_with_symlink_loops(env, ctx, looped):
    out = bounded(lambda: ListDirTool(env=env).execute({"depth": 10}, ctx)).content[0].text
    assert out.count("one.py") == 1
