"""The built-in evaluation strategies (SPEC EVAL-5; seed 000 REQ-199..201): which branch of a parallel
run is kept. :class:`~phi.evaluation.judge.LlmJudgeEvaluation` (a model decides) is in its own module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, Sequence

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..types import AgentMessage, Usage
from .model import EvaluationDecision, ParallelLoopOutcome, Sink, candidate_indices

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
        first = candidate_indices(outcomes)[0]
        reason = "first successful branch" if outcomes[first].succeeded else "no branch succeeded: the first branch"
        return EvaluationDecision.select(first, reason), Usage()


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


class _Pick(Protocol):
    """``min`` or ``max`` as :func:`_by_tokens` calls them (typed, so the key's index is an int)."""

    def __call__(self, indices: Iterable[int], /, *, key: Callable[[int], int]) -> int: ...


def _by_tokens(outcomes: Sequence[ParallelLoopOutcome], pick: _Pick, label: str) -> EvaluationDecision:
    """The candidate ``pick`` (min or max) chooses by ``Usage.tokens()``; both return the first of equals."""
    best = pick(candidate_indices(outcomes), key=lambda i: outcomes[i].usage.tokens())
    return EvaluationDecision.select(best, f"{label} ({outcomes[best].usage.tokens()})")
