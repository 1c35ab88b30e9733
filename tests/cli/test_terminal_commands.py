"""More of the interactive ``phi`` in a pty: the offline model, thinking shown dimmed and hidden,
/help, /tools, /model, /clear, /sessions, ``--resume`` at start, multi-line input."""

from __future__ import annotations

import json

from coding.wire import Call, Turn, user_texts

from cli.terminal_helpers import PtyPhi


def test_offline_session_streams_thinking_dimmed_and_hides_it_on_request(project, phi_home):
    phi = PtyPhi(["--offline", "--color", "always"], project, {"PHI_HOME": str(phi_home)})
    try:
        phi.prompt()
        phi.send_line("what is here?")
        phi.expect(r"thinking: Let me look at the working directory first\.")
        assert "\x1b[2mthinking: \x1b[0m" in phi.raw.decode()
        phi.expect(r"\[1\] ✓ glob\(pattern=\*\)")
        phi.expect(r"I found: notes\.txt")
        phi.expect(r"offline-scripted · in [\d,]+ out [\d,]+ .* unknown \(session unknown\)")
        phi.prompt()
        phi.send_line("/thinking hide")
        phi.expect("thinking hidden")
        phi.prompt()
        phi.send_line("again please")
        phi.expect(r"I found: notes\.txt")
        phi.prompt()
        assert "thinking:" not in phi.text[phi._mark:]
    finally:
        phi.close()


def test_help_and_tools_list_what_there_is(launch):
    phi = launch()
    phi.prompt()
    phi.send_line("/help")
    for command in ("/quit", "/clear", "/model", "/thinking", "/plan", "/execute", "/approve", "/editor", "/tools",
                    "/save", "/sessions", "/resume", "/export", "/show"):
        phi.expect(command)
    phi.prompt()
    phi.send_line("/tools")
    phi.expect(r"edit_file\s+write")
    phi.expect(r"shell\s+execute")
    phi.prompt()
    phi.send_line("/nonsense")
    phi.expect("unknown command /nonsense")


def test_model_switch_keeps_the_conversation_and_clear_starts_a_new_one(launch, model):
    model.script("First question", Turn("First answer."), Turn("Second answer."))
    model.script("Fresh start", Turn("Fresh answer."))
    phi = launch()
    phi.prompt()
    phi.send_line("First question")
    phi.expect("First answer.")
    phi.prompt()
    phi.exchange("/model claude-haiku-4-5", "model: claude-haiku-4-5 \\(anthropic\\); the conversation goes on")
    phi.exchange("Second question", "Second answer.", r"claude-haiku-4-5 · in")
    second = model.requests_of("First question")[1]
    assert second["model"] == "claude-haiku-4-5"
    assert user_texts("anthropic", second) == ["First question", "Second question"]
    phi.send_line("/clear")
    phi.expect("new conversation")
    phi.prompt()
    phi.send_line("Fresh start")
    phi.expect("Fresh answer.")
    (fresh,) = model.requests_of("Fresh start")
    assert user_texts("anthropic", fresh) == ["Fresh start"]


def test_a_line_ending_in_a_backslash_continues_the_input(launch, model):
    model.script("Line one", Turn("Got both lines."))
    phi = launch()
    phi.prompt()
    phi.send("Line one\\\r")
    phi.expect("… ")
    phi.send("line two\r")
    phi.expect("Got both lines.")
    (request,) = model.requests_of("Line one")
    assert user_texts("anthropic", request) == ["Line one\nline two"]


def test_resume_flag_at_start_and_sessions_list(launch, model):
    model.script("Keep this", Turn("Kept."), Turn("Still here."))
    first = launch()
    first.prompt()
    first.exchange("Keep this", "Kept.")
    first.send_line("/sessions")
    session_id = first.expect(r"([0-9a-f-]{36})  \S+ \S+\s+1 runs  Keep this \*").group(1)
    first.close()
    second = launch("--resume", session_id)
    second.expect(f"session {session_id} \\(resumed\\)")
    second.prompt()
    second.send_line("Still there?")
    second.expect("Still here.")
    second.expect(f"resumed session {session_id}: 2 messages", since_mark=False)


def test_a_pasted_block_of_lines_is_one_input(launch, model):
    """Terminals wrap a paste in bracketed-paste marks; readline keeps its newlines in one input."""
    model.script("Pasted line A", Turn("Got the paste."))
    phi = launch()
    phi.prompt()
    phi.send("\x1b[200~Pasted line A\nline B\nline C\x1b[201~\r")
    phi.expect("Got the paste.")
    phi.prompt()
    (request,) = model.requests_of("Pasted line A")
    assert user_texts("anthropic", request) == ["Pasted line A\nline B\nline C"]


def test_thinking_level_reaches_the_model_request(launch, model):
    model.script("Think first", Turn("quick"), Turn("deep"))
    phi = launch()
    phi.prompt()
    phi.exchange("Think first", "quick")
    phi.exchange("/thinking high", "reasoning effort: high · thinking shown")
    phi.exchange("Now think hard", "deep")
    before, after = model.requests_of("Think first")
    assert "thinking" not in before
    assert after["thinking"]["type"] == "enabled" and after["thinking"]["budget_tokens"] > 0


def test_the_input_history_survives_a_restart(launch, model, phi_home):
    model.script("Remember me in history", Turn("ok"), Turn("again"))
    first = launch()
    first.prompt()
    first.exchange("Remember me in history", "ok")
    assert first.close() == 0
    assert "Remember me in history" in (phi_home / "history").read_text()
    second = launch()
    second.prompt()
    second.send("\x1b[A\x1b[A\r")  # Up twice: past /quit to the input before it
    second.expect("again")


def test_model_switch_to_another_service_keeps_the_conversation(launch, model):
    """``/model NAME`` of another family switches the service (and its profile) even when phi was
    started with ``--provider``; the new service's request carries the whole conversation."""
    model.script("Across services", Turn("Answer from Claude."), Turn("Answer from GPT."), Turn("Back on Claude."))
    phi = launch(env={"OPENAI_API_KEY": "sk-test-openai"})
    phi.prompt()
    phi.exchange("Across services", "Answer from Claude.")
    phi.exchange("/model gpt-5.2-codex", r"model: gpt-5\.2-codex \(openai\); the conversation goes on")
    phi.exchange("And now?", "Answer from GPT.", r"gpt-5\.2-codex · in")
    phi.exchange("/model anthropic:claude-haiku-4-5", r"model: claude-haiku-4-5 \(anthropic\)")
    phi.exchange("Once more", "Back on Claude.")
    first, second, third = model.requests_of("Across services")
    assert second["model"] == "gpt-5.2-codex" and "input" in second  # the Responses API
    assert user_texts("openai", second) == ["Across services", "And now?"]
    assert "Answer from Claude." in json.dumps(second["input"])
    assert third["model"] == "claude-haiku-4-5"
    assert user_texts("anthropic", third) == ["Across services", "And now?", "Once more"]
    assert "Answer from GPT." in json.dumps(third["messages"])


def test_approve_command_switches_between_asking_for_everything_and_nothing(launch, model, project):
    model.script("Read then write", Turn("", [Call("read_file", {"file_path": "notes.txt"})]), Turn("read it"),
                 Turn("", [Call("write_file", {"file_path": "w.txt", "content": "w\n"})]), Turn("wrote it"))
    phi = launch()
    phi.prompt()
    phi.exchange("/approve on", r"approval: on \(no permission rules")
    phi.send_line("Read then write")
    phi.expect(r"\? allow read_file\(file_path=notes\.txt\)")  # on: even a read is asked
    phi.send_line("y")
    phi.expect("read it")
    phi.prompt()
    phi.exchange("/approve off", r"approval: off")
    phi.exchange("now write", "wrote it")
    assert "allow write_file" not in phi.text
    assert (project / "w.txt").read_text() == "w\n"
    phi.exchange("/approve sometimes", "/approve takes one of on, smart, off, reset, remove N, or allow|ask|deny RULE")
