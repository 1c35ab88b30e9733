"""Two writers of one session (SPEC SESS-6, SESS-7, SESS-8; issue 31 items 1 and 3): agents on two
threads, or an LLM judge beside its agent, continuing the same session at the same moment. Every
acknowledged turn is stored exactly once, every stored conversation is one that some writer had, and
loop ids stay unique within the session — in one process and across a resume in another."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from phi import Agent, ScriptedProvider
from phi.evaluation import LlmJudgeEvaluation
from phi.loop.config import AgentLoopConfig
from phi.session import JsonDirStore, SessionRecorder, SqliteStore

from history_checks import assert_valid_conversation

ROOT = Path(__file__).resolve().parents[2]
RUNS = 20


def open_store(kind: str, tmp_path: Path):
    return JsonDirStore(tmp_path / "sessions") if kind == "json" else SqliteStore(tmp_path / "sessions.db")


def texts(messages) -> list[str]:
    return [m.text for m in messages]


def writer(name: str, seed: Agent, recorder: SessionRecorder, store) -> Agent:
    """A second process or terminal resuming the seed's session: its checkpoint, the same store."""
    answers = [f"{name} answer {i}" for i in range(RUNS)]
    agent = Agent(provider=ScriptedProvider(answers), recorder=recorder, store=store)
    agent.restore(seed.checkpoint())
    return agent


def run_both(agents: list[Agent]) -> list[BaseException]:
    start, errors = threading.Barrier(len(agents)), []

    def turns(agent: Agent, name: str) -> None:
        try:
            start.wait()
            for i in range(RUNS):
                agent.run(f"{name} question {i}")
        except BaseException as error:  # reported by the test
            errors.append(error)

    threads = [threading.Thread(target=turns, args=(agent, name)) for agent, name in zip(agents, "AB")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.parametrize("shared", [False, True], ids=["own-recorders", "shared-recorder"])
@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_two_agents_on_two_threads_writing_one_session_lose_and_splice_nothing(kind, shared, tmp_path, caplog):
    seed = Agent(provider=ScriptedProvider(["seed answer"]), recorder=SessionRecorder(), store=open_store(kind, tmp_path))
    seed.run("seed question")
    session_id = seed.session_id
    if shared:
        recorder, store = SessionRecorder(), open_store(kind, tmp_path)
        agents = [writer(name, seed, recorder, store) for name in "AB"]
    else:
        agents = [writer(name, seed, SessionRecorder(), open_store(kind, tmp_path)) for name in "AB"]
    with caplog.at_level(logging.WARNING, logger="phi"):
        assert run_both(agents) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    stored = open_store(kind, tmp_path).load(session_id)
    assert len({r.loop_id for r in stored.loops}) == len(stored.loops) == 1 + 2 * RUNS
    assert all(not r.status.is_open for r in stored.loops)
    said = [m.text for r in stored.loops for m in r.messages]
    for name in "AB":
        for i in range(RUNS):  # every acknowledged turn stored exactly once
            assert said.count(f"{name} question {i}") == said.count(f"{name} answer {i}") == 1
    for agent, name in zip(agents, "AB"):  # each writer's conversation is the one it had, nothing of the other's
        had = agent.messages
        assert texts(stored.conversation(at=agent.last_loop_id)) == texts(had)
        assert texts(had)[:2] == ["seed question", "seed answer"]
        assert all(text.startswith(name) for text in texts(had)[2:])
        assert_valid_conversation(had)
    for record in stored.loops:  # and every stored conversation is some writer's prefix
        conversation = texts(stored.conversation(at=record.loop_id))
        assert any(texts(agent.messages)[:len(conversation)] == conversation for agent in agents), record.loop_id


def test_a_writer_that_continued_a_point_already_continued_is_told_it_is_on_a_branch(tmp_path):
    store_a, store_b = JsonDirStore(tmp_path), JsonDirStore(tmp_path)
    first = Agent(provider=ScriptedProvider(["one", "two"]), recorder=SessionRecorder(), store=store_a)
    first.run("q1")
    checkpoint = first.checkpoint()
    quiet = first.run("q2")
    other = Agent(provider=ScriptedProvider(["elsewhere", "on"]), recorder=SessionRecorder(), store=store_b)
    other.restore(checkpoint)  # another terminal resumed from q1, not knowing q2
    forked = other.run("q2 elsewhere")
    assert quiet.fork is None
    assert forked.fork is not None and forked.fork.follows == checkpoint.last_loop_id
    assert forked.fork.others == (first.last_loop_id,) and forked.fork.loop_id == other.last_loop_id
    assert "continues as branch" in forked.fork.describe()
    again = other.run("and on")  # its next run continues its own branch: no new fork
    assert again.fork is None
    stored = JsonDirStore(tmp_path).load(first.session_id)
    assert texts(stored.conversation(at=other.last_loop_id)) == ["q1", "one", "q2 elsewhere", "elsewhere", "and on",
                                                                  "on"]
    assert texts(stored.conversation(at=first.last_loop_id)) == ["q1", "one", "q2", "two"]


def test_a_judge_on_the_agents_own_model_takes_a_loop_id_of_its_own():
    recorder = SessionRecorder()
    model = ScriptedProvider(["first answer", "2"])
    agent = Agent(provider=model, recorder=recorder)
    agent.run("first")
    judge = LlmJudgeEvaluation(agent.config)  # the agent's own provider and model: the same loop-id segment
    agent.run_parallel("compare", [{"provider": ScriptedProvider(["a"]), "config_id": "a"},
                                   {"provider": ScriptedProvider(["b"]), "config_id": "b"}], judge)
    session = recorder.get_session(agent.session_id)
    ids = [r.loop_id for r in session.loops]
    assert len(ids) == len(set(ids)) == 4  # first, two branches, the judge: each recorded once
    judge_loop = next(r for r in session.loops if r.evaluates)
    assert judge_loop.messages[-1].text == "2" and judge_loop.loop_id.endswith(".2")
    assert agent.next_loop_id().endswith(".3")


JUDGED = """
import sys
from phi import Agent, ScriptedProvider
from phi.agent.snapshot import AgentSnapshot
from phi.evaluation import LlmJudgeEvaluation
from phi.loop.config import AgentLoopConfig
from phi.session import JsonDirStore, SessionRecorder
where, checkpoint = sys.argv[1:3]
agent = Agent(provider=ScriptedProvider(["first answer"]), recorder=SessionRecorder(), store=JsonDirStore(where))
if checkpoint != "-" and checkpoint.endswith(".in"):
    agent.restore(AgentSnapshot.load(checkpoint))
judge = LlmJudgeEvaluation(AgentLoopConfig(provider=ScriptedProvider(["1"]), config_id="judge"))
agent.run_parallel("compare", [{"provider": ScriptedProvider(["a"]), "config_id": "a"},
                               {"provider": ScriptedProvider(["b"]), "config_id": "b"}], judge)
agent.checkpoint().save(checkpoint.removesuffix(".in") + ".out")
print(agent.session_id)
"""


def test_a_judge_resumed_in_a_new_process_does_not_take_the_stored_judges_loop_id(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    where, checkpoint = str(tmp_path / "sessions"), str(tmp_path / "point")

    def run(arg: str) -> str:
        done = subprocess.run([sys.executable, "-c", JUDGED, where, arg], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert "not saved" not in done.stderr and "already recorded" not in done.stderr, done.stderr
        return done.stdout.strip()

    session_id = run(checkpoint)
    os.rename(checkpoint + ".out", checkpoint + ".in")
    assert run(checkpoint + ".in") == session_id
    stored = JsonDirStore(where).load(session_id)
    judges = sorted(r.loop_id.rsplit(".", 2)[-2:][1] for r in stored.loops if r.evaluates)
    assert judges == ["1", "2"] and len(stored.loops) == 6


# --------------------------------------------------------------------------- findings of the review


class PlainStore:
    """A store of one's own: only the SessionStore protocol, no ``claim``."""

    def __init__(self, store) -> None:
        self.store = store

    def save(self, session) -> None:
        self.store.save(session)

    def load(self, session_id):
        return self.store.load(session_id)

    def list_ids(self):
        return self.store.list_ids()

    def delete(self, session_id) -> None:
        self.store.delete(session_id)

    def load_for_agent(self, agent_id):
        return self.store.load_for_agent(agent_id)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_store_without_claim_still_keeps_both_writers_and_tells_the_second(kind, tmp_path):
    seed = Agent(provider=ScriptedProvider(["seed answer"]), recorder=SessionRecorder(),
                 store=PlainStore(open_store(kind, tmp_path)))
    seed.run("seed question")
    writers = []
    for name in "AB":
        agent = Agent(provider=ScriptedProvider([f"{name} answer", f"{name} answer 2"]), recorder=SessionRecorder(),
                      store=PlainStore(open_store(kind, tmp_path)))
        agent.restore(seed.checkpoint())
        writers.append(agent)
    a, b = writers
    first = a.run("A question")
    second = b.run("B question")
    assert first.fork is None and second.fork is not None and second.fork.others == (a.last_loop_id,)
    a.run("A question 2")
    b.run("B question 2")
    stored = open_store(kind, tmp_path).load(seed.session_id)
    assert len({r.loop_id for r in stored.loops}) == len(stored.loops) == 5
    for agent in writers:
        assert texts(stored.conversation(at=agent.last_loop_id)) == texts(agent.messages)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_finished_turn_is_saved_while_another_agent_sharing_the_recorder_still_runs(kind, tmp_path):
    recorder, store = SessionRecorder(), open_store(kind, tmp_path)
    started, release = threading.Event(), threading.Event()

    def slow(request):
        started.set()
        assert release.wait(60)
        return "B answer"

    seed = Agent(provider=ScriptedProvider(["seed answer"]), recorder=recorder, store=store)
    seed.run("seed question")
    b = Agent(provider=ScriptedProvider([slow]), recorder=recorder, store=store)
    b.restore(seed.checkpoint())
    a = Agent(provider=ScriptedProvider(["A answer"]), recorder=recorder, store=store)
    a.restore(seed.checkpoint())
    running = b.prompt("B question")
    try:
        assert started.wait(60)
        a.run("A question")
        assert a.wait_for_saved(60)
        stored = open_store(kind, tmp_path).load(seed.session_id)  # B is still running: A's turn is stored
        said = [m.text for r in stored.loops for m in r.messages]
        assert said.count("A question") == said.count("A answer") == 1
    finally:
        release.set()
        running.result(timeout=60)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_claim_of_a_killed_writer_is_no_fork_and_a_live_ones_is(tmp_path):
    from phi.session import LoopRecord, LoopStatus
    from phi.session.model import replace_loops
    from phi.session.store import claimant

    seed = Agent(provider=ScriptedProvider(["seed answer"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    seed.run("seed question")
    stored = JsonDirStore(tmp_path)
    session = stored.load(seed.session_id)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        for n, pid in ((7, dead_pid()), (8, alive.pid)):
            record = LoopRecord(f"{seed.session_id}.other.{n}", seed.session_id, seed.agent_id, seed.last_loop_id,
                                status=LoopStatus.PENDING, started_at=session.loops[-1].ended_at + n)
            record.extra["claimed_by"] = {**claimant(), "pid": pid, "start": 0}
            stored.claim(replace_loops(session, [record]))
        writer = Agent(provider=ScriptedProvider(["mine"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
        writer.restore(seed.checkpoint())
        result = writer.run("mine")
    finally:
        alive.kill()
        alive.wait()
    assert result.fork is not None and result.fork.others == (f"{seed.session_id}.other.8",)  # not the dead one


def test_resuming_a_session_the_recorder_holds_reaches_loops_another_writer_stored_since(tmp_path):
    from phi.cli.sessions import CliSessions

    mine = CliSessions(tmp_path)
    agent = Agent(provider=ScriptedProvider(["one", "two"]))
    mine.attach(agent)
    agent.run("first")
    other = Agent(provider=ScriptedProvider(["elsewhere"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    other.restore(agent.checkpoint())
    other.run("from another phi")
    assert mine.restore(agent.session_id, agent, at=other.last_loop_id) == 4  # /resume ID LOOP of the other's
    assert texts(agent.messages) == ["first", "one", "from another phi", "elsewhere"]
    assert mine.restore(agent.session_id, agent) == 4  # /resume ID: the latest, the other writer's


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_value_that_is_not_json_data_never_holds_back_the_later_turns(kind, tmp_path, caplog):
    from phi import SubAgentTool
    from phi.types import ToolResult

    class Odd:
        name, description, label = "odd", "returns details that are not JSON data", "odd"
        parameters = {"type": "object", "properties": {}}

        def execute(self, args, ctx):
            return ToolResult.from_text("ok", details={"tags": {"a", "b"}})  # a set

    call = {"blocks": [{"type": "toolCall", "id": "c0", "name": "helper", "arguments": {"task": "t"}}]}
    odd_call = {"blocks": [{"type": "toolCall", "id": "o0", "name": "odd", "arguments": {}}]}
    helper = SubAgentTool("helper", provider=ScriptedProvider([odd_call, "child done"]), tools=[Odd()])
    agent = Agent(provider=ScriptedProvider([call, "one", "two", "three"]), tools=[helper], recorder=SessionRecorder(),
                  store=open_store(kind, tmp_path))
    with caplog.at_level(logging.WARNING, logger="phi"):
        for text in ("q1", "q2", "q3"):
            agent.run(text)
    assert any("saved with that value replaced by a marker" in r.getMessage() for r in caplog.records)
    store = open_store(kind, tmp_path)
    stored = store.load(agent.session_id)
    said = [m.text for r in stored.loops for m in r.messages]
    assert [q for q in ("q1", "q2", "q3") if q in said] == ["q1", "q2", "q3"]
    (ref,) = stored.loops[0].child_loop_refs
    child = store.load(ref.child_session_id)  # the child is stored too: no dangling link
    details = [m.details for r in child.loops for m in r.messages if getattr(m, "details", None)]
    assert details == [{"tags": "<not JSON data: set>"}]


def test_a_claim_that_fails_once_is_tried_again_so_no_other_writer_takes_its_loop_id(tmp_path):
    class Flaky(JsonDirStore):
        failures = 1

        def claim(self, session, avoid=()):
            if Flaky.failures:
                Flaky.failures -= 1
                raise OSError(28, "No space left on device")
            return super().claim(session, avoid)

    seed = Agent(provider=ScriptedProvider(["seed answer"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    seed.run("seed question")
    a = Agent(provider=ScriptedProvider(["A answer", "A answer 2"]), recorder=SessionRecorder(), store=Flaky(tmp_path))
    a.restore(seed.checkpoint())
    b = Agent(provider=ScriptedProvider(["B answer"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    b.restore(seed.checkpoint())
    a.run("A question")
    assert b.run("B question").fork is not None  # A's loop id was claimed after all
    a.run("A question 2")
    stored = JsonDirStore(tmp_path).load(seed.session_id)
    assert texts(stored.conversation(at=a.last_loop_id)) == texts(a.messages)
    assert texts(stored.conversation(at=b.last_loop_id)) == texts(b.messages)


def test_a_claim_whose_history_holds_a_value_that_is_not_json_is_claimed_with_a_marker(tmp_path):
    from phi.types import ExtensionMessage

    seed = Agent(provider=ScriptedProvider(["seed answer"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    seed.run("seed question")
    a = Agent(provider=ScriptedProvider(["A answer"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    a.restore(seed.checkpoint())
    a.messages = [*a.messages, ExtensionMessage("note", {"handle": object()})]  # the application edited the history
    b = Agent(provider=ScriptedProvider(["B answer"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    b.restore(seed.checkpoint())
    a.run("A question")
    assert b.run("B question").fork is not None
    said = [getattr(m, "text", None) for r in JsonDirStore(tmp_path).load(seed.session_id).loops for m in r.messages]
    assert said.count("A question") == said.count("B question") == 1


def test_absorbing_a_stored_session_refreshes_another_writers_run_held_as_still_open(tmp_path):
    from phi.session import LoopRecord, LoopStatus
    from phi.session.model import replace_loops

    seed = Agent(provider=ScriptedProvider(["seed answer"]), recorder=SessionRecorder(), store=JsonDirStore(tmp_path))
    seed.run("seed question")
    writer = JsonDirStore(tmp_path)  # another writer: claims a loop, finishes it later
    stored = writer.load(seed.session_id)
    loop_id = f"{seed.session_id}.other.1"
    pending = LoopRecord(loop_id, seed.session_id, seed.agent_id, seed.last_loop_id, status=LoopStatus.PENDING,
                         started_at=stored.loops[-1].ended_at + 1)
    writer.claim(replace_loops(stored, [pending]))
    recorder = SessionRecorder()
    recorder.continue_session(JsonDirStore(tmp_path).load(seed.session_id))  # read while it runs
    done = pending.copy()
    done.status, done.ended_at = LoopStatus.COMPLETED, pending.started_at + 1
    done.messages = [seed.messages[0], seed.messages[1]]
    writer.save(replace_loops(stored, [done]))
    assert recorder.absorb(JsonDirStore(tmp_path).load(seed.session_id)) == 1
    assert recorder.get_loop(loop_id).status is LoopStatus.COMPLETED
    assert texts(recorder.get_loop(loop_id).messages) == ["seed question", "seed answer"]
