"""Parallel evaluation: one request, several configurations, the best answer kept (seed 000 REQ-196..209).

:func:`~phi.parallel.agent_loop_parallel` (importable from here too) runs every
:class:`~phi.loop_config.AgentLoopConfig` of ``configs`` as a *branch*: its own thread, its own copy
of the conversation (the message list is copied, tools are shared) and its own loop id, all in the
base context's session. The events of every branch reach the one ``sink``, one at a time and on the
calling thread, each attributed by its ``loop_id`` (SPEC EVT-2):

    ParallelLoopStart(session_id, loop_ids)   before any branch starts
    ... the branches' runs, interleaved; each one a complete run (AgentStart .. AgentEnd) ...
    ... the strategy's own events (the LLM judge's run) ...
    ParallelLoopEnd(session_id, selected_loop_id, selected_config_index, evaluation_usage)

An :class:`EvaluationStrategy` then picks the winner. Five are built in: :class:`TransparentEvaluation`,
:class:`PickFirstEvaluation`, :class:`TokenEfficientEvaluation`, :class:`ElaborateEvaluation` and
:class:`~phi.judge.LlmJudgeEvaluation`. A branch that fails — its model call errors, its code raises,
it is aborted — keeps its outcome and never loses the others'; the built-in strategies select a
failed branch only when every branch failed.

With no prompts every branch continues from the base context (``agent_loop_continue``, REQ-205).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, runtime_checkable

from .cancel import CancellationToken
from .errors import ConfigError, PhiError
from .loop_config import AgentContext
from .types import AgentMessage, AssistantMessage, RunOutcome, StopReason, TextContent, Usage

if TYPE_CHECKING:
    from .judge import LlmJudgeEvaluation
    from .parallel import agent_loop_parallel, branch_configs, merge_selected

Sink = Callable[[Any], None]

__all__ = [
    "EvaluationDecision",
    "EvaluationError",
    "EvaluationStrategy",
    "ElaborateEvaluation",
    "LlmJudgeEvaluation",
    "ParallelLoopOutcome",
    "ParallelLoopResult",
    "PickFirstEvaluation",
    "TokenEfficientEvaluation",
    "TransparentEvaluation",
    "agent_loop_parallel",
    "branch_configs",
    "candidate_indices",
    "final_text",
    "merge_selected",
]


# --------------------------------------------------------------------------- data model (seed 001 §4)


@dataclass
class ParallelLoopOutcome:
    """What one branch did.

    ``outcome`` is the branch's ``AgentEnd.outcome`` (None if the branch raised before its
    ``AgentEnd``); ``error`` says why a branch failed (the exception, or the final reply's
    ``error_message``); ``exception`` is what the branch raised, if it did. ``context`` is the
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
    base_messages: list[AgentMessage] = field(default_factory=list, repr=False)

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


# --------------------------------------------------------------------------- built-in strategies


@dataclass(frozen=True)
class TransparentEvaluation:
    """Exactly one branch, passed through: ``agent_loop`` with the parallel events around it."""

    def check_branches(self, count: int) -> None:
        if count != 1:
            raise ConfigError(f"TransparentEvaluation takes exactly one config, got {count}; "
                              "use PickFirstEvaluation, TokenEfficientEvaluation, ElaborateEvaluation or "
                              "LlmJudgeEvaluation to choose among several")

    def evaluate(self, prompts: list[AgentMessage], outcomes: list[ParallelLoopOutcome], sink: Sink,
                 cancel: CancellationToken) -> tuple[EvaluationDecision, Usage]:
        self.check_branches(len(outcomes))
        return EvaluationDecision.select(0, "the only branch"), Usage()


@dataclass(frozen=True)
class PickFirstEvaluation:
    """The first branch, in config order, that succeeded (the first branch if none did)."""

    def evaluate(self, prompts: list[AgentMessage], outcomes: list[ParallelLoopOutcome], sink: Sink,
                 cancel: CancellationToken) -> tuple[EvaluationDecision, Usage]:
        return EvaluationDecision.select(candidate_indices(outcomes)[0], "first successful branch"), Usage()


@dataclass(frozen=True)
class TokenEfficientEvaluation:
    """The successful branch that used the fewest tokens (``Usage.tokens()``); ties go to the earlier."""

    def evaluate(self, prompts: list[AgentMessage], outcomes: list[ParallelLoopOutcome], sink: Sink,
                 cancel: CancellationToken) -> tuple[EvaluationDecision, Usage]:
        return _by_tokens(outcomes, min, "fewest tokens"), Usage()


@dataclass(frozen=True)
class ElaborateEvaluation:
    """The successful branch that used the most tokens (``Usage.tokens()``); ties go to the earlier."""

    def evaluate(self, prompts: list[AgentMessage], outcomes: list[ParallelLoopOutcome], sink: Sink,
                 cancel: CancellationToken) -> tuple[EvaluationDecision, Usage]:
        return _by_tokens(outcomes, max, "most tokens"), Usage()


def _by_tokens(outcomes: Sequence[ParallelLoopOutcome], pick: Callable[..., int], label: str) -> EvaluationDecision:
    """The candidate ``pick`` (min or max) chooses by ``Usage.tokens()``; both return the first of equals."""
    best = pick(candidate_indices(outcomes), key=lambda i: outcomes[i].usage.tokens())
    return EvaluationDecision.select(best, f"{label} ({outcomes[best].usage.tokens()})")


# Defined in modules that import this one; importable from here as well.
_ELSEWHERE = {"LlmJudgeEvaluation": "phi.judge", "agent_loop_parallel": "phi.parallel",
              "branch_configs": "phi.parallel", "merge_selected": "phi.parallel"}


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'phi.evaluation' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
