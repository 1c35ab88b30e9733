"""The model's view of the history is extended turn by turn (issue 11 item 3); it must always equal
the view built from scratch (SPEC LOOP-12), through compaction, failed replies and extension
messages, and requests already sent must not change afterwards."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from loop_helpers import call, run, text_tool, tool_turn

from phi.context.config import ContextConfig
from phi.loop import LLMView, agent_loop_continue, default_convert_to_llm
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.providers.mock import ScriptedProvider
from phi.types import AssistantMessage, ExtensionMessage, StopReason, TextContent, UserMessage

REPLIES = {
    "text": lambda i: {"blocks": [{"type": "text", "chunks": [f"answer {i} " * 20]}]},
    "tool": lambda i: tool_turn(call(f"c{i}", "t"), text=f"calling {i} " * 10),
    "two_tools": lambda i: tool_turn(call(f"a{i}", "t"), call(f"b{i}", "t")),
}


def checked(context: AgentContext, reply: dict, seen: list) -> object:
    def respond(config):
        assert config.messages == default_convert_to_llm(context.messages)
        seen.append((config.messages, list(config.messages)))
        return reply
    return respond


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(REPLIES)), min_size=1, max_size=12), st.booleans())
def test_every_request_equals_the_view_built_from_scratch(kinds, compact):
    context = AgentContext(messages=[UserMessage.from_text("earlier"), ExtensionMessage("ui", {"x": 1}),
                                     AssistantMessage([TextContent("old")], StopReason.ERROR)],
                           tools=[text_tool("t")])
    seen: list = []
    script = [checked(context, REPLIES[kind](i), seen) for i, kind in enumerate(kinds)]
    script.append(checked(context, {"blocks": [{"type": "text", "chunks": ["done"]}]}, seen))
    settings_ = {"context_config": ContextConfig(max_context_tokens=400, system_prompt_tokens=0, keep_recent=4)} \
        if compact else {}
    out = run(script, context=context, **settings_)
    assert len(seen) == len(out.replies)  # every request was checked
    for sent, copy in seen:  # what a request carried is not changed by later turns
        assert sent == copy


def test_a_continued_run_starts_a_fresh_view():
    provider = ScriptedProvider(["one", "two"])
    context = AgentContext(messages=[UserMessage.from_text("q")], agent_id="a", session_id="s")
    config = AgentLoopConfig(provider=provider)
    agent_loop_continue(context, config, lambda e: None)
    context.messages.append(UserMessage.from_text("again"))
    agent_loop_continue(context, config, lambda e: None)
    assert [m.text for m in provider.calls[1].messages] == ["q", "one", "again"]


def test_the_view_rebuilds_when_the_history_is_not_what_it_converted():
    view = LLMView()
    history = [UserMessage.from_text("a"), AssistantMessage([TextContent("b")])]
    assert [m.text for m in view.of(history)] == ["a", "b"]
    history.append(UserMessage.from_text("c"))
    assert [m.text for m in view.of(history)] == ["a", "b", "c"]
    history[1] = AssistantMessage([TextContent("B")])  # the converted part changed...
    history[2] = UserMessage.from_text("C")  # ...including the last message it knew
    assert [m.text for m in view.of(history)] == ["a", "B", "C"]
    other = [UserMessage.from_text("x")]
    assert [m.text for m in view.of(other)] == ["x"]
    view.reset()
    assert [m.text for m in view.of(history)] == ["a", "B", "C"]
