"""The session itself (seed 004 §2, §9.1, §9.6, §9.10, §9.11, Appendix B), offline: states, limits,
queues, every event kind, errors, abort and the shutdown order."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from phi.coding import (
    EventKind,
    Session,
    SessionClosed,
    SessionConfig,
    SessionState,
    SteeringTurn,
    SystemTurn,
    create_anthropic_profile,
    create_openai_profile,
)
from phi.errors import AlreadyRunning, ConfigError
from phi.providers.mock import ScriptedBlock, ScriptedProvider, ScriptedResponse
from phi.tools import LocalExecutionEnvironment

from .helpers import call, check_event_order, collect, kinds, of_kind


def shell(command, call_id="c1"):
    return call("shell", call_id, command=command)


def make(tmp_path, script, config=None, profile=None, **kwargs):
    provider = ScriptedProvider(script)
    profile = profile or create_anthropic_profile(provider=provider, **kwargs)
    return Session(profile, LocalExecutionEnvironment(str(tmp_path)), config or SessionConfig()), provider


def test_states_and_sequential_inputs(tmp_path):
    session, provider = make(tmp_path, [shell("echo one"), "first done", "Which file should I change?", "ok"])
    states = []
    session.subscribe(lambda e: states.append(session.state) if e.kind == EventKind.TOOL_CALL_START else None)
    assert session.state == SessionState.IDLE
    first = session.submit("one")
    assert states == [SessionState.PROCESSING] and first.outcome == "completed" and first.state == SessionState.IDLE
    second = session.submit("two")
    assert second.outcome == "awaiting_input" and session.state == SessionState.AWAITING_INPUT
    third = session.submit("main.py")  # AWAITING_INPUT -> PROCESSING -> IDLE
    assert third.text == "ok" and session.state == SessionState.IDLE
    assert session.model_calls == 4 and len(provider.calls) == 4
    session.close()
    assert session.state == SessionState.CLOSED
    with pytest.raises(SessionClosed):
        session.submit("more")
    with pytest.raises(SessionClosed):
        session.steer("more")


def test_submit_while_processing_is_refused(tmp_path):
    session, _ = make(tmp_path, [ScriptedResponse.text("slow", hang_after_chunks=1)])
    stream = session.submit_stream("hang")
    with pytest.raises(AlreadyRunning, match="steer"):
        session.submit("again")
    with pytest.raises(ConfigError):
        session.submit_stream("  ")
    session.abort()
    assert stream.result(5).outcome == "aborted"


def test_every_event_kind_in_order(tmp_path):
    """All kinds of §2.9 (and §5.5's WARNING) come out of one session, each with its session id."""
    (tmp_path / "f.txt").write_text("f\n")
    loop = [call("read_file", f"r{i}", file_path="f.txt") for i in range(4)]
    script = [shell("printf out", "s1"), *loop, ScriptedResponse.failure("api", "bad request"), "after the error",
              shell("true", "t1"), shell("true", "t2")]
    config = SessionConfig(loop_detection_window=4, max_tool_rounds_per_input=1)
    session, _ = make(tmp_path, script, config, context_window=50)
    seen = []
    session.subscribe(seen.append)
    session.steer("queued while idle")
    config.max_tool_rounds_per_input = 10
    session.submit("go")  # shell, 4 identical reads (loop warning), then the model call fails
    session.submit("again")  # recovers: the error was not fatal
    config.max_tool_rounds_per_input = 1
    session.submit("limited")  # one tool round, then TURN_LIMIT
    session.close()
    assert {e.kind for e in seen} == set(EventKind)
    check_event_order(seen, session.id)
    lines = [json.loads(json.dumps(e.to_json())) for e in seen]  # every event is JSON-ready
    assert [line["kind"] for line in lines] == [e.kind.value for e in seen]
    assert all(line["session_id"] == session.id and line["timestamp"].endswith("Z") for line in lines)
    order = kinds(seen)
    assert order[:3] == ["SESSION_START", "USER_INPUT", "STEERING_INJECTED"]
    assert order.index("TOOL_CALL_OUTPUT_DELTA") < order.index("TOOL_CALL_END")
    (error,) = of_kind(seen, EventKind.ERROR)
    assert error.data == {"message": "api: bad request", "kind": "api", "fatal": False}
    (warning,) = of_kind(seen, EventKind.WARNING)
    assert "of the context window" in warning.data["message"]
    (limit,) = of_kind(seen, EventKind.TURN_LIMIT)
    assert limit.data == {"round": 1, "limit": 1}
    assert isinstance(session.history[-1], SystemTurn)


def test_round_limit_is_per_input_and_max_turns_is_per_session(tmp_path):
    session, provider = make(tmp_path, [shell("true", "a"), shell("true", "b"), shell("true", "c"), "done",
                                        shell("true", "d")], SessionConfig(max_tool_rounds_per_input=2, max_turns=5))
    first = session.submit("one")
    assert first.outcome == "turn_limit" and first.rounds == 2 and session.state == SessionState.IDLE
    assert len(provider.calls) == 2  # the third model call never happened
    second = session.submit("two")  # rounds start again: c, then "done"
    assert second.outcome == "completed" and second.text == "done"
    events, third = collect(session, "three")  # 5th model call, then the session limit
    assert third.outcome == "turn_limit" and session.model_calls == 5
    (limit,) = of_kind(events, EventKind.TURN_LIMIT)
    assert limit.data == {"total_turns": 5, "limit": 5}


def test_follow_up_is_a_new_input_after_the_current_one(tmp_path):
    session, provider = make(tmp_path, [shell("true", "a"), "first answer", shell("true", "b"), "second answer"],
                             SessionConfig(max_tool_rounds_per_input=2))
    session.subscribe(lambda e: session.follow_up("and the tests") if e.kind == EventKind.TOOL_CALL_START
                      and e.data["call_id"] == "a" else None)
    events, result = collect(session, "fix it")
    inputs = [e.data for e in of_kind(events, EventKind.USER_INPUT)]
    assert inputs == [{"content": "fix it"}, {"content": "and the tests", "follow_up": True}]
    assert result.text == "second answer"  # the follow-up got its own round (the limit is per input)
    assert [m.text for m in provider.calls[2].messages if m.role == "user"] == ["fix it", "and the tests"]


def test_steering_becomes_a_user_message_and_a_steering_turn(tmp_path):
    session, provider = make(tmp_path, [shell("true"), "adjusted"])
    session.subscribe(lambda e: session.steer("smaller steps") if e.kind == EventKind.TOOL_CALL_START else None)
    session.submit("work")
    assert provider.calls[1].messages[-1].role == "user" and provider.calls[1].messages[-1].text == "smaller steps"
    assert [type(t).__name__ for t in session.history] == ["UserTurn", "AssistantTurn", "ToolResultsTurn",
                                                           "SteeringTurn", "AssistantTurn"]


def test_abort_kills_the_command_before_session_end(tmp_path):
    session, _ = make(tmp_path, [shell("sleep 60 & echo $! > job.pid; wait")])
    checks = {}

    def on_event(event):
        if event.kind == EventKind.TOOL_CALL_START:
            threading.Thread(target=abort_when_running).start()
        if event.kind == EventKind.SESSION_END:  # Appendix B: processes are gone before SESSION_END
            checks["alive_at_end"] = os.path.exists(f"/proc/{checks['pid']}")

    def abort_when_running():
        deadline = time.monotonic() + 10
        while not (tmp_path / "job.pid").exists() or not (tmp_path / "job.pid").read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        checks["pid"] = int((tmp_path / "job.pid").read_text())
        session.abort()

    session.subscribe(on_event)
    events, result = collect(session, "run the job")
    assert result.outcome == "aborted" and session.state == SessionState.CLOSED
    assert checks["alive_at_end"] is False
    assert events[-1].kind == EventKind.SESSION_END and events[-1].data["reason"] == "aborted"
    (end,) = of_kind(events, EventKind.TOOL_CALL_END)
    assert end.data["is_error"]


def test_abort_while_the_model_streams_closes_the_stream(tmp_path):
    session, provider = make(tmp_path, [ScriptedResponse.text("partial ", "never", hang_after_chunks=1)])
    session.subscribe(lambda e: threading.Thread(target=session.abort).start()
                      if e.kind == EventKind.ASSISTANT_TEXT_DELTA else None)
    events, result = collect(session, "talk")
    assert result.outcome == "aborted" and session.state == SessionState.CLOSED
    assert kinds(events)[-2:] == ["ASSISTANT_TEXT_END", "SESSION_END"]
    assert of_kind(events, EventKind.ASSISTANT_TEXT_END)[0].data["stop_reason"] == "aborted"


def test_abort_from_the_run_thread_and_close_are_idempotent(tmp_path):
    session, _ = make(tmp_path, [shell("true"), "never"])
    session.subscribe(lambda e: session.abort() if e.kind == EventKind.TOOL_CALL_START else None)
    events, result = collect(session, "x")
    assert result.outcome == "aborted" and session.state == SessionState.CLOSED
    session.abort()
    session.close()
    assert kinds(events).count("SESSION_END") == 1


def test_closing_an_idle_session_emits_start_and_end(tmp_path):
    session, _ = make(tmp_path, [])
    seen = []
    session.subscribe(seen.append)
    session.close()
    assert kinds(seen) == ["SESSION_START", "SESSION_END"] and seen[1].data["reason"] == "closed"


def test_an_authentication_error_closes_the_session(tmp_path):
    session, _ = make(tmp_path, [ScriptedResponse.failure("auth", "invalid x-api-key")])
    events, result = collect(session, "hi")
    (error,) = of_kind(events, EventKind.ERROR)
    assert error.data == {"message": "auth: invalid x-api-key", "kind": "auth", "fatal": True}
    assert result.outcome == "error" and session.state == SessionState.CLOSED
    assert events[-1].kind == EventKind.SESSION_END and events[-1].data["reason"] == "error"
    assert events[-1].data["error"] == "auth: invalid x-api-key"


def test_context_overflow_closes_the_session(tmp_path):
    """SPEC §14 CODE-10; seed 004 Appendix B "ContextLengthError: emit warning, session -> CLOSED"."""
    session, _ = make(tmp_path, [ScriptedResponse.failure("context_overflow", "prompt is too long")])
    events, _ = collect(session, "hi")
    assert of_kind(events, EventKind.ERROR)[0].data["kind"] == "context_overflow"
    (warning,) = of_kind(events, EventKind.WARNING)  # seed 004 §9.11: a warning, no compaction
    assert "context window" in warning.data["message"]
    assert kinds(events)[-3:] == ["WARNING", "ERROR", "SESSION_END"]
    assert session.state == SessionState.CLOSED


def test_tool_errors_unknown_tools_and_invalid_arguments_are_results(tmp_path):
    script = [ScriptedResponse([ScriptedBlock("toolCall", id="u", name="no_such_tool", arguments={}),
                                ScriptedBlock("toolCall", id="v", name="read_file", arguments={"path": "x"}),
                                ScriptedBlock("toolCall", id="w", name="read_file", arguments={"file_path": "nope"})]),
              "recovered"]
    session, provider = make(tmp_path, script)
    events, result = collect(session, "x")
    errors = {e.data["call_id"]: e.data["error"] for e in of_kind(events, EventKind.TOOL_CALL_END)}
    assert errors["u"] == "Tool no_such_tool not found"
    assert errors["v"].startswith("Invalid arguments for tool read_file:")
    assert errors["w"] == "File not found: nope"
    assert all(m.is_error for m in provider.calls[1].messages if m.role == "toolResult")
    assert result.text == "recovered"


def test_truncation_limits_come_from_the_session_config(tmp_path):
    (tmp_path / "big.txt").write_text("y" * 100_000)
    (tmp_path / "lines.txt").write_text("".join(f"line {i}\n" for i in range(100)))
    script = [call("read_file", "a", file_path="big.txt"), "ok", call("read_file", "b", file_path="big.txt"), "ok",
              shell("cat lines.txt", "c"), "done"]
    config = SessionConfig(tool_output_limits={"read_file": 1000}, tool_line_limits={"shell": 10})
    session, provider = make(tmp_path, script, config)
    seen = []
    session.subscribe(seen.append)
    session.submit("read")  # a: 1000 characters for the model
    sent = provider.calls[1].messages[-1].text
    assert len(sent) < 1400 and "were removed from the middle" in sent
    config.tool_output_limits = {"read_file": 200_000}  # b: more than the tool's own 50k default
    session.submit("again")
    assert provider.calls[3].messages[-1].text.count("y") == 100_000
    ends = of_kind(seen, EventKind.TOOL_CALL_END)
    assert ends[0].data["output"].count("y") == 100_000 and ends[0].data["truncated"]
    assert not ends[1].data["truncated"]
    session.submit("lines")
    shell_text = provider.calls[5].messages[-1].text
    assert shell_text.startswith("line 0\n") and shell_text.count("\n") <= 11 and "lines" in shell_text
    assert of_kind(seen, EventKind.TOOL_CALL_END)[2].data["output"].count("line ") == 100


def test_the_run_uses_the_core_loop_and_its_settings(tmp_path):
    session, provider = make(tmp_path, ["hi"], SessionConfig(reasoning_effort="medium", user_instructions="Be terse."))
    session.submit("hello")
    request = provider.calls[0]
    assert request.thinking_level.value == "medium"
    assert request.system_prompt.rstrip().endswith("Be terse.")  # layer 5 comes last
    assert "read_file" in request.system_prompt and "edit_file" in request.system_prompt  # layer 3
    assert session.agent.session_id == session.id
    assert [t.name for t in request.tools] == session.profile.tool_registry.names()
    with pytest.raises(ConfigError, match="reasoning_effort"):
        SessionConfig(reasoning_effort="huge").check()
    session.config.reasoning_effort = "huge"
    with pytest.raises(ConfigError):
        session.submit("x")


def test_openai_profile_runs_tools_sequentially_when_parallel_calls_are_off(tmp_path):
    provider = ScriptedProvider([])
    profile = create_openai_profile(provider=provider)
    profile.supports_parallel_tool_calls = False
    session = Session(profile, LocalExecutionEnvironment(str(tmp_path)))
    assert session.agent.config.tool_execution.value == "sequential"


def test_a_failing_subscriber_does_not_stop_the_session(tmp_path, caplog):
    session, _ = make(tmp_path, ["fine"])

    def broken(event):
        raise RuntimeError("ui bug")

    session.subscribe(broken)
    assert session.submit("x").text == "fine"
    assert "subscriber raised" in caplog.text


def test_transient_model_errors_are_retried_by_the_core(tmp_path):
    from phi.providers.retry import RetryConfig

    session, provider = make(tmp_path, [ScriptedResponse.failure("rate_limited", "slow down", retry_after_ms=1),
                                        ScriptedResponse.failure("network", "HTTP 503"), "recovered"])
    session.agent.config.retry_config = RetryConfig(initial_delay_ms=1, jitter=False)
    events, result = collect(session, "hi")
    assert result.text == "recovered" and len(provider.calls) == 3
    assert not of_kind(events, EventKind.ERROR) and session.state == SessionState.IDLE


def test_the_system_prompt_is_built_afresh_for_every_input(tmp_path):
    """Seed 004 §2.5 builds the prompt for each request; a session rebuilds it per input, so a
    changed ``user_instructions`` (layer 5) reaches the next input's requests."""
    session, provider = make(tmp_path, ["one", "two"], SessionConfig(user_instructions="Answer in English."))
    session.submit("first")
    session.config.user_instructions = "Answer in French."
    session.submit("second")
    first, second = (call.system_prompt for call in provider.calls)
    assert first.rstrip().endswith("Answer in English.") and second.rstrip().endswith("Answer in French.")
    assert session.system_prompt == second


def test_a_consumer_written_environment_runs_every_tool(tmp_path):
    """Seed 004 §4.1/§9.4: the environment is an interface; a host's own implementation (here one that
    delegates to a local one and audits every command and write) is what the session's tools use."""

    class AuditingEnvironment:
        def __init__(self, inner):
            self.inner, self.audit = inner, []

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def exec_command(self, command, timeout_ms, working_dir=None, env_vars=None, **kwargs):
            self.audit.append(("exec", command))
            return self.inner.exec_command(command, timeout_ms, working_dir, env_vars, **kwargs)

        def write_file(self, path, content, **kwargs):
            self.audit.append(("write", path))
            return self.inner.write_file(path, content, **kwargs)

    env = AuditingEnvironment(LocalExecutionEnvironment(str(tmp_path)))
    provider = ScriptedProvider([call("write_file", "w", file_path="a.txt", content="A"), shell("cat a.txt", "s"),
                                 "done"])
    session = Session(create_anthropic_profile(provider=provider), env)
    events, result = collect(session, "write then show")
    assert env.audit == [("write", "a.txt"), ("exec", "cat a.txt")]
    assert of_kind(events, EventKind.TOOL_CALL_END)[1].data["output"].startswith("A")
    assert str(tmp_path) in provider.calls[0].system_prompt  # the prompt describes this environment
    session.close()
