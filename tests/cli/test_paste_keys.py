"""Nothing pasted or typed into the interactive ``phi`` answers a question it was not meant for, or
is dropped (SPEC §15 CLI-9, CLI-10; the review of issue 31 item 8):

* a paste at a one-key question (approve y/n/a, the diff pager's space/q, ``!cmd``'s y/n) never
  answers it: the question stays, the paste is kept whole as one message for after it, and phi says so;
* a line starting with ``/`` that names no command, offered while phi works (or with more lines
  behind it: a paste the terminal did not mark), is never discarded by the next line: it goes with it;
* an end mark inside the pasted text (``ESC[201~`` copied from a log) does not end the paste: what
  follows it is pasted text, not typed commands.

The parsing on a real pty, then the whole command in a pty against a scripted model.
"""

from __future__ import annotations

import threading

import pytest

from coding.wire import Call, Turn, user_texts

from cli.test_paste import DEADLINE_S, MYPY, Pty, looping_until, paste, reading  # noqa: F401 (a fixture)
from phi.cli.terminal import LineAssembler, Verbatim

UNMARKED = MYPY.replace("\n", "\r") + "\rFound 1 error in 1 file\r"  # a paste the terminal did not bracket
WHOLE = MYPY + "\nFound 1 error in 1 file"
HOSTILE = "see this log line\x1b[201~\r/quit\r!touch pwned.txt\r"  # an end mark inside the pasted text


# ----------------------------------------------------------------------------- the parsing


def ask(tty: Pty, keys: str, pasted: bytes, then: bytes) -> tuple[str, list[str]]:
    """Read one key of ``keys`` while a run streams, ``pasted`` waiting already: once phi has said the
    paste is kept, ``then`` is typed. The answer and what phi said was kept."""
    kept: list[str] = []
    told = threading.Event()
    answer: list[str] = []

    def on_paste(text: str) -> None:
        kept.append(text)
        told.set()

    with tty.term.running():
        tty.type(pasted)  # all there before the first read
        reader = threading.Thread(target=lambda: answer.append(tty.term.read_key(keys, on_paste)), daemon=True)
        reader.start()
        assert told.wait(DEADLINE_S), "the paste was not reported as kept"
        assert reader.is_alive() and not answer  # the paste answered nothing: the question is still asked
        tty.type(then)
        reader.join(DEADLINE_S)
    return answer[0], kept


def test_a_bracketed_paste_at_a_key_question_answers_nothing_and_is_kept_whole():
    tty = Pty()
    try:
        answer, kept = ask(tty, "yna", paste(MYPY).encode(), b"n")  # "app.py" holds an "a" and a "y"
        assert answer == "n"
        assert kept == [MYPY]
        line = tty.term.poll_line(0)  # after the question: one message, as pasted
        assert isinstance(line, Verbatim) and line == MYPY
        assert tty.term.poll_line(0) is None
    finally:
        tty.close()


def test_an_unmarked_paste_at_a_key_question_answers_nothing_and_is_one_message():
    tty = Pty()
    try:
        # several characters in one read: not a key press; then a key and Enter after it: one answer
        answer, kept = ask(tty, "yna", UNMARKED.encode(), b"y\r")
        assert answer == "y"
        assert kept == [WHOLE + "\n"]
        assert tty.term.poll_line(0) == WHOLE + "\n" and tty.term.poll_line(0) is None
    finally:
        tty.close()


def test_a_paste_holding_spaces_does_not_turn_the_diff_pagers_page():
    tty = Pty()
    try:
        answer, kept = ask(tty, " q", paste("q then a space").encode(), b" ")
        assert answer == " " and kept == ["q then a space"]
    finally:
        tty.close()


def test_an_end_mark_inside_the_pasted_text_does_not_end_the_paste():
    typed = LineAssembler()
    typed.feed_text("\x1b[200~" + HOSTILE + "\x1b[201~\r/help\r")
    pasted, command = typed.lines
    assert isinstance(pasted, Verbatim) and pasted == "see this log line\n/quit\n!touch pwned.txt\n"
    assert command == "/help" and not isinstance(command, Verbatim)  # typed after the real end mark


# ----------------------------------------------------------------------------- the command in a pty


def test_a_paste_at_the_approval_question_is_kept_and_reaches_the_model_after_it(launch, model, project):
    model.script("Write hello", Turn("", [Call("write_file", {"file_path": "hello.txt", "content": "hi\n"})]),
                 *[looping_until("/home/me/app.py:3:5", "Got your output.")] * 400)
    phi = launch()
    phi.prompt()
    phi.send_line("Write hello")
    phi.expect(r"\[a\]lways for this session: ")
    phi.mark()
    phi.send(paste(MYPY))
    phi.expect(r"a paste does not answer this question; it is kept and goes to phi as one message after it: "
               r"/home/me/app.py:3:5.*\[a\]lways for this session: ")
    assert not (project / "hello.txt").exists()  # neither "a" (always) nor "y" was taken from "app.py"
    phi.send("n")
    phi.expect("denied")
    phi.expect("Got your output.")
    phi.prompt()
    assert not (project / "hello.txt").exists()
    last = model.requests_of("Write hello")[-1]
    assert MYPY in user_texts("anthropic", last)  # whole, as one message
    assert "unknown command" not in phi.text


def test_a_paste_kept_at_a_question_comes_back_to_the_prompt_when_the_run_is_aborted(launch, model, project):
    model.script("Write hello", Turn("", [Call("write_file", {"file_path": "hello.txt", "content": "hi\n"})]),
                 Turn("Now with the paste."))
    phi = launch()
    phi.prompt()
    phi.send_line("Write hello")
    phi.expect(r"\[a\]lways for this session: ")
    phi.send(paste(MYPY))
    phi.expect("a paste does not answer this question")
    phi.mark()
    phi.ctrl_c()  # no answer: the run stops; the paste is not sent unseen as a new input
    phi.expect("aborted — the conversation is kept")
    phi.expect(r"not read by the model before the run ended: /home/me/app.py:3:5.* it is back at the prompt")
    phi.expect("› \u2060?/home/me/app.py:3:5: error: Incompatible types in assignment\n/home/me/app.py:9:1: note")
    assert len(model.requests_of("Write hello")) == 1 and not (project / "hello.txt").exists()
    phi.send("\r")
    phi.expect("Now with the paste.")
    assert user_texts("anthropic", model.requests_of("Write hello")[1])[-1] == MYPY


def test_lines_offered_while_phi_works_go_with_the_next_line(launch, model):
    model.script("Check the build", *[looping_until("done", "Saw all of it.")] * 400)
    model.slow("Check the build", chunk_size=200, delay=0.05)
    phi = launch()
    phi.prompt()
    phi.send_line("Check the build")
    phi.expect(r"\[1\] ✓ glob")
    phi.send_line("/home/me/a.py fails")
    phi.expect("unknown command /home/me/a.py — press Enter to send the line to phi now, or it goes with the next")
    phi.send_line("/home/me/b.py too")
    phi.expect("unknown command /home/me/b.py")
    phi.send_line("done")
    phi.expect("Saw all of it.")
    phi.prompt()
    last = model.requests_of("Check the build")[-1]
    assert "/home/me/a.py fails\n/home/me/b.py too\ndone" in user_texts("anthropic", last)


def test_an_unmarked_paste_while_phi_works_reaches_the_model_whole(launch, model):
    model.script("Check the build", *[looping_until("Found 1 error", "Saw your mypy output.")] * 400)
    model.slow("Check the build", chunk_size=200, delay=0.05)
    phi = launch()
    phi.prompt()
    phi.send_line("Check the build")
    phi.expect(r"\[1\] ✓ glob")
    phi.send(UNMARKED)
    phi.expect("Saw your mypy output.")
    phi.prompt()
    last = model.requests_of("Check the build")[-1]
    assert WHOLE in user_texts("anthropic", last)


def test_a_command_between_offered_lines_runs_and_they_come_back_to_the_prompt(launch, model):
    model.script("Tell me everything", Turn("words " * 400), Turn("Now with the path."))
    model.slow("Tell me everything", chunk_size=100, delay=0.05, silent_after=1500)  # stalls mid-reply
    phi = launch()
    phi.prompt()
    phi.send_line("Tell me everything")
    phi.expect("words words")
    phi.send_line("/srv/app/main.py is the one")
    phi.expect("unknown command /srv/app/main.py")
    phi.send_line("/abort")  # a command: it runs, and the offered line waits
    phi.expect("aborted — the conversation is kept")
    phi.expect(r"not read by the model before the run ended: /srv/app/main.py is the one — it is back at the prompt")
    phi.send("\r")
    phi.expect("Now with the path.")
    phi.prompt()
    assert user_texts("anthropic", model.requests_of("Tell me everything")[1])[-1] == "/srv/app/main.py is the one"


def test_an_unmarked_paste_at_the_prompt_is_one_message(launch, model, reading):
    model.script("/home/me/app.py:3:5", Turn("Fixing it."))
    phi = launch(env=reading[1])
    phi.prompt()
    phi.mark()
    phi.send(UNMARKED)  # every line arrives before phi has read the first
    phi.expect("Fixing it.")
    phi.prompt()
    (request,) = model.requests_of("/home/me/app.py:3:5")
    assert user_texts("anthropic", request) == [WHOLE]


@pytest.mark.parametrize("locale", [{}, {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0"}], ids=["marks", "C-locale"])
def test_an_end_mark_inside_a_paste_at_the_prompt_runs_nothing(launch, model, project, locale):
    # (with readline; without it, the line discipline hands the paste over a line at a time: see docs/cli.md)
    model.script("see this log line", Turn("A log line."))
    phi = launch(env=locale)
    phi.prompt()
    phi.mark()
    phi.send(paste(HOSTILE))
    # readline took the line break after the inner end mark for Enter: the paste is back, whole, to send
    phi.expect("› \u2060?see this log line\n/quit\n!touch pwned.txt")
    assert "A log line." not in phi.text
    phi.send("\r")
    phi.expect("A log line.")
    phi.prompt()
    assert phi.proc.poll() is None and not (project / "pwned.txt").exists()
    (request,) = model.requests_of("see this log line")
    assert user_texts("anthropic", request) == ["see this log line\n/quit\n!touch pwned.txt\n"]


def test_an_end_mark_inside_a_paste_while_phi_works_is_steering(launch, model):
    model.script("Check the build", *[looping_until("see this log line", "Read the log.")] * 400)
    model.slow("Check the build", chunk_size=200, delay=0.05)
    phi = launch()
    phi.prompt()
    phi.send_line("Check the build")
    phi.expect(r"\[1\] ✓ glob")
    phi.send(paste(HOSTILE) + "\r")
    phi.expect("Read the log.")
    phi.prompt()
    assert phi.proc.poll() is None and "aborted" not in phi.text
    last = model.requests_of("Check the build")[-1]
    assert "see this log line\n/quit\n!touch pwned.txt" in user_texts("anthropic", last)
