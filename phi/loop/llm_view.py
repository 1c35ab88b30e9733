"""What the model is shown of the history (SPEC LOOP-11, LOOP-12).

:func:`default_convert_to_llm` is the default ``convert_to_llm``: extension messages are dropped and
tool calls are stripped from replies that failed or were aborted, so the history a provider gets is
always a valid conversation. :class:`LLMView` applies it incrementally within one run.
"""

from __future__ import annotations

from dataclasses import replace

from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    ExtensionMessage,
    Message,
    StopReason,
    ToolCall,
)

FAILED_STOPS = (StopReason.ERROR, StopReason.ABORTED)


def default_convert_to_llm(messages: list[AgentMessage]) -> list[Message]:
    """SPEC LOOP-12: drop extension messages; strip tool calls from error/aborted replies (and drop
    such a reply if nothing is left), so the history is always a valid conversation."""
    out: list[Message] = []
    keep = out.append
    for message in messages:  # runs before every model call: kept to plain isinstance checks
        if isinstance(message, ExtensionMessage):
            continue
        if isinstance(message, AssistantMessage) and message.stop_reason in FAILED_STOPS:
            kept: list[Content] = [b for b in message.content if not isinstance(b, ToolCall)]
            if not kept:
                continue
            if len(kept) != len(message.content):
                message = replace(message, content=kept)
        keep(message)
    return out


class LLMView:
    """The default model view of one run's history (LOOP-12), extended instead of rebuilt.

    A run only appends to its history, and announced messages are never changed, so the view of the
    first k messages stays valid while those k messages are the same objects: each request converts
    only what was appended since the last one. When the history is replaced (compaction) the loop
    calls :meth:`reset`; a history that no longer starts with what was converted is rebuilt whole.
    """

    __slots__ = ("_source", "_count", "_last", "_view")

    def __init__(self) -> None:
        self._source: list[AgentMessage] | None = None
        self._count = 0
        self._last: AgentMessage | None = None
        self._view: list[Message] = []

    def reset(self) -> None:
        self._source, self._count, self._last, self._view = None, 0, None, []

    def of(self, messages: list[AgentMessage]) -> list[Message]:
        """The model's view of ``messages`` (a new list each time: providers may keep it)."""
        count, done = len(messages), self._count
        if messages is self._source and done <= count and (done == 0 or messages[done - 1] is self._last):
            if done < count:
                self._view.extend(default_convert_to_llm(messages[done:]))
        else:
            self._view = default_convert_to_llm(messages)
        self._source, self._count, self._last = messages, count, messages[-1] if count else None
        return self._view[:]
