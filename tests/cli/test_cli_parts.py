"""The pieces of the ``phi`` command on their own: choosing the model, rendering (gauge, diffs,
tool lines), the approval gate, and session save/resume merging."""

from __future__ import annotations

import io
import threading

import pytest

from phi.cli.approval import ApprovalGate, Question
from phi.cli.options import CliOptions, NoModel, choose_profile_id, make_profile, parse
from phi.cli.render import Renderer, Style, TurnStats, file_diff, gauge, status_line, summary, touched_paths
from phi.coding import ApprovalRequest, EventKind, SessionEvent
from phi.errors import ConfigError
from phi.types import Usage

# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize("env, expected", [
    ({"ANTHROPIC_API_KEY": "k"}, "anthropic"), ({"OPENAI_API_KEY": "k"}, "openai"),
    ({"GOOGLE_API_KEY": "k"}, "gemini"), ({"OPENAI_API_KEY": "k", "GEMINI_API_KEY": "k"}, "openai")])
def test_the_profile_follows_the_first_key_in_the_environment(env, expected):
    assert choose_profile_id(CliOptions(), env) == expected


def test_flags_choose_before_keys():
    env = {"ANTHROPIC_API_KEY": "k"}
    assert choose_profile_id(CliOptions(model="gpt-5.2-codex"), env) == "openai"
    assert choose_profile_id(CliOptions(model="gemini-2.5-flash"), env) == "gemini"
    assert choose_profile_id(CliOptions(provider="google"), env) == "gemini"
    with pytest.raises(ConfigError, match="--provider"):
        choose_profile_id(CliOptions(model="llama-3"), env)


def test_no_key_names_every_variable_and_the_offline_way():
    with pytest.raises(NoModel) as caught:
        choose_profile_id(CliOptions(), {"ANTHROPIC_API_KEY": "  "})
    message = str(caught.value)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "--offline"):
        assert name in message


def test_base_url_and_model_reach_the_profile():
    profile = make_profile(CliOptions(provider="openai", model="gpt-5-mini", base_url="http://127.0.0.1:9"),
                           env={"OPENAI_API_KEY": "k"})
    assert (profile.id, profile.model, profile.model_config.base_url) == ("openai", "gpt-5-mini", "http://127.0.0.1:9")


def test_model_command_names_choose_the_service():
    env = {"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}
    started = CliOptions(provider="anthropic", base_url="http://127.0.0.1:9")
    assert make_profile(started, model="gemini-2.5-flash", env=env).id == "gemini"
    assert make_profile(started, model="claude-haiku-4-5", env=env).id == "anthropic"
    assert make_profile(started, model="my-proxy-model", env=env).id == "anthropic"  # unknown name: same service
    named = make_profile(started, model="gemini:custom-tuned", env=env)
    assert (named.id, named.model) == ("gemini", "custom-tuned")
    with pytest.raises(ConfigError, match="unknown service 'acme'"):
        make_profile(started, model="acme:thing", env=env)


@pytest.mark.parametrize("args", [["--approve", "sometimes"], ["--timeout", "0"], ["--timeout", "soon"],
                                  ["--max-turns", "-1"], ["-p", "  "]])
def test_bad_arguments_exit_2(args):
    with pytest.raises(SystemExit) as caught:
        parse(args)
    assert caught.value.code == 2


def test_timeout_reaches_the_model_config():
    options = parse(["--timeout", "2.5", "--provider", "openai", "--base-url", "http://127.0.0.1:9"])
    assert make_profile(options, env={"OPENAI_API_KEY": "k"}).model_config.options["read_timeout"] == 2.5


# ----------------------------------------------------------------------------- rendering


def test_gauge_colours_follow_the_thresholds():
    style = Style(True)
    assert gauge(0.59, style).startswith("\x1b[32m")
    assert gauge(0.60, style).startswith("\x1b[33m") and gauge(0.849, style).startswith("\x1b[33m")
    assert gauge(0.85, style).startswith("\x1b[31m")
    assert gauge(0.5, Style(False)) == "[█████░░░░░] 50%"


def test_status_line_says_unknown_cost_for_an_unpriced_model():
    turn = TurnStats()
    turn.add(Usage(input=100, output=10, cache_read=300), "my-model")
    line = status_line("my-model", turn, turn, 1000, Style(False))
    assert line == "my-model · in 100 out 10 · cache 300 read (75%) · unknown (session unknown) · context [████░░░░░░] 41%"


def test_touched_paths_of_arguments_and_patches():
    assert touched_paths({"file_path": "a.py", "content": "x"}) == ["a.py"]
    patch = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Move to: src/b.py\n"
             "*** Add File: new.txt\n+hi\n*** Delete File: old.txt\n*** End Patch")
    assert touched_paths({"input": patch}) == ["src/a.py", "src/b.py", "new.txt", "old.txt"]


def test_diffs_of_new_and_deleted_files_are_all_additions_or_deletions():
    assert file_diff("n.txt", None, "a\nb\n")[:3] == ["--- /dev/null", "+++ b/n.txt", "@@ -0,0 +1,2 @@"]
    assert file_diff("o.txt", "a\n", None)[-1] == "-a"
    assert file_diff("same.txt", "a\n", "a\n") == []


def test_summary_of_outputs():
    assert summary("") == "no output"
    assert summary("one\ntwo") == "2 lines · one"


def _event(kind: EventKind, **data) -> SessionEvent:
    return SessionEvent(kind, "s", data)


def test_renderer_writes_one_line_per_call_keeps_the_output_and_diffs_writes(tmp_path):
    out = io.StringIO()
    renderer = Renderer(out, Style(False), tool_kind=lambda name: "write", cwd=str(tmp_path))
    renderer.on_event(_event(EventKind.ASSISTANT_TEXT_DELTA, delta="Let me write."))
    renderer.on_event(_event(EventKind.TOOL_CALL_START, call_id="c1", tool_name="write_file",
                             arguments={"file_path": "f.txt", "content": "new\n"}))
    (tmp_path / "f.txt").write_text("new\n")
    renderer.on_event(_event(EventKind.TOOL_CALL_END, call_id="c1", tool_name="write_file", is_error=False,
                             output="Wrote 4 bytes"))
    lines = out.getvalue().splitlines()
    assert lines[0] == "Let me write."
    assert lines[1].startswith("[1] ✓ write_file(file_path=f.txt, content=new) ") and lines[1].endswith(
        "s · 1 line · Wrote 4 bytes")
    assert lines[2:] == ["--- /dev/null", "+++ b/f.txt", "@@ -0,0 +1 @@", "+new"]
    assert renderer.show(1).splitlines()[1] == "Wrote 4 bytes"
    assert "no tool call 2" in renderer.show(2)


def test_thinking_is_dimmed_and_can_be_hidden():
    from phi.events import MessageUpdate, StreamDelta
    from phi.types import AssistantMessage

    out = io.StringIO()
    renderer = Renderer(out, Style(True))
    update = MessageUpdate("l", AssistantMessage([]), StreamDelta("thinking", "hmm", 0))
    renderer.on_core_event(update)
    assert out.getvalue() == "\x1b[2mthinking: \x1b[0m\x1b[2mhmm\x1b[0m"
    renderer.show_thinking = False
    renderer.on_core_event(update)
    assert out.getvalue().count("hmm") == 1


# ----------------------------------------------------------------------------- approval


def _request(kind: str, name: str = "tool") -> ApprovalRequest:
    return ApprovalRequest("s", "c", name, {"command": "ls"}, kind)


def test_modes_decide_who_is_asked():
    assert ApprovalGate("off")( _request("execute")).allowed
    smart = ApprovalGate("smart", interactive=False)
    assert smart(_request("read")).allowed and smart(_request("agent")).allowed
    assert not smart(_request("write")).allowed and "nobody to ask" in smart(_request("write")).reason
    assert not ApprovalGate("on", interactive=False)(_request("read")).allowed


def test_an_answer_from_the_main_thread_releases_the_tool_thread_and_always_trusts():
    gate = ApprovalGate("on")
    decisions = []
    worker = threading.Thread(target=lambda: decisions.append(gate(_request("execute", "shell"))))
    worker.start()
    question = None
    while question is None:
        question = gate.pending()
    gate.answer(question, "a")
    worker.join(5)
    assert decisions[0].allowed and [str(rule) for rule in gate.rules] == ['allow: shell "ls *"']  # not every command
    assert gate(_request("execute", "shell")).allowed  # trusted: not asked again
    assert gate.pending() is None


def test_deny_all_releases_waiting_calls():
    gate = ApprovalGate("on")
    decisions = []
    worker = threading.Thread(target=lambda: decisions.append(gate(_request("write"))))
    worker.start()
    while not decisions:
        gate.deny_all("aborted")
        worker.join(0.01)
    assert not decisions[0].allowed and decisions[0].reason == "aborted"


# ----------------------------------------------------------------------------- sessions


def test_saving_after_a_resume_keeps_the_loops_from_before(tmp_path):
    from phi import Agent
    from phi.cli.sessions import CliSessions
    from phi.providers.mock import ScriptedProvider

    first = CliSessions(tmp_path)
    agent = Agent(provider=ScriptedProvider(["one", "two"]))
    first.attach(agent)
    agent.run("a")
    agent.run("b")
    assert first.save() == []  # each run was saved as it ended (SPEC CLI-4, SESS-7)
    assert [len(first.store.load(agent.session_id).loops)] == [2]

    later = CliSessions(tmp_path)  # a new process
    resumed = Agent(provider=ScriptedProvider(["three"]))
    later.attach(resumed)
    assert later.restore(agent.session_id, resumed) == 4
    resumed.run("c")
    later.save()
    stored = later.store.load(agent.session_id)
    assert [loop.loop_id.rsplit(".", 1)[1] for loop in stored.loops] == ["1", "2", "3"]
    assert [m.text for m in stored.loops[2].messages] == ["c", "three"]
    assert stored.agent_id == agent.agent_id
    assert [row.first_input for row in later.summaries()] == ["a"]


def test_without_reported_usage_the_gauge_uses_the_token_estimate():
    from phi.cli.render import context_estimate
    from phi.types import UserMessage

    renderer = Renderer(io.StringIO(), Style(False))
    renderer.model = "m"
    messages = [UserMessage.from_text("x" * 4000)]
    tokens = context_estimate(messages, "y" * 400)
    assert 1100 <= tokens < 1150  # 1000 + 100 tokens of text, plus the message overhead
    line = renderer.status(2000, estimate=lambda: tokens)
    assert line.endswith(f"context {gauge(tokens / 2000, Style(False))}")
    assert round(tokens / 2000 * 100) >= 55


# ----------------------------------------------------------------------------- the REPL without a terminal


@pytest.fixture
def repl(tmp_path):
    from phi.cli.repl import Repl
    from phi.cli.sessions import CliSessions

    options = CliOptions(offline=True, cwd=str(tmp_path), color="never")
    out = io.StringIO()
    instance = Repl(options, make_profile(options), CliSessions(tmp_path / "sessions"), stdin=io.StringIO(), out=out)
    yield instance
    instance.close()


def test_export_writes_the_page_of_this_session_from_the_repls_own_store(repl, monkeypatch, tmp_path):
    from phi.cli.commands import dispatch

    monkeypatch.setenv("PHI_HOME", str(tmp_path / "elsewhere"))  # not where this REPL keeps its sessions
    repl.run_input("hello there")
    target = tmp_path / "out.html"
    assert dispatch(repl, f"/export {target}")
    assert f"exported to {target}" in repl.out.getvalue()
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "hello there" in page and repl.session.id in page


def test_always_allow_lasts_for_the_process_and_clear_says_so(repl):
    from phi.cli.commands import dispatch
    from phi.coding import PermissionRule

    repl.gate.add(PermissionRule("allow", "shell", "npm test *", "session"))
    dispatch(repl, "/model offline-2")  # the same conversation goes on
    assert [rule.text for rule in repl.gate.rules] == ['shell "npm test *"']
    dispatch(repl, "/clear")
    assert [rule.text for rule in repl.gate.rules] == ['shell "npm test *"']
    assert 'still always allowed: shell "npm test *"; /approve reset forgets' in repl.out.getvalue()
    dispatch(repl, "/approve reset")
    assert repl.gate.rules == []


def test_resume_of_an_unknown_session_keeps_the_current_one(repl):
    from phi.cli.commands import dispatch

    before = repl.session
    dispatch(repl, "/resume no-such-session")
    assert repl.session is before and "cannot resume no-such-session" in repl.out.getvalue()


def test_print_task_from_stdin(monkeypatch):
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO("a task\nover two lines\n"))
    assert parse(["-p", "-"]).prompt == "a task\nover two lines\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("  \n"))
    with pytest.raises(SystemExit):
        parse(["-p", "-"])


def test_a_line_read_as_a_run_ended_is_the_next_input():
    from phi.cli.repl import Terminal

    out = io.StringIO()
    terminal = Terminal(io.StringIO("typed later\n"), out)
    terminal.unread("typed as the run ended")
    assert terminal.prompt("› ") == "typed as the run ended"
    assert out.getvalue() == "› typed as the run ended\n"  # shown as if typed at the prompt
    assert terminal.prompt("› ") == "typed later"
    with pytest.raises(EOFError):
        terminal.prompt("› ")


def test_on_a_terminal_a_running_call_shows_a_line_that_its_end_replaces():
    out = io.StringIO()
    renderer = Renderer(out, Style(False), live=True)
    renderer.on_event(_event(EventKind.TOOL_CALL_START, call_id="a", tool_name="shell", arguments={"command": "make"}))
    assert out.getvalue() == "[1] … shell(command=make)"
    renderer.on_event(_event(EventKind.TOOL_CALL_START, call_id="b", tool_name="shell", arguments={"command": "ls"}))
    renderer.on_event(_event(EventKind.TOOL_CALL_END, call_id="b", tool_name="shell", is_error=False, output="x"))
    renderer.on_event(_event(EventKind.TOOL_CALL_END, call_id="a", tool_name="shell", is_error=False, output="ok"))
    lines = out.getvalue().split("\n")
    assert lines[0] == "[1] … shell(command=make)"  # another call started meanwhile: it stays
    assert lines[1].startswith("[2] … shell(command=ls)\r\x1b[2K[2] ✓ shell(command=ls) ")  # replaced in place
    assert lines[2].startswith("[1] ✓ shell(command=make) ") and lines[3] == ""


def test_sessions_live_under_phi_home_unless_told_otherwise(tmp_path):
    from pathlib import Path

    from phi.cli.options import sessions_dir
    from phi.session import default_sessions_dir

    assert default_sessions_dir({"PHI_HOME": str(tmp_path)}) == tmp_path / "sessions"
    assert default_sessions_dir({}) == Path("~/.phi/sessions").expanduser()
    assert sessions_dir(CliOptions(sessions_dir=str(tmp_path / "x")), {"PHI_HOME": "/elsewhere"}) == tmp_path / "x"
    # the command and the library agree, "~" in PHI_HOME included (never a directory named "~")
    for env in ({"PHI_HOME": str(tmp_path)}, {}, {"PHI_HOME": "~/phi-home"}, {"PHI_HOME": ""},
                {"PHI_HOME": "~no-such-user-phi/x"}):  # an unknown user: kept as written, never a crash
        assert sessions_dir(CliOptions(), env) == default_sessions_dir(env)
    assert default_sessions_dir({"PHI_HOME": "~/phi-home"}) == Path("~/phi-home/sessions").expanduser()


def test_continuing_a_session_does_not_load_the_store_before_the_prompt(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; from phi.cli.options import CliOptions, sessions_dir; from phi.cli.recent import "
            "latest_stored_here\ntry: latest_stored_here(sessions_dir(CliOptions()), '.')\nexcept Exception: pass\n"
            "print(sorted(m for m in sys.modules if m == 'phi.session' or m.startswith('phi.session.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "PHI_HOME": str(tmp_path),
                               "PYTHONPATH": str(Path(__file__).resolve().parents[2])}, check=True)
    assert done.stdout.strip() == "[]"


def test_a_running_call_line_shows_its_latest_output_line(monkeypatch):
    import phi.cli.render as render

    monkeypatch.setattr(render, "LIVE_REFRESH_S", 0.0)
    out = io.StringIO()
    renderer = Renderer(out, Style(False), live=True)
    renderer.on_event(_event(EventKind.TOOL_CALL_START, call_id="a", tool_name="shell", arguments={"command": "make"}))
    renderer.on_event(_event(EventKind.TOOL_CALL_OUTPUT_DELTA, call_id="a", tool_name="shell", delta="cc a.c\ncc b"))
    renderer.on_event(_event(EventKind.TOOL_CALL_OUTPUT_DELTA, call_id="a", tool_name="shell", delta=".c\n"))
    assert out.getvalue().endswith("\r\x1b[2K[1] … shell(command=make) · cc b.c")
    renderer.on_event(_event(EventKind.TOOL_CALL_END, call_id="a", tool_name="shell", is_error=False,
                             output="cc a.c\ncc b.c\n"))
    assert out.getvalue().split("\r\x1b[2K")[-1].startswith("[1] ✓ shell(command=make) ")
    assert renderer.calls[0].output == "cc a.c\ncc b.c\n"  # the full output, not the deltas twice


def test_a_model_whose_key_is_missing_is_refused_up_front():
    with pytest.raises(NoModel, match="openai models need OPENAI_API_KEY"):
        make_profile(CliOptions(model="gpt-5"), env={"ANTHROPIC_API_KEY": "k"})
    with pytest.raises(NoModel, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        make_profile(CliOptions(provider="gemini"), env={})
    assert make_profile(CliOptions(model="gpt-5"), env={"OPENAI_API_KEY": "k"}).id == "openai"
    proxy = CliOptions(model="gpt-5", base_url="http://127.0.0.1:1")
    assert make_profile(proxy, env={"OPENAI_API_KEY": "k"}).id == "openai"
    with pytest.raises(NoModel, match="sends OPENAI_API_KEY, which is not set.*--provider llamacpp"):
        make_profile(CliOptions(model="gpt-5", base_url="http://127.0.0.1:1"), env={})  # would fail at the first call


def test_phi_export_is_dispatched_to_the_export_command(monkeypatch, capsys):
    import sys
    import types

    from phi.cli import main

    calls = []
    fake = types.ModuleType("phi.export.command")
    fake.main = lambda argv: calls.append(argv) or 7
    monkeypatch.setitem(sys.modules, "phi.export.command", fake)
    assert main(["export", "abc", "--html", "out.html"]) == 7 and calls == [["abc", "--html", "out.html"]]
    monkeypatch.setitem(sys.modules, "phi.export.command", None)
    assert main(["export", "abc"]) == 2 and "phi export needs phi.export.command" in capsys.readouterr().err


def test_no_running_line_is_drawn_between_a_question_and_its_answer():
    out = io.StringIO()
    renderer = Renderer(out, Style(False), live=True)
    renderer.begin_question("a")  # the question came before the call's start event was drawn
    renderer.write("? allow shell — ")
    renderer.on_event(_event(EventKind.TOOL_CALL_START, call_id="a", tool_name="shell", arguments={"command": "ls"}))
    assert out.getvalue() == "? allow shell — "
    renderer.after_typing()
    renderer.on_event(_event(EventKind.TOOL_CALL_END, call_id="a", tool_name="shell", is_error=False, output="x"))
    assert out.getvalue().startswith("? allow shell — [1] ✓ shell(command=ls) ")


@pytest.mark.parametrize("env, expected", [({"VISUAL": "code --wait", "EDITOR": "nano"}, ["code", "--wait"]),
                                           ({"VISUAL": "", "EDITOR": "nano -R"}, ["nano", "-R"]), ({}, ["vi"])])
def test_editor_is_visual_then_editor_then_vi(monkeypatch, env, expected):
    from phi.cli.commands import editor_command

    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert editor_command() == expected


def test_the_editors_file_is_removed_and_a_failing_editor_sends_nothing(repl, monkeypatch, tmp_path):
    from phi.cli.commands import dispatch

    seen = tmp_path / "seen"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\necho "$1" > {seen}\necho "some text" > "$1"\nexit 3\n')
    editor.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(editor))
    assert dispatch(repl, "/editor")
    assert "the editor exited with status 3; nothing sent" in repl.out.getvalue()
    assert not repl.session.agent.messages
    assert not __import__("os").path.exists(seen.read_text().strip())  # the temporary file is gone


def test_clear_and_resume_start_the_session_totals_afresh(repl):
    from phi.cli.commands import dispatch

    repl.run_input("hello there")
    first = repl.session.id
    assert repl.renderer.total.usage.input > 0 and repl.renderer.total.context_tokens > 0
    dispatch(repl, "/clear")
    assert repl.renderer.total.usage.input == 0 and repl.renderer.total.context_tokens == 0
    repl.run_input("another conversation")
    dispatch(repl, f"/resume {first}")
    assert repl.renderer.total.usage.input == 0 and repl.renderer.total.context_tokens == 0


def test_default_models_match_the_coding_profiles():
    from phi.cli.options import DEFAULT_MODELS
    from phi.coding import create_profile

    for profile_id, model in DEFAULT_MODELS.items():
        assert create_profile(profile_id).model == model


def test_local_servers_need_no_key_and_get_none():
    from phi.cli.options import describe_choice, local_target

    profile = make_profile(CliOptions(provider="ollama", model="qwen3"), env={"ANTHROPIC_API_KEY": "k"})
    mc = profile.model_config
    assert (mc.api, mc.provider, mc.base_url, mc.api_key) == ("openai_completions", "ollama",
                                                               "http://localhost:11434/v1", None)
    assert mc.options["api_key_required"] is False and profile.context_window_size == 32_768
    assert local_target(CliOptions(), {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}) == (
        "openai_compatible", "http://127.0.0.1:8080/v1")
    assert local_target(CliOptions(), {"OPENAI_BASE_URL": "http://x/v1", "OPENAI_API_KEY": "k"}) is None
    env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    assert make_profile(CliOptions(), env=env).model_config.base_url == "http://127.0.0.1:9"
    assert describe_choice(CliOptions(base_url="http://127.0.0.1:1/v1"), env={}) == ("openai_compatible",
                                                                                  "local-model")


def test_a_pasted_block_and_editing_keys_make_one_line():
    from phi.cli.terminal import LineAssembler

    typed = LineAssembler()
    typed.feed(b"ab\x7fc\x1b[D")
    typed.feed(b"\x1b[200~one\rtwo\r")
    typed.feed(b"three\x1b[20")
    typed.feed(b"1~\r")
    assert typed.lines == ["ac" + "one\ntwo\nthree"]


def test_always_for_a_command_trusts_that_commands_prefix_only():
    """Issue 34: "a" to `echo harmless` once allowed every later shell command; now it adds the rule
    `shell "echo harmless *"` (that command's prefix) and a later `touch` is still asked about."""
    def shell(command: str) -> ApprovalRequest:
        return ApprovalRequest("s", "c", "shell", {"command": command}, "execute")

    gate = ApprovalGate("smart")
    worker = threading.Thread(target=gate, args=(shell("echo   harmless"),))
    worker.start()
    question = None
    while question is None:
        question = gate.pending()
    assert str(gate.always_rule(question)) == 'allow: shell "echo harmless *"'
    gate.answer(question, "a")
    worker.join(5)
    assert [(rule.text, rule.source) for rule in gate.rules] == [('shell "echo harmless *"', "session")]
    assert not gate.needs_asking(shell("echo harmless"))
    assert not gate.needs_asking(shell("echo  harmless  again"))
    assert gate.needs_asking(shell("touch x")) and gate.needs_asking(shell("echo harmless; rm -rf ~"))
    assert gate.needs_asking(shell("echo harmless $(rm -rf ~)")) and gate.needs_asking(shell("echo harmlessly"))
    write = Question(ApprovalRequest("s", "c", "write_file", {"file_path": "a"}, "write"))
    assert str(gate.always_rule(write)) == "allow: write_file"

