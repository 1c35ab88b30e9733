"""Load (REQ-170 style, seed 000 REQ-214): 50 parents on 50 threads, each delegating to 2 sub-agents at
once (parallel tool calls, each child loop on a tool worker), all recorded by one recorder."""

from __future__ import annotations

import threading

from session_helpers import calls, delegate_tool, run

from phi.loop.config import AgentContext
from phi.providers.mock import ScriptedProvider
from phi.session import LoopStatus, SessionRecorder, SessionRecorderConfig, SpawnRef
from phi.concurrency.workers import shared_pool

PARENTS = 50


def test_fifty_parents_with_two_sub_agents_each_are_recorded_completely():
    before = set(threading.enumerate())
    recorder = SessionRecorder(SessionRecorderConfig(keep_events=True))
    start = threading.Barrier(PARENTS)
    failures: list[BaseException] = []

    def parent(index: int) -> None:
        session, loop_id = f"P{index}", f"P{index}.lead.1"
        context = AgentContext(agent_id=f"lead{index}", session_id=session, loop_id=loop_id,
                               tools=[delegate_tool(loop_id, recorder, answer=f"answer {index}")])
        provider = ScriptedProvider([calls(f"{index}a", f"{index}b"), f"summary {index}"])
        try:
            start.wait(30)
            run("work", context, provider, recorder)
        except BaseException as error:  # reported below, with the index
            failures.append(error)

    threads = [threading.Thread(target=parent, args=(i,), name=f"parent-{i}") for i in range(PARENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    assert not any(thread.is_alive() for thread in threads)

    sessions = {s.session_id: s for s in recorder.flush()}
    assert len(sessions) == PARENTS * 3 and recorder.flush() == []
    children = {s.loops[0].loop_id: s for s in sessions.values() if s.parent_spawn_ref}
    assert len(children) == PARENTS * 2
    for index in range(PARENTS):
        lead = sessions[f"P{index}"]
        (record,) = lead.loops
        assert record.status is LoopStatus.COMPLETED and record.messages[-1].text == f"summary {index}"
        assert sorted(r.tool_call_id for r in record.child_loop_refs) == ["call_0", "call_1"]
        for ref in record.child_loop_refs:
            child_session = children.pop(ref.child_loop_id)
            assert child_session.session_id == ref.child_session_id
            assert child_session.parent_spawn_ref == SpawnRef(f"P{index}", record.loop_id, ref.tool_call_id, "delegate")
            (child,) = child_session.loops
            assert child.status is LoopStatus.COMPLETED and child.parent_loop_id == record.loop_id
            task = {"call_0": f"{index}a", "call_1": f"{index}b"}[ref.tool_call_id]
            assert child.agent_id == "sub-" + task and child.messages[0].text == task
            assert [e.sequence for e in child.events] == sorted(e.sequence for e in child.events)
            assert all(e.event["loop_id"] == child.loop_id for e in child.events if "loop_id" in e.event)
    assert children == {}  # every child is linked from exactly one parent

    # no thread left behind: ours are joined; what remains are the shared tool pool's idle workers
    left = set(threading.enumerate()) - before
    assert all(t.daemon and t.name == "phi-tool" for t in left), left
    assert len([t for t in threading.enumerate() if t.name == "phi-tool"]) <= shared_pool().size
