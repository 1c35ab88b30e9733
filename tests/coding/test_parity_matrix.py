"""Seed 004 §9.12, the cross-provider parity matrix: 15 rows × 3 profiles.

Every cell runs a real :class:`phi.coding.Session` whose profile talks its own wire protocol
(OpenAI Responses SSE, Anthropic Messages SSE, Gemini ``alt=sse``) to a scripted model on
127.0.0.1 (:mod:`wire`), with the reference agent's tool names and parameters (:mod:`dialects`);
the tools act on a real temporary directory.
"""

from __future__ import annotations

import json
import os

import pytest

from phi.coding import EventKind, SessionConfig, SessionState, SteeringTurn

from .dialects import PROFILES, Dialect, session_for
from .helpers import check_event_order, collect, of_kind, tool_names
from .wire import server  # noqa: F401 (the fixture)
from .wire import Call, Turn, protocol_from_body, tool_outputs, user_texts

# These scripts edit files they never read; read-before-write (SPEC §9.1) is tested in tests/tools
BLIND_EDITS = SessionConfig(require_read_before_write=False)


def ends(events):
    return of_kind(events, EventKind.TOOL_CALL_END)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("profile", PROFILES)
def test_simple_file_creation(profile, server, tmp_path):
    d = Dialect(profile)
    server.script("Create hello.py", Turn(calls=[d.create("hello.py", "print('Hello World')\n")]),
                  Turn("Created hello.py."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Create hello.py that prints Hello World")
    assert (tmp_path / "hello.py").read_text() == "print('Hello World')\n"
    assert result.outcome == "completed" and result.text == "Created hello.py." and session.state == SessionState.IDLE
    assert [e.data["is_error"] for e in ends(events)] == [False]
    assert events[0].kind == EventKind.SESSION_START and events[1].kind == EventKind.USER_INPUT
    check_event_order(events, session.id)
    session.close()


@pytest.mark.parametrize("profile", PROFILES)
def test_read_file_then_edit(profile, server, tmp_path):
    d = Dialect(profile)
    write(tmp_path, "app.py", "def greet():\n    return 'hi'\n")
    server.script("Make greet", Turn(calls=[d.read("app.py")]),
                  Turn(calls=[d.edit("app.py", "    return 'hi'", "    return 'hello'")]), Turn("Done."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Make greet say hello")
    assert (tmp_path / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    read, edit = ends(events)
    assert "1 | def greet():" in read.data["output"] and not edit.data["is_error"]
    protocol, body = server.seen["Make greet"][1]
    assert "2 |     return 'hi'" in tool_outputs(protocol, body)[0]  # the model was shown the file
    check_event_order(events, session.id)


@pytest.mark.parametrize("profile", PROFILES)
def test_multi_file_edit_in_one_session(profile, server, tmp_path):
    d = Dialect(profile)
    for name in ("a.py", "b.py", "c.py"):
        write(tmp_path, name, f"NAME = '{name}'\n")
    server.script("Rename", Turn(calls=[d.edit("a.py", "NAME = 'a.py'", "NAME = 'A'"),
                                        d.edit("b.py", "NAME = 'b.py'", "NAME = 'B'")]),
                  Turn("a and b renamed."),
                  Turn(calls=[d.edit("c.py", "NAME = 'c.py'", "NAME = 'C'")]), Turn("c renamed."))
    session = session_for(profile, server, str(tmp_path), BLIND_EDITS)
    first = session.submit("Rename the NAME constants in a.py and b.py")
    events, second = collect(session, "Now c.py too")
    assert [(tmp_path / n).read_text() for n in ("a.py", "b.py", "c.py")] == ["NAME = 'A'\n", "NAME = 'B'\n",
                                                                             "NAME = 'C'\n"]
    assert first.text == "a and b renamed." and second.text == "c renamed."
    assert [type(t).__name__ for t in session.history] == [
        "UserTurn", "AssistantTurn", "ToolResultsTurn", "AssistantTurn",
        "UserTurn", "AssistantTurn", "ToolResultsTurn", "AssistantTurn"]
    assert EventKind.SESSION_START not in [e.kind for e in events]  # once per session, in the first input
    check_event_order(events, session.id)


@pytest.mark.parametrize("profile", PROFILES)
def test_shell_command_execution(profile, server, tmp_path):
    d = Dialect(profile)
    server.script("Run it", Turn(calls=[d.shell("echo hello > out.txt && cat out.txt")]), Turn("It printed hello."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Run it")
    (end,) = ends(events)
    assert end.data["output"].startswith("hello\n[exit code: 0, duration: ")
    assert (tmp_path / "out.txt").read_text() == "hello\n"
    deltas = [e.data.get("delta") for e in of_kind(events, EventKind.TOOL_CALL_OUTPUT_DELTA) if "delta" in e.data]
    assert "".join(deltas) == "hello\n"  # the output streamed while the command ran
    check_event_order(events, session.id)


@pytest.mark.parametrize("profile", PROFILES)
def test_shell_command_timeout(profile, server, tmp_path):
    d = Dialect(profile)
    server.script("Sleep", Turn(calls=[d.shell("echo started; sleep 20", timeout_ms=400)]),
                  Turn("The command timed out; I will not retry it."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Sleep for a while")
    (end,) = ends(events)
    assert end.data["is_error"] and "Command timed out after 400ms" in end.data["error"]
    assert end.data["output"].startswith("started")  # the partial output is kept
    protocol, body = server.seen["Sleep"][1]
    assert "timed out after 400ms" in tool_outputs(protocol, body)[0]
    assert result.outcome == "completed" and session.state == SessionState.IDLE


@pytest.mark.parametrize("profile", PROFILES)
def test_grep_and_glob_find_files(profile, server, tmp_path):
    d = Dialect(profile)
    write(tmp_path, "src/a.py", "def target():\n    pass\n")
    write(tmp_path, "src/b.py", "def other():\n    pass\n")
    write(tmp_path, "docs/notes.md", "def target in prose\n")
    server.script("Where", Turn(calls=[d.glob("**/*.py"), d.grep("def target")]), Turn("In src/a.py."))
    session = session_for(profile, server, str(tmp_path))
    events, _ = collect(session, "Where is target defined?")
    glob_end, grep_end = sorted(ends(events), key=lambda e: e.data["tool_name"])
    assert sorted(glob_end.data["output"].splitlines()) == ["src/a.py", "src/b.py"]
    assert "a.py" in grep_end.data["output"] and "b.py" not in grep_end.data["output"]
    assert "notes.md" not in grep_end.data["output"]  # the include/glob filter was applied


@pytest.mark.parametrize("profile", PROFILES)
def test_multi_step_read_analyze_edit(profile, server, tmp_path):
    d = Dialect(profile)
    write(tmp_path, "config.py", "TIMEOUT = 30\nRETRIES = 3\n")

    def analyze(body):  # the model acts on what the read returned
        seen = tool_outputs(protocol_from_body(body), body)[-1]
        assert "1 | TIMEOUT = 30" in seen
        return Turn("TIMEOUT is 30 s, too short for CI; raising it to 120.",
                    [d.edit("config.py", "TIMEOUT = 30", "TIMEOUT = 120")])

    server.script("Check", Turn(calls=[d.read("config.py")]), analyze, Turn("Raised TIMEOUT to 120."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Check the timeout settings and fix them for CI")
    assert (tmp_path / "config.py").read_text() == "TIMEOUT = 120\nRETRIES = 3\n"
    texts = [e.data["text"] for e in of_kind(events, EventKind.ASSISTANT_TEXT_END)]
    assert texts == ["", "TIMEOUT is 30 s, too short for CI; raising it to 120.", "Raised TIMEOUT to 120."]
    assert result.rounds == 2


@pytest.mark.parametrize("profile", PROFILES)
def test_tool_output_truncation_large_file(profile, server, tmp_path):
    d = Dialect(profile)
    write(tmp_path, "big.txt", "x" * 100_000)
    server.script("Read big", Turn(calls=[d.read("big.txt")]), Turn("It is all x."))
    session = session_for(profile, server, str(tmp_path))
    events, _ = collect(session, "Read big.txt")
    (end,) = ends(events)
    assert end.data["output"].count("x") == 100_000  # the event holds all of it
    assert end.data["truncated"] and "[WARNING: Tool output was truncated." in end.data["model_output"]
    protocol, body = server.seen["Read big"][1]
    sent = tool_outputs(protocol, body)[0]
    assert "[WARNING: Tool output was truncated." in sent and len(sent) < 51_000  # read_file limit: 50k


@pytest.mark.parametrize("profile", PROFILES)
def test_parallel_tool_calls(profile, server, tmp_path):
    d = Dialect(profile)
    # each command only succeeds if the other one is running at the same time
    meet = "touch {me}.flag; for i in $(seq 300); do [ -f {other}.flag ] && exit 0; sleep 0.01; done; exit 7"
    both = [d.shell(meet.format(me="a", other="b")), d.shell(meet.format(me="b", other="a"))]
    server.script("Both", Turn(calls=both),
                  Turn("Both ran."))
    session = session_for(profile, server, str(tmp_path))
    events, _ = collect(session, "Both at once")
    assert session.profile.supports_parallel_tool_calls
    outputs = [e.data["output"] for e in ends(events)]
    assert len(outputs) == 2 and all("[exit code: 0," in o for o in outputs), outputs
    tool_kinds = [e.kind for e in events if e.kind in (EventKind.TOOL_CALL_START, EventKind.TOOL_CALL_END)]
    assert tool_kinds[:2] == [EventKind.TOOL_CALL_START] * 2


@pytest.mark.parametrize("profile", PROFILES)
def test_steering_mid_task(profile, server, tmp_path):
    d = Dialect(profile)
    server.script("Format", Turn(calls=[d.shell("echo formatting")]), Turn("Switched to tabs."))
    session = session_for(profile, server, str(tmp_path))
    session.subscribe(lambda e: session.steer("Use tabs, not spaces.") if e.kind == EventKind.TOOL_CALL_START else None)
    events, result = collect(session, "Format the code")
    order = [e.kind for e in events]
    steer = order.index(EventKind.STEERING_INJECTED)
    last_reply = len(order) - 1 - order[::-1].index(EventKind.ASSISTANT_TEXT_START)
    assert order.index(EventKind.TOOL_CALL_END) < steer < last_reply
    assert events[steer].data["content"] == "Use tabs, not spaces."
    protocol, body = server.seen["Format"][1]
    assert user_texts(protocol, body)[-1] == "Use tabs, not spaces."  # a user message for the model
    assert any(isinstance(t, SteeringTurn) and t.content == "Use tabs, not spaces." for t in session.history)


def _effort(protocol, body):
    if protocol == "openai":
        return body.get("reasoning", {}).get("effort")
    if protocol == "anthropic":
        return body.get("thinking", {}).get("budget_tokens")
    return body.get("generationConfig", {}).get("thinkingConfig", {}).get("thinkingBudget")


@pytest.mark.parametrize("profile", PROFILES)
def test_reasoning_effort_change(profile, server, tmp_path):
    d = Dialect(profile)
    server.script("Think", Turn(calls=[d.shell("echo step")]), Turn("First answer."), Turn("Second answer."))
    session = session_for(profile, server, str(tmp_path), SessionConfig(reasoning_effort="low"))

    def raise_effort(event):
        if event.kind == EventKind.TOOL_CALL_START:
            session.config.reasoning_effort = "high"  # mid-input: applies to the very next model call

    unsubscribe = session.subscribe(raise_effort)
    session.submit("Think about it")
    unsubscribe()
    session.config.reasoning_effort = None  # provider default: no reasoning setting at all
    session.submit("And again")
    efforts = [_effort(p, b) for p, b in server.seen["Think"]]
    expected = {"openai": ["low", "high", None], "anthropic": [1024, 8192, None], "gemini": [1024, 8192, None]}
    assert efforts == expected[profile]


@pytest.mark.parametrize("profile", PROFILES)
def test_subagent_spawn_and_wait(profile, server, tmp_path):
    d = Dialect(profile)
    (tmp_path / "sub").mkdir()
    task = "Write notes.txt saying child notes"

    def wait_for_child(body):
        agent_id = json.loads(tool_outputs(protocol_from_body(body), body)[-1])["agent_id"]
        return Turn(calls=[Call("wait", {"agent_id": agent_id})])

    server.script("Delegate", Turn(calls=[d.spawn(task, working_dir="sub")]), wait_for_child,
                  Turn("The sub-agent wrote the notes."))
    server.script(task, Turn(calls=[d.create("notes.txt", "child notes\n")]), Turn("notes written"))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Delegate the notes to a sub-agent")
    assert (tmp_path / "sub" / "notes.txt").read_text() == "child notes\n"  # scoped to the subdirectory
    spawn_end, wait_end = ends(events)
    assert json.loads(spawn_end.data["output"])["status"] == "running"
    assert json.loads(wait_end.data["output"]) == {"output": "notes written", "success": True, "turns_used": 2}
    child_protocol, child_body = server.seen[task][0]
    assert "spawn_agent" not in tool_names(child_protocol, child_body)  # depth limit 1
    assert "spawn_agent" in tool_names(*server.seen["Delegate"][0])
    assert result.text == "The sub-agent wrote the notes."
    session.close()


@pytest.mark.parametrize("profile", PROFILES)
def test_loop_detection_triggers_warning(profile, server, tmp_path):
    d = Dialect(profile)
    write(tmp_path, "same.txt", "same\n")
    server.script("Loop", *[Turn(calls=[d.read("same.txt")]) for _ in range(10)], Turn("I will stop repeating."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Loop on the file")
    (warning,) = of_kind(events, EventKind.LOOP_DETECTION)
    assert "Loop detected" in warning.data["message"]
    order = [e.kind for e in events]
    position = events.index(warning)
    assert order[:position].count(EventKind.TOOL_CALL_END) == 10
    assert order[position:].count(EventKind.ASSISTANT_TEXT_START) == 1  # before the 11th model call
    protocol, body = server.seen["Loop"][10]
    assert user_texts(protocol, body)[-1] == warning.data["message"]
    assert isinstance(session.history[-2], SteeringTurn)
    assert result.text == "I will stop repeating."


@pytest.mark.parametrize("profile", PROFILES)
def test_error_recovery_tool_fails_model_retries(profile, server, tmp_path):
    d = Dialect(profile)
    write(tmp_path, "src/real.py", "VALUE = 1\n")
    server.script("Show", Turn(calls=[d.read("missing.py")]), Turn(calls=[d.read("src/real.py")]),
                  Turn("VALUE is 1."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Show the value")
    failed, retried = ends(events)
    assert failed.data["is_error"] and "File not found: missing.py" in failed.data["error"]
    assert not retried.data["is_error"] and "VALUE = 1" in retried.data["output"]
    protocol, body = server.seen["Show"][1]
    assert "File not found" in tool_outputs(protocol, body)[0]
    if protocol == "anthropic":
        assert body["messages"][-1]["content"][0]["is_error"] is True
    assert result.outcome == "completed"


@pytest.mark.parametrize("profile", PROFILES)
def test_provider_specific_editing_format(profile, server, tmp_path):
    source = "import os\n\nDEFAULT_TIMEOUT = 30\n\n\ndef load():\n    debug = False\n    return debug\n"
    write(tmp_path, "settings.py", source)
    if profile == "openai":  # codex: one patch, two hunks located by their @@ context
        patch = ("*** Begin Patch\n*** Update File: settings.py\n@@ import os\n-DEFAULT_TIMEOUT = 30\n"
                 "+DEFAULT_TIMEOUT = 60\n@@ def load():\n-    debug = False\n+    debug = True\n*** End Patch")
        calls = [Call("apply_patch", {"input": patch})]
    elif profile == "anthropic":  # Claude Code: exact old_string / new_string, replace_all
        calls = [Call("edit_file", {"file_path": "settings.py", "old_string": "DEFAULT_TIMEOUT = 30",
                                    "new_string": "DEFAULT_TIMEOUT = 60"}),
                 Call("edit_file", {"file_path": "settings.py", "old_string": "debug", "new_string": "verbose",
                                    "replace_all": True})]
    else:  # gemini-cli: old_string / new_string with expected_replacements
        calls = [Call("edit_file", {"file_path": "settings.py", "old_string": "DEFAULT_TIMEOUT = 30",
                                    "new_string": "DEFAULT_TIMEOUT = 60"}),
                 Call("edit_file", {"file_path": "settings.py", "old_string": "debug", "new_string": "verbose",
                                    "expected_replacements": 2})]
    server.script("Update", *[Turn(calls=[c]) for c in calls], Turn("Updated."))
    session = session_for(profile, server, str(tmp_path), BLIND_EDITS)
    events, _ = collect(session, "Update the settings")
    assert not any(e.data["is_error"] for e in ends(events))
    expected = source.replace("30", "60")
    expected = expected.replace("False", "True") if profile == "openai" else expected.replace("debug", "verbose")
    assert (tmp_path / "settings.py").read_text() == expected
    assert os.listdir(tmp_path) == ["settings.py"]
