"""CLI-9 at the prompt: a Ctrl+C that reaches Python only as readline returns a line does not drop
that line (issue 35 attack). Python runs signal handlers on the main thread between bytecodes; a
SIGINT that lands before readline starts waiting, or on another thread, does not interrupt readline's
wait, so Python raises KeyboardInterrupt as ``input()`` returns the line typed next. The race is made
certain here by sending the SIGINT to a helper thread while the prompt waits. A Ctrl+C typed while
editing still interrupts the line, which is kept as ``cleared``."""

from __future__ import annotations

import os
import pty
import re
import select
import sys
from pathlib import Path

import pytest

from cli.terminal_helpers import REPO

pytest.importorskip("readline")

CHILD = r'''
import os, signal, sys, threading
from phi.cli.terminal import Terminal
history, trigger, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
term = Terminal(sys.stdin, sys.stdout, history)
def late_ctrl_c():
    # a Ctrl+C typed at the terminal is the process's: with SIGINT blocked here the kernel gives it to
    # the main thread, as in phi (this helper exists only in the test)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    while os.read(trigger, 1):  # each byte: one SIGINT, to this helper thread, not the waiting main thread
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        sys.stdout.write("[sent]\r\n")
        sys.stdout.flush()
threading.Thread(target=late_ctrl_c, daemon=True).start()
for _ in range(count):
    try:
        sys.stdout.write(f"[line {term.prompt('> ')!r}]\r\n")
    except KeyboardInterrupt:
        sys.stdout.write(f"[interrupted {term.cleared!r}]\r\n")
    sys.stdout.flush()
'''


def _drive(tmp_path: Path, steps: list[tuple[str, bytes]], count: int) -> list[str]:
    """Run the child in a pty; ``steps``: ("type", bytes) at the next prompt, ("late", b"") a SIGINT
    to the helper thread while the prompt waits, ("key", bytes) typed at the current prompt and echoed."""
    read_end, write_end = os.pipe()
    env = {**os.environ, "TERM": "xterm", "PYTHONPATH": str(REPO), "INPUTRC": str(tmp_path / "no-inputrc")}
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.close(write_end)
        os.set_inheritable(read_end, True)
        os.execve(sys.executable, [sys.executable, "-c", CHILD, str(tmp_path / "history"), str(read_end),
                                   str(count)], env)
    os.close(read_end)
    seen = b""

    def until(wanted: bytes, times: int) -> None:
        nonlocal seen
        while seen.count(wanted) < times:
            assert select.select([fd], [], [], 60)[0], f"no {wanted!r} in {seen[-300:]!r}"
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child ended
                return
            if not chunk:
                return
            seen += chunk

    try:
        prompts = 1
        for kind, data in steps:
            until(b"> ", prompts)
            if kind == "late":
                os.write(write_end, b"x")
                until(b"[sent]", seen.count(b"[sent]") + 1)
                continue
            os.write(fd, data)
            if kind == "key":  # echoed, so readline has it (a Ctrl+C makes the terminal drop unread input)
                until(data, seen.count(data) + 1)
            if kind == "type":
                prompts += 1
        until(b"\x00never", 1)  # to the end of the child's output
    finally:
        os.close(write_end)
        os.waitpid(pid, 0)
        os.close(fd)
    return [m.decode() for m in re.findall(rb"\[(?:line|interrupted) [^\]\r]*\]", seen)]


def test_a_line_typed_after_a_late_ctrl_c_is_the_input(tmp_path: Path) -> None:
    said = _drive(tmp_path, [("type", b"first\r"), ("late", b""), ("type", b"second\r")], 2)
    assert said == ["[line 'first']", "[line 'second']"]


def test_a_repeated_line_after_a_late_ctrl_c_is_the_input(tmp_path: Path) -> None:
    """readline keeps no second copy of a line equal to the last one in its history: the line is kept
    all the same."""
    said = _drive(tmp_path, [("type", b"again\r"), ("late", b""), ("type", b"again\r")], 2)
    assert said == ["[line 'again']", "[line 'again']"]


def test_a_ctrl_c_while_editing_interrupts_the_line(tmp_path: Path) -> None:
    said = _drive(tmp_path, [("key", b"half a li"), ("type", b"\x03"), ("type", b"next\r")], 2)
    assert said == ["[interrupted 'half a li']", "[line 'next']"]
