"""Stores keep a session as an append-only set of loop records (SPEC SESS-6, issue 24 items 1, 2, 4):
a save writes only what is new, torn last records are ignored, the earlier whole-file format loads
and migrates, stored loops are never lost by a save, conflicting writers get SessionConflict."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest

from phi.session import (
    CorruptSession,
    Explicit,
    FirstLoop,
    JsonDirStore,
    LoopRecord,
    LoopStatus,
    NotFound,
    Session,
    SessionStore,
    SpawnRef,
    SqliteStore,
)
from phi.types import AssistantMessage, TextContent, Usage, UserMessage


def loop(session_id: str, n: int, text: str = "answer", **fields: object) -> LoopRecord:
    return LoopRecord(f"{session_id}.m.{n}", session_id, "A", started_at=100.0 + n, ended_at=100.5 + n,
                      status=LoopStatus.COMPLETED,
                      messages=[UserMessage([TextContent(f"question {n}")], 1),
                                AssistantMessage([TextContent(text)], timestamp=2)],
                      usage=Usage(input=n), **fields)  # type: ignore[arg-type]


def session(session_id: str, *numbers: int, text: str = "answer", active: float | None = None) -> Session:
    loops = [loop(session_id, n, text) for n in numbers]
    last = active if active is not None else 100.5 + max(numbers, default=0)
    return Session(session_id, "A", 100.0, last, FirstLoop(100.0), loops=loops)


@pytest.fixture(params=["json", "sqlite"])
def kind(request):
    return request.param


def open_store(kind: str, tmp_path) -> SessionStore:
    return JsonDirStore(tmp_path / "sessions") if kind == "json" else SqliteStore(tmp_path / "sessions.db")


def close(store: SessionStore) -> None:
    if isinstance(store, SqliteStore):
        store.close()


def test_a_save_of_new_loops_keeps_every_stored_loop(kind, tmp_path):
    store = open_store(kind, tmp_path)
    store.save(session("S", 1, 2))
    store.save(session("S", 3))  # only the new loop, as flush_changes hands it out
    stored = store.load("S")
    assert [r.loop_id for r in stored.loops] == ["S.m.1", "S.m.2", "S.m.3"]
    assert stored == session("S", 1, 2, 3)
    close(store)


def test_a_second_store_object_appends_instead_of_replacing(kind, tmp_path):
    """What a new process does: another store object on the same place, a session holding only the
    loops recorded there (the defect: the first save replaced the stored session)."""
    first = open_store(kind, tmp_path)
    first.save(session("S", 1, 2))
    close(first)
    later = open_store(kind, tmp_path)
    resumed = session("S", 3)
    resumed.created_at, resumed.formation = 500.0, FirstLoop(500.0)  # the new process's recorder saw it start later
    later.save(resumed)
    stored = later.load("S")
    assert [r.loop_id for r in stored.loops] == ["S.m.1", "S.m.2", "S.m.3"]
    assert (stored.created_at, stored.formation) == (100.0, FirstLoop(100.0))  # formed once, first
    assert stored.last_active_at == 103.5
    close(later)


def test_header_merge_keeps_what_either_side_knows(kind, tmp_path):
    store = open_store(kind, tmp_path)
    first = session("S", 1)
    first.parent_spawn_ref = SpawnRef("P", "P.m.1", "call_1", "delegate")
    first.extra = {"scope": "ephemeral", "keep": 1}
    store.save(first)
    second = session("S", 2)
    second.formation, second.extra = Explicit(100.0), {"scope": "persistent"}  # a tie: the saved one wins
    store.save(second)
    stored = store.load("S")
    assert stored.parent_spawn_ref == SpawnRef("P", "P.m.1", "call_1", "delegate")
    assert stored.extra == {"scope": "persistent", "keep": 1} and stored.formation == Explicit(100.0)
    close(store)


def test_nothing_new_writes_nothing(kind, tmp_path):
    store = open_store(kind, tmp_path)
    store.save(session("S", 1, 2))
    if kind == "json":
        path = tmp_path / "sessions" / "S.jsonl"
        size = path.stat().st_size
        store.save(session("S", 1, 2))
        store.save(session("S", 2))
        assert path.stat().st_size == size
    else:
        seq = sqlite3.connect(tmp_path / "sessions.db").execute("SELECT saved_seq FROM phi_sessions").fetchone()
        store.save(session("S", 1, 2))
        assert sqlite3.connect(tmp_path / "sessions.db").execute("SELECT saved_seq FROM phi_sessions").fetchone() == seq
    close(store)


def test_json_each_save_appends_one_line_with_only_its_loops(tmp_path):
    store = JsonDirStore(tmp_path)
    store.save(session("S", 1, 2))
    before = (tmp_path / "S.jsonl").read_bytes()
    store.save(session("S", 3, active=200.0))
    after = (tmp_path / "S.jsonl").read_bytes()
    assert after.startswith(before)  # appended, nothing rewritten
    line = json.loads(after[len(before):])
    assert [r["loop_id"] for r in line["loops"]] == ["S.m.3"] and line["last_active_at"].startswith("1970-01-01T00:03:20")


def test_sqlite_a_save_touches_only_new_and_changed_rows(tmp_path):
    with SqliteStore(tmp_path / "s.db") as store:
        store.save(session("S", *range(1, 51)))
        statements: list[str] = []
        store._use(lambda connection: connection.set_trace_callback(statements.append), "trace")
        store.save(session("S", 51))
        changed = loop("S", 7, text="edited answer")
        store.save(Session("S", "A", 100.0, 151.5, FirstLoop(100.0), loops=[changed]))
        writes = [" ".join(s.split()[:4]) for s in statements if s.startswith(("INSERT", "UPDATE", "DELETE"))]
        assert writes == ["INSERT INTO phi_session_loops (session_id,", "INSERT OR REPLACE INTO",  # the new loop
                          "UPDATE phi_session_loops SET digest", "INSERT OR REPLACE INTO"]  # the changed one
        assert sum("'S.m.7'" in s for s in statements if s.startswith("UPDATE")) == 1
        assert store.load("S").get_loop("S.m.7").messages[1].text == "edited answer"


# --------------------------------------------------------------------------- torn records


def test_json_a_torn_last_line_is_ignored_and_cut_off_by_the_next_save(tmp_path):
    store = JsonDirStore(tmp_path)
    store.save(session("S", 1))
    path = tmp_path / "S.jsonl"
    whole = path.read_bytes()
    with open(path, "ab") as log:
        log.write(b'{"session_id":"S","agent_id":"A","loops":[{"loop_id":"S.m.2","mess')  # killed mid-write
    assert JsonDirStore(tmp_path).load("S") == session("S", 1)
    JsonDirStore(tmp_path).save(session("S", 2))
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[0] == whole and len(lines) == 2 and lines[1].endswith(b"\n")
    assert JsonDirStore(tmp_path).load("S") == session("S", 1, 2)


def test_json_a_complete_line_that_is_not_a_session_is_named(tmp_path):
    store = JsonDirStore(tmp_path)
    store.save(session("S", 1))
    broken = session("S", 2).to_json()
    del broken["loops"][0]["status"]
    with open(tmp_path / "S.jsonl", "ab") as log:
        log.write(json.dumps(broken).encode() + b"\n")
    with pytest.raises(CorruptSession) as caught:
        store.load("S")
    assert "S.jsonl line 2" in str(caught.value) and caught.value.field == "loops[0].status"
    with pytest.raises(CorruptSession):
        store.save(session("S", 3))  # never appended to past a bad record


def test_json_a_file_with_no_complete_line_is_not_a_session(tmp_path):
    (tmp_path / "S.jsonl").write_bytes(b'{"session_id":"S","ag')  # the very first save was killed
    store = JsonDirStore(tmp_path)
    with pytest.raises(NotFound):
        store.load("S")
    store.save(session("S", 1))
    assert store.load("S") == session("S", 1)
    (tmp_path / "T.jsonl").write_bytes(b"")
    assert store.list_ids() == ["S"]


# --------------------------------------------------------------------------- the earlier format


def test_json_the_earlier_whole_file_format_loads_and_migrates_on_the_next_save(tmp_path):
    old = session("S", 1, 2)
    (tmp_path / "S.json").write_text(json.dumps(old.to_json(), indent=2))
    store = JsonDirStore(tmp_path)
    assert store.list_ids() == ["S"] and store.load("S") == old
    store.save(session("S", 3))
    assert sorted(os.listdir(tmp_path)) == ["S.jsonl"]
    assert JsonDirStore(tmp_path).load("S") == session("S", 1, 2, 3)


def test_json_a_migration_interrupted_after_the_new_file_leaves_nothing_twice(tmp_path):
    old = session("S", 1)
    (tmp_path / "S.json").write_text(json.dumps(old.to_json(), indent=2))
    store = JsonDirStore(tmp_path)
    store.save(session("S", 2))
    (tmp_path / "S.json").write_text(json.dumps(old.to_json(), indent=2))  # as if the removal never happened
    assert store.list_ids() == ["S"] and JsonDirStore(tmp_path).load("S") == session("S", 1, 2)
    JsonDirStore(tmp_path).save(session("S", 3))
    assert sorted(os.listdir(tmp_path)) == ["S.jsonl"]


def test_sqlite_rows_of_the_earlier_format_load_and_migrate_on_the_next_save(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE phi_sessions (session_id TEXT PRIMARY KEY NOT NULL, agent_id TEXT NOT NULL,
            created_at REAL NOT NULL, last_active_at REAL NOT NULL, saved_seq INTEGER NOT NULL,
            saved_at REAL NOT NULL, data TEXT NOT NULL);
        PRAGMA application_id = 1885890931;
    """)
    old = session("S", 1, 2)
    db.execute("INSERT INTO phi_sessions VALUES ('S', 'A', 100.0, 102.5, 1, 0.0, ?)", (json.dumps(old.to_json()),))
    db.commit()
    db.close()
    with SqliteStore(path) as store:
        assert store.load("S") == old
        store.save(session("S", 3))
        assert store.load("S") == session("S", 1, 2, 3)
    db = sqlite3.connect(path)
    assert "loops" not in json.loads(db.execute("SELECT data FROM phi_sessions").fetchone()[0])
    assert db.execute("SELECT COUNT(*) FROM phi_session_loops").fetchone() == (3,)
    db.close()


# --------------------------------------------------------------------------- conflicts


def test_two_writers_of_different_loops_both_land(kind, tmp_path):
    base = open_store(kind, tmp_path)
    base.save(session("S", 1))
    one, two = open_store(kind, tmp_path), open_store(kind, tmp_path)
    one.load("S"), two.load("S")
    one.save(session("S", 2))
    two.save(session("S", 3))
    assert [r.loop_id for r in open_store(kind, tmp_path).load("S").loops] == ["S.m.1", "S.m.2", "S.m.3"]
    for store in (base, one, two):
        close(store)


def test_a_writer_that_did_not_see_another_writers_loop_gets_a_conflict_and_writes_nothing(kind, tmp_path):
    from phi.session import SessionConflict

    one, two = open_store(kind, tmp_path), open_store(kind, tmp_path)
    one.save(session("S", 1))
    two.load("S")
    one.save(session("S", 2, text="from process one"))
    with pytest.raises(SessionConflict) as caught:
        two.save(session("S", 2, 3, text="from process two"))  # the same next loop id, resumed from one point
    assert caught.value.loop_ids == ("S.m.2",) and caught.value.session_id == "S"
    stored = open_store(kind, tmp_path).load("S")
    assert [r.loop_id for r in stored.loops] == ["S.m.1", "S.m.2"]  # nothing of the refused save
    assert stored.loops[1].messages[-1].text == "from process one"
    two.save(session("S", 2, text="from process one"))  # what is already there is no conflict
    for store in (one, two):
        close(store)


def test_a_writer_may_change_a_loop_it_has_seen(kind, tmp_path):
    from phi.session import SessionConflict

    one, two = open_store(kind, tmp_path), open_store(kind, tmp_path)
    one.save(session("S", 1, 2))
    parent = two.load("S").loops[0]
    parent.status = LoopStatus.ABORTED
    two.save(Session("S", "A", 100.0, 103.5, FirstLoop(100.0), loops=[parent, loop("S", 3)]))
    assert open_store(kind, tmp_path).load("S").get_loop("S.m.1").status is LoopStatus.ABORTED
    stale = session("S", 1, text="stale copy of loop 1")
    with pytest.raises(SessionConflict):
        one.save(stale)  # one never saw two's change of S.m.1
    for store in (one, two):
        close(store)


# --------------------------------------------------------------------------- store hygiene


def test_json_stale_temp_files_of_killed_saves_are_removed_on_open(tmp_path):
    old = tmp_path / ".S.k2j3h4.tmp"
    fresh = tmp_path / ".T.a8b9c0.tmp"
    foreign = tmp_path / ".notes.tmp"
    for path in (old, fresh, foreign):
        path.write_text('{"session_id": "S", "trunc')
    long_ago = time.time() - 120
    os.utime(old, (long_ago, long_ago))
    os.utime(foreign, (long_ago, long_ago))
    JsonDirStore(tmp_path)
    assert not old.exists() and fresh.exists() and foreign.exists()


def test_both_stores_close_and_work_as_context_managers(kind, tmp_path):
    with open_store(kind, tmp_path) as store:
        store.save(session("S", 1))
    store.close()  # twice is harmless
    assert store.load("S") == session("S", 1)  # used again: reopened
    store.close()
