"""Agent(recorder=..., store=...) (phi/agent/recording.py, SPEC SESS-7): real SubAgentTools, their
children recorded into sessions of their own and linked both ways, settled sessions saved per run."""

from __future__ import annotations

import threading

from phi import Agent, ScriptedProvider, SubAgentTool
from phi.session import JsonDirStore, LoopStatus, SessionRecorder


def delegating_reply(*tasks: str, tool: str = "helper") -> dict:
    return {"blocks": [{"type": "toolCall", "id": f"c{i}", "name": tool, "arguments": {"task": task}}
                       for i, task in enumerate(tasks)]}


def test_sub_agents_of_a_recorded_agent_are_recorded_and_saved(tmp_path):
    store = JsonDirStore(tmp_path)
    helper = SubAgentTool("helper", provider=ScriptedProvider([], default="child answer"))
    agent = Agent(provider=ScriptedProvider([delegating_reply("one", "two"), "summary"]), tools=[helper])
    agent.record_sessions(store=store)
    agent.run("work")
    ids = store.list_ids()
    assert len(ids) == 3 and agent.session_id in ids
    parent = store.load(agent.session_id)
    (record,) = parent.loops
    assert record.status is LoopStatus.COMPLETED and len(record.child_loop_refs) == 2
    for ref in record.child_loop_refs:
        child = store.load(ref.child_session_id)
        assert child.parent_spawn_ref.parent_loop_id == record.loop_id
        assert child.parent_spawn_ref.tool_call_id == ref.tool_call_id and child.parent_spawn_ref.tool_name == "helper"
        assert child.loops[0].loop_id == ref.child_loop_id and child.loops[0].messages[-1].text == "child answer"
    # a second run of the same session is added to the same saved Session
    agent.tools = []
    agent.config.provider = ScriptedProvider(["again"])
    agent.run("more")
    assert [r.status for r in store.load(agent.session_id).loops] == [LoopStatus.COMPLETED] * 2


def test_fifty_agents_delegating_twice_at_once_are_recorded_completely():
    """REQ-170 style load with the real SubAgentTool: 50 parents × 2 children, one recorder."""
    recorder = SessionRecorder()
    agents = []
    for i in range(50):
        helper = SubAgentTool("helper", provider=ScriptedProvider([], default=f"answer {i}"))
        agent = Agent(provider=ScriptedProvider([delegating_reply(f"{i}a", f"{i}b"), f"summary {i}"]),
                      tools=[helper], recorder=recorder)
        agents.append(agent)
    before = {t for t in threading.enumerate()}
    streams = [agent.prompt("go") for agent in agents]
    results = [stream.result(timeout=60) for stream in streams]
    assert all(r.text.startswith("summary") for r in results)
    sessions = {s.session_id: s for s in recorder.flush()}
    assert len(sessions) == 150
    for agent in agents:
        (record,) = sessions[agent.session_id].loops
        assert len(record.child_loop_refs) == 2
        for ref in record.child_loop_refs:
            child = sessions[ref.child_session_id]
            assert child.parent_spawn_ref.parent_loop_id == record.loop_id
            assert child.loops[0].parent_loop_id == record.loop_id
            assert child.loops[0].status is LoopStatus.COMPLETED
    leftover = {t for t in threading.enumerate()} - before
    assert all(t.name.startswith("phi-tool") or not t.is_alive() for t in leftover), leftover


def test_a_run_that_raises_is_recorded_as_an_error_and_saved_and_the_next_run_too(tmp_path):
    class Boom(Exception):
        pass

    def before_turn(messages, index):
        if index == 1:
            raise Boom("from before_turn")

    store = JsonDirStore(tmp_path)
    seen: list[str] = []
    tool_reply = {"blocks": [{"type": "toolCall", "id": "c1", "name": "missing", "arguments": {}}]}
    agent = Agent(provider=ScriptedProvider([tool_reply, "after"]), before_turn=before_turn)
    agent.record_sessions(store=store)
    agent.subscribe(lambda event: seen.append(event.type))
    try:
        agent.run("work")
    except Boom:
        pass
    else:
        raise AssertionError("the hook's exception did not reach the caller")
    assert "AgentEnd" not in seen  # subscribers see no made-up end (SPEC LOOP-5)
    (record,) = store.load(agent.session_id).loops
    assert record.status is LoopStatus.ERROR and record.ended_at is not None
    assert record.messages == agent.messages and [m.role for m in agent.messages] == ["user", "assistant", "toolResult"]
    assert record.usage.output == sum(m.usage.output for m in agent.messages if m.role == "assistant")
    agent.before_turn = None
    agent.run("again")
    assert [r.status for r in store.load(agent.session_id).loops] == [LoopStatus.ERROR, LoopStatus.COMPLETED]
