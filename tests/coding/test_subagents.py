"""Sub-agents (seed 004 §7, §9.9): children run concurrently, share the filesystem, take input while
running, die with their commands when closed, and stop at the depth limit. Run over the Anthropic
wire protocol against a scripted model on 127.0.0.1 (every conversation has its own script)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from phi.coding import EventKind, Session, SessionConfig, SessionState, create_anthropic_profile
from phi.errors import ToolError
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.tools import LocalExecutionEnvironment

from .dialects import Dialect, session_for
from .helpers import collect, of_kind
from .wire import server  # noqa: F401 (the fixture)
from .wire import Call, Turn, tool_outputs, user_texts

D = Dialect("anthropic")


def agent_ids(body):
    """Agent ids returned by the spawn_agent results in a request."""
    return [json.loads(o)["agent_id"] for o in tool_outputs("anthropic", body) if '"agent_id"' in o]


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def wait_for_file(path, limit=10.0):
    deadline = time.monotonic() + limit
    while not os.path.exists(path) or not open(path).read().strip():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)
    return open(path).read().strip()


def test_two_children_work_in_parallel_in_their_own_subdirectories(server, tmp_path, nothing_left_behind):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # each child's command only succeeds while the other child is running too
    meet = ("touch ../{me}.ready; for i in $(seq 500); do [ -f ../{other}.ready ] && exit 0; sleep 0.01; done; exit 9")
    for me, other in (("A", "B"), ("B", "A")):
        server.script(f"Child {me}", Turn(calls=[D.shell(meet.format(me=me, other=other))]),
                      Turn(calls=[D.create("out.txt", f"from {me}\n")]), Turn(f"{me} done"))
    server.script("Split",
                  Turn(calls=[D.spawn("Child A: work in a", "a"), D.spawn("Child B: work in b", "b")]),
                  lambda body: Turn(calls=[Call("wait", {"agent_id": i}) for i in agent_ids(body)]),
                  Turn("Both children finished."))
    session = session_for("anthropic", server, str(tmp_path))
    child_events = []
    session.subscribe(lambda e: child_events.append(e) if e.session_id != session.id else None, include_subagents=True)
    events, result = collect(session, "Split the work")
    assert (tmp_path / "a" / "out.txt").read_text() == "from A\n"
    assert (tmp_path / "b" / "out.txt").read_text() == "from B\n"
    waits = [json.loads(e.data["output"]) for e in of_kind(events, EventKind.TOOL_CALL_END)
             if e.data["tool_name"] == "wait"]
    assert sorted(w["output"] for w in waits) == ["A done", "B done"] and all(w["success"] for w in waits)
    child_shells = [e.data["output"] for e in child_events
                    if e.kind == EventKind.TOOL_CALL_END and e.data["tool_name"] == "shell"]
    assert len(child_shells) == 2 and all("[exit code: 0," in o for o in child_shells), child_shells
    assert len({e.session_id for e in child_events}) == 2
    assert result.text == "Both children finished."
    session.close()


def test_send_input_reaches_a_running_child(server, tmp_path):
    (tmp_path / "sub").mkdir()
    task = "Wait for go.flag, then report"
    note = "Also write extra.txt containing extra"

    def child_turn_2(body):
        assert user_texts("anthropic", body)[-1] == note  # injected between the child's tool rounds
        return Turn(calls=[D.create("extra.txt", "extra\n")])

    wait_for_go = "for i in $(seq 1000); do [ -f go.flag ] && exit 0; sleep 0.01; done; exit 3"
    server.script(task, Turn(calls=[D.shell(wait_for_go)]),
                  child_turn_2, Turn("extra written"))
    server.script("Coordinate", Turn(calls=[D.spawn(task, "sub")]),
                  lambda body: Turn(calls=[Call("send_input", {"agent_id": agent_ids(body)[0], "message": note})]),
                  lambda body: Turn(calls=[D.shell("touch sub/go.flag"),
                                           Call("wait", {"agent_id": agent_ids(body)[0]})]),
                  Turn("The child wrote extra.txt."))
    session = session_for("anthropic", server, str(tmp_path))
    events, _ = collect(session, "Coordinate a child")
    send_end = next(e for e in of_kind(events, EventKind.TOOL_CALL_END) if e.data["tool_name"] == "send_input")
    assert "delivered to running sub-agent" in send_end.data["output"]
    assert (tmp_path / "sub" / "extra.txt").read_text() == "extra\n"
    wait_end = next(e for e in of_kind(events, EventKind.TOOL_CALL_END) if e.data["tool_name"] == "wait")
    assert json.loads(wait_end.data["output"]) == {"output": "extra written", "success": True, "turns_used": 3}
    session.close()


def test_close_agent_kills_a_child_blocked_in_a_long_command(server, tmp_path, nothing_left_behind):
    task = "Run the long job"
    server.script(task, Turn(calls=[D.shell("sleep 60 & echo $! > sleep.pid; wait")]), Turn("never reached"))

    def close_when_running(body):
        wait_for_file(tmp_path / "sleep.pid")
        return Turn(calls=[Call("close_agent", {"agent_id": agent_ids(body)[0]})])

    server.script("Start and stop", Turn(calls=[D.spawn(task)]), close_when_running, Turn("Stopped it."))
    session = session_for("anthropic", server, str(tmp_path))
    seen = []
    session.subscribe(seen.append, include_subagents=True)
    events, result = collect(session, "Start and stop a child")
    pid = int((tmp_path / "sleep.pid").read_text())
    close_end = next(e for e in of_kind(events, EventKind.TOOL_CALL_END) if e.data["tool_name"] == "close_agent")
    status = json.loads(close_end.data["output"])
    assert status["status"] == "closed" and status["success"] is False
    assert not pid_alive(pid)  # gone by the time close_agent answered
    child_end = [e for e in seen if e.kind == EventKind.SESSION_END and e.session_id != session.id]
    assert len(child_end) == 1 and child_end[0].data["state"] == "closed"
    assert result.text == "Stopped it." and session.state == SessionState.IDLE
    session.close()


def test_depth_limit_refuses_spawning(server, tmp_path):
    # a session at the limit does not offer the tools, and a call of them is an error result
    server.script("Try", Turn(calls=[D.spawn("a nested task")]), Turn("I will do it myself."))
    session = session_for("anthropic", server, str(tmp_path), SessionConfig(max_subagent_depth=0))
    events, _ = collect(session, "Try to delegate")
    (end,) = of_kind(events, EventKind.TOOL_CALL_END)
    assert end.data["is_error"] and end.data["error"] == "Tool spawn_agent not found"
    assert "spawn_agent" not in [t["name"] for t in server.seen["Try"][0][1]["tools"]]
    with pytest.raises(ToolError, match="max_subagent_depth is 0"):
        session.subagents.spawn("a nested task")
    # a child at depth 1 (the default limit) cannot spawn either
    child = Session(session.profile, session.execution_env, SessionConfig(), depth=1, parent=session)
    with pytest.raises(ToolError, match="at depth 1 and max_subagent_depth is 1"):
        child.subagents.spawn("deeper")
    session.close()


def test_aborting_the_parent_closes_children_and_kills_their_commands(server, tmp_path, nothing_left_behind):
    task = "Long child job"
    server.script(task, Turn(calls=[D.shell("sleep 60 & echo $! > child.pid; wait")]), Turn("never"))
    server.script("Parent", Turn(calls=[D.spawn(task)]),
                  lambda body: Turn(calls=[Call("wait", {"agent_id": agent_ids(body)[0]})]), Turn("never"))
    session = session_for("anthropic", server, str(tmp_path))
    order = []
    session.subscribe(lambda e: order.append((e.kind, e.session_id)), include_subagents=True)
    stream = session.submit_stream("Parent starts a child")
    pid = int(wait_for_file(tmp_path / "child.pid"))
    threading.Thread(target=session.abort).start()
    list(stream)
    assert stream.result(10).outcome == "aborted" and session.state == SessionState.CLOSED
    (handle,) = session.subagents.handles()
    assert handle.session.state == SessionState.CLOSED and handle.status == "closed"
    assert not pid_alive(pid)
    session_ends = [sid for kind, sid in order if kind == EventKind.SESSION_END]
    assert session_ends == [handle.session.id, session.id]  # children first, the parent's last
    assert order[-1] == (EventKind.SESSION_END, session.id)


def test_a_child_session_shares_the_environment_and_has_its_own_history(tmp_path):
    provider = ScriptedProvider([ScriptedResponse.text("child answer")])
    profile = create_anthropic_profile(provider=provider)
    parent = Session(profile, LocalExecutionEnvironment(str(tmp_path)))
    (tmp_path / "pkg").mkdir()
    handle = parent.subagents.spawn("do the child thing", working_dir="pkg", max_turns=7)
    result = handle.wait()
    assert result.output == "child answer" and result.success and result.turns_used == 1
    child = handle.session
    assert child.config.max_turns == 7 and child.depth == 1 and child.parent is parent
    assert child.execution_env.working_directory() == str(tmp_path / "pkg")
    assert child.execution_env.inner is parent.base_env  # same environment underneath
    assert parent.history == [] and [type(t).__name__ for t in child.history] == ["UserTurn", "AssistantTurn"]
    with pytest.raises(ToolError, match="outside the working directory"):
        parent.subagents.spawn("escape", working_dir="..")
    with pytest.raises(ToolError, match="no sub-agent with id 'nope'"):
        parent.subagents.get("nope")
    parent.close()
    assert child.state == SessionState.CLOSED
