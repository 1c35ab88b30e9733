"""The session codec keeps what it read at every level and fails in words, not in recursion (SPEC
SESS-5; issue 31 item 5): unknown keys of a ``Rerun``/``Branch`` payload and of a starting history
are written back, a missing ``tag`` stays missing, and a value nested 10,000 deep is a typed error
naming where it is — from ``Session.from_json`` and from both stores' ``save`` — never a
``RecursionError``."""

from __future__ import annotations

import copy
import json

import pytest

from phi.errors import DecodeError
from phi.session import JsonDirStore, LoopRecord, NotFound, Session, SessionError, SqliteStore
from phi.types import ContinuationKind

DEEP = 10_000


def nested(depth: int) -> dict:
    top: dict = {}
    node = top
    for _ in range(depth):
        node["x"] = {}
        node = node["x"]
    return top


def document(continuation: object, history: dict | None = None) -> dict:
    """A session of two loops as phi writes it; the second continues the first as ``continuation``."""
    session = Session.explicit("s-keep", "agent", 1_700_000_000.0)
    session.loops.append(LoopRecord("s-keep.m.1", "s-keep", "agent", started_at=1_700_000_000.0))
    session.loops.append(LoopRecord("s-keep.m.2", "s-keep", "agent", parent_loop_id="s-keep.m.1",
                                    continuation_kind=ContinuationKind.rerun("t1"), started_at=1_700_000_001.0))
    data = session.to_json()
    data["loops"][1]["continuation_kind"] = continuation
    if history is not None:
        data["loops"][1]["history"] = history
    return data


def open_store(kind: str, tmp_path):
    return JsonDirStore(tmp_path / "dir") if kind == "json" else SqliteStore(tmp_path / "s.db")


PAYLOADS = [
    {"Rerun": {"tag": "t1", "reason": "flaky tool", "attempt": 2}},
    {"Branch": {"tag": None, "from_ui": True}},
    {"Rerun": {}},
    {"Branch": {"note": "no tag at all"}},
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_continuation_payload_is_written_back_as_it_was_read(payload):
    data = document(payload)
    session = Session.from_json(copy.deepcopy(data))
    assert session.to_json() == data
    assert json.dumps(session.copy().to_json()) == json.dumps(data)  # same keys, same order, copies too
    kind = session.loops[1].continuation_kind
    assert kind == ContinuationKind(next(iter(payload)).lower(), next(iter(payload.values())).get("tag"))


@pytest.mark.parametrize("kind", ["json", "sqlite"])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_continuation_payload_survives_a_store_load_and_save_again(kind, payload, tmp_path):
    data = document(payload)
    first = open_store(kind, tmp_path)
    first.save(Session.from_json(copy.deepcopy(data)))
    if isinstance(first, SqliteStore):
        first.close()
    second = open_store(kind, tmp_path)
    loaded = second.load("s-keep")
    loaded.loops[0].metadata = {"touched": True}  # a change elsewhere makes the save write again
    second.save(loaded)
    assert second.load("s-keep").to_json()["loops"][1] == data["loops"][1]
    if isinstance(second, SqliteStore):
        second.close()


def test_a_new_or_replaced_continuation_kind_is_written_in_phis_form():
    session = Session.from_json(document({"Rerun": {"reason": "kept only while unchanged"}}))
    session.loops[1].continuation_kind = ContinuationKind.branch("b7")
    assert session.to_json()["loops"][1]["continuation_kind"] == {"Branch": {"tag": "b7"}}
    assert ContinuationKind("rerun").to_json() == {"Rerun": {"tag": None}}  # the public API is unchanged
    assert ContinuationKind.from_json({"Rerun": {"tag": "x", "more": 1}}) == ContinuationKind("rerun", "x")


def test_unknown_keys_of_a_starting_history_are_kept():
    history = {"after_loop_id": "s-keep.m.1", "kept": 0, "added": [], "source": "compaction", "v": 3}
    data = document("Default", history)
    assert Session.from_json(copy.deepcopy(data)).to_json() == data


# --------------------------------------------------------------------------- deep values


@pytest.mark.parametrize("where", ["metadata", "rejection", "continuation_kind", "loop", "session_id"])
def test_a_deeply_nested_value_is_a_decode_error_naming_its_path(where):
    data = document("Default")
    if where == "loop":
        data["loops"][1] = [nested(DEEP)]
        data["loops"][0]["metadata"] = nested(DEEP)
        field = "session.loops[1]"
    elif where == "session_id":
        data["session_id"] = nested(DEEP)
        field = "session.session_id"
    else:
        data["loops"][1]["metadata"] = nested(DEEP)
        if where != "metadata":
            data["loops"][1][where] = nested(DEEP)
        else:
            del data["loops"][1]["status"]  # the loop holding the deep value fails elsewhere
        field = {"metadata": "session.loops[1].status", "rejection": "session.loops[1].rejection",
                 "continuation_kind": "session.loops[1].continuation_kind"}[where]
    with pytest.raises(DecodeError) as caught:
        Session.from_json(data)
    assert caught.value.field == field and len(str(caught.value)) < 300


def test_a_deep_value_in_memory_decodes_and_a_session_object_is_refused_in_words():
    session = Session.explicit("s-deep", "agent", 1_700_000_000.0)
    session.loops.append(LoopRecord("s-deep.m.1", "s-deep", "agent", started_at=1_700_000_000.0,
                                    metadata=nested(DEEP)))
    again = Session.from_json(session.to_json())  # the value is carried, never walked
    assert again.loops[0].metadata is session.loops[0].metadata
    with pytest.raises(DecodeError, match="expected a session object, got <Session"):
        Session.from_json(session)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
@pytest.mark.parametrize("part", ["metadata", "header"])
def test_saving_a_deep_value_is_a_session_error_naming_the_loop_and_field(kind, part, tmp_path):
    session = Session.explicit("s-deep", "agent", 1_700_000_000.0)
    session.loops.append(LoopRecord("s-deep.m.1", "s-deep", "agent", started_at=1_700_000_000.0))
    if part == "metadata":
        session.loops[0].metadata = {"ok": 1, "trace": nested(DEEP)}
        expected = "loop s-deep.m.1, field metadata.trace.x"
    else:
        session.extra["ui"] = [nested(DEEP)]
        expected = "the header, field ui[0].x"
    store = open_store(kind, tmp_path)
    with pytest.raises(SessionError) as caught:
        store.save(session)
    assert expected in str(caught.value) and "recursion" in str(caught.value)
    with pytest.raises(NotFound):  # nothing of the failed save was stored
        store.load("s-deep")
    if isinstance(store, SqliteStore):
        store.close()

