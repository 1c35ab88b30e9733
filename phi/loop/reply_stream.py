"""From a provider's stream to MessageStart / MessageUpdate / MessageEnd (SPEC EVT-6, EVT-7, ERR-2).

:class:`ReplyStream` receives the :class:`~phi.providers.base.StreamEvent` s of one model call and
emits the message events:

- ``MessageStart`` is held back until the first delta, so that a failed attempt that showed nothing
  can be retried without the consumer ever seeing it (ERR-2). It carries the message as it was
  before that delta.
- One ``MessageUpdate`` per delta. The updates of one content block share an
  :class:`~phi.events.UpdateSegment` and keep only their own delta, so a long reply costs time and
  memory in proportion to its size, not to its size squared.
- ``MessageEnd`` with the final message (or the failure built by :meth:`ReplyStream.failed`).

An exception raised by the sink (a subscriber, a user callback) is remembered in ``sink_error`` so
the loop can re-raise it unchanged even if the provider catches or wraps it (LOOP-5).
"""

from __future__ import annotations

from typing import Any, Callable

from ..events import MessageEnd, MessageStart, MessageUpdate, StreamDelta, UpdateSegment
from ..providers.base import ErrorKind, ProviderError, StreamEvent, StreamEventKind
from ..types import AssistantMessage, StopReason, Usage

_DELTA_KINDS = {
    StreamEventKind.TEXT_DELTA: "text",
    StreamEventKind.THINKING_DELTA: "thinking",
    StreamEventKind.TOOLCALL_DELTA: "toolCall",
}


class ReplyStream:
    """The message events of one model call (one attempt)."""

    __slots__ = ("emit", "loop_id", "visible", "sink_error", "_before", "_last", "_segment", "_previous")

    def __init__(self, emit: Callable[[Any], None], loop_id: str) -> None:
        self.emit = emit
        self.loop_id = loop_id
        self.visible = False  # MessageStart has been emitted
        self.sink_error: BaseException | None = None
        self._before: AssistantMessage | None = None  # the message before its first delta
        self._last: StreamEvent | None = None
        self._segment: UpdateSegment | None = None
        self._previous: MessageUpdate | None = None  # the segment's newest update

    def on_event(self, event: StreamEvent) -> None:
        """The provider's callback."""
        try:
            self._on_event(event)
        except BaseException as error:
            self.sink_error = error
            raise

    def _on_event(self, event: StreamEvent) -> None:
        self._last = event
        kind = _DELTA_KINDS.get(event.kind)
        if kind is None:  # start, toolcall_start/end, done, error: the block structure may change
            if not self.visible:
                self._before = event.partial
            self._segment = None
            return
        if not self.visible:
            self.visible = True
            self.emit(MessageStart(self.loop_id, self._before if self._before is not None else event.partial))
        segment = self._segment
        if segment is None or segment.index != event.index or segment.kind != kind:
            segment = self._segment = UpdateSegment.start(self.loop_id, kind, event.index, event.partial, event.delta)
            self._previous = None
            if segment is None:  # a provider whose snapshots cannot be shared: keep each one
                self.emit(MessageUpdate(self.loop_id, event.partial, StreamDelta(kind, event.delta, event.index)))
                return
        update = MessageUpdate.chained(segment, event.delta, self._previous)
        self._previous = update
        self.emit(update)

    @property
    def partial(self) -> AssistantMessage | None:
        """The message as far as it arrived (None if nothing did)."""
        return self._last.partial if self._last is not None else None

    def failed(self, reply: AssistantMessage | None, failure: ProviderError | None, cancelled: bool,
               model: str, provider: str) -> AssistantMessage:
        """The reply of a failed or aborted call: the content that became visible (none if no delta
        did, SPEC ERR-3), and the reason."""
        base = reply or (self.partial if self.visible else None)
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
            base.model if base is not None and base.model else model,
            base.provider if base is not None and base.provider else provider,
            base.usage if base is not None else Usage(),
            error_message=text,
        )

    def end(self, reply: AssistantMessage) -> None:
        if not self.visible:
            self.visible = True
            self.emit(MessageStart(self.loop_id, reply))
        self.emit(MessageEnd(self.loop_id, reply))
