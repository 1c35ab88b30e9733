"""Recording an Agent's runs into sessions, and saving them (seed 000 REQ-214..217; SPEC §13.2, SESS-7).

``agent.with_session_recorder(recorder, store)`` subscribes ``recorder.on_event`` to the agent and
hands it the events of every sub-agent the agent's runs start (a :class:`~phi.subagent.SubAgentTool`
reports its child's events to its ``on_event``, chained here with the recorder's), so the recorded
tree holds the children's sessions too. With a ``store``, the sessions a run settled are saved when
the run ends; a store that fails is logged, never the end of the run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..log import get_logger

if TYPE_CHECKING:
    from ..session import SessionRecorder, SessionStore

A = TypeVar("A", bound="AgentRecording")

log = get_logger(__name__)


class AgentRecording:
    """``with_session_recorder`` of :class:`~phi.agent.Agent`."""

    def _recording_init(self) -> None:
        self._recorder: SessionRecorder | None = None
        self._store: SessionStore | None = None

    def with_session_recorder(self: A, recorder: SessionRecorder | None = None,
                              store: SessionStore | None = None) -> A:
        """Record every run (and its sub-agents) into ``recorder`` (a new one when None; see
        :attr:`session_recorder`); with ``store``, save what each run settled when it ends."""
        from ..session import SessionRecorder

        self._recorder = recorder if recorder is not None else SessionRecorder()
        self._store = store
        self.subscribe(self._recorder.on_event)  # type: ignore[attr-defined]
        return self

    @property
    def session_recorder(self) -> SessionRecorder | None:
        return self._recorder

    def _recorded_tools(self, tools: list[Any]) -> list[Any]:
        """The run's tools, sub-agent tools reporting their children's events to the recorder too."""
        if self._recorder is None:
            return tools
        from ..subagent import SubAgentTool

        record = self._recorder.on_event
        return [replace(t, on_event=_both(t.on_event, record)) if isinstance(t, SubAgentTool) else t for t in tools]

    def _record_raised_run(self, loop_ids: list[str], messages: list[Any]) -> None:
        """A run that raised emits no ``AgentEnd`` (SPEC LOOP-5), so its loops would stay ``Running``
        and their sessions never settle: the recorder alone is told they ended in an error, with the
        messages the run kept (``messages``, for a single run). Subscribers see nothing extra."""
        if self._recorder is None:
            return
        from ..events import AgentEnd, RunOutcome
        from ..types import AssistantMessage, Usage

        usage = Usage()
        for message in messages:
            if isinstance(message, AssistantMessage):
                usage = usage + message.usage
        for loop_id in loop_ids:
            record = self._recorder.get_loop(loop_id)
            if record is not None and record.status.is_open:
                self._recorder.on_event(AgentEnd(loop_id, list(messages), usage, outcome=RunOutcome.ERROR))

    def _save_sessions(self) -> None:
        """After a run: save the sessions it settled (errors are logged: the run itself is over)."""
        if self._recorder is None or self._store is None:
            return
        for session in self._recorder.flush():
            try:
                self._store.save(session)
            except Exception:
                log.error("could not save session %s", session.session_id, exc_info=True)


def _both(first: Callable[[Any], None] | None, second: Callable[[Any], None]) -> Callable[[Any], None]:
    if first is None:
        return second

    def both(event: Any) -> None:
        first(event)
        second(event)

    return both
