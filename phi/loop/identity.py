"""Who a run is (SPEC LOOP-13): agent and session ids, and loop ids ``{session_id}.{config_id}.{N}``.

``config_id`` is the configured one, else ``{provider}.{model_slug}`` (plus ``.thinking`` when a
thinking level is set); N counts from 1 per session and config. An :class:`~phi.agent.Agent` counts
its own loops; a bare ``agent_loop`` call given no loop id takes the next N from a process-wide table.

Which model a run calls is told, just before its ``AgentStart``, to the observers registered with
:func:`observe_run_models` (tracing, SPEC §17 OTEL-2: a sampler must see the provider and model when
the run's span starts, and the events name them only with the first reply). A run that raises
instead of ending with ``AgentEnd`` (SPEC LOOP-5's exceptions) is told to the observers registered
with :func:`observe_raised_runs`, as the exception leaves it: a tracer ends that run's spans then.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections import OrderedDict
from typing import Callable, Generator, NamedTuple

from ..concurrency.callbacks import CallbackList
from ..ids import random_uuid
from ..log import get_logger
from ..types import ThinkingLevel
from .config import AgentContext, AgentLoopConfig

log = get_logger(__name__)

_counter_lock = threading.Lock()
_LOOP_COUNTERS_MAX = 4096
_loop_counters: OrderedDict[str, int] = OrderedDict()  # "{session}.{config}" -> last N, least recent first


def config_segment(config: AgentLoopConfig) -> str:
    """``config.config_id`` if set, else ``{provider}.{model_slug}`` (+ ``.thinking`` when thinking)."""
    if config.config_id:
        return config.config_id
    provider = config.provider.provider_id if config.provider is not None else config.model_config.provider
    segment = f"{provider}.{re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id)}"
    if config.thinking_level != ThinkingLevel.OFF:
        segment += ".thinking"
    return segment


def next_loop_number(session_id: str, segment: str) -> int:
    """N of ``{session_id}.{config_id}.{N}``: 1, 2, ... per session and config, process-wide.

    Only runs given no loop id use this (an Agent counts its own). The table keeps the most recently
    used 4096 session/config pairs, so short-lived sessions do not make it grow without bound.
    """
    key = f"{session_id}.{segment}"
    with _counter_lock:
        number = _loop_counters.pop(key, 0) + 1
        _loop_counters[key] = number
        if len(_loop_counters) > _LOOP_COUNTERS_MAX:
            _loop_counters.popitem(last=False)
        return number


def reset_loop_numbers() -> None:
    """Forget the process-wide table of :func:`next_loop_number`, so the next run of every session
    counts from 1 again — for a harness that runs independent scenarios in one process (the
    conformance suite's persistent driver, SPEC §10)."""
    with _counter_lock:
        _loop_counters.clear()


class Identity(NamedTuple):
    agent_id: str
    session_id: str
    loop_id: str
    loop_index: int  # N - 1: what ``before_loop`` is given (LOOP-1)


_sources = threading.local()


@contextlib.contextmanager
def loop_ids_from(session_id: str, take: Callable[[str], str]) -> Generator[None, None, None]:
    """While the block runs, a run on this thread given no loop id in session ``session_id`` takes
    ``take(config_segment)`` — an Agent's own counters — instead of the process-wide table (an LLM
    judge on the agent's model must not take the agent's loop ids, SPEC LOOP-13, SESS-6)."""
    outer = getattr(_sources, "source", None)
    _sources.source = (session_id, take)
    try:
        yield
    finally:
        _sources.source = outer


def ensure_identity(context: AgentContext, config: AgentLoopConfig) -> Identity:
    """Fill in missing ids (written back to ``context``) and return the run's identity."""
    agent_id = context.agent_id = context.agent_id or random_uuid()
    session_id = context.session_id = context.session_id or random_uuid()
    if context.loop_id is None:
        segment = config_segment(config)
        source: tuple[str, Callable[[str], str]] | None = getattr(_sources, "source", None)  # set by loop_ids_from
        if source is not None and source[0] == session_id:
            context.loop_id = source[1](segment)
        else:
            context.loop_id = f"{session_id}.{segment}.{next_loop_number(session_id, segment)}"
    tail = context.loop_id.rsplit(".", 1)[-1]
    return Identity(agent_id, session_id, context.loop_id, int(tail) - 1 if tail.isdigit() else 0)


class RunModel(NamedTuple):
    """What a run is about to call: the provider name its replies will carry, as best known before
    the first (``AssistantMessage.provider``), and the configured model id."""

    loop_id: str
    provider: str
    model: str


_model_observers: CallbackList[Callable[[RunModel], None]] = CallbackList()


def observe_run_models(observer: Callable[[RunModel], None]) -> Callable[[], None]:
    """Tell ``observer`` the :class:`RunModel` of every run in this process, on the run's thread just
    before its ``AgentStart``; returns the function that stops it. An observer that raises is logged
    and ignored."""
    return _model_observers.add(observer)


def tell_run_model(loop_id: str, config: AgentLoopConfig) -> None:
    """Called by the loop; with no observer it costs one tuple read."""
    if not _model_observers:
        return
    notice = RunModel(loop_id, reply_provider(config), config.model_config.id)
    for observer in _model_observers:
        try:
            observer(notice)
        except Exception:
            log.exception("run-model observer %r raised", observer)


def reply_provider(config: AgentLoopConfig) -> str:
    """The provider name the run's replies will carry: an HTTP provider (one with a ``protocol``)
    names ``ModelConfig.provider`` first, as the providers registered for a model's API do; another
    provider object names itself (``provider_id``)."""
    provider, named = config.provider, config.model_config.provider
    if provider is None:
        return named
    protocol = getattr(provider, "protocol", None)
    if protocol is not None:
        return named or str(getattr(protocol, "service", "") or provider.provider_id)
    return provider.provider_id


_raise_observers: CallbackList[Callable[[str, BaseException], None]] = CallbackList()


def observe_raised_runs(observer: Callable[[str, BaseException], None]) -> Callable[[], None]:
    """Tell ``observer(loop_id, exception)`` of every run in this process that raised once it had its
    loop id (after ``AgentStart``, no ``AgentEnd`` comes, SPEC LOOP-5; a raising ``before_loop`` is
    told too, and a tracer that never saw the run start ignores it), on the run's thread as the
    exception leaves the run; returns the function that stops it. An observer that raises an ``Exception`` is logged
    and ignored: the run's own exception is the one its caller sees."""
    return _raise_observers.add(observer)


def tell_run_raised(loop_id: str, error: BaseException) -> None:
    """Called by the loop as an exception ends a started run; with no observer it costs one tuple read."""
    if not _raise_observers:
        return
    for observer in _raise_observers:
        try:
            observer(loop_id, error)
        except Exception:
            log.exception("raised-run observer %r raised", observer)
