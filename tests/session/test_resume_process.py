"""Resuming a recorded session in another process (SPEC SESS-7, SESS-8; issue 24 item 2): the documented
flow — checkpoint, new interpreter, restore, attach a recorder to the same store, run — continues
the stored session instead of replacing it; two processes resuming from the same point never lose
a save silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phi.session import JsonDirStore, LoopStatus, SqliteStore

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

FIRST = """
import sys
from phi import Agent, ScriptedProvider, SubAgentTool
from phi.session import JsonDirStore, SessionRecorder, SqliteStore
kind, where, checkpoint = sys.argv[1:4]
store = JsonDirStore(where) if kind == "json" else SqliteStore(where)
helper = SubAgentTool("helper", provider=ScriptedProvider([], default="child answer"))
call = {"blocks": [{"type": "toolCall", "id": "c0", "name": "helper", "arguments": {"task": "look"}}]}
agent = Agent(provider=ScriptedProvider([call, "one", "two"]), tools=[helper], recorder=SessionRecorder(), store=store)
agent.run("first")
agent.run("second")
agent.checkpoint().save(checkpoint)
print(agent.session_id)
"""

LATER = """
import logging, os, sys, time
from phi import Agent, ScriptedProvider
from phi.agent.snapshot import AgentSnapshot
from phi.session import JsonDirStore, SessionRecorder, SqliteStore
logging.basicConfig(level=logging.ERROR)
kind, where, checkpoint, answer, go = sys.argv[1:6]

def first_reply(request):
    print("asked", flush=True)  # the session was loaded and the loop id taken before the model is asked
    deadline = time.monotonic() + 60
    while go != "-" and not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.01)
    return answer

store = JsonDirStore(where) if kind == "json" else SqliteStore(where)
agent = Agent(provider=ScriptedProvider([first_reply, "then " + answer]), recorder=SessionRecorder(), store=store)
agent.restore(AgentSnapshot.load(checkpoint))
third = agent.run("third")
fourth = agent.run("fourth")
print("fork:", third.fork.describe() if third.fork else None, "|", fourth.fork)
print(agent.last_loop_id)
"""


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", script, *args], env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def open_store(kind: str, where: Path):
    return JsonDirStore(where) if kind == "json" else SqliteStore(where)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_resuming_in_a_new_process_continues_the_stored_session(kind, tmp_path):
    where = tmp_path / ("sessions" if kind == "json" else "sessions.db")
    checkpoint = str(tmp_path / "checkpoint.json")
    session_id = run(FIRST, kind, str(where), checkpoint).stdout.strip()
    before = open_store(kind, where).load(session_id)
    run(LATER, kind, str(where), checkpoint, "three", "-")
    store = open_store(kind, where)
    after = store.load(session_id)
    assert [r.loop_id for r in after.loops[:2]] == [r.loop_id for r in before.loops]  # nothing lost
    assert after.loops[:2] == before.loops
    assert len(after.loops) == 4 and all(r.status is LoopStatus.COMPLETED for r in after.loops)
    assert (after.created_at, after.formation) == (before.created_at, before.formation)
    (ref,) = after.loops[0].child_loop_refs  # the sub-agent link is kept, both ways
    child = store.load(ref.child_session_id)
    assert after.get_loop(child.parent_spawn_ref.parent_loop_id) is not None
    third = after.loops[2]
    assert third.history.after_loop_id == before.loops[-1].loop_id and third.history.added == ()
    assert [m.text for m in after.conversation()] == ["first", "", "child answer", "one", "second", "two",
                                                       "third", "three", "fourth", "then three"]
    if kind == "sqlite":
        store.close()


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_process_resuming_after_another_appends_a_branch_beside_it(kind, tmp_path):
    where = tmp_path / ("sessions" if kind == "json" else "sessions.db")
    checkpoint = str(tmp_path / "checkpoint.json")
    session_id = run(FIRST, kind, str(where), checkpoint).stdout.strip()
    first = run(LATER, kind, str(where), checkpoint, "from A", "-")
    second = run(LATER, kind, str(where), checkpoint, "from B", "-")  # resumes the same checkpoint later
    assert "not saved" not in first.stderr + second.stderr
    stored = open_store(kind, where).load(session_id)
    assert [r.loop_id.rsplit(".", 1)[1] for r in stored.loops] == ["1", "2", "3", "4", "5", "6"]  # both landed
    a_loop, b_loop = first.stdout.split()[-1], second.stdout.split()[-1]
    tail = ["second", "two", "third"]
    assert [m.text for m in stored.conversation(at=a_loop)][4:] == [*tail, "from A", "fourth", "then from A"]
    assert [m.text for m in stored.conversation(at=b_loop)][4:] == [*tail, "from B", "fourth", "then from B"]
    assert stored.get_loop(stored.loops[4].loop_id).history.after_loop_id == stored.loops[1].loop_id  # a branch


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_two_processes_resuming_at_once_both_land_on_branches_of_their_own(kind, tmp_path):
    """Issue 31 item 1: B takes loop id .3 and is still running when A continues the same point.
    A's run becomes a branch beside B's (told so on its result), both writers' turns are stored
    once each, and each writer's next turn continues its own branch: no conversation is spliced."""
    where = tmp_path / ("sessions" if kind == "json" else "sessions.db")
    checkpoint = str(tmp_path / "checkpoint.json")
    go = tmp_path / "go"
    session_id = run(FIRST, kind, str(where), checkpoint).stdout.strip()
    waiting = subprocess.Popen([sys.executable, "-c", LATER, kind, str(where), checkpoint, "from B", str(go)], env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert waiting.stdout.readline().strip() == "asked"  # B claimed loop id .3 before A started
        a = run(LATER, kind, str(where), checkpoint, "from A", "-")
        go.touch()
        out, err = waiting.communicate(timeout=120)
    finally:
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 0, err
    assert "not saved" not in err + a.stderr
    a_fork, a_last = a.stdout.splitlines()[-2:]
    b_fork, b_last = out.splitlines()[-2:]
    assert f"session {session_id} was continued from loop {session_id}" in a_fork
    assert "continues as branch" in a_fork and b_fork == "fork: None | None"
    stored = open_store(kind, where).load(session_id)
    texts = [m.text for r in stored.loops for m in r.messages]
    assert texts.count("from A") == texts.count("from B") == 1 and len(stored.loops) == 6
    tail = ["second", "two", "third"]
    assert [m.text for m in stored.conversation(at=a_last)][4:] == [*tail, "from A", "fourth", "then from A"]
    assert [m.text for m in stored.conversation(at=b_last)][4:] == [*tail, "from B", "fourth", "then from B"]
    assert len({r.loop_id for r in stored.loops}) == 6 and all(not r.status.is_open for r in stored.loops)
