"""Issue 31 item 8: nothing pasted or typed into the interactive ``phi`` is lost because it starts
with ``/`` (compiler output, an absolute path). A bracketed paste is a message, never a command; a
typed line naming no command is offered as a message; steering that never reached the model comes
back to the prompt (SPEC §15 CLI-9, CLI-10).

The parsing on a real pty (the terminal the user has, in both of its modes: while phi works, and at
a prompt without the line editor), then the whole command in a pty against a scripted model, with
readline (paste marks), readline without a UTF-8 locale (a line break marks a paste) and no readline.
"""

from __future__ import annotations

import os
import pty
import select
import time

import pytest
from coding.wire import Call, Turn, user_texts

from cli.terminal_helpers import REPO
from phi.cli.terminal import PASTE_ON, LineAssembler, Terminal, Verbatim

MYPY = "/home/me/app.py:3:5: error: Incompatible types in assignment\n/home/me/app.py:9:1: note: defined here"
DEADLINE_S = 30.0


# ----------------------------------------------------------------------------- the parsing


def test_a_line_that_starts_with_pasted_text_is_verbatim_and_a_typed_one_is_not():
    typed = LineAssembler()
    typed.feed(b"\x1b[200~/home/me/app.py:3:5: error\r/home/me/app.py:4:1: note\x1b[20")  # the end mark split
    typed.feed(b"1~\r")
    typed.feed(b"/plan \x1b[200~fix /home/me/app.py\x1b[201~\r")  # typed command, pasted argument
    typed.feed(b"  \x1b[200~  /tmp/x\x1b[201~\r")  # blanks before the paste change nothing
    typed.feed(b"\x1b[200~/tmp/x\x1b[201~\x15/help\r")  # the paste erased (Ctrl+U), a command typed
    typed.feed(b"/help\r\n")  # CR LF is one line end
    first, second, third, fourth, fifth = typed.lines
    assert isinstance(first, Verbatim) and first == "/home/me/app.py:3:5: error\n/home/me/app.py:4:1: note"
    assert second == "/plan fix /home/me/app.py" and not isinstance(second, Verbatim)
    assert isinstance(third, Verbatim) and third.strip() == "/tmp/x"
    assert fourth == "/help" and not isinstance(fourth, Verbatim)
    assert fifth == "/help" and not isinstance(fifth, Verbatim)


def test_input_ending_inside_a_paste_keeps_it():
    typed = LineAssembler()
    typed.feed_text("\x1b[200~/var/log/syslog: cut")
    typed.finish()
    assert typed.lines == ["/var/log/syslog: cut"] and isinstance(typed.lines[0], Verbatim)


class Pty:
    """A terminal: phi's side (a Terminal on the slave) and the person's side (the master)."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        self.stdin = open(slave, encoding="utf-8")
        self.out = open(os.dup(slave), "w", encoding="utf-8")
        self.term = Terminal(self.stdin, self.out)

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def shown(self) -> bytes:
        """What phi wrote to the terminal so far (and its echo)."""
        seen = b""
        while True:
            ready, _, _ = select.select([self.master], [], [], 0)
            if not ready:
                return seen
            seen += os.read(self.master, 65536)

    def close(self) -> None:
        self.stdin.close()
        self.out.close()
        os.close(self.master)


def test_on_a_pty_a_paste_while_phi_works_is_one_verbatim_line_and_paste_mode_is_on():
    tty = Pty()
    try:
        assert tty.term.tty and tty.term.interactive and not tty.term.editing
        with tty.term.running():
            assert PASTE_ON.encode() in tty.shown()
            tty.type(b"\x1b[200~" + MYPY.replace("\n", "\r").encode() + b"\r\x1b[2")  # as a terminal sends it
            tty.type(b"01~\r/quit\r")
            lines: list[str] = []
            deadline = time.monotonic() + DEADLINE_S
            while len(lines) < 2 and time.monotonic() < deadline:
                line = tty.term.poll_line(0.05)
                if line is not None:
                    lines.append(line)
        pasted, typed = lines
        assert isinstance(pasted, Verbatim) and pasted == MYPY + "\n"
        assert typed == "/quit" and not isinstance(typed, Verbatim)
        assert b"\x1b[?2004l" not in tty.shown()  # still on after the run: a paste before the prompt is marked
    finally:
        tty.close()


def test_on_a_pty_without_the_line_editor_a_pasted_block_at_the_prompt_is_one_verbatim_input():
    tty = Pty()
    try:
        tty.type(b"\x1b[200~" + MYPY.replace("\n", "\r").encode() + b"\x1b[201~\r/help\r")
        first = tty.term.prompt("› ")
        assert isinstance(first, Verbatim) and first == MYPY
        second = tty.term.prompt("› ")
        assert second == "/help" and not isinstance(second, Verbatim)
    finally:
        tty.close()


# ----------------------------------------------------------------------------- the command in a pty

NO_READLINE = "import sys\nsys.modules['readline'] = None  # a Python built without readline\n"


@pytest.fixture(params=["readline", "readline-C-locale", "no-readline"])
def reading(request, tmp_path) -> tuple[str, dict[str, str]]:
    """The ways phi reads the prompt, and the environment for each: GNU readline marking pastes,
    readline in a locale where it cannot (a line break tells), and no line editor at all."""
    if request.param == "readline-C-locale":
        return request.param, {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0"}
    if request.param == "no-readline":
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(NO_READLINE)
        return request.param, {"PYTHONPATH": f"{shim}{os.pathsep}{REPO}"}
    return request.param, {}


def paste(text: str) -> str:
    return "\x1b[200~" + text.replace("\n", "\r") + "\x1b[201~"


def test_a_block_pasted_at_the_prompt_that_starts_with_a_slash_reaches_the_model(launch, model, reading, phi_home):
    model.script("/home/me/app.py:3:5", Turn("Fixing the assignment."))
    phi = launch(env=reading[1])
    phi.prompt()
    phi.mark()
    phi.send(paste(MYPY) + "\r")
    phi.expect("Fixing the assignment.")
    phi.prompt()
    (request,) = model.requests_of("/home/me/app.py:3:5")
    assert user_texts("anthropic", request) == [MYPY]
    assert "unknown command" not in phi.text
    phi.send_line("/quit")
    assert phi.proc.wait(DEADLINE_S) == 0  # (without readline too: no history to save, no crash)
    if reading[0] == "readline":  # the history keeps the paste, without its mark
        history = (phi_home / "history").read_text(encoding="utf-8")
        assert "/home/me/app.py:3:5" in history and "\u2060" not in history


def test_a_single_pasted_line_is_a_message_with_the_line_editor(launch, model, project):
    model.script("/help", Turn("That is phi's help command."), Turn("A shell line."))
    phi = launch()
    phi.prompt()
    phi.mark()
    phi.send(paste("/help") + "\r")  # a known command, but pasted: a message
    phi.expect("That is phi's help command.")
    phi.prompt()
    phi.send(paste("!touch pasted.txt") + "\r")  # a shell escape, pasted: a message too
    phi.expect("A shell line.")
    phi.prompt()
    assert "unknown command" not in phi.text and "this list" not in phi.text
    assert not (project / "pasted.txt").exists()
    assert user_texts("anthropic", model.requests_of("/help")[1]) == ["/help", "!touch pasted.txt"]


def test_a_typed_line_naming_no_command_is_offered_and_enter_sends_it(launch, model, reading):
    model.script("/etc/hosts has", Turn("Looking at /etc/hosts."))
    phi = launch(env=reading[1])
    phi.prompt()
    phi.send_line("/etc/hosts has a stale entry")
    phi.expect(r"unknown command /etc/hosts — press Enter")
    if reading[0] == "no-readline":
        phi.prompt()
    else:  # the line editor shows the line again, to send or edit
        phi.expect(r"› /etc/hosts has a stale entry")
    phi.send_line("")  # Enter: the line shown (or, without the line editor, an empty line) sends it
    phi.expect("Looking at /etc/hosts.")
    phi.prompt()
    (request,) = model.requests_of("/etc/hosts has")
    assert user_texts("anthropic", request) == ["/etc/hosts has a stale entry"]
    phi.send_line("/nonsense")
    phi.expect("unknown command /nonsense")  # a typo is offered too ...
    phi.send("\x15/help\r")  # ... and an edit (here: the line replaced) runs what it now names
    phi.expect(r"/help +this list")


def looping_until(steer: str, reply: str):
    """A model that keeps calling a tool (another pattern each time) until the request carries
    ``steer``, then answers ``reply``: the run lasts until the steering has reached it."""

    def turn(body: dict) -> Turn:
        if any(steer in text for text in user_texts("anthropic", body)):
            return Turn(reply)
        return Turn("", [Call("glob", {"pattern": f"*{len(body['messages'])}"})])

    return turn


def test_a_block_pasted_while_phi_works_reaches_the_model_as_steering(launch, model):
    model.script("Check the build", *[looping_until("/home/me/app.py:3:5", "Saw your mypy output.")] * 400)
    model.slow("Check the build", chunk_size=200, delay=0.05)
    phi = launch()
    phi.prompt()
    phi.send_line("Check the build")
    phi.expect(r"\[1\] ✓ glob")
    phi.send(paste(MYPY) + "\r")
    phi.expect("Saw your mypy output.")
    phi.prompt()
    assert "unknown command" not in phi.text
    last = model.requests_of("Check the build")[-1]
    assert MYPY in user_texts("anthropic", last)


def test_a_typed_line_naming_no_command_while_phi_works_is_offered_then_steers(launch, model):
    model.script("Check the logs", *[looping_until("/var/log/app.log", "Reading the log.")] * 400)
    model.slow("Check the logs", chunk_size=200, delay=0.05)
    phi = launch()
    phi.prompt()
    phi.send_line("Check the logs")
    phi.expect(r"\[1\] ✓ glob")
    phi.send_line("/var/log/app.log is the one")
    phi.expect(r"unknown command /var/log/app.log — press Enter to send the line to phi")
    phi.send("\r")
    phi.expect("Reading the log.")
    phi.prompt()
    last = model.requests_of("Check the logs")[-1]
    assert "/var/log/app.log is the one" in user_texts("anthropic", last)


def test_steering_the_model_never_read_comes_back_to_the_prompt(launch, model):
    model.script("Tell me everything", Turn("words " * 400), Turn("Now with the detail."))
    model.slow("Tell me everything", chunk_size=100, delay=0.05, silent_after=1500)  # stalls mid-reply
    phi = launch()
    phi.prompt()
    phi.send_line("Tell me everything")
    phi.expect("words words")
    phi.send("\x1b[200~/srv/app/main.py is the one\x1b[201~\r")  # steering: read only after the reply ...
    phi.send("/abort\r")  # ... which is aborted first
    phi.expect("aborted — the conversation is kept")
    phi.expect(r"not read by the model before the run ended: /srv/app/main.py is the one — it is back at the prompt")
    phi.expect("› \u2060?/srv/app/main.py is the one")  # (the paste mark has no width)
    phi.send("\r")
    phi.expect("Now with the detail.")
    phi.prompt()
    second = model.requests_of("Tell me everything")[1]
    assert user_texts("anthropic", second)[-1] == "/srv/app/main.py is the one"
    assert "unknown command" not in phi.text


def test_the_terminal_paste_mode_is_switched_off_at_exit(launch):
    phi = launch()
    phi.prompt()
    phi.send_line("/quit")
    phi.proc.wait(DEADLINE_S)
    assert phi.raw.rfind(b"\x1b[?2004l") > phi.raw.rfind(b"\x1b[?2004h") >= 0

