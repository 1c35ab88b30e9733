"""One branch of a parallel run and what it ended with (SPEC §13.3, EVAL-1, EVAL-4).

A :class:`Branch` is filled in on the calling thread from the events it posts (``observe``) and,
when it has ended, from how it ran: by its own thread (``run_local``, in this process), from the
:class:`BranchReport` a remote branch sends back (``apply_report``), or, when a remote branch's
worker was lost, from its events alone (``lose``). ``outcome`` turns that into a
:class:`~phi.evaluation.model.ParallelLoopOutcome`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Union

from ..concurrency.cancel import CancellationToken
from ..events import AgentEnd, AgentEvent
from ..log import get_logger
from ..loop.config import AgentContext, AgentLoopConfig
from ..loop.run import agent_loop, agent_loop_continue
from ..loop.tool_execution import unanswered_call_results
from ..types import AgentMessage, AssistantMessage, RunOutcome, StopReason, ToolResultMessage, Usage
from .model import ParallelLoopOutcome, WorkerLost

if TYPE_CHECKING:
    import concurrent.futures

log = get_logger(__name__)

_running = threading.local()  # .owner: on a thread running a branch here, the ident of the run's thread


def branch_owner() -> int | None:
    """On a thread running a branch of a parallel run, the ident of the thread that called
    ``agent_loop_parallel`` (so code called back from a branch knows whose run it is); None elsewhere."""
    owner: int | None = getattr(_running, "owner", None)
    return owner

__all__ = ["Branch", "BranchReport", "Ended", "Posted", "NOT_STARTED"]

NOT_STARTED = "cancelled before it started"
NEVER_RAN = "it never started, its executor failed it"


@dataclass(frozen=True)
class Ended:
    """The last item a branch posts. ``future``: the executor's (a remote branch's result is its
    report); ``never_started``: cancelled before it started; ``failure``: it could not be submitted;
    ``lost``: its worker was lost while it ran (its events stopped before its end)."""

    future: concurrent.futures.Future[Any] | None = None
    never_started: bool = False
    failure: BaseException | None = None
    lost: bool = False


# What a branch posts to the calling thread: (branch index, an event or its Ended).
Posted = tuple[int, Union[AgentEvent, Ended]]


@dataclass
class BranchReport:
    """What a remote branch sends back when its run is over (pickled): whether it started, what the
    loop returned or raised, and its history — ``messages`` after the base messages when
    ``kept_base`` (the history still starts with them), else the whole history (it compacted)."""

    started: bool
    returned: list[AgentMessage] | None = None
    exception: BaseException | None = None
    messages: list[AgentMessage] = field(default_factory=list[AgentMessage])
    kept_base: bool = True
    traceback: str = ""


@dataclass
class Branch:
    """One branch while it runs. ``observe`` runs on the calling thread; ``run_local`` on the
    branch's own thread, read by the caller once the branch posted its :class:`Ended`."""

    index: int
    config: AgentLoopConfig
    context: AgentContext
    cancel: CancellationToken
    turn_usage: Usage = field(default_factory=Usage)
    end: AgentEnd | None = None
    announced: list[AgentMessage] = field(default_factory=list[AgentMessage])
    returned: list[AgentMessage] | None = None
    exception: BaseException | None = None
    started: bool = True
    finished: bool = False
    lost: bool = False
    owner: int | None = None  # ident of the thread that runs the parallel run (see branch_owner)
    results: dict[str, ToolResultMessage] = field(default_factory=dict[str, ToolResultMessage])  # finished calls, by id

    def observe(self, event: AgentEvent) -> None:
        if event.type == "TurnEnd":
            self.turn_usage = self.turn_usage.combine(event.usage)
        elif event.type == "MessageEnd":
            self.announced.append(event.message)
        elif event.type == "ToolExecutionEnd":
            self.results[event.tool_call_id] = ToolResultMessage(
                event.tool_call_id, event.tool_name, list(event.result.content), event.is_error,
                details=event.result.details)
        elif event.type == "AgentEnd":
            self.end = event

    def run_local(self, prompts: list[AgentMessage], post: Callable[[Posted], None]) -> None:
        """The body in this process: the loop, every event posted; never raises."""
        thread = threading.current_thread()
        name, thread.name = thread.name, f"phi-branch-{self.context.loop_id}"
        _running.owner = self.owner

        def sink(event: AgentEvent) -> None:
            post((self.index, event))

        try:
            if prompts:
                self.returned = agent_loop(prompts, self.context, self.config, sink, self.cancel)
            else:
                self.returned = agent_loop_continue(self.context, self.config, sink, self.cancel)
        except BaseException as exc:  # kept in the branch's outcome; the other branches go on
            self.exception = exc
            log.warning("parallel branch %s raised %s: %s", self.context.loop_id, type(exc).__name__, exc)
        finally:
            thread.name = name
            _running.owner = None

    def apply_report(self, report: BranchReport, base: list[AgentMessage]) -> None:
        """Take what a remote branch reported; its history is rebuilt on this process's base messages."""
        self.started = report.started
        self.returned = report.returned
        self.exception = report.exception
        if report.started:
            self.context.messages = [*base, *report.messages] if report.kept_base else list(report.messages)
        if report.exception is not None:
            log.warning("remote parallel branch %s raised %s: %s\n%s", self.context.loop_id,
                        type(report.exception).__name__, report.exception, report.traceback)

    def lose(self, error: WorkerLost, base: list[AgentMessage], prompts: list[AgentMessage]) -> None:
        """Its worker was lost while it ran (SPEC EVAL-8): the branch failed with ``error``. Its history
        is what its events announced — starting with ``prompts`` when it was cut off before it announced
        them (in a ``before_loop`` or ``before_turn`` hook, an input filter), as an in-process branch
        that raised there keeps them (AGENT-8) — then every tool call left unanswered gets a result
        (its own if the call had finished, else ``Tool execution aborted.``, as LOOP-5 does) and a
        final error reply says what happened, so the history stays a valid conversation and the
        reason is recorded with the loop."""
        self.started, self.lost, self.exception = True, True, error
        new = list(self.announced) or list(prompts)
        new += unanswered_call_results(new, self.results)
        model = self.config.model_config
        new.append(AssistantMessage([], StopReason.ERROR, model.id, model.provider, error_message=str(error)))
        self.context.messages = [*base, *new]

    def finish_from_events(self, base: list[AgentMessage]) -> None:
        """Its ``AgentEnd`` came but its report did not (its worker was lost after the run ended): the
        branch ended as its events said — its messages, usage and outcome — as it was recorded."""
        assert self.end is not None
        self.started, self.returned = True, list(self.end.messages)
        self.context.messages = [*base, *self.end.messages]

    def outcome(self, base: list[AgentMessage], prompts: list[AgentMessage]) -> ParallelLoopOutcome:
        end, context = self.end, self.context
        if not self.started:  # it ran nothing; its history is the prompts, so they are never lost
            new = list(prompts)
            context.messages = [*base, *prompts]
        elif self.returned is not None:
            new = list(self.returned)
        elif end is not None:
            new = list(end.messages)
        elif len(context.messages) >= len(base) and all(a is b for a, b in zip(context.messages, base)):
            new = context.messages[len(base):]  # raised mid-run: what the history gained
        else:
            new = list(self.announced)  # raised after compacting its history: what it announced
        last = next((m for m in reversed(new) if isinstance(m, AssistantMessage)), None)
        error = f"{type(self.exception).__name__}: {self.exception}" if self.exception is not None else None
        if error is None and not self.started:
            error = NOT_STARTED
        elif not self.started:  # its executor failed it before it ran (e.g. a broken process pool)
            error = f"{NEVER_RAN}: {error}"
        elif error is None and last is not None and last.stop_reason == StopReason.ERROR:
            error = last.error_message or "the model call failed"
        outcome = end.outcome if end is not None else None
        if (self.lost and end is None) or (not self.started and self.exception is not None):
            outcome = RunOutcome.ERROR  # as recorded (ParallelLoopEnd.unended, SPEC SESS-3)
        if not self.started and self.exception is None:
            outcome = RunOutcome.ABORTED
        return ParallelLoopOutcome(
            self.index, context.loop_id or "", context, new, end.usage if end is not None else self.turn_usage,
            len(base), outcome, last.stop_reason if last is not None else None, error, self.exception, base)
