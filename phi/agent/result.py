"""What a run of an Agent gives (SPEC AGENT-2): :class:`AgentResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import AgentEnd
from ..types import AgentMessage, AssistantMessage, RunOutcome, StopReason, Usage


@dataclass(frozen=True)
class SessionFork:
    """A run stored as a branch (SPEC SESS-6, SESS-8): when it started, session ``session_id``
    already held other continuations (``others``) of the loop it continues (``follows``) — another
    process, terminal or agent continued that point, or the agent was restored to an earlier one.
    Nothing is lost or spliced: every conversation is stored whole, and this agent's next runs
    continue its own branch (``loop_id``)."""

    session_id: str
    loop_id: str
    follows: str | None
    others: tuple[str, ...]

    def describe(self) -> str:
        """The fork in words, for a person."""
        return (f"session {self.session_id} was continued from loop {self.follows} elsewhere too "
                f"({', '.join(self.others)}); this conversation continues as branch {self.loop_id} of it")


@dataclass
class AgentResult:
    """What a run of an Agent gives: ``Agent.run(...)`` and ``Agent.prompt(...).result()`` alike.

    ``outcome`` says why the run ended (SPEC EVT-9); ``stop_reason`` is the last reply's, ``error``
    its error message when the model call failed; ``timed_out`` is set when ``run(timeout=...)``
    aborted the run at its deadline; ``fork`` is set when the run was stored as a branch beside
    another writer's run of the same session (:class:`SessionFork`).
    """

    messages: list[AgentMessage]
    outcome: RunOutcome
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason | None = None
    error: str | None = None
    rejection: str | None = None
    timed_out: bool = False
    fork: SessionFork | None = None

    @property
    def text(self) -> str:
        """The text of the last assistant message of the run."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.text
        return ""

    @classmethod
    def of(cls, end: AgentEnd, fork: SessionFork | None = None) -> AgentResult:
        """The result a run's ``AgentEnd`` describes (``fork``: the run was stored as a branch)."""
        last = next((m for m in reversed(end.messages) if isinstance(m, AssistantMessage)), None)
        stop = last.stop_reason if last is not None else None
        error = last.error_message if last is not None and stop == StopReason.ERROR else None
        return cls(list(end.messages), end.outcome, end.usage, stop, error, end.rejection, fork=fork)
