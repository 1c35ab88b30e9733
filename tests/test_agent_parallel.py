"""Agent.prompt_parallel / run_parallel (SPEC AGENT-8): branches from the agent's counters, the
history settled with the winner before ParallelLoopEnd is heard, continuation branches."""

from __future__ import annotations

import threading

import pytest

from phi import Agent, ScriptedProvider
from phi.errors import AlreadyRunning, InvalidContinue
from phi.evaluation import ElaborateEvaluation, TokenEfficientEvaluation
from phi.events import AgentStart, ParallelLoopEnd, ParallelLoopStart
from phi.types import RunOutcome, UserMessage

pytestmark = pytest.mark.usefixtures("blocking_run_path")  # the run contract on both paths (issue 36)


def reply(text: str, tokens: int) -> dict:
    return {"blocks": [{"type": "text", "chunks": [text]}], "usage": {"input": tokens, "output": tokens}}


def variants(*pairs):
    return [{"provider": ScriptedProvider(list(responses)), "config_id": cid} for cid, responses in pairs]


def test_run_parallel_keeps_only_the_winner_and_counts_loops_per_config():
    agent = Agent(provider=ScriptedProvider([]))
    result = agent.run_parallel("question", variants(("a", [reply("short", 1)]), ("b", [reply("long answer", 50)])),
                                TokenEfficientEvaluation())
    session = agent.session_id
    assert [o.loop_id for o in result.outcomes] == [f"{session}.a.1", f"{session}.b.1"]
    assert result.selected_config_index == 0 and result.text == "short"
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert agent.messages[1].content[0].text == "short"
    assert agent.last_loop_id == f"{session}.a.1"

    result = agent.run_parallel("again", variants(("a", [reply("x", 1)]), ("b", [reply("much longer", 60)])),
                                ElaborateEvaluation())
    assert [o.loop_id for o in result.outcomes] == [f"{session}.a.2", f"{session}.b.2"]
    assert agent.messages[-1].content[0].text == "much longer" and len(agent.messages) == 4


def test_the_agent_is_settled_when_parallel_loop_end_is_heard():
    """AGENT-8 (as AGENT-1): history merged and idle before any subscriber hears ParallelLoopEnd."""
    agent = Agent(provider=ScriptedProvider([]))
    seen: list = []

    def on_event(event):
        if isinstance(event, ParallelLoopEnd):
            seen.append((agent.is_streaming, [m.role for m in agent.messages], agent.last_loop_id))

    agent.subscribe(on_event)
    stream = agent.prompt_parallel("q", variants(("a", ["one"]), ("b", ["two"])))
    events = list(stream)
    assert isinstance(events[0], ParallelLoopStart) and isinstance(events[-1], ParallelLoopEnd)
    assert seen == [(False, ["user", "assistant"], events[-1].selected_loop_id)]
    assert stream.result().selected_config_index == 0


def test_a_parallel_continuation_branches_from_the_last_run():
    agent = Agent(provider=ScriptedProvider(["first"]))
    agent.run("hello")
    first_loop = agent.last_loop_id
    agent.messages = [*agent.messages, UserMessage.from_text("and now?")]
    starts: list = []
    agent.subscribe(lambda e: starts.append(e) if isinstance(e, AgentStart) else None)
    result = agent.run_parallel(None, variants(("a", ["A"]), ("b", ["B"])))
    assert [s.parent_loop_id for s in starts] == [first_loop, first_loop]
    assert result.outcomes[0].original_context_len == 3
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]


def test_continuation_needs_a_history_awaiting_a_reply():
    agent = Agent(provider=ScriptedProvider([]))
    with pytest.raises(InvalidContinue):
        agent.run_parallel(None, variants(("a", ["A"])))
    assert not agent.is_streaming


def test_abort_ends_every_branch_and_the_agent_goes_idle():
    hang = {"blocks": [{"type": "text", "chunks": ["..."]}], "hang_after_chunks": 1}
    agent = Agent(provider=ScriptedProvider([]))
    started = threading.Event()
    count = []

    def on_event(event):
        if event.type == "MessageUpdate":
            count.append(1)
            if len(count) == 2:
                started.set()

    agent.subscribe(on_event)
    stream = agent.prompt_parallel("q", variants(("a", [hang]), ("b", [hang])))
    assert started.wait(5)
    with pytest.raises(AlreadyRunning):
        agent.prompt("meanwhile")
    agent.abort()
    result = stream.result(timeout=5)
    assert {o.outcome for o in result.outcomes} == {RunOutcome.ABORTED}
    assert not agent.is_streaming
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert not [t for t in threading.enumerate() if t.name.startswith("phi-branch-")]
