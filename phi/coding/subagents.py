"""Sub-agents (SPEC §14 CODE-9; seed 004 §7): child sessions that work on a scoped task alongside their parent.

The four tools every profile offers (until the depth limit, ``SessionConfig.max_subagent_depth``):

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
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..concurrency.cancel import CancellationToken
from ..errors import ToolCancelled, ToolError
from ..ids import random_uuid
from ..log import get_logger
from ..tools.environment import ExecutionEnvironment
from .config import SessionState
from .registry import RegisteredTool, ToolCallContext
from .toolsets import PATH, STRING, described, tool

if TYPE_CHECKING:
    from .session import Session

log = get_logger(__name__)

SUBAGENT_TOOL_NAMES = ("spawn_agent", "send_input", "wait", "close_agent")


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

    def __init__(self, agent_id: str, session: Session) -> None:
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
        from .session import SessionClosed

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
        from .session import SessionClosed

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
        self.session._stop("closed", wait)
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
    """The children of one session."""

    def __init__(self, session: Session) -> None:
        self.session = session
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
        from .scoped_env import ScopedEnvironment
        from .session import Session

        env = parent.base_env if not working_dir else ScopedEnvironment(parent.base_env, working_dir)
        profile = parent.profile.with_model(model) if model and model != parent.profile.model else parent.profile
        config = replace(parent.config, max_turns=max_turns or parent.config.subagent_max_turns,
                         tool_output_limits=dict(parent.config.tool_output_limits),
                         tool_line_limits=dict(parent.config.tool_line_limits))
        child = Session(profile, env, config, depth=parent.depth + 1, parent=parent)
        child.spawned_from = parent_loop_id
        for observe in child.child_observers:
            try:
                observe(child)
            except Exception:  # an observer's failure does not stop the child
                log.exception("a child-session observer failed")
        handle = SubAgentHandle(random_uuid(), child)
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
            if handle.session._works_for_tree(caller):
                handle.close(wait=False)
        threads = [threading.Thread(target=h.close, daemon=True) for h in open_handles if h.status != "closed"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=15)


# --------------------------------------------------------------------------- the tools


def _children(call: ToolCallContext) -> SubAgentManager:
    if call.session is None:
        raise ToolError("the sub-agent tools only work inside a phi.coding Session")
    return call.session.subagents


def _spawn(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    handle = _children(call).spawn(args["task"], args.get("working_dir"), args.get("model"), args.get("max_turns"),
                                   call.tool.loop_id)
    return json.dumps({"agent_id": handle.id, "status": handle.status,
                       "working_dir": handle.session.execution_env.working_directory()})


def _send(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    return _children(call).get(args["agent_id"]).send(args["message"])


def _wait(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    return json.dumps(_children(call).get(args["agent_id"]).wait(call.cancel).to_json())


def _close(args: dict[str, Any], env: ExecutionEnvironment, call: ToolCallContext) -> str:
    handle = _children(call).get(args["agent_id"])
    result = handle.close()
    return json.dumps({"agent_id": handle.id, "status": handle.status, **result.to_json()})


def subagent_tools() -> list[RegisteredTool]:
    """``spawn_agent``, ``send_input``, ``wait``, ``close_agent`` (same schemas in every profile)."""
    agent_id = {"agent_id": described(PATH, "The id spawn_agent returned.")}
    return [
        tool("spawn_agent", (
            "Start a sub-agent on a self-contained task; it works in parallel with you, with its own "
            "conversation, on the same files. Returns its agent_id at once; collect its answer with wait. "
            "State the task completely: the sub-agent does not see this conversation."),
            {"task": described(PATH, "What the sub-agent should do, with all the context it needs."),
             "working_dir": described(STRING, "Subdirectory to confine it to (default: the working directory)."),
             "model": described(STRING, "Another model of the same provider (default: yours)."),
             "max_turns": {"type": "integer", "minimum": 1, "description": "Its turn limit (default 50)."}},
            ["task"], _spawn, "agent"),
        tool("send_input", "Send a message to a sub-agent: more instructions, a correction or an answer.",
             {**agent_id, "message": described(PATH, "The message.")}, ["agent_id", "message"], _send, "agent"),
        tool("wait", ("Wait until a sub-agent has finished and get its result: its final answer (output), "
                      "whether it succeeded, and how many turns it used."),
             agent_id, ["agent_id"], _wait, "agent"),
        tool("close_agent", "Stop a sub-agent (its running commands are ended) and get its final status.",
             agent_id, ["agent_id"], _close, "agent"),
    ]


__all__ = ["SubAgentHandle", "SubAgentManager", "SubAgentResult", "subagent_tools", "SUBAGENT_TOOL_NAMES"]
