"""Tool execution (SPEC §5): validate, run, time out, abort, and answer every call once, in order.

For each call, in call order: ``before_tool_execution`` (False: the call is skipped with no events),
``ToolExecutionStart``, argument validation against the tool's JSON Schema, then ``execute`` on a
worker thread with a child cancellation token. ``ToolExecutionEnd`` (then ``after_tool_execution``)
follows each call as it completes. The toolResult messages are announced in call order.

Modes (SPEC TOOL-3): *parallel* runs all calls at once and reads the steering queue once after the
batch; *sequential* runs one call at a time and reads the queue after each; *batched* runs groups of
``batch_size`` and reads the queue after each group. Steering that arrives in the latter two modes
skips the remaining calls.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

from .agent_tool import AgentTool, ToolContext, to_tool_result
from .cancel import CancellationToken
from .errors import ToolError
from .events import MessageEnd, MessageStart, ToolExecutionEnd, ToolExecutionStart, ToolExecutionUpdate, ProgressMessage
from .loop_config import AgentLoopConfig, ToolExecution
from .types import AgentMessage, TextContent, ToolCall, ToolResult, ToolResultMessage

log = logging.getLogger("phi.tool_exec")

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

_CANCELLED = -1


class _Execution:
    """One tool call on its way to a result."""

    __slots__ = ("call", "tool", "token", "future", "deadline", "timeout_ms", "result", "is_error", "started",
                 "finished")

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.tool: AgentTool | None = None
        self.token: CancellationToken | None = None
        self.future: Future[Any] | None = None
        self.deadline: float | None = None
        self.timeout_ms: int | None = None
        self.result: ToolResult | None = None
        self.is_error = False
        self.started = False  # ToolExecutionStart was emitted
        self.finished = False


def error_result(text: str) -> ToolResult:
    return ToolResult([TextContent(text)])


class ToolRunner:
    """Runs the tool calls of one loop run. Not shared between runs."""

    def __init__(self, tools: Sequence[AgentTool], config: AgentLoopConfig, emit: Callable[[Any], None],
                 cancel: CancellationToken, loop_id: str) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.config = config
        self.emit = emit
        self.cancel = cancel
        self.loop_id = loop_id
        self._executor: ThreadPoolExecutor | None = None
        # Held while a call is marked finished and its End emitted, and while an update or progress
        # event of a call is emitted, so an abandoned tool can never report after its End.
        self._finish_lock = threading.Lock()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    # ----------------------------------------------------------------- entry points

    def run(self, calls: list[ToolCall], poll_steering: Callable[[], list[AgentMessage]],
            on_message: Callable[[ToolResultMessage], None]) -> list[AgentMessage]:
        """Run ``calls`` per the configured mode; ``on_message`` appends and announces each result.

        Returns the steering messages read during execution (empty if none).
        """
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
            steering = poll_steering()
            if steering:
                for rest in groups[n + 1:]:
                    for call in rest:
                        on_message(_message_for(call, error_result(SKIPPED_FOR_STEERING), True))
                return steering
        return []

    def answer_truncated(self, calls: list[ToolCall], on_message: Callable[[ToolResultMessage], None]) -> None:
        """A ``length`` reply's calls are never run: each gets the truncation result."""
        for call in calls:
            on_message(_message_for(call, error_result(TRUNCATED_CALL), True))

    # ----------------------------------------------------------------- one group

    def _run_group(self, calls: list[ToolCall]) -> list[_Execution]:
        done: queue.SimpleQueue[int] = queue.SimpleQueue()
        executions = [self._start(call, i, done) for i, call in enumerate(calls)]
        running = {i for i, ex in enumerate(executions) if ex.future is not None}
        for ex in executions:  # failures found before execution end right away
            if ex.started and ex.future is None:
                self._finish(ex, ex.result, ex.is_error)  # type: ignore[arg-type]
        if running:
            self._wait(executions, running, done)
        return executions

    def _start(self, call: ToolCall, index: int, done: queue.SimpleQueue[int]) -> _Execution:
        ex = _Execution(call)
        config = self.config
        if self.cancel.is_cancelled():
            ex.result, ex.is_error, ex.finished = error_result(ABORTED), True, True
            return ex
        if config.before_tool_execution is not None and config.before_tool_execution(call.name, call.id, call.arguments) is False:
            ex.result, ex.is_error, ex.finished = error_result(VETOED), True, True
            return ex
        self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))
        ex.started = True
        tool = self.tools.get(call.name)
        if tool is None:
            ex.result, ex.is_error = error_result(NOT_FOUND.format(name=call.name)), True
            return ex
        problem = validate_arguments(tool, call.arguments)
        if problem is not None:
            ex.result, ex.is_error = error_result(INVALID_ARGS.format(name=call.name, reason=problem)), True
            return ex
        ex.tool = tool
        ex.token = self.cancel.child_token()
        ctx = ToolContext(call.id, call.name, ex.token, self._updater(ex), self._progress(ex))
        timeout_ms = getattr(tool, "timeout_ms", None) or config.tool_timeout_ms
        if timeout_ms:
            ex.timeout_ms = timeout_ms
            ex.deadline = time.monotonic() + timeout_ms / 1000.0
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="phi-tool")
        ex.future = self._executor.submit(tool.execute, call.arguments, ctx)
        ex.future.add_done_callback(lambda _f, i=index: done.put(i))
        return ex

    def _wait(self, executions: list[_Execution], running: set[int], done: queue.SimpleQueue[int]) -> None:
        """Finish running calls in completion order, enforcing timeouts and the abort grace."""
        unregister = self.cancel.on_cancel(lambda: done.put(_CANCELLED))
        grace_deadline: float | None = None
        try:
            while running:
                deadlines = [executions[i].deadline for i in running if executions[i].deadline is not None]
                if grace_deadline is not None:
                    deadlines.append(grace_deadline)
                timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
                try:
                    item = done.get(timeout=timeout)
                except queue.Empty:
                    item = None
                if item == _CANCELLED:
                    if grace_deadline is None:
                        grace_deadline = time.monotonic() + self.config.tool_abort_grace_ms / 1000.0
                    continue
                if item is not None:
                    if item in running:
                        running.discard(item)
                        self._finish_from_future(executions[item])
                    continue
                now = time.monotonic()
                for i in sorted(running):
                    ex = executions[i]
                    if grace_deadline is not None and now >= grace_deadline:
                        running.discard(i)
                        self._abandon(ex, error_result(ABORTED))
                    elif ex.deadline is not None and now >= ex.deadline:
                        running.discard(i)
                        self._abandon(ex, error_result(TIMED_OUT.format(ms=ex.timeout_ms)))
        finally:
            unregister()

    def _abandon(self, ex: _Execution, result: ToolResult) -> None:
        """Stop waiting for a call: cancel its token and answer with ``result``."""
        if ex.token is not None:
            ex.token.cancel()
        log.warning("tool %s (%s) abandoned: %s", ex.call.name, ex.call.id, result.content[0].text)  # type: ignore[union-attr]
        self._finish(ex, result, True)

    def _finish_from_future(self, ex: _Execution) -> None:
        assert ex.future is not None
        try:
            value = ex.future.result()
        except ToolError as error:
            self._finish(ex, error_result(str(error)), True)
        except BaseException as error:  # a tool bug must not take the loop down
            log.debug("tool %s raised", ex.call.name, exc_info=error)
            text = RAISED.format(name=ex.call.name, kind=type(error).__name__, message=error)
            self._finish(ex, error_result(text), True)
        else:
            try:
                result = to_tool_result(value)
            except (TypeError, ValueError) as error:
                self._finish(ex, error_result(RAISED.format(name=ex.call.name, kind=type(error).__name__, message=error)), True)
            else:
                self._finish(ex, result, False)

    def _finish(self, ex: _Execution, result: ToolResult, is_error: bool) -> None:
        call = ex.call
        with self._finish_lock:
            ex.result, ex.is_error, ex.finished = result, is_error, True
            self.emit(ToolExecutionEnd(self.loop_id, call.id, call.name, result, is_error, result.child_loop_id))
        if self.config.after_tool_execution is not None:
            self.config.after_tool_execution(call.name, call.id, is_error)

    # ----------------------------------------------------------------- callbacks for ToolContext

    def _updater(self, ex: _Execution) -> Callable[[ToolResult], None]:
        config, call = self.config, ex.call

        def on_update(partial: ToolResult) -> None:
            if ex.finished:
                return  # late updates from an abandoned or finished tool are dropped
            text = _text_of(partial)
            if config.before_tool_execution_update is not None and config.before_tool_execution_update(call.name, call.id, text) is False:
                return
            with self._finish_lock:
                if ex.finished:
                    return
                self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, partial))
            if config.after_tool_execution_update is not None:
                config.after_tool_execution_update(call.name, call.id, text)

        return on_update

    def _progress(self, ex: _Execution) -> Callable[[str], None]:
        call = ex.call

        def on_progress(text: str) -> None:
            with self._finish_lock:
                if not ex.finished:
                    self.emit(ProgressMessage(self.loop_id, call.id, call.name, text))

        return on_progress


# --------------------------------------------------------------------------- helpers


def _text_of(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _message(ex: _Execution) -> ToolResultMessage:
    assert ex.result is not None
    return _message_for(ex.call, ex.result, ex.is_error)


def _message_for(call: ToolCall, result: ToolResult, is_error: bool) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, list(result.content), is_error, details=result.details)


def announce(emit: Callable[[Any], None], loop_id: str, message: AgentMessage) -> None:
    emit(MessageStart(loop_id, message))
    emit(MessageEnd(loop_id, message))


_validators: dict[int, tuple[Any, Any]] = {}


def validate_arguments(tool: AgentTool, args: Any) -> str | None:
    """Check ``args`` against the tool's JSON Schema; returns the reason they are invalid, or None."""
    if isinstance(args, dict) and set(args) == {"__raw_arguments"}:
        raw = str(args["__raw_arguments"])
        return f"arguments are not valid JSON: {raw[:200]!r}"
    schema = tool.parameters
    cached = _validators.get(id(schema))
    if cached is None or cached[0] is not schema:
        import jsonschema  # lazy: keeps `import phi` fast

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as error:
            return f"the tool's parameter schema is invalid ({error.message})"
        cached = (schema, cls(schema))
        _validators[id(schema)] = cached
    validator = cached[1]
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(args))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
