"""SPEC §13.3 — parallel evaluation: one request, several configurations, the best answer kept (seed 000 REQ-196..209).

:func:`~phi.evaluation.parallel.agent_loop_parallel` runs every
:class:`~phi.loop.config.AgentLoopConfig` of ``configs`` as a *branch*: its own thread, its own copy
of the conversation (the message list is copied, tools are shared) and its own loop id, all in the
base context's session. The events of every branch reach the one ``sink``, one at a time and on the
calling thread, each attributed by its ``loop_id`` (SPEC EVT-2):

    ParallelLoopStart(session_id, loop_ids)   before any branch starts
    ... the branches' runs, interleaved; each one a complete run (AgentStart .. AgentEnd) ...
    ... the strategy's own events (the LLM judge's run) ...
    ParallelLoopEnd(session_id, selected_loop_id, selected_config_index, evaluation_usage)

An :class:`EvaluationStrategy` then picks the winner. Five are built in: :class:`TransparentEvaluation`,
:class:`PickFirstEvaluation`, :class:`TokenEfficientEvaluation`, :class:`ElaborateEvaluation` and
:class:`~phi.evaluation.judge.LlmJudgeEvaluation`. A branch that fails — its model call errors, its code raises,
it is aborted — keeps its outcome and never loses the others'; the built-in strategies select a
failed branch only when every branch failed.

With no prompts every branch continues from the base context (``agent_loop_continue``, REQ-205).

At most ``max_workers`` branches run at once (default 16). With an ``executor`` they run in other
processes or on other machines — a ``ProcessPoolExecutor``, Dask's ``client.get_executor()``, Ray's
— each branch pickled, its events streamed back live to the calling thread, and cancellation
carried to it (:mod:`phi.evaluation.remote`, :mod:`phi.evaluation.relay`; SPEC EVAL-7, EVAL-8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import (
        candidate_indices, EvaluationDecision, EvaluationError, EvaluationStrategy, final_text,
        ParallelLoopOutcome, ParallelLoopResult, RemoteBranchError, WorkerLost,
    )
    from .strategies import (
        ElaborateEvaluation, PickFirstEvaluation, TokenEfficientEvaluation, TransparentEvaluation,
    )
    from .judge import LlmJudgeEvaluation
    from .parallel import agent_loop_parallel, branch_configs, merge_selected
    from .remote import RemoteBranches

__all__ = [
    "ElaborateEvaluation", "EvaluationDecision", "EvaluationError", "EvaluationStrategy",
    "LlmJudgeEvaluation", "ParallelLoopOutcome", "ParallelLoopResult", "PickFirstEvaluation",
    "RemoteBranchError", "RemoteBranches", "TokenEfficientEvaluation", "TransparentEvaluation", "WorkerLost",
    "agent_loop_parallel", "branch_configs", "candidate_indices", "final_text", "merge_selected",
]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from ..lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
