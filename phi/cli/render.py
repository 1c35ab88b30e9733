"""What the interactive ``phi`` shows while a session works (SPEC §15 CLI-2, CLI-7; seed 002
§16.6, §16.7, §16.10).

:class:`Renderer` subscribes to a coding session's events (and to its agent's core events for the
thinking stream) and writes, as they arrive: the reply text; thinking dimmed (when shown); one line
per tool call — number, name, short arguments, status, duration and a one-line summary of the
output, the whole output kept for ``/show N``; a coloured unified diff for every file a write tool
changed (the files named in its arguments are read before and after the call) — unless it is the
very change the person was shown and approved before the call; and, after each input, the status
line (:func:`status_line`). ANSI colours only when :class:`Style` is enabled (stdout is a terminal);
otherwise plain text.

On a terminal (``width`` given) the streamed reply and thinking are wrapped at word boundaries, so
that no word is split across two rows: a word is written once it is complete (a space or a line
break follows it) or the reply ends, on the next row when it does not fit on this one. A word wider
than a row is written as it comes. Lines written :meth:`Renderer.aside` the stream — a command typed
while phi replies — therefore start at a word boundary: the word being streamed waits and goes on
after them.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generator, Sequence, TextIO, Union

if TYPE_CHECKING:
    from ..coding import SessionEvent
    from ..events import AgentEvent
    from ..providers.model_config import ModelConfig
    from ..providers.pricing import Cost
    from ..types import AgentMessage, Usage

# What the status line names the model by: its config (priced by its id), or just a name.
Model = Union["ModelConfig", str]

#: how many diff lines are shown before "... N more lines"
DIFF_LINES = 60
GAUGE_WIDTH = 10
LIVE_REFRESH_S = 0.1  # at most this often a running call's line shows its latest output
_PATCH_PATHS = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_PATH_KEYS = ("file_path", "path", "absolute_path")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_BREAKS = re.compile(r"[ \t\n]")
TAB_STOP = 8


class Style:
    """ANSI styling, or none (``enabled=False``: text passes unchanged)."""

    CODES = {"dim": "2", "bold": "1", "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
             "cyan": "36", "grey": "90"}

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, name: str, text: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{self.CODES[name]}m{text}\x1b[0m"


def visible(text: str) -> str:
    """``text`` with every control and format character shown as an escape (``\\r``, ``\\x1b``,
    ``\\u202e``): what the model wrote must not move the cursor, recolour or reorder what a
    question shows (a ``\\r`` could hide the command being approved)."""
    import unicodedata

    def shown(char: str) -> str:
        if char in "\n\t" or unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp"):
            return char
        code = ord(char)
        return repr(char)[1:-1] if code < 0x100 else f"\\u{code:04x}"

    return "".join(shown(char) for char in text) if any(not c.isprintable() for c in text) else text


_TERMINAL_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def inert(text: str) -> str:
    """Streamed model text with the characters that would drive the terminal (escape sequences,
    carriage returns, OSC 52 clipboard writes...) shown as escapes; newlines and tabs stay."""
    return _TERMINAL_CONTROLS.sub(lambda m: repr(m.group())[1:-1], text) if _TERMINAL_CONTROLS.search(text) else text


def columns(text: str) -> int:
    """The columns ``text`` takes on a terminal: escape sequences none, wide (East Asian) characters
    two, combining and format characters none."""
    import unicodedata

    text = _ANSI.sub("", text)
    if text.isascii():
        return sum(1 for char in text if char >= " ")
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf", "Cc"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def plural(count: int, noun: str) -> str:
    """``1 line``, ``2 lines``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def short_arguments(arguments: dict[str, Any], width: int = 60) -> str:
    """``key=value, ...`` on one line, cut to ``width`` characters."""
    parts: list[str] = []
    for key, value in arguments.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{visible(key)}={' '.join(visible(str(shown)).split())}")
    text = ", ".join(parts)
    return text if len(text) <= width else text[:width - 1] + "…"


def summary(output: str, width: int = 60) -> str:
    """``N lines · first line`` of a tool output."""
    lines = output.splitlines()
    if not lines:
        return "no output"
    first = " ".join(visible(lines[0]).split())
    first = first if len(first) <= width else first[:width - 1] + "…"
    return f"{plural(len(lines), 'line')} · {first}"


def colour_diff(lines: list[str], style: Style) -> list[str]:
    out: list[str] = []
    for line in (visible(line) for line in lines):  # file contents must not drive the terminal
        if line.startswith(("+++", "---")):
            out.append(style("bold", line))
        elif line.startswith("+"):
            out.append(style("green", line))
        elif line.startswith("-"):
            out.append(style("red", line))
        elif line.startswith("@@"):
            out.append(style("cyan", line))
        else:
            out.append(line)
    return out


def file_diff(path: str, before: str | None, after: str | None) -> list[str]:
    """A unified diff of one file (a new file is all additions, a deleted one all deletions)."""
    import difflib

    a = [] if before is None else before.splitlines(keepends=True)
    b = [] if after is None else after.splitlines(keepends=True)
    old = "/dev/null" if before is None else f"a/{path}"
    new = "/dev/null" if after is None else f"b/{path}"
    return [line.rstrip("\n") for line in difflib.unified_diff(a, b, old, new)]


def touched_paths(arguments: dict[str, Any]) -> list[str]:
    """The files a write tool's arguments name (a path argument, or the files of a patch)."""
    paths = [arguments[k] for k in _PATH_KEYS if isinstance(arguments.get(k), str)]
    for key in ("input", "patch"):
        text = arguments.get(key)
        if isinstance(text, str):
            paths += [m.group(1) or m.group(2) for m in _PATCH_PATHS.finditer(text)]
    return list(dict.fromkeys(p.strip() for p in paths if p.strip()))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def gauge(ratio: float, style: Style) -> str:
    """``[████░░░░░░] 42%``: green below 60 %, yellow below 85 %, red from there (seed 002 §16.7)."""
    ratio = max(0.0, ratio)
    filled = min(GAUGE_WIDTH, round(ratio * GAUGE_WIDTH))
    colour = "green" if ratio < 0.60 else "yellow" if ratio < 0.85 else "red"
    return style(colour, f"[{'█' * filled}{'░' * (GAUGE_WIDTH - filled)}] {round(ratio * 100)}%")


@dataclass
class TurnStats:
    """Usage and cost of the model calls of one input (and, summed, of the session)."""

    usage: Usage = field(default_factory=lambda: _usage_type()())
    cost: Cost | None = field(default_factory=lambda: _cost_type()())
    context_tokens: int = 0  # the last call's prompt and reply: what the next call starts from
    estimated: bool = False  # some call reported no usage: its figures are phi's estimate

    def add(self, usage: Usage, model: Model, estimated: bool = False) -> None:
        from ..providers.pricing import cost_of

        self.estimated = self.estimated or estimated
        self.usage = self.usage + usage
        call_cost = cost_of(usage, model)
        self.cost = None if call_cost is None or self.cost is None else self.cost + call_cost
        self.context_tokens = usage.input + usage.cache_read + usage.cache_write + usage.output


def _tokens(text: str) -> int:
    from ..context.tokens import estimate_tokens

    return estimate_tokens(text)


def _usage_type() -> type[Usage]:
    from ..types import Usage

    return Usage


def _cost_type() -> type[Cost]:
    from ..providers.pricing import Cost

    return Cost


def context_estimate(messages: Sequence[AgentMessage], system_prompt: str) -> int:
    """Tokens of a conversation by the compactor's heuristic (for models that report no usage)."""
    from ..context.tokens import estimate_tokens, message_tokens

    return estimate_tokens(system_prompt) + sum(message_tokens(m) for m in messages)


def status_line(model: str, turn: TurnStats, total: TurnStats, context_window: int, style: Style,
                mode: str = "", compact_at: float = 0.0, local: bool = False) -> str:
    """``model · in N out N · cache N read (P%) · $cost (session $cost) · context [gauge]`` and, with
    automatic compaction, `` · compacts at P%``. Figures phi estimated because the server reported
    no usage are marked ``~`` (``~in 1.2k ~out 85``, no cache figure); a ``local`` model's cost is
    ``local``, not a price."""
    from ..providers.pricing import format_cost

    u = turn.usage
    parts = [style("bold", model)]
    if turn.estimated:
        parts.append(f"~in {approx(u.input)} ~out {approx(u.output)}")
    else:
        parts += [f"in {u.input:,} out {u.output:,}", f"cache {u.cache_read:,} read ({round(u.cache_hit_rate() * 100)}%)"]
    parts.append("local" if local else f"{format_cost(turn.cost)} (session {format_cost(total.cost)})")
    ratio = total.context_tokens / context_window if context_window else 0.0
    parts.append(f"context {gauge(ratio, style)}")
    if compact_at > 0:
        parts.append(style("grey", f"compacts at {round(compact_at * 100)}%"))
    if mode:
        parts.insert(1, style("magenta", mode))
    return style("grey", " · ").join(parts)


def approx(tokens: int) -> str:
    """An estimated count, no more precise than it is: ``85``, ``1.2k``, ``34k``, ``1.5M``."""
    if tokens < 1000:
        return str(tokens)
    for size, unit in ((1_000_000, "M"), (1000, "k")):
        if tokens >= size:
            value = tokens / size
            return f"{value:.1f}{unit}" if value < 10 else f"{round(value)}{unit}"
    return str(tokens)  # unreachable: 1000 and above found a unit


def reply_tokens(data: dict[str, Any]) -> int:
    """Estimated tokens of a reply (its text, thinking and tool calls) from its end event."""
    from ..context.tokens import estimate_tokens

    calls: object = data.get("tool_calls") or []
    return (estimate_tokens(str(data.get("text") or "")) + estimate_tokens(str(data.get("reasoning") or ""))
            + (estimate_tokens(json.dumps(calls, ensure_ascii=False, default=str)) if calls else 0))


@dataclass
class ToolCall:
    number: int
    name: str
    arguments: dict[str, Any]
    started: float
    before: dict[str, str | None] = field(default_factory=dict[str, str | None])
    output: str = ""
    is_error: bool = False
    diff: list[str] = field(default_factory=list[str])
    shown_at: float = 0.0  # when its running line was last rewritten
    asked_at: float | None = None  # an approval question about it is waiting for the person
    waited: float = 0.0  # seconds spent waiting for approval: not the tool's own time


class Renderer:
    """Writes a session's events to ``out`` (see the module docstring). Thread-safe."""

    def __init__(self, out: TextIO, style: Style, *, show_thinking: bool = True,
                 tool_kind: Callable[[str], str] | None = None, cwd: str = ".", live: bool = False,
                 width: Callable[[], int] | None = None) -> None:
        self.out = out
        self.width = width  # the terminal's columns, read at each word: the streamed reply is wrapped to it
        self.live = live  # a terminal: a running call's line is shown, then rewritten when it ends
        self._open_call: int | None = None  # the call whose "running" line the cursor is on
        self._asking = False  # a question waits for the person's answer
        self.style = style
        self.show_thinking = show_thinking
        self.tool_kind: Callable[[str], str] = tool_kind or (lambda name: "execute")
        self.cwd = Path(cwd)
        self.calls: list[ToolCall] = []
        self._by_id: dict[str, ToolCall] = {}
        self._lock = threading.RLock()
        self._column = 0  # characters written since the last newline
        self._mode = ""  # "thinking" or "text" while a reply streams
        self.turn = TurnStats()
        self.total = TurnStats()
        self.context_guess = 0  # the conversation's estimated size as a run goes: a call without usage sent this much
        self.model: Model = ""
        self.auth_hint = ""  # appended to an authentication error: which variable holds the key
        self.error_shown = False  # an error of the current input was written
        self.error_kind = ""  # the kind of that error (``context_overflow``, ``auth``, ...)
        self._asked: ToolCall | None = None  # the call an approval question is about
        self._word = ""  # streamed text not written yet: the word that may not fit on this row
        self._word_style = ""  # the style it is written in ("dim": thinking)
        self._gap = ""  # the blanks before that word, not written yet (dropped where the row ends)
        self._indent = False  # those blanks start a row of the text: they are written there
        self._aside = 0  # inside aside(): lines that leave the word being streamed waiting
        self.previewed: dict[str, list[str]] = {}  # call id -> the diff shown before the person approved it

    # ------------------------------------------------------------------ output primitives

    def write(self, text: str) -> None:
        with self._lock:
            self._open_call = None
            self.out.write(text)
            self.out.flush()
            tail = text.rsplit("\n", 1)
            tail[-1] = tail[-1].rsplit("\r", 1)[-1] if "\r" in tail[-1] else tail[-1]
            shown = columns(tail[-1])
            self._column = shown if len(tail) > 1 or "\r" in text else self._column + shown

    def fresh_line(self) -> None:
        """Move to the start of a line unless already there (the word being streamed is written
        first, unless this is an :meth:`aside`)."""
        with self._lock:
            if self._aside:  # the stream goes on after the aside, in the same mode
                if self._column:
                    self.write("\n")
                return
            self.end_word()
            if self._column:
                self.write("\n")
            self._mode = ""

    def begin_question(self, call_id: str) -> None:
        """A question about ``call_id`` is about to be asked: its running line (if the cursor is on it)
        is erased, and no running line is drawn until :meth:`after_typing`, so that nothing lands
        between the question and what the person types."""
        with self._lock:
            self._asking = True
            call = self._by_id.get(call_id)
            if call is not None:
                self._erase_running(call.number)
                call.asked_at = time.monotonic()
                self._asked = call

    def _erase_running(self, number: int) -> None:
        if self._open_call == number:  # nothing was written since the call's running line
            self.write("\r\x1b[2K")
            self._column = 0

    def after_typing(self) -> None:
        """The person pressed Enter: the terminal's cursor is at the start of a line."""
        with self._lock:
            self._asking = False
            self._column = 0
            self._open_call = None
            call, self._asked = self._asked, None
            if call is not None and call.asked_at is not None:
                call.waited += time.monotonic() - call.asked_at
                call.asked_at = None

    @contextmanager
    def aside(self) -> Generator[None, None, None]:
        """Lines written inside are not part of the reply streaming meanwhile (a command typed
        during it): they start on a row of their own at a word boundary, and the word being streamed
        goes on after them."""
        with self._lock:
            self._aside += 1
        try:
            yield
        finally:
            with self._lock:
                self._aside -= 1

    def end_word(self) -> None:
        """Write the streamed text held back (the end of the reply, or something else follows it);
        blanks after the last word are dropped."""
        with self._lock:
            word, self._word = self._word, ""
            if word:
                self._put_word(word, self._word_style)
            self._gap = ""

    def _stream(self, text: str, style: str = "") -> None:
        """Streamed model text (see the module docstring): wrapped at word boundaries on a terminal.
        Blanks wait with the word after them: they are written only when it goes on the same row."""
        if self.width is None:
            self.write(self.style(style, text) if style else text)
            return
        if (self._word or self._gap) and style != self._word_style:
            self.end_word()
        self._word_style = style
        pending = self._word + text
        while True:
            found = _BREAKS.search(pending)
            if found is None:
                break
            word, pending = pending[:found.start()], pending[found.end():]
            if word:
                self._put_word(word, style)
            if found.group() == "\n":
                self._gap = ""
                self.write("\n")
            else:
                if not self._gap:
                    self._indent = self._column == 0  # blanks that start a row are the text's own indent
                self._gap += found.group()
        self._word = pending
        if pending and columns(pending) >= self._row_width():  # wider than a row: as it comes
            self.end_word()

    def _row_width(self) -> int:
        try:
            return max(10, (self.width() if self.width is not None else 0) - 1)
        except Exception:  # a closed terminal: no wrapping
            return 1 << 30

    def _put_word(self, word: str, style: str) -> None:
        gap, self._gap = self._gap, ""
        if self._column == 0 and not self._indent:
            gap = ""  # the row was ended for something else (an aside): the paragraph goes on
        at = self._column
        for char in gap:
            at += 1 if char == " " else TAB_STOP - at % TAB_STOP
        if self._column and at + columns(word) > self._row_width():
            self.write("\n")
            gap = ""
        self.write((gap + self.style(style, word)) if style else gap + word)
        self._indent = False

    def line(self, text: str = "") -> None:
        """``text`` on a line of its own."""
        with self._lock:
            self.fresh_line()
            self.write(text + "\n")

    # ------------------------------------------------------------------ events

    def on_core_event(self, event: AgentEvent) -> None:
        """The agent's core events: only the thinking stream is taken from here."""
        if event.type == "MessageUpdate" and event.delta.kind == "thinking" and event.delta.delta:
            if not self.show_thinking:
                return
            with self._lock:
                if self._mode != "thinking":
                    self.end_word()
                    if self._column:
                        self.write("\n")
                    self.write(self.style("dim", "thinking: "))
                    self._mode = "thinking"
                self._stream(inert(event.delta.delta), "dim")

    def on_event(self, event: SessionEvent) -> None:
        handler = self._HANDLERS.get(getattr(event.kind, "value", event.kind))
        if handler is not None:
            handler(self, event.data)

    def _text_delta(self, data: dict[str, Any]) -> None:
        with self._lock:
            if self._mode == "thinking":
                self.end_word()
                self.write("\n")
            self._mode = "text"
            self._stream(inert(data["delta"]))

    def _text_end(self, data: dict[str, Any]) -> None:
        from ..types import Usage

        usage = Usage.from_json(data.get("usage") or {}, "usage")
        reply = reply_tokens(data)
        reported = usage.input or usage.output or usage.cache_read or usage.cache_write
        failed = data.get("stop_reason") == "error" and not reply  # nothing was made: nothing to count
        if not reported and not failed and (reply or self.context_guess):  # a server that sends no usage
            self.add_usage(Usage(input=self.context_guess, output=reply), estimated=True)
        else:
            self.add_usage(usage)
        self.context_guess = self.turn.context_tokens
        with self._lock:
            self.end_word()
            if self._column:
                self.write("\n")
            self._mode = ""

    def add_usage(self, usage: Usage, estimated: bool = False) -> None:
        """A model call's usage, for this input's and the session's figures (``estimated``: phi's guess)."""
        self.turn.add(usage, self.model, estimated)
        self.total.add(usage, self.model, estimated)

    def _tool_start(self, data: dict[str, Any]) -> None:
        arguments: dict[str, Any] = data.get("arguments") or {}
        with self._lock:
            call = ToolCall(len(self.calls) + 1, data["tool_name"], arguments, time.monotonic())
            self.calls.append(call)
            self._by_id[data["call_id"]] = call
        if self.tool_kind(call.name) == "write":
            call.before = {p: _read(self.cwd / p) for p in touched_paths(arguments)}
        if self.live:
            with self._lock:
                if self._asking:
                    return
                self.fresh_line()
                self._running_line(call, "")

    def _running_line(self, call: ToolCall, tail: str) -> None:
        """The line of a call that runs: cut to the terminal's width, so that ``\r`` can rewrite it."""
        text = f"[{call.number}] … {call.name}({short_arguments(call.arguments)})"
        if tail:
            text += f" · {' '.join(tail.split())}"
        width = shutil.get_terminal_size((100, 24)).columns - 1
        self.write(self.style("dim", text if len(text) <= width else text[:width - 1] + "…"))
        self._open_call = call.number

    def _tool_output(self, data: dict[str, Any]) -> None:
        """Output of a running call: its last line, on the call's running line (terminals only)."""
        with self._lock:
            call = self._by_id.get(data.get("call_id", ""))
            if call is None or not self.live or self._asking:
                return
            call.output += data.get("delta") or ""
            now = time.monotonic()
            if self._open_call != call.number or now - call.shown_at < LIVE_REFRESH_S:
                return
            call.shown_at = now
            lines = [line for line in call.output.splitlines() if line.strip()]
            self.write("\r\x1b[2K")
            self._running_line(call, lines[-1] if lines else data.get("progress") or "")

    def _tool_end(self, data: dict[str, Any]) -> None:
        with self._lock:
            call = self._by_id.pop(data["call_id"], None)
            previewed = self.previewed.pop(data["call_id"], None)
        if call is None:
            return
        call.output, call.is_error = data.get("output", ""), bool(data.get("is_error"))
        self.context_guess += _tokens(str(data.get("error") if call.is_error else call.output or ""))
        for path, before in call.before.items():
            call.diff += file_diff(path, before, _read(self.cwd / path))
        seconds = max(0.0, time.monotonic() - call.started - call.waited)
        mark = self.style("red", "✗") if call.is_error else self.style("green", "✓")
        text = data.get("error") if call.is_error else call.output
        head = (f"{self.style('grey', f'[{call.number}]')} {mark} {self.style('bold', call.name)}"
                f"({short_arguments(call.arguments)}) {self.style('grey', f'{seconds:.1f}s')} · "
                f"{summary(text or '')}")
        with self._lock:
            self._erase_running(call.number)
            self.line(head)
            if call.diff and call.diff != previewed:  # (the change approved is on the screen already)
                shown = colour_diff(call.diff[:DIFF_LINES], self.style)
                more = len(call.diff) - DIFF_LINES
                if more > 0:
                    shown.append(self.style("grey", f"… {plural(more, 'more diff line')} (/show {call.number})"))
                self.write("\n".join(shown) + "\n")

    def _steering(self, data: dict[str, Any]) -> None:
        self.line(self.style("yellow", f"↳ steering: {data.get('content', '')}"))

    def _notice(self, data: dict[str, Any]) -> None:
        self.line(self.style("yellow", f"! {data.get('message', '')}"))

    def _error(self, data: dict[str, Any]) -> None:
        hint = f" ({self.auth_hint})" if data.get("kind") == "auth" and self.auth_hint else ""
        self.error_shown = True
        self.error_kind = str(data.get("kind") or "")
        self.line(self.style("red", f"error: {data.get('message', '')}{hint}"))

    def _limit(self, data: dict[str, Any]) -> None:
        self.line(self.style("yellow", f"! turn limit reached ({data})"))

    # Keyed by the EventKind values (a str enum hashes as its value), so that the first screen need
    # not import the coding layer.
    _HANDLERS: ClassVar[dict[str, Callable[[Renderer, dict[str, Any]], None]]] = {
        "assistant_text_delta": _text_delta,
        "assistant_text_end": _text_end,
        "tool_call_start": _tool_start,
        "tool_call_output_delta": _tool_output,
        "tool_call_end": _tool_end,
        "steering_injected": _steering,
        "loop_detection": _notice,
        "warning": _notice,
        "error": _error,
        "turn_limit": _limit,
    }

    # ------------------------------------------------------------------ commands

    def show(self, number: int) -> str:
        """The whole output (and diff) of tool call ``number`` (``/show N``)."""
        if not 1 <= number <= len(self.calls):
            return f"no tool call {number} (there {'is' if len(self.calls) == 1 else 'are'} {len(self.calls)})"
        call = self.calls[number - 1]
        parts = [f"[{call.number}] {call.name}({json.dumps(call.arguments, ensure_ascii=False)})", call.output]
        if call.diff:
            parts.append("\n".join(colour_diff(call.diff, self.style)))
        return "\n".join(parts)

    def start_turn(self, context_guess: int = 0) -> None:
        """A new input; ``context_guess``: the estimated size of the conversation it is sent with
        (the input included), the prompt size of a first call that reports no usage."""
        self.turn = TurnStats(context_tokens=self.total.context_tokens)
        self.context_guess = context_guess
        self.previewed.clear()  # (a question an abort left unanswered)
        self.error_shown = False
        self.error_kind = ""

    def status(self, context_window: int, mode: str = "", estimate: Callable[[], int] | None = None,
               compact_at: float = 0.0) -> str:
        """The status line; ``estimate`` gives the context size when no model call reported usage."""
        if not self.total.context_tokens and estimate is not None:
            self.total.context_tokens = estimate()
        from ..providers.local_servers import is_local_server

        local = not isinstance(self.model, str) and is_local_server(self.model)
        model = self.model if isinstance(self.model, str) else self.model.id
        return status_line(model, self.turn, self.total, context_window, self.style, mode, compact_at, local)


__all__ = ["Renderer", "Style", "TurnStats", "status_line", "context_estimate", "gauge", "file_diff", "touched_paths",
           "approx", "reply_tokens", "summary", "short_arguments", "colour_diff", "columns", "plural"]
