"""Reading the person's input in the interactive ``phi`` (SPEC §15 CLI-3, CLI-9, CLI-10; seed 002 §16.4).

On a terminal, the terminal's bracketed paste is on from the first prompt to the exit: it wraps a
paste in ``ESC[200~`` … ``ESC[201~``, so a pasted block is one input and phi knows it was pasted.
An input whose first character came from a paste is a :class:`Verbatim` line: a message, never a
command, even when it starts with ``/`` (compiler output, an absolute path).

At the prompt a line is read blocking, with ``readline`` line editing and a history file when stdin
is a terminal and readline is there: readline keeps a paste's newlines inside one input (CPython
switches readline's bracketed paste off; :class:`Terminal` switches it back on), and GNU readline
is made to put an invisible mark (:data:`PASTE_MARK`) where a paste starts, removed from the input
and the history. Where the mark cannot be had (libedit), an input holding a line break was pasted
(Enter always ends a typed one). Without readline the line is read through a
:class:`LineAssembler`, which sees the paste's own marks. Enter sends.

While a run streams (:meth:`Terminal.running`), the terminal is put in a non-canonical, non-echoing
mode: typed text is not echoed into the streaming reply, a complete line is handed to the caller by
:meth:`Terminal.poll_line` (a bracketed paste is one line, newlines included), an approval answer
is one key (:meth:`Terminal.read_key`), and Ctrl+C still interrupts. A line typed when the run ended
meanwhile becomes the next input (:meth:`Terminal.unread`); a line still being typed when the run
ends is put back into the prompt's edit buffer.

Only a key answers a one-key question: a read holding one typed character. A paste — bracketed, or
several characters in one read (a terminal that does not bracket) — is kept whole as one line for
after the question. An end mark inside pasted text (``ESC[201~`` copied from a log) does not end the
paste when another end mark follows it, with no start mark between, in what has arrived: a terminal
sends one end mark per paste. After readline returns a line, what arrived behind it is read at once,
so a paste readline ended at such a mark (taking a line break of it for Enter) comes back whole.
"""

from __future__ import annotations

import codecs
import os
import re
import select
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Generator, TextIO

from ..log import get_logger

log = get_logger(__name__)

HISTORY_LINES = 1000
PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
#: put by readline where a paste starts: WORD JOINER, a character of zero width
PASTE_MARK = "\u2060"
#: a key sequence no terminal sends, bound to readline's own paste reading (after the mark)
_PASTE_BODY = r"\e[200;0~"
_ESCAPE = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|O.|[^\[O])", re.S)
_ERASE = ("\x7f", "\x08")
_KILL_LINE = "\x15"  # Ctrl+U


class Verbatim(str):
    """A line that is a message as it stands, never a command: its first character (after blanks)
    came from a bracketed paste."""

    __slots__ = ()


class LineAssembler:
    """Turns the bytes a terminal sends in non-canonical mode (or the lines of a plain read) into
    lines: Backspace and Ctrl+U edit, other escape sequences (arrows) are dropped, a bracketed paste
    is taken whole (its newlines are part of the line) and Enter ends a line. A sequence split across
    reads waits for its rest. A line that starts with pasted text is a :class:`Verbatim`."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._raw = ""
        self.line = ""  # the line being typed
        self.verbatim = False  # whether ``line`` starts with pasted text
        self.lines: list[str] = []  # complete lines, oldest first
        self._in_paste = False
        self._after_cr = False  # a "\n" right after a "\r" ends no second line

    def decode(self, data: bytes) -> str:
        """``data`` as text (a character split across reads waits for its rest)."""
        return self._decoder.decode(data)

    def feed(self, data: bytes) -> None:
        self.feed_text(self.decode(data))

    @property
    def busy(self) -> bool:
        """Inside a paste, or a sequence waits for its rest."""
        return self._in_paste or bool(self._raw)

    def end_line(self) -> None:
        """The line being typed (or pasted) is complete now, as if Enter had been pressed."""
        if self.line.strip():
            self._end_line()

    def feed_text(self, text: str) -> None:
        self._raw += text
        self._consume()

    def finish(self) -> None:
        """The input ended: a line being typed (or pasted) is complete."""
        if self._in_paste:
            self._add(self._raw.replace("\r\n", "\n").replace("\r", "\n"), pasted=True)
            self._raw, self._in_paste = "", False
        if self.line:
            self._end_line()

    def _add(self, text: str, pasted: bool) -> None:
        if text.strip() and not self.line.strip():  # the line's first visible character decides
            self.verbatim = pasted
        self.line += text

    def _erased(self) -> None:
        if not self.line.strip():
            self.verbatim = False

    def _end_line(self) -> None:
        self.lines.append(Verbatim(self.line) if self.verbatim else self.line)
        self.line, self.verbatim = "", False

    def _consume(self) -> None:
        while self._raw:
            if self._in_paste:
                if not self._take_paste():
                    return
                continue
            char = self._raw[0]
            if char == "\x1b":
                if not self._take_escape():
                    return
                continue
            self._raw = self._raw[1:]
            after_cr, self._after_cr = self._after_cr, char == "\r"
            if char == "\n" and after_cr:
                continue
            if char in "\r\n":
                self._end_line()
            elif char in _ERASE:
                self.line = self.line[:-1]
                self._erased()
            elif char == _KILL_LINE:
                self.line = ""
                self._erased()
            elif char >= " " or char == "\t":
                self._add(char, pasted=False)

    def _take_paste(self) -> bool:
        end = _paste_end(self._raw)
        if end < 0:
            keep = next((n for n in range(len(PASTE_END) - 1, 0, -1) if self._raw.endswith(PASTE_END[:n])), 0)
            cut = len(self._raw) - keep
            self._add(self._raw[:cut].replace("\r\n", "\n").replace("\r", "\n"), pasted=True)
            self._raw = self._raw[cut:]
            return False
        # (an end mark inside the pasted text is a control sequence, not text: it goes)
        self._add(self._raw[:end].replace(PASTE_END, "").replace("\r\n", "\n").replace("\r", "\n"), pasted=True)
        self._raw = self._raw[end + len(PASTE_END):]
        self._in_paste = False
        self._after_cr = False
        return True

    def _take_escape(self) -> bool:
        """False when the sequence at the start is not complete yet."""
        if self._raw.startswith(PASTE_START):
            self._raw = self._raw[len(PASTE_START):]
            self._in_paste = True
            return True
        found = _ESCAPE.match(self._raw)
        if found is None:
            return False
        self._raw = self._raw[found.end():]
        return True

    def next_line(self) -> str | None:
        return self.lines.pop(0) if self.lines else None


def _paste_end(text: str) -> int:
    """Where the paste that ``text`` continues ends (-1: not in ``text``). An end mark followed by
    another one with no start mark between belongs to the pasted text itself (copied from a log or a
    page): a terminal sends one end mark per start mark, so the paste goes on to the last of them."""
    end = text.find(PASTE_END)
    while end >= 0:
        after = end + len(PASTE_END)
        following, start = text.find(PASTE_END, after), text.find(PASTE_START, after)
        if following < 0 or 0 <= start < following:
            return end
        end = following
    return end


def _one_key(text: str) -> str | None:
    """The key a read of ``text`` is, when it is one typed character (Enter after it allowed);
    "" when it holds no character (Enter alone, an arrow); None when it holds more: a paste."""
    keys = _ESCAPE.sub("", text).rstrip("\r\n")
    if len(keys) > 1 or PASTE_START in text:
        return None
    return keys


class Terminal:
    """Reading lines: blocking at the prompt, polled while a run streams (see the module docstring)."""

    def __init__(self, stdin: TextIO, out: TextIO, history: str | None = None) -> None:
        self.stdin = stdin
        self.out = out
        try:
            self.fd: int | None = stdin.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None
        self.tty = self.fd is not None and os.isatty(self.fd)
        # escapes for the terminal only when what we write goes to the terminal we read
        self.interactive = self.tty and _isatty(out)
        self._typed = LineAssembler()
        self.history = history if self.tty else None  # readline's history file, kept between runs
        self.completer: Callable[[str], list[str]] | None = None  # Tab at the prompt (phi.cli.extras)
        self.editing = False  # readline edits the prompt's line (and can show text put back there)
        self._marks = False  # readline marks where a paste starts (PASTE_MARK)
        self.cleared = ""  # what the line held when Ctrl+C interrupted the last prompt
        if self.history is not None and stdin is sys.stdin:  # input() reads sys.stdin only
            self._setup_readline()

    def _setup_readline(self) -> None:
        try:
            import readline  # line editing and history for input()
        except ImportError:  # a Python built without it: lines are read plainly
            log.debug("no readline: the prompt has no line editing")
            return
        self.editing = True
        readline.parse_and_bind("set enable-bracketed-paste on")
        if "libedit" not in (readline.__doc__ or "") and _utf8_locale():
            # the paste's start sequence becomes: a zero-width mark, then readline's own paste reading.
            # The mark's bytes must be taken as text: with convert-meta on (an inputrc may say so; it
            # breaks typing any non-ASCII letter in a UTF-8 locale anyway) readline crashes on them.
            readline.parse_and_bind("set convert-meta off")
            readline.parse_and_bind("set input-meta on")
            readline.parse_and_bind(f'"{_PASTE_BODY}": bracketed-paste-begin')
            mark = "".join(f"\\x{byte:02x}" for byte in PASTE_MARK.encode("utf-8"))
            readline.parse_and_bind(f'"\\e[200~": "{mark}{_PASTE_BODY}"')
            self._marks = True
        readline.set_history_length(HISTORY_LINES)
        readline.set_completer_delims(" \t\n")
        readline.set_completer(self._complete)
        readline.parse_and_bind("tab: complete")
        try:
            readline.read_history_file(self.history or "")
        except OSError:
            pass  # no history yet

    def _complete(self, text: str, state: int) -> str | None:
        if self.completer is None:
            return None
        try:
            options = self.completer(text)
        except Exception:  # a completion must never break the prompt
            log.debug("completion failed", exc_info=True)
            return None
        return options[state] if state < len(options) else None

    def save_history(self) -> None:
        if self.history is None or not self.editing:
            return
        import readline

        try:
            os.makedirs(os.path.dirname(self.history) or ".", exist_ok=True)
            readline.write_history_file(self.history)
        except OSError as error:
            log.warning("could not save the input history to %s: %s", self.history, error)

    def waiting(self) -> bool:
        """Whether complete lines already read wait to be returned (typed ahead, or a paste the
        terminal did not mark): the next :meth:`prompt` returns them without showing the edit buffer."""
        return bool(self._typed.lines)

    def take_pastes(self) -> list[str]:
        """The pastes read and not yet returned (one kept at a question), taken out of the input."""
        pastes: list[str] = [line for line in self._typed.lines if isinstance(line, Verbatim)]
        self._typed.lines = [line for line in self._typed.lines if not isinstance(line, Verbatim)]
        return pastes

    def unread(self, line: str) -> None:
        """Give ``line`` back: the next :meth:`prompt` returns it."""
        self._typed.lines.insert(0, line)

    def put_back(self, text: str) -> None:
        """Show ``text`` in the next prompt's edit buffer, as if typed and not sent yet (before what
        is being typed now); a :class:`Verbatim` stays one. Only with the line editor (:attr:`editing`)."""
        typed = self._typed.line
        self._typed.line = text + ("\n" + typed if typed.strip() else "")
        self._typed.verbatim = isinstance(text, Verbatim)

    def prompt(self, text: str) -> str:
        """One input; raises EOFError (Ctrl+D) and KeyboardInterrupt (Ctrl+C). A line typed while the
        last run ended (already read from the terminal) comes first. A :class:`Verbatim` when it
        starts with pasted text. After Ctrl+C the cursor is on a new row, below the line as it was
        typed (kept on the screen, whole), and :attr:`cleared` holds that line's text."""
        self.cleared = ""
        try:
            return self._prompt(text)
        except KeyboardInterrupt:
            self.cleared = self._line_buffer()
            if self.tty:
                # readline leaves the cursor at the start of the prompt's row (with bracketed paste
                # on, its "\r"), and the line typed there: what follows goes below it, not over it
                self.out.write("\n")
                self.out.flush()
            raise

    def _line_buffer(self) -> str:
        if not self.editing:
            return self._typed.line
        import readline

        return readline.get_line_buffer().replace(PASTE_MARK, "")

    def _prompt(self, text: str) -> str:
        while self._typed.lines:
            line = self._typed.lines.pop(0)
            if line.strip():
                self.out.write(text + line + "\n")
                self.out.flush()
                return line
        if self.editing:
            # readline must not count escape sequences as printed characters
            text = re.sub(r"(\x1b\[[0-9;]*m)", "\x01\\1\x02", text)
            while True:
                self._put_back_typing()
                try:
                    line = self._edited(self._read_line(text))
                finally:
                    self.paste_mode(True)  # readline switches the terminal's bracketed paste off after a line
                if not self._typed_ahead(line):
                    return line
                if self._typed.lines:  # the paste and an Enter after it
                    return self._typed.lines.pop(0)
        self.out.write(text)
        self.out.flush()
        return self._read_plain()

    @staticmethod
    def _read_line(text: str) -> str:
        """``input(text)`` through readline, where a Ctrl+C can reach Python only after the line: when
        the signal lands as the prompt is drawn, before readline waits for keys (this thread was
        descheduled there), or on another thread, readline's wait is not interrupted, and Python
        raises KeyboardInterrupt as ``input()`` returns the line typed next. That line was typed after
        the Ctrl+C (CLI-9: nothing typed is dropped), so it is the input. It is kept by C code alone
        (``extend`` of a ``map``) before control is back in Python, where the signal is raised; a
        Ctrl+C during the editing itself interrupts ``input()`` before any line, as always."""
        returned: list[str] = []
        try:
            returned.extend(map(input, (text,)))
        except KeyboardInterrupt:
            if not returned:
                raise
        return returned[0]

    def _edited(self, raw: str) -> str:
        """The line readline returns, without paste marks; a Verbatim when a paste began it."""
        line = raw.replace(PASTE_MARK, "")
        if line != raw:
            import readline

            last = readline.get_current_history_length()
            if last and readline.get_history_item(last) == raw:
                readline.replace_history_item(last - 1, line)
        pasted = raw.lstrip().startswith(PASTE_MARK) if self._marks else "\n" in line
        return Verbatim(line) if pasted else line

    def _read_plain(self) -> str:
        """A line without the line editor, read through the assembler: a bracketed paste in the
        input (a terminal without readline, or bytes piped in) is one line, and a Verbatim."""
        while not self._typed.lines:
            chunk = self._read_together() if self.tty else self.stdin.readline()
            if not chunk:
                self._typed.finish()
                if not self._typed.lines:
                    raise EOFError
                break
            self._typed.feed_text(chunk)
        return self._typed.lines.pop(0)

    def _read_together(self) -> str:
        """What the terminal has sent (one line at least, a line discipline being on): a paste of
        several lines arrives whole, so an end mark inside it is told from the real one."""
        assert self.fd is not None
        data = os.read(self.fd, 65536)
        while data and select.select([self.fd], [], [], 0)[0]:
            more = os.read(self.fd, 65536)
            if not more:
                break
            data += more
        return self._typed.decode(data)

    def _typed_ahead(self, line: str) -> bool:
        """After readline returned ``line``: take what was sent after it (typed ahead, or the rest of
        a paste) into the assembler. True when that goes on with a paste readline ended too early —
        at an end mark the pasted text itself holds, a line break after it taken for Enter: the
        paste, ``line`` first, is then being edited again (it waits for Enter)."""
        if self.fd is None or not select.select([self.fd], [], [], 0)[0]:
            return False
        rest = self._read_together()
        end, start = rest.find(PASTE_END), rest.find(PASTE_START)
        typed = self._typed
        if end >= 0 and not 0 <= start < end:
            # (without paste marks, the input now holds a line break: pasted)
            typed.line, typed.verbatim = line + "\n", isinstance(line, Verbatim) or not self._marks
            typed.feed_text(PASTE_START + rest)
            return True
        typed.feed_text(rest)
        return False

    def _put_back_typing(self) -> None:
        """What was typed during the run and not sent yet is the start of this prompt's input."""
        prefill = self._typed.line
        if self._typed.verbatim and self._marks:
            prefill = PASTE_MARK + prefill  # still a paste when it comes back
        self._typed.line, self._typed.verbatim = "", False
        if not prefill:
            return
        import readline

        def insert() -> None:
            readline.set_pre_input_hook(None)
            readline.insert_text(prefill)
            readline.redisplay()

        readline.set_pre_input_hook(insert)

    def paste_mode(self, on: bool) -> None:
        """Switch the terminal's bracketed paste on (from the first prompt) or off (at the exit)."""
        if self.interactive:
            self.out.write(PASTE_ON if on else PASTE_OFF)
            self.out.flush()

    @contextmanager
    def running(self) -> Generator[None, None, None]:
        """While a run streams: no echo, no line discipline, bracketed paste on (terminals only)."""
        if not self.tty or self.fd is None:
            yield
            return
        import termios

        fd = self.fd
        saved = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ICANON | termios.ECHO)
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        self.paste_mode(True)  # (it stays on: a paste between two reads must arrive marked too)
        try:
            yield
        finally:
            termios.tcsetattr(fd, termios.TCSANOW, saved)

    def _read_available(self, timeout: float) -> bool:
        """Read what the terminal has within ``timeout``; False when nothing came."""
        if self.fd is None:
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.fd, 65536)
        self._typed.feed(chunk if chunk else b"\n")
        return True

    def poll_line(self, timeout: float) -> str | None:
        """A line typed while a run streams, if one is complete within ``timeout`` (terminals only)."""
        if not self.tty or self.fd is None:
            threading.Event().wait(timeout)
            return None
        if not self._typed.lines:
            self._read_available(timeout)
        return self._typed.next_line()

    def read_key(self, keys: str, on_paste: Callable[[str], None] | None = None) -> str:
        """One key of ``keys`` (case-insensitive), pressed after this call; other keys are ignored.
        Only a read holding one typed character (Enter after it allowed) answers: a paste — bracketed,
        or several characters arriving in one read (a terminal without bracketed paste) — never does.
        It is kept whole as one line (a :class:`Verbatim`) that :meth:`poll_line` or :meth:`prompt`
        returns after the question, and ``on_paste`` is called with it; the question stays asked.
        Without a terminal, the first letter of the next line of stdin that is one of them."""
        if not self.tty or self.fd is None:
            while True:
                line = self.stdin.readline()
                if not line:
                    raise EOFError
                answer = line.strip().lower()[:1]
                if answer and answer in keys:
                    return answer
        typed = self._typed
        held_from: int | None = None  # the number of complete lines before the paste being held
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError
            text = typed.decode(chunk)
            key = None if typed.busy else _one_key(text)
            if key is not None:
                if key and key.lower() in keys:
                    return key.lower()
                continue  # another key, Enter alone, an arrow: no answer
            if held_from is None:
                held_from = len(typed.lines)
            bare = _ESCAPE.sub("", text)
            if typed.busy or PASTE_START in text or "\x1b" in bare:
                typed.feed_text(text)
            else:  # several characters in one read: a paste the terminal did not mark
                typed.feed_text(PASTE_START + bare + PASTE_END)
            if typed.busy:
                continue  # the rest of the paste is still to come
            typed.end_line()
            held = [line for line in typed.lines[held_from:] if line.strip()]
            held_from = None
            if held and on_paste is not None:
                on_paste("\n".join(held))

    def read_answer(self, question: str) -> str:
        """A line answering ``question`` (the line typed; terminals: read while a run streams)."""
        self.out.write(question)
        self.out.flush()
        if not self.tty:
            return self.stdin.readline().strip()
        while True:
            line = self.poll_line(0.2)
            if line is not None:
                return line.strip()


def _utf8_locale() -> bool:
    """Whether readline reads UTF-8 (the C library's LC_CTYPE; readline took it when it started)."""
    import locale

    return "utf8" in locale.setlocale(locale.LC_CTYPE).lower().replace("-", "")


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


__all__ = ["Terminal", "LineAssembler", "Verbatim", "HISTORY_LINES", "PASTE_ON", "PASTE_OFF", "PASTE_MARK"]
