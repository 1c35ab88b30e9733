"""The session data model and its JSON form (seed 000 REQ-211, REQ-212, REQ-218; seed 001 §4)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phi.errors import DecodeError
from phi.session import (
    ChildLoopRef,
    Explicit,
    FirstLoop,
    InactivityTimeout,
    LoopConfigSnapshot,
    LoopEvent,
    LoopRecord,
    LoopStatus,
    ParallelGroupRecord,
    Session,
    SpawnRef,
)
from phi.session.codec import format_time, parse_time
from phi.session.model import exact_time
from phi.types import (
    AssistantMessage,
    ContinuationKind,
    RunOutcome,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_to_json,
)

T0 = 1_774_000_000.123456


def record(loop_id: str, **fields: object) -> LoopRecord:
    return LoopRecord(loop_id, "S", "A", started_at=fields.pop("started_at", T0), **fields)  # type: ignore[arg-type]


def full_session() -> Session:
    """A session using every field and variant the model has."""
    reply = AssistantMessage([TextContent("hi"), ToolCall("c1", "delegate", {"task": "x"})], model="m", provider="p",
                             usage=Usage(3, 4, 1, 2, 0, 10), timestamp=1_774_000_000_500)
    messages = [UserMessage([TextContent("héllo ✓")], 1_774_000_000_100), reply,
                ToolResultMessage("c1", "delegate", [TextContent("done")], timestamp=1_774_000_000_600, details={"turns": 1})]
    group = ParallelGroupRecord(("S.a.1", "S.b.1"), "S.b.1", 1, Usage(input=9), False)
    loops = [
        record("S.main.1", ended_at=T0 + 1.5, status=LoopStatus.COMPLETED, messages=messages,
               usage=Usage(3, 4, 1, 2, 0, 10), config=LoopConfigSnapshot("m", "p", "main"),
               metadata={"request": [1, 2.5, None, True]},
               events=[LoopEvent(0, {"type": "AgentStart", "agent_id": "A", "session_id": "S", "loop_id": "S.main.1",
                                     "timestamp": "2026-03-20T09:46:40.123Z"})],
               children_loop_ids=["S.a.1", "S.b.1"],
               child_loop_refs=[ChildLoopRef("c1", "delegate", "C.sub.1", "C")]),
        record("S.a.1", started_at=T0 + 2, parent_loop_id="S.main.1", continuation_kind=ContinuationKind.rerun("t1"),
               status=LoopStatus.ABORTED, parallel_group=group),
        record("S.b.1", started_at=T0 + 2.000001, parent_loop_id="S.main.1",
               continuation_kind=ContinuationKind.branch("t2"), status=LoopStatus.ERROR,
               parallel_group=ParallelGroupRecord(("S.a.1", "S.b.1"), "S.b.1", 1, Usage(input=9), True)),
        record("S.c.1", started_at=T0 + 3, parent_loop_id="elsewhere.x.1", continuation_kind=ContinuationKind.default(),
               status=LoopStatus.PENDING),
        record("S.d.1", started_at=T0 + 4, status=LoopStatus.REJECTED, rejection="no", ended_at=T0 + 4),
    ]
    return Session("S", "A", T0, T0 + 4, InactivityTimeout(1800, "S0", T0), SpawnRef("P", "P.m.1", "c9", "delegate"),
                   loops, extra={"scope": "persistent"})


def through_json(session: Session) -> Session:
    return Session.from_json(json.loads(json.dumps(session.to_json())))


def test_json_round_trip_is_lossless():
    session = full_session()
    assert through_json(session) == session
    assert through_json(session).to_json() == session.to_json()
    for formation in (Explicit(T0), FirstLoop(T0 + 0.5)):
        other = Session("S", "A", T0, T0, formation)
        assert through_json(other) == other


def test_json_uses_phi_core_field_names_and_shapes():
    data = json.loads(json.dumps(full_session().to_json()))
    assert list(data) == ["session_id", "agent_id", "created_at", "last_active_at", "formation", "parent_spawn_ref",
                          "loops", "scope"]
    assert data["created_at"] == "2026-03-20T09:46:40.123456Z"
    assert data["formation"] == {"InactivityTimeout": {"threshold_secs": 1800, "previous_session_id": "S0",
                                                       "timestamp": "2026-03-20T09:46:40.123456Z"}}
    assert data["parent_spawn_ref"] == {"parent_session_id": "P", "parent_loop_id": "P.m.1", "tool_call_id": "c9",
                                        "tool_name": "delegate"}
    main, a, b, c, d = data["loops"]
    assert list(main) == ["loop_id", "session_id", "agent_id", "parent_loop_id", "continuation_kind", "started_at",
                          "ended_at", "status", "rejection", "config", "messages", "usage", "metadata", "events",
                          "children_loop_ids", "child_loop_refs", "parallel_group"]
    assert (main["status"], a["status"], c["status"], d["status"]) == ("Completed", "Aborted", "Pending", "Rejected")
    assert (a["continuation_kind"], c["continuation_kind"]) == ({"Rerun": {"tag": "t1"}}, "Default")
    assert main["config"] == {"model": "m", "provider": "p", "config_id": "main"}
    assert main["child_loop_refs"] == [{"tool_call_id": "c1", "tool_name": "delegate", "child_loop_id": "C.sub.1",
                                        "child_session_id": "C"}]
    assert main["messages"] == [message_to_json(m) for m in full_session().loops[0].messages]  # SPEC DATA-6
    assert main["events"][0]["sequence"] == 0 and main["events"][0]["event"]["type"] == "AgentStart"
    assert b["parallel_group"] == {"all_loop_ids": ["S.a.1", "S.b.1"], "selected_loop_id": "S.b.1",
                                   "selected_config_index": 1, "evaluation_usage": Usage(input=9).to_json(),
                                   "is_selected": True}
    assert b["ended_at"] is None and main["parent_loop_id"] is None


def test_a_phi_core_file_loads_and_keeps_what_phi_does_not_model():
    """phi-core writes nanoseconds and fields phi has no model for (scope, turns): read, keep, write back."""
    core = {
        "session_id": "9b2e", "agent_id": "a1", "created_at": "2026-03-22T10:00:00.123456789Z",
        "last_active_at": "2026-03-22T12:00:00+02:00", "formation": {"FirstLoop": {"timestamp": "2026-03-22T10:00:00Z"}},
        "parent_spawn_ref": None, "scope": "ephemeral",
        "loops": [{"loop_id": "9b2e.cfg.1", "session_id": "9b2e", "agent_id": "a1", "parent_loop_id": None,
                   "continuation_kind": None, "started_at": "2026-03-22T10:00:00.123456789Z", "ended_at": None,
                   "status": "Running", "rejection": None, "config": None, "messages": [], "turns": [{"x": 1}],
                   "usage": {"input": 1, "output": 2, "cache_read": 0, "cache_write": 0, "total_tokens": 3},
                   "metadata": None, "events": [], "children_loop_ids": [], "child_loop_refs": [],
                   "parallel_group": None}],
    }
    session = Session.from_json(core)
    assert session.created_at == 1_774_173_600.123456 and session.last_active_at == 1_774_173_600.0
    assert session.loops[0].usage == Usage(input=1, output=2, total_tokens=3)
    again = json.loads(json.dumps(session.to_json()))
    assert again["scope"] == "ephemeral" and again["loops"][0]["turns"] == [{"x": 1}]
    assert Session.from_json(again) == session


@pytest.mark.parametrize("path, value, field", [
    (("created_at",), "yesterday", "session.created_at"),
    (("formation",), {"Sometime": {}}, "session.formation"),
    (("loops", 0, "status"), "Finished", "session.loops[0].status"),
    (("loops", 0, "started_at"), "2026-02-30T00:00:00Z", "session.loops[0].started_at"),
    (("loops", 0, "child_loop_refs"), [{"tool_call_id": "c"}], "session.loops[0].child_loop_refs[0].tool_name"),
    (("loops", 0, "messages"), [{"role": "robot"}], "session.loops[0].messages[0].role"),
    (("loops", 0, "parallel_group"), {"all_loop_ids": [], "selected_loop_id": "x", "selected_config_index": 0,
                                      "is_selected": "yes"}, "session.loops[0].parallel_group.is_selected"),
])
def test_decode_errors_name_the_field(path, value, field):
    data = json.loads(json.dumps(full_session().to_json()))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(DecodeError) as caught:
        Session.from_json(data)
    assert caught.value.field == field


def test_navigation():
    session = full_session()
    main, a, b, c, d = session.loops
    assert session.get_loop("S.b.1") is b and session.get_loop("nope") is None
    assert session.root_loops() == [main, c, d]  # c continues a loop of another session
    assert session.children_of("S.main.1") == [a, b]
    assert session.children_of("S.a.1") == [] and session.children_of("nope") == []
    assert session.parallel_siblings("S.a.1") == [a, b] == session.parallel_siblings("S.b.1")
    assert session.parallel_siblings("S.main.1") == [] and session.parallel_siblings("nope") == []
    assert session.total_usage() == Usage(3, 4, 1, 2, 0, 10)
    assert main.duration == 1.5 and a.duration is None


def test_copies_are_independent():
    session = full_session()
    copy = session.copy()
    copy.loops[0].children_loop_ids.append("S.z.1")
    copy.loops.pop()
    assert session == full_session() and copy != session


def test_status_of_every_run_outcome():
    assert {o: LoopStatus.of_outcome(o).value for o in RunOutcome} == {
        RunOutcome.COMPLETED: "Completed", RunOutcome.ABORTED: "Aborted", RunOutcome.ERROR: "Error",
        RunOutcome.LIMIT: "Limit", RunOutcome.REJECTED: "Rejected", RunOutcome.VETOED: "Vetoed"}
    assert [s for s in LoopStatus if s.is_open] == [LoopStatus.PENDING, LoopStatus.RUNNING]


def test_times():
    assert parse_time("2026-03-22T10:00:00.5+01:30", "t") == parse_time("2026-03-22T08:30:00.500000Z", "t")
    assert parse_time(12.3456789, "t") == 12.345679
    assert format_time(0.000001) == "1970-01-01T00:00:00.000001Z"
    for bad in ("2026-03-22", "2026-03-22T25:00:00Z", True, None, float("nan")):
        with pytest.raises(DecodeError):
            parse_time(bad, "t")
    for bad in (float("inf"), float("nan"), True, "1"):
        with pytest.raises(ValueError):
            exact_time(bad)  # type: ignore[arg-type]
    assert Session.explicit("S", "A", 5.0000004).created_at == 5.0


@given(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False), st.floats(min_value=0, max_value=1e6))
def test_any_time_round_trips_exactly(start, length):
    loop = record("S.x.1", started_at=start, ended_at=start + length)
    session = Session("S", "A", start, start + length, FirstLoop(start), loops=[loop])
    assert through_json(session) == session
