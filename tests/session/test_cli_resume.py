"""The ``phi`` command's resume (phi/cli/sessions.py, SPEC CLI-4, SESS-8): ``/resume ID`` gives the agent
the conversation the session really had — not every loop joined — and ``/resume ID LOOP`` branches
from an earlier run; saving after a resume appends to the stored session."""

from __future__ import annotations

import pytest

from phi import Agent, ScriptedProvider
from phi.cli.sessions import CliSessions
from phi.evaluation import LlmJudgeEvaluation
from phi.loop.config import AgentLoopConfig


def texts(messages) -> list[str]:
    return [m.text for m in messages]


def test_resume_restores_the_conversation_not_every_loop_joined(tmp_path):
    first = CliSessions(tmp_path)
    agent = Agent(provider=ScriptedProvider(["Paris.", "About 105 km²."]))
    first.attach(agent)
    agent.run("Capital of France?")
    judge = LlmJudgeEvaluation(AgentLoopConfig(provider=ScriptedProvider(["1"]), config_id="judge"))
    agent.run_parallel("Describe it.", [{"provider": ScriptedProvider(["City of light."]), "config_id": "a"},
                                        {"provider": ScriptedProvider(["On the Seine."]), "config_id": "b"}], judge)
    agent.run("Its area?")
    first.save()

    later = CliSessions(tmp_path)  # a new process
    resumed = Agent(provider=ScriptedProvider(["Two million."]))
    later.attach(resumed)
    assert later.restore(agent.session_id, resumed) == 6
    assert texts(resumed.messages) == ["Capital of France?", "Paris.", "Describe it.", "City of light.", "Its area?",
                                       "About 105 km²."]
    resumed.run("Population?")
    later.save()
    stored = later.store.load(agent.session_id)
    assert len(stored.loops) == 6  # 1 + two branches + the judge + 1, then the resumed run: nothing lost
    assert texts(stored.conversation()) == texts(resumed.messages)


def test_resume_at_a_loop_branches_there(tmp_path):
    sessions = CliSessions(tmp_path)
    agent = Agent(provider=ScriptedProvider(["one", "two"]))
    sessions.attach(agent)
    agent.run("first")
    first = agent.last_loop_id
    agent.run("second")
    sessions.save()

    later = CliSessions(tmp_path)
    resumed = Agent(provider=ScriptedProvider(["other"]))
    later.attach(resumed)
    assert later.restore(agent.session_id, resumed, at=first) == 2
    assert resumed.last_loop_id == first
    resumed.run("second, differently")
    later.save()
    stored = later.store.load(agent.session_id)
    assert texts(stored.conversation()) == ["first", "one", "second, differently", "other"]
    assert texts(stored.conversation(at=stored.loops[1].loop_id)) == ["first", "one", "second", "two"]
    with pytest.raises(KeyError):
        later.restore(agent.session_id, resumed, at="no-such-loop")
