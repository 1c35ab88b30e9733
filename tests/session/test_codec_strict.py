"""A strict, lossless session decoder (SPEC DATA-7, SESS-5; issue 24 item 5): a missing required field
is a typed error naming the field and the file, nothing is filled in, and everything phi does not
model — phi-core's per-message ``turnId`` included — is written back as it was read."""

from __future__ import annotations

import copy
import json

import pytest

from phi.errors import DecodeError
from phi.session import CorruptSession, JsonDirStore, Session, SqliteStore
from phi.types import AssistantMessage, StopReason, TextContent


def phi_core_document() -> dict:
    """A session as phi-core writes it (seed 001 §4): nanosecond timestamps, per-message turnId,
    null optionals, usage without ``reasoning``, the full config snapshot, keys phi has no model for."""
    usage = {"input": 12, "output": 7, "cache_read": 0, "cache_write": 0, "total_tokens": 19}
    return {
        "session_id": "9b2e", "agent_id": "a1",
        "created_at": "2026-03-22T10:00:00.123456789Z", "last_active_at": "2026-03-22T12:00:05+02:00",
        "formation": {"InactivityTimeout": {"threshold_secs": 1800, "previous_session_id": "8a1d",
                                            "timestamp": "2026-03-22T10:00:00.123456789Z"}},
        "parent_spawn_ref": None,
        "scope": "ephemeral",
        "loops": [{
            "loop_id": "9b2e.anthropic.claude.1", "session_id": "9b2e", "agent_id": "a1", "parent_loop_id": None,
            "continuation_kind": None, "started_at": "2026-03-22T10:00:00.123456789Z",
            "ended_at": "2026-03-22T10:00:04.987654321Z", "status": "Completed", "rejection": None,
            "config": {"model": "claude", "provider": "anthropic", "config_id": None, "name": "Claude",
                       "api": "anthropic-messages", "base_url": "https://api.anthropic.com", "reasoning": True,
                       "context_window": 200000, "max_tokens": 8192, "thinking_level": "off", "temperature": None},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1774173600123,
                 "turnId": "t-1"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm", "signature": None},
                    {"type": "text", "text": "hello", "citations": []},
                    {"type": "toolCall", "id": "c1", "name": "read_file", "arguments": {"path": "a"}}],
                 "stopReason": "toolUse", "model": "claude", "provider": "anthropic", "usage": dict(usage),
                 "timestamp": 1774173601000, "error_message": None, "turnId": "t-1"},
                {"role": "toolResult", "toolCallId": "c1", "toolName": "read_file",
                 "content": [{"type": "text", "text": "A"}], "isError": False, "timestamp": 1774173602000,
                 "turnId": "t-1"},
                {"role": "extension", "kind": "ui_update", "data": {"x": 1}},
            ],
            "usage": dict(usage), "metadata": {"request": "r-7"}, "turns": [{"index": 0}],
            "events": [{"sequence": 0, "event": {"type": "AgentStart"}, "received": "2026-03-22T10:00:00Z"}],
            "children_loop_ids": [],
            "child_loop_refs": [{"tool_call_id": "c9", "tool_name": "delegate", "child_loop_id": "7f.sub.1",
                                 "child_session_id": "7f", "depth": 1}],
            "parallel_group": {"all_loop_ids": ["9b2e.anthropic.claude.1"], "selected_loop_id": "9b2e.anthropic.claude.1",
                               "selected_config_index": 0, "evaluation_usage": dict(usage), "is_selected": True,
                               "strategy": "llm_judge"},
        }],
    }


def test_a_phi_core_document_is_written_back_exactly_as_it_was_read():
    document = phi_core_document()
    session = Session.from_json(copy.deepcopy(document))
    assert session.to_json() == document
    assert json.loads(json.dumps(Session.from_json(session.to_json()).to_json())) == document


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_phi_core_document_survives_a_store_and_more_loops(kind, tmp_path):
    document = phi_core_document()
    store = JsonDirStore(tmp_path) if kind == "json" else SqliteStore(tmp_path / "s.db")
    if kind == "json":
        (tmp_path / "9b2e.json").write_text(json.dumps(document, indent=2))  # phi-core's own file
        loaded = store.load("9b2e")
    else:
        loaded = Session.from_json(copy.deepcopy(document))
        store.save(loaded)
    later = loaded.copy()
    extra = later.loops[0].copy()
    extra.loop_id, extra.messages, extra.preserved = "9b2e.anthropic.claude.2", [AssistantMessage([TextContent("x")])], None
    later.loops = [extra]
    store.save(later)  # appends; the phi-core loop is migrated (json) or already stored, untouched
    again = store.load("9b2e").to_json()
    assert again["loops"][0] == document["loops"][0] and again["scope"] == "ephemeral"
    assert again["created_at"] == document["created_at"] and again["formation"] == document["formation"]
    if isinstance(store, SqliteStore):
        store.close()


def test_changed_values_are_not_overwritten_by_what_was_read():
    session = Session.from_json(phi_core_document())
    record = session.loops[0]
    reply = record.messages[1]
    reply.error_message = None  # unchanged: the null comes back
    record.messages[0] = AssistantMessage([TextContent("replaced")], timestamp=5)  # another object: no turnId
    reply.content[0].signature = "sig"
    record.started_at += 1  # a changed time is written in phi's form
    out = session.to_json()["loops"][0]
    assert "turnId" not in out["messages"][0] and out["messages"][1]["turnId"] == "t-1"
    assert out["messages"][1]["error_message"] is None
    assert out["messages"][1]["content"][0] == {"type": "thinking", "thinking": "hm", "signature": "sig"}
    assert out["started_at"] == "2026-03-22T10:00:01.123456Z"
    reply.error_message = "boom"
    assert session.to_json()["loops"][0]["messages"][1]["error_message"] == "boom"


def _without(path: tuple, document: dict | None = None) -> dict:
    data = document or phi_core_document()
    target = data
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return data


@pytest.mark.parametrize("path, field", [
    (("loops", 0, "messages", 1, "stopReason"), "session.loops[0].messages[1].stopReason"),
    (("loops", 0, "messages", 2, "isError"), "session.loops[0].messages[2].isError"),
    (("loops", 0, "messages", 0, "timestamp"), "session.loops[0].messages[0].timestamp"),
    (("loops", 0, "messages", 1, "usage"), "session.loops[0].messages[1].usage"),
    (("loops", 0, "messages", 1, "usage", "total_tokens"), "session.loops[0].messages[1].usage.total_tokens"),
    (("loops", 0, "messages", 1, "content", 2, "arguments"), "session.loops[0].messages[1].content[2].arguments"),
    (("loops", 0, "messages", 3, "data"), "session.loops[0].messages[3].data"),
    (("loops", 0, "messages"), "session.loops[0].messages"),
    (("loops", 0, "ended_at"), "session.loops[0].ended_at"),
    (("loops", 0, "parent_loop_id"), "session.loops[0].parent_loop_id"),
    (("loops", 0, "children_loop_ids"), "session.loops[0].children_loop_ids"),
    (("loops", 0, "usage", "input"), "session.loops[0].usage.input"),
    (("loops", 0, "parallel_group", "evaluation_usage"), "session.loops[0].parallel_group.evaluation_usage"),
    (("parent_spawn_ref",), "session.parent_spawn_ref"),
    (("loops",), "session.loops"),
])
def test_a_missing_required_field_is_a_decode_error_naming_it(path, field):
    with pytest.raises(DecodeError) as caught:
        Session.from_json(_without(path))
    assert caught.value.field == field and "missing" in str(caught.value)


def test_an_aborted_reply_stays_aborted_and_a_missing_reason_is_not_a_finished_one():
    document = phi_core_document()
    document["loops"][0]["messages"][1]["stopReason"] = "aborted"
    assert Session.from_json(document).loops[0].messages[1].stop_reason is StopReason.ABORTED
    with pytest.raises(DecodeError):
        Session.from_json(_without(("loops", 0, "messages", 1, "stopReason")))


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_stores_name_the_file_and_the_field(kind, tmp_path):
    broken = _without(("loops", 0, "messages", 1, "stopReason"))
    if kind == "json":
        (tmp_path / "9b2e.json").write_text(json.dumps(broken))
        store = JsonDirStore(tmp_path)
        where = str(tmp_path / "9b2e.json")
    else:
        store = SqliteStore(tmp_path / "s.db")
        store.save(Session.from_json(phi_core_document()))
        store.close()
        import sqlite3

        db = sqlite3.connect(tmp_path / "s.db")
        db.execute("UPDATE phi_session_loops SET data = ?", (json.dumps(broken["loops"][0]),))
        db.commit()
        db.close()
        where = str(tmp_path / "s.db")
    with pytest.raises(CorruptSession) as caught:
        store.load("9b2e")
    assert where in str(caught.value) and "stopReason" in str(caught.value)
    assert caught.value.field is not None and caught.value.field.endswith("messages[1].stopReason")
    if isinstance(store, SqliteStore):
        store.close()
