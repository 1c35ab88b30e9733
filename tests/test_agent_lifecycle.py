"""The Agent's state around a run, and its blocking API (SPEC AGENT-1..4, EVT-9; issue 9 items 4, 5).
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from history_checks import assert_valid_conversation

from phi import (
    Agent,
    ExecutionLimits,
    FilterResult,
    FunctionTool,
    ModelConfig,
    ScriptedProvider,
)
from phi.errors import AlreadyRunning, ConfigError
from phi.events import AgentEnd
from phi.types import RunOutcome, StopReason, ToolCall, ToolResultMessage, UserMessage

pytestmark = pytest.mark.usefixtures("blocking_run_path")  # the run contract on both paths (issue 36)


def tool_call(call_id: str = "t1", name: str = "work", arguments: dict | None = None) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments or {}}]}


# --------------------------------------------------------------------------- AGENT-1: settled first


def test_on_agent_end_the_history_is_merged_and_the_agent_idle():
    agent = Agent(provider=ScriptedProvider(["one", "two"]))
    seen = {}

    def on_end(event):
        if isinstance(event, AgentEnd) and "first" not in seen:
            seen["first"] = (agent.is_streaming, [m.role for m in agent.messages])
            seen["stream"] = agent.prompt("second")  # must not raise AlreadyRunning

    agent.subscribe(on_end)
    agent.run("first")
    assert seen["first"] == (False, ["user", "assistant"])
    assert seen["stream"].result(timeout=5).text == "two"
    assert [m.text for m in agent.messages] == ["first", "one", "second", "two"]


def test_after_loop_sees_the_settled_agent():
    holder = {}

    def after_loop(messages, usage):
        holder["state"] = (holder["agent"].is_streaming, len(holder["agent"].messages))

    agent = Agent(provider=ScriptedProvider(["one"]), after_loop=after_loop)
    holder["agent"] = agent
    agent.run("hi")
    assert holder["state"] == (False, 2)


def test_restore_messages_during_a_run_is_refused_and_nothing_is_undone():
    release = threading.Event()
    tool = FunctionTool("work", "waits", {"type": "object"}, lambda a, c: release.wait(5) and "done")
    agent = Agent(provider=ScriptedProvider([tool_call(), "after"]), tools=[tool])
    saved = Agent(provider=ScriptedProvider(["x"]))
    saved.run("saved")
    stream = agent.prompt("hi")
    while not agent.is_streaming:
        time.sleep(0.001)
    with pytest.raises(AlreadyRunning):
        agent.restore_messages(saved.save_messages())
    with pytest.raises(AlreadyRunning):
        agent.messages = []
    release.set()
    stream.result(timeout=5)
    agent.restore_messages(saved.save_messages())
    assert [m.text for m in agent.messages] == ["saved", "x"]


def test_reset_during_a_run_takes_effect_and_is_not_undone_by_the_run():
    started = threading.Event()

    def work(args, ctx):
        started.set()
        ctx.cancel.wait(5)
        return "stopped"

    agent = Agent(provider=ScriptedProvider([tool_call(), "after"]),
                  tools=[FunctionTool("work", "waits", {"type": "object"}, work)])
    agent.run("before")  # some history to forget ("before" + tool call + ...)
    agent.config.provider = ScriptedProvider([tool_call(), "after"])
    stream = agent.prompt("during")
    assert started.wait(5)
    agent.steer("queued")
    agent.reset()
    assert agent.messages == [] and not agent.steering_queue and not agent.follow_up_queue
    stream.result(timeout=5)
    assert agent.messages == [] and not agent.is_streaming


def test_reset_from_a_subscriber_does_not_wait_for_its_own_run():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["a", "b"]}]}]))
    agent.subscribe(lambda e: agent.reset() if e.type == "MessageUpdate" else None)
    started = time.monotonic()
    result = agent.run("hi", timeout=5)
    assert time.monotonic() - started < 2
    assert result.outcome == RunOutcome.ABORTED and agent.messages == []


# --------------------------------------------------------------------------- AGENT-2: one result


def test_run_and_prompt_result_give_the_same_result():
    a = Agent(provider=ScriptedProvider([tool_call(), {"blocks": [{"type": "text", "chunks": ["done"]}],
                                                       "usage": {"input": 2, "output": 3}}]),
              tools=[FunctionTool("work", "w", {"type": "object"}, lambda a, c: "ok")])
    b = Agent(provider=ScriptedProvider([tool_call(), {"blocks": [{"type": "text", "chunks": ["done"]}],
                                                       "usage": {"input": 2, "output": 3}}]),
              tools=[FunctionTool("work", "w", {"type": "object"}, lambda a, c: "ok")])
    ran = a.run("hi")
    streamed = b.prompt("hi").result(timeout=5)
    for result in (ran, streamed):
        assert result.outcome == RunOutcome.COMPLETED and result.stop_reason == StopReason.STOP
        assert result.text == "done" and result.usage.output == 3 and not result.timed_out
    assert [m.role for m in ran.messages] == [m.role for m in streamed.messages]


@pytest.mark.parametrize("case,outcome", [
    ("completed", RunOutcome.COMPLETED), ("aborted", RunOutcome.ABORTED), ("error", RunOutcome.ERROR),
    ("limit", RunOutcome.LIMIT), ("rejected", RunOutcome.REJECTED), ("vetoed_loop", RunOutcome.VETOED),
    ("vetoed_turn", RunOutcome.VETOED)])
def test_the_result_says_why_the_run_ended(case, outcome):
    settings: dict = {}
    script: list = ["fine"]
    if case == "aborted":
        script = [{"blocks": [{"type": "text", "chunks": ["a"]}], "hang_after_chunks": 1}]
    elif case == "error":
        script = [{"error": {"kind": "auth", "message": "bad key"}}]
    elif case == "limit":
        settings["execution_limits"] = ExecutionLimits(max_turns=1, max_total_tokens=None, max_duration=None)
        script = [tool_call(), "never"]
    elif case == "rejected":
        settings["input_filters"] = [lambda text: FilterResult.reject("no")]
    elif case == "vetoed_loop":
        settings["before_loop"] = lambda messages, index: False
    elif case == "vetoed_turn":
        settings["before_turn"] = lambda messages, index: False
    agent = Agent(provider=ScriptedProvider(script), tools=[FunctionTool("work", "w", {"type": "object"},
                                                                         lambda a, c: "ok")], **settings)
    if case == "aborted":
        agent.subscribe(lambda e: agent.abort() if e.type == "MessageUpdate" else None)
    result = agent.run("hi", timeout=5)
    assert result.outcome == outcome
    if case == "error":
        assert "bad key" in result.error
    if case == "rejected":
        assert result.rejection == "no" and result.messages == []


def test_run_timeout_aborts_at_the_deadline():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["a"]}], "hang_after_chunks": 1}]))
    started = time.monotonic()
    result = agent.run("hi", timeout=0.2)
    elapsed = time.monotonic() - started
    assert result.timed_out and result.outcome == RunOutcome.ABORTED
    assert 0.15 < elapsed < 3
    assert not agent.is_streaming and agent.messages[-1].stop_reason == StopReason.ABORTED


def test_run_raises_the_runs_exception_unchanged():
    class Mine(Exception):
        pass

    def hook(messages, index):
        raise Mine("from before_turn")

    agent = Agent(provider=ScriptedProvider(["x"]), before_turn=hook)
    with pytest.raises(Mine, match="from before_turn"):
        agent.run("hi")
    with pytest.raises(Mine):
        agent.prompt("again").result(timeout=5)
    assert not agent.is_streaming and [m.text for m in agent.messages] == ["hi", "again"]


# --------------------------------------------------------------------------- AGENT-3: the provider


def test_an_agent_without_a_model_fails_at_once_saying_what_to_pass():
    agent = Agent()
    with pytest.raises(ConfigError, match="ScriptedProvider"):
        agent.prompt("hi")
    assert not agent.is_streaming and agent.messages == []


@pytest.mark.parametrize("name,api,provider,model_id", [
    ("claude-sonnet-4-5", "anthropic_messages", "anthropic", "claude-sonnet-4-5"),
    ("gpt-5", "openai_completions", "openai", "gpt-5"),
    ("o3-mini", "openai_completions", "openai", "o3-mini"),
    ("gemini-2.5-flash", "google_generative_ai", "google", "gemini-2.5-flash"),
    ("groq:llama-3.3-70b", "openai_completions", "groq", "llama-3.3-70b"),
    ("openai_responses:gpt-5", "openai_responses", "openai", "gpt-5"),
    ("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock_converse_stream", "bedrock",
     "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
])
def test_the_model_name_picks_the_protocol(name, api, provider, model_id):
    config = Agent(model=name).model_config
    assert (config.api, config.provider, config.id) == (api, provider, model_id)


def test_an_unknown_model_name_is_refused_with_what_to_pass():
    with pytest.raises(ConfigError, match="ModelConfig"):
        Agent(model="my-local-model")


def test_any_model_name_goes_with_a_given_provider():
    """``provider=`` serves the model, so its name need not be one phi can place (the error message
    itself tells offline users to pass a ScriptedProvider)."""
    agent = Agent(model="my-local-model", provider=ScriptedProvider(["hi"]))
    assert agent.model_config.id == "my-local-model" and agent.run("go").text == "hi"
    assert Agent(model="claude-sonnet-4-5", provider=ScriptedProvider([])).model_config.api == "anthropic_messages"


def test_a_provider_lookup_failure_ends_the_run_with_agent_end():
    agent = Agent(model_config=ModelConfig(id="x", api="no-such-api"))
    with pytest.raises(ConfigError, match="no-such-api"):
        agent.prompt("hi")
    # below the Agent, the loop turns the failed lookup into an error reply, with AgentEnd
    from phi.loop import agent_loop
    from phi.loop.config import AgentContext, AgentLoopConfig

    events = []
    agent_loop([UserMessage.from_text("hi")], AgentContext(), AgentLoopConfig(model_config=ModelConfig(id="x", api="nope")),
               events.append)
    assert events[-1].type == "AgentEnd" and events[-1].outcome == RunOutcome.ERROR
    assert "no provider registered" in events[-1].messages[-1].error_message


# --------------------------------------------------------------------------- AGENT-4: structured output


def test_run_structured_leaves_no_calls_of_its_tool_behind():
    provider = ScriptedProvider([
        {"blocks": [{"type": "toolCall", "id": "a1", "name": "final_answer", "arguments": {"n": "nope"}}]},
        {"blocks": [{"type": "toolCall", "id": "a2", "name": "final_answer", "arguments": {"n": 4}}]},
        "plain answer",
    ])
    agent = Agent(provider=provider)
    value = agent.run_structured("how many?", {"type": "object", "properties": {"n": {"type": "integer"}},
                                              "required": ["n"]})
    assert value == {"n": 4}
    assert not any(isinstance(b, ToolCall) for m in agent.messages for b in getattr(m, "content", []))
    assert not any(isinstance(m, ToolResultMessage) for m in agent.messages)
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert json.loads(agent.messages[-1].text) == {"n": 4}
    agent.run("and now?")
    sent = provider.calls[-1]
    assert sent.tools == [] and all(m.role in ("user", "assistant") for m in sent.messages)
    assert_valid_conversation(agent.messages)


def test_run_does_not_queue_the_events_nobody_reads(monkeypatch):
    from phi.concurrency.channel import EventChannel

    def refuse(self, event):
        raise AssertionError("Agent.run queued an event that nobody will read")

    monkeypatch.setattr(EventChannel, "send", refuse)
    seen = []
    agent = Agent(provider=ScriptedProvider(["one"]))
    agent.subscribe(lambda e: seen.append(e.type))
    assert agent.run("hi").text == "one"
    assert seen[0] == "AgentStart" and seen[-1] == "AgentEnd"  # subscribers still hear everything
