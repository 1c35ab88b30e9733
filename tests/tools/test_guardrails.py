"""Environment filtering, the deny list and malformed paths (issue 10 item 13)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from phi.errors import ToolError
from phi.tools import coding_tools, default_tools
from phi.tools.apply_patch import ApplyPatchTool
from phi.tools.environment import LocalExecutionEnvironment, filter_environment
from phi.tools.shell import DEFAULT_DENY_PATTERNS, BashTool, find_denied

#: Forty names that commonly carry credentials.
SECRET_NAMES = [
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "NPM_TOKEN", "SECRET_KEY", "DJANGO_SECRET_KEY", "PRIVATE_KEY",
    "SSH_PRIVATE_KEY", "PGPASSWORD", "MYSQL_PWD", "MYSQL_ROOT_PASSWORD", "POSTGRES_PASSWORD", "REDIS_PASSWORD",
    "DATABASE_URL", "SLACK_BOT_TOKEN", "SLACK_WEBHOOK_URL", "STRIPE_SECRET_KEY", "TWILIO_AUTH_TOKEN",
    "SENDGRID_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_SECRET", "AZURE_STORAGE_CONNECTION_STRING",
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "DOCKER_PASSWORD", "JWT_SECRET", "SESSION_SECRET", "ENCRYPTION_KEY",
    "VAULT_TOKEN", "SENTRY_DSN", "API_KEY", "CLIENT_SECRET", "GPG_PASSPHRASE", "TWINE_PASSWORD", "DD_API_KEY",
]
#: Common variables that must reach commands.
PLAIN_NAMES = [
    "PATH", "HOME", "LANG", "TERM", "USER", "SHELL", "PWD", "OLDPWD", "TMPDIR", "TZ", "LC_ALL", "EDITOR",
    "PAGER", "HOSTNAME", "LOGNAME", "DISPLAY", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "VIRTUAL_ENV", "PYTHONPATH",
    "NODE_ENV", "GOPATH", "JAVA_HOME", "CI", "GITHUB_ACTIONS", "TOKENIZERS_PARALLELISM", "COLORTERM", "SHLVL",
    "AWS_REGION", "AWS_PROFILE", "DB_HOST", "DB_PORT", "KEYBOARD_LAYOUT", "GIT_AUTHOR_NAME", "HTTP_PROXY",
    "REDIS_URL", "MAKEFLAGS", "CARGO_HOME", "NO_COLOR", "HISTFILE",
]


def test_forty_common_secret_names_are_removed():
    assert len(SECRET_NAMES) == 40 and len(set(SECRET_NAMES)) == 40
    source = {name: "value" for name in SECRET_NAMES}
    assert filter_environment(source) == {}


def test_common_plain_names_are_kept():
    source = {name: "value" for name in PLAIN_NAMES}
    assert filter_environment(source) == source


@pytest.mark.parametrize("name, value", [
    ("HTTP_PROXY", "http://alice:hunter2@proxy:3128"), ("PIP_INDEX_URL", "https://__token__:pypi-abc@pypi.org/simple"),
    ("REDIS_URL", "redis://:s3cret@cache:6379/0"), ("MY_DB", "Server=db;User Id=sa;Password=hunter2;"),
])
def test_values_carrying_credentials_are_removed(name, value):
    assert filter_environment({name: value}) == {}
    assert filter_environment({name: "http://proxy:3128"}) == {name: "http://proxy:3128"}


def test_secrets_never_reach_a_real_command(workdir, monkeypatch):
    for name in SECRET_NAMES:
        monkeypatch.setenv(name, f"leak-{name.lower()}")
    monkeypatch.setenv("PHI_PLAIN_MARKER", "visible")
    out = LocalExecutionEnvironment(str(workdir)).exec_command("env", 5000).stdout
    assert "leak-" not in out and "PHI_PLAIN_MARKER=visible" in out


BLOCKED = [
    'rm -rf "/"', "rm -r -f /", "rm -fr /", "rm --recursive --force /", "rm -rf /*", "rm -rf //", "rm -Rf ~/",
    "rm -rf $HOME", "rm -rf ${HOME}/*", "sudo rm -rf --no-preserve-root /", "cd /tmp && rm -rf /",
    "echo $(rm -rf /)", 'bash -c "rm -rf ~"', "sh -lc 'shutdown now'", "eval 'reboot'", "nohup shutdown -r now &",
    "env X=1 nice -n 5 halt", "sudo -u root poweroff", "if true; then reboot; fi", "systemctl reboot",
    "mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/nvme0n1", "cat img > /dev/sda", ":(){ :|:& };:",
    "chmod -R 777 /", "chown -R nobody /", "kill -9 -1", "git push --force origin main", "git push -f",
    "git push origin +main", "git push --force-with-lease", "timeout 5 init 0",
]
ALLOWED = [
    "man shutdown", "grep -rn halt src/", "echo reboot", "echo shutdown-notes", "rm -rf /tmp/build",
    "rm -rf ./dist", "rm -f /tmp/x", "rm -r build/", "ls /", "git push origin main", "git log --grep=force",
    "kill -9 1234", "python -m pytest -k reboot", "cat <<'EOF'\nthen reboot the server; it's fine\nEOF",
    "git commit -m 'handle halt and shutdown'", "echo '#'; ls", "chmod 777 ./script.sh", "dd if=a of=b",
    "command -v shutdown", "which reboot", "apt-get install mkfs-tools", "echo rm -rf /",
]


@pytest.mark.parametrize("command", BLOCKED)
def test_dangerous_commands_are_blocked(command):
    assert find_denied(command, DEFAULT_DENY_PATTERNS) is not None, command


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_commands_are_allowed(command):
    assert find_denied(command, DEFAULT_DENY_PATTERNS) is None, command


def test_blocked_command_spawns_nothing(env, ctx, workdir):
    with pytest.raises(ToolError, match="Command blocked: it matches the deny pattern 'rm -r /'"):
        BashTool(env=env).execute({"command": f"touch {workdir}/ran; rm -r -f '/'"}, ctx)
    assert not (workdir / "ran").exists()


# -- malformed paths ---------------------------------------------------------------------------

def _path_calls(tools: dict, bad: str) -> list:
    return [
        lambda ctx: tools["read_file"].execute({"path": bad}, ctx),
        lambda ctx: tools["write_file"].execute({"path": bad, "content": "x"}, ctx),
        lambda ctx: tools["edit_file"].execute({"path": bad, "old_text": "a", "new_text": "b"}, ctx),
        lambda ctx: tools["list_files"].execute({"path": bad}, ctx),
        lambda ctx: tools["search"].execute({"pattern": "a", "path": bad}, ctx),
        lambda ctx: tools["c_read_file"].execute({"file_path": bad}, ctx),
        lambda ctx: tools["c_write_file"].execute({"file_path": bad, "content": "x"}, ctx),
        lambda ctx: tools["c_edit_file"].execute({"file_path": bad, "old_string": "a", "new_string": "b"}, ctx),
        lambda ctx: tools["grep"].execute({"pattern": "a", "path": bad}, ctx),
        lambda ctx: tools["glob"].execute({"pattern": "*", "path": bad}, ctx),
        lambda ctx: tools["glob"].execute({"pattern": bad}, ctx),
        lambda ctx: tools["list_dir"].execute({"path": bad}, ctx),
        lambda ctx: tools["read_many_files"].execute({"paths": [bad]}, ctx),
    ]


@pytest.fixture
def all_tools(env) -> dict:
    tools = {t.name: t for t in default_tools(env)}
    tools.update({("c_" + t.name if t.name in tools else t.name): t for t in coding_tools(env)})
    return tools


@pytest.mark.parametrize("bad", ["a\x00b.txt", "d/" * 3000 + "f.txt", "x" * 5000], ids=["nul", "deep", "long"])
def test_malformed_paths_are_tool_errors(all_tools, ctx, bad):
    for index, call in enumerate(_path_calls(all_tools, bad)):
        try:
            call(ctx)
        except ToolError as exc:
            assert "\x00" not in str(exc) and len(str(exc)) < 2000, index
        except Exception as exc:  # noqa: BLE001 - the point is that nothing else escapes
            pytest.fail(f"call {index} raised {type(exc).__name__}: {exc!s:.200}")


def test_nul_in_an_apply_patch_path_is_a_clean_error(env, ctx):
    with pytest.raises(ToolError):
        ApplyPatchTool(env=env).execute({"patch": "*** Begin Patch\n*** Add File: a\x00b\n+x\n*** End Patch"}, ctx)


def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def test_deep_paths_never_need_recursion(env, ctx, workdir: Path):
    """Writing and listing a tree deeper than the recursion limit allows (lowered here, so the tree
    can stay small): every walk keeps its own stack."""
    depth = 200
    rel = "d/" * depth + "f.txt"
    tools = {t.name: t for t in default_tools(env)}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_stack_depth() + 100)
    try:
        tools["write_file"].execute({"path": rel, "content": "deep"}, ctx)
        entries = env.list_directory(".", depth=depth + 10)
    finally:
        sys.setrecursionlimit(limit)
    assert (workdir / rel).read_text() == "deep"
    assert len(entries) == depth + 1 and entries[-1].path == rel
