"""Issue 35 item 6 in a real terminal emulator (tmux): what the screen shows after Ctrl+C on a line
being typed, a reply longer than a row, a command typed in the middle of a reply's word, and the
keyless offline model's answer to a refused write."""

from __future__ import annotations

import re
import shutil

import pytest
from coding.wire import Turn

from cli.test_tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

WIDTH = 120  # Tmux's window


def scripted(model, project, phi_home) -> Tmux:
    return Tmux(project, {"ANTHROPIC_API_KEY": "sk-test", "PHI_HOME": str(phi_home)},
                f"--provider anthropic --base-url {model.url}")


def test_ctrl_c_on_a_typed_line_leaves_it_whole_and_the_notice_below(project, phi_home):
    typed = "please rename the helper in src/util.py to parse_config and update the callers-c"
    term = Tmux(project, {"PHI_HOME": str(phi_home)})
    try:
        term.wait_for_prompt()
        term.keys("-l", typed)
        term.wait_for(typed)
        term.keys("C-c")
        term.wait_for_prompt()  # a new one, below
        screen = term.screen()
        rows = screen.splitlines()
        at = rows.index(f"› {typed}")  # the line as typed, not written over
        assert rows[at + 1].startswith("(cleared"), screen
        assert not any(row.startswith("(") and row.endswith("-c") for row in rows), screen  # no debris
        # clearing a typed line is not the first of the two Ctrl+C that exit: the program is still there
        term.wait_for_prompt()
        term.keys("C-c")
        term.wait_for("Ctrl+C again to exit")
        term.keys("C-c")
        assert "EXITED 0" in term.wait_for("EXITED")
    finally:
        term.close()


def test_a_reply_wider_than_the_window_wraps_between_words(model, project, phi_home):
    words = [f"{'w' * (3 + i % 9)}{i}" for i in range(120)]  # words of varied length, each one unique
    reply = " ".join(words)
    model.script("Tell me many words", Turn(reply))
    term = scripted(model, project, phi_home)
    try:
        term.wait_for_prompt()
        term.keys("Tell me many words", "Enter")
        screen = term.wait_for("context [")
        rows = screen.splitlines()
        start = next(i for i, row in enumerate(rows) if row.startswith(words[0]))
        end = next(i for i in range(start, len(rows)) if not rows[i].startswith("w"))
        shown = rows[start:end]
        tokens = [token for row in shown for token in row.split()]
        assert tokens == words, screen  # every word whole, on one row
        assert all(len(row) < WIDTH for row in shown), screen
    finally:
        term.close()


def test_help_typed_in_the_middle_of_a_word_of_the_reply_does_not_split_it(model, project, phi_home):
    # the reply's first delta ends inside a word ("Say hi alph"), then the model stalls
    model.script("Stream slowly", Turn("Say hi alphabetically to everyone", hang=True))
    term = scripted(model, project, phi_home)
    try:
        term.wait_for_prompt()
        term.keys("Stream slowly", "Enter")
        term.wait_for("Say hi")
        term.keys("/help", "Enter")
        screen = term.wait_for("@PATH attaches a file")
        rows = screen.splitlines()
        at = next(i for i, row in enumerate(rows) if row.startswith("Say hi"))
        assert rows[at] == "Say hi", screen  # the word being streamed waits: it is not cut at "alph"
        assert rows[at + 1].lstrip().startswith("/"), screen  # the help, on rows of its own
        term.keys("C-c")
        screen = term.wait_for("aborted")
        assert any(row == "alph" for row in screen.splitlines()), screen  # what had come is shown whole
        term.wait_for_prompt()
    finally:
        term.close()


def test_the_offline_model_does_not_claim_a_refused_write(project, phi_home):
    term = Tmux(project, {"PHI_HOME": str(phi_home), "ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "",
                          "GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""})
    try:
        term.wait_for_prompt()
        term.keys("write hello.txt: hi there", "Enter")
        term.wait_for("[a]lways for this session:")
        term.keys("n")
        screen = term.wait_for("context [")
        reply = " ".join(screen.split("denied", 1)[1].split("offline-scripted ·", 1)[0].split())
        assert "I did not write the file" in reply, screen
        assert "wrote the file" not in reply, screen
        assert re.search(r"denied by the user", reply), screen
        assert not (project / "hello.txt").exists()
        term.wait_for_prompt()
    finally:
        term.close()
