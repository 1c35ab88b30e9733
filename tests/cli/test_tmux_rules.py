"""Issue 34 item 4 in a real terminal emulator (tmux): "always" adds the command's prefix rule and
shows it first, a different command is still asked about, a project settings file's deny rule
refuses a command, and ``/approve`` lists the rules and removes one."""

from __future__ import annotations

import json
import shutil

import pytest
from coding.wire import Call, Turn

from cli.test_tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def start(model, project, phi_home, *args: str) -> Tmux:
    return Tmux(project, {"ANTHROPIC_API_KEY": "sk-test", "PHI_HOME": str(phi_home)},
                " ".join(["--provider", "anthropic", "--base-url", model.url, *args]))


def deny_in_project(project, *rules: str) -> None:
    (project / ".phi").mkdir()
    (project / ".phi" / "settings.json").write_text(json.dumps({"permissions": {"deny": list(rules)}}))


def test_always_adds_the_prefix_rule_it_shows_and_another_command_is_still_asked(model, project, phi_home):
    model.script("Run the tests",
                 Turn("", [Call("shell", {"command": "echo tests passed"})]),
                 Turn("", [Call("shell", {"command": "echo tests passed --again"})]),
                 Turn("", [Call("shell", {"command": "touch made.txt"})]),
                 Turn("all done"))
    term = start(model, project, phi_home, "--approve", "smart")
    try:
        term.wait_for_prompt()
        term.keys("Run the tests", "Enter")
        screen = term.wait_for("[a]lways for this session:")
        assert '[a] always allow: shell "echo tests *"' in screen, screen
        term.keys("a")
        screen = term.wait_for("? allow shell: touch made.txt")  # another command: asked
        assert screen.count("? allow shell: echo tests") == 1, screen  # the same prefix: not asked again
        assert "[2] ✓ shell" in screen, screen
        term.keys("n")
        term.wait_for("all done")
        term.wait_for_prompt()
        assert not (project / "made.txt").exists()
        term.keys("/approve", "Enter")
        screen = term.wait_for("/approve remove N")
        assert '1. allow shell "echo tests *"  session' in screen, screen
    finally:
        term.close()


def test_a_deny_rule_in_the_project_settings_refuses_a_command(model, project, phi_home):
    deny_in_project(project, 'shell "rm *"')
    model.script("Clean up", Turn("", [Call("shell", {"command": "ls && rm notes.txt"})]), Turn("could not"))
    term = start(model, project, phi_home, "--approve", "off")  # deny rules hold in every mode
    try:
        screen = term.wait_for("›")
        assert "permission rules: 1 deny (project .phi/settings.json)" in screen, screen
        term.wait_for_prompt()
        term.keys("Clean up", "Enter")
        screen = term.wait_for("could not")
        assert "[1] ✗ shell(command=ls && rm notes.txt)" in screen, screen
        assert "The shell call was denied by the user: the permission rule" in screen, screen
        term.wait_for_prompt()
        term.keys("/show 1", "Enter")  # the whole line the model read
        term.wait_for('the permission rule deny: shell "rm *" (project file .phi/settings.json) forbids')
        assert (project / "notes.txt").exists()
    finally:
        term.close()


def test_approve_lists_the_rules_and_removes_one(model, project, phi_home):
    deny_in_project(project, 'shell "rm *"', 'read_file ".env"')
    model.script("Remove the notes", Turn("", [Call("shell", {"command": "rm notes.txt"})]), Turn("removed"))
    term = start(model, project, phi_home)
    try:
        term.wait_for_prompt()
        term.keys("/approve", "Enter")
        screen = term.wait_for("/approve remove N")
        assert '1. deny  shell "rm *"      project file .phi/settings.json' in screen, screen
        assert '2. deny  read_file ".env"  project file .phi/settings.json' in screen, screen
        term.wait_for_prompt()
        term.keys("/approve remove 1", "Enter")
        term.wait_for('removed deny: shell "rm *" for this process')
        term.wait_for_prompt()
        term.keys("Remove the notes", "Enter")
        term.wait_for("? allow shell: rm notes.txt")  # no longer denied: asked, as smart asks
        term.keys("y")
        term.wait_for("removed")
        term.wait_for_prompt()
        assert not (project / "notes.txt").exists()
        term.keys("/approve", "Enter")
        screen = term.wait_for('1. deny  read_file ".env"  project file .phi/settings.json')  # now the first
        assert screen.count('deny  shell "rm *"') == 1, screen  # only in the earlier listing
    finally:
        term.close()
