"""What a run of an Agent gives (SPEC AGENT-2): :class:`AgentResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..events import AgentEnd
from ..types import AgentMessage, AssistantMessage, RunOutcome, StopReason, Usage


@dataclass
class AgentResult:
    """What a run of an Agent gives: ``Agent.run(...)`` and ``Agent.prompt(...).result()`` alike.

    ``outcome`` says why the run ended (SPEC EVT-9); ``stop_reason`` is the last reply's, ``error``
    its error message when the model call failed; ``timed_out`` is set when ``run(timeout=...)``
    aborted the run at its deadline.
    """

    messages: list[AgentMessage]
    outcome: RunOutcome
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason | None = None
    error: str | None = None
    rejection: str | None = None
    timed_out: bool = False

    @property
    def text(self) -> str:
        """The text of the last assistant message of the run."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.text
        return ""

    @classmethod
    def of(cls, end: AgentEnd) -> AgentResult:
        """The result a run's ``AgentEnd`` describes."""
        last = next((m for m in reversed(end.messages) if isinstance(m, AssistantMessage)), None)
        stop = last.stop_reason if last is not None else None
        error = last.error_message if last is not None and stop == StopReason.ERROR else None
        return cls(list(end.messages), end.outcome, end.usage, stop, error, end.rejection)
