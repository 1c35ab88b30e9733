"""The interactive ``phi`` in a pty against a scripted model on the Anthropic wire (issue 15
acceptance): streaming, tool lines, diffs, the status line, Ctrl+C, steering, plan mode, approval,
/editor, /resume after a restart."""

from __future__ import annotations

import json
import time
from pathlib import Path

from coding.wire import Call, Turn, user_texts

from cli.terminal_helpers import PtyPhi

from phi.session import JsonDirStore


def test_streamed_answer_appears_before_the_reply_ends_then_the_status_line(launch, model):
    text = "FIRST-PART of the answer, " + "more words flowing slowly, " * 8 + "LAST-PART."
    model.script("Explain", Turn(text)).slow("Explain", chunk_size=250, delay=0.1)
    phi = launch()
    phi.prompt()
    phi.send_line("Explain streaming")
    phi.expect("FIRST-PART")
    assert "LAST-PART" not in phi.text, "the whole reply arrived at once: nothing was streamed"
    phi.expect("LAST-PART")
    status = phi.expect(r"claude-sonnet-4-5 · in (\d+) out (\d+) · cache 0 read \(0%\) · \$(\S+) \(session \$\S+\) "
                        r"· context \[[█░]+\] \d+%")
    assert status.group(1) == "377" and status.group(2) == "65"
    assert status.group(3) == f"{(377 * 3 + 65 * 15) / 1e6:.4f}"  # claude-sonnet-4-5 list price
    phi.prompt()


def test_a_tool_call_is_one_line_and_an_edit_shows_a_coloured_diff(launch, model, project):
    model.script("Fix the notes", Turn("Reading.", [Call("read_file", {"file_path": "notes.txt"})]),
                 Turn("", [Call("edit_file", {"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA"})]),
                 Turn("Done."))
    phi = launch("--approve", "off", "--color", "always")
    phi.prompt()
    phi.send_line("Fix the notes")
    phi.expect(r"\[1\] ✓ read_file\(file_path=notes\.txt\) \d+\.\ds · 3 lines")
    phi.expect(r"\[2\] ✓ edit_file\(file_path=notes\.txt, old_string=beta, new_string=BETA\)")
    phi.expect(r"--- a/notes\.txt\n\+\+\+ b/notes\.txt\n@@ .* @@\n alpha\n-beta\n\+BETA\n gamma")
    assert "\x1b[32m+BETA\x1b[0m" in phi.raw.decode() and "\x1b[31m-beta\x1b[0m" in phi.raw.decode()
    phi.expect("Done.")
    phi.prompt()
    phi.send_line("/show 1")
    phi.expect(r"\[1\] read_file\(\{\"file_path\": \"notes.txt\"\}\)\n.*alpha.*beta.*gamma")
    assert (project / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"


def test_ctrl_c_during_a_slow_stream_aborts_quickly_and_keeps_the_conversation(launch, model):
    model.script("Tell a long story", Turn("Once upon a time " + "and then " * 400), Turn("The end."))
    model.slow("Tell a long story", chunk_size=200, delay=0.2)
    phi = launch()
    phi.prompt()
    phi.send_line("Tell a long story")
    phi.expect("Once upon a time")
    elapsed = phi.interrupt()
    print(f"prompt back {elapsed * 1000:.0f} ms after Ctrl+C")
    assert elapsed < 0.2 + 0.3, f"the prompt came back {elapsed:.3f}s after Ctrl+C"  # 0.3 s of pty/CI slack
    # the session goes on: the next input is answered, and its request still holds the first one
    t0 = time.monotonic()
    phi.send_line("Finish it quickly")
    phi.expect("The end.")
    print(f"second answer after {time.monotonic() - t0:.2f}s")
    phi.prompt()
    resumed = model.requests_of("Tell a long story")[1]
    assert user_texts("anthropic", resumed) == ["Tell a long story", "Finish it quickly"]


def test_text_typed_while_a_run_streams_reaches_the_next_model_request_as_steering(launch, model):
    model.script("Run the slow tool", Turn("", [Call("shell", {"command": "sleep 1.5; echo slept"})]), Turn("ok"))
    phi = launch("--approve", "off")
    phi.prompt()
    phi.send_line("Run the slow tool")
    time.sleep(0.5)
    phi.send("please also add tests\r")
    phi.expect("steering: please also add tests")
    phi.expect(r"› $")
    second = model.requests_of("Run the slow tool")[1]
    assert "please also add tests" in user_texts("anthropic", second)


def test_plan_mode_offers_only_reading_tools_and_execute_offers_all_again(launch, model):
    model.script("Plan the change", Turn("1. edit notes.txt"), Turn("Carrying out."))
    phi = launch()
    phi.prompt()
    phi.exchange("/plan", "PLAN mode")
    phi.send_line("Plan the change")
    phi.expect(r"PLAN · in")
    phi.expect(r"PLAN › $")
    phi.send_line("/execute")
    phi.expect("Carrying out.")
    phi.prompt()
    planned, executed = model.requests_of("Plan the change")
    planned_tools = {t["name"] for t in planned["tools"]}
    assert planned_tools and planned_tools <= {"read_file", "grep", "glob"}
    assert {"write_file", "edit_file", "shell"} <= {t["name"] for t in executed["tools"]}
    assert "plan mode" in json.dumps(planned["system"])
    assert "Carry out the plan" in user_texts("anthropic", executed)[-1]


def test_approval_prompt_denies_then_allows_always(launch, model, project):
    model.script("Write two files",
                 Turn("", [Call("write_file", {"file_path": "one.txt", "content": "1\n"})]),
                 Turn("", [Call("write_file", {"file_path": "two.txt", "content": "2\n"})]),
                 Turn("", [Call("write_file", {"file_path": "three.txt", "content": "3\n"})]),
                 Turn("finished"))
    phi = launch("--approve", "smart")
    phi.prompt()
    phi.send_line("Write two files")
    phi.expect(r"\? allow write_file\(file_path=one\.txt, content=1\) — \[y\]es, \[n\]o, \[a\]lways for this session: ")
    phi.send_line("n")
    phi.expect(r"\[1\] ✗ write_file.*denied by the user")
    phi.expect(r"\? allow write_file\(file_path=two\.txt")
    phi.send_line("a")
    phi.expect(r"\[2\] ✓ write_file")
    phi.expect(r"\[3\] ✓ write_file")  # trusted now: not asked again
    phi.expect("finished")
    phi.prompt()
    assert "allow write_file(file_path=three.txt" not in phi.text
    assert not (project / "one.txt").exists()
    assert (project / "two.txt").read_text() == "2\n" and (project / "three.txt").read_text() == "3\n"


def test_editor_sends_what_was_written_and_an_empty_file_cancels(launch, model, tmp_path):
    editor = tmp_path / "fake-editor"
    editor.write_text("#!/bin/sh\nif [ -f \"$PHI_FAKE_EDIT\" ]; then cat \"$PHI_FAKE_EDIT\" > \"$1\"; fi\n")
    editor.chmod(0o755)
    message = tmp_path / "message.txt"
    model.script("From the editor", Turn("Got your long message."))
    phi = launch(env={"EDITOR": str(editor), "VISUAL": "", "PHI_FAKE_EDIT": str(message)})
    phi.prompt()
    phi.send_line("/editor")
    phi.expect("empty file: cancelled")
    phi.prompt()
    message.write_text("From the editor:\nline two\nline three\n")
    phi.send_line("/editor")
    phi.expect("Got your long message.")
    (request,) = model.requests_of("From the editor")
    assert user_texts("anthropic", request) == ["From the editor:\nline two\nline three"]


def test_resume_after_a_restart_restores_the_conversation(launch, model, phi_home):
    model.script("Remember the number 42", Turn("I will remember 42."), Turn("It was 42."))
    first = launch()
    first.prompt()
    first.exchange("Remember the number 42", "I will remember 42.")
    session_id = first.expect(r"session ([0-9a-f-]{36})", since_mark=False).group(1)
    assert first.close() == 0
    second = launch()
    second.prompt()
    second.send_line(f"/resume {session_id}")
    second.expect(r"resumed session .*: 2 messages")
    second.prompt()
    second.send_line("What was the number?")
    second.expect("It was 42.")
    second.prompt()
    resumed = model.requests_of("Remember the number 42")[1]
    assert user_texts("anthropic", resumed) == ["Remember the number 42", "What was the number?"]
    stored = JsonDirStore(Path(phi_home) / "sessions").load(session_id)  # both runs, in one session
    assert [loop.loop_id.rsplit(".", 1)[-1] for loop in stored.loops] == ["1", "2"]


def test_ctrl_c_twice_at_the_prompt_exits(launch):
    phi = launch()
    phi.prompt()
    phi.ctrl_c()
    phi.expect("Ctrl\\+C again to exit")
    phi.ctrl_c()
    assert phi.proc.wait(10) == 0


def test_ctrl_c_while_a_command_runs_stops_it_and_the_prompt_returns(launch, model, project):
    model.script("Wait for it", Turn("", [Call("shell", {"command": "sleep 30; touch finished.txt"})]), Turn("ok"))
    phi = launch("--approve", "off")
    phi.prompt()
    phi.send_line("Wait for it")
    deadline = time.monotonic() + 20
    while len(model.requests_of("Wait for it")) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the command is running
    assert phi.interrupt() < 5, "the prompt took too long to return"
    time.sleep(0.3)
    assert not (project / "finished.txt").exists()
    assert len(model.requests_of("Wait for it")) == 1  # nothing was sent to the model after the abort


def test_ctrl_c_while_the_server_has_gone_silent_mid_reply_returns_the_prompt(launch, model):
    model.script("Hang after a bit", Turn("The beginning " + "x" * 300), Turn("recovered"))
    model.slow("Hang after a bit", chunk_size=100, delay=0.05, silent_after=900)  # inside the text
    phi = launch()
    phi.prompt()
    phi.send_line("Hang after a bit")
    phi.expect("The beginning")
    time.sleep(0.3)  # the stream is now stalled: no bytes, no end
    elapsed = phi.interrupt()
    print(f"prompt back {elapsed * 1000:.0f} ms after Ctrl+C on a silent stream")
    assert elapsed < 0.5
    phi.exchange("Go on", "recovered")


def test_openai_profile_apply_patch_shows_the_diff_of_every_file(launch, model, project):
    patch = ("*** Begin Patch\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+BETA\n gamma\n"
             "*** Add File: new.txt\n+fresh\n*** End Patch")
    model.script("Patch the notes", Turn("", [Call("apply_patch", {"input": patch})]), Turn("Patched."))
    phi = PtyPhi(["--provider", "openai", "--model", "gpt-5.2-codex", "--base-url", f"{model.url}/v1",
                  "--approve", "off"], project, {"OPENAI_API_KEY": "sk-test", "PHI_HOME": str(project.parent / "h")})
    try:
        phi.prompt()
        phi.exchange("Patch the notes", r"\[1\] ✓ apply_patch\(input=\*\*\* Begin Patch",
                     r"--- a/notes\.txt\n\+\+\+ b/notes\.txt\n@@ .* @@\n alpha\n-beta\n\+BETA\n gamma\n"
                     r"--- /dev/null\n\+\+\+ b/new\.txt\n@@ -0,0 \+1 @@\n\+fresh", "Patched.",
                     r"gpt-5\.2-codex · in 116 out 46 · cache 0 read \(0%\) · \$0\.0008")  # two calls: summed
    finally:
        phi.close()
    assert (project / "new.txt").read_text() == "fresh\n"


def test_print_mode_on_a_terminal_names_the_session_to_resume(model, project, phi_home):
    model.script("Quick one", Turn("Quick answer."))
    phi = PtyPhi(["-p", "Quick one", "--provider", "anthropic", "--base-url", model.url], project,
                 {"ANTHROPIC_API_KEY": "sk-test", "PHI_HOME": str(phi_home)})
    try:
        found = phi.expect(r"Quick answer\.\nphi: session ([0-9a-f-]{36}) \(phi --resume \1\)")
        assert phi.proc.wait(10) == 0
        assert JsonDirStore(phi_home / "sessions").list_ids() == [found.group(1)]
    finally:
        phi.close()


def test_status_line_counts_cache_hits_and_the_gauge_turns_yellow_then_red(launch, model):
    """Usage as the Anthropic stream reports it (cache reads, a growing prompt) reaches the status line:
    cache reads and hit rate, their price in the cost, the gauge's colour by the context's fill."""
    from coding.wire import anthropic_sse
    from providers.conftest import Reply

    def reply(text: str, input_tokens: int, cache_read: int) -> Reply:
        body = anthropic_sse(Turn(text)).replace(b'"input_tokens":377', b'"input_tokens":%d' % input_tokens)
        return Reply(body.replace(b'"cache_read_input_tokens":0', b'"cache_read_input_tokens":%d' % cache_read))

    model.script("Use the cache", reply("cached", 400, 1200), reply("fuller", 130_000, 0), reply("full", 180_000, 0))
    phi = launch("--color", "always")
    phi.prompt()
    phi.exchange("Use the cache", "cached", r"in 400 out 65 · cache 1,200 read \(75%\) · \$(\S+) .* context \[.*\] 1%")
    cost = (400 * 3 + 65 * 15 + 1200 * 0.30) / 1e6
    assert f"${cost:.4f} (session ${cost:.4f})" in phi.text
    phi.exchange("More", "fuller", r"context \[.*\] 65%")
    phi.exchange("Even more", "full", r"context \[.*\] 90%")
    raw = phi.raw.decode()
    assert "\x1b[32m[░░░░░░░░░░] 1%" in raw  # green, yellow, red (seed 002 §16.7)
    assert "\x1b[33m[███████░░░] 65%" in raw
    assert "\x1b[31m[█████████░] 90%" in raw


def test_gemini_profile_edit_and_new_file_show_their_diffs(model, project):
    model.script("Edit and add", Turn("", [Call("read_file", {"file_path": "notes.txt"})]),  # read before write
                 Turn("", [Call("edit_file", {"file_path": "notes.txt", "old_string": "gamma",
                                                              "new_string": "GAMMA", "expected_replacements": 1}),
                                           Call("write_file", {"file_path": "sub/added.txt", "content": "one\ntwo\n"})]),
                 Turn("Both done."))
    phi = PtyPhi(["--provider", "gemini", "--base-url", model.url, "--approve", "off"], project,
                 {"GEMINI_API_KEY": "test-gemini-key", "PHI_HOME": str(project.parent / "h")})
    try:
        phi.prompt()
        phi.exchange("Edit and add", "Both done.")
        screen = phi.text
        assert "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n alpha\n beta\n-gamma\n+GAMMA\n" in screen, screen
        assert "--- /dev/null\n+++ b/sub/added.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n" in screen, screen
    finally:
        phi.close()
    assert (project / "sub" / "added.txt").read_text() == "one\ntwo\n"


def test_always_for_a_command_allows_its_prefix_and_asks_about_another_command(launch, model, project):
    """Issue 34: "a" to `echo harmless` once let every later command run unasked (a `touch` ran);
    now the question shows the rule it adds, the command's prefix, and only that prefix is trusted."""
    model.script("Run things",
                 Turn("", [Call("shell", {"command": "echo harmless"})]),
                 Turn("", [Call("shell", {"command": "echo harmless --twice"})]),
                 Turn("", [Call("shell", {"command": "touch made.txt"})]),
                 Turn("finished"))
    phi = launch("--approve", "smart")
    phi.prompt()
    phi.send_line("Run things")
    phi.expect(r'\[a\] always allow: shell "echo harmless \*"')
    phi.expect(r"\? allow shell: echo harmless — \[y\]es, \[n\]o, \[a\]lways for this session: ")
    phi.send_line("a")
    phi.expect(r"\[2\] ✓ shell")  # the same prefix again: not asked
    phi.expect(r"\? allow shell: touch made\.txt")  # another command: asked
    phi.send_line("n")
    phi.expect("finished")
    phi.prompt()
    assert phi.text.count("? allow shell: echo harmless") == 1
    assert not (project / "made.txt").exists()
    phi.exchange("/approve", r'approval: smart; permission rules first.*\n\s+1\. allow shell "echo harmless \*"\s+session')
