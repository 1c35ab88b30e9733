"""SessionRecorder on real runs (seed 000 REQ-213, REQ-214, REQ-218, REQ-221): every test checks the
recorded tree — records, links both ways, statuses — not just that recording did not fail."""

from __future__ import annotations

import threading

import pytest
from session_helpers import calls, config, delegate_tool, run

from phi.agent import Agent
from phi.loop.filters import FilterResult
from phi.events import AgentEnd, AgentStart, ParallelLoopEnd, ParallelLoopStart, ToolExecutionEnd, TurnStart
from phi.loop import agent_loop_continue
from phi.loop.config import AgentContext
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.session import (
    Explicit,
    FirstLoop,
    InactivityTimeout,
    InactivityTimeoutPolicy,
    LoopStatus,
    ParallelGroupRecord,
    SessionRecorder,
    SessionRecorderConfig,
    SpawnRef,
)
from phi.types import (AssistantMessage, ContinuationKind, RunOutcome, StopReason, ToolResult, TurnTrigger, Usage,
                       UserMessage)


def agent_with(recorder: SessionRecorder, *script: object) -> Agent:
    agent = Agent(provider=ScriptedProvider(list(script)))
    agent.subscribe(recorder.on_event)
    return agent


def only(sessions: list) -> object:
    assert len(sessions) == 1, sessions
    return sessions[0]


def test_session_recorder_single_loop():
    """REQ-214: one run → one Session (formation FirstLoop) with one closed LoopRecord."""
    recorder = SessionRecorder()
    agent = agent_with(recorder, ScriptedResponse.text("hello", usage=Usage(input=4, output=1)))
    result = agent.run("hi")

    session = only(recorder.flush())
    assert (session.session_id, session.agent_id) == (agent.session_id, agent.agent_id)
    assert session.formation == FirstLoop(session.created_at)
    (record,) = session.loops
    assert record.loop_id == agent.last_loop_id
    assert (record.session_id, record.agent_id) == (agent.session_id, agent.agent_id)
    assert record.status is LoopStatus.COMPLETED and record.rejection is None
    assert record.parent_loop_id is None and record.continuation_kind is None
    assert session.created_at == record.started_at <= record.ended_at == session.last_active_at
    assert record.messages == result.messages == agent.messages
    assert record.usage == result.usage == Usage(input=4, output=1)
    assert (record.config.model, record.config.provider) == ("mock-model", "mock")
    assert record.config.config_id == record.loop_id.split(".", 1)[1].rsplit(".", 1)[0]
    assert record.events == []  # events are kept only on request
    assert session.root_loops() == [record] and session.get_loop(record.loop_id) == record
    assert session.children_of(record.loop_id) == [] and session.parallel_siblings(record.loop_id) == []
    assert session.total_usage() == record.usage
    assert recorder.flush() == []  # nothing changed since


def test_session_recorder_continuation():
    """REQ-214: a continuation joins the same Session, linked parent → child and child → parent."""
    recorder = SessionRecorder()
    agent = agent_with(recorder, ScriptedResponse.text("one", usage=Usage(input=1)),
                       ScriptedResponse.text("two", usage=Usage(input=2)),
                       ScriptedResponse.text("three", usage=Usage(input=4)))
    agent.run("first")
    first_id = agent.last_loop_id
    assert only(recorder.flush()).loops[0].children_loop_ids == []
    agent.messages = [*agent.messages, UserMessage.from_text("go on")]
    agent.continue_loop().result()
    second_id = agent.last_loop_id
    agent.run("new question")
    third_id = agent.last_loop_id

    session = only(recorder.flush())  # the same Session object grew: save it again
    first, second, third = session.loops
    assert [first.loop_id, second.loop_id, third.loop_id] == [first_id, second_id, third_id]
    assert second.parent_loop_id == first_id and second.continuation_kind == ContinuationKind.default()
    assert first.children_loop_ids == [second_id] and second.children_loop_ids == [] == third.children_loop_ids
    assert third.parent_loop_id is None  # a new prompt is an origin run
    assert session.root_loops() == [first, third]
    assert session.children_of(first_id) == [second]
    assert second.messages[-1].text == "two" and [m.text for m in third.messages] == ["new question", "three"]
    assert session.total_usage() == Usage(input=7)
    assert all(r.status is LoopStatus.COMPLETED for r in session.loops)


def test_session_recorder_continuation_kind():
    """REQ-214: Default / Rerun / Branch are kept per loop; a Branch's first turn says Branch."""
    recorder = SessionRecorder(SessionRecorderConfig(keep_events=True))
    agent = agent_with(recorder, "origin", "rerun", "branch")
    agent.run("start")
    origin = agent.last_loop_id
    agent.messages = [*agent.messages, UserMessage.from_text("again")]
    agent.continue_loop("rerun").result()
    rerun = agent.last_loop_id
    agent.messages = [*agent.messages, UserMessage.from_text("other way")]
    agent.continue_loop(ContinuationKind.branch("2026-01-01T00:00:00Z")).result()
    branch = agent.last_loop_id

    session = only(recorder.flush())
    kinds = {r.loop_id: r.continuation_kind for r in session.loops}
    assert kinds[origin] is None
    assert kinds[rerun].kind == "rerun" and kinds[rerun].tag
    assert kinds[branch] == ContinuationKind("branch", "2026-01-01T00:00:00Z")
    assert session.get_loop(rerun).parent_loop_id == origin and session.get_loop(branch).parent_loop_id == rerun
    assert session.children_of(origin) == [session.get_loop(rerun)]
    assert session.children_of(rerun) == [session.get_loop(branch)]
    triggers = {r.loop_id: [e.decode().triggered_by for e in r.events if e.event["type"] == "TurnStart"]
                for r in session.loops}
    assert triggers == {origin: [TurnTrigger.USER], rerun: [TurnTrigger.CONTINUATION], branch: [TurnTrigger.BRANCH]}
    assert session.get_loop(branch).to_json()["continuation_kind"] == {"Branch": {"tag": "2026-01-01T00:00:00Z"}}


def test_session_recorder_bidirectional_tree():
    """REQ-212/214/218: sub-agents get their own Sessions; ChildLoopRef on the parent loop and SpawnRef
    on the child session point at each other; a later continuation is a same-session child."""
    recorder = SessionRecorder(SessionRecorderConfig(keep_events=True))
    context = AgentContext(agent_id="lead", session_id="S-lead", loop_id="S-lead.main.1",
                           tools=[delegate_tool("S-lead.main.1", recorder)])
    run("split the work", context, ScriptedProvider([calls("alpha", "beta"), "merged"]), recorder)
    context.messages.append(UserMessage.from_text("and now?"))
    context.loop_id, context.parent_loop_id = "S-lead.main.2", "S-lead.main.1"
    agent_loop_continue(context, config(ScriptedProvider(["done"])), recorder)

    sessions = {s.session_id: s for s in recorder.flush()}
    parent = sessions.pop("S-lead")
    assert len(sessions) == 2 and parent.parent_spawn_ref is None
    first, follow = parent.loops
    assert parent.children_of(first.loop_id) == [follow] and follow.parent_loop_id == first.loop_id
    assert parent.root_loops() == [first]
    # ToolExecutionEnd comes as each call completes (SPEC TOOL-3), so the refs are in completion order
    assert sorted((r.tool_call_id, r.tool_name) for r in first.child_loop_refs) == [("call_0", "delegate"),
                                                                                    ("call_1", "delegate")]
    for ref in first.child_loop_refs:  # parent → child
        child_session = sessions[ref.child_session_id]
        child = child_session.get_loop(ref.child_loop_id)
        assert child is not None and child.status is LoopStatus.COMPLETED
        assert child.parent_loop_id == first.loop_id and child.continuation_kind is None
        assert child_session.root_loops() == [child]  # its parent lives in another session
        assert child.agent_id == "sub-" + {"call_0": "alpha", "call_1": "beta"}[ref.tool_call_id]
        turn_start = next(e.decode() for e in child.events if e.event["type"] == "TurnStart")
        assert turn_start.triggered_by is TurnTrigger.SUB_AGENT
        # child → parent
        assert child_session.parent_spawn_ref == SpawnRef("S-lead", first.loop_id, ref.tool_call_id, "delegate")
        back = parent.get_loop(child_session.parent_spawn_ref.parent_loop_id)
        assert ref in back.child_loop_refs
    assert first.children_loop_ids == [follow.loop_id]  # sub-agents are not same-session children
    assert first.usage == Usage(input=10, output=5)  # the parent's own calls; sub-agents count in their sessions
    tool_ends = [e.decode() for e in first.events if e.event["type"] == "ToolExecutionEnd"]
    assert {e.child_loop_id for e in tool_ends} == {r.child_loop_id for r in first.child_loop_refs}


def test_session_recorder_parallel_group():
    """REQ-213/218: ParallelLoopStart pre-registers Pending branches; ParallelLoopEnd sets the group on
    each branch with exactly one selected; a failed branch keeps its place and its status."""
    recorder = SessionRecorder()
    base = AgentContext(agent_id="A", session_id="S", loop_id="S.base.1")
    run("question", base, ScriptedProvider(["base answer"]), recorder)
    branch_ids = ["S.fast.1", "S.deep.1", "S.broken.1"]
    scripts = [[ScriptedResponse.text("quick", usage=Usage(output=1))],
               [ScriptedResponse.text("thorough", usage=Usage(output=9))],
               [ScriptedResponse.failure("auth", "bad key")]]
    recorder.on_event(ParallelLoopStart("S", branch_ids))
    assert [recorder.get_loop(i).status for i in branch_ids] == [LoopStatus.PENDING] * 3
    assert recorder.flush() == []  # the group is open

    barrier = threading.Barrier(3)

    def branch(loop_id: str, script: list) -> None:
        context = AgentContext(messages=[*base.messages, UserMessage.from_text("try")], agent_id="A",
                               session_id="S", loop_id=loop_id, parent_loop_id="S.base.1",
                               continuation_kind=ContinuationKind.branch())
        barrier.wait(5)
        agent_loop_continue(context, config(ScriptedProvider(script)), recorder)

    threads = [threading.Thread(target=branch, args=args) for args in zip(branch_ids, scripts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert recorder.flush() == []  # still open until ParallelLoopEnd
    recorder.on_event(ParallelLoopEnd("S", "S.deep.1", 1, Usage(input=50, output=2)))

    session = only(recorder.flush())
    base_record = session.get_loop("S.base.1")
    branches = [session.get_loop(i) for i in branch_ids]
    assert [b.status for b in branches] == [LoopStatus.COMPLETED, LoopStatus.COMPLETED, LoopStatus.ERROR]
    assert sorted(base_record.children_loop_ids) == sorted(branch_ids)
    assert {r.loop_id for r in session.children_of("S.base.1")} == set(branch_ids)
    for record in branches:
        assert record.parent_loop_id == "S.base.1" and record.continuation_kind.kind == "branch"
        assert record.parallel_group == ParallelGroupRecord(tuple(branch_ids), "S.deep.1", 1,
                                                            Usage(input=50, output=2), record.loop_id == "S.deep.1")
        assert session.parallel_siblings(record.loop_id) == branches
    assert [b.parallel_group.is_selected for b in branches].count(True) == 1
    assert session.parallel_siblings("S.base.1") == [] and session.root_loops() == [base_record]
    assert session.total_usage() == Usage(output=10)
    assert [r.started_at for r in session.loops] == sorted(r.started_at for r in session.loops)


def test_a_branch_that_never_starts_is_aborted_when_the_group_ends():
    recorder = SessionRecorder()
    recorder.on_event(ParallelLoopStart("S", ["S.a.1", "S.b.1"], timestamp=100.0))
    recorder.on_event(AgentStart("A", "S", "S.a.1", timestamp=101.0))
    recorder.on_event(AgentEnd("S.a.1", [], timestamp=102.0))
    recorder.on_event(ParallelLoopEnd("S", "S.a.1", 0, timestamp=103.0))
    session = only(recorder.flush())
    a, b = session.get_loop("S.a.1"), session.get_loop("S.b.1")
    assert (a.status, a.started_at, a.agent_id) == (LoopStatus.COMPLETED, 101.0, "A")
    assert (b.status, b.started_at, b.ended_at) == (LoopStatus.ABORTED, 100.0, 103.0)
    assert b.parallel_group.is_selected is False and a.parallel_group.is_selected is True


def test_parallel_loop_end_records_the_branches_that_emitted_no_agent_end_as_they_ended():
    """SESS-3: a branch that raised or whose worker was lost (Running) and one its executor failed
    before it started (Pending) are recorded from ParallelLoopEnd.unended: Error, with their messages;
    one that ended by itself keeps its own end, and one merely cancelled before it started is Aborted."""
    recorder = SessionRecorder()
    ids = ["S.ok.1", "S.lost.1", "S.broken.1", "S.never.1"]
    recorder.on_event(ParallelLoopStart("S", ids, timestamp=100.0))
    for loop_id in ids[:2]:
        recorder.on_event(AgentStart("A", "S", loop_id, timestamp=101.0))
    recorder.on_event(AgentEnd("S.ok.1", [UserMessage.from_text("q")], timestamp=102.0))
    reply = AssistantMessage([], StopReason.ERROR, "m", "p", error_message="the worker was lost")
    lost = AgentEnd("S.lost.1", [UserMessage.from_text("q"), reply], Usage(output=3), 103.0, outcome=RunOutcome.ERROR)
    broken = AgentEnd("S.broken.1", [UserMessage.from_text("q")], timestamp=103.0, outcome=RunOutcome.ERROR)
    stray = AgentEnd("S.ok.1", [], timestamp=103.0, outcome=RunOutcome.ERROR)  # not unended: ignored
    recorder.on_event(ParallelLoopEnd("S", "S.ok.1", 0, timestamp=104.0, unended=[lost, broken, stray]))
    session = only(recorder.flush())
    ok, lost_record, broken_record, never = (session.get_loop(i) for i in ids)
    assert (ok.status, [m.text for m in ok.messages]) == (LoopStatus.COMPLETED, ["q"])
    assert (lost_record.status, lost_record.messages, lost_record.usage) == (LoopStatus.ERROR, lost.messages,
                                                                            Usage(output=3))
    assert (broken_record.status, [m.text for m in broken_record.messages]) == (LoopStatus.ERROR, ["q"])
    assert (never.status, never.messages) == (LoopStatus.ABORTED, [])
    assert all(r.parallel_group is not None and r.ended_at is not None for r in (ok, lost_record, broken_record, never))


def test_session_recorder_flush_between_child_agent_end_and_parent_tool_execution_end():
    """REQ-221: a flush in the window between the child's AgentEnd and the parent's ToolExecutionEnd
    does not hand out the child session with an empty SpawnRef; the next flush has it complete."""
    recorder = SessionRecorder()
    in_window: list = []

    def flush_now(child_loop_id: str) -> None:
        assert recorder.get_loop(child_loop_id).status is LoopStatus.COMPLETED  # child's AgentEnd is in
        in_window.append((child_loop_id, recorder.flush(), recorder.drain()))

    context = AgentContext(agent_id="lead", session_id="P", loop_id="P.main.1",
                           tools=[delegate_tool("P.main.1", recorder, before_return=flush_now)])
    run("delegate", context, ScriptedProvider([calls("x"), "ok"]), recorder)

    ((child_loop_id, flushed, drained),) = in_window
    assert flushed == [] and drained == []  # parent running, child held until its spawn is named
    sessions = {s.session_id: s for s in recorder.flush()}
    child_session = next(s for s in sessions.values() if s.get_loop(child_loop_id) is not None)
    assert child_session.parent_spawn_ref == SpawnRef("P", "P.main.1", "call_0", "delegate")
    (ref,) = sessions["P"].loops[0].child_loop_refs
    assert (ref.child_loop_id, ref.child_session_id, ref.tool_call_id) == (child_loop_id, child_session.session_id, "call_0")


def test_flush_changes_between_child_agent_end_and_parent_tool_execution_end():
    """SESS-2 for flush_changes (what an Agent saves from): the child's loop has ended but its spawn
    is not named yet, so its session hands out nothing — not even that ended loop."""
    recorder = SessionRecorder()
    in_window: list = []

    def flush_now(child_loop_id: str) -> None:
        assert recorder.get_loop(child_loop_id).status is LoopStatus.COMPLETED  # child's AgentEnd is in
        in_window.append((child_loop_id, recorder.flush_changes()))

    context = AgentContext(agent_id="lead", session_id="P", loop_id="P.main.1",
                           tools=[delegate_tool("P.main.1", recorder, before_return=flush_now)])
    run("delegate", context, ScriptedProvider([calls("x"), "ok"]), recorder)

    ((child_loop_id, handed_out),) = in_window
    assert [s.session_id for s in handed_out if s.get_loop(child_loop_id) is not None] == []
    child_session = next(s for s in recorder.flush_changes() if s.get_loop(child_loop_id) is not None)
    assert child_session.parent_spawn_ref == SpawnRef("P", "P.main.1", "call_0", "delegate")


def test_a_child_whose_tool_call_never_names_it_is_released_when_the_parent_ends():
    recorder = SessionRecorder()

    def fail(child_loop_id: str) -> None:
        raise RuntimeError("tool broke after its sub-agent finished")

    context = AgentContext(agent_id="lead", session_id="P", loop_id="P.main.1",
                           tools=[delegate_tool("P.main.1", recorder, before_return=fail)])
    run("delegate", context, ScriptedProvider([calls("x"), "ok"]), recorder)
    sessions = {s.session_id: s for s in recorder.flush()}
    assert len(sessions) == 2 and sessions["P"].loops[0].child_loop_refs == []
    child = next(s for sid, s in sessions.items() if sid != "P")
    assert child.parent_spawn_ref == SpawnRef("P", "P.main.1")  # known parent loop, tool call unknown


def test_parent_tool_end_before_child_start_still_links_both_ways():
    """Events delivered out of order (e.g. through a queue): the early ToolExecutionEnd is kept."""
    recorder = SessionRecorder()
    recorder.on_event(AgentStart("lead", "P", "P.m.1", timestamp=1.0))
    recorder.on_event(ToolExecutionEnd("P.m.1", "c7", "delegate", ToolResult([]), False, child_loop_id="C.m.1"))
    recorder.on_event(AgentStart("sub", "C", "C.m.1", parent_loop_id="P.m.1", timestamp=2.0))
    recorder.on_event(AgentEnd("C.m.1", [], timestamp=3.0))
    recorder.on_event(AgentEnd("P.m.1", [], timestamp=4.0))
    sessions = {s.session_id: s for s in recorder.flush()}
    assert sessions["C"].parent_spawn_ref == SpawnRef("P", "P.m.1", "c7", "delegate")
    assert [r.child_session_id for r in sessions["P"].loops[0].child_loop_refs] == ["C"]


@pytest.mark.parametrize("script, settings, status", [
    ([ScriptedResponse.failure("auth", "bad key")], {}, LoopStatus.ERROR),
    (["never"], {"input_filters": [lambda text: FilterResult.reject("blocked words")]}, LoopStatus.REJECTED),
    (["never"], {"before_turn": lambda messages, index: False}, LoopStatus.VETOED),
])
def test_status_follows_the_run_outcome(script, settings, status):
    recorder = SessionRecorder()
    run("hi", AgentContext(session_id="S"), ScriptedProvider(script), recorder, **settings)
    (record,) = only(recorder.flush()).loops
    assert record.status is status and record.ended_at is not None
    assert (record.rejection is not None) == (status is LoopStatus.REJECTED)


def test_an_aborted_run_is_aborted_and_a_vetoed_start_leaves_no_record():
    recorder = SessionRecorder()
    agent = agent_with(recorder, ScriptedResponse.text("a", "b", hang_after_chunks=1))
    stream = agent.prompt("hi")
    for event in stream:
        if type(event) is TurnStart:
            agent.abort()
    (record,) = only(recorder.flush()).loops
    assert record.status is LoopStatus.ABORTED and record.ended_at is not None
    vetoed = SessionRecorder()
    run("hi", AgentContext(session_id="V"), ScriptedProvider(["x"]), vetoed, before_loop=lambda m, i: False)
    assert vetoed.sessions() == []  # no AgentStart: nothing says which session it belonged to


def test_flush_drain_and_finalize():
    recorder = SessionRecorder()
    agent = agent_with(recorder, "one", "two")
    agent.run("a")
    recorder.on_event(AgentStart("B", "crashed", "crashed.x.1", timestamp=5.0))  # its run raised: no AgentEnd
    assert [s.session_id for s in recorder.flush()] == [agent.session_id]
    assert recorder.flush() == []
    agent.run("b")
    (again,) = recorder.flush()
    assert len(again.loops) == 2  # later loops join the Session that was flushed before
    (drained,) = recorder.drain()
    assert drained.session_id == agent.session_id and recorder.get_session(agent.session_id) is None
    (left,) = recorder.finalize()
    assert left.session_id == "crashed" and left.loops[0].status is LoopStatus.ABORTED
    assert left.loops[0].ended_at is None and recorder.sessions() == []


def test_snapshots_do_not_change_when_recording_goes_on():
    recorder = SessionRecorder()
    recorder.on_event(AgentStart("A", "S", "S.x.1", timestamp=1.0))
    seen = recorder.get_session("S")
    recorder.on_event(AgentEnd("S.x.1", [UserMessage.from_text("q")], timestamp=2.0))
    assert seen.loops[0].status is LoopStatus.RUNNING and seen.loops[0].messages == []
    assert recorder.get_session("S").loops[0].status is LoopStatus.COMPLETED


def test_events_are_kept_in_order_with_gaps_for_streaming_deltas():
    for streaming in (False, True):
        recorder = SessionRecorder(SessionRecorderConfig(keep_events=True, include_streaming_events=streaming))
        run("hi", AgentContext(session_id="S"), ScriptedProvider([ScriptedResponse.text("a", "b", "c")]), recorder)
        (record,) = only(recorder.flush()).loops
        kinds = [e.event["type"] for e in record.events]
        sequences = [e.sequence for e in record.events]
        assert kinds[0] == "AgentStart" and kinds[-1] == "AgentEnd"
        assert ("MessageUpdate" in kinds) is streaming
        assert sequences == sorted(sequences) and sequences[0] == 0
        assert (sequences == list(range(len(sequences)))) is streaming  # gaps = deltas not kept
        assert all(e.decode().loop_id == record.loop_id for e in record.events)


def test_recorder_is_itself_a_sink_and_ignores_loops_it_never_saw():
    recorder = SessionRecorder()
    recorder.on_event(AgentEnd("nobody.x.1", []))
    recorder.on_event(ToolExecutionEnd("nobody.x.1", "c", "t", ToolResult([]), False, child_loop_id="other.x.1"))
    recorder.on_event(ParallelLoopEnd("nobody", "nobody.x.1", 0))
    assert recorder.sessions() == []
    run("hi", AgentContext(session_id="S"), ScriptedProvider(["yo"]), recorder)  # the recorder as the sink
    assert only(recorder.flush()).loops[0].status is LoopStatus.COMPLETED


def test_inactivity_timeout_policy_records_why_a_new_session_began():
    events = [AgentStart("A", "S1", "S1.x.1", timestamp=1000.0), AgentEnd("S1.x.1", [], timestamp=1010.0),
              AgentStart("A", "S2", "S2.x.1", timestamp=2810.0),  # A idle for exactly the threshold
              AgentStart("A", "S3", "S3.x.1", timestamp=2811.0),  # S2 was active a second ago
              AgentStart("B", "S4", "S4.x.1", timestamp=9999.0)]  # B's first session
    recorder = SessionRecorder(SessionRecorderConfig(formation_policy=InactivityTimeoutPolicy(1800)))
    default = SessionRecorder()
    for event in events:
        recorder.on_event(event)
        default.on_event(event)
    assert {s.session_id: s.formation for s in recorder.sessions()} == {
        "S1": FirstLoop(1000.0), "S2": InactivityTimeout(1800, "S1", 2810.0), "S3": FirstLoop(2811.0),
        "S4": FirstLoop(9999.0)}
    assert all(type(s.formation) is FirstLoop for s in default.sessions())
    with pytest.raises(ValueError):
        InactivityTimeoutPolicy(0)


def test_an_opened_session_is_explicit_and_collects_its_loops():
    recorder = SessionRecorder()
    recorder.open_session("mine", "A", timestamp=5.0)
    run("hi", AgentContext(agent_id="A", session_id="mine"), ScriptedProvider(["x"]), recorder)
    session = only(recorder.flush())
    assert session.formation == Explicit(5.0) and session.created_at == 5.0 and len(session.loops) == 1
    assert session.last_active_at == session.loops[0].ended_at


def test_objects_that_are_not_events_are_ignored():
    for keep in (False, True):
        recorder = SessionRecorder(SessionRecorderConfig(keep_events=keep))
        recorder.on_event("not an event")
        recorder.on_event(None)
        assert recorder.sessions() == []
