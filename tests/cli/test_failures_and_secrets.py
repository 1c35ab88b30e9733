"""The ``phi`` command when the model's server fails mid-session (HTTP 401/500 replies), and the API
key: it never shows up on the screen, in ``--json`` output, on stderr, or in the saved files."""

from __future__ import annotations

import json
from pathlib import Path

from coding.wire import Turn
from providers.conftest import Reply

from cli.test_print_mode import events_of, run_phi

FAKE_KEY = "sk-ant-FAKE-7f3a9c1e-secret-value"


def rejected_key(status: int = 401) -> Reply:
    """What Anthropic answers to a bad key, here echoing the key (as some servers and proxies do)."""
    body = {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {FAKE_KEY}"}}
    return Reply(json.dumps(body).encode(), status=status, content_type="application/json")


def files_under(*roots: Path) -> dict[Path, str]:
    return {p: p.read_text(errors="replace") for root in roots if root.exists() for p in root.rglob("*") if p.is_file()}


def test_a_rejected_request_mid_session_says_why_and_the_prompt_returns(launch, model, phi_home, project):
    model.script("Hello", Turn("Hi there."), rejected_key(), Turn("Back again."))
    phi = launch(env={"ANTHROPIC_API_KEY": FAKE_KEY})
    phi.prompt()
    phi.exchange("Hello", "Hi there.")
    phi.send_line("Are you there?")
    phi.expect(r"error: auth: HTTP 401: invalid x-api-key \*\*\* \(check ANTHROPIC_API_KEY\)\n")
    phi.prompt()
    assert "the run failed" not in phi.text[phi._mark:], "the error was reported twice"
    phi.exchange("Try once more", "Back again.")
    assert phi.close() == 0
    assert FAKE_KEY not in phi.raw.decode("utf-8", "replace")
    saved = files_under(phi_home, project)
    assert any(p.suffix == ".jsonl" for p in saved), saved.keys()  # the session was saved
    leaked = [str(p) for p, text in saved.items() if FAKE_KEY in text]
    assert not leaked, f"the API key is in {leaked}"


def test_print_json_with_a_rejected_key_exits_1_with_only_json_on_stdout(model, project, phi_home):
    model.script("Check the key", rejected_key())
    done = run_phi(["-p", "Check the key", "--json", "--provider", "anthropic", "--base-url", model.url], project,
                   phi_home, ANTHROPIC_API_KEY=FAKE_KEY)
    assert done.returncode == 1
    events = events_of(done.stdout)  # every line JSON, valid, a well-formed run
    assert events[-1]["outcome"] == "error" and "401" in json.dumps(events[-1]["messages"][-1])
    assert "the run ended: error: auth: HTTP 401" in done.stderr and "(check ANTHROPIC_API_KEY)\n" in done.stderr
    for where, text in [("stdout", done.stdout), ("stderr", done.stderr), *files_under(phi_home).items()]:
        assert FAKE_KEY not in text, f"the API key is in {where}"


def test_a_server_that_stops_sending_mid_reply_times_out_and_the_prompt_returns(launch, model):
    model.script("Start then stall", Turn("The first words", hang=True), Turn("Recovered."))
    phi = launch("--timeout", "0.5")
    phi.prompt()
    phi.send_line("Start then stall")
    phi.expect("The first w")  # the first delta
    phi.expect(r"error: no data from the server for 0\.5s \(read timeout\)")
    phi.prompt(timeout=10)
    phi.exchange("Go on", "Recovered.")


def test_a_server_error_is_retried_with_a_notice_line_and_the_reply_follows(launch, model):
    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}).encode()
    model.script("Hello", Turn("Hi."), Reply(body, status=500, content_type="application/json"), Turn("After retry."))
    phi = launch("--color", "always")
    phi.prompt()
    phi.exchange("Hello", "Hi.")
    phi.exchange("Again", r"\n! retry 1/3 in \d\.\d+s after .*HTTP 500: Internal server error\n", "After retry.")
    assert "\x1b[33m! retry 1/3" in phi.raw.decode()


def test_commands_the_model_runs_do_not_see_the_key(model, project, phi_home):
    from coding.wire import Call

    model.script("Show the environment", Turn("", [Call("shell", {"command": "env; echo END-OF-ENV"})]), Turn("ok"))
    done = run_phi(["-p", "Show the environment", "--json", "--provider", "anthropic", "--base-url", model.url],
                   project, phi_home, ANTHROPIC_API_KEY=FAKE_KEY)
    assert done.returncode == 0, done.stderr
    assert "END-OF-ENV" in done.stdout and "PHI_HOME=" in done.stdout  # the command ran and printed its env
    for where, text in [("stdout", done.stdout), ("stderr", done.stderr), *files_under(phi_home).items()]:
        assert FAKE_KEY not in text, f"the API key is in {where}"


def test_a_deleted_working_directory_is_said_and_exits_2(tmp_path):
    """Started from a directory deleted meanwhile (a shell left in it): one line, exit 2, no traceback;
    with ``--cwd`` an absolute directory, phi works there."""
    import os
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    repo = Path(__file__).resolve().parents[2]
    script = (f"import os, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); sys.path.insert(0, {str(repo)!r}); "
              "from phi.cli.main import main; sys.exit(main(['--offline', '-p', 'hi']))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PHI_HOME": str(tmp_path / "home")})
    assert done.returncode == 2
    assert "current directory no longer exists" in done.stderr and "Traceback" not in done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    gone.mkdir()
    given = script.replace("['--offline', '-p', 'hi']", f"['--offline', '-C', {str(elsewhere)!r}, '-p', 'hi']")
    done = subprocess.run([sys.executable, "-c", given], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PHI_HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr  # a --cwd given whole is where the session works
