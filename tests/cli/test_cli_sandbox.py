"""The interactive ``phi`` sandboxes the model's commands (issue 34): ``workspace-write`` by
default, the banner says what protects them, ``--sandbox full`` and ``--network`` choose, and where
the machine cannot sandbox every command is asked — even with ``--approve off``."""

from __future__ import annotations

from pathlib import Path

import pytest
from coding.wire import Call, Turn

from phi.tools import sandbox_status

STATUS = sandbox_status()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=f"no sandbox here: {STATUS.describe()}")


def _script(model, outside: Path) -> None:
    model.script("Write things",
                 Turn("", [Call("shell", {"command": f"echo in > in.txt; echo out > {outside}/x.txt; echo done $?"})]),
                 Turn("finished"))


@needs_sandbox
def test_by_default_commands_write_the_project_only_and_the_banner_says_so(launch, model, project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    _script(model, outside)
    phi = launch("--approve", "off")
    phi.expect(r"sandbox: workspace-write, network off, \.git read-only \(Landlock ABI \d")
    phi.prompt()
    phi.send_line("Write things")
    phi.expect("finished")
    phi.prompt()
    assert (project / "in.txt").read_text() == "in\n"
    assert not (outside / "x.txt").exists()


def test_sandbox_full_lets_commands_write_anywhere(launch, model, project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    _script(model, outside)
    phi = launch("--approve", "off", "--sandbox", "full")
    phi.expect(r"sandbox: full \(no sandbox\)")
    phi.prompt()
    phi.send_line("Write things")
    phi.expect("finished")
    phi.prompt()
    assert (outside / "x.txt").read_text() == "out\n"


def test_without_a_sandbox_every_command_is_asked_even_with_approve_off(launch, model, project):
    model.script("Run things",
                 Turn("", [Call("shell", {"command": "echo one > one.txt"})]),
                 Turn("", [Call("read_file", {"file_path": "notes.txt"})]),
                 Turn("finished"))
    phi = launch("--approve", "off", env={"PHI_NO_SANDBOX": "1"})
    phi.expect(r"sandbox: workspace-write asked for, but no sandbox on this machine \(disabled by PHI_NO_SANDBOX\)"
               r": commands run unconfined and every one is asked")
    phi.prompt()
    phi.send_line("Run things")
    phi.expect(r"\? allow shell: echo one > one\.txt")
    phi.send_line("n")
    phi.expect("finished")  # the read was not asked
    phi.prompt()
    assert phi.text.count("? allow") == 1
    assert not (project / "one.txt").exists()


def test_without_a_sandbox_phi_p_refuses_commands(model, project, tmp_path):
    from cli.test_print_mode import run_phi

    model.script("Run things", Turn("", [Call("shell", {"command": "echo one > one.txt"})]), Turn("finished"))
    done = run_phi(["-p", "Run things", "--json", "--provider", "anthropic", "--base-url", model.url], project,
                   tmp_path / "home", ANTHROPIC_API_KEY="sk-test-key", PHI_NO_SANDBOX="1")
    assert "commands cannot be sandboxed on this machine" in done.stdout, done.stdout + done.stderr
    assert not (project / "one.txt").exists()



def test_a_question_shows_control_characters_escaped():
    from phi.cli.approval import describe
    from phi.coding import ApprovalRequest

    request = ApprovalRequest("s", "c", "shell", {"command": "touch /tmp/x #\r\x1b[2Kecho harmless\u202e"}, "execute")
    shown = describe(request)
    assert "\r" not in shown and "\x1b" not in shown and "\u202e" not in shown
    assert shown == "shell: touch /tmp/x #\\r\\x1b[2Kecho harmless\\u202e"


def test_the_workspace_goes_last_on_the_import_path(tmp_path, monkeypatch):
    """A sandboxed command may write glob.py into the project: phi, importing as it goes, must find
    the standard library's first (python -m phi.cli puts the working directory first)."""
    import sys

    from phi.cli.main import workspace_last

    project = tmp_path / "project"
    (project / ".venv" / "bin").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", ["", str(project / ".venv" / "bin"), "/usr/lib/python3", str(tmp_path)])
    monkeypatch.chdir(project)
    workspace_last(str(project))
    assert sys.path == ["/usr/lib/python3", str(tmp_path), "", str(project / ".venv" / "bin")]


def test_model_text_and_previews_cannot_drive_the_terminal():
    from phi.cli.render import Style, colour_diff, inert, summary

    assert inert("ok\x1b[1A\x1b[2K\rnot\x1b]52;c;eA==\x07\n\tend") == "ok\\x1b[1A\\x1b[2K\\rnot\\x1b]52;c;eA==\\x07\n\tend"
    assert "\x1b" not in summary("a\x1b[2Kb")
    assert colour_diff(["+x\x1b[1A\x1b[2K", "+\tindented"], Style(False)) == ["+x\\x1b[1A\\x1b[2K", "+\tindented"]
