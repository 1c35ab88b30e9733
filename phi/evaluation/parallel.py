"""Running the branches of a parallel evaluation (SPEC §13.3, EVAL-1..8; seed 000 REQ-203, REQ-205, REQ-206).

:func:`agent_loop_parallel` gives every config its own branch: its own copy of the conversation and
its own loop id, run on a thread of this process — at most ``max_workers`` at once — or, with an
``executor``, in other processes (:mod:`phi.evaluation.remote`). The branches never call the sink:
their events reach a queue that the calling thread drains (:mod:`phi.evaluation.dispatch`), so the
sink sees one event at a time, on one thread, with no lock of phi's held (SPEC LOOP-19). The data
model and the strategies are in :mod:`phi.evaluation`; :func:`branch_configs` and
:func:`merge_selected` are the pieces an Agent method needs.
"""

from __future__ import annotations

import concurrent.futures
import threading
from dataclasses import fields, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..events import AgentEnd, AgentEvent, ParallelLoopEnd, ParallelLoopStart
from ..ids import random_uuid
from ..log import get_logger
from ..loop.config import AgentContext, AgentLoopConfig
from ..loop.identity import config_segment, next_loop_number
from ..loop.run import check_can_continue
from ..types import AgentMessage, RunOutcome, Usage
from .branch import Branch
from .dispatch import (
    DEFAULT_MAX_WORKERS,
    LocalRunner,
    RemoteRunner,
    Runner,
    run_branches,
)
from .model import (
    EvaluationDecision,
    EvaluationError,
    EvaluationStrategy,
    ParallelLoopOutcome,
    ParallelLoopResult,
    Sink,
)
from .remote import RemoteBranches, make_tasks

log = get_logger(__name__)

__all__ = ["agent_loop_parallel", "branch_configs", "merge_selected"]


# --------------------------------------------------------------------------- the run


def agent_loop_parallel(prompts: Sequence[AgentMessage], base_context: AgentContext,
                        configs: Sequence[AgentLoopConfig], strategy: EvaluationStrategy, sink: Sink | None,
                        cancel: CancellationToken | None = None, *, loop_ids: Sequence[str] | None = None,
                        branch_cancels: Sequence[CancellationToken] | None = None,
                        on_decided: Callable[[ParallelLoopResult], None] | None = None,
                        max_workers: int | None = None,
                        executor: concurrent.futures.Executor | RemoteBranches | None = None) -> ParallelLoopResult:
    """Run ``prompts`` under every config at once and let ``strategy`` pick the best (seed REQ-203).

    Blocks until every branch has ended and the strategy has decided; returns a
    :class:`ParallelLoopResult` with every branch's :class:`ParallelLoopOutcome`. No branch is left
    running when it returns or raises (SPEC EVAL-4).

    * ``prompts`` empty: every branch continues from ``base_context`` (``agent_loop_continue``), which
      must then satisfy its preconditions (else :class:`~phi.errors.InvalidContinue`, before anything
      is emitted). Otherwise each branch is an ``agent_loop`` run from the prompts; missing
      ``agent_id``/``session_id`` are generated and written back to ``base_context``.
    * ``base_context`` is never changed otherwise: each branch works on a copy of its message list.
      Its ``loop_id`` names no branch (there are several); in continue mode it is the branches'
      ``parent_loop_id`` unless ``base_context.parent_loop_id`` is set.
    * ``loop_ids``: one per config, e.g. from an Agent's counters; by default
      ``{session_id}.{config_segment}.{N}``.
    * ``cancel`` aborts every branch (and the judge); ``branch_cancels`` (one token per config)
      abort a single branch.
    * ``on_decided(result)`` is called once the strategy chose, right before ``ParallelLoopEnd`` is emitted
      (an Agent settles its history there, SPEC AGENT-8).
    * ``sink`` receives every event, one at a time, on the calling thread (never while phi holds a
      lock). If it raises, every branch is aborted and the exception is re-raised unchanged once
      they ended (SPEC LOOP-5); likewise during the strategy's own run.
    * ``max_workers``: at most this many branches run at once, the others wait their turn (default
      ``min(len(configs), 16)``, SPEC EVAL-7).
    * ``executor``: where the branches run. None: threads of this process; a ``ThreadPoolExecutor``:
      its threads; any other ``concurrent.futures.Executor`` (a ``ProcessPoolExecutor``, Dask's
      ``client.get_executor()``), or one wrapped in :class:`~phi.evaluation.remote.RemoteBranches`:
      other processes, each branch pickled, its events streamed back live (SPEC EVAL-8).

    Raises :class:`~phi.errors.ConfigError` for no configs, mismatched ``loop_ids`` /
    ``branch_cancels``, a count the strategy refuses, a bad ``max_workers`` or ``executor``, or a
    remote branch that does not pickle; :class:`EvaluationError` (with every outcome) if the
    strategy raises or selects no branch.
    """
    emit: Sink = _drop if sink is None else getattr(sink, "send", sink)
    cancel = cancel or CancellationToken()
    prompts = list(prompts)
    _check_arguments(configs, strategy, loop_ids, branch_cancels)
    workers = _check_workers(max_workers, len(configs))
    remote = _remote(executor)
    if not prompts:
        check_can_continue(base_context)
    else:
        base_context.agent_id = base_context.agent_id or random_uuid()
        base_context.session_id = base_context.session_id or random_uuid()
    base = list(base_context.messages)
    branches = _make_branches(prompts, base_context, configs, loop_ids, cancel)
    runner = _runner(remote, executor, branches, prompts, base, workers)
    session_id = base_context.session_id or ""
    links = [token.on_cancel(branch.cancel.cancel) for token, branch in zip(branch_cancels or (), branches)]
    try:
        emit(ParallelLoopStart(session_id, [b.context.loop_id or "" for b in branches]))
        run_branches(branches, runner, emit, workers)
    finally:
        runner.close()
        for unlink in links:
            unlink()
        for branch in branches:
            branch.cancel.release()
    outcomes = [branch.outcome(base, prompts) for branch in branches]
    decision, usage = _decide(strategy, prompts, outcomes, emit, cancel)
    selected = outcomes[decision.index]
    result = ParallelLoopResult(decision.index, selected.loop_id, outcomes, usage, decision.reason)
    if on_decided is not None:
        on_decided(result)
    emit(ParallelLoopEnd(session_id, selected.loop_id, decision.index, usage, unended=_unended(branches, outcomes)))
    return result


def _unended(branches: list[Branch], outcomes: list[ParallelLoopOutcome]) -> list[AgentEnd]:
    """How each branch ended that emitted no ``AgentEnd`` (it raised, its worker was lost, its executor
    failed it before it started), for ``ParallelLoopEnd.unended`` (SPEC SESS-3). A branch cancelled
    before it started is not among them: it ran nothing."""
    return [AgentEnd(outcome.loop_id, list(outcome.new_messages), outcome.usage,
                     outcome=outcome.outcome or RunOutcome.ERROR)
            for branch, outcome in zip(branches, outcomes)
            if branch.end is None and (branch.started or branch.exception is not None)]


def _drop(event: AgentEvent) -> None:
    """The sink when the caller gave none."""


def _check_arguments(configs: Sequence[AgentLoopConfig], strategy: object, loop_ids: Sequence[str] | None,
                     branch_cancels: Sequence[CancellationToken] | None) -> None:
    if not configs:
        raise ConfigError("agent_loop_parallel needs at least one AgentLoopConfig")
    for i, config in enumerate(configs):
        if not isinstance(config, AgentLoopConfig):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            raise ConfigError(f"configs[{i}] is a {type(config).__name__}, not an AgentLoopConfig")
    if not callable(getattr(strategy, "evaluate", None)):
        raise ConfigError(f"strategy {strategy!r} has no evaluate(prompts, outcomes, sink, cancel) method")
    if loop_ids is not None and (len(loop_ids) != len(configs) or len(set(loop_ids)) != len(loop_ids)):
        raise ConfigError(f"loop_ids must be {len(configs)} distinct ids, one per config; got {list(loop_ids)!r}")
    if branch_cancels is not None and len(branch_cancels) != len(configs):
        raise ConfigError(f"branch_cancels must have one token per config ({len(configs)}), got {len(branch_cancels)}")
    check = getattr(strategy, "check_branches", None)
    if check is not None:
        check(len(configs))


def _check_workers(max_workers: object, count: int) -> int:
    """How many branches may run at once (SPEC EVAL-7)."""
    if max_workers is None:
        return min(count, DEFAULT_MAX_WORKERS)
    if not isinstance(max_workers, int) or isinstance(max_workers, bool) or max_workers < 1:
        raise ConfigError(f"max_workers must be a positive integer (branches running at once), got {max_workers!r}")
    return min(count, max_workers)


def _remote(executor: object) -> RemoteBranches | None:
    """The executor as remote branches, or None when the branches run in this process."""
    if executor is None or isinstance(executor, concurrent.futures.ThreadPoolExecutor):
        return None
    if isinstance(executor, RemoteBranches):
        return executor
    if isinstance(executor, concurrent.futures.Executor):
        return RemoteBranches(executor)
    raise ConfigError(f"executor must be a concurrent.futures.Executor (or RemoteBranches), got {executor!r}")


def _runner(remote: RemoteBranches | None, executor: object, branches: list[Branch], prompts: list[AgentMessage],
            base: list[AgentMessage], workers: int) -> Runner:
    if remote is None:
        pool = executor if isinstance(executor, concurrent.futures.ThreadPoolExecutor) else None
        return LocalRunner(prompts, pool)
    payloads = make_tasks([b.config for b in branches], [b.context for b in branches], prompts)
    return RemoteRunner(remote, payloads, base, prompts)


def _make_branches(prompts: list[AgentMessage], base: AgentContext, configs: Sequence[AgentLoopConfig],
                   loop_ids: Sequence[str] | None, cancel: CancellationToken) -> list[Branch]:
    """A context per config: the same identity and tools, a copy of the message list, its own loop id."""
    session = base.session_id or ""
    parent = base.parent_loop_id if prompts else (base.parent_loop_id or base.loop_id)
    branches: list[Branch] = []
    for i, config in enumerate(configs):
        if loop_ids is not None:
            loop_id = loop_ids[i]
        else:
            segment = config_segment(config)
            loop_id = f"{session}.{segment}.{next_loop_number(session, segment)}"
        context = AgentContext(base.system_prompt, list(base.messages), base.tools, base.agent_id, base.session_id,
                               loop_id, parent, base.continuation_kind)
        branches.append(Branch(i, config, context, cancel.child_token(), owner=threading.get_ident()))
    return branches


def _decide(strategy: EvaluationStrategy, prompts: list[AgentMessage], outcomes: list[ParallelLoopOutcome],
            emit: Sink, cancel: CancellationToken) -> tuple[EvaluationDecision, Usage]:
    sink_errors: list[BaseException] = []

    def sink(event: AgentEvent) -> None:
        try:
            emit(event)
        except BaseException as exc:
            sink_errors.append(exc)
            raise

    try:
        decision, usage = strategy.evaluate(prompts, outcomes, sink, cancel)
    except Exception as exc:
        if exc in sink_errors:  # the application's own sink failed (during the judge's run): unchanged
            raise
        raise EvaluationError(f"evaluation strategy {type(strategy).__name__} raised {type(exc).__name__}: {exc}",
                              outcomes) from exc
    # the strategy may be the application's, written without a type checker: what it returns is checked
    if (not isinstance(decision, EvaluationDecision)  # pyright: ignore[reportUnnecessaryIsInstance]  # app's strategy
            or not 0 <= decision.index < len(outcomes)):
        raise EvaluationError(f"evaluation strategy {type(strategy).__name__} selected {decision!r}, "
                              f"not one of the {len(outcomes)} branches", outcomes)
    if not isinstance(usage, Usage):  # pyright: ignore[reportUnnecessaryIsInstance]  # app's strategy
        usage = Usage()
    return decision, usage


# --------------------------------------------------------------------------- for an Agent


def branch_configs(base: AgentLoopConfig,
                   variants: Iterable[AgentLoopConfig | Mapping[str, Any]]) -> list[AgentLoopConfig]:
    """One config per variant: an :class:`AgentLoopConfig` as it is, or ``base`` with the mapping's
    settings replaced, e.g. ``[{"model_config": a}, {"model_config": b, "thinking_level": "high"}]``.

    ``base``'s steering and follow-up sources are dropped: a queued message must not be taken by
    one branch and missed by the others.
    """
    known = {f.name for f in fields(AgentLoopConfig)}
    quiet = {name: None for name in ("get_steering_messages", "get_follow_up_messages",
                                     "put_back_steering_messages", "put_back_follow_up_messages")}
    configs: list[AgentLoopConfig] = []
    for i, variant in enumerate(variants):
        if isinstance(variant, AgentLoopConfig):
            configs.append(variant)
            continue
        if not isinstance(variant, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            raise ConfigError(f"variants[{i}] must be an AgentLoopConfig or a mapping of settings, got {variant!r}")
        unknown = sorted(set(variant) - known)
        if unknown:
            raise ConfigError(f"variants[{i}] has unknown settings {unknown}; known: {sorted(known)}")
        configs.append(replace(base, **{**quiet, **variant}))
    return configs


def merge_selected(history: Sequence[AgentMessage], result: ParallelLoopResult) -> list[AgentMessage]:
    """``history`` followed by the winner's new messages: the conversation as if only the winner ran.

    ``history`` must be the conversation the parallel run started from (``original_context_len``
    messages long); anything else raises :class:`~phi.errors.ConfigError`.
    """
    expected = result.selected.original_context_len
    if len(history) != expected:
        raise ConfigError(f"merge_selected: the history has {len(history)} messages, but the parallel run started "
                          f"from {expected}; merge into the history the run started from")
    return [*history, *result.messages]
