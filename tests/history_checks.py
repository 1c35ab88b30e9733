"""Checks on a conversation shared by the tests of the run contract (SPEC LOOP-5, TOOL-5)."""

from __future__ import annotations

from phi.types import AssistantMessage, ExtensionMessage, StopReason, ToolResultMessage


def assert_valid_conversation(messages: list) -> None:
    """Every tool call of a reply that did not fail is answered by one result, in call order, before
    anything else follows; no result answers a call that is not waiting for one."""
    waiting: list[str] = []
    for i, message in enumerate(messages):
        if isinstance(message, ExtensionMessage):
            continue
        if isinstance(message, ToolResultMessage):
            assert waiting and waiting[0] == message.tool_call_id, \
                f"messages[{i}] answers {message.tool_call_id!r}, but the next unanswered call is {waiting[:1]}"
            waiting.pop(0)
            continue
        assert not waiting, f"messages[{i}] ({message.role}) comes before the results of {waiting}"
        if isinstance(message, AssistantMessage) and message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
            waiting = [c.id for c in message.tool_calls]
    assert not waiting, f"tool calls {waiting} were never answered"
