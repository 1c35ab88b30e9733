"""Sub-agents (phi/subagent.py, SPEC §13.1 SUB-1..SUB-4): real parent and child runs on scripted
providers, checking the linkage, the forwarded events, abort, the depth limit and AMB-003."""

from __future__ import annotations

import threading
import time

import pytest

from phi import Agent, ScriptedProvider
from phi.loop.tool import FunctionTool
from phi.errors import ConfigError
from phi.events import AgentStart, ProgressMessage, ToolExecutionEnd, ToolExecutionUpdate, TurnStart
from phi.subagent import NO_TEXT, SubAgentTool, extract_final_text
from phi.types import AssistantMessage, RunOutcome, TextContent, ToolCall, TurnTrigger


def call(name: str, call_id: str, **args) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}]}


def progress_tool() -> FunctionTool:
    def run(args, ctx):
        ctx.progress("looking it up")
        return "42"

    return FunctionTool("lookup", "Look a fact up.", {"type": "object", "properties": {}}, run)


def collect(agent: Agent) -> list:
    events: list = []
    agent.subscribe(events.append)
    return events


def test_delegation_links_parent_and_child_and_forwards_text_and_progress():
    """SUB-1, SUB-2: child identity, parent_loop_id, SubAgent trigger, live text, progress, result."""
    child_events: list = []
    child = ScriptedProvider([call("lookup", "k1"),
                              {"blocks": [{"type": "text", "chunks": ["The answer ", "is 42."]}],
                               "usage": {"input": 7, "output": 3}}])
    researcher = SubAgentTool("researcher", provider=child, system_prompt="Find facts.", tools=[progress_tool()],
                              on_event=child_events.append)
    parent = ScriptedProvider([call("researcher", "r1", task="What is the answer?"), "It is 42."])
    agent = Agent(provider=parent, tools=[researcher])
    events = collect(agent)
    result = agent.run("ask the researcher")
    assert result.text == "It is 42."

    parent_start = events[0]
    child_start = next(e for e in child_events if isinstance(e, AgentStart))
    assert child_start.parent_loop_id == parent_start.loop_id
    assert child_start.session_id != parent_start.session_id and child_start.agent_id != parent_start.agent_id
    assert child_start.loop_id == f"{child_start.session_id}.sub.1"
    assert [e.triggered_by for e in child_events if isinstance(e, TurnStart)][0] == TurnTrigger.SUB_AGENT

    end = next(e for e in events if isinstance(e, ToolExecutionEnd))
    assert end.child_loop_id == child_start.loop_id
    assert end.result.child_loop_id == child_start.loop_id
    assert end.result.content[0].text == "The answer is 42."
    assert end.result.details == {"sub_agent": "researcher", "turns": 2,
                                  "usage": end.result.details["usage"]}
    assert end.result.details["usage"]["input"] == 7

    updates = [e.partial_result.content[0].text for e in events if isinstance(e, ToolExecutionUpdate)]
    assert updates == ["The answer ", "The answer is 42."]
    progress = [e for e in events if isinstance(e, ProgressMessage)]
    assert [(p.text, p.tool_call_id, p.tool_name) for p in progress] == [("looking it up", "r1", "researcher")]
    # the child's request: its own system prompt, just the task, its own tools
    request = child.calls[0]
    assert request.system_prompt == "Find facts."
    assert [m.role for m in request.messages] == ["user"] and [t.name for t in request.tools] == ["lookup"]


def test_with_parent_loop_id_overrides_the_calling_loop():
    """REQ-195: an explicit parent loop id is what the child's AgentStart carries."""
    seen: list = []
    original = SubAgentTool("helper", provider=ScriptedProvider(["done"]))
    tool = original.clone(parent_loop_id="parent.loop.1", on_event=seen.append)
    assert original.parent_loop_id is None and original.on_event is None
    agent = Agent(provider=ScriptedProvider([call("helper", "h1", task="x"), "ok"]), tools=[tool])
    agent.run("go")
    assert seen[0].parent_loop_id == "parent.loop.1"


def test_aborting_the_parent_stops_the_child_promptly():
    """SUB-3: the child runs on the call's cancellation token."""
    child_started = threading.Event()
    child = ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["thinking..."]}], "hang_after_chunks": 1}])
    tool = SubAgentTool("slow", provider=child,
                        on_event=lambda e: child_started.set() if e.type == "MessageUpdate" else None)
    agent = Agent(provider=ScriptedProvider([call("slow", "s1", task="x"), "unused"]), tools=[tool])
    stream = agent.prompt("go")
    assert child_started.wait(5)
    started = time.monotonic()
    agent.abort()
    result = stream.result(timeout=5)
    assert time.monotonic() - started < 2
    assert result.outcome == RunOutcome.ABORTED
    assert not any(t.name.startswith("phi-") and "sub" in t.name for t in threading.enumerate())


def test_depth_limit_leaves_nested_sub_agents_out_of_the_child():
    """SUB-4: with the default max_depth=1 a child cannot delegate; with 2 it can, once."""
    inner_provider = ScriptedProvider(["inner done"])
    inner = SubAgentTool("inner", provider=inner_provider)
    middle_provider = ScriptedProvider(["middle done"])
    middle = SubAgentTool("middle", provider=middle_provider, tools=[inner])
    agent = Agent(provider=ScriptedProvider([call("middle", "m1", task="x"), "ok"]), tools=[middle])
    agent.run("go")
    assert [t.name for t in middle_provider.calls[0].tools] == []

    middle_provider = ScriptedProvider([call("inner", "i1", task="y"), "middle done"])
    middle = SubAgentTool("middle", provider=middle_provider, tools=[inner], max_depth=2)
    agent = Agent(provider=ScriptedProvider([call("middle", "m1", task="x"), "ok"]), tools=[middle])
    agent.run("go")
    assert [t.name for t in middle_provider.calls[0].tools] == ["inner"]
    assert middle_provider.calls[1].messages[-1].content[0].text == "inner done"
    # and the child's own copy of inner is at depth 2 = max_depth: it could not delegate again
    assert middle.child_tools()[0].depth == 1


def test_bad_task_is_an_error_result_and_max_turns_bounds_the_child():
    looping = ScriptedProvider([], default=call("lookup", "again"))
    tool = SubAgentTool("loopy", provider=looping, tools=[progress_tool()], max_turns=3)
    agent = Agent(provider=ScriptedProvider([call("loopy", "l1", task="  "), call("loopy", "l2", task="go"), "ok"]),
                  tools=[tool])
    events = collect(agent)
    agent.run("go")
    ends = [e for e in events if isinstance(e, ToolExecutionEnd)]
    assert ends[0].is_error and "non-empty" in ends[0].result.content[0].text
    assert not ends[1].is_error
    assert ends[1].result.details["turns"] == 3
    assert ends[1].result.content[0].text == NO_TEXT


def test_a_failed_child_reports_its_error_in_the_fallback_text():
    """AMB-003: a result, not an error, carrying the child's error_message."""
    child = ScriptedProvider([{"error": {"kind": "auth", "message": "bad key for child"}}])
    tool = SubAgentTool("broken", provider=child)
    agent = Agent(provider=ScriptedProvider([call("broken", "b1", task="x"), "ok"]), tools=[tool])
    events = collect(agent)
    agent.run("go")
    end = next(e for e in events if isinstance(e, ToolExecutionEnd))
    assert not end.is_error
    assert end.result.content[0].text.startswith(NO_TEXT + ": error: ")
    assert "bad key for child" in end.result.content[0].text


def test_extract_final_text_policy():
    """REQ-149, AMB-003."""
    text = AssistantMessage([TextContent("first")])
    tool_only = AssistantMessage([ToolCall("c1", "t", {})])
    failed = AssistantMessage([], error_message="overloaded")
    assert extract_final_text([text, tool_only]) == "first"
    assert extract_final_text([tool_only]) == NO_TEXT
    assert extract_final_text([tool_only, failed]) == f"{NO_TEXT}: error: overloaded"
    assert extract_final_text([AssistantMessage([TextContent("a"), TextContent("b")])]) == "a\nb"
    assert extract_final_text([]) == NO_TEXT


def test_construction_needs_a_model():
    with pytest.raises(ConfigError, match="model_config"):
        SubAgentTool("nothing")


def test_a_timed_out_call_stops_its_child():
    """SUB-3: the tool timeout cancels the call's token, so the child ends (aborted) soon after."""
    child_ended = threading.Event()
    outcomes: list = []

    def watch(event):
        if event.type == "AgentEnd":
            outcomes.append(event.outcome)
            child_ended.set()

    child = ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["slow"]}], "hang_after_chunks": 1}])
    tool = SubAgentTool("slow", provider=child, timeout_ms=200, on_event=watch)
    agent = Agent(provider=ScriptedProvider([call("slow", "s1", task="x"), "gave up"]), tools=[tool])
    events = collect(agent)
    assert agent.run("go", timeout=10).text == "gave up"
    end = next(e for e in events if isinstance(e, ToolExecutionEnd))
    assert end.is_error and "timeout" in end.result.content[0].text
    assert child_ended.wait(5) and outcomes == [RunOutcome.ABORTED]
