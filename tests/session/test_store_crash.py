"""Stores under real process death and real concurrency (seed 000 REQ-216): a saver killed with
SIGKILL mid-save leaves the previous version loadable; four processes saving into one SqliteStore
lose nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from phi.session import FirstLoop, JsonDirStore, LoopRecord, LoopStatus, Session, SqliteStore
from phi.types import AssistantMessage, TextContent, UserMessage

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(Path(__file__).parent)])}

SAVE_FOREVER = """
import json, sys
from phi.session import JsonDirStore, Session, SqliteStore
kind, where, source = sys.argv[1:4]
store = JsonDirStore(where) if kind == "json" else SqliteStore(where)
session = Session.from_json(json.load(open(source)))
print("ready", flush=True)
while True:
    store.save(session)
"""

SAVE_MANY = """
import sys
from test_store_crash import numbered
from phi.session import SqliteStore
worker, count, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
store = SqliteStore(path)
for n in range(count):
    store.save(numbered(worker, n))
    if n % 50 == 0:
        store.save(numbered(worker, n, session_id="shared"))
print("done", flush=True)
"""


def big_session(label: str, loops: int = 120, size: int = 100_000) -> Session:
    """About ``loops * size * 2`` bytes of JSON: long enough to write that a kill can land inside."""
    records = []
    for i in range(loops):
        text = f"{label} {i} " + "x" * size
        records.append(LoopRecord(f"S.big.{i}", "S", "A", started_at=1000.0 + i, ended_at=1000.5 + i,
                                  status=LoopStatus.COMPLETED,
                                  messages=[UserMessage([TextContent(text)], 1), AssistantMessage([TextContent(text)])]))
    return Session("S", "A", 1000.0, 1000.0 + loops, FirstLoop(1000.0), loops=records)


def numbered(worker: int, n: int, session_id: str | None = None) -> Session:
    sid = session_id or f"w{worker}-{n}"
    record = LoopRecord(f"{sid}.x.1", sid, f"agent{worker}", started_at=float(n), ended_at=n + 0.25,
                        status=LoopStatus.COMPLETED, messages=[UserMessage([TextContent(f"{worker}/{n}")], n)])
    return Session(sid, f"agent{worker}", float(n), n + 0.25, FirstLoop(float(n)), loops=[record])


def start_saver(kind: str, where: Path, source: Path) -> subprocess.Popen:
    saver = subprocess.Popen([sys.executable, "-c", SAVE_FOREVER, kind, str(where), str(source)], env=ENV,
                             stdout=subprocess.PIPE, text=True)
    assert saver.stdout.readline().strip() == "ready"
    return saver


def test_json_store_killed_mid_save_keeps_the_previous_version(tmp_path):
    directory = tmp_path / "sessions"
    store = JsonDirStore(directory)
    old, new = big_session("old"), big_session("new")
    store.save(old)
    source = tmp_path / "new.json"
    source.write_text(json.dumps(new.to_json()))
    full_size = len(json.dumps(new.to_json(), indent=2, ensure_ascii=False).encode())
    landed_mid_write = False
    for _attempt in range(10):  # bounded: each attempt kills one saver
        saver = start_saver("json", directory, source)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(n.startswith(".") for n in os.listdir(directory)):
            pass  # a hidden temp file exists exactly while a save is between mkstemp and rename
        os.kill(saver.pid, signal.SIGKILL)
        saver.wait(10)
        saver.stdout.close()
        assert store.load("S") in (old, new)  # whole, either version
        leftovers = [directory / n for n in os.listdir(directory) if n.startswith(".")]
        if leftovers and leftovers[0].stat().st_size < full_size:
            landed_mid_write = True  # the saver died with its temp file half written
            break
        for leftover in leftovers:
            leftover.unlink()
    assert landed_mid_write, "no kill landed inside a write in 10 attempts"
    assert store.list_ids() == ["S"]  # the temp file is not a session


def test_sqlite_store_killed_mid_save_stays_consistent(tmp_path):
    path = tmp_path / "s.db"
    old, new = big_session("old", loops=40), big_session("new", loops=40)
    with SqliteStore(path) as store:
        store.save(old)
    source = tmp_path / "new.json"
    source.write_text(json.dumps(new.to_json()))
    rng = random.Random(7)
    for _attempt in range(3):
        saver = start_saver("sqlite", path, source)
        time.sleep(rng.uniform(0.05, 0.4))  # the saver does nothing but save: the kill lands in one
        os.kill(saver.pid, signal.SIGKILL)
        saver.wait(10)
        saver.stdout.close()
        with SqliteStore(path) as store:
            assert store.load("S") in (old, new) and store.list_ids() == ["S"]
        db = sqlite3.connect(path)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.close()


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
        shared = store.load("shared")
        worker = int(shared.agent_id.removeprefix("agent"))
        assert shared == numbered(worker, int(shared.loops[0].messages[0].text.split("/")[1]), session_id="shared")
