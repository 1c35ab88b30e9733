"""What a parallel run produces and how a strategy answers (SPEC §13.3, EVAL-1..5; seed 001 §4).

:class:`ParallelLoopOutcome` (one branch), :class:`ParallelLoopResult` (all of them, and the winner),
:class:`EvaluationDecision`, the :class:`EvaluationStrategy` protocol, and the helpers strategies share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, runtime_checkable

from ..concurrency.cancel import CancellationToken
from ..errors import PhiError
from ..events import AgentEvent
from ..loop.config import AgentContext
from ..types import (
    AgentMessage,
    AssistantMessage,
    RunOutcome,
    StopReason,
    TextContent,
    Usage,
)

Sink = Callable[[AgentEvent], None]


# --------------------------------------------------------------------------- data model (seed 001 §4)


@dataclass
class ParallelLoopOutcome:
    """What one branch did.

    ``outcome`` is the branch's ``AgentEnd.outcome`` (None if the branch raised before its
    ``AgentEnd``; ``aborted`` for a remote branch cancelled before it started, which emitted
    nothing and whose ``new_messages`` are the prompts, SPEC EVAL-8; ``error`` for a remote branch
    whose worker was lost, :class:`WorkerLost`, and for a branch its executor failed before it
    started, whose ``new_messages`` are the prompts too); ``error`` says why a branch
    failed (the exception, the final reply's ``error_message``, or that it never started);
    ``exception`` is what the branch raised, if it did. ``context`` is the
    branch's conversation as the run left it, with its identity, ready for ``agent_loop_continue``.
    ``base_messages`` are the base context's messages at dispatch (``original_context_len`` of them,
    the same list for every outcome), never compacted.
    """

    config_index: int
    loop_id: str
    context: AgentContext
    new_messages: list[AgentMessage]
    usage: Usage
    original_context_len: int
    outcome: RunOutcome | None = None
    stop_reason: StopReason | None = None
    error: str | None = None
    exception: BaseException | None = None
    base_messages: list[AgentMessage] = field(default_factory=list[AgentMessage], repr=False)

    @property
    def succeeded(self) -> bool:
        """The branch ran to completion: no exception, no error, no abort, limit, veto or rejection."""
        return self.exception is None and self.outcome == RunOutcome.COMPLETED

    @property
    def text(self) -> str:
        """The branch's final answer: see :func:`final_text`."""
        return final_text(self.new_messages)


@dataclass(frozen=True)
class EvaluationDecision:
    """A strategy's choice: ``index`` of the winning outcome (0-based; seed ``Select(usize)``)."""

    index: int
    reason: str = ""

    @classmethod
    def select(cls, index: int, reason: str = "") -> EvaluationDecision:
        return cls(index, reason)


@dataclass
class ParallelLoopResult:
    """The outcome of :func:`agent_loop_parallel`: every branch, and which one was selected.

    ``messages`` are the winner's new messages, exactly as its run produced them (an LLM judge's
    compaction never touches them); ``selected_context`` is a new context to go on from the winner.
    """

    selected_config_index: int
    selected_loop_id: str
    outcomes: list[ParallelLoopOutcome]
    evaluation_usage: Usage = field(default_factory=Usage)
    reason: str = ""

    @property
    def selected(self) -> ParallelLoopOutcome:
        return self.outcomes[self.selected_config_index]

    @property
    def messages(self) -> list[AgentMessage]:
        return self.selected.new_messages

    @property
    def selected_context(self) -> AgentContext:
        """A new context holding the winner's conversation and identity, for the next run: its
        ``parent_loop_id`` is the winner's loop id and its ``loop_id`` is left for that run to make
        (a context that kept the winner's loop id would give the next run the same id)."""
        won = self.selected.context
        return AgentContext(won.system_prompt, list(won.messages), won.tools, won.agent_id, won.session_id,
                            None, self.selected_loop_id)

    @property
    def text(self) -> str:
        return self.selected.text

    @property
    def total_usage(self) -> Usage:
        """Every branch's usage plus the evaluation's."""
        total = self.evaluation_usage
        for outcome in self.outcomes:
            total = total.combine(outcome.usage)
        return total


class EvaluationError(PhiError):
    """The strategy raised or chose an index that is not a branch. ``outcomes`` keeps every branch's
    result, so nothing the branches did is lost."""

    def __init__(self, message: str, outcomes: list[ParallelLoopOutcome]) -> None:
        super().__init__(message)
        self.outcomes = outcomes


class RemoteBranchError(PhiError):
    """A branch in another process could not run or report (SPEC EVAL-7): its worker could not reach
    the caller's relay, or what it raised or returned does not pickle (then this says what it was)."""


class WorkerLost(RemoteBranchError):
    """The worker running a remote branch was lost before the branch ended (SPEC EVAL-4, EVAL-8): its
    process died (killed, out of memory, the machine gone), so its events stopped without the
    branch's end. ``cause`` (also ``__cause__``) is what the executor said, when it said something in
    time: ``BrokenProcessPool`` for a process pool, ``KilledWorker`` for Dask; ``restarted`` is true
    when the executor started the branch a second time (Dask does, when it takes a worker for lost),
    which phi refuses: a branch never runs twice. A branch whose worker did not answer an abort is
    lost too (``cause`` None)."""

    def __init__(self, message: str, cause: BaseException | None = None, restarted: bool = False) -> None:
        super().__init__(message)
        self.cause = cause
        self.restarted = restarted
        self.__cause__ = cause

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.cause, self.restarted))


@runtime_checkable
class EvaluationStrategy(Protocol):
    """Picks the winner among the branches (seed REQ-199).

    ``evaluate`` runs on the thread that called :func:`agent_loop_parallel`, after every branch has
    ended; it may emit events to ``sink`` (an LLM judge emits its own run) and must honour
    ``cancel``. It returns the decision and the tokens the evaluation itself used.

    A strategy may also define ``check_branches(count)``, called before any branch starts, to refuse
    a number of configs it cannot handle (raise :class:`~phi.errors.ConfigError`).
    """

    def evaluate(self, prompts: list[AgentMessage], outcomes: list[ParallelLoopOutcome], sink: Sink,
                 cancel: CancellationToken) -> tuple[EvaluationDecision, Usage]:
        ...


# --------------------------------------------------------------------------- helpers for strategies


def candidate_indices(outcomes: Sequence[ParallelLoopOutcome]) -> list[int]:
    """Indices of the outcomes a strategy may select: the successful ones — or all of them when none
    succeeded (a failed branch is selected only when every branch failed)."""
    good = [i for i, outcome in enumerate(outcomes) if outcome.succeeded]
    return good or list(range(len(outcomes)))


def final_text(messages: Sequence[AgentMessage]) -> str:
    """The text of the last assistant message that has text (tool calls, tool results, thinking and
    earlier turns left out): a branch's answer as a reader sees it."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
            if text:
                return text
    return ""
