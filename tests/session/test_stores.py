"""JsonDirStore and SqliteStore behind one interface (seed 000 REQ-216, REQ-217): round trip, order,
delete, ids that would escape the directory, and corrupt or foreign data named, never skipped."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
import time

import pytest
from session_helpers import calls, delegate_tool, run

from phi.errors import PhiError
from phi.loop.config import AgentContext
from phi.providers.mock import ScriptedProvider
from phi.session import (
    CorruptSession,
    FirstLoop,
    InvalidSessionId,
    JsonDirStore,
    LoopRecord,
    LoopStatus,
    NotFound,
    Session,
    SessionError,
    SessionRecorder,
    SessionStore,
    SqliteStore,
)
from phi.session.sqlite_store import APPLICATION_ID
from phi.types import TextContent, Usage, UserMessage


def session(session_id: str, agent_id: str = "A", text: str = "hello", loops: int = 1) -> Session:
    records = [LoopRecord(f"{session_id}.x.{i}", session_id, agent_id, started_at=100.0 + i, ended_at=101.0 + i,
                          status=LoopStatus.COMPLETED, messages=[UserMessage([TextContent(f"{text} {i}")], 5)],
                          usage=Usage(input=i)) for i in range(loops)]
    return Session(session_id, agent_id, 100.0, 100.0 + loops, FirstLoop(100.0), loops=records)


@pytest.fixture(params=["json", "sqlite"])
def store(request, tmp_path):
    if request.param == "json":
        yield JsonDirStore(tmp_path / "sessions")
    else:
        with SqliteStore(tmp_path / "sessions.db") as opened:
            yield opened


def test_both_stores_satisfy_the_protocol(store):
    assert isinstance(store, SessionStore)


def test_round_trip_of_a_recorded_tree(store):
    recorder = SessionRecorder()
    context = AgentContext(agent_id="lead", session_id="P", loop_id="P.m.1", tools=[delegate_tool("P.m.1", recorder)])
    run("go ✓ ünïcode", context, ScriptedProvider([calls("a", "b"), "done"]), recorder)
    sessions = recorder.flush()
    for item in sessions:
        store.save(item)
    for item in sessions:
        assert store.load(item.session_id) == item
    parent = store.load("P")  # REQ-212: the parent's refs load and link the children
    for ref in parent.loops[0].child_loop_refs:
        child = store.load(ref.child_session_id)
        assert child.get_loop(ref.child_loop_id).parent_loop_id == "P.m.1"
        assert child.parent_spawn_ref.tool_call_id == ref.tool_call_id


def test_save_updates_and_list_ids_is_newest_first(store):
    assert store.list_ids() == []
    for session_id in ("a", "b", "c"):
        store.save(session(session_id))
        time.sleep(0.02)  # beyond any file system's timestamp granularity
    store.save(session("a", text="changed", loops=2))
    assert store.list_ids() == ["a", "c", "b"]
    assert store.load("a") == session("a", text="changed", loops=2)


def test_delete_then_not_found(store):
    store.save(session("gone"))
    store.save(session("kept"))
    store.delete("gone")
    assert store.list_ids() == ["kept"]
    for action in (store.load, store.delete):
        with pytest.raises(NotFound) as caught:
            action("gone")
        assert isinstance(caught.value, SessionError) and isinstance(caught.value, PhiError)
        assert caught.value.session_id == "gone" and "gone" in str(caught.value)


def test_load_for_agent(store):
    store.save(session("s1", "alice"))
    time.sleep(0.02)
    store.save(session("s2", "bob"))
    time.sleep(0.02)
    store.save(session("s3", "alice"))
    assert [s.session_id for s in store.load_for_agent("alice")] == ["s3", "s1"]
    assert store.load_for_agent("nobody") == []


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".hidden", "x" * 201, "nul\x00", "line\n", "sp ace", 7])
def test_ids_that_are_not_plain_file_names_are_refused(store, tmp_path, bad):
    for action in (store.load, store.delete):
        with pytest.raises(InvalidSessionId):
            action(bad)
    broken = session("ok")
    broken.session_id = bad  # type: ignore[assignment]
    with pytest.raises(InvalidSessionId):
        store.save(broken)
    assert not (tmp_path / "escape.json").exists() and not (tmp_path / "escape").exists()


def test_unsaveable_content_is_an_error_and_the_previous_version_stays(store):
    store.save(session("s"))
    bad = session("s", text="new")
    bad.loops[0].metadata = {"handle": object()}
    with pytest.raises(SessionError, match="cannot be saved as JSON"):
        store.save(bad)
    foreign = session("s", loops=2)
    foreign.loops[1].session_id = "other"
    twice = session("s", loops=2)
    twice.loops[1].loop_id = twice.loops[0].loop_id
    for broken, problem in ((foreign, "of session 'other'"), (twice, "twice")):
        with pytest.raises(SessionError, match=problem):
            store.save(broken)
    assert store.load("s") == session("s")


def test_threads_share_one_store(store):
    def save_many(worker: int) -> None:
        for n in range(25):
            store.save(session(f"t{worker}-{n}", text=str(worker)))

    threads = [threading.Thread(target=save_many, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(store.list_ids()) == sorted(f"t{w}-{n}" for w in range(6) for n in range(25))
    assert store.load("t3-7") == session("t3-7", text="3")


# --------------------------------------------------------------------------- JsonDirStore


def test_json_layout_is_one_private_append_only_file_per_session(tmp_path):
    store = JsonDirStore(tmp_path / "d")
    store.save(session("abc-1.2", loops=2))
    path = tmp_path / "d" / "abc-1.2.jsonl"
    (line,) = path.read_text(encoding="utf-8").splitlines()  # one save, one line: a session JSON object
    assert Session.from_json(json.loads(line)) == session("abc-1.2", loops=2)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path / "d") == ["abc-1.2.jsonl"]  # no temp file, no lock file
    assert store.path_of("abc-1.2") == str(path)


def test_json_corrupt_and_foreign_files_are_named(tmp_path):
    store = JsonDirStore(tmp_path)
    (tmp_path / "garbage.json").write_bytes(b"\x00\xff{not json")
    (tmp_path / "other.json").write_text('{"hello": 1}')
    (tmp_path / "swapped.json").write_text(json.dumps(session("real").to_json()))
    cases = {"garbage": "is not valid JSON", "other": "is not a phi session", "swapped": "holds session 'real'"}
    for session_id, expected in cases.items():
        with pytest.raises(CorruptSession) as caught:
            store.load(session_id)
        assert str(tmp_path / f"{session_id}.json") in str(caught.value) and expected in str(caught.value)
        assert caught.value.path == str(tmp_path / f"{session_id}.json")
    with pytest.raises(CorruptSession, match="garbage.json|other.json|swapped.json"):
        store.load_for_agent("A")  # never a silent skip


@pytest.mark.parametrize("entry", ["notes.txt", "bad name.json", "subdir.json/"])
def test_json_foreign_entries_in_the_directory_are_reported(tmp_path, entry):
    store = JsonDirStore(tmp_path)
    store.save(session("fine"))
    if entry.endswith("/"):
        (tmp_path / entry).mkdir()
    else:
        (tmp_path / entry).write_text("x")
    with pytest.raises(CorruptSession) as caught:
        store.list_ids()
    assert entry.rstrip("/") in str(caught.value)


def test_json_hidden_temp_files_of_killed_savers_are_ignored(tmp_path):
    store = JsonDirStore(tmp_path)
    store.save(session("s"))
    (tmp_path / ".s.abcd.tmp").write_text('{"session_id": "s", "trunc')
    assert store.list_ids() == ["s"] and store.load("s") == session("s")


def test_json_missing_directory_lists_nothing(tmp_path):
    assert JsonDirStore(tmp_path / "not-yet").list_ids() == []


# --------------------------------------------------------------------------- SqliteStore


def test_sqlite_is_wal_indexed_and_marked(tmp_path):
    path = tmp_path / "s.db"
    with SqliteStore(path) as store:
        store.save(session("s", "agent"))
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    indexes = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"phi_sessions_by_agent", "phi_sessions_by_seq", "phi_sessions_by_activity"} <= indexes
    plan = " ".join(str(row) for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT session_id, data FROM phi_sessions WHERE agent_id = ? ORDER BY saved_seq DESC",
        ("agent",)))
    assert "phi_sessions_by_agent" in plan
    db.close()


def test_sqlite_garbage_file_is_named(tmp_path):
    path = tmp_path / "s.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(CorruptSession) as caught:
        SqliteStore(path)
    assert str(path) in str(caught.value)


def test_sqlite_foreign_databases_are_refused(tmp_path):
    other_app = tmp_path / "other.db"
    db = sqlite3.connect(other_app)
    db.execute("PRAGMA application_id = 1234")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(CorruptSession, match="another application"):
        SqliteStore(other_app)
    clash = tmp_path / "clash.db"
    db = sqlite3.connect(clash)
    db.execute("CREATE TABLE phi_sessions (id, blob)")
    db.commit()
    db.close()
    with pytest.raises(CorruptSession, match="columns"):
        SqliteStore(clash)


def test_sqlite_shares_a_database_with_other_tables(tmp_path):
    path = tmp_path / "app.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (name)")
    db.commit()
    db.close()
    with SqliteStore(path) as store:
        store.save(session("s"))
        assert store.load("s") == session("s")


def test_sqlite_corrupt_row_is_named(tmp_path):
    path = tmp_path / "s.db"
    with SqliteStore(path) as store:
        store.save(session("s"))
        store.save(session("t"))
        db = sqlite3.connect(path)
        db.execute("UPDATE phi_sessions SET data = '{\"session_id\": 3}' WHERE session_id = 's'")
        db.commit()
        db.close()
        with pytest.raises(CorruptSession) as caught:
            store.load("s")
        assert str(path) in str(caught.value) and "session s" in str(caught.value)
        assert store.load("t") == session("t")
        with pytest.raises(CorruptSession):
            store.load_for_agent("A")
