"""What each provider call receives (DESIGN §5, SPEC LOOP-11/12) and the usage total."""

from __future__ import annotations

import uuid

from loop_helpers import call, run, text_tool, tool_turn

from phi.concurrency.cancel import CancellationToken
from phi.loop import default_convert_to_llm
from phi.loop.config import AgentContext
from phi.providers.mock import ScriptedProvider
from phi.concurrency.queues import MessageQueue
from phi.types import (
    AssistantMessage,
    ExtensionMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


class LoggingProvider(ScriptedProvider):
    def __init__(self, script, log):
        super().__init__(script)
        self.log = log

    def stream(self, config, on_event, cancel):
        self.log.append("provider")
        return super().stream(config, on_event, cancel)


def test_transform_convert_and_api_key_run_in_order_before_each_call():
    log: list[str] = []
    marker = UserMessage.from_text("added by transform")
    converted_views = []

    def transform(messages):
        log.append("transform")
        return [*messages, marker]

    def convert(messages):
        log.append("convert")
        assert messages[-1] is marker
        view = [m for m in messages if not isinstance(m, ExtensionMessage)]
        converted_views.append(view)
        return view

    keys = iter(["key-1", "key-2"])

    def get_api_key(provider):
        log.append(f"key:{provider}")
        return next(keys)

    provider = LoggingProvider([tool_turn(call("t1", "echo")), "ok"], log)
    out = run(provider=provider, tools=[text_tool("echo")], transform_context=transform, convert_to_llm=convert,
              get_api_key=get_api_key)
    assert log == ["transform", "convert", "key:mock", "provider"] * 2
    assert [c.api_key for c in provider.calls] == ["key-1", "key-2"]
    for sent, view in zip(provider.calls, converted_views):
        assert sent.messages == view
    # transform only changes the request, never the stored context
    assert marker not in out.context.messages
    assert [t.name for t in provider.calls[0].tools] == ["echo"]


def test_system_prompt_and_settings_reach_the_provider():
    ctx = AgentContext(system_prompt="be brief", messages=[])
    out = run(["ok"], context=ctx, max_tokens=123, temperature=0.5)
    sent = out.provider.calls[0]
    assert (sent.system_prompt, sent.max_tokens, sent.temperature) == ("be brief", 123, 0.5)


def test_default_convert_to_llm_strips_tool_calls_from_error_and_aborted_replies():
    user = UserMessage.from_text("q")
    errored = AssistantMessage([TextContent("partial"), ToolCall("t1", "echo", {})], StopReason.ERROR)
    aborted_only_call = AssistantMessage([ToolCall("t2", "echo", {})], StopReason.ABORTED)
    good = AssistantMessage([TextContent("fine"), ToolCall("t3", "echo", {})], StopReason.TOOL_USE)
    result = ToolResultMessage("t3", "echo", [TextContent("r")])
    extension = ExtensionMessage("ui-note", {"x": 1})
    converted = default_convert_to_llm([user, extension, errored, aborted_only_call, good, result])
    assert converted[0] is user
    assert converted[1].content == [TextContent("partial")] and converted[1].stop_reason == StopReason.ERROR
    assert errored.content[1] == ToolCall("t1", "echo", {})  # the stored message is not mutated
    assert converted[2] is good and converted[3] is result
    assert len(converted) == 4


def test_aborted_tool_call_never_reaches_the_next_request():
    cancel = CancellationToken()

    def sink(event):
        if event.type == "MessageUpdate" and event.delta.kind == "toolCall":
            cancel.cancel()

    script = [{"blocks": [{"type": "text", "chunks": ["let me"]},
                          {"type": "toolCall", "id": "t1", "name": "echo", "chunks": ['{"a"', ': 1}']}]}]
    first = run(script, [text_tool("echo")], cancel=cancel, sink=sink)
    aborted = first.replies[-1]
    assert aborted.stop_reason == StopReason.ABORTED
    ctx = first.context
    ctx.messages.append(UserMessage.from_text("go on"))
    second = run(["continued"], context=ctx, continue_=True)
    sent = second.provider.calls[0].messages
    assert not any(isinstance(b, ToolCall) for m in sent for b in getattr(m, "content", []))
    assert [m.role for m in sent] == ["user", "assistant", "user"]


def test_extension_messages_never_reach_the_provider():
    steering = MessageQueue()
    steering.push(ExtensionMessage("app-state", {"cursor": 3}))
    ctx = AgentContext(messages=[ExtensionMessage("history-note")], session_id=f"s-{uuid.uuid4().hex}")
    out = run([tool_turn(call("t1", "echo")), "ok"], [text_tool("echo")], context=ctx,
              prompts=["hi", ExtensionMessage("prompt-note")], get_steering_messages=steering.drain)
    for sent in out.provider.calls:
        assert not any(isinstance(m, ExtensionMessage) for m in sent.messages)
    # ... but they are in the history and were announced
    kinds = [m.kind for m in out.context.messages if isinstance(m, ExtensionMessage)]
    assert kinds == ["history-note", "prompt-note", "app-state"]


def test_usage_is_summed_in_agent_end():
    script = [tool_turn(call("t1", "echo"), usage={"input": 10, "output": 5, "cache_read": 2, "total_tokens": 17}),
              tool_turn(call("t2", "echo"), usage={"input": 20, "output": 1, "reasoning": 4, "total_tokens": 21}),
              {"blocks": [{"type": "text", "chunks": ["done"]}], "usage": {"input": 1, "output": 1, "cache_write": 9}}]
    out = run(script, [text_tool("echo")])
    assert out.end.usage == Usage(input=31, output=7, reasoning=4, cache_read=2, cache_write=9, total_tokens=38)
    assert [e.usage.input for e in out.of("TurnEnd")] == [10, 20, 1]
    assert out.end.messages == out.messages
