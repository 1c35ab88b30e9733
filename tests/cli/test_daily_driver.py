"""Issue 26 in a pty: what made ``phi`` hard to use for a day — a context overflow, slash commands
typed while phi works, approving edits blind, and what a coding CLI is expected to have (piped
stdin, ``-c``, the resume picker, ``@path``, ``!cmd``, MCP servers, system-prompt flags, keyless
local servers), plus the honest details (tool time without the approval wait, ``/tools`` in plan
mode, no echo of typed-ahead text)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from coding.wire import Call, Turn, system_prompt_of, user_texts
from providers.conftest import Reply

from cli.conftest import SlowServer
from cli.terminal_helpers import REPO, PtyPhi

OVERFLOW = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": "prompt is too long: 212000 tokens > 200000 maximum"}})


class SmallWindowServer(SlowServer):
    """A scripted model whose context is small: a request more than ``extra`` bytes larger than the
    first one it saw is refused with Anthropic's context-overflow error."""

    def __init__(self, extra: int) -> None:
        super().__init__()
        self.extra = extra
        self.first_size: int | None = None
        self.refused = 0

    def _respond_scripted(self, request: Any) -> Any:
        size = len(request.body)
        self.first_size = self.first_size or size
        if size > self.first_size + self.extra:
            self.refused += 1
            return Reply(OVERFLOW.encode(), status=400, content_type="application/json")
        return super()._respond_scripted(request)


def start(model: SlowServer, project: Path, phi_home: Path, *args: str, env: dict[str, str] | None = None) -> PtyPhi:
    full_env = {"ANTHROPIC_API_KEY": "sk-test-key", "PHI_HOME": str(phi_home), **(env or {})}
    return PtyPhi(["--provider", "anthropic", "--base-url", model.url, *args], project, full_env)


# ----------------------------------------------------------------------------- 1. compaction


def test_a_context_overflow_is_compacted_and_retried_and_the_conversation_goes_on(project, phi_home):
    (project / "big.log").write_text("".join(f"log line {i}: something happened here\n" for i in range(3000)))
    model = SmallWindowServer(extra=40_000)
    model.script("Read the big log", Turn("", [Call("read_file", {"file_path": "big.log"})]),
                 Turn("The log says something happened 3000 times."), Turn("Still with you."))
    phi = start(model, project, phi_home, "--approve", "off")
    try:
        phi.prompt()
        phi.send_line("Read the big log")
        phi.expect(r"\[1\] ✓ read_file")
        phi.expect("The log says something happened 3000 times.")
        phi.expect(r"compacts at 85%")
        phi.prompt()
        phi.send_line("Are you there?")
        phi.expect("Still with you.")
        assert model.refused >= 1  # the full log did not fit; the compacted conversation did
        assert "error:" not in phi.text
    finally:
        phi.close()
        model.close()


def test_an_overflow_the_loop_cannot_fix_is_compacted_by_the_cli_and_the_input_sent_again(model, project, phi_home):
    overflow = Reply(OVERFLOW.encode(), status=400, content_type="application/json")
    model.script("Tell me a long story", Turn("Once upon a time " * 400), overflow, overflow, Turn("Short again."))
    model.script("[... ", overflow, Turn("Short again."))  # the conversation as the loop's compaction cut it
    phi = start(model, project, phi_home)
    try:
        phi.prompt()
        phi.exchange("Tell me a long story", "Once upon a time")
        phi.send_line("And then?")
        phi.expect(r"did not fit the model's context: compacted it \(~[\d,]+ → ~[\d,]+ tokens\); trying once more")
        phi.expect("Short again.")
        phi.prompt()
        last = json.loads(model.requests[-1].body)
        assert user_texts("anthropic", last)[-1] == "And then?"  # sent once, not twice
        assert user_texts("anthropic", last).count("And then?") == 1
        assert len(json.dumps(last)) < len(json.dumps(model.requests_of("Tell me a long story")[1]))
    finally:
        phi.close()


def test_compact_command_replaces_the_conversation_with_the_models_summary(launch, model):
    model.script("Remember the number 41", Turn("Noted: 41."))
    model.script("USER: Remember the number 41", Turn("The user asked to remember 41; nothing else happened."))
    model.script("[Summary of the conversation so far", Turn("Yes, 41."))
    phi = launch()
    phi.prompt()
    phi.exchange("Remember the number 41", "Noted: 41.")
    phi.exchange("/compact the number", r"compacted: ~[\d,]+ → ~[\d,]+ tokens \(summarised by the model, focused on "
                                        r"the number\)")
    phi.exchange("Which number?", "Yes, 41.")
    (summary_request,) = model.requests_of("USER: Remember the number 41")
    assert "Focus on: the number" in user_texts("anthropic", summary_request)[0]
    (after,) = model.requests_of("[Summary of the conversation so far")
    texts = user_texts("anthropic", after)
    assert "remember 41" in texts[0] and texts[-1] == "Which number?" and len(texts) == 2
    phi.exchange("/compact auto 50", "automatic compaction: at 50% of the context window")


# ----------------------------------------------------------------------------- 3. commands while running


def test_slash_commands_typed_while_phi_works_are_commands_not_steering(launch, model):
    model.script("Ramble on", Turn("words " * 1500), Turn("On haiku now.")).slow("Ramble on", chunk_size=80, delay=0.1)
    phi = launch()
    phi.prompt()
    phi.send_line("Ramble on")
    phi.expect("words words")
    phi.send_line("/model claude-haiku-4-5")
    phi.expect(r"model: claude-haiku-4-5 \(anthropic\) from the next input; this reply finishes on claude-sonnet-4-5")
    phi.send_line("/sessions")
    phi.expect("/sessions: after this reply")
    phi.send_line("/abort")
    phi.expect("aborted — the conversation is kept")
    phi.expect(r"› /sessions")  # the queued command ran when the reply ended
    phi.prompt()
    phi.exchange("Go on", "On haiku now.")
    assert "steering" not in phi.text
    first, second = model.requests_of("Ramble on")
    assert second["model"] == "claude-haiku-4-5"
    assert not any(text.startswith("/") for text in user_texts("anthropic", second))


def test_quit_typed_while_phi_works_quits(launch, model):
    model.script("Ramble more", Turn("words " * 1500)).slow("Ramble more", chunk_size=80, delay=0.1)
    phi = launch()
    phi.prompt()
    phi.send_line("Ramble more")
    phi.expect("words words")
    phi.send_line("/quit")
    phi.proc.wait(30)
    assert phi.proc.returncode == 0
    assert "steering" not in phi.text


def test_typed_ahead_text_is_not_echoed_into_the_reply_and_waits_at_the_prompt(launch, model):
    model.script("Slow answer", Turn("alpha " * 80 + "END"), Turn("Got the next one."))
    model.slow("Slow answer", chunk_size=400, delay=0.1)
    phi = launch()
    phi.prompt()
    phi.send_line("Slow answer")
    phi.expect("alpha alpha")
    phi.send("next question")  # no Enter: still being typed when the reply ends
    phi.expect("END")
    phi.expect(r"› next question")  # put back into the prompt, editable
    reply = phi.text[phi.text.index("alpha"):phi.text.index("END")]
    assert "next question" not in reply
    phi.send("\r")
    phi.expect("Got the next one.")


# ----------------------------------------------------------------------------- 4. approving edits


def test_the_diff_is_shown_before_the_question_and_one_key_answers(launch, model, project):
    long = "".join(f"row {i}\n" for i in range(120))
    model.script("Change notes", Turn("", [Call("read_file", {"file_path": "notes.txt"})]),  # read before writing
                 Turn("", [Call("write_file", {"file_path": "notes.txt", "content": "alpha\nBETA\n"
                                                                                    "gamma\n"})]),
                 Turn("", [Call("write_file", {"file_path": "long.txt", "content": long})]), Turn("Both written."))
    phi = launch("--color", "always")
    phi.prompt()
    phi.send_line("Change notes")
    question = phi.expect(r"\? allow write_file")
    before = phi.text[phi._mark:question.start()]
    assert "-beta" in before and "+BETA" in before and "--- a/notes.txt" in before
    assert "\x1b[31m-beta" in phi.raw.decode("utf-8", "replace")  # coloured
    time.sleep(1.2)  # the person reads the diff
    phi.mark()
    phi.send("y")  # one key, no Enter
    phi.expect(r"allowed")
    line = phi.expect(r"\[2\] ✓ write_file\(file_path=notes\.txt.*?\) (\d+\.\d)s")
    assert float(line.group(1)) < 1.0  # the time spent reading the question is not the tool's
    phi.expect(r"more lines: \[space\] next page, \[q\] skip to the question")
    phi.send(" ")
    phi.expect(r"\+row 43")
    phi.expect(r"31 more lines")
    phi.send("q")
    phi.expect(r"\? allow write_file")
    phi.send("a")
    phi.expect("Both written.")
    phi.prompt()
    assert (project / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    phi.exchange("/clear", r"still always allowed: write_file")


# ----------------------------------------------------------------------------- 5. what a coding CLI has


def test_piped_stdin_goes_with_the_print_task(model, project, phi_home):
    model.script("explain", Turn("It is a division by zero."))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(REPO), PHI_HOME=str(phi_home), ANTHROPIC_API_KEY="sk-test")
    done = subprocess.run([sys.executable, "-m", "phi.cli", "-p", "explain", "--provider", "anthropic",
                           "--base-url", model.url], input="Traceback:\nZeroDivisionError: division by zero\n",
                          capture_output=True, text=True, cwd=project, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "It is a division by zero.\n"
    (request,) = model.requests_of("explain")
    assert user_texts("anthropic", request) == [
        "explain\n\n<stdin>\nTraceback:\nZeroDivisionError: division by zero\n</stdin>"]


def test_continue_and_the_resume_picker(launch, model, project):
    model.script("First here", Turn("One."), Turn("Two."), Turn("Three."))
    first = launch()
    first.prompt()
    first.exchange("First here", "One.")
    first.send_line("/sessions")
    session_id = first.expect(r"([0-9a-f-]{36})  ").group(1)
    first.close()
    again = launch("-c")
    again.expect(f"session {session_id} \\(resumed\\)")  # at once: the conversation loads behind the prompt
    again.prompt()
    again.exchange("Continue", "Two.")
    again.expect(f"resumed session {session_id}: 2 messages", since_mark=False)
    again.close()
    picked = launch("--resume")
    picked.expect(r"saved sessions \(\* started here\):")
    picked.expect(r" 1\* \S+ \S+\s+2 runs  First here")
    picked.send("1\r")
    picked.expect(f"session {session_id} \\(resumed\\)")
    picked.prompt()
    picked.exchange("And again", "Three.")
    picked.expect(f"resumed session {session_id}: 4 messages", since_mark=False)


def test_at_mentions_attach_files_and_tab_completes_them(launch, model, project):
    (project / "src").mkdir()
    (project / "src" / "calc.py").write_text("def div(a, b):\n    return a / b\n")
    model.script("Look at", Turn("I see div."))
    phi = launch()
    phi.prompt()
    phi.send("Look at @src/ca\t")
    phi.expect(r"@src/calc\.py")
    phi.send(" please\r")
    phi.expect(r"attached @src/calc\.py \(2 lines\)")
    phi.expect("I see div.")
    (request,) = model.requests_of("Look at")
    assert user_texts("anthropic", request) == [
        'Look at @src/calc.py please\n\n<file path="src/calc.py">\ndef div(a, b):\n    return a / b\n\n</file>']


def test_bang_runs_a_shell_command_and_offers_its_output(launch, model):
    model.script("I ran `echo", Turn("It printed hello."))
    phi = launch(env={"SECRET_TOKEN": "do-not-show"})
    phi.prompt()
    phi.send_line("!echo hello-from-sh; echo token=$SECRET_TOKEN")
    phi.expect("hello-from-sh")
    phi.expect(r"exit status 0")
    phi.expect(r"add this output to your next message\? \[y\]es, \[n\]o:")
    phi.send("y")
    phi.expect("it goes with your next message")
    phi.prompt()
    phi.exchange("What did it print?", "It printed hello.")
    assert "do-not-show" not in phi.text
    (request,) = model.requests_of("I ran `echo")
    (text,) = user_texts("anthropic", request)
    assert "hello-from-sh" in text and text.endswith("What did it print?")


def test_mcp_servers_from_the_project_file_are_listed_and_their_tools_called(launch, model, project, phi_home):
    from phi.cli.trust import trust

    server = REPO / "tests" / "mcp" / "fake_server.py"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "fake": {"command": sys.executable, "args": [str(server), "normal"]},
        "broken": {"command": "/nonexistent/mcp-server"}}}))
    assert trust([str(project / ".mcp.json")], str(phi_home)) == [str(project / ".mcp.json")]  # `phi trust`
    model.script("Use the fake", lambda body: Turn("", [Call(_first_fake_tool(body), {})]), Turn("Called it."))
    phi = launch("--approve", "off")
    phi.prompt()  # at once: the servers start behind it (issue 35 item 5)
    phi.send_line("/mcp")  # waits for them, and says what became of each
    phi.expect("MCP server broken did not start")
    phi.expect(r"fake  ✓ \d+ tools")
    phi.expect(r"broken  ✗")
    phi.prompt()
    phi.send_line("Use the fake")
    phi.expect(r"\[1\] [✓✗] fake__")
    phi.expect("Called it.")


def _first_fake_tool(body: dict) -> str:
    return next(tool["name"] for tool in body["tools"] if tool["name"].startswith("fake__"))


def test_a_malformed_mcp_config_stops_phi_naming_it(project, phi_home, model):
    (project / ".mcp.json").write_text('{"mcpServers": {"x": {"args": []}}}')
    phi = start(model, project, phi_home)
    phi.expect(r"phi: .*\.mcp\.json: mcpServers\.x needs either a command or a url")
    assert phi.proc.wait(30) == 2


def test_system_prompt_flags_reach_the_model(launch, model):
    model.script("Who are you", Turn("A pirate."))
    phi = launch("--system-prompt", "You are a terse pirate.", "--append-system-prompt", "Always say arr.")
    phi.prompt()
    phi.exchange("Who are you", "A pirate.")
    (request,) = model.requests_of("Who are you")
    system = system_prompt_of("anthropic", request)
    assert system.startswith("You are a terse pirate.") and system.rstrip().endswith("Always say arr.")


# ----------------------------------------------------------------------------- 6. keyless servers


def _chat_sse(text: str) -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": part}, "finish_reason": None}]}
              for part in (text[:5], text[5:])]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}})
    lines = [f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', 'model': 'm', **c})}\n\n"
             for c in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def test_a_base_url_without_a_key_is_a_keyless_local_server(project, phi_home):
    from providers.conftest import ReplayServer

    server = ReplayServer()
    seen = []
    server.responder = lambda request: seen.append(request) or Reply(_chat_sse("Hello from local."))
    env = {k: "" for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")}
    phi = PtyPhi(["--base-url", f"{server.url}/v1"], project, {**env, "PHI_HOME": str(phi_home)})
    try:
        phi.expect(r"local-model \(openai_compatible\)")
        phi.prompt()
        phi.exchange("hi", "Hello from local.")
        chat = [r for r in seen if r.method == "POST" and r.path.endswith("/chat/completions")]
        assert chat[0].path == "/v1/chat/completions"  # (the other requests asked the server for its window)
        assert all("authorization" not in {k.lower() for k in r.headers} for r in seen)
        phi.close()
        env_url = PtyPhi([], project, {**env, "OPENAI_BASE_URL": f"{server.url}/v1", "PHI_HOME": str(phi_home)})
        env_url.prompt()
        env_url.exchange("hi again", "Hello from local.")
        env_url.close()
        named = PtyPhi(["--provider", "llamacpp", "--base-url", f"{server.url}/v1", "-m", "smollm2"], project,
                       {**env, "PHI_HOME": str(phi_home)})
        named.expect(r"smollm2 \(llamacpp\)")
        named.prompt()
        named.exchange("hello", "Hello from local.")
        assert json.loads(seen[-1].body)["model"] == "smollm2"
        named.close()
    finally:
        phi.close()
        server.close()


# ----------------------------------------------------------------------------- 7. honest details


def test_tools_in_plan_mode_lists_only_what_plan_mode_offers(launch):
    phi = launch()
    phi.prompt()
    phi.exchange("/plan", "PLAN mode")
    phi.send_line("/tools")
    phi.expect("plan mode offers only these")
    phi.expect(r"read_file\s+read")
    phi.prompt()
    listed = phi.text[phi._mark:]
    assert "write_file" not in listed and "edit_file" not in listed and "bash" not in listed


def test_export_says_it_once(launch, model, project):
    model.script("Say hi", Turn("hi"))
    phi = launch()
    phi.prompt()
    phi.exchange("Say hi", "hi")
    phi.exchange("/export out.html", "exported to out.html")
    assert phi.text.count("exported") == 1
    assert (project / "out.html").exists()


# ----------------------------------------------------------------------------- 8. start-up

# phi.coding's module body waits for the release file. (Waiting in find_spec would hold Python's
# global import lock and stop every import of every thread; a slow module holds only its own lock.)
BLOCKER = '''
import importlib.abc, importlib.machinery, os, sys, time
class _Wait(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "phi.coding":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run_body = spec.loader.exec_module
        def exec_module(module):
            while not os.path.exists(os.environ["PHI_TEST_RELEASE"]):
                time.sleep(0.02)
            run_body(module)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Wait())
'''


def test_the_prompt_does_not_wait_for_the_coding_layer(project, phi_home, tmp_path):
    """The first prompt comes up while the coding layer cannot even be imported yet (CLI-12)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(BLOCKER)
    release = tmp_path / "release"
    phi = PtyPhi(["--offline"], project, {"PHI_HOME": str(phi_home), "PHI_TEST_RELEASE": str(release),
                                          "PYTHONPATH": f"{hooks}{os.pathsep}{REPO}"})
    try:
        phi.prompt()  # the banner and the prompt, with phi.coding still blocked
        assert "offline-scripted (offline)" in phi.text
        release.write_text("go")
        phi.exchange("what is here?", r"I found: notes\.txt")
    finally:
        phi.close()
