"""The agent loop (SPEC §4). Read this file top to bottom next to SPEC.md.

``agent_loop`` starts a run from new prompts; ``agent_loop_continue`` resumes from a context whose
last message is not an assistant reply. Both block until the run ends, write every event to
``sink`` (an :class:`~phi.concurrency.channel.EventChannel` or any callable) and return the new messages.

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

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from ..concurrency.cancel import CancellationToken
from ..errors import InvalidContinue, InvalidPrompt
from ..events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    InputRejected,
    MessageEnd,
    MessageStart,
    TurnEnd,
    TurnStart,
)
from ..log import get_logger
from ..providers.base import ErrorKind, ProviderError, StreamConfig, StreamProvider
from ..providers.retry import Attempt, call_with_retries
from ..types import (
    AgentMessage,
    AssistantMessage,
    ContinuationKind,
    ExtensionMessage,
    Message,
    RunOutcome,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    TurnTrigger,
    Usage,
    UserMessage,
)
from .config import AgentContext, AgentLoopConfig
from .filters import run_filter
from .identity import ensure_identity, tell_run_model, tell_run_raised
from .llm_view import FAILED_STOPS, LLMView
from .reply_stream import ReplyStream
from .tool import tool_definition
from .tool_execution import NOT_RUN_CHOICE_NONE, NOT_RUN_ONE_PER_REPLY, ToolRunner, unanswered_call_results

if TYPE_CHECKING:
    from ..context.incremental import IncrementalCompaction
    from ..context.tracker import ExecutionTracker

log = get_logger(__name__)

Sink = Callable[[AgentEvent], None]


# --------------------------------------------------------------------------- entry points


def agent_loop(prompts: list[AgentMessage], context: AgentContext, config: AgentLoopConfig, sink: Sink,
               cancel: CancellationToken | None = None) -> list[AgentMessage]:
    """Run the loop from new ``prompts`` (SPEC §4.2). Returns every message the run added.

    Raises :class:`~phi.errors.InvalidPrompt` before emitting anything if ``prompts`` is empty
    (SPEC LOOP-20): to resume from the context as it is, use :func:`agent_loop_continue`.
    """
    if not prompts:
        raise InvalidPrompt("agent_loop needs at least one prompt message; to resume from the context as it is, "
                            "use agent_loop_continue (Agent.continue_loop)")
    return _Run(context, config, sink, cancel or CancellationToken(), continuation=False).run_telling(list(prompts))


def agent_loop_continue(context: AgentContext, config: AgentLoopConfig, sink: Sink,
                        cancel: CancellationToken | None = None) -> list[AgentMessage]:
    """Resume from ``context`` without new prompts (SPEC §4.3).

    Raises :class:`~phi.errors.InvalidContinue` if there is nothing to continue from, if the last
    message is an assistant reply, or if the context has no agent/session identity.
    """
    check_can_continue(context)
    if context.continuation_kind is None:
        context.continuation_kind = ContinuationKind.default()
    return _Run(context, config, sink, cancel or CancellationToken(), continuation=True).run_telling([])


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


# --------------------------------------------------------------------------- one run

STEERING, FOLLOW_UP = "steering", "follow_up"


class _Run:
    """The state of one loop run. Methods are the steps of SPEC §4, in the order they happen.

    Everything a run emits, and every hook it calls, happens on the thread that called
    ``agent_loop`` (tools post what they report to it; see :mod:`phi.loop.tool_execution`), with no lock held.
    """

    def __init__(self, context: AgentContext, config: AgentLoopConfig, sink: Sink, cancel: CancellationToken,
                 continuation: bool) -> None:
        self.context = context
        self.config = config
        self.cancel = cancel
        self.continuation = continuation
        self.emit: Sink = getattr(sink, "send", sink)  # an EventChannel is told through its send
        self.new_messages: list[AgentMessage] = []
        self.unannounced: list[AgentMessage] = []  # prompts wait for the first TurnStart
        self.pending: list[tuple[str, AgentMessage]] = []  # taken from a queue, not yet delivered
        self.usage = Usage()
        self.loop_id = ""
        self.tracker: ExecutionTracker | None = None
        self.runner: ToolRunner | None = None
        self.llm_view = LLMView()
        self.compaction: IncrementalCompaction | None = None  # the default compaction's running totals
        self.request: StreamConfig | None = None  # the last model call's request: its tool settings bind the reply

    # ----------------------------------------------------------------- SPEC LOOP-1..2, LOOP-5

    def run_telling(self, prompts: list[AgentMessage]) -> list[AgentMessage]:
        """:meth:`run`; a run that raises is told to :func:`~phi.loop.identity.observe_raised_runs`
        as the exception leaves it (no ``AgentEnd`` comes, LOOP-5), so a tracer still ends its spans."""
        try:
            return self.run(prompts)
        except BaseException as error:
            if self.loop_id:
                tell_run_raised(self.loop_id, error)
            raise

    def run(self, prompts: list[AgentMessage]) -> list[AgentMessage]:
        context, config = self.context, self.config
        identity = ensure_identity(context, config)
        self.loop_id = loop_id = identity.loop_id
        if config.before_loop is not None and config.before_loop(context.messages, identity.loop_index) is False:
            self.emit(AgentEnd(loop_id, [], Usage(), outcome=RunOutcome.VETOED))
            return []
        if config.execution_limits is not None:  # the duration limit counts from here (LOOP-10)
            from ..context.tracker import ExecutionTracker

            self.tracker = ExecutionTracker(config.execution_limits, config.clock)
        tell_run_model(loop_id, config)
        self.emit(AgentStart(identity.agent_id, identity.session_id, loop_id, context.parent_loop_id,
                             context.continuation_kind if self.continuation else None, metadata=config.metadata))
        if prompts:
            rejection = self.apply_input_filters(prompts)
            if rejection is not None:
                self.emit(InputRejected(loop_id, rejection))
                self.emit(AgentEnd(loop_id, [], Usage(), rejection=rejection, outcome=RunOutcome.REJECTED))
                return []
        for prompt in prompts:
            self.record(prompt)
            self.unannounced.append(prompt)
        self.runner = ToolRunner(context.tools, config, self.emit, self.cancel, loop_id)
        try:
            outcome = self.run_turns(self.runner)
            self.announce_prompts()  # if no turn started, prompts are announced before AgentEnd
            self.give_back_pending(announce=True)
            self.emit(AgentEnd(loop_id, list(self.new_messages), self.usage, outcome=outcome))
        except BaseException:
            self.unwind()
            raise
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
        warnings: list[str] = []
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

    def unwind(self) -> None:
        """An exception is ending the run (SPEC LOOP-5): nothing more is emitted and no hook runs,
        but queued input is given back (LOOP-18) and every tool call of the last reply gets a
        result, so the history stays a valid conversation."""
        try:
            self.give_back_pending(announce=False)
        except Exception:  # the original exception is the one the caller must see
            log.exception("could not give back queued messages while ending run %s", self.loop_id)
        known = self.runner.answered if self.runner is not None else None
        for message in unanswered_call_results(self.context.messages, known):
            self.record(message)

    # ----------------------------------------------------------------- SPEC LOOP-4: the turns

    def run_turns(self, runner: ToolRunner) -> RunOutcome:
        """SPEC LOOP-4..LOOP-8, LOOP-17: turns until nothing asks for another; returns how the run ended.

        The inner loop is the run's own work: a turn per model reply, for as long as the last reply
        asked for tools or a steering message waits. The outer loop is the agent asking "anything
        else?": when the inner one runs out, the follow-up source may start it again (LOOP-7)."""
        config, context = self.config, self.context
        turn_index = 0
        trigger = self.first_turn_trigger()
        # read now, before the first turn's checks: a message queued while the first before_turn runs
        # waits for the next read (LOOP-8)
        self.take(STEERING)  # steering queued before the run is announced in the first turn (LOOP-8)
        # the prompts (or the context being continued) are owed a reply, as tool results are
        more_tool_calls = True
        # the outer loop: the follow-up source, read only when the run would otherwise end (LOOP-7)
        while True:
            while more_tool_calls or self.pending:
                # Another turn, since the last reply asked for tools or steering waits (LOOP-7):
                # 1. the checks of LOOP-4, in order: the first that ends the run wins, so a cancelled run or
                #    one past its limit never calls before_turn; an abort while before_turn ran (application
                #    code, maybe slow) ends the run before a model call nobody wants any more (CANCEL-4);
                # 2. TurnStart before what the turn appends, so those messages are announced inside it: the
                #    prompts on the first turn, then the steering and follow-ups taken (LOOP-6, LOOP-8);
                # 3. compaction after them, since they go to the model too (LOOP-4, §8).
                if self.cancel.is_cancelled():
                    return RunOutcome.ABORTED
                if self.limit_reached():
                    return RunOutcome.LIMIT
                if config.before_turn is not None and config.before_turn(context.messages, turn_index) is False:
                    return RunOutcome.VETOED
                if config.before_turn is not None and self.cancel.is_cancelled():  # aborted while it ran (CANCEL-4)
                    return RunOutcome.ABORTED
                self.emit(TurnStart(self.loop_id, turn_index, trigger))
                self.announce_prompts()
                self.deliver_pending()
                self.compact_if_configured()

                # one model call; retries and overflow recovery happen inside it (§7), and the reply joins the
                # context whatever it is, so the history holds what the user saw
                reply = self.stream_assistant_response()
                # every model call counts against the execution limits, a failed one too (LOOP-10)
                if self.tracker is not None:
                    self.tracker.record_turn(reply.usage.tokens())
                # A failed reply's tool calls may be cut short: none runs, and the turn's end is the run's
                # (LOOP-17); on_error hears of it before its TurnEnd (LOOP-14).
                if reply.stop_reason in FAILED_STOPS:
                    if reply.stop_reason == StopReason.ERROR and config.on_error is not None:
                        config.on_error(reply.error_message or "")
                    self.end_turn(reply, [])
                    # no queue is read after an error or abort (LOOP-17)
                    return RunOutcome.ERROR if reply.stop_reason == StopReason.ERROR else RunOutcome.ABORTED
                # Every call gets its result before TurnEnd, so the next model call sees a whole conversation
                # (§5, TOOL-5; a length reply's calls are answered without running, TOOL-9). Tool calls continue
                # the run whatever the stop reason says (LOOP-7, TOOL-13).
                self.end_turn(reply, self.run_tools(reply, runner))
                turn_index += 1
                trigger = TurnTrigger.CONTINUATION
                more_tool_calls = bool(reply.tool_calls)
                # An abort during the tools or after_turn ends the run before another model call. The tools
                # read the steering source as they ran (TOOL-3); when none ran, it is read once now, after
                # after_turn, so steering gets the next turn (LOOP-8).
                if self.cancel.is_cancelled():
                    return RunOutcome.ABORTED
                if not more_tool_calls or reply.stop_reason == StopReason.LENGTH:
                    self.take(STEERING)  # no tool ran, so the steering source was not read (LOOP-8)
            # reading the steering source ran application code: an abort there ends the run before the
            # follow-up source is read, so no follow-up is taken only to be given back (LOOP-18)
            if self.cancel.is_cancelled():
                return RunOutcome.ABORTED
            # follow-ups wait until the agent would stop; what the source gives starts the next turn, and
            # nothing ends the run (LOOP-7)
            if not self.take(FOLLOW_UP):
                return RunOutcome.COMPLETED

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
        self.give_back_pending(announce=True)
        self.append(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))
        return True

    def run_tools(self, reply: AssistantMessage, runner: ToolRunner) -> list[ToolResultMessage]:
        """SPEC §5: answer every tool call of ``reply``, in call order; returns the results."""
        results: list[ToolResultMessage] = []

        def on_result(message: ToolResultMessage) -> None:
            results.append(message)
            self.append(message)

        calls = reply.tool_calls
        if reply.stop_reason == StopReason.LENGTH:
            runner.answer_truncated(calls, on_result)
        elif calls:
            allowed, refusal = allowed_calls(calls, self.request)
            runner.answered = {}
            if allowed:
                runner.run(allowed, lambda: self.take(STEERING), on_result)
            if refusal is not None:
                runner.refuse(calls[len(allowed):], refusal, on_result)
        return results

    def end_turn(self, reply: AssistantMessage, tool_results: list[Any]) -> None:
        self.usage = self.usage.combine(reply.usage)
        self.emit(TurnEnd(self.loop_id, reply, reply.usage, tool_results))
        if self.config.after_turn is not None:
            self.config.after_turn(self.context.messages, reply.usage)

    # ----------------------------------------------------------------- messages and queues

    def record(self, message: AgentMessage) -> None:
        """Append ``message`` to the context and to the run's new messages."""
        self.context.messages.append(message)
        self.new_messages.append(message)

    def append(self, message: AgentMessage) -> None:
        """Append and announce (SPEC EVT-4)."""
        self.record(message)
        announce(self.emit, self.loop_id, message)

    def announce_prompts(self) -> None:
        while self.unannounced:
            announce(self.emit, self.loop_id, self.unannounced.pop(0))

    def take(self, queue: str) -> list[AgentMessage]:
        """Read the steering or follow-up source; what it gives is pending until delivered."""
        source = self.config.get_steering_messages if queue == STEERING else self.config.get_follow_up_messages
        messages = list(source() or []) if source is not None else []
        self.pending.extend((queue, message) for message in messages)
        return messages

    def deliver_pending(self) -> None:
        """Append and announce the pending queued messages (at the start of a turn)."""
        while self.pending:
            self.append(self.pending.pop(0)[1])

    def give_back_pending(self, announce: bool) -> None:
        """SPEC LOOP-18: the run is ending; queued messages it took but did not deliver go back to
        the front of their queue, in order — or into the history where the source cannot take them
        back (announced unless an exception is ending the run)."""
        pending, self.pending = self.pending, []
        for queue, put_back in ((STEERING, self.config.put_back_steering_messages),
                                (FOLLOW_UP, self.config.put_back_follow_up_messages)):
            messages = [message for source, message in pending if source == queue]
            if messages and put_back is not None:
                put_back(messages)
                continue
            for message in messages:
                if announce:
                    self.append(message)
                else:
                    self.record(message)

    # ----------------------------------------------------------------- SPEC §8: compaction

    def compact_if_configured(self, tighter: bool = False) -> None:
        """Fit the context into the configured budget; after an overflow, into a tighter one."""
        cfg = self.config.context_config
        if cfg is None:
            return
        from ..context.compaction import compact_with, overflow_budget

        strategy = self.config.compaction_strategy
        if strategy is None:  # the default cascade, keeping running token totals for this run
            if self.compaction is None:
                from ..context.incremental import IncrementalCompaction

                self.compaction = IncrementalCompaction()
            strategy = self.compaction
        messages = self.context.messages
        budget = overflow_budget(messages, cfg) if tighter else None
        compacted = compact_with(strategy, messages, cfg, budget)
        if compacted != messages:  # a fast identity comparison when nothing changed
            messages[:] = compacted
            self.llm_view.reset()

    # ----------------------------------------------------------------- one reply (SPEC LOOP-11, §7)

    def stream_assistant_response(self) -> AssistantMessage:
        """Call the model — retried by the rules of SPEC §7 (:func:`~phi.providers.retry.call_with_retries`)
        — and stream the reply as MessageStart / MessageUpdate / MessageEnd; the reply joins the context."""
        stream = ReplyStream(self.emit, self.loop_id)

        def attempt() -> Attempt:
            nonlocal stream
            stream = ReplyStream(self.emit, self.loop_id)
            request = self.request = self.build_request()  # runs user hooks: their exceptions reach the caller
            return self.call_provider(request, stream)

        overflow = self.compact_after_overflow if self.config.context_config is not None else None
        result = call_with_retries(attempt, self.config.retry_config, self.cancel, overflow, loop_id=self.loop_id)
        reply = result.reply
        if result.failure is not None or reply is None or reply.stop_reason in FAILED_STOPS:
            reply = stream.failed(reply, result.failure, self.cancel.is_cancelled(), self.config.model_config.id,
                                  self.provider_id())
        stream.end(reply)
        self.record(reply)
        return reply

    def compact_after_overflow(self) -> None:
        self.compact_if_configured(tighter=True)

    def call_provider(self, request: StreamConfig, stream: ReplyStream) -> Attempt:
        """One attempt. Provider failures — a missing provider and provider bugs included — come back
        as a ProviderError; an exception raised by the event sink is re-raised unchanged (LOOP-5)."""
        reply: object = None
        failure: ProviderError | None = None
        try:
            reply = self.provider().stream(request, stream.on_event, self.cancel)
        except ProviderError as error:
            # a value from here on: its traceback would hold this frame, which would hold it
            failure = error.with_traceback(None)
        except Exception as error:
            if stream.sink_error is None:
                log.exception("provider %s raised", self.provider_id())
            failure = ProviderError(ErrorKind.OTHER, f"{type(error).__name__}: {error}")
        if stream.sink_error is not None:
            raise stream.sink_error
        if isinstance(reply, AssistantMessage):
            return Attempt(reply, failure, stream.visible)
        if failure is None:
            failure = ProviderError(ErrorKind.OTHER, f"the provider returned {type(reply).__name__}, "
                                                     "not an AssistantMessage")
        return Attempt(None, failure, stream.visible)

    def provider(self) -> StreamProvider:
        """The configured provider, else the one the model's API names (imported on first use)."""
        if self.config.provider is not None:
            return self.config.provider
        from ..providers.registry import get_provider

        return get_provider(self.config.model_config)

    def provider_id(self) -> str:
        provider = self.config.provider
        return provider.provider_id if provider is not None else self.config.model_config.provider

    def build_request(self) -> StreamConfig:
        """SPEC LOOP-11: transform_context → convert_to_llm → get_api_key, then the StreamConfig."""
        config, context = self.config, self.context
        messages = context.messages
        if config.transform_context is not None:
            messages = config.transform_context(list(messages))
        if config.convert_to_llm is None:
            llm_messages = self.llm_view.of(messages)
        else:
            llm_messages = config.convert_to_llm(list(messages))
        api_key = config.get_api_key(config.model_config.provider) if config.get_api_key is not None else None
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
            call_tool_choice(config.tool_choice, llm_messages),
            config.parallel_tool_calls,
        )


def call_tool_choice(choice: str | None, messages: list[Message]) -> str | None:
    """SPEC §4.1: a ``tool_choice`` that forces a tool call ("required" or a tool's name) applies to
    a call that answers the user; a call that follows tool results leaves the choice to the
    service, or every reply would call a tool again and the run would never end."""
    forcing = choice is not None and choice not in ("auto", "none")
    if forcing and messages and isinstance(messages[-1], ToolResultMessage):
        return None
    return choice


def allowed_calls(calls: list[ToolCall], request: StreamConfig | None) -> tuple[list[ToolCall], str | None]:
    """SPEC TOOL-14: the calls of a reply that may run under the request's tool settings, and the
    refusal text for the rest (None when all may run). A service may ignore ``tool_choice`` or
    ``parallel_tool_calls``, or have no way to say them (PROV-3); the setting is the user's word,
    so the loop holds to it whatever came back: under "none" no call runs, with parallel calls
    forbidden only the first does."""
    if request is None:
        return calls, None
    if request.tool_choice == "none":
        return [], NOT_RUN_CHOICE_NONE
    if request.parallel_tool_calls is False and len(calls) > 1:
        return calls[:1], NOT_RUN_ONE_PER_REPLY
    return calls, None


def announce(emit: Sink, loop_id: str, message: AgentMessage) -> None:
    """SPEC EVT-4: a message is announced by its MessageStart and MessageEnd."""
    emit(MessageStart(loop_id, message))
    emit(MessageEnd(loop_id, message))
