"""Running the branches of a parallel evaluation (seed 000 REQ-203, REQ-205, REQ-206).

:func:`agent_loop_parallel` gives every config its own thread, its own copy of the conversation and
its own loop id. The branch threads never call the sink: they put their events on a queue that the
calling thread drains, so the sink sees one event at a time, on one thread, with no lock of phi's
held (the loop's own rule for user code, SPEC LOOP-19). The data model and the strategies are in
:mod:`phi.evaluation`; :func:`branch_configs` and :func:`merge_selected` are the pieces an Agent
method needs.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..events import AgentEnd, AgentEvent, ParallelLoopEnd, ParallelLoopStart
from ..ids import random_uuid
from ..log import get_logger
from ..loop.config import AgentContext, AgentLoopConfig
from ..loop.identity import config_segment, next_loop_number
from ..loop.run import agent_loop, agent_loop_continue, check_can_continue
from ..types import AgentMessage, AssistantMessage, StopReason, Usage
from .model import (
    EvaluationDecision,
    EvaluationError,
    EvaluationStrategy,
    ParallelLoopOutcome,
    ParallelLoopResult,
    Sink,
)

log = get_logger(__name__)

_branch = threading.local()  # .owner: on a branch thread, the thread that runs the parallel run


def branch_owner() -> threading.Thread | None:
    """On a branch thread of a parallel run, the thread that called :func:`agent_loop_parallel` (so code
    called back from a branch knows which run it belongs to); None elsewhere."""
    owner: threading.Thread | None = getattr(_branch, "owner", None)
    return owner

__all__ = ["agent_loop_parallel", "branch_configs", "merge_selected"]


# --------------------------------------------------------------------------- running the branches


# What a branch thread posts to the caller: (branch index, event), and (index, None) as its last item.
Posted = tuple[int, Union[AgentEvent, None]]


@dataclass
class _Branch:
    """One branch while it runs. Written by its own thread; read by the caller once the thread posted its last item."""

    index: int
    config: AgentLoopConfig
    context: AgentContext
    cancel: CancellationToken
    turn_usage: Usage = field(default_factory=Usage)
    end: AgentEnd | None = None
    announced: list[AgentMessage] = field(default_factory=list)
    returned: list[AgentMessage] | None = None
    exception: BaseException | None = None

    def observe(self, event: AgentEvent) -> None:
        if event.type == "TurnEnd":
            self.turn_usage = self.turn_usage.combine(event.usage)
        elif event.type == "MessageEnd":
            self.announced.append(event.message)
        elif event.type == "AgentEnd":
            self.end = event

    def run(self, prompts: list[AgentMessage], post: Callable[[Posted], None], owner: threading.Thread) -> None:
        """The thread's body: the loop, with every event posted to the caller; never raises."""
        _branch.owner = owner

        def sink(event: AgentEvent) -> None:
            self.observe(event)
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
            post((self.index, None))

    def outcome(self, base: list[AgentMessage]) -> ParallelLoopOutcome:
        end, context = self.end, self.context
        if self.returned is not None:
            new = list(self.returned)
        elif end is not None:
            new = list(end.messages)
        elif len(context.messages) >= len(base) and all(a is b for a, b in zip(context.messages, base)):
            new = context.messages[len(base):]  # raised mid-run: what the history gained
        else:
            new = list(self.announced)  # raised after compacting its history: what it announced
        last = next((m for m in reversed(new) if isinstance(m, AssistantMessage)), None)
        error = f"{type(self.exception).__name__}: {self.exception}" if self.exception is not None else None
        if error is None and last is not None and last.stop_reason == StopReason.ERROR:
            error = last.error_message or "the model call failed"
        return ParallelLoopOutcome(
            self.index, context.loop_id or "", context, new, end.usage if end is not None else self.turn_usage,
            len(base), end.outcome if end is not None else None, last.stop_reason if last is not None else None,
            error, self.exception, base)


def agent_loop_parallel(prompts: Sequence[AgentMessage], base_context: AgentContext,
                        configs: Sequence[AgentLoopConfig], strategy: EvaluationStrategy, sink: Sink | None,
                        cancel: CancellationToken | None = None, *, loop_ids: Sequence[str] | None = None,
                        branch_cancels: Sequence[CancellationToken] | None = None,
                        on_decided: Callable[[ParallelLoopResult], None] | None = None) -> ParallelLoopResult:
    """Run ``prompts`` under every config at once and let ``strategy`` pick the best (seed REQ-203).

    Blocks until every branch has ended and the strategy has decided; returns a
    :class:`ParallelLoopResult` with every branch's :class:`ParallelLoopOutcome`. No branch thread is
    left running when it returns or raises.

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

    Raises :class:`~phi.errors.ConfigError` for no configs, mismatched ``loop_ids`` /
    ``branch_cancels``, or a count the strategy refuses; :class:`EvaluationError` (with every
    outcome) if the strategy raises or selects no branch.
    """
    emit: Sink = _drop if sink is None else getattr(sink, "send", sink)
    cancel = cancel or CancellationToken()
    prompts = list(prompts)
    _check_arguments(configs, strategy, loop_ids, branch_cancels)
    if not prompts:
        check_can_continue(base_context)
    else:
        base_context.agent_id = base_context.agent_id or random_uuid()
        base_context.session_id = base_context.session_id or random_uuid()
    base = list(base_context.messages)
    branches = _make_branches(prompts, base_context, configs, loop_ids, cancel)
    session_id = base_context.session_id or ""
    links = [token.on_cancel(branch.cancel.cancel) for token, branch in zip(branch_cancels or (), branches)]
    try:
        emit(ParallelLoopStart(session_id, [b.context.loop_id or "" for b in branches]))
        _run_branches(branches, prompts, emit)
    finally:
        for unlink in links:
            unlink()
        for branch in branches:
            branch.cancel.release()
    outcomes = [branch.outcome(base) for branch in branches]
    decision, usage = _decide(strategy, prompts, outcomes, emit, cancel)
    selected = outcomes[decision.index]
    result = ParallelLoopResult(decision.index, selected.loop_id, outcomes, usage, decision.reason)
    if on_decided is not None:
        on_decided(result)
    emit(ParallelLoopEnd(session_id, selected.loop_id, decision.index, usage))
    return result


def _drop(event: AgentEvent) -> None:
    """The sink when the caller gave none."""


def _check_arguments(configs: Sequence[AgentLoopConfig], strategy: object, loop_ids: Sequence[str] | None,
                     branch_cancels: Sequence[CancellationToken] | None) -> None:
    if not configs:
        raise ConfigError("agent_loop_parallel needs at least one AgentLoopConfig")
    for i, config in enumerate(configs):
        if not isinstance(config, AgentLoopConfig):
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


def _make_branches(prompts: list[AgentMessage], base: AgentContext, configs: Sequence[AgentLoopConfig],
                   loop_ids: Sequence[str] | None, cancel: CancellationToken) -> list[_Branch]:
    """A context per config: the same identity and tools, a copy of the message list, its own loop id."""
    session = base.session_id or ""
    parent = base.parent_loop_id if prompts else (base.parent_loop_id or base.loop_id)
    branches = []
    for i, config in enumerate(configs):
        if loop_ids is not None:
            loop_id = loop_ids[i]
        else:
            segment = config_segment(config)
            loop_id = f"{session}.{segment}.{next_loop_number(session, segment)}"
        context = AgentContext(base.system_prompt, list(base.messages), base.tools, base.agent_id, base.session_id,
                               loop_id, parent, base.continuation_kind)
        branches.append(_Branch(i, config, context, cancel.child_token()))
    return branches


def _run_branches(branches: list[_Branch], prompts: list[AgentMessage], emit: Sink) -> None:
    """Start a thread per branch and hand their events to ``emit`` on this thread until all ended.

    The queue serialises the sink without a lock: a branch only ever puts, so a slow or re-entrant
    sink cannot stall a branch or deadlock with it.
    """
    events: queue.SimpleQueue[Posted] = queue.SimpleQueue()
    threads = [threading.Thread(target=branch.run, args=(prompts, events.put, threading.current_thread()), daemon=True,
                                name=f"phi-branch-{branch.context.loop_id}") for branch in branches]
    running = 0
    failure: BaseException | None = None
    try:
        for thread in threads:
            thread.start()
            running += 1
        while running:
            event = events.get()[1]
            if event is None:  # a branch ended
                running -= 1
            elif failure is None:
                try:
                    emit(event)
                except BaseException as exc:  # the sink failed: stop everything, keep draining
                    failure = exc
                    for branch in branches:
                        branch.cancel.cancel()
    except BaseException:  # e.g. KeyboardInterrupt while waiting: abort the branches, then wait for them
        for branch in branches:
            branch.cancel.cancel()
        while running:
            if events.get()[1] is None:
                running -= 1
        raise
    finally:
        for thread in threads:
            if thread.ident is not None:
                thread.join()
    if failure is not None:
        raise failure


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
    if not isinstance(decision, EvaluationDecision) or not 0 <= decision.index < len(outcomes):
        raise EvaluationError(f"evaluation strategy {type(strategy).__name__} selected {decision!r}, "
                              f"not one of the {len(outcomes)} branches", outcomes)
    return decision, usage if isinstance(usage, Usage) else Usage()


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
    configs = []
    for i, variant in enumerate(variants):
        if isinstance(variant, AgentLoopConfig):
            configs.append(variant)
            continue
        if not isinstance(variant, Mapping):
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
