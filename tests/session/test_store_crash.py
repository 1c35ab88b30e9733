"""Stores under real process death and real concurrency (seed 000 REQ-216; issue 24 item 1): savers
appending to one session are killed with SIGKILL at random moments, again and again; every time
the stored session loads, holds exactly the loops whose saves completed (whole), and takes the
next save. Four processes saving into one SqliteStore — and into one shared session — lose nothing."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phi.session import (
    FirstLoop,
    JsonDirStore,
    LoopRecord,
    LoopStatus,
    NotFound,
    Session,
    SqliteStore,
)
from phi.types import AssistantMessage, TextContent, UserMessage

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(Path(__file__).parent)])}
TRIALS = int(os.environ.get("PHI_CRASH_TRIALS", "12"))  # kills per store; the evaluation ran 200

APPEND_FOREVER = """
import sys
from test_store_crash import big_loop, header, open_store
from phi.session import NotFound
kind, where = sys.argv[1:3]
store = open_store(kind, where)
try:
    n = len(store.load("S").loops)
except NotFound:
    n = 0
print("ready", flush=True)
while True:
    store.save(header([big_loop(n)]))
    n += 1
"""

SAVE_ONE_HUGE = """
import sys
from test_store_crash import big_loop, header
from phi.session import JsonDirStore
store = JsonDirStore(sys.argv[1])
store.load("S")
print("ready", flush=True)
store.save(header([big_loop(1, size=8_000_000)]))
print("saved", flush=True)
"""

SAVE_MANY = """
import sys
from test_store_crash import numbered, shared_loop
from phi.session import SqliteStore
worker, count, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
store = SqliteStore(path)
for n in range(count):
    store.save(numbered(worker, n))
    if n % 50 == 0:
        store.save(shared_loop(worker, n))
print("done", flush=True)
"""


def open_store(kind: str, where: str | Path) -> JsonDirStore | SqliteStore:
    return JsonDirStore(where) if kind == "json" else SqliteStore(where)


def big_loop(n: int, size: int = 4_000) -> LoopRecord:
    """Loop ``n`` of the session: about ``2 * size`` bytes of JSON, the same every time it is made."""
    text = f"loop {n} " + "x" * size
    return LoopRecord(f"S.big.{n}", "S", "A", started_at=1000.0 + n, ended_at=1000.5 + n, status=LoopStatus.COMPLETED,
                      messages=[UserMessage([TextContent(text)], 1), AssistantMessage([TextContent(text)], timestamp=2)])


def header(loops: list[LoopRecord]) -> Session:
    return Session("S", "A", 1000.0, 1000.0, FirstLoop(1000.0), loops=loops)


def numbered(worker: int, n: int) -> Session:
    sid = f"w{worker}-{n}"
    record = LoopRecord(f"{sid}.x.1", sid, f"agent{worker}", started_at=float(n), ended_at=n + 0.25,
                        status=LoopStatus.COMPLETED, messages=[UserMessage([TextContent(f"{worker}/{n}")], n)])
    return Session(sid, f"agent{worker}", float(n), n + 0.25, FirstLoop(float(n)), loops=[record])


def shared_loop(worker: int, n: int) -> Session:
    """One loop of worker ``worker`` in the session all workers share."""
    record = LoopRecord(f"shared.w{worker}.{n}", "shared", "agent", started_at=float(n), ended_at=n + 0.25,
                        status=LoopStatus.COMPLETED, messages=[UserMessage([TextContent(f"{worker}/{n}")], n)])
    return Session("shared", "agent", 0.0, n + 0.25, FirstLoop(0.0), loops=[record])


def start_saver(kind: str, where: Path) -> subprocess.Popen:
    saver = subprocess.Popen([sys.executable, "-c", APPEND_FOREVER, kind, str(where)], env=ENV,
                             stdout=subprocess.PIPE, text=True)
    assert saver.stdout.readline().strip() == "ready"
    return saver


def stored_loops(kind: str, where: Path) -> int:
    """How many loops the session holds; each must be exactly the loop its save wrote."""
    store = open_store(kind, where)
    try:
        session = store.load("S")
    except NotFound:
        return 0
    finally:
        if isinstance(store, SqliteStore):
            store.close()
    assert [r.loop_id for r in session.loops] == [f"S.big.{n}" for n in range(len(session.loops))]
    for n, record in enumerate(session.loops):
        assert record == big_loop(n), f"loop {n} is not whole"
    return len(session.loops)


@pytest.mark.timeout(max(300, TRIALS * 15))
@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_savers_killed_at_random_moments_leave_every_completed_save_whole(kind, tmp_path):
    where = tmp_path / ("sessions" if kind == "json" else "s.db")
    rng = random.Random(24)
    count, torn = 0, 0
    for _trial in range(TRIALS):
        saver = start_saver(kind, where)
        time.sleep(rng.uniform(0.01, 0.12))  # the saver does nothing but save: the kill lands in one
        os.kill(saver.pid, signal.SIGKILL)
        saver.wait(10)
        saver.stdout.close()
        if kind == "json":
            data = (where / "S.jsonl").read_bytes() if (where / "S.jsonl").exists() else b""
            torn += bool(data) and not data.endswith(b"\n")
        else:
            db = sqlite3.connect(where)
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            db.close()
        now = stored_loops(kind, where)
        assert now >= count  # a kill never takes back a completed save
        count = now
        store = open_store(kind, where)  # the next save after a kill is taken
        store.save(header([big_loop(count)]))
        if isinstance(store, SqliteStore):
            store.close()
        count = stored_loops(kind, where)
    assert count >= TRIALS
    if kind == "json":
        assert sorted(os.listdir(where)) == ["S.jsonl"]
        assert (where / "S.jsonl").read_bytes().endswith(b"\n")  # torn lines were cut off before appending
        print(f"{torn} of {TRIALS} kills landed inside a write")


def test_a_saver_killed_inside_its_write_leaves_a_torn_line_that_is_ignored_then_cut_off(tmp_path):
    landed = False
    for attempt in range(10):  # bounded: each attempt kills one saver
        where = tmp_path / f"attempt{attempt}"
        JsonDirStore(where).save(header([big_loop(0)]))
        path = where / "S.jsonl"
        size = path.stat().st_size
        saver = subprocess.Popen([sys.executable, "-c", SAVE_ONE_HUGE, str(where)], env=ENV, stdout=subprocess.PIPE,
                                 text=True)
        assert saver.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and path.stat().st_size == size:
            pass  # the 16 MB line is being written
        os.kill(saver.pid, signal.SIGKILL)
        saver.wait(10)
        saver.stdout.close()
        data = path.read_bytes()
        loaded = JsonDirStore(where).load("S").loops  # the previous version whole, or the new one
        assert loaded == [big_loop(0)] or loaded == [big_loop(0), big_loop(1, size=8_000_000)]
        if not data.endswith(b"\n"):
            landed = True  # the saver died with its line half written
            assert stored_loops("json", where) == 1
            JsonDirStore(where).save(header([big_loop(1)]))
            repaired = path.read_bytes()
            assert repaired.startswith(data[:size]) and repaired.count(b"\n") == 2  # the torn part is gone
            assert stored_loops("json", where) == 2
            break
    assert landed, "no kill landed inside a write in 10 attempts"


@pytest.mark.timeout(300)
def test_four_processes_saving_500_sessions_each_lose_nothing(tmp_path):
    path = tmp_path / "shared.db"
    workers, count = 4, 500
    savers = [subprocess.Popen([sys.executable, "-c", SAVE_MANY, str(w), str(count), str(path)], env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(workers)]
    for saver in savers:
        out, err = saver.communicate(timeout=240)
        assert saver.returncode == 0 and out.strip() == "done", err
    with SqliteStore(path) as store:
        ids = store.list_ids()
        assert len(ids) == len(set(ids)) == workers * count + 1
        expected = {f"w{w}-{n}" for w in range(workers) for n in range(count)} | {"shared"}
        assert set(ids) == expected
        for w in range(workers):
            sessions = store.load_for_agent(f"agent{w}")
            assert {s.session_id for s in sessions} - {"shared"} == {f"w{w}-{n}" for n in range(count)}
            for s in sessions:
                if s.session_id != "shared":
                    assert s == numbered(w, int(s.session_id.split("-")[1]))
        shared = store.load("shared")  # every worker appended its own loops to it: all of them land
        assert sorted(r.loop_id for r in shared.loops) == sorted(f"shared.w{w}.{n}" for w in range(workers)
                                                                 for n in range(0, count, 50))
