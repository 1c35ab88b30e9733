"""Rebuilding conversations from a recorded session and branching from a loop (SPEC SESS-8, issue 24
item 3): ``session.conversation(at=...)`` gives the conversation the agent really had — a branch
followed by its parent chain, only the selected branch of a parallel run, never the judge's
exchange, histories the application replaced honoured — and ``recorder.branch_from`` continues
from any loop."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from phi import Agent, ScriptedProvider
from phi.evaluation import LlmJudgeEvaluation
from phi.loop.config import AgentLoopConfig
from phi.session import (
    FirstLoop,
    LoopRecord,
    LoopStatus,
    Session,
    SessionError,
    SessionRecorder,
)
from phi.types import AssistantMessage, ContinuationKind, TextContent, UserMessage


def texts(messages) -> list[str]:
    return [m.text for m in messages]


def judged_run(agent: Agent, prompt: str, a: str, b: str, choice: str) -> None:
    judge = LlmJudgeEvaluation(AgentLoopConfig(provider=ScriptedProvider([choice]), config_id="judge"))
    agent.run_parallel(prompt, [{"provider": ScriptedProvider([a]), "config_id": "a"},
                                {"provider": ScriptedProvider([b]), "config_id": "b"}], judge)


def test_a_judged_parallel_run_contributes_only_the_winner_and_not_the_judge():
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["Paris.", "About 2.1 million."]), recorder=recorder)
    agent.run("Capital of France?")
    judged_run(agent, "Describe it.", "City of light.", "A large city on the Seine.", "2")
    agent.run("Population?")
    session = recorder.get_session(agent.session_id)
    judge = next(r for r in session.loops if r.evaluates)
    assert judge.messages[-1].text == "2" and set(judge.evaluates) == {r.loop_id for r in session.parallel_siblings(
        judge.evaluates[0])}
    expected = ["Capital of France?", "Paris.", "Describe it.", "A large city on the Seine.", "Population?",
                "About 2.1 million."]
    assert texts(session.conversation()) == expected
    assert session.conversation() == agent.messages
    assert session.latest_loop().loop_id == agent.last_loop_id
    losing = next(r for r in session.loops if r.parallel_group and not r.parallel_group.is_selected)
    assert texts(session.conversation(at=losing.loop_id)) == expected[:3] + ["City of light."]
    # phi-core's files carry no recorded histories: the tree alone gives the same conversation
    bare = replace(session, loops=[replace(r, history=None) for r in session.loops])
    assert texts(bare.conversation()) == expected


def test_branching_from_an_earlier_loop_follows_the_branch_and_its_parent_chain():
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["one", "two", "two again", "three"]), recorder=recorder)
    agent.run("first")
    first = agent.last_loop_id
    agent.run("second")
    second = agent.last_loop_id
    agent.restore(recorder.branch_from(first))  # back to the state after the first run
    assert texts(agent.messages) == ["first", "one"] and agent.last_loop_id == first
    agent.run("second, differently")
    branch = agent.last_loop_id
    assert branch not in (first, second)  # the counters continue past every loop of the session
    agent.run("and then")
    session = recorder.get_session(agent.session_id)
    assert texts(session.conversation(at=second)) == ["first", "one", "second", "two"]
    assert texts(session.conversation(at=branch)) == ["first", "one", "second, differently", "two again"]
    assert texts(session.conversation()) == ["first", "one", "second, differently", "two again", "and then", "three"]
    from phi.session import StartingHistory

    assert session.get_loop(branch).history == StartingHistory(first, 2, ())


def test_a_resumed_failure_and_an_edited_history_are_honoured():
    recorder = SessionRecorder()
    failing = {"blocks": [{"type": "text", "chunks": ["part"]}], "stop_reason": "error", "error_message": "boom"}
    agent = Agent(provider=ScriptedProvider([failing, "recovered", "105 km²."]), recorder=recorder)
    agent.run("Area of Paris?")
    agent.resume("branch").result()  # the failed reply is dropped, then a branch continues
    agent.messages = [*agent.messages, UserMessage.from_text("In square kilometres?")]  # added by the application
    agent.continue_loop("rerun").result()
    session = recorder.get_session(agent.session_id)
    assert texts(session.conversation()) == ["Area of Paris?", "recovered", "In square kilometres?", "105 km²."]
    assert session.conversation() == agent.messages
    joined = [m.text for r in session.loops for m in r.messages]  # what the CLI used to restore
    assert joined != texts(session.conversation())


def test_a_replaced_history_starts_the_conversation_over():
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider(["a", "b"]), recorder=recorder)
    agent.run("one")
    agent.messages = [UserMessage.from_text("summary of before"), AssistantMessage([TextContent("ok")])]
    agent.run("two")
    session = recorder.get_session(agent.session_id)
    assert texts(session.conversation()) == ["summary of before", "ok", "two", "b"]
    assert session.loops[1].history.kept == 0 and len(session.loops[1].history.added) == 2


@pytest.mark.parametrize("seed", range(6))
def test_the_conversation_through_the_last_run_is_always_the_agents_history(seed):
    """Random sequences of prompts, continuations, edits, branches and judged parallel runs."""
    rng = random.Random(seed)
    recorder = SessionRecorder()
    agent = Agent(provider=ScriptedProvider([], default="reply"), recorder=recorder)
    agent.run("start")
    for step in range(14):
        action = rng.choice(["prompt", "prompt", "edit", "branch", "parallel", "continue"])
        if action == "edit":
            kept = rng.randrange(len(agent.messages) + 1)
            agent.messages = [*agent.messages[:kept], UserMessage.from_text(f"edited {step}")]
            agent.continue_loop("rerun").result()
        elif action == "branch":
            loops = [r for r in recorder.get_session(agent.session_id).loops if not r.evaluates]
            agent.restore(recorder.branch_from(rng.choice(loops).loop_id))
            agent.run(f"branch {step}")
        elif action == "parallel":
            judged_run(agent, f"parallel {step}", f"a{step}", f"b{step}", rng.choice(["1", "2"]))
        elif action == "continue":
            agent.messages = [*agent.messages, UserMessage.from_text(f"more {step}")]
            agent.continue_loop().result()
        else:
            agent.run(f"prompt {step}")
        session = recorder.get_session(agent.session_id)
        assert session.conversation(at=agent.last_loop_id) == agent.messages, (seed, step, action)


def test_long_chains_and_cycles():
    from phi.session import StartingHistory

    loops = []
    for n in range(3000):
        history = StartingHistory(f"S.m.{n - 1}" if n else None, 2 * n, ())
        loops.append(LoopRecord(f"S.m.{n}", "S", "A", started_at=float(n), ended_at=n + 0.5,
                                status=LoopStatus.COMPLETED, history=history,
                                messages=[UserMessage([TextContent(str(n))], n), AssistantMessage([TextContent("r")])]))
    session = Session("S", "A", 0.0, 3000.0, FirstLoop(0.0), loops=loops)
    assert len(session.conversation()) == 6000 and session.conversation()[-2].text == "2999"
    loops[0].history = StartingHistory("S.m.2999", 0, ())
    with pytest.raises(SessionError, match="cycle"):
        session.conversation()
    with pytest.raises(KeyError):
        session.conversation(at="S.m.nope")
    assert Session("E", "A", 0.0, 0.0, FirstLoop(0.0)).conversation() == []


def test_without_recorded_histories_the_tree_decides():
    """phi-core's files: continuations follow their parent, sub-agent runs start fresh, origin runs
    follow the latest loop that ended before they started."""
    def record(n: int, start: float, **fields) -> LoopRecord:
        return LoopRecord(f"S.m.{n}", "S", "A", started_at=start, ended_at=start + 1, status=LoopStatus.COMPLETED,
                          messages=[AssistantMessage([TextContent(f"r{n}")])], **fields)

    session = Session("S", "A", 0.0, 10.0, FirstLoop(0.0), loops=[
        record(1, 0.0),
        record(2, 2.0),
        record(3, 4.0, parent_loop_id="S.m.1", continuation_kind=ContinuationKind.branch("t")),
        record(4, 4.5, parent_loop_id="S.m.3"),  # a sub-agent sharing the session
        record(5, 6.0),
    ])
    assert texts(session.conversation(at="S.m.3")) == ["r1", "r3"]
    assert texts(session.conversation(at="S.m.4")) == ["r4"]
    assert texts(session.conversation()) == ["r1", "r3", "r5"]  # latest: S.m.5, after the branch (not the sub-agent)


def test_branch_from_a_stored_session_in_a_new_recorder(tmp_path):
    from phi.session import JsonDirStore

    store = JsonDirStore(tmp_path)
    agent = Agent(provider=ScriptedProvider(["one", "two"]), recorder=SessionRecorder(), store=store)
    agent.run("first")
    first = agent.last_loop_id
    agent.run("second")
    recorder = SessionRecorder()
    with pytest.raises(KeyError):
        recorder.branch_from(first)
    assert recorder.continue_session(store.load(agent.session_id)) is True
    assert recorder.continue_session(store.load(agent.session_id)) is False  # already held
    later = Agent(provider=ScriptedProvider(["other"]), recorder=recorder, store=store)
    later.restore(recorder.branch_from(first))
    later.run("second, differently")
    stored = store.load(agent.session_id)
    assert len(stored.loops) == 3 and texts(stored.conversation()) == ["first", "one", "second, differently", "other"]
