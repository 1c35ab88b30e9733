"""Branches in other processes or on other machines (SPEC §13.3, EVAL-7, EVAL-8).

A remote branch travels as bytes: phi pickles a :class:`BranchTask` (the branch's config, context
and prompts) with the standard :mod:`pickle` in the calling process — so anything that does not
pickle is a :class:`~phi.errors.ConfigError` naming it, before anything runs — and submits
:func:`run_branch_task` with those bytes to the executor. Functions and classes pickle by
reference: the worker must be able to import phi and the modules that define the tools, hooks and
script callables. Secrets in the config (API keys) travel with it.

On the worker, :func:`run_branch_task` connects to the caller's relay (:mod:`phi.evaluation.relay`),
runs the loop with the relay as its sink, and returns a pickled
:class:`~phi.evaluation.branch.BranchReport`.
"""

from __future__ import annotations

import concurrent.futures
import pickle
import traceback
from dataclasses import dataclass, fields
from typing import Any, Sequence

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..log import get_logger
from ..loop.config import AgentContext, AgentLoopConfig
from ..loop.run import agent_loop, agent_loop_continue
from ..types import AgentMessage
from .branch import BranchReport
from .model import RemoteBranchError
from .relay import open_link

log = get_logger(__name__)

__all__ = ["BranchTask", "RemoteBranches", "run_branch_task", "task_payload"]


@dataclass(frozen=True)
class RemoteBranches:
    """Run the branches with ``executor`` in other processes (SPEC EVAL-7), e.g. a
    ``ProcessPoolExecutor`` or Dask's ``client.get_executor()``.

    Any executor other than a ``ThreadPoolExecutor`` is taken as remote; wrap one in this class to
    choose where the caller's relay listens: ``relay_host`` is the address the workers connect to
    (the default suits workers on this machine; for a cluster on other machines give this
    machine's address on the cluster's network, or ``"0.0.0.0"`` plus ``advertise_host``),
    ``relay_port`` the port (0: any free one). A worker that cannot connect within
    ``connect_timeout`` seconds fails its branch with :class:`RemoteBranchError`.
    """

    executor: concurrent.futures.Executor
    relay_host: str = "127.0.0.1"
    relay_port: int = 0
    connect_timeout: float = 30.0
    advertise_host: str | None = None

    def __post_init__(self) -> None:
        # the fields are the caller's, who may pass anything: each is checked (hence the ignores)
        executor, host, port = self.executor, self.relay_host, self.relay_port
        if not isinstance(executor, concurrent.futures.Executor):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"RemoteBranches.executor must be a concurrent.futures.Executor, got {executor!r}")
        if not isinstance(host, str) or not host:  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            raise ConfigError(f"RemoteBranches.relay_host must be a host name or address, got {host!r}")
        if (not isinstance(port, int)  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
                or isinstance(port, bool) or not 0 <= port <= 65535):
            raise ConfigError(f"RemoteBranches.relay_port must be an integer from 0 to 65535, got {port!r}")
        advertise = self.advertise_host
        if advertise is not None and (
                not isinstance(advertise, str)  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
                or not advertise):
            raise ConfigError(f"RemoteBranches.advertise_host must be a host name or address, got {advertise!r}")
        timeout = self.connect_timeout
        if (not isinstance(timeout, (int, float))  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
                or isinstance(timeout, bool) or not timeout > 0):
            raise ConfigError(f"RemoteBranches.connect_timeout must be a positive number of seconds, got {timeout!r}")


@dataclass
class BranchTask:
    """One branch as it travels: its config, its context (with its loop id) and the prompts (none:
    it continues the context)."""

    config: AgentLoopConfig
    context: AgentContext
    prompts: list[AgentMessage]

    def run(self, address: tuple[str, int], key: bytes, index: int, timeout: float) -> BranchReport:
        """On the worker: connect, run the loop with the relay as its sink, report."""
        try:
            link = open_link(address, key, index, timeout)
        except OSError as exc:
            error = RemoteBranchError(f"branch {self.context.loop_id} could not reach the caller's relay at "
                                      f"{address[0]}:{address[1]}: {exc}; see RemoteBranches.relay_host")
            return BranchReport(started=False, exception=error)
        if link is None:
            return BranchReport(started=False)  # cancelled before it started
        cancel = CancellationToken()
        link.watch(cancel)
        base = list(self.context.messages)
        returned: list[AgentMessage] | None = None
        exception: BaseException | None = None
        try:
            if self.prompts:
                returned = agent_loop(self.prompts, self.context, self.config, link.send, cancel)
            else:
                returned = agent_loop_continue(self.context, self.config, link.send, cancel)
        except BaseException as exc:  # reported, like an in-process branch's
            exception = exc
        finally:
            link.close()
        return _report(self.context.messages, base, returned, exception)


def _report(messages: list[AgentMessage], base: list[AgentMessage], returned: list[AgentMessage] | None,
            exception: BaseException | None) -> BranchReport:
    kept = len(messages) >= len(base) and all(a is b for a, b in zip(messages, base))
    text = "".join(traceback.format_exception(exception)) if exception is not None else ""
    return BranchReport(True, returned, _portable(exception), messages[len(base):] if kept else list(messages),
                        kept, text)


def _portable(exception: BaseException | None) -> BaseException | None:
    """The exception if it survives a pickle round trip, else a RemoteBranchError saying what it was."""
    if exception is None:
        return None
    try:
        pickle.loads(pickle.dumps(exception))
        return exception
    except Exception:
        return RemoteBranchError(f"{type(exception).__name__}: {exception}")


def run_branch_task(payload: bytes, address: tuple[str, int], key: bytes, index: int, timeout: float) -> bytes:
    """What the executor runs: a branch from ``payload`` (a pickled :class:`BranchTask`), connected to
    the relay at ``address``; returns the pickled :class:`BranchReport`."""
    task = pickle.loads(payload)
    if not isinstance(task, BranchTask):
        raise RemoteBranchError(f"run_branch_task was given a {type(task).__name__}, not a BranchTask")
    report = task.run(address, key, index, timeout)
    try:
        return pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a message that does not pickle (a tool result's details): say so, keep the rest
        error = RemoteBranchError(f"branch {task.context.loop_id}: its result does not pickle ({exc})")
        return pickle.dumps(BranchReport(report.started, None, error, traceback=report.traceback))


# --------------------------------------------------------------------------- in the caller


def task_payload(task: BranchTask, index: int) -> bytes:
    """``task`` pickled; :class:`~phi.errors.ConfigError` naming what does not pickle."""
    try:
        return pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        culprit = _culprit(task, index)
        raise ConfigError(
            f"configs[{index}] cannot run in another process: {culprit} does not pickle "
            f"({type(exc).__name__}: {exc}). A remote branch is pickled with the standard pickle: its "
            "provider, hooks, tools and script callables must be module-level functions and classes "
            "(pickled by reference), not lambdas or local functions") from None


def _culprit(task: BranchTask, index: int) -> str:
    """Which part of ``task`` does not pickle, for the error message."""
    parts: list[tuple[str, Any]] = [(f"configs[{index}].{f.name}", getattr(task.config, f.name))
                                    for f in fields(task.config)]
    parts += [(f"the tool {getattr(tool, 'name', tool)!r}", tool) for tool in task.context.tools]
    parts += [("a message of the context", m) for m in task.context.messages]
    parts += [("a prompt", m) for m in task.prompts]
    for name, value in parts:
        try:
            pickle.dumps(value)
        except Exception:
            return f"{name} ({value!r:.80})"
    return "the branch"


def make_tasks(configs: Sequence[AgentLoopConfig], contexts: Sequence[AgentContext],
               prompts: list[AgentMessage]) -> list[bytes]:
    """Every branch's payload, checked before the run emits anything."""
    return [task_payload(BranchTask(config, context, prompts), i)
            for i, (config, context) in enumerate(zip(configs, contexts))]
