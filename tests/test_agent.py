"""The Agent API (issue 3): every method, and the concurrency contract."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

import pytest

from phi import (
    Agent,
    AgentEnd,
    AlreadyRunning,
    ContinuationKind,
    DecodeError,
    ExtensionMessage,
    InvalidContinue,
    MessageUpdate,
    QueueMode,
    ScriptedProvider,
    StopReason,
    StructuredOutputFailed,
    TextContent,
    ToolExecutionStart,
    TurnStart,
    UserMessage,
    tool,
)
from phi.loop.tool import FunctionTool

pytestmark = pytest.mark.usefixtures("blocking_run_path")  # the run contract on both paths (issue 36)


def echo_tool(delay: float = 0.0) -> FunctionTool:
    def run(args, ctx):
        if delay:
            ctx.cancel.wait(delay)
        return f"echo:{args['text']}"

    return FunctionTool("echo", "Echo text.", {"type": "object", "properties": {"text": {"type": "string"}},
                                               "required": ["text"]}, run)


def call(name: str, call_id: str, **args) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}]}


def test_prompt_streams_and_merges_history():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["Hel", "lo"]}]}]),
                  system_prompt="sys")
    events = list(agent.prompt("hi"))
    deltas = [e.delta.delta for e in events if isinstance(e, MessageUpdate)]
    assert deltas == ["Hel", "lo"]
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert agent.messages[-1].text == "Hello"
    assert not agent.is_streaming


def test_run_returns_agent_result_with_usage():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "text": "4"}], "usage": {"input": 3, "output": 1}}]))
    result = agent.run("2+2?")
    assert result.text == "4"
    assert result.stop_reason == StopReason.STOP
    assert (result.usage.input, result.usage.output) == (3, 1)
    assert result.error is None


def test_run_reports_provider_error():
    agent = Agent(provider=ScriptedProvider([{"error": {"kind": "auth", "message": "bad key"}}]))
    result = agent.run("hi")
    assert result.stop_reason == StopReason.ERROR
    assert "bad key" in result.error


def test_prompt_with_images_builds_one_user_message():
    provider = ScriptedProvider(["ok"])
    agent = Agent(provider=provider)
    agent.prompt("what is this?", images=[("aGk=", "image/png")]).result(timeout=5)
    content = provider.calls[0].messages[0].content
    assert [b.type for b in content] == ["text", "image"]
    assert content[1].mime_type == "image/png"


def test_second_prompt_while_running_raises_already_running():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["x"]}], "hang_after_chunks": 1}]))
    stream = agent.prompt("hi")
    with pytest.raises(AlreadyRunning, match="steer"):
        agent.prompt("again")
    agent.abort()
    stream.result(timeout=5)
    assert agent.messages[-1].stop_reason == StopReason.ABORTED


def test_abort_from_another_thread_mid_stream_is_fast():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["partial"]}], "hang_after_chunks": 1}]))
    seen = threading.Event()
    agent.subscribe(lambda e: seen.set() if isinstance(e, MessageUpdate) else None)
    stream = agent.prompt("hi")
    assert seen.wait(5)
    started = time.monotonic()
    threading.Thread(target=agent.abort).start()
    messages = stream.result(timeout=5).messages
    assert time.monotonic() - started < 0.5
    assert messages[-1].stop_reason == StopReason.ABORTED
    assert messages[-1].text == "partial"


def test_abort_from_inside_an_event_callback():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["a", "b", "c"]}],
                                              "chunk_delay_ms": 20}]))
    agent.subscribe(lambda e: agent.abort() if isinstance(e, MessageUpdate) else None)
    messages = agent.prompt("hi").result(timeout=5).messages
    assert messages[-1].stop_reason == StopReason.ABORTED
    assert messages[-1].text == "a"


def test_early_break_still_merges_messages():
    provider = ScriptedProvider([call("echo", "c1", text="x"), "done"])
    agent = Agent(provider=provider, tools=[echo_tool()])
    stream = agent.prompt("go")
    for event in stream:
        if isinstance(event, TurnStart):
            break
    assert agent.wait_for_idle(5)
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]


def test_steer_from_another_thread_while_tool_runs():
    provider = ScriptedProvider([call("echo", "c1", text="x"), "after steering", "unused"])
    agent = Agent(provider=provider, tools=[echo_tool(delay=0.2)])
    started = threading.Event()
    agent.subscribe(lambda e: started.set() if isinstance(e, ToolExecutionStart) else None)
    stream = agent.prompt("go")
    assert started.wait(5)
    threading.Thread(target=agent.steer, args=("change of plan",)).start()
    messages = stream.result(timeout=5).messages
    texts = [m.content[0].text for m in messages if isinstance(m, UserMessage)]
    assert texts == ["go", "change of plan"]
    # the steering message reached the second model call
    assert provider.calls[1].messages[-1].content[0].text == "change of plan"


def test_follow_up_queue_modes():
    for mode, expected_calls in ((QueueMode.ONE_AT_A_TIME, 3), (QueueMode.ALL, 2)):
        provider = ScriptedProvider(["first", "second", "third"])
        agent = Agent(provider=provider, follow_up_mode=mode)
        agent.follow_up("more 1")
        agent.follow_up(UserMessage.from_text("more 2"))
        assert agent.follow_up_queue
        agent.run("start")
        assert len(provider.calls) == expected_calls
        assert not agent.follow_up_queue


def test_clear_queues():
    agent = Agent(provider=ScriptedProvider(["x"]))
    agent.steer("a")
    agent.follow_up("b")
    agent.clear_queues()
    assert not agent.steering_queue and not agent.follow_up_queue


def test_loop_exception_is_reraised_to_consumer():
    def boom(messages, turn_index):
        raise RuntimeError("hook failed")

    agent = Agent(provider=ScriptedProvider(["x"]), before_turn=boom)
    with pytest.raises(RuntimeError, match="hook failed"):
        list(agent.prompt("hi"))
    assert not agent.is_streaming
    with pytest.raises(RuntimeError):
        agent.run("again")


def test_subscribe_and_unsubscribe():
    agent = Agent(provider=ScriptedProvider(["a", "b"]))
    seen = []
    unsubscribe = agent.subscribe(lambda e: seen.append(e.type))
    agent.run("one")
    assert seen[0] == "AgentStart" and seen[-1] == "AgentEnd"
    count = len(seen)
    unsubscribe()
    agent.run("two")
    assert len(seen) == count


def test_continue_loop_kinds_and_identity():
    provider = ScriptedProvider(["one", "two", "three"])
    agent = Agent(provider=provider, config_id="cfg")
    agent.run("hi")
    first = agent.last_loop_id
    assert first == f"{agent.session_id}.cfg.1"
    with pytest.raises(InvalidContinue, match="assistant"):
        agent.continue_loop()
    agent.messages.append(UserMessage.from_text("go on"))
    events = list(agent.continue_loop(ContinuationKind.branch("2026-01-01T00:00:00Z")))
    start = events[0]
    assert start.parent_loop_id == first
    assert start.continuation_kind == ContinuationKind("branch", "2026-01-01T00:00:00Z")
    assert next(e for e in events if isinstance(e, TurnStart)).triggered_by.value == "Branch"
    assert agent.last_loop_id == f"{agent.session_id}.cfg.2"


def test_new_session_and_check_and_rotate():
    agent = Agent(provider=ScriptedProvider(["a", "b"]), config_id="c")
    old = agent.session_id
    agent.run("x")
    assert agent.check_and_rotate(3600) is None
    agent.last_active_at = time.time() - 10
    new = agent.check_and_rotate(5)
    assert new and new != old and agent.session_id == new
    assert agent.checkpoint().loop_counters == {} and agent.last_loop_id is None
    agent.run("y")
    assert agent.last_loop_id == f"{new}.c.1"
    assert agent.new_session() != new


def test_save_and_restore_messages_round_trip():
    agent = Agent(provider=ScriptedProvider([call("echo", "c1", text="x"), "done"]), tools=[echo_tool()])
    agent.run("go")
    agent.messages.append(ExtensionMessage("note", {"k": 1}))
    saved = agent.save_messages()
    other = Agent()
    other.restore_messages(saved)
    assert other.save_messages() == saved
    assert json.loads(saved)[1]["stopReason"] == "toolUse"


@pytest.mark.parametrize("bad", ["{not json", '{"role": "user"}', '[{"role": "robot", "content": []}]', "[1]"])
def test_restore_of_bad_json_raises_and_keeps_history(bad):
    agent = Agent(provider=ScriptedProvider(["x"]))
    agent.run("hi")
    before = agent.save_messages()
    with pytest.raises(DecodeError):
        agent.restore_messages(bad)
    assert agent.save_messages() == before


def test_checkpoint_restore():
    agent = Agent(provider=ScriptedProvider(["a", "b"]))
    agent.run("one")
    checkpoint = agent.checkpoint()
    agent.run("two")
    assert len(agent.messages) == 4
    agent.new_session()
    agent.restore(checkpoint)
    assert len(agent.messages) == 2
    assert agent.session_id == checkpoint.session_id
    assert agent.last_loop_id == checkpoint.last_loop_id


def test_reset_clears_history_and_queues():
    agent = Agent(provider=ScriptedProvider(["a"]))
    agent.run("one")
    agent.follow_up("later")
    agent.reset()
    assert agent.messages == [] and not agent.follow_up_queue


def test_settings_are_keywords_and_an_unknown_setting_is_rejected():
    agent = Agent(system_prompt="s", max_tokens=100, temperature=0.5, steering_mode=QueueMode.ALL, tools=[echo_tool()])
    assert agent.system_prompt == "s" and agent.config.max_tokens == 100 and agent.config.temperature == 0.5
    assert agent.steering_queue.mode == QueueMode.ALL and [t.name for t in agent.tools] == ["echo"]
    with pytest.raises(TypeError, match="unknown settings"):
        Agent(max_tokenz=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown settings"):
        agent.clone(max_tokenz=5)  # type: ignore[call-arg]


def test_clone_is_a_new_agent_and_leaves_the_original_unchanged():
    provider = ScriptedProvider(["a", "b"])
    agent = Agent(provider=provider, system_prompt="s", max_tokens=100, tools=[echo_tool()],
                  follow_up_mode=QueueMode.ALL)
    agent.run("one")
    agent.follow_up("queued")
    other = agent.clone(max_tokens=7, system_prompt="t")
    assert (agent.config.max_tokens, agent.system_prompt) == (100, "s")
    assert (other.config.max_tokens, other.system_prompt) == (7, "t")
    assert other.messages == agent.messages and other.messages is not agent.messages
    assert other.tools == agent.tools and other.tools is not agent.tools
    assert other.follow_up_queue.mode == QueueMode.ALL and not other.follow_up_queue
    assert other.agent_id != agent.agent_id and other.session_id != agent.session_id
    other.run("two")
    assert len(other.messages) == 4 and len(agent.messages) == 2
    assert agent.clone(model="gpt-5").config.model_config.api != agent.config.model_config.api


def test_clone_copies_the_history_so_changing_one_never_changes_the_other():
    """issue 30: clone() promises "a copy of its history"; the message objects were shared."""
    agent = Agent(provider=ScriptedProvider(["a"]))
    agent.run("one")
    other = agent.clone()
    other.messages[0].content.append(TextContent("changed"))
    other.messages[1].content[0] = TextContent("rewritten")
    assert [b.text for b in agent.messages[0].content] == ["one"]
    assert agent.messages[1].text == "a"
    assert other.messages[0] is not agent.messages[0]


def test_wait_for_idle_times_out_while_running():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["x"]}], "hang_after_chunks": 1}]))
    stream = agent.prompt("hi")
    assert agent.wait_for_idle(0.05) is False
    agent.abort()
    assert agent.wait_for_idle(5) is True
    stream.result(timeout=1)


def test_stream_close_aborts_the_run():
    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["x"]}], "hang_after_chunks": 1}]))
    with agent.prompt("hi") as stream:
        for event in stream:
            if isinstance(event, MessageUpdate):
                break
    assert agent.wait_for_idle(5)
    assert agent.messages[-1].stop_reason == StopReason.ABORTED


@dataclass
class Answer:
    city: str
    population: int


def test_run_structured_retries_then_returns_typed_value():
    provider = ScriptedProvider([
        call("final_answer", "a1", city="Oslo", population="many"),
        call("final_answer", "a2", city="Oslo", population=700000),
    ])
    agent = Agent(provider=provider)
    assert agent.run_structured("capital of Norway?", Answer) == Answer("Oslo", 700000)
    assert len(provider.calls) == 2
    assert "population" in provider.calls[1].messages[-1].content[0].text
    assert all(t.name != "final_answer" for t in agent.tools)


def test_run_structured_with_json_schema_and_nudge():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    provider = ScriptedProvider(["I think it's 3", call("final_answer", "a1", n=3)])
    assert Agent(provider=provider).run_structured("pick", schema) == {"n": 3}


def test_run_structured_gives_up_after_max_retries():
    bad = [call("final_answer", f"a{i}", city=1, population=2) for i in range(5)]
    provider = ScriptedProvider(bad)
    with pytest.raises(StructuredOutputFailed) as info:
        Agent(provider=provider).run_structured("?", Answer, max_retries=1)
    assert info.value.attempts == 2
    assert "city" in info.value.last_error
    assert len(provider.calls) == 2


def test_tool_decorator_tools_work_in_agent():
    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply.

        Args:
            a: left
            b: right
        """
        return a * b

    provider = ScriptedProvider([call("multiply", "m1", a=6, b=7), "42"])
    agent = Agent(provider=provider, tools=[multiply])
    result = agent.run("6*7?")
    assert result.messages[2].content[0].text == "42"
    assert provider.calls[0].tools[0].parameters["required"] == ["a", "b"]


def test_agent_end_messages_equal_history_delta():
    agent = Agent(provider=ScriptedProvider(["a"]))
    events = list(agent.prompt("x"))
    end = events[-1]
    assert isinstance(end, AgentEnd)
    assert end.messages == agent.messages


@pytest.mark.parametrize("kind", [3, ["rerun"], object()])
def test_a_continuation_kind_of_the_wrong_type_is_a_typed_error_before_anything_changes(kind):
    """issue 30 (fresh review): an int or any object was accepted and the run raised AttributeError."""
    from phi import ConfigError

    agent = Agent(provider=ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["half"]}],
                                              "hang_after_chunks": 1}]))
    stream = agent.prompt("question")
    agent.abort()
    stream.result(timeout=5)
    before = list(agent.messages)
    for start in (agent.resume, agent.continue_loop):
        with pytest.raises(ConfigError, match="unknown continuation kind"):
            start(kind)
    assert agent.messages == before and not agent.is_streaming


@pytest.mark.parametrize("timeout", [-1, float("nan"), "1"])
def test_a_bad_timeout_is_refused_before_the_run_starts(timeout):
    from phi import ConfigError

    agent = Agent(provider=ScriptedProvider(["never used"]))
    with pytest.raises(ConfigError, match="timeout must be"):
        agent.run("hi", timeout=timeout)
    assert agent.messages == [] and not agent.is_streaming


@pytest.mark.parametrize("timeout", [float("inf"), 1e10])
def test_a_timeout_too_large_to_wait_for_means_no_bound(timeout):
    agent = Agent(provider=ScriptedProvider(["done"]))
    result = agent.run("hi", timeout=timeout)
    assert result.text == "done" and not result.timed_out


def test_clone_copies_data_it_cannot_deep_copy_as_far_as_it_can():
    lock = threading.Lock()
    data = {"items": [1], "lock": lock}
    agent = Agent(provider=ScriptedProvider(["a"]), messages=[ExtensionMessage("note", data)])
    other = agent.clone()
    data["items"].append(2)
    copied = other.messages[0].data
    assert copied["items"] == [1] and copied["lock"] is lock
