"""Stores that behave as real stores (issue 24 item 4): no descriptor grows with the runs recorded,
a closed store holds nothing open, read-only media and files are opened read-only and load."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from phi import Agent, ScriptedProvider
from phi.session import JsonDirStore, SessionError, SessionRecorder, SqliteStore

ROOT = Path(__file__).resolve().parents[2]


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_recorded_runs_leave_no_descriptor_behind(kind, tmp_path):
    """Each run ends on its own worker thread; the defect kept one SQLite connection (two
    descriptors) per thread: 9 -> 209 -> 609 descriptors after 0/100/300 runs."""
    store = JsonDirStore(tmp_path) if kind == "json" else SqliteStore(tmp_path / "s.db")
    agent = Agent(provider=ScriptedProvider([], default="ok"), recorder=SessionRecorder(), store=store)
    agent.run("warm up")  # the store's files (database, WAL, shared memory) open once
    before = open_descriptors()
    for n in range(100):
        agent.run(f"run {n}")
    assert open_descriptors() <= before
    assert len(store.load(agent.session_id).loops) == 101
    if isinstance(store, SqliteStore):
        store.close()
        assert open_descriptors() < before  # closing gives them back
    agent.close()


def test_sqlite_threads_share_one_connection(tmp_path):
    with SqliteStore(tmp_path / "s.db") as store:
        before = open_descriptors()
        threads = [threading.Thread(target=store.list_ids) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert open_descriptors() == before


def make_database(path: Path) -> None:
    from phi.session import FirstLoop, Session

    with SqliteStore(path) as store:
        store.save(Session("S", "A", 1.0, 2.0, FirstLoop(1.0)))


def test_sqlite_read_only_opens_without_writing(tmp_path):
    path = tmp_path / "s.db"
    make_database(path)
    before = path.read_bytes(), path.stat().st_mtime_ns
    with SqliteStore(path, read_only=True) as store:
        assert store.read_only and store.list_ids() == ["S"] and store.load("S").agent_id == "A"
        with pytest.raises(SessionError, match="read-only"):
            store.save(store.load("S"))
        with pytest.raises(SessionError, match="read-only"):
            store.delete("S")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before  # SQLite may share memory beside it, no more


LOAD = """
import sys
from phi.session import SqliteStore
store = SqliteStore(sys.argv[1])
print(store.read_only, store.list_ids(), store.load("S").agent_id)
"""


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare(1) for a private read-only bind mount")
def test_sqlite_on_a_read_only_mount_loads(tmp_path):
    """Real read-only media: the directory is bind-mounted read-only in a private mount namespace
    (the machine runs as root, whom file modes do not stop)."""
    source, mount = tmp_path / "media", tmp_path / "mnt"
    source.mkdir()
    mount.mkdir()
    make_database(source / "s.db")
    script = (f"mount --bind -o ro {source} {mount} && "
              f"{sys.executable} -c '{LOAD}' {mount / 's.db'}")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0 and "mount" in done.stderr and "permission" in done.stderr.lower():
        pytest.skip(f"no mount privileges here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True ['S'] A"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to switch to another user")
def test_sqlite_read_only_file_for_a_user_who_cannot_write_it(tmp_path):
    """chmod on a copy, opened by an unprivileged user (a forked child that gave up root)."""
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="phi-ro-"))  # pytest's directories are private to root
    make_database(shared / "s.db")
    os.chmod(shared / "s.db", 0o444)
    os.chmod(shared, 0o555)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.setgid(65534)
            os.setuid(65534)
            store = SqliteStore(shared / "s.db")
            answer = f"{store.read_only} {store.list_ids()} {store.load('S').agent_id}"
        except BaseException as error:
            answer = f"failed: {error!r}"
        os.write(writer, answer.encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    files = sorted(os.listdir(shared))
    os.chmod(shared, 0o755)
    shutil.rmtree(shared)
    assert answer == "True ['S'] A"
    assert files == ["s.db"]  # no journal, no WAL files made


def test_sqlite_a_missing_database_cannot_be_opened_read_only(tmp_path):
    with pytest.raises(SessionError, match="does not exist"):
        SqliteStore(tmp_path / "none.db", read_only=True)


def test_sqlite_after_fork_the_child_opens_its_own_connection(tmp_path):
    store = SqliteStore(tmp_path / "s.db")
    make_database(tmp_path / "other.db")
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        try:
            answer = repr(store.list_ids())
        except BaseException as error:
            answer = f"failed: {error!r}"
        os.write(writer, answer.encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        assert pipe.read() == "[]"
    os.waitpid(pid, 0)
    assert store.list_ids() == []  # the parent's connection still works
    store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
