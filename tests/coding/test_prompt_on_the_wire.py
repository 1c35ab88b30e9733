"""The layered system prompt (seed 004 §6, §9.8) as each protocol really sends it, for a session in
a real git repository: the profile's base instructions and tool summary, the ``<environment>``
block with the git branch, the project documents the profile reads (AGENTS.md always, then its own
file; never another profile's), and the user's instructions last."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from phi.coding import SessionConfig

from .dialects import PROFILES, session_for
from .wire import Turn, server  # noqa: F401 (the fixture)
from .wire import system_prompt_of

OWN_DOCS = {"openai": ".codex/instructions.md", "anthropic": "CLAUDE.md", "gemini": "GEMINI.md"}


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"})


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the git snapshot layer cannot be exercised")
    git(tmp_path, "init", "-q", "-b", "feature/prompt-layers")
    git(tmp_path, "config", "user.email", "dev@example.com")
    git(tmp_path, "config", "user.name", "Dev")
    (tmp_path / "AGENTS.md").write_text("Run the tests with make check.\n")
    for profile, name in OWN_DOCS.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(f"Notes only for the {profile} profile.\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "AGENTS.md").write_text("In pkg, keep functions pure.\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "Initial layout")
    return tmp_path


@pytest.mark.parametrize("profile", PROFILES)
def test_every_layer_reaches_the_request_in_order(profile, server, repo):
    server.script("Hello", Turn("Hi."))
    config = SessionConfig(user_instructions="Always answer in haiku.")
    session = session_for(profile, server, str(repo / "pkg"), config)
    session.submit("Hello there")
    protocol, body = server.seen["Hello"][0]
    prompt = system_prompt_of(protocol, body)
    positions = [prompt.find(marker) for marker in (
        "<environment>",  # after the base instructions
        "- read_file:",  # the tool summary (§6.1 layer 3)
        "Run the tests with make check.",  # the root AGENTS.md ...
        "In pkg, keep functions pure.",  # ... then the deeper one
        "Always answer in haiku.",  # the user's instructions, last
    )]
    assert -1 not in positions and positions == sorted(positions), (positions, prompt)
    assert str(repo / "pkg") in prompt and "feature/prompt-layers" in prompt
    assert prompt.rstrip().endswith("Always answer in haiku.")
    for other, name in OWN_DOCS.items():
        assert (f"Notes only for the {other} profile." in prompt) == (other == profile), (other, name)
    session.close()


def test_each_profile_has_its_own_base_instructions(server, repo):
    prompts = {}
    for profile in PROFILES:
        server.script(f"Base {profile}", Turn("ok"))
        session = session_for(profile, server, str(repo))
        session.submit(f"Base {profile}")
        protocol, body = server.seen[f"Base {profile}"][0]
        prompts[profile] = system_prompt_of(protocol, body).split("<environment>")[0]  # layer 1 alone
        session.close()
    assert len(set(prompts.values())) == 3
    assert "apply_patch" in prompts["openai"] and "edit_file" in prompts["anthropic"]
    assert "read_many_files" in prompts["gemini"]
