"""SPEC §13.2 sentences the other session tests leave open (found by scripts/mutants.py: SESS-2a, SESS-7b)."""

from __future__ import annotations

from phi.agent import Agent
from phi.events import AgentEnd, AgentStart
from phi.providers.mock import ScriptedProvider
from phi.session import Session, SessionRecorder, SpawnRef
from phi.types import AssistantMessage, ContinuationKind, RunOutcome, TextContent


def _run(recorder: SessionRecorder, session_id: str, loop_id: str, parent: str | None = None,
         kind: ContinuationKind | None = None) -> None:
    recorder.on_event(AgentStart("agent-1", session_id, loop_id, parent, kind))
    recorder.on_event(AgentEnd(loop_id, [], outcome=RunOutcome.COMPLETED))


def test_only_a_parent_in_another_session_without_continuation_kind_makes_a_spawn() -> None:
    """SESS-2: a continuation of a loop recorded in another session is not a sub-agent spawn."""
    recorder = SessionRecorder()
    _run(recorder, "s1", "s1.mock.m.1")
    _run(recorder, "s2", "s2.mock.m.1", parent="s1.mock.m.1", kind=ContinuationKind.default())
    _run(recorder, "s3", "s3.sub.1", parent="s1.mock.m.1")
    sessions = {s.session_id: s for s in recorder.drain()}
    assert sessions["s2"].parent_spawn_ref is None
    assert sessions["s3"].parent_spawn_ref == SpawnRef("s1", "s1.mock.m.1")


class _BrokenStore:
    """A store whose every save fails."""

    def __init__(self) -> None:
        self.attempts = 0

    def save(self, session: Session) -> None:
        self.attempts += 1
        raise RuntimeError("disk full")

    def load(self, session_id: str) -> Session:
        raise KeyError(session_id)

    def list_ids(self) -> list[str]:
        return []

    def delete(self, session_id: str) -> None:
        raise KeyError(session_id)

    def load_for_agent(self, agent_id: str) -> list[Session]:
        return []


def test_a_failing_store_never_changes_the_run_result() -> None:
    """SESS-7: the store's failure is logged; the run's result is what it would have been."""
    store = _BrokenStore()
    agent = Agent(provider=ScriptedProvider(["fine"]))
    agent.record_sessions(store=store)
    result = agent.run("hello")
    assert store.attempts >= 1
    reply = result.messages[-1]
    assert result.outcome is RunOutcome.COMPLETED
    assert isinstance(reply, AssistantMessage) and reply.content == [TextContent("fine")]
