"""Reading the person's input in the interactive ``phi`` (SPEC §15 CLI-3, CLI-9, CLI-10; seed 002 §16.4).

At the prompt a line is read blocking, with ``readline`` line editing, a history file and
bracketed paste when stdin is a terminal: the terminal wraps a paste in ``ESC[200~`` … ``ESC[201~``
and readline keeps its newlines inside one input (CPython switches readline's bracketed paste off;
:class:`Terminal` switches it back on). Enter sends.

While a run streams (:meth:`Terminal.running`), the terminal is put in a non-canonical, non-echoing
mode: typed text is not echoed into the streaming reply, a complete line is handed to the caller by
:meth:`Terminal.poll_line` (a bracketed paste is one line, newlines included), an approval answer
is one key (:meth:`Terminal.read_key`), and Ctrl+C still interrupts. A line typed when the run ended
meanwhile becomes the next input (:meth:`Terminal.unread`); a line still being typed when the run
ends is put back into the prompt's edit buffer.
"""

from __future__ import annotations

import codecs
import os
import re
import select
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

from ..log import get_logger

log = get_logger(__name__)

HISTORY_LINES = 1000
PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
_ESCAPE = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|O.|[^\[O])", re.S)
_ERASE = ("\x7f", "\x08")
_KILL_LINE = "\x15"  # Ctrl+U


class LineAssembler:
    """Turns the bytes a terminal sends in non-canonical mode into lines: Backspace and Ctrl+U edit,
    other escape sequences (arrows) are dropped, a bracketed paste is taken whole (its newlines are
    part of the line) and Enter ends a line. A sequence split across reads waits for its rest."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._raw = ""
        self.line = ""  # the line being typed
        self.lines: list[str] = []  # complete lines, oldest first
        self._in_paste = False

    def feed(self, data: bytes) -> None:
        self._raw += self._decoder.decode(data)
        self._consume()

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
            if char in "\r\n":
                self.lines.append(self.line)
                self.line = ""
            elif char in _ERASE:
                self.line = self.line[:-1]
            elif char == _KILL_LINE:
                self.line = ""
            elif char >= " " or char == "\t":
                self.line += char

    def _take_paste(self) -> bool:
        end = self._raw.find(PASTE_END)
        if end < 0:
            keep = next((n for n in range(len(PASTE_END) - 1, 0, -1) if self._raw.endswith(PASTE_END[:n])), 0)
            cut = len(self._raw) - keep
            self.line += self._raw[:cut].replace("\r\n", "\n").replace("\r", "\n")
            self._raw = self._raw[cut:]
            return False
        self.line += self._raw[:end].replace("\r\n", "\n").replace("\r", "\n")
        self._raw = self._raw[end + len(PASTE_END):]
        self._in_paste = False
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
        self._typed = LineAssembler()
        self.history = history if self.tty else None  # readline's history file, kept between runs
        self.completer: Callable[[str], list[str]] | None = None  # Tab at the prompt (phi.cli.extras)
        self.on_prompt_shown: Callable[[], None] | None = None  # called as the prompt is shown
        if self.history is not None:
            self._setup_readline()

    def _setup_readline(self) -> None:
        import readline  # line editing and history for input()

        readline.parse_and_bind("set enable-bracketed-paste on")
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
        if self.history is None:
            return
        import readline

        try:
            os.makedirs(os.path.dirname(self.history) or ".", exist_ok=True)
            readline.write_history_file(self.history)
        except OSError as error:
            log.warning("could not save the input history to %s: %s", self.history, error)

    def unread(self, line: str) -> None:
        """Give ``line`` back: the next :meth:`prompt` returns it."""
        self._typed.lines.insert(0, line)

    def prompt(self, text: str) -> str:
        """One input; raises EOFError (Ctrl+D) and KeyboardInterrupt (Ctrl+C). A line typed while the
        last run ended (already read from the terminal) comes first."""
        while self._typed.lines:
            line = self._typed.lines.pop(0)
            if line.strip():
                self.out.write(text + line + "\n")
                self.out.flush()
                return line
        if self.stdin is sys.stdin:
            if self.tty:  # readline must not count escape sequences as printed characters
                text = re.sub(r"(\x1b\[[0-9;]*m)", "\x01\\1\x02", text)
                self._put_back_typing()
            # not from a readline hook: readline drops exceptions raised there, a Ctrl+C among them
            self._prompt_shown()
            return input(text)
        self.out.write(text)
        self.out.flush()
        self._prompt_shown()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def _prompt_shown(self) -> None:
        hook, self.on_prompt_shown = self.on_prompt_shown, None
        if hook is not None:
            hook()

    def _put_back_typing(self) -> None:
        """What was typed during the run and not sent yet is the start of this prompt's input."""
        prefill = self._typed.line
        self._typed.line = ""
        if not prefill:
            return
        import readline

        def insert() -> None:
            readline.set_pre_input_hook(None)
            readline.insert_text(prefill)
            readline.redisplay()

        readline.set_pre_input_hook(insert)

    @contextmanager
    def running(self) -> Iterator[None]:
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
        self.out.write(PASTE_ON)
        self.out.flush()
        try:
            yield
        finally:
            termios.tcsetattr(fd, termios.TCSANOW, saved)
            self.out.write(PASTE_OFF)
            self.out.flush()

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

    def read_key(self, keys: str) -> str:
        """One key of ``keys`` (case-insensitive), pressed after this call; other keys are ignored.
        Without a terminal, the first letter of the next line of stdin that is one of them."""
        if not self.tty or self.fd is None:
            while True:
                line = self.stdin.readline()
                if not line:
                    raise EOFError
                answer = line.strip().lower()[:1]
                if answer and answer in keys:
                    return answer
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError
            text = chunk.decode("utf-8", "replace")
            found = next((i for i, char in enumerate(text) if char.lower() in keys), None)
            if found is not None:
                rest = text[found + 1:].lstrip("\r\n")  # "y" then Enter is one answer
                self._typed.feed(rest.encode("utf-8"))
                return text[found].lower()

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


__all__ = ["Terminal", "LineAssembler", "HISTORY_LINES", "PASTE_ON", "PASTE_OFF"]
