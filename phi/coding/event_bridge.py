"""Session events derived from the core loop's events, one source of truth (SPEC §14 CODE-2, CODE-7;
seed 004 §2.9, §2.10, §5.5).

The session's loop is the core loop (:func:`phi.loop.agent_loop`, run by :class:`phi.agent.Agent`);
:class:`EventBridge` is its event sink and turns each core event into the session's view:

====================================  =============================================================
core event                            session event (and history record)
====================================  =============================================================
``MessageStart`` of the user input    ``USER_INPUT`` (``UserTurn``); a follow-up too, ``follow_up``
``MessageStart`` of a steering msg    ``STEERING_INJECTED`` (``SteeringTurn``)
``MessageStart`` of a loop warning    ``LOOP_DETECTION`` (``SteeringTurn``)
``MessageStart`` of a reply           ``ASSISTANT_TEXT_START``
``MessageUpdate`` (text)              ``ASSISTANT_TEXT_DELTA``
``MessageEnd`` of a reply             ``ASSISTANT_TEXT_END`` (``AssistantTurn``); ``ERROR`` if failed
``ToolExecutionStart``                ``TOOL_CALL_START``
``ToolExecutionUpdate``/``Progress``  ``TOOL_CALL_OUTPUT_DELTA``
``ToolExecutionEnd``                  ``TOOL_CALL_END`` with the full output (or ``output_path``)
``TurnEnd``                           (``ToolResultsTurn``); ``WARNING`` at 80 % of the context
(a context overflow error)            ``WARNING``, then the fatal ``ERROR``
``AgentEnd``                          the input is done: the session's state changes
====================================  =============================================================

Which user message is what is known from the session's own tags (it made every message it queued).

The bridge changes its session only through what :class:`BridgeHost` names (history, counters) and
the two callables it is given: ``emit`` (a session event out) and ``end_input`` (the run is over).
A fatal model failure is kept here (:attr:`EventBridge.fatal_error`) for the session to read.

Loop detection (§2.10): the calls of each reply that runs tools are recorded in the
:class:`~phi.coding.loop_detection.LoopDetector`; a warning goes into the steering queue as soon as
the last of those calls has ended — before the core reads the queue after the batch — so the model
sees it, as a user message, in its very next request.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Callable, Protocol

from ..events import (
    AgentEnd,
    AgentEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ProgressMessage,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
)
from ..json_values import is_object
from ..log import get_logger
from ..providers.base import ErrorKind, is_context_overflow
from ..types import (
    AgentMessage,
    AssistantMessage,
    ExtensionMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from .config import SessionConfig
from .events import EventKind
from .history import AssistantTurn, SteeringTurn, SystemTurn, ToolResultsTurn, Turn, UserTurn
from .loop_detection import LoopDetector
from .pipeline import full_output, full_output_path, text_of
from .provider_options import SessionProvider
from .tracking import MessageTags

if TYPE_CHECKING:
    from ..agent.agent import Agent
    from .profiles import ProviderProfile

log = get_logger(__name__)

FATAL_ERRORS = (ErrorKind.AUTH, ErrorKind.CONTEXT_OVERFLOW)
CONTEXT_WARNING_RATIO = 0.8


def message_chars(message: AgentMessage) -> int:
    """Characters of a message's text, reasoning and tool-call arguments (the §5.5 estimate's input)."""
    if isinstance(message, ExtensionMessage):  # never sent to a model
        return 0
    total = 0
    for block in message.content:
        if isinstance(block, TextContent):
            total += len(block.text)
        elif isinstance(block, ThinkingContent):
            total += len(block.thinking)
        elif isinstance(block, ToolCall):
            total += len(block.name) + len(json.dumps(block.arguments, ensure_ascii=False))
    return total


class BridgeHost(Protocol):
    """What the bridge reads and updates of its session (a :class:`~phi.coding.session.Session` is one)."""

    model_calls: int  # one more at the end of every reply (max_turns counts these)
    rounds: int  # one more at the end of every turn that ran tools (max_tool_rounds_per_input)

    @property
    def history(self) -> list[Turn]:
        """The session's record of the conversation, which the bridge appends to."""
        ...

    @property
    def config(self) -> SessionConfig:
        """The settings of loop detection."""
        ...

    @property
    def profile(self) -> ProviderProfile:
        """The context window the usage warning is measured against."""
        ...

    @property
    def system_prompt(self) -> str:
        """The current system prompt (part of the context estimate)."""
        ...

    @property
    def agent(self) -> Agent:
        """The core agent, whose steering queue takes the loop warnings."""
        ...


#: ``emit(kind, data)``: deliver a session event of ``kind`` carrying ``data``.
Emit = Callable[[EventKind, dict[str, object]], None]


class EventBridge:
    """The sink of a session's runs. Everything here happens on the run's thread.

    ``tags`` are the session's record of the messages it queued; ``provider`` the session's model
    provider, which knows the kind of the last failure."""

    def __init__(self, session: BridgeHost, *, emit: Emit, end_input: Callable[[AgentEnd], None], tags: MessageTags,
                 provider: SessionProvider) -> None:
        self.session = session
        self._emit, self._end_input = emit, end_input
        self._tags, self._provider = tags, provider
        self.run_thread: int | None = None
        self.fatal_error: str | None = None  # why a model failure ends the session (authentication, context)
        self._detector: LoopDetector | None = None
        self.context_chars = 0
        self._context_warned = False
        self._outstanding: set[str] = set()  # calls of the current reply that have not ended
        self._pending_warning: str | None = None
        self._partials: dict[str, str] = {}  # call id -> text of its last update

    def __call__(self, event: AgentEvent) -> None:
        # the commonest events first; each test narrows ``event`` to the handler's type
        if event.type == "MessageUpdate":
            self._message_update(event)
        elif event.type == "ToolExecutionUpdate":
            self._tool_update(event)
        elif event.type == "ProgressMessage":
            self._progress(event)
        elif event.type == "MessageStart":
            self._message_start(event)
        elif event.type == "MessageEnd":
            self._message_end(event)
        elif event.type == "ToolExecutionStart":
            self._tool_start(event)
        elif event.type == "ToolExecutionEnd":
            self._tool_end(event)
        elif event.type == "TurnEnd":
            self._turn_end(event)
        elif event.type == "AgentStart":
            self.run_thread = threading.get_ident()
        elif event.type == "AgentEnd":
            self._agent_end(event)

    def emit(self, event_kind: EventKind, /, **data: object) -> None:
        self._emit(event_kind, data)

    # ----------------------------------------------------------------- messages

    def _message_start(self, event: MessageStart) -> None:
        message = event.message
        if isinstance(message, AssistantMessage):
            self.emit(EventKind.ASSISTANT_TEXT_START)
            return
        if not isinstance(message, UserMessage):
            return
        tag = self._tags.untag(message)
        text = message.text
        history = self.session.history
        if tag in ("input", "follow_up"):
            history.append(UserTurn(text))
            if tag == "follow_up":
                self.emit(EventKind.USER_INPUT, content=text, follow_up=True)
            else:
                self.emit(EventKind.USER_INPUT, content=text)
        elif tag == "steering":
            history.append(SteeringTurn(text))
            self.emit(EventKind.STEERING_INJECTED, content=text)
        elif tag == "loop_warning":
            history.append(SteeringTurn(text))
            self.emit(EventKind.LOOP_DETECTION, message=text)
        else:  # a message the core itself added (e.g. an execution-limit notice)
            history.append(SystemTurn(text))

    def _message_update(self, event: MessageUpdate) -> None:
        delta = event.delta
        if delta.kind == "text" and delta.delta:
            self.emit(EventKind.ASSISTANT_TEXT_DELTA, delta=delta.delta)

    def _message_end(self, event: MessageEnd) -> None:
        message = event.message
        self.context_chars += message_chars(message)
        if not isinstance(message, AssistantMessage):
            return
        session = self.session
        session.model_calls += 1
        reasoning = "".join(b.thinking for b in message.content if isinstance(b, ThinkingContent)) or None
        calls = message.tool_calls
        session.history.append(AssistantTurn(message.text, calls, reasoning, message.usage,
                                             stop_reason=message.stop_reason.value))
        self.emit(EventKind.ASSISTANT_TEXT_END, text=message.text, reasoning=reasoning,
                  tool_calls=[{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
                  stop_reason=message.stop_reason.value, usage=message.usage.to_json())
        if message.stop_reason == StopReason.ERROR:
            self._failed(message.error_message or "the model call failed")
        elif message.stop_reason == StopReason.TOOL_USE and calls:
            self._record_calls(calls)

    def _failed(self, text: str) -> None:
        kind = self._provider.last_error_kind
        if kind is None and is_context_overflow(None, text):
            kind = ErrorKind.CONTEXT_OVERFLOW
        fatal = kind in FATAL_ERRORS
        if fatal:
            self.fatal_error = text
        if kind == ErrorKind.CONTEXT_OVERFLOW:  # seed 004 Appendix B: a warning, no automatic compaction
            self.emit(EventKind.WARNING, message="The conversation no longer fits the model's context window; this "
                                                 "session ends. Compact the conversation and continue it in a new "
                                                 "session (the phi command does this itself).",
                      context_window=self.session.profile.context_window_size)
        self.emit(EventKind.ERROR, message=text, kind=kind.value if kind is not None else "api", fatal=fatal)

    # ----------------------------------------------------------------- loop detection (§2.10)

    def _loop_detector(self) -> LoopDetector | None:
        """The detector for the current settings (they may change between inputs), or None when off."""
        config = self.session.config
        if not config.enable_loop_detection:
            return None
        window = config.loop_detection_window
        if self._detector is None or self._detector.window != window:
            self._detector = LoopDetector(window)
        return self._detector

    def _record_calls(self, calls: list[ToolCall]) -> None:
        detector = self._loop_detector()
        if detector is None:
            return
        self._outstanding = {call.id for call in calls}
        for call in calls:
            warning = detector.record(call.name, call.arguments)
            if warning is not None and self._pending_warning is None:
                self._pending_warning = warning
        if self._pending_warning is not None:
            detector.reset()  # the next warning needs a whole new window of repetition

    def _deliver_warning(self) -> None:
        warning, self._pending_warning = self._pending_warning, None
        if warning is not None:
            # straight to the queue, without the session's closed check: the run's own warning may
            # still arrive while an abort winds the run down
            message = UserMessage.from_text(warning)
            self._tags.tag(message, "loop_warning")
            self.session.agent.steer(message)

    # ----------------------------------------------------------------- tools

    def _tool_start(self, event: ToolExecutionStart) -> None:
        self.emit(EventKind.TOOL_CALL_START, call_id=event.tool_call_id, tool_name=event.tool_name,
                  arguments=event.args)

    def _tool_update(self, event: ToolExecutionUpdate) -> None:
        partial = event.partial_result
        text = text_of(partial)
        if is_object(partial.details) and partial.details.get("output_delta"):
            delta = text
        else:  # a tool that reports its output so far: send what is new
            before = self._partials.get(event.tool_call_id, "")
            delta = text[len(before):] if text.startswith(before) else text
            self._partials[event.tool_call_id] = text
        if delta:
            self.emit(EventKind.TOOL_CALL_OUTPUT_DELTA, call_id=event.tool_call_id, tool_name=event.tool_name,
                      delta=delta)

    def _progress(self, event: ProgressMessage) -> None:
        self.emit(EventKind.TOOL_CALL_OUTPUT_DELTA, call_id=event.tool_call_id, tool_name=event.tool_name,
                  progress=event.text)

    def _tool_end(self, event: ToolExecutionEnd) -> None:
        self._partials.pop(event.tool_call_id, None)
        result = event.result
        shown = text_of(result)
        output = full_output(result)
        data: dict[str, object] = {"call_id": event.tool_call_id, "tool_name": event.tool_name,
                                   "is_error": event.is_error, "output": output, "truncated": output != shown}
        path = full_output_path(result)
        if path is not None:  # too large to carry: the whole output is in this file (SPEC §9.2)
            data["output_path"] = path
            data["truncated"] = True
        if event.is_error:
            data["error"] = shown
        if data["truncated"]:
            data["model_output"] = shown
        self.emit(EventKind.TOOL_CALL_END, **data)
        self._outstanding.discard(event.tool_call_id)
        if not self._outstanding:
            self._deliver_warning()

    # ----------------------------------------------------------------- turns and the end

    def _turn_end(self, event: TurnEnd) -> None:
        session = self.session
        reply = event.message
        if event.tool_results:
            session.history.append(ToolResultsTurn(list(event.tool_results)))
        if isinstance(reply, AssistantMessage) and reply.stop_reason == StopReason.TOOL_USE and reply.tool_calls:
            session.rounds += 1
        self._outstanding = set()
        self._deliver_warning()  # calls skipped for steering never ended: deliver it now
        self._check_context()

    def _check_context(self) -> None:
        window = self.session.profile.context_window_size
        approx = (self.context_chars + len(self.session.system_prompt)) // 4
        if window and approx > window * CONTEXT_WARNING_RATIO and not self._context_warned:
            self._context_warned = True
            self.emit(EventKind.WARNING, message=f"Context usage at ~{round(approx / window * 100)}% of the "
                                                 "context window", approx_tokens=approx, context_window=window)

    def _agent_end(self, event: AgentEnd) -> None:
        self._outstanding = set()
        self._pending_warning = None
        self._partials.clear()
        self._end_input(event)


__all__ = ["EventBridge", "BridgeHost", "message_chars"]
