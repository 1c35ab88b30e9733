"""Loop ids, triggered_by and agent_loop_continue (seed 000 REQ-187–193, DESIGN §5)."""

from __future__ import annotations

import uuid

import pytest
from loop_helpers import run

from phi.errors import InvalidContinue
from phi.loop import agent_loop_continue, config_segment
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.providers.mock import ScriptedProvider
from phi.providers.model_config import ModelConfig
from phi.types import (
    AssistantMessage,
    ContinuationKind,
    ExtensionMessage,
    ThinkingLevel,
    ToolResultMessage,
    TurnTrigger,
    UserMessage,
)


def _session_context(**fields):
    return AgentContext(messages=[], session_id=f"s-{uuid.uuid4().hex[:8]}", **fields)


def test_ids_are_generated_and_written_back():
    out = run(["ok"])
    ctx = out.context
    assert ctx.agent_id and ctx.session_id
    assert ctx.loop_id == f"{ctx.session_id}.mock.mock-model.1"
    start = out.of("AgentStart")[0]
    assert (start.agent_id, start.session_id, start.loop_id) == (ctx.agent_id, ctx.session_id, ctx.loop_id)
    assert start.parent_loop_id is None and start.continuation_kind is None
    assert all(e.loop_id == ctx.loop_id for e in out.events)


def test_loop_numbers_count_per_session_and_config():
    ctx1 = _session_context()
    first = run(["a"], context=ctx1)
    ctx2 = AgentContext(messages=[], session_id=ctx1.session_id)
    second = run(["b"], context=ctx2)
    ctx3 = AgentContext(messages=[], session_id=ctx1.session_id)
    other = run(["c"], context=ctx3, config_id="my-config")
    sid = ctx1.session_id
    assert first.context.loop_id == f"{sid}.mock.mock-model.1"
    assert second.context.loop_id == f"{sid}.mock.mock-model.2"
    assert other.context.loop_id == f"{sid}.my-config.1"


def test_config_segment_derivation():
    provider = ScriptedProvider(provider_id="acme")
    config = AgentLoopConfig(model_config=ModelConfig(id="gpt-4o.mini/2024_08"), provider=provider)
    assert config_segment(config) == "acme.gpt-4o-mini-2024-08"
    config.thinking_level = ThinkingLevel.HIGH
    assert config_segment(config) == "acme.gpt-4o-mini-2024-08.thinking"
    config.config_id = "verbatim.id"
    assert config_segment(config) == "verbatim.id"
    no_provider = AgentLoopConfig(model_config=ModelConfig(id="claude-3.5", provider="anthropic"))
    assert config_segment(no_provider) == "anthropic.claude-3-5"


def test_a_preset_loop_id_is_kept():
    ctx = _session_context(loop_id="given.loop.7", parent_loop_id="parent.loop.1")
    out = run(["ok"], context=ctx)
    start = out.of("AgentStart")[0]
    assert start.loop_id == "given.loop.7" and start.parent_loop_id == "parent.loop.1"


def test_before_loop_receives_the_loop_index():
    ctx = _session_context(loop_id="x.y.3")
    seen = []
    run(["ok"], context=ctx, before_loop=lambda messages, index: seen.append(index))
    assert seen == [2]


def test_first_turn_trigger_from_config_then_continuation():
    from loop_helpers import call, text_tool, tool_turn

    out = run([tool_turn(call("t1", "echo")), "ok"], [text_tool("echo")], first_turn_trigger=TurnTrigger.SUB_AGENT)
    assert [e.triggered_by for e in out.of("TurnStart")] == [TurnTrigger.SUB_AGENT, TurnTrigger.CONTINUATION]
    assert [e.turn_index for e in out.of("TurnStart")] == [0, 1]


# --------------------------------------------------------------------------- agent_loop_continue


def _continuable(kind=None, **fields):
    return AgentContext(messages=[UserMessage.from_text("resume me")], agent_id="agent-1",
                        session_id=f"s-{uuid.uuid4().hex[:8]}", continuation_kind=kind, **fields)


@pytest.mark.parametrize("context,needle", [
    (AgentContext(messages=[UserMessage.from_text("x")], session_id="s"), "agent_id"),
    (AgentContext(messages=[UserMessage.from_text("x")], agent_id="a"), "session_id"),
    (AgentContext(messages=[], agent_id="a", session_id="s"), "no messages"),
    (AgentContext(messages=[ExtensionMessage("note")], agent_id="a", session_id="s"), "no messages"),
    (AgentContext(messages=[UserMessage.from_text("x"), AssistantMessage()], agent_id="a", session_id="s"), "assistant"),
    (AgentContext(messages=[UserMessage.from_text("x"), AssistantMessage(), ExtensionMessage("n")], agent_id="a",
                  session_id="s"), "assistant"),
])
def test_continue_preconditions_raise_invalid_continue(context, needle):
    provider = ScriptedProvider(["never"])
    events = []
    with pytest.raises(InvalidContinue, match=needle):
        agent_loop_continue(context, AgentLoopConfig(provider=provider), events.append)
    assert events == [] and provider.calls == []
    assert context.agent_id is None or context.agent_id == "a"  # nothing generated


def test_default_continuation():
    ctx = _continuable()
    out = run(["ok"], context=ctx, continue_=True)
    start = out.of("AgentStart")[0]
    assert start.continuation_kind == ContinuationKind.default()
    assert start.agent_id == "agent-1"
    assert [e.triggered_by for e in out.of("TurnStart")] == [TurnTrigger.CONTINUATION]
    assert [type(m) for m in out.messages] == [AssistantMessage]  # no prompt is re-announced
    assert [m.role for m in out.provider.calls[0].messages] == ["user"]


def test_branch_continuation_triggers_branch_then_continuation():
    from loop_helpers import call, text_tool, tool_turn

    ctx = _continuable(ContinuationKind.branch("b1"), tools=[text_tool("echo")])
    out = run([tool_turn(call("t1", "echo")), "ok"], context=ctx, continue_=True)
    assert [e.triggered_by for e in out.of("TurnStart")] == [TurnTrigger.BRANCH, TurnTrigger.CONTINUATION]
    assert out.of("AgentStart")[0].continuation_kind == ContinuationKind("branch", "b1")


def test_continue_from_tool_results():
    ctx = _continuable()
    ctx.messages = [UserMessage.from_text("q"), AssistantMessage([], model="m"),
                    ToolResultMessage("t1", "echo", [])]
    out = run(["ok"], context=ctx, continue_=True)
    assert out.messages[-1].text == "ok"
