"""Shared helpers for the parallel-evaluation tests: scripted branch configs and a guarded run.

``run_parallel`` runs :func:`phi.evaluation.agent_loop_parallel` on a worker thread joined with a
timeout (a hang fails the test instead of freezing the suite) and returns a :class:`Run` with the
events the sink received, the result (or the exception) and the thread each sink call came from.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from phi.concurrency.cancel import CancellationToken
from phi.evaluation import ParallelLoopResult, agent_loop_parallel
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.providers.mock import ScriptedProvider
from phi.providers.retry import RetryConfig
from phi.types import UserMessage

JOIN_TIMEOUT = 10.0


def reply(text: str, total: int = 0, **extra: Any) -> dict:
    """A scripted one-chunk text reply using ``total`` tokens."""
    return {"blocks": [{"type": "text", "chunks": [text]}], "usage": {"input": total, "total_tokens": total}, **extra}


def branch(script: Sequence[Any], config_id: str | None = None, **settings: Any) -> AgentLoopConfig:
    """A config with its own ScriptedProvider (reach it as ``config.provider``)."""
    settings.setdefault("retry_config", RetryConfig(max_retries=0))
    return AgentLoopConfig(provider=ScriptedProvider(list(script)), config_id=config_id, **settings)


def prompts(*texts: str) -> list[UserMessage]:
    return [UserMessage.from_text(t) for t in texts]


@dataclass
class Run:
    events: list[Any]
    result: ParallelLoopResult | None
    error: BaseException | None
    sink_threads: set[int] = field(default_factory=set)
    caller_thread: int = 0

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def of_loop(self, loop_id: str) -> list[Any]:
        return [e for e in self.events if getattr(e, "loop_id", None) == loop_id]


def run_parallel(prompt_messages: Sequence[Any], configs: Sequence[AgentLoopConfig], strategy: Any, *,
                 context: AgentContext | None = None, cancel: CancellationToken | None = None,
                 sink: Callable[[Any], None] | None = None, timeout: float = JOIN_TIMEOUT, **kwargs: Any) -> Run:
    context = context if context is not None else AgentContext()
    run = Run([], None, None)

    def record(event: Any) -> None:
        run.events.append(event)
        run.sink_threads.add(threading.get_ident())
        if sink is not None:
            sink(event)

    def target() -> None:
        run.caller_thread = threading.get_ident()
        try:
            run.result = agent_loop_parallel(list(prompt_messages), context, configs, strategy, record, cancel,
                                             **kwargs)
        except BaseException as exc:  # examined by the test
            run.error = exc

    thread = threading.Thread(target=target, name="test-parallel", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        if cancel is not None:
            cancel.cancel()
        raise AssertionError(f"agent_loop_parallel did not return within {timeout}s; events: {run.types}")
    return run


def branch_threads() -> list[threading.Thread]:
    """Live branch threads (named ``phi-branch-<loop id>``)."""
    return [t for t in threading.enumerate() if t.name.startswith("phi-branch-")]


def fresh_context(**fields: Any) -> AgentContext:
    """A context with agent id ``ag`` and a session id no other test uses (loop numbers count per
    session and config, process-wide, so a shared session id would make them depend on test order)."""
    from phi.ids import random_uuid

    fields.setdefault("agent_id", "ag")
    fields.setdefault("session_id", f"s-{random_uuid()[:8]}")
    return AgentContext(**fields)
