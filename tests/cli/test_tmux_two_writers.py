"""Two ``phi -c`` terminals continuing one session at the same moment (issue 31 item 1; SPEC SESS-6,
CLI-4), in real terminals (tmux): the second terminal's turn is kept as a branch of the session,
and it says so in words; both conversations are stored whole."""

from __future__ import annotations

import shutil

import pytest

from cli.test_tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_two_terminals_continuing_one_session_both_keep_their_turns(project, phi_home):
    from phi.session import JsonDirStore

    env = {"PHI_HOME": str(phi_home)}
    first = Tmux(project, env)
    try:
        first.wait_for_prompt()
        first.keys("the seed question", "Enter")
        first.wait_for("context [")
        first.wait_for_prompt()
    finally:
        first.close()
    (session_id,) = JsonDirStore(phi_home / "sessions").list_ids()
    two, three = Tmux(project, env, "--offline -c"), Tmux(project, env, "--offline -c")
    try:
        two.wait_for_prompt()
        three.wait_for_prompt()  # both resumed the same point before either went on
        two.keys("from terminal two", "Enter")
        two.wait_for("context [")
        three.keys("from terminal three", "Enter")
        screen = three.wait_for("continues as branch")
        assert "another phi continued this session from the same point" in " ".join(screen.split())
        three.wait_for_prompt()
        two.wait_for_prompt()
    finally:
        two.close()
        three.close()
    stored = JsonDirStore(phi_home / "sessions").load(session_id)
    said = [m.text for r in stored.loops for m in r.messages]
    assert said.count("from terminal two") == said.count("from terminal three") == 1
    ends = [r for r in stored.loops if r.messages and r.messages[0].text.startswith("from terminal")]
    for record in ends:
        conversation = [m.text for m in stored.conversation(at=record.loop_id)]
        assert conversation[0] == "the seed question" and conversation.count(record.messages[0].text) == 1
        assert not ({"from terminal two", "from terminal three"} - {record.messages[0].text}) & set(conversation)
