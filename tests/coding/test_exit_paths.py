"""How a session leaves its normal path (seed 004 §2.8, §9.1, §9.11, Appendix B; SPEC §14): user code
that raises (a subscriber, an approval callback, a custom tool's executor), an abort from inside such a
callback, a close while a child sub-agent runs a long command, input after a close. Each test checks that
the history stays well formed, no input is silently lost, and no thread or process of the session is
left behind."""

from __future__ import annotations

import os
import threading
import time

import pytest

from phi.coding import (
    EventKind,
    RegisteredTool,
    Session,
    SessionClosed,
    SessionConfig,
    SessionState,
    create_anthropic_profile,
)
from phi.errors import ToolError
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.tools import LocalExecutionEnvironment
from phi.types import ToolDefinition

from .helpers import call, check_event_order, collect, kinds, of_kind


def assert_history_well_formed(session: Session) -> None:
    """Every tool call of the conversation has exactly one result, right after its reply (the core's
    messages, which the next request is built from), and the session's history mirrors it."""
    messages = session.agent.messages
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            results = [m.tool_call_id for m in messages[i + 1:i + 1 + len(ids)] if m.role == "toolResult"]
            assert sorted(results) == sorted(ids), f"calls {ids} answered by {results}"
    turns = [type(t).__name__ for t in session.history]
    for i, name in enumerate(turns):
        if name == "AssistantTurn" and session.history[i].tool_calls:
            assert turns[i + 1] == "ToolResultsTurn", turns
            assert {r.tool_call_id for r in session.history[i + 1].results} == \
                {c.id for c in session.history[i].tool_calls}


def make(tmp_path, script, config=None):
    provider = ScriptedProvider(script)
    profile = create_anthropic_profile(provider=provider)
    return Session(profile, LocalExecutionEnvironment(str(tmp_path)), config or SessionConfig()), provider, profile


def test_a_subscriber_raising_on_every_event_changes_nothing(tmp_path, nothing_left_behind):
    """SPEC §14 CODE-2: a subscriber's exception is logged; the input, its events and the history are whole."""
    session, provider, _ = make(tmp_path, [call("shell", "s", command="echo hi"), "done"])
    seen = []
    session.subscribe(lambda e: (_ for _ in ()).throw(RuntimeError("ui bug")))
    session.subscribe(seen.append)
    events, result = collect(session, "go")
    assert result.outcome == "completed" and result.text == "done" and session.state == SessionState.IDLE
    assert kinds(events) == kinds(seen)[:len(events)] and "TOOL_CALL_END" in kinds(events)
    assert_history_well_formed(session)
    session.close()
    check_event_order(seen, session.id)


def test_an_approval_callback_that_raises_or_answers_nonsense_denies_the_call(tmp_path, nothing_left_behind):
    """CODE-8: a broken approval callback fails closed, as an error result the model reads."""
    answers = iter([RuntimeError("policy down"), None])

    def policy(request):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    session, provider, _ = make(tmp_path, [call("write_file", "a", file_path="a.txt", content="A"),
                                           call("write_file", "b", file_path="b.txt", content="B"), "gave up"],
                                SessionConfig(approval=policy))
    events, result = collect(session, "write")
    ends = of_kind(events, EventKind.TOOL_CALL_END)
    assert [e.data["is_error"] for e in ends] == [True, True]
    assert "approval check failed (RuntimeError: policy down)" in ends[0].data["error"]
    assert "approval check failed (TypeError" in ends[1].data["error"]
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    assert result.text == "gave up" and session.state == SessionState.IDLE
    assert_history_well_formed(session)
    session.close()


def test_a_custom_tool_executor_that_raises_is_an_error_result(tmp_path, nothing_left_behind):
    """Seed 004 §9.3/§9.11: an executor's exception becomes an error result; the model recovers."""
    session, provider, profile = make(tmp_path, [call("flaky", "f", x=1), "recovered"])

    def flaky(args, env):
        raise OSError("disk on fire")

    profile.tool_registry.register(RegisteredTool(ToolDefinition("flaky", "Fails.", {
        "type": "object", "properties": {"x": {"type": "integer"}}}), flaky))
    events, result = collect(session, "go")
    (end,) = of_kind(events, EventKind.TOOL_CALL_END)
    assert end.data["is_error"] and "disk on fire" in end.data["error"]
    sent = next(m for m in provider.calls[1].messages if m.role == "toolResult")
    assert sent.is_error and "disk on fire" in sent.text
    assert result.text == "recovered"
    assert_history_well_formed(session)
    session.close()


@pytest.mark.parametrize("where", ["approval", "executor"])
def test_abort_from_inside_a_tool_callback_returns_at_once_and_runs_nothing_more(tmp_path, where, caplog,
                                                                                 nothing_left_behind):
    """Seed 004 §2.8: abort is safe from any callback — from the approval callback or a tool's executor
    (both on a tool worker thread) it returns without waiting for the run it is part of — so the call
    ends by itself instead of being abandoned by the core after its grace period —, the approved call
    does not run after the abort, and the session ends CLOSED with a well-formed history."""
    timings = {}

    def abort_here():
        start = time.monotonic()
        session.abort()
        timings["abort_s"] = time.monotonic() - start

    def policy(request):
        if request.tool_name == "write_file":
            abort_here()
        return True

    def stop(args, env):
        abort_here()
        return "stopped"

    config = SessionConfig(approval=policy if where == "approval" else None)
    session, provider, profile = make(tmp_path, [call("stop" if where == "executor" else "write_file", "w",
                                                      file_path="a.txt", content="A"), "never"], config)
    profile.tool_registry.register(RegisteredTool(ToolDefinition("stop", "Stops.", {"type": "object"}), stop))
    events, result = collect(session, "go")
    assert timings["abort_s"] < 5, timings  # a bound against hangs only
    assert "abandoned" not in caplog.text  # abort() waited for the run, the run for this very call
    assert result.outcome == "aborted" and session.state == SessionState.CLOSED
    assert not (tmp_path / "a.txt").exists()  # approved, but the session was aborted meanwhile
    assert len(provider.calls) == 1 and kinds(events)[-1] == "SESSION_END"
    assert_history_well_formed(session)
    check_event_order(events, session.id)


def test_close_while_a_child_runs_a_long_command(tmp_path, nothing_left_behind):
    """Seed 004 §7, Appendix B: closing an idle parent whose child is blocked in a long shell command
    kills the command, ends the child's session first and the parent's last, and leaves no thread."""
    child_provider_script = [call("shell", "s", command="sleep 60 & echo $! > child.pid; wait"), "never"]
    provider = ScriptedProvider(child_provider_script)
    profile = create_anthropic_profile(provider=provider)
    parent = Session(profile, LocalExecutionEnvironment(str(tmp_path)))
    order = []
    parent.subscribe(lambda e: order.append((e.kind, e.session_id)), include_subagents=True)
    handle = parent.subagents.spawn("run the long job")
    deadline = time.monotonic() + 10
    while not (tmp_path / "child.pid").exists() or not (tmp_path / "child.pid").read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    pid = int((tmp_path / "child.pid").read_text())
    parent.close()
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert handle.status == "closed" and handle.session.state == SessionState.CLOSED
    assert parent.state == SessionState.CLOSED
    ends = [sid for kind, sid in order if kind == EventKind.SESSION_END]
    assert ends == [handle.session.id, parent.id]
    assert_history_well_formed(handle.session)


def test_no_input_is_accepted_after_close_and_none_queued_is_lost(tmp_path, nothing_left_behind):
    """Seed 004 §2.3: CLOSED takes no input — submit, steer and follow_up raise SessionClosed, also
    when called from a subscriber while the close is under way; messages queued but never processed
    can still be taken back."""
    session, provider, _ = make(tmp_path, [call("shell", "s", command="true"), "never"])
    refused = []

    def on_event(event):
        if event.kind == EventKind.TOOL_CALL_START:
            session.follow_up("queued but never processed")
            threading.Thread(target=session.close).start()
        if event.kind == EventKind.SESSION_END:
            for act in (session.submit, session.steer, session.follow_up):
                try:
                    act("from the end")
                except SessionClosed:
                    refused.append(act.__name__)

    session.subscribe(on_event)
    events, result = collect(session, "go")
    assert result.outcome == "closed" or result.outcome == "aborted"
    assert refused == ["submit", "steer", "follow_up"]
    assert session.take_queued_input() == ["queued but never processed"]
    for act in (session.submit, session.submit_stream, session.steer, session.follow_up):
        with pytest.raises(SessionClosed):
            act("after close")
    assert len(provider.calls) == 1 and kinds(events)[-1] == "SESSION_END"
    assert_history_well_formed(session)


def test_submit_from_a_callback_of_close_on_an_idle_session_is_refused(tmp_path, nothing_left_behind):
    """A close of an IDLE session emits SESSION_START/SESSION_END from close() itself; an input submitted
    from those callbacks must be refused, not run after SESSION_END on a session that is CLOSED."""
    session, provider, _ = make(tmp_path, ["should never be asked for"])
    outcome = []

    def on_event(event):
        try:
            outcome.append(session.submit("sneak in").outcome)
        except SessionClosed:
            outcome.append("refused")

    session.subscribe(on_event)
    session.close()
    assert outcome == ["refused", "refused"] and provider.calls == []
    assert session.state == SessionState.CLOSED


@pytest.mark.parametrize("parent_busy", [False, True])
def test_a_child_callback_that_aborts_its_parent_does_not_deadlock(tmp_path, parent_busy, nothing_left_behind):
    """CODE-10: a subscriber of the parent, called on a child's thread, may abort the parent — idle or
    blocked in ``wait`` on that child. abort() returns without waiting for the child's run (which is
    waiting for the callback), the child is cancelled, its command never outlives it, and both
    sessions end CLOSED with one SESSION_END each."""
    def agent_id(request):
        return next(m.text for m in request.messages if m.role == "toolResult").split('"agent_id": "')[1][:36]

    scripts = {"job": [call("shell", "s", command="sleep 60 & echo $! > child.pid; wait"), "never"],
               "delegate": [call("spawn_agent", "p1", task="job"), lambda r: call("wait", "p2", agent_id=agent_id(r)),
                            "never"]}

    def route(request):  # one scripted conversation per session, told apart by its first input
        step = scripts[request.messages[0].text][sum(m.role == "assistant" for m in request.messages)]
        return step(request) if callable(step) else ScriptedResponse.text(step) if isinstance(step, str) else step

    profile = create_anthropic_profile(provider=ScriptedProvider([route] * 6))
    parent = Session(profile, LocalExecutionEnvironment(str(tmp_path)))
    timings, ends = {}, []

    def on_event(event):
        if event.kind == EventKind.SESSION_END:
            ends.append(event.session_id)
        if event.session_id != parent.id and event.kind == EventKind.TOOL_CALL_START:
            start = time.monotonic()
            parent.abort()
            timings["abort_s"] = time.monotonic() - start

    parent.subscribe(on_event, include_subagents=True)
    if parent_busy:
        stream = parent.submit_stream("delegate")
    else:
        parent.subagents.spawn("job")
    assert parent._closed.wait(10)
    if parent_busy:
        assert stream.result(10).outcome == "aborted"
    (handle,) = parent.subagents.handles()
    assert handle.session._closed.wait(10)
    assert timings["abort_s"] < 5, timings  # a bound against hangs: it used to wait 10 s for itself
    assert parent.state == handle.session.state == SessionState.CLOSED and handle.status == "closed"
    assert sorted(ends) == sorted([parent.id, handle.session.id])
    assert not (tmp_path / "child.pid").exists()  # the job was cancelled before it started
    assert_history_well_formed(handle.session)


def test_a_call_approved_after_the_abort_does_not_run(tmp_path, nothing_left_behind):
    """CODE-8, CODE-10: the session is aborted while a person is still deciding about a call; the run
    does not wait for them, and when they finally say yes, the tool (one that does not look at its
    cancellation token itself) is not run."""
    deciding, decided, answered = threading.Event(), threading.Event(), threading.Event()
    deployed = []

    def slow_person(request):
        deciding.set()
        decided.wait(10)
        answered.set()
        return True

    session, provider, profile = make(tmp_path, [call("deploy", "d"), "never"], SessionConfig(approval=slow_person))
    profile.tool_registry.register(RegisteredTool(ToolDefinition("deploy", "Deploys.", {"type": "object"}),
                                                  lambda args, env: deployed.append(1) or "deployed"))
    stream = session.submit_stream("deploy")
    assert deciding.wait(10)
    session.abort()
    assert stream.result(10).outcome == "aborted" and session.state == SessionState.CLOSED
    decided.set()
    assert answered.wait(10)
    time.sleep(0.3)  # time for a call that would run after its approval
    assert deployed == []
    assert_history_well_formed(session)


def test_send_input_to_a_child_whose_session_ended_is_an_error(tmp_path, nothing_left_behind):
    """CODE-9: a child closed by a fatal error (here its credentials are refused) cannot take new work;
    ``send_input`` says so instead of claiming the child is working on the message."""
    provider = ScriptedProvider([ScriptedResponse.failure("auth", "invalid x-api-key")])
    parent = Session(create_anthropic_profile(provider=provider), LocalExecutionEnvironment(str(tmp_path)))
    handle = parent.subagents.spawn("a task")
    result = handle.wait()
    assert not result.success and handle.session.state == SessionState.CLOSED
    with pytest.raises(ToolError, match="is closed"):
        handle.send("try again")
    parent.close()
