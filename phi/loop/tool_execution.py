"""Tool execution (SPEC §5): validate, run, time out, abort, and answer every call once, in order.

For each call, in call order: ``before_tool_execution`` (False: the call is skipped with no events),
``ToolExecutionStart``, argument validation against the tool's JSON Schema, then ``execute`` on a
worker thread (:mod:`phi.concurrency.workers`) with a child cancellation token. ``ToolExecutionEnd`` (then
``after_tool_execution``) follows each call as it completes. The toolResult messages are announced
in call order.

Modes (SPEC TOOL-3): *parallel* runs all calls at once and reads the steering queue once after the
batch; *sequential* runs one call at a time and reads the queue after each; *batched* runs groups of
``batch_size`` and reads the queue after each group. Steering that arrives in the latter two modes
skips the remaining calls.

Threads (SPEC LOOP-19): a tool runs on a worker, but everything it reports — updates, progress, its
result — is posted to the run's thread, which emits the events and calls the hooks. The hop to a
worker is what lets the loop time a call out and abandon one that ignores an abort; it costs about
0.1 ms per call (two thread wake-ups; measured by ``scripts/bench/loop_overhead.py``), most of a
turn's overhead. A tool with ``inline = True`` skips it and runs on the run's thread: for pure
functions that return at once. Such a call cannot time out, and an abort waits for it to return. So events and
hooks only ever happen on the run's thread, with no lock held, and a call that has ended (finished,
timed out, abandoned at an abort, or cut off because user code raised) can never emit again.
"""

from __future__ import annotations

import queue
from collections import deque
from typing import Any, Callable, Sequence

from ..concurrency import sync
from ..concurrency.cancel import CancellationToken, done_working, working_for
from ..concurrency.workers import Job, PoolExhausted, shared_pool
from ..errors import ToolError
from ..events import (
    ProgressMessage,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
)
from ..log import get_logger
from ..types import AgentMessage, AssistantMessage, StopReason, TextContent, ToolCall, ToolResult, ToolResultMessage
from .config import AgentLoopConfig, ToolExecution
from .arguments import validate_arguments
from .tool import AgentTool, ToolContext, to_tool_result

log = get_logger(__name__)

# Result texts (SPEC TOOL-7); implementations in other languages use the same words.
NOT_FOUND = "Tool {name} not found"
INVALID_ARGS = "Invalid arguments for tool {name}: {reason}"
RAISED = "Tool {name} raised {kind}: {message}"
TIMED_OUT = "Tool exceeded timeout of {ms}ms"
SKIPPED_FOR_STEERING = "Skipped due to queued user message."
VETOED = "Tool execution skipped by before_tool_execution hook."
TRUNCATED_CALL = (
    "Tool call was not executed: the response hit the output token limit, so its arguments may be "
    "incomplete. Re-issue the call with complete arguments."
)
ABORTED = "Tool execution aborted."
# A call the run's tool settings did not allow (SPEC TOOL-14): the service ignored or could not
# express them, and the loop holds to the user's word.
NOT_RUN_CHOICE_NONE = ("Tool call was not executed: tool calls are turned off for this request "
                       "(tool_choice is 'none'). Answer without calling tools.")
NOT_RUN_ONE_PER_REPLY = ("Tool call was not executed: this run allows one tool call per reply "
                         "(parallel_tool_calls is false) and only the first call of the reply ran. "
                         "Re-issue the call in a later reply if it is still needed.")

# What workers post to the run's thread: (kind, call index, payload).
_STARTED, _UPDATE, _PROGRESS, _DONE = "started", "update", "progress", "done"
#: a call that waited longer than this to start is said (WARNING, rate-limited: _said_slow_start)
SLOW_START_S = 1.0
_CANCELLED = ("cancelled", -1, None)


class _Execution:
    """One tool call on its way to a result."""

    __slots__ = ("call", "token", "job", "running", "deadline", "timeout_ms", "result", "is_error", "started",
                 "finished", "working", "started_at", "returned_at", "returned", "outcome")

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.token: CancellationToken | None = None
        self.job: Job | None = None  # the worker pool's handle, for abandoning it
        self.running = False  # handed to a worker and not yet answered
        self.deadline: float | None = None  # a timeout counts from when a worker starts the call
        self.timeout_ms: int | None = None
        self.result: ToolResult | None = None
        self.is_error = False
        self.started = False  # ToolExecutionStart was emitted
        self.finished = False  # answered: nothing of this call is emitted any more
        self.working = False  # a worker has started it (its timeout counts from then)
        self.started_at = 0.0  # when a worker started it (set before it posts _STARTED)
        self.returned_at = 0.0  # when its tool returned (set by the worker before it posts the outcome)
        self.returned = False  # its tool returned in time: its outcome is handled in its turn (ToolRunner._wait)
        self.outcome: tuple[Any, BaseException | None] | None = None  # (value, error), kept before returned_at


class _NotStarted(Exception):
    """The run was aborted before a worker could start the call."""


def error_result(text: str) -> ToolResult:
    return ToolResult([TextContent(text)])


class ToolRunner:
    """Runs the tool calls of one loop run, on the run's thread. Not shared between runs."""

    def __init__(self, tools: Sequence[AgentTool], config: AgentLoopConfig, emit: Callable[[Any], None],
                 cancel: CancellationToken, loop_id: str) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.config = config
        self.emit = emit
        self.cancel = cancel
        self.loop_id = loop_id
        self.answered: dict[str, ToolResultMessage] = {}  # results of the current reply, once known

    # ----------------------------------------------------------------- entry points

    def run(self, calls: list[ToolCall], poll_steering: Callable[[], list[AgentMessage]],
            on_message: Callable[[ToolResultMessage], None]) -> None:
        """Run ``calls`` per the configured mode; ``on_message`` appends and announces each result.

        ``poll_steering`` reads the steering source (after the batch, each call or each group);
        when it returns messages in sequential or batched mode, the remaining calls are skipped.
        """
        self.answered = {}
        mode = self.config.tool_execution
        if mode == ToolExecution.PARALLEL:
            groups = [calls]
        elif mode == ToolExecution.SEQUENTIAL:
            groups = [[call] for call in calls]
        else:
            size = max(1, self.config.batch_size)
            groups = [calls[i:i + size] for i in range(0, len(calls), size)]
        for n, group in enumerate(groups):
            for execution in self._run_group(group):
                on_message(_message(execution))
            if self.cancel.is_cancelled():
                continue  # the remaining calls are answered as aborted by _start
            if poll_steering():
                for rest in groups[n + 1:]:
                    for call in rest:
                        on_message(_message_for(call, error_result(SKIPPED_FOR_STEERING), True))
                return

    def answer_truncated(self, calls: list[ToolCall], on_message: Callable[[ToolResultMessage], None]) -> None:
        """A ``length`` reply's calls are never run (no hooks, no events): each gets the truncation
        result (SPEC TOOL-9)."""
        for call in calls:
            on_message(_message_for(call, error_result(TRUNCATED_CALL), True))

    def refuse(self, calls: list[ToolCall], text: str, on_message: Callable[[ToolResultMessage], None]) -> None:
        """Answer calls the run's settings do not allow (SPEC TOOL-14) without running them: each
        gets ``ToolExecutionStart``, ``ToolExecutionEnd`` with the error ``text`` and
        ``after_tool_execution``, so a user sees the model's attempt and why nothing happened. No
        ``before_tool_execution``: there is nothing to approve. Calls found cancelled are answered
        as aborted with no events, as calls that never started are (CANCEL-3)."""
        for call in calls:
            if self.cancel.is_cancelled():
                on_message(_message_for(call, error_result(ABORTED), True))
                continue
            result = error_result(text)
            self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))
            self.answered[call.id] = _message_for(call, result, True)
            self.emit(ToolExecutionEnd(self.loop_id, call.id, call.name, result, True, None))
            if self.config.after_tool_execution is not None:
                self.config.after_tool_execution(call.name, call.id, True)
            on_message(self.answered[call.id])

    # ----------------------------------------------------------------- one group

    def _run_group(self, calls: list[ToolCall]) -> list[_Execution]:
        inbox: queue.SimpleQueue[tuple[str, int, Any]] = sync.SimpleQueue()
        backlog: deque[tuple[str, int, Any]] = deque()  # taken from the inbox, not handled yet (_wait)
        executions: list[_Execution] = []
        # on a child token: its callback runs on a helper of its own (CANCEL-1), so a slow callback the
        # application put on the run's token cannot hold back the wake-up, and with it the grace
        waker = self.cancel.child_token()
        waker.on_cancel(lambda: inbox.put(_CANCELLED))
        try:
            for i, call in enumerate(calls):
                executions.append(self._start(call, i, inbox))
            for ex in executions:  # failures found before execution end right away (all Starts come first)
                if ex.started and not ex.finished and not ex.running and ex.result is not None:
                    self._finish(ex, ex.result, ex.is_error)
            self._wait(executions, inbox, backlog)
        except BaseException:  # user code raised: a call already decided (vetoed, unknown, invalid) keeps its result
            for ex in executions:
                if not ex.running and ex.result is not None:
                    self.answered.setdefault(ex.call.id, _message(ex))
            raise
        finally:
            waker.release()
            if any(ex.running for ex in executions):  # user code raised while calls ran
                self._keep_finished(executions)
            for ex in executions:  # only left running when user code raised: stop them, silence them
                if ex.running:
                    ex.running, ex.finished = False, True
                    if ex.token is not None:
                        ex.token.cancel(wait=False)
                    if ex.job is not None:  # nobody waits for it now: its worker must not count as busy
                        ex.job.abandon()
        return executions

    def _keep_finished(self, executions: list[_Execution]) -> None:
        """An exception is ending the run: calls that had finished, though the loop had not read their
        outcome yet, keep their own result in the history (LOOP-5) — without events or hooks. A
        worker keeps the outcome on the call before it says so (``returned_at``) and posts it: one
        whose post has not come yet (its worker waits for the interpreter lock) counts too."""
        for ex in executions:
            if ex.running and ex.outcome is not None:
                ex.running, ex.finished = False, True
                ex.result, ex.is_error = _outcome(ex.call, *ex.outcome)
                self.answered[ex.call.id] = _message(ex)
                if ex.token is not None:
                    ex.token.release()

    def _start(self, call: ToolCall, index: int, inbox: queue.SimpleQueue[tuple[str, int, Any]]) -> _Execution:
        ex = _Execution(call)
        config = self.config
        if self.cancel.is_cancelled():
            ex.result, ex.is_error, ex.finished = error_result(ABORTED), True, True
            return ex
        if config.before_tool_execution is not None and config.before_tool_execution(call.name, call.id, call.arguments) is False:
            ex.result, ex.is_error, ex.finished = error_result(VETOED), True, True
            return ex
        if self.cancel.is_cancelled():  # aborted while the hook ran (an approval prompt): not started (CANCEL-3)
            ex.result, ex.is_error, ex.finished = error_result(ABORTED), True, True
            return ex
        self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))
        ex.started = True
        if self.cancel.is_cancelled():  # aborted by a subscriber of ToolExecutionStart: it ends at once
            ex.result, ex.is_error = error_result(ABORTED), True
            return ex
        tool = self.tools.get(call.name)
        if tool is None:
            ex.result, ex.is_error = error_result(NOT_FOUND.format(name=call.name)), True
            return ex
        problem = validate_arguments(tool, call.arguments)
        if problem is not None:
            ex.result, ex.is_error = error_result(INVALID_ARGS.format(name=call.name, reason=problem)), True
            return ex
        ex.token = self.cancel.child_token()
        ctx = ToolContext(call.id, call.name, ex.token,
                          lambda partial: inbox.put((_UPDATE, index, partial)),
                          lambda text: inbox.put((_PROGRESS, index, text)), arguments_validated=True,
                          loop_id=self.loop_id)
        ex.running = True
        if getattr(tool, "inline", False):
            _execute(tool, call.arguments, ctx, inbox, index, ex)  # no thread hop: see the module docstring
            return ex
        ex.timeout_ms = getattr(tool, "timeout_ms", None) or config.tool_timeout_ms
        submitted = sync.monotonic()
        if ex.timeout_ms:  # checked then: a call still waiting for a worker gets no timeout (see _expire)
            ex.deadline = submitted + ex.timeout_ms / 1000.0
        try:  # the call's clock starts when a worker takes it (_STARTED): waiting for one is not its time
            ex.job = shared_pool().submit(_execute, tool, call.arguments, ctx, inbox, index, ex, submitted)
        except PoolExhausted as error:
            ex.running = False
            ex.result, ex.is_error = error_result(f"Tool {call.name} could not start: {error}"), True
        return ex

    def _wait(self, executions: list[_Execution], inbox: queue.SimpleQueue[tuple[str, int, Any]],
              backlog: deque[tuple[str, int, Any]]) -> None:
        """Handle what the running calls post until all are answered; enforce timeouts and the
        abort grace period.

        Once a deadline (a call's timeout, the abort's grace) has passed, what the workers posted
        while this thread was away — in a hook, a subscriber — is taken into ``backlog`` and decides
        first, with no hook run: a call whose tool returned in time keeps its result, however late
        this thread came back to it; the others are answered at once (SPEC TOOL-6, CANCEL-3). The
        backlog is then handled in order (updates before their call's end), with the deadlines
        checked again before each message, so that neither a slow hook nor a chatty tool holds
        another call's answer back."""
        grace_deadline: float | None = None
        while any(ex.running for ex in executions):
            if grace_deadline is None and self.cancel.is_cancelled():  # seen here, not behind what the calls posted
                grace_deadline = sync.monotonic() + self.config.tool_abort_grace_ms / 1000.0
            waiting = [ex for ex in executions if ex.running and not ex.returned]
            deadlines = [ex.deadline for ex in waiting if ex.deadline is not None]
            if grace_deadline is not None and waiting:
                deadlines.append(grace_deadline)
            timeout = min(deadlines) - sync.monotonic() if deadlines else None
            if timeout is not None and timeout <= 0:  # checked before reading, so a chatty tool cannot starve it
                now = sync.monotonic()  # read before the scan: what returns after it returned after now
                backlog.extend(inbox.get_nowait() for _ in range(inbox.qsize()))
                self._returned_in_time(executions, backlog, grace_deadline)
                self._expire(executions, grace_deadline, now)
                continue
            if backlog:
                kind, index, payload = backlog.popleft()
            else:
                try:
                    kind, index, payload = inbox.get(timeout=timeout)
                except queue.Empty:
                    continue
            if kind == _CANCELLED[0]:
                continue  # it woke this thread: the grace starts at the top of the loop
            ex = executions[index]
            if not ex.running:
                continue  # a call that was already answered (timed out, abandoned) reports nothing more
            if kind == _STARTED:
                ex.working = True
                if ex.timeout_ms:
                    ex.deadline = payload + ex.timeout_ms / 1000.0
            elif kind == _UPDATE:
                self._update(ex, payload)
            elif kind == _PROGRESS:
                self.emit(ProgressMessage(self.loop_id, ex.call.id, ex.call.name, payload))
            else:
                ex.running = False
                self._finish(ex, *_outcome(ex.call, *payload))

    def _returned_in_time(self, executions: list[_Execution], backlog: deque[tuple[str, int, Any]],
                          grace_deadline: float | None) -> None:
        """What decides before anything expires, with no hook run: when calls started (read from
        ``backlog``, which is not handled here) and which returned (``returned_at``, which a worker
        sets before it posts the outcome, :func:`_returned`). A call whose tool returned before its
        deadline and the grace is marked ``returned``: nothing expires it, and its outcome — in the
        backlog, or on its way — is handled in its turn."""
        for kind, index, payload in backlog:
            ex = executions[index] if kind == _STARTED else None
            if ex is not None and ex.running:
                ex.working = True
                if ex.timeout_ms:
                    ex.deadline = payload + ex.timeout_ms / 1000.0
        for ex in executions:  # its outcome in the backlog, or not posted yet (its worker waits for the lock)
            if ex.running and not ex.returned and ex.returned_at and not _returned_late(ex, grace_deadline):
                ex.returned = True

    def _expire(self, executions: list[_Execution], grace_deadline: float | None, now: float) -> None:
        for ex in executions:
            if not ex.running or ex.returned:  # returned in time: its outcome waits in the backlog
                continue
            if grace_deadline is not None and now >= grace_deadline:
                self._abandon(ex, error_result(ABORTED))
            elif ex.deadline is not None and now >= ex.deadline:
                if ex.working:
                    self._abandon(ex, error_result(TIMED_OUT.format(ms=ex.timeout_ms)))
                elif shared_pool().can_start_work():  # still waiting for a worker: not the tool's time
                    ex.deadline = now + (ex.timeout_ms or 0) / 1000.0
                else:  # every thread the pool may hold runs an abandoned call: none will take this one
                    self._abandon(ex, error_result(f"Tool {ex.call.name} could not start: every worker thread "
                                                   "is held by tool calls that timed out or were aborted and "
                                                   "ignore their cancellation"))

    def _abandon(self, ex: _Execution, result: ToolResult) -> None:
        """Stop waiting for a call: cancel its token and answer with ``result``."""
        ex.running = False
        if ex.token is not None:
            ex.token.cancel(wait=False)  # its cancellation callbacks run on; the run does not wait for them
        if ex.job is not None:
            ex.job.abandon()
        log.warning("tool %s (%s) abandoned: %s", ex.call.name, ex.call.id, _text_of(result))
        self._finish(ex, result, True)

    def _update(self, ex: _Execution, partial: ToolResult) -> None:
        config, call = self.config, ex.call
        text = _text_of(partial)
        if config.before_tool_execution_update is not None and \
                config.before_tool_execution_update(call.name, call.id, text) is False:
            return
        self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, partial))
        if config.after_tool_execution_update is not None:
            config.after_tool_execution_update(call.name, call.id, text)

    def _finish(self, ex: _Execution, result: ToolResult, is_error: bool) -> None:
        call = ex.call
        ex.result, ex.is_error, ex.finished = result, is_error, True
        self.answered[call.id] = _message(ex)
        if ex.token is not None:
            ex.token.release()
        self.emit(ToolExecutionEnd(self.loop_id, call.id, call.name, result, is_error, result.child_loop_id))
        if self.config.after_tool_execution is not None:
            self.config.after_tool_execution(call.name, call.id, is_error)


# --------------------------------------------------------------------------- on the worker thread


def _execute(tool: AgentTool, args: Any, ctx: ToolContext, inbox: queue.SimpleQueue[tuple[str, int, Any]],
             index: int, ex: _Execution, submitted: float | None = None) -> None:
    """Run one call and post its outcome. A call answered while it waited for a free worker (its
    run abandoned it or ended), or whose run was aborted meanwhile, is not run at all. A call
    handed to the pool at ``submitted`` tells the run's thread when it started: its timeout
    counts from then (SPEC TOOL-6)."""
    if not ex.running:
        return
    if ctx.cancel.is_cancelled():  # the last moment before the tool's side effects (CANCEL-3)
        _returned(ex, (None, _NotStarted()), inbox, index)
        return
    if submitted is not None:
        started = ex.started_at = sync.monotonic()
        if ex.timeout_ms:  # its clock starts now (a call without a timeout costs the run no wake-up here)
            inbox.put((_STARTED, index, started))
        if started - submitted > SLOW_START_S:
            _said_slow_start(ex.call.name, started - submitted, started)
    outer = working_for(ctx.cancel)
    try:
        value = tool.execute(args, ctx)
    except BaseException as error:  # a tool bug must not take the loop down (SPEC TOOL-7)
        _returned(ex, (None, error), inbox, index)
    else:
        _returned(ex, (value, None), inbox, index)
    finally:
        done_working(outer)
        # the error's traceback keeps this frame, and the call keeps the error: without the call
        # among this frame's locals there is no cycle, and the run goes by reference counting
        del ex


def _returned(ex: _Execution, outcome: tuple[Any, BaseException | None],
              inbox: queue.SimpleQueue[tuple[str, int, Any]], index: int) -> None:
    """The call is over on its worker: its outcome is kept on it, then when it returned, then the
    outcome is posted — in that order, so the run's thread may rely on what it finds
    (``_returned_in_time``, ``_keep_finished``) before the post arrives."""
    ex.outcome = outcome
    ex.returned_at = sync.monotonic()
    if ex.running:  # else it was answered (timed out, abandoned): nobody reads the post, and an error's
        inbox.put((_DONE, index, outcome))  # traceback would hold, through the tool's frames, this inbox


def _returned_late(ex: _Execution, grace_deadline: float | None) -> bool:
    """Whether a call's tool ran longer than its timeout (from when a worker started it, whether
    or not the run's thread has read that yet), or returned after the abort's grace period."""
    if ex.timeout_ms and ex.started_at and ex.returned_at - ex.started_at > ex.timeout_ms / 1000.0:
        return True
    return grace_deadline is not None and ex.returned_at > grace_deadline


def _outcome(call: ToolCall, value: Any, error: BaseException | None) -> tuple[ToolResult, bool]:
    """The result of a call that returned ``value`` or raised ``error`` (SPEC TOOL-7)."""
    if isinstance(error, _NotStarted):
        return error_result(ABORTED), True
    if isinstance(error, ToolError):
        return error_result(_said(error)), True
    if error is not None:
        log.debug("tool %s raised", call.name, exc_info=error)
        return error_result(RAISED.format(name=call.name, kind=type(error).__name__, message=_said(error))), True
    try:
        return to_tool_result(value), False
    except Exception as bad:  # the value's own code (__str__, a JSON default) may raise anything
        return error_result(RAISED.format(name=call.name, kind=type(bad).__name__, message=_said(bad))), True


def _said(error: BaseException) -> str:
    """What ``error`` says — or, when its own ``__str__`` raises, that it could not say it: an
    outcome is made on the run's thread, where nothing of a tool's may raise (SPEC TOOL-7)."""
    try:
        return str(error)
    except Exception:
        return f"<{type(error).__name__} whose message could not be read>"


# --------------------------------------------------------------------------- helpers


_last_slow_start = [float("-inf")]
SLOW_START_EVERY_S = 10.0  # at most one such warning in this time: under load there would be thousands


def _said_slow_start(name: str, waited: float, now: float) -> None:
    """A call waited for a worker: said (rate-limited) with what the pool's state suggests."""
    if now - _last_slow_start[0] < SLOW_START_EVERY_S:
        return
    _last_slow_start[0] = now
    state = shared_pool().stats()
    if state.busy + state.abandoned >= state.max_workers:
        hint = "every worker is busy; phi.configure_tool_pool(max_workers=...) makes the pool larger"
    else:
        hint = ("workers were free: the process is short of CPU or of the interpreter lock (many threads; "
                "see docs/many-sessions.md on sys.setswitchinterval)")
    log.warning("tool %s waited %.1f s to start (%d busy of max_workers=%d, %d queued): %s", name, waited,
                state.busy, state.max_workers, state.queued, hint)


def _text_of(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _message(ex: _Execution) -> ToolResultMessage:
    assert ex.result is not None
    return _message_for(ex.call, ex.result, ex.is_error)


def _message_for(call: ToolCall, result: ToolResult, is_error: bool) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, list(result.content), is_error, details=result.details)


def unanswered_call_results(messages: Sequence[AgentMessage],
                            known: dict[str, ToolResultMessage] | None = None) -> list[ToolResultMessage]:
    """Results for the tool calls of the last reply that have none in ``messages`` yet, in call
    order: the ``known`` result of a call that finished, else an error result.

    Used when a run ends by an exception in the middle of a turn (SPEC LOOP-5): appending them keeps
    the history a valid conversation. Calls of an error/aborted reply need none (LOOP-12).
    """
    known = known or {}
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
            continue
        if not isinstance(message, AssistantMessage):
            return []
        if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            return []
        text = TRUNCATED_CALL if message.stop_reason == StopReason.LENGTH else ABORTED
        return [known.get(call.id) or _message_for(call, error_result(text), True)
                for call in message.tool_calls if call.id not in answered]
    return []
