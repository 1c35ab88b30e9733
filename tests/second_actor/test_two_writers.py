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
