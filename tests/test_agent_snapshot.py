"""Snapshots on disk, resume and send (phi/agent/snapshot.py; SPEC AGENT-6, AGENT-7)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from phi import Agent, ScriptedProvider
from phi.agent.snapshot import AgentSnapshot, resume_point
from phi.loop.tool import FunctionTool
from phi.errors import ConfigError, DecodeError, InvalidContinue
from phi.events import AgentStart
from phi.providers.model_config import ModelConfig
from phi.types import AssistantMessage, ContinuationKind, RunOutcome, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage

pytestmark = pytest.mark.usefixtures("blocking_run_path")  # the run contract on both paths (issue 36)


def call(name: str, call_id: str, **args) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}]}


def starts(agent: Agent) -> list[AgentStart]:
    seen: list = []
    agent.subscribe(lambda e: seen.append(e) if isinstance(e, AgentStart) else None)
    return seen


def test_snapshot_file_round_trips_and_holds_no_secret(tmp_path):
    """AGENT-6: everything needed to resume, and no credential."""
    secret = "sk-ant-SECRET-0123456789"
    agent = Agent(model_config=ModelConfig.anthropic("claude-sonnet-4-5", api_key=secret),
                  provider=ScriptedProvider(["hello"]), system_prompt="Be brief.")
    agent.run("hi")
    path = tmp_path / "snap.json"
    agent.checkpoint().save(path)
    text = path.read_text(encoding="utf-8")
    assert secret not in text and "api_key" not in text
    loaded = AgentSnapshot.load(path)
    fresh = agent.checkpoint()
    fresh.created_at = loaded.created_at
    assert loaded == fresh
    other = Agent(provider=ScriptedProvider(["again"]))
    other.restore(loaded)
    assert [m.role for m in other.messages] == ["user", "assistant"]
    assert (other.agent_id, other.session_id, other.system_prompt) == (agent.agent_id, agent.session_id, "Be brief.")
    assert loaded.model == {"id": "claude-sonnet-4-5", "api": agent.model_config.api, "provider": "anthropic"}
    assert list(tmp_path.iterdir()) == [path]  # the temp file is gone


@pytest.mark.parametrize("content, fragment", [
    ("not json", "JSON"),
    ("[1, 2]", "agent snapshot"),
    ('{"format": "phi.agent_snapshot/1", "messages": []}', "fields"),
    ('{"format": "phi.agent_snapshot/1", "messages": [{"role": "alien"}], "agent_id": "a", "session_id": "s",'
     ' "loop_counters": {}, "last_loop_id": null}', "role"),
])
def test_a_file_that_is_not_a_snapshot_is_refused_naming_it(tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DecodeError) as info:
        AgentSnapshot.load(path)
    assert "bad.json" in str(info.value) or fragment in str(info.value)
    assert fragment in str(info.value)


def test_resume_after_abort_reruns_with_the_interrupted_loop_as_parent():
    """AGENT-6: the aborted reply is dropped; the rerun's parent is the aborted run."""
    started = threading.Event()
    provider = ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["half"]}], "hang_after_chunks": 1},
                                 "whole answer"])
    agent = Agent(provider=provider)
    seen = starts(agent)
    agent.subscribe(lambda e: started.set() if e.type == "MessageUpdate" else None)
    stream = agent.prompt("question")
    assert started.wait(5)
    agent.abort()
    assert stream.result(timeout=5).outcome == RunOutcome.ABORTED
    assert agent.messages[-1].stop_reason == StopReason.ABORTED
    result = agent.resume().result(timeout=5)
    assert result.text == "whole answer"
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert seen[1].parent_loop_id == seen[0].loop_id
    assert seen[1].continuation_kind == ContinuationKind.rerun()


@pytest.mark.parametrize("kind", ["retry", "RERUN", ""])
def test_resume_with_an_unknown_kind_raises_a_typed_error_and_keeps_the_history(kind):
    """issue 30: resume("retry") after an aborted reply used to drop that reply, then raise a bare
    KeyError. A resume that cannot start leaves the history as it was (AGENT-6)."""
    provider = ScriptedProvider([{"blocks": [{"type": "text", "chunks": ["half"]}], "hang_after_chunks": 1}])
    agent = Agent(provider=provider)
    started = threading.Event()
    agent.subscribe(lambda e: started.set() if e.type == "MessageUpdate" else None)
    stream = agent.prompt("question")
    assert started.wait(5)
    agent.abort()
    stream.result(timeout=5)
    before = list(agent.messages)
    with pytest.raises(ConfigError, match="unknown continuation kind"):
        agent.resume(kind)
    with pytest.raises(ConfigError, match="unknown continuation kind"):
        agent.continue_loop(kind)
    assert agent.messages == before and agent.messages[-1].stop_reason == StopReason.ABORTED
    assert not agent.is_streaming


def test_resume_with_nothing_to_resume_keeps_the_history():
    agent = Agent(provider=ScriptedProvider(["answer"]))
    agent.run("question")
    before = list(agent.messages)
    with pytest.raises(InvalidContinue):
        agent.resume()
    assert agent.messages == before


def test_resume_drops_a_tool_step_cut_short_by_abort():
    calls_started = threading.Event()

    def slow(args, ctx):
        calls_started.set()
        time.sleep(1.0)  # ignores the abort, so the run answers the call itself
        return "late"

    tool = FunctionTool("slow", "Slow.", {"type": "object"}, slow)
    agent = Agent(provider=ScriptedProvider([call("slow", "s1"), "redone"]), tools=[tool], tool_abort_grace_ms=50)
    stream = agent.prompt("go")
    assert calls_started.wait(5)
    agent.abort()
    stream.result(timeout=5)
    assert isinstance(agent.messages[-1], ToolResultMessage) and agent.messages[-1].is_error
    assert resume_point(agent.messages) == 1
    assert agent.resume("branch").result(timeout=5).text == "redone"


def test_resume_point_rules():
    user = UserMessage.from_text("q")
    done = AssistantMessage([TextContent("a")])
    failed = AssistantMessage([], stop_reason=StopReason.ERROR, error_message="boom")
    asked = AssistantMessage([ToolCall("c1", "t", {})], stop_reason=StopReason.TOOL_USE)
    answered = ToolResultMessage("c1", "t", [TextContent("fine")])
    assert resume_point([user, failed]) == 1
    assert resume_point([user, asked, answered]) == 3  # finished tools: continue from their results
    assert resume_point([user, asked, answered, failed]) == 3
    for history in ([], [user, done], [failed]):
        with pytest.raises(InvalidContinue):
            resume_point(history)


def test_send_prompts_or_continues_from_the_state():
    """AGENT-7."""
    provider = ScriptedProvider(["first", "continued"])
    agent = Agent(provider=provider)
    with pytest.raises(InvalidContinue):
        agent.send()  # nothing awaits a reply
    assert agent.send("hello").result(timeout=5).text == "first"
    with pytest.raises(InvalidContinue):
        agent.send()  # ends with the assistant's reply
    agent.messages = [*agent.messages, UserMessage.from_text("more")]
    assert agent.send().result(timeout=5).text == "continued"
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]


SECOND_PROCESS = textwrap.dedent("""
    import json, sys
    from phi import Agent, ScriptedProvider
    from phi.agent.snapshot import AgentSnapshot
    agent = Agent(provider=ScriptedProvider(["resumed elsewhere"]))
    agent.restore(AgentSnapshot.load(sys.argv[1]))
    starts = []
    agent.subscribe(lambda e: starts.append(e) if e.type == "AgentStart" else None)
    result = agent.resume("branch").result(timeout=10)
    print(json.dumps({"text": result.text, "parent": starts[0].parent_loop_id, "session": starts[0].session_id}))
""")


def test_the_ancestry_chain_survives_a_process_boundary(tmp_path):
    """AGENT-6: restored in another process, the branch names the original run as its parent."""
    agent = Agent(provider=ScriptedProvider([{"error": {"kind": "api", "status": 529, "message": "overloaded, try later"}}]))
    seen = starts(agent)
    agent.run("question")
    path = tmp_path / "snap.json"
    agent.checkpoint().save(path)
    out = subprocess.run([sys.executable, "-c", SECOND_PROCESS, str(path)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"text": "resumed elsewhere", "parent": seen[0].loop_id, "session": agent.session_id}


def test_a_scripted_error_of_an_unknown_kind_is_refused_when_scripted():
    """Bad input is caught where it is written, not deep inside a run."""
    from phi.errors import ConfigError

    with pytest.raises(ConfigError, match="kind must be one of"):
        ScriptedProvider([{"error": {"kind": "overloaded", "message": "x"}}])
