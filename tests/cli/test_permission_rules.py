"""The ``phi`` command's permission rules (issue 34 item 4; SPEC §15 CLI-5, CLI-9): read from the
project's and the user's settings files at start (a broken file stops ``phi`` with one line), applied
before the approval mode in every mode, summed up in the banner, listed, removed and added with
``/approve``."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from phi.cli.approval import ApprovalGate, load_rules, settings_paths, summary
from phi.cli.options import CliOptions, make_profile
from phi.coding import ApprovalRequest, PermissionRule

from cli.terminal_helpers import REPO


def write_settings(path, permissions):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))


def shell(command):
    return ApprovalRequest("s", "c", "shell", {"command": command}, "execute")


@pytest.fixture
def home(tmp_path, monkeypatch):
    phi_home = tmp_path / "phi-home"
    monkeypatch.setenv("PHI_HOME", str(phi_home))
    return phi_home


def test_the_rules_come_from_the_project_then_the_user_file(tmp_path, home):
    project = tmp_path / "project"
    write_settings(project / ".phi" / "settings.json", {"deny": ['shell "rm *"']})
    write_settings(home / "settings.json", {"allow": ['shell "npm test *"'], "ask": ["write_file"]})
    options = CliOptions(cwd=str(project))
    assert [label for label, _ in settings_paths(options)] == ["project file .phi/settings.json",
                                                              f"user file {home / 'settings.json'}"]
    rules = load_rules(options)
    assert [(str(rule), rule.source) for rule in rules] == [
        ('deny: shell "rm *"', "project file .phi/settings.json"),
        ('allow: shell "npm test *"', f"user file {home / 'settings.json'}"),
        ("ask: write_file", f"user file {home / 'settings.json'}")]
    assert load_rules(CliOptions(cwd=str(tmp_path / "elsewhere"))) == [rules[1], rules[2]]


def test_rules_apply_before_the_mode_in_every_mode(tmp_path):
    rules = [PermissionRule("deny", "shell", "rm *", "project file .phi/settings.json"),
             PermissionRule("ask", "shell", "git push *", "user file ~/.phi/settings.json"),
             PermissionRule("allow", "shell", "npm test *", "session")]
    off = ApprovalGate("off", interactive=False, rules=rules, root=str(tmp_path))
    denied = off(shell("npm test && rm -rf ~"))
    assert not denied.allowed and denied.reason == ('the permission rule deny: shell "rm *" (project file '
                                                     '.phi/settings.json) forbids it')
    asked = off(shell("git push"))  # an ask rule asks even with `off`; with nobody to ask: no
    assert not asked.allowed and 'the rule ask: shell "git push *" asks first' in asked.reason
    assert off(shell("make")).allowed  # no rule: the mode decides
    on = ApprovalGate("on", interactive=False, rules=rules, root=str(tmp_path))
    assert on(shell("npm test --ci")).allowed  # an allow rule even with `on`
    assert not on(shell("make")).allowed
    assert not on.needs_asking(shell("npm test")) and on.needs_asking(shell("git push"))


def test_an_ask_rule_question_allows_that_call_only(tmp_path):
    import threading

    gate = ApprovalGate("off", rules=[PermissionRule("ask", "shell", "git push *", "project")], root=str(tmp_path))
    worker = threading.Thread(target=gate, args=(shell("git push"),))
    worker.start()
    question = None
    while question is None:
        question = gate.pending()
    assert question.asked_by is not None and gate.always_rule(question) is None
    assert gate.answer(question, "a").allowed
    worker.join(5)
    assert [str(rule) for rule in gate.rules] == ['ask: shell "git push *"']  # nothing added: ask would win


def test_the_banner_line_sums_the_rules_up(tmp_path):
    assert summary(ApprovalGate("smart")) == ("approval smart · no permission rules (.phi/settings.json, "
                                              "$PHI_HOME/settings.json)")
    gate = ApprovalGate("on", rules=[PermissionRule("deny", "shell", "rm *", "project file .phi/settings.json"),
                                     PermissionRule("deny", "read_file", ".env", "user file ~/.phi/settings.json"),
                                     PermissionRule("allow", "shell", "ls *", "session")])
    assert summary(gate) == ("approval on · permission rules: 2 deny, 1 allow (project .phi/settings.json, "
                             "user ~/.phi/settings.json, session) · /approve lists them")


@pytest.fixture
def repl(tmp_path, home):
    from phi.cli.repl import Repl
    from phi.cli.sessions import CliSessions

    from phi.cli.trust import trust

    project = tmp_path / "project"
    write_settings(project / ".phi" / "settings.json", {"deny": ['shell "rm *"'], "allow": ["read_file"]})
    trust([str(project / ".phi" / "settings.json")], str(home))  # `phi trust`: its allow rules count
    options = CliOptions(offline=True, cwd=str(project), color="never")
    instance = Repl(options, make_profile(options), CliSessions(tmp_path / "sessions"), stdin=io.StringIO(),
                    out=io.StringIO())
    yield instance
    instance.close()


def test_approve_lists_removes_and_adds_rules(repl):
    from phi.cli.commands import dispatch

    dispatch(repl, "/approve")
    shown = repl.out.getvalue()
    assert "approval: smart; permission rules first — deny beats ask beats allow:" in shown
    assert '   1. deny  shell "rm *"  project file .phi/settings.json' in shown
    assert "   2. allow read_file     project file .phi/settings.json" in shown
    dispatch(repl, "/approve remove 1")
    assert ('removed deny: shell "rm *" for this process; it stays in the project file .phi/settings.json, and comes '
            'back when phi starts again') in repl.out.getvalue()
    assert [str(rule) for rule in repl.gate.rules] == ["allow: read_file"]
    dispatch(repl, "/approve remove 7")
    assert "/approve remove takes the number of a rule (1 to 1" in repl.out.getvalue()
    dispatch(repl, '/approve ask shell "git push *"')
    assert 'added ask: shell "git push *" for this process' in repl.out.getvalue()
    dispatch(repl, '/approve deny shell "oops')
    assert "the pattern's closing quote is missing" in repl.out.getvalue()
    dispatch(repl, "/approve reset")  # forgets what was added here, keeps the files' rules
    assert [str(rule) for rule in repl.gate.rules] == ["allow: read_file"]


def test_the_banner_shows_the_rules_of_the_settings_file(repl):
    repl.banner()
    assert ("approval smart · permission rules: 1 deny, 1 allow (project .phi/settings.json) · /approve lists them"
            in repl.out.getvalue())


def run_phi(args, cwd, home, stdin=""):
    env = {"PHI_HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "phi.cli", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", [["--offline", "-p", "hi"], ["--offline"], ["--offline", "--json"]])
def test_a_broken_settings_file_stops_phi_with_one_line_naming_it(tmp_path, args):
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".phi").mkdir(parents=True)
    settings = project / ".phi" / "settings.json"
    settings.write_text('{"permissions": {"deny": ["shell \\"rm *"]}}')
    done = run_phi(args, project, home)
    assert done.returncode == 2
    assert done.stderr == (f"phi: {settings}: permissions.deny[0]: 'shell \"rm *': the pattern's closing quote "
                           "is missing\n")
    assert "Traceback" not in done.stdout + done.stderr


def test_a_deny_rule_holds_in_a_print_run_with_approval_off(tmp_path, home):
    project = tmp_path / "project"
    write_settings(project / ".phi" / "settings.json", {"deny": ['write_file "*.txt"']})
    done = run_phi(["--offline", "-p", "write hello.txt: hi"], project, home)
    assert not (project / "hello.txt").exists()
    assert done.returncode == 0, done.stderr


def test_always_to_a_command_no_rule_can_name_allows_that_call_only(tmp_path):
    import threading

    gate = ApprovalGate("smart", root=str(tmp_path))
    worker = threading.Thread(target=gate, args=(shell("rm -rf *"),))
    worker.start()
    question = None
    while question is None:
        question = gate.pending()
    assert gate.always_rule(question) is None  # `shell "rm -rf *"` would read as rm -rf, then anything
    assert gate.answer(question, "a").allowed
    worker.join(5)
    assert gate.rules == [] and gate.needs_asking(shell("rm -rf ~"))



def test_an_untrusted_project_file_keeps_its_deny_and_ask_rules_not_its_allow_rules(tmp_path, home, capsys):
    """A project settings file that changed since `phi trust` (a command may have written it where
    phi could not stop it) only holds back: its allow rules wait for `phi trust`."""
    from phi.cli.approval import load_rules
    from phi.cli.main import main

    project = tmp_path / "project"
    write_settings(project / ".phi" / "settings.json", {"deny": ['shell "rm *"'], "allow": ["shell"]})
    options = CliOptions(offline=True, cwd=str(project))
    assert [str(rule) for rule in load_rules(options)] == ['deny: shell "rm *"']
    assert "its 1 allow rule(s) are not applied; run `phi trust` here" in capsys.readouterr().err
    assert main(["trust", str(project)]) == 0
    assert "trusted" in capsys.readouterr().out
    assert [str(rule) for rule in load_rules(options)] == ['deny: shell "rm *"', "allow: shell"]
    write_settings(project / ".phi" / "settings.json", {"allow": ["shell", "write_file"]})  # changed again
    assert load_rules(options) == []


def test_an_untrusted_project_mcp_json_starts_no_server(tmp_path, home, capsys):
    from phi.cli.mcp_servers import load_specs
    from phi.cli.trust import trust

    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "touch", "args": ["pwned"]}}}))
    options = CliOptions(offline=True, cwd=str(project))
    assert load_specs(options) == []
    assert ".mcp.json is new or changed since you last trusted it" in capsys.readouterr().err
    trust([str(project / ".mcp.json")], str(home))
    assert [spec.name for spec in load_specs(options)] == ["x"]
    given = CliOptions(offline=True, cwd=str(tmp_path), mcp=[str(project / ".mcp.json")])
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"y": {"command": "true"}}}))
    assert [spec.name for spec in load_specs(given)] == ["y"]  # named with --mcp: trusted by being named


def test_project_files_are_read_once_bounded_and_trusted_only_without_a_symlink(tmp_path, home):
    """A FIFO or a huge file at .phi/settings.json stops phi with one line (no hang, no memory
    exhaustion); a .phi directory that is a symlink to another project's trusted one is not trusted."""
    import os

    from phi.cli.approval import load_rules
    from phi.cli.trust import trust
    from phi.coding.permissions import PermissionRuleError

    project = tmp_path / "project"
    (project / ".phi").mkdir(parents=True)
    os.mkfifo(project / ".phi" / "settings.json")
    with pytest.raises(PermissionRuleError, match="not a regular file"):
        load_rules(CliOptions(offline=True, cwd=str(project)))
    (project / ".phi" / "settings.json").unlink()
    with open(project / ".phi" / "settings.json", "wb") as handle:
        handle.truncate(2 << 20)
    with pytest.raises(PermissionRuleError, match="larger than"):
        load_rules(CliOptions(offline=True, cwd=str(project)))
    other = tmp_path / "other"
    write_settings(other / ".phi" / "settings.json", {"allow": ["shell"]})
    trust([str(other / ".phi" / "settings.json")], str(home))
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".phi").symlink_to(other / ".phi")
    assert load_rules(CliOptions(offline=True, cwd=str(linked))) == []
    assert [str(rule) for rule in load_rules(CliOptions(offline=True, cwd=str(other)))] == ["allow: shell"]
