"""Sub-agents (SPEC §14 CODE-9; seed 004 §7): child sessions that work on a scoped task alongside their parent.

The four tools every profile offers (until the depth limit, ``SessionConfig.max_subagent_depth``;
they are built in :mod:`phi.coding.subagent_tools`):

* ``spawn_agent {task, working_dir?, model?, max_turns?}`` — starts a child :class:`Session` and
  returns at once with its ``agent_id``; the child works on its own thread.
* ``send_input {agent_id, message}`` — a running child gets the message as steering (between its
  tool rounds); a child that has finished starts working on it as a new input.
* ``wait {agent_id}`` — blocks until the child has finished its current work and returns
  ``{"output", "success", "turns_used"}`` (``success`` is false when it stopped at a limit, failed
  or was closed). An abort of the parent cancels the wait.
* ``close_agent {agent_id}`` — stops the child (its running commands are killed) and returns its
  final status.

A child shares the parent's execution environment — optionally scoped to a subdirectory
(:class:`~phi.coding.scoped_env.ScopedEnvironment`) — and profile (or the same service with another
``model``), and has its own history, its own turn limit (``max_turns``, default
``SessionConfig.subagent_max_turns`` = 50) and its own copy of the parent's settings. Closing or
aborting the parent closes its children (Appendix B).

This module holds the children and their threads; it knows a session only as a
:class:`SubAgentSession` (the part of :class:`~phi.coding.session.Session` it uses), and the parent
session makes each child itself (the :data:`ChildFactory` it passes in), so nothing here imports the
session module.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..concurrency.cancel import CancellationToken
from ..errors import ToolCancelled, ToolError
from ..ids import random_uuid
from ..log import get_logger
from .config import SessionBasics, SessionClosed, SessionState

if TYPE_CHECKING:
    from ..agent.agent import Agent
    from .session_stream import SubmitResult

log = get_logger(__name__)

SUBAGENT_TOOL_NAMES = ("spawn_agent", "send_input", "wait", "close_agent")


class SubAgentSession(SessionBasics, Protocol):
    """A parent or child session as the sub-agent machinery uses it (a
    :class:`~phi.coding.session.Session` is one; ``SubAgentHandle.session`` is the child)."""

    @property
    def state(self) -> SessionState:
        """Where it is in its life (a CLOSED child takes no more messages)."""
        ...

    @property
    def model_calls(self) -> int:
        """Model calls so far: a child's ``turns_used``."""
        ...

    @property
    def agent(self) -> Agent:
        """The core agent whose runs are its inputs (aborting it cancels the current one)."""
        ...

    def submit(self, text: str) -> SubmitResult:
        """Process ``text`` as an input, blocking until it is done."""
        ...

    def steer(self, text: str) -> None:
        """Give a running input ``text`` between its tool rounds."""
        ...

    def take_queued_input(self) -> list[str]:
        """Remove and return the texts of messages queued but not read yet."""
        ...

    def close(self, *, wait: bool = True) -> None:
        """End the session; without ``wait`` it returns once the run is cancelled."""
        ...

    def runs_on_thread(self, ident: int) -> bool:
        """Whether thread ``ident`` works for it or one of its sub-agents."""
        ...


#: Makes a child of the session that owns the manager: ``(working_dir, model, max_turns,
#: spawned_from)`` -> the child, not started yet (see ``spawn_agent`` for the first three;
#: ``spawned_from`` is the loop id of the ``spawn_agent`` call).
ChildFactory = Callable[[str | None, str | None, int | None, str | None], SubAgentSession]


@dataclass(frozen=True)
class SubAgentResult:
    """Seed 004 §7.3."""

    output: str
    success: bool
    turns_used: int

    def to_json(self) -> dict[str, Any]:
        return {"output": self.output, "success": self.success, "turns_used": self.turns_used}


class SubAgentHandle:
    """One child session and the thread it works on (seed 004 §7.3 ``SubAgentHandle``)."""

    def __init__(self, agent_id: str, session: SubAgentSession) -> None:
        self.id = agent_id
        self.session = session
        self.status = "running"  # running | completed | failed | closed
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._result = SubAgentResult("", False, 0)
        self._thread: threading.Thread | None = None

    def start(self, text: str) -> None:
        with self._lock:
            self._start_locked(text)

    def _start_locked(self, text: str) -> None:
        self.status = "running"
        self._thread = threading.Thread(target=self._work, args=(text,), name=f"phi-subagent-{self.id[:8]}",
                                        daemon=True)
        self._thread.start()

    def _work(self, text: str) -> None:
        while True:
            try:
                result = self.session.submit(text)
                outcome = SubAgentResult(result.text, result.outcome in ("completed", "awaiting_input"),
                                         self.session.model_calls)
            except SessionClosed:
                outcome = SubAgentResult(self._result.output, False, self.session.model_calls)
            except Exception as error:  # the child's failure is the parent's information, not its crash
                log.exception("sub-agent %s failed", self.id)
                outcome = SubAgentResult(f"sub-agent failed: {type(error).__name__}: {error}", False,
                                         self.session.model_calls)
            with self._lock:
                pending = [] if self.status == "closed" else self.session.take_queued_input()
                if not pending:  # messages sent while it was finishing are not left behind
                    self._result = outcome
                    if self.status != "closed":
                        self.status = "completed" if outcome.success else "failed"
                    self._idle.notify_all()
                    return
            text = "\n\n".join(pending)

    def send(self, message: str) -> str:
        with self._lock:
            if self.status == "closed" or self.session.state == SessionState.CLOSED:
                raise ToolError(f"sub-agent {self.id} is closed (its session has ended); spawn a new one")
            if self.status == "running":
                try:
                    self.session.steer(message)
                except SessionClosed:
                    raise ToolError(f"sub-agent {self.id} is shutting down; spawn a new one") from None
                return f"Message delivered to running sub-agent {self.id}."
            self._start_locked(message)
        return f"Sub-agent {self.id} had finished; it is now working on the message."

    def wait(self, cancel: CancellationToken | None = None) -> SubAgentResult:
        """Block until the child is not running; a cancelled ``cancel`` token raises ToolCancelled."""
        unregister = cancel.on_cancel(self._wake) if cancel is not None else None
        try:
            with self._lock:
                while self.status == "running":
                    if cancel is not None and cancel.is_cancelled():
                        raise ToolCancelled("Wait cancelled; the sub-agent keeps running.")
                    self._idle.wait()
                return self._result
        finally:
            if unregister is not None:
                unregister()

    def _wake(self) -> None:
        with self._lock:
            self._idle.notify_all()

    def close(self, wait: bool = True) -> SubAgentResult:
        """Stop the child (abort, kill its commands, end its session) and return its final result.
        Without ``wait`` the child's run is cancelled and finishes its shutdown when it ends."""
        with self._lock:
            self.status = "closed"
            self._idle.notify_all()
        self.session.close(wait=wait)
        thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        with self._lock:
            self._idle.notify_all()
            return SubAgentResult(self._result.output, False, self.session.model_calls)

    def abort(self) -> None:
        """Cancel the child's run without waiting (the first step of the parent's shutdown)."""
        self.session.agent.abort()


class SubAgentManager:
    """The children of one session; ``new_child`` makes them (see :data:`ChildFactory`)."""

    def __init__(self, session: SubAgentSession, new_child: ChildFactory) -> None:
        self.session = session
        self._new_child = new_child
        self._handles: dict[str, SubAgentHandle] = {}
        self._lock = threading.Lock()

    def spawn(self, task: str, working_dir: str | None = None, model: str | None = None,
              max_turns: int | None = None, parent_loop_id: str | None = None) -> SubAgentHandle:
        parent = self.session
        limit = parent.config.max_subagent_depth
        if parent.depth >= limit:
            raise ToolError(f"cannot spawn a sub-agent: this session is at depth {parent.depth} and "
                            f"max_subagent_depth is {limit}; do the work here instead")
        if not task.strip():
            raise ToolError("task must describe the work for the sub-agent")
        handle = SubAgentHandle(random_uuid(), self._new_child(working_dir, model, max_turns, parent_loop_id))
        with self._lock:
            self._handles[handle.id] = handle
        handle.start(task)
        return handle

    def get(self, agent_id: str) -> SubAgentHandle:
        with self._lock:
            handle = self._handles.get(agent_id)
            known = list(self._handles)
        if handle is None:
            raise ToolError(f"no sub-agent with id {agent_id!r}" + (f"; known: {', '.join(known)}" if known else
                                                                     "; spawn one with spawn_agent first"))
        return handle

    def handles(self) -> list[SubAgentHandle]:
        with self._lock:
            return list(self._handles.values())

    def abort_all(self) -> None:
        for handle in self.handles():
            handle.abort()

    def close_all(self) -> None:
        """Close every child, in parallel (each waits for its commands to be killed). A child whose run
        the calling thread belongs to (a callback of that child closing its parent) is only cancelled:
        it ends once the callback returns."""
        caller = threading.get_ident()
        open_handles = [h for h in self.handles() if h.status != "closed"]
        for handle in open_handles:
            if handle.session.runs_on_thread(caller):
                handle.close(wait=False)
        threads = [threading.Thread(target=h.close, daemon=True) for h in open_handles if h.status != "closed"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=15)


__all__ = ["SubAgentHandle", "SubAgentManager", "SubAgentResult", "SubAgentSession", "ChildFactory",
           "SUBAGENT_TOOL_NAMES"]
