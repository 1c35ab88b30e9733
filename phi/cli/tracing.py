"""``phi --otel``: every run of the command's agents as OpenTelemetry spans (SPEC §15, §17 OTEL-6).

:class:`TracedSessions` is the command's :class:`~phi.cli.sessions.CliSessions` that also attaches an
:class:`~phi.observability.OtelTracer` to each agent it records — the same agents, the same place.
The spans go over OTLP as the standard ``OTEL_EXPORTER_OTLP_*`` variables say
(:func:`phi.observability.export.start_otlp`); :meth:`TracedSessions.finish` flushes them before the
command exits. API keys are in the environment, which the tracer's scrubber reads: none is exported.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .sessions import CliSessions

if TYPE_CHECKING:
    from ..agent import Agent
    from ..coding.session import Session


class TracedSessions(CliSessions):
    """CliSessions whose agents are traced too (see the module docstring)."""

    def __init__(self, directory: str | Path) -> None:
        super().__init__(directory)
        try:
            from ..observability import OtelTracer
            from ..observability.export import start_otlp
        except ImportError:
            raise ConfigError("--otel needs OpenTelemetry: pip install 'phi-agent[otel-export]'") from None
        provider, self._shutdown = start_otlp()
        self.tracer = OtelTracer(provider, agent_name="phi")

    def attach(self, agent: Agent) -> None:
        super().attach(agent)
        self.tracer.attach(agent)

    def attach_session(self, session: Session) -> None:
        """Also trace the session's ``spawn_agent`` children (and theirs), under the run that spawned them."""
        super().attach_session(session)
        session.child_observers.append(self._trace_child)

    def _trace_child(self, child: Session) -> None:
        self.tracer.attach(child.agent, parent_loop_id=child.spawned_from)

    def finish(self) -> None:
        """End what is still open and send every span still queued."""
        self.tracer.close()
        self._shutdown()
