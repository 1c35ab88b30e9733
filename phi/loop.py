"""The agent loop (SPEC §4). Read this file top to bottom next to SPEC.md.

``agent_loop`` starts a run from new prompts; ``agent_loop_continue`` resumes from a context whose
last message is not an assistant reply. Both block until the run ends, write every event to
``sink`` (an :class:`~phi.channel.EventChannel` or any callable) and return the new messages.

A run, in order (SPEC LOOP-1..LOOP-14):

1. ``before_loop`` may veto the run: only ``AgentEnd(messages=[])`` is emitted.
2. ``AgentStart``.
3. Input filters check the prompts; a rejection emits ``InputRejected`` and ``AgentEnd``.
4. The prompts join the context. Each turn then: cancellation? limits? ``before_turn``?
   → ``TurnStart`` → announce prompts / steering / follow-ups → compaction → one streamed
   assistant reply → its tool calls → ``TurnEnd`` → ``after_turn``.
5. ``AgentEnd`` with all new messages and the summed usage, then ``after_loop``.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import uuid
from dataclasses import replace
from typing import Any, Callable

from .cancel import CancellationToken
from .errors import InvalidContinue
from .events import (
    AgentEnd,
    AgentStart,
    InputRejected,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StreamDelta,
    TurnEnd,
    TurnStart,
)
from .filters import run_filter
from .loop_config import AgentContext, AgentLoopConfig
from .providers.base import (
    ErrorKind,
    ProviderError,
    StreamConfig,
    StreamEvent,
    StreamEventKind,
    StreamProvider,
    is_context_overflow,
)
from .tool_exec import ToolRunner, announce
from .types import (
    AgentMessage,
    AssistantMessage,
    ContinuationKind,
    ExtensionMessage,
    Message,
    StopReason,
    TextContent,
    ThinkingLevel,
    ToolCall,
    TurnTrigger,
    Usage,
    UserMessage,
)

log = logging.getLogger("phi.loop")

Sink = Callable[[Any], None]


# --------------------------------------------------------------------------- entry points


def agent_loop(prompts: list[AgentMessage], context: AgentContext, config: AgentLoopConfig, sink: Sink,
               cancel: CancellationToken | None = None) -> list[AgentMessage]:
    """Run the loop from new ``prompts`` (SPEC §4.2). Returns every message the run added."""
    return _Run(context, config, sink, cancel or CancellationToken(), continuation=False).run(list(prompts))


def agent_loop_continue(context: AgentContext, config: AgentLoopConfig, sink: Sink,
                        cancel: CancellationToken | None = None) -> list[AgentMessage]:
    """Resume from ``context`` without new prompts (SPEC §4.3).

    Raises :class:`~phi.errors.InvalidContinue` if there is nothing to continue from, if the last
    message is an assistant reply, or if the context has no agent/session identity.
    """
    check_can_continue(context)
    if context.continuation_kind is None:
        context.continuation_kind = ContinuationKind.default()
    return _Run(context, config, sink, cancel or CancellationToken(), continuation=True).run([])


def check_can_continue(context: AgentContext) -> None:
    """SPEC LOOP-3: the preconditions of ``agent_loop_continue``."""
    if not context.agent_id or not context.session_id:
        raise InvalidContinue(
            "agent_loop_continue needs context.agent_id and context.session_id (the identity of the run "
            "being continued); set them, or use Agent.continue_loop() which does"
        )
    last = next((m for m in reversed(context.messages) if not isinstance(m, ExtensionMessage)), None)
    if last is None:
        raise InvalidContinue("cannot continue: the context has no messages; start a run with agent_loop(prompts, ...)")
    if isinstance(last, AssistantMessage):
        raise InvalidContinue(
            "cannot continue from an assistant message: add a user message (or tool results) first, "
            "or start a new run with agent_loop(prompts, ...)"
        )


# --------------------------------------------------------------------------- identity (SPEC §4.4)

_counter_lock = threading.Lock()
_loop_counters: dict[str, itertools.count[int]] = {}


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
    """N of ``{session_id}.{config_id}.{N}``: 1, 2, ... per session and config, process-wide."""
    with _counter_lock:
        counter = _loop_counters.setdefault(f"{session_id}.{segment}", itertools.count(1))
        return next(counter)


def _ensure_identity(context: AgentContext, config: AgentLoopConfig) -> int:
    """Fill in missing ids (written back to ``context``); returns the loop index (N - 1)."""
    context.agent_id = context.agent_id or str(uuid.uuid4())
    context.session_id = context.session_id or str(uuid.uuid4())
    if context.loop_id is None:
        segment = config_segment(config)
        context.loop_id = f"{context.session_id}.{segment}.{next_loop_number(context.session_id, segment)}"
    tail = context.loop_id.rsplit(".", 1)[-1]
    return int(tail) - 1 if tail.isdigit() else 0


# --------------------------------------------------------------------------- LLM view of the context


_FAILED = (StopReason.ERROR, StopReason.ABORTED)


def default_convert_to_llm(messages: list[AgentMessage]) -> list[Message]:
    """SPEC LOOP-12: drop extension messages; strip tool calls from error/aborted replies (and drop
    such a reply if nothing is left), so the history is always a valid conversation."""
    out: list[Message] = []
    keep = out.append
    for message in messages:  # runs before every model call: kept to plain type checks
        kind = type(message)
        if kind is ExtensionMessage:
            continue
        if kind is AssistantMessage and message.stop_reason in _FAILED:  # type: ignore[union-attr]
            kept = [b for b in message.content if not isinstance(b, ToolCall)]
            if not kept:
                continue
            if len(kept) != len(message.content):
                message = replace(message, content=kept)  # type: ignore[type-var]
        keep(message)  # type: ignore[arg-type]
    return out


def _provider_for(config: AgentLoopConfig) -> StreamProvider:
    if config.provider is not None:
        return config.provider
    from .providers.registry import get_provider  # lazy: imports only the protocol in use

    return get_provider(config.model_config)


# --------------------------------------------------------------------------- one run


class _Run:
    """The state of one loop run. Methods are the steps of SPEC §4, in the order they happen."""

    def __init__(self, context: AgentContext, config: AgentLoopConfig, sink: Sink, cancel: CancellationToken,
                 continuation: bool) -> None:
        self.context = context
        self.config = config
        self.cancel = cancel
        self.continuation = continuation
        send = sink.send if hasattr(sink, "send") else sink
        lock = threading.Lock()  # tools emit from worker threads

        def emit(event: Any) -> None:
            with lock:
                send(event)

        self.emit = emit
        self.new_messages: list[AgentMessage] = []
        self.unannounced: list[AgentMessage] = []  # prompts wait for the first TurnStart
        self.usage = Usage()
        self.loop_id = ""
        self.tracker: Any = None

    # ----------------------------------------------------------------- SPEC LOOP-1..2

    def run(self, prompts: list[AgentMessage]) -> list[AgentMessage]:
        context, config = self.context, self.config
        loop_index = _ensure_identity(context, config)
        self.loop_id = loop_id = context.loop_id  # type: ignore[assignment]
        if config.before_loop is not None and config.before_loop(context.messages, loop_index) is False:
            self.emit(AgentEnd(loop_id, [], Usage()))
            return []
        self.emit(AgentStart(context.agent_id, context.session_id, loop_id, context.parent_loop_id,  # type: ignore[arg-type]
                             context.continuation_kind if self.continuation else None, metadata=config.metadata))
        if prompts:
            rejection = self.apply_input_filters(prompts)
            if rejection is not None:
                self.emit(InputRejected(loop_id, rejection))
                self.emit(AgentEnd(loop_id, [], Usage(), rejection=rejection))
                return []
        for prompt in prompts:
            self.append(prompt, announce_now=False)
        runner = ToolRunner(context.tools, config, self.emit, self.cancel, loop_id)
        try:
            self.run_turns(runner)
        finally:
            runner.close()
        self.announce_prompts()  # if no turn started, prompts are announced before AgentEnd
        self.emit(AgentEnd(loop_id, list(self.new_messages), self.usage))
        if config.after_loop is not None:
            config.after_loop(context.messages, self.usage)
        return self.new_messages

    def apply_input_filters(self, prompts: list[AgentMessage]) -> str | None:
        """SPEC LOOP-2: the first rejection wins; warnings go onto the last user prompt."""
        if not self.config.input_filters:
            return None
        text = "\n".join(
            block.text for m in prompts if isinstance(m, UserMessage) for block in m.content if isinstance(block, TextContent)
        )
        warnings = []
        for flt in self.config.input_filters:
            result = run_filter(flt, text)
            if result.action == "reject":
                return result.text
            if result.action == "warn":
                warnings.append(f"[Warning: {result.text}]")
        if warnings:
            for i in range(len(prompts) - 1, -1, -1):
                prompt = prompts[i]
                if isinstance(prompt, UserMessage):
                    prompts[i] = replace(prompt, content=[*prompt.content, TextContent("\n".join(warnings))])
                    break
        return None

    # ----------------------------------------------------------------- SPEC LOOP-4: the turns

    def run_turns(self, runner: ToolRunner) -> None:
        config, context = self.config, self.context
        if config.execution_limits is not None:
            from .context.tracker import ExecutionTracker

            self.tracker = ExecutionTracker(config.execution_limits)
        turn_index = 0
        trigger = self.first_turn_trigger()
        pending = self.poll(config.get_steering_messages)  # steering queued before the run
        more_tool_calls = True
        while True:
            while more_tool_calls or pending:
                if self.cancel.is_cancelled():
                    return
                if self.limit_reached():
                    return
                if config.before_turn is not None and config.before_turn(context.messages, turn_index) is False:
                    return
                self.emit(TurnStart(self.loop_id, turn_index, trigger))
                self.announce_prompts()
                for message in pending:
                    self.append(message)
                pending = []
                self.compact_if_configured()

                reply = self.stream_assistant_response()
                if self.tracker is not None:
                    self.tracker.record_turn(reply.usage.tokens())
                if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                    if reply.stop_reason == StopReason.ERROR and config.on_error is not None:
                        config.on_error(reply.error_message or "")
                    self.end_turn(reply, [])
                    return  # no follow-up polling after an error or abort

                calls = reply.tool_calls
                results: list[AgentMessage] = []
                steering: list[AgentMessage] = []

                def on_result(message: AgentMessage) -> None:
                    results.append(message)
                    self.append(message)

                if reply.stop_reason == StopReason.LENGTH:
                    runner.answer_truncated(calls, on_result)
                elif calls:
                    steering = runner.run(calls, lambda: self.poll(config.get_steering_messages), on_result)
                self.end_turn(reply, results)  # type: ignore[arg-type]
                turn_index += 1
                trigger = TurnTrigger.CONTINUATION
                more_tool_calls = bool(calls)
                if self.cancel.is_cancelled():
                    return
                if not calls:
                    steering = self.poll(config.get_steering_messages)
                pending = steering
            if self.cancel.is_cancelled():
                return
            pending = self.poll(config.get_follow_up_messages)
            if not pending:
                return

    def first_turn_trigger(self) -> TurnTrigger:
        kind = self.context.continuation_kind if self.continuation else None
        if kind is not None and kind.kind == "branch":
            return TurnTrigger.BRANCH
        if self.continuation:
            return TurnTrigger.CONTINUATION
        return self.config.first_turn_trigger

    def limit_reached(self) -> bool:
        """SPEC LOOP-10: a stop notice, announced outside any turn, ends the run."""
        reason = self.tracker.check_limits() if self.tracker is not None else None
        if reason is None:
            return False
        self.announce_prompts()
        self.append(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))
        return True

    def end_turn(self, reply: AssistantMessage, tool_results: list[Any]) -> None:
        self.usage = self.usage.combine(reply.usage)
        self.emit(TurnEnd(self.loop_id, reply, reply.usage, tool_results))
        if self.config.after_turn is not None:
            self.config.after_turn(self.context.messages, reply.usage)

    # ----------------------------------------------------------------- messages

    def append(self, message: AgentMessage, announce_now: bool = True) -> None:
        self.context.messages.append(message)
        self.new_messages.append(message)
        if announce_now:
            announce(self.emit, self.loop_id, message)
        else:
            self.unannounced.append(message)

    def announce_prompts(self) -> None:
        for message in self.unannounced:
            announce(self.emit, self.loop_id, message)
        self.unannounced = []

    @staticmethod
    def poll(source: Callable[[], list[AgentMessage]] | None) -> list[AgentMessage]:
        return list(source() or []) if source is not None else []

    # ----------------------------------------------------------------- SPEC §8: compaction

    def compact_if_configured(self, tighter: bool = False) -> None:
        """Fit the context into the configured budget; after an overflow, into a tighter one."""
        cfg = self.config.context_config
        if cfg is None:
            return
        from .context.compaction import compact_with, overflow_budget

        budget = overflow_budget(self.context.messages, cfg) if tighter else None
        self.context.messages[:] = compact_with(self.config.compaction_strategy, self.context.messages, cfg, budget)

    # ----------------------------------------------------------------- SPEC §4.5: one reply

    def stream_assistant_response(self) -> AssistantMessage:
        """Call the model once (with retries) and stream the reply as MessageStart/Update/End."""
        config, context = self.config, self.context
        provider = _provider_for(config)
        attempt = 0
        overflow_retried = False  # ERR-4: one compaction retry per request
        while True:
            stream = _ReplyStream(self.emit, self.loop_id)
            request = self.build_request()
            failure: ProviderError | None = None
            try:
                reply = provider.stream(request, stream.on_event, self.cancel)
            except ProviderError as error:
                failure, reply = error, None  # type: ignore[assignment]
            except Exception as error:  # a provider bug still ends as an error message
                log.exception("provider %s raised", getattr(provider, "provider_id", provider))
                failure, reply = ProviderError(ErrorKind.OTHER, f"{type(error).__name__}: {error}"), None  # type: ignore[assignment]
            if failure is None and reply.stop_reason == StopReason.ERROR and not stream.visible \
                    and is_context_overflow(None, reply.error_message):
                failure = ProviderError(ErrorKind.CONTEXT_OVERFLOW, reply.error_message or "context overflow")
            if failure is not None and not stream.visible and not self.cancel.is_cancelled():
                if failure.is_retryable() and attempt < config.retry_config.max_retries:
                    attempt += 1
                    delay = config.retry_config.delay_for(attempt, failure.retry_after_ms)
                    log.warning("retry %d/%d in %.2fs after %s", attempt, config.retry_config.max_retries, delay, failure)
                    if not self.cancel.wait(delay):
                        continue
                elif failure.kind == ErrorKind.CONTEXT_OVERFLOW and config.context_config is not None \
                        and not overflow_retried:
                    overflow_retried = True
                    log.warning("context overflow; compacting and retrying once")
                    self.compact_if_configured(tighter=True)
                    continue
            if failure is not None or reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                reply = stream.failed(reply, failure, self.cancel.is_cancelled(), config, provider)
            break
        stream.end(reply)
        context.messages.append(reply)
        self.new_messages.append(reply)
        return reply

    def build_request(self) -> StreamConfig:
        """SPEC LOOP-11: transform_context → convert_to_llm → get_api_key, then the StreamConfig."""
        config, context = self.config, self.context
        messages = context.messages
        if config.transform_context is not None:
            messages = config.transform_context(list(messages))
        if config.convert_to_llm is None:
            llm_messages = default_convert_to_llm(messages)  # builds a new list; no copy needed
        else:
            llm_messages = config.convert_to_llm(list(messages))
        api_key = config.get_api_key(config.model_config.provider) if config.get_api_key is not None else None
        from .agent_tool import tool_definition

        return StreamConfig(
            config.model_config,
            context.system_prompt,
            llm_messages,
            [tool_definition(tool) for tool in context.tools],
            config.thinking_level,
            config.max_tokens,
            config.temperature,
            config.cache_config,
            api_key,
        )


class _ReplyStream:
    """Turns a provider's StreamEvents into MessageStart / MessageUpdate events.

    MessageStart is held back until the first delta, so that a failed attempt that showed nothing
    can be retried without the consumer ever seeing it (SPEC ERR-2).
    """

    __slots__ = ("emit", "loop_id", "partial", "visible")

    _DELTA_KINDS = {
        StreamEventKind.TEXT_DELTA: "text",
        StreamEventKind.THINKING_DELTA: "thinking",
        StreamEventKind.TOOLCALL_DELTA: "toolCall",
    }

    def __init__(self, emit: Sink, loop_id: str) -> None:
        self.emit = emit
        self.loop_id = loop_id
        self.partial: AssistantMessage | None = None
        self.visible = False  # MessageStart has been emitted

    def on_event(self, event: StreamEvent) -> None:
        before, self.partial = self.partial, event.partial
        kind = self._DELTA_KINDS.get(event.kind)
        if kind is None:
            return
        if not self.visible:
            self.visible = True
            self.emit(MessageStart(self.loop_id, before if before is not None else event.partial))
        self.emit(MessageUpdate(self.loop_id, event.partial, StreamDelta(kind, event.delta, event.index)))

    def failed(self, reply: AssistantMessage | None, failure: ProviderError | None, cancelled: bool,
               config: AgentLoopConfig, provider: StreamProvider) -> AssistantMessage:
        """The reply of a failed or aborted call: whatever content arrived, and the reason."""
        base = reply or self.partial
        content = list(base.content) if base is not None else []
        if cancelled or (failure is not None and failure.kind == ErrorKind.CANCELLED) or \
                (reply is not None and reply.stop_reason == StopReason.ABORTED):
            stop, text = StopReason.ABORTED, (reply.error_message if reply is not None else None) or "aborted"
        else:
            stop = StopReason.ERROR
            text = str(failure) if failure is not None else (reply.error_message if reply is not None else None) or "error"
        return AssistantMessage(
            content,
            stop,
            base.model if base is not None and base.model else config.model_config.id,
            base.provider if base is not None and base.provider else getattr(provider, "provider_id", ""),
            base.usage if base is not None else Usage(),
            error_message=text,
        )

    def end(self, reply: AssistantMessage) -> None:
        if not self.visible:
            self.visible = True
            self.emit(MessageStart(self.loop_id, reply))
        self.emit(MessageEnd(self.loop_id, reply))
