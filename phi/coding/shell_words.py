"""How the permission rules read a shell command line (SPEC §14 CODE-8; issue 34 item 4).

:func:`parse_command` splits a command line into its simple commands the way bash would, without
running anything: words with their quotes removed, redirections apart from the words, here-document
bodies read, comments dropped. It also says what a prefix rule must not wave through:

* a command or process substitution anywhere (``$(...)``, backticks, ``<(...)``, ``>(...)``,
  ``$((...))``, or one inside ``${...}`` or an unquoted here-document) — :attr:`ParsedCommand.substitution`;
* a redirection that writes a file (``>``, ``>>``, ``>|``, ``&>``, ``<>``; ``/dev/null`` and ``>&2``
  excepted) — :attr:`ParsedCommand.writes`;
* text bash could not finish reading (an open quote, an unclosed substitution, a here-document with
  no end line), or a line continuation next to single quotes, a comment or a here-document (where
  bash joins the lines there is not read here) — :attr:`ParsedCommand.complete` false.

:attr:`ParsedCommand.normalised` is the command written again token by token with single spaces
(quoted text kept as written), so two spellings of one command compare equal and two different
commands never do. :func:`denial_views` is what deny and ask rules look at: every simple command,
nested ones included (substitutions, ``sh -c SCRIPT``, ``eval``, a here-document fed to a shell),
also with leading ``NAME=value`` assignments and wrappers (``sudo``, ``env``, ``timeout``, ...) cut
off. It is a guardrail that sees what the text says — not scripts, aliases or values read at run time.

The module imports only the standard library: the ``phi`` command reads the rules before its first
prompt (SPEC CLI-12).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

#: programs that run their arguments as another command: a prefix rule never stands for them (see
#: phi.coding.permissions.suggest_rule), and deny rules look at the command they run
WRAPPERS = frozenset({
    "sudo", "doas", "su", "env", "xargs", "eval", "exec", "command", "builtin", "nohup", "nice", "ionice", "time",
    "timeout", "setsid", "stdbuf", "unbuffer", "watch", "strace", "ltrace", "chroot", "unshare", "nsenter", "flock",
    "chrt", "taskset", "parallel", "script", "ssh", "busybox", "fakeroot", "firejail", "systemd-run", "find",
    "then", "do", "else", "elif", "if", "while", "until", "!", "{", "coproc",
})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash"})
_MAX_DEPTH = 4
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_OPERATORS = (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|", "(", ")")
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
           "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


#: marks, in a word's key, a character the shell expands (an unquoted glob character, a ``$``
#: expansion, a leading ``~``): ``rm *`` and ``rm '*'`` have the same words, not the same keys
EXPANDS = "\0"
_GLOB = "*?[{"


@dataclass
class SimpleCommand:
    """One simple command: its words (quotes removed), their keys (the words with what the shell
    expands marked, :data:`EXPANDS`: what rules compare), its redirections ``(operator, target)``
    and the bodies of its here-documents."""

    words: list[str] = field(default_factory=list[str])
    keys: list[str] = field(default_factory=list[str])
    redirects: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    heredocs: list[str] = field(default_factory=list[str])


@dataclass
class ParsedCommand:
    """A command line read by :func:`parse_command` (see the module docstring)."""

    commands: list[SimpleCommand]
    tokens: list[str]  # words as written, operators, here-document bodies: what `normalised` joins
    nested: list[str]  # the text inside substitutions (deny rules look at it too)
    substitution: bool
    complete: bool
    #: a ``${...}`` or ``$[...]`` expansion: bash may evaluate arithmetic there (``${a[$(cmd)]}``,
    #: ``${y:=...}${a[y]}``), so a prefix rule never waves such a line through
    expansion: bool = False

    @property
    def normalised(self) -> str:
        return " ".join(self.tokens)

    @property
    def writes(self) -> bool:
        """Whether a redirection writes a file."""
        return any(_writes(op, target) for command in self.commands for op, target in command.redirects)

    @property
    def plain(self) -> bool:
        """Nothing a prefix rule must refuse: no substitution, no redirection writing a file, read to the end."""
        return self.complete and not self.substitution and not self.writes and not self.expansion


def _writes(op: str, target: str) -> bool:
    if op in (">&", "<&"):  # duplicating a descriptor (2>&1, >&-) writes nothing; >&FILE does
        return not (target.isdigit() or target == "-" or target.rstrip("-").isdigit())
    return op in _WRITES and target not in _SAFE_TARGETS


def is_assignment(word: str) -> bool:
    return _ASSIGNMENT.match(word) is not None


def parse_command(text: str) -> ParsedCommand:
    """Read ``text`` as bash would (see the module docstring)."""
    if "\\\n" not in text:
        return _Scanner(text).run()
    if any(mark in text for mark in ("'", "#", "<<")):
        # bash drops a backslash-newline before it reads the line, except inside single quotes, $'...',
        # comments and quoted here-documents: next to those, where it drops one is not certain here
        # (`$\<newline>'...'` is a $'...' string). Read as written, and never plain.
        parsed = _Scanner(text).run()
        parsed.complete = False
        return parsed
    return _Scanner(_without_continuations(text)).run()


def _without_continuations(text: str) -> str:
    """``text`` without its backslash-newlines (no single quotes in it: each backslash escapes the
    next character, in double quotes or not)."""
    out: list[str] = []
    j = 0
    while j < len(text):
        if text[j] == "\\":
            pair = text[j:j + 2]
            if pair != "\\\n":
                out.append(pair)
            j += 2
            continue
        out.append(text[j])
        j += 1
    return "".join(out)


class _Word:
    """A word being read: its text with quotes removed, and its key."""

    def __init__(self) -> None:
        self.value: list[str] = []
        self.key: list[str] = []

    def append(self, text: str, expands: bool = False) -> None:
        self.value.append(text)
        self.key.append(EXPANDS + text if expands else text)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.commands: list[SimpleCommand] = []
        self.current = SimpleCommand()
        self.tokens: list[str] = []
        self.nested: list[str] = []
        self.substitution = False
        self.expansion = False
        self.complete = True
        self.value: _Word | None = None  # the word being read (None: between words)
        self.raw: list[str] = []  # the same word as written
        self.redirect: str | None = None  # an operator waiting for its target word
        self.heredocs: list[tuple[str, bool, bool, SimpleCommand]] = []  # (delimiter, quoted, strip tabs, owner)

    def run(self) -> ParsedCommand:
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char in " \t":
                self._end_word()
                self.i += 1
            elif char == "\n":
                self._end_word()
                self._end_command("\n")
                self.i += 1
                self._read_heredocs()
            elif char == "#" and self.value is None:
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif char in "<>" or (char == "&" and text.startswith(">", self.i + 1)):
                self._redirection()
            elif char in ";&|()":
                self._end_word()
                op = next(o for o in _OPERATORS if text.startswith(o, self.i))
                self._end_command(op)
                self.i += len(op)
            else:
                self._word_part()
        self._end_word()
        self._end_command(None)
        if self.heredocs:
            self.complete = False  # a here-document with no body
        return ParsedCommand(self.commands, self.tokens, self.nested, self.substitution, self.complete, self.expansion)

    # ------------------------------------------------------------------ words

    def _start(self) -> tuple[_Word, list[str]]:
        if self.value is None:
            self.value, self.raw = _Word(), []
        return self.value, self.raw

    def _word_part(self) -> None:
        """One piece of a word at ``self.i``: a quoted string, an expansion, an escape or a character."""
        text, i = self.text, self.i
        char = text[i]
        if char == "\\" and text.startswith("\n", i + 1):  # a line continuation: nothing at all, not even a word
            self.i = i + 2
            return
        value, raw = self._start()
        if char == "\\":
            value.append(text[i + 1:i + 2] or "\\")  # a backslash ending the text stays
            end = min(i + 2, len(text))
        elif char == "'":
            close = text.find("'", i + 1)
            if close < 0:
                self.complete, close = False, len(text)
            value.append(text[i + 1:close])
            end = close + 1
        elif char == '"':
            end = self._double_quoted(i + 1, value)
        elif char == "$" and text.startswith("'", i + 1):
            end = self._ansi_c(i + 2, value)
        elif char == "$" and text.startswith('"', i + 1):
            end = self._double_quoted(i + 2, value)
        elif char == "$" and text.startswith("(", i + 1) or char in "<>" and text.startswith("(", i + 1):
            end = self._substitution(i + 1, "(", ")", value)
        elif char == "$" and text.startswith("{", i + 1):
            end = self._parameter(i + 1, value)
        elif char == "`":
            end = self._backticks(i, value)
        else:  # unquoted: a glob character, a `$`, a `~` starting the word are expanded by the shell
            if char == "$" and text.startswith("[", i + 1):  # $[...]: old arithmetic, evaluated
                self.expansion = True
            value.append(char, char in _GLOB or char == "$" or (char == "~" and not value.value))
            end = i + 1
        raw.append(text[i:end])
        self.i = end

    def _double_quoted(self, start: int, value: _Word) -> int:
        text, j = self.text, start
        while j < len(text):
            char = text[j]
            if char == '"':
                return j + 1
            if char == "\\" and j + 1 < len(text):
                escaped = text[j + 1]
                if escaped in '$`"\\':
                    value.append(escaped)
                elif escaped != "\n":
                    value.append("\\" + escaped)
                j += 2
            elif char == "$" and text.startswith("(", j + 1):
                j = self._substitution(j + 1, "(", ")", value)
            elif char == "$" and text.startswith("{", j + 1):
                j = self._parameter(j + 1, value)
            elif char == "`":
                j = self._backticks(j, value)
            else:
                value.append(char, char == "$")
                j += 1
        self.complete = False
        return j

    def _ansi_c(self, start: int, value: _Word) -> int:
        text, j = self.text, start
        while j < len(text):
            char = text[j]
            if char == "'":
                return j + 1
            if char == "\\" and j + 1 < len(text):
                j = _ansi_escape(text, j + 1, value)
            else:
                value.append(char)
                j += 1
        self.complete = False
        return j

    def _substitution(self, open_at: int, opening: str, closing: str, value: _Word) -> int:
        """``$(``/``<(``/``>(`` at ``open_at - 1``: a command runs there."""
        close = _matching(self.text, open_at, opening, closing)
        self.substitution = True
        if close < 0:
            self.complete = False
            close = len(self.text)
        body = self.text[open_at + 1:close]
        if body.startswith("(") and body.endswith(")"):  # $((arithmetic)): what it holds is read too
            body = body[1:-1]
        self.nested.append(body)
        value.append(self.text[open_at - 1:close + 1], True)
        return close + 1

    def _parameter(self, open_at: int, value: _Word) -> int:
        self.expansion = True
        close = _matching(self.text, open_at, "{", "}")
        if close < 0:
            self.complete = False
            close = len(self.text)
        body = self.text[open_at + 1:close]
        inner = _substitutions_in(body)
        if inner is not None or "@P" in body:  # ${x:-$(cmd)}; ${x@P} expands a prompt string, $(...) included
            self.substitution = True
            self.nested += inner or []
        value.append(self.text[open_at - 1:close + 1], True)
        return close + 1

    def _backticks(self, at: int, value: _Word) -> int:
        text, j = self.text, at + 1
        while j < len(text) and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        self.substitution = True
        if j >= len(text):
            self.complete = False
        body = text[at + 1:j]
        self.nested.append(re.sub(r"\\([`$\\])", r"\1", body))
        value.append(text[at:j + 1], True)
        return j + 1

    def _end_word(self) -> None:
        if self.value is None:
            return
        word, key, raw = "".join(self.value.value), "".join(self.value.key), "".join(self.raw)
        self.value = None
        self.tokens.append(raw)
        if self.redirect is None:
            self.current.words.append(word)
            self.current.keys.append(key)
            return
        op, self.redirect = self.redirect, None
        self.current.redirects.append((op, word))
        if op in ("<<", "<<-"):
            quoted = any(mark in raw for mark in "'\"\\")
            self.heredocs.append((word, quoted, op == "<<-", self.current))

    def _end_command(self, op: str | None) -> None:
        if self.redirect is not None:  # `echo >;`: bash refuses the line
            self.complete, self.redirect = False, None
        if self.current.words or self.current.redirects:
            self.commands.append(self.current)
            self.current = SimpleCommand()
        if op is not None:
            self.tokens.append(op)

    # ------------------------------------------------------------------ redirections, here-documents

    def _redirection(self) -> None:
        text, i = self.text, self.i
        if text[i] in "<>" and text.startswith("(", i + 1):  # <(cmd) / >(cmd): a word, not a redirection
            self._word_part()
            return
        prefix = ""
        if self.value is not None and self.raw and "".join(self.raw).isdigit():  # 2>file: the 2 is no word
            prefix, self.value = "".join(self.raw), None
        else:
            self._end_word()
        for op in ("&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">"):
            if text.startswith(op, i):
                break
        self.i = i + len(op)
        if self.redirect is not None:  # an operator right after another: bash refuses the line
            self.complete = False
        self.redirect = op
        self.tokens.append(prefix + op)

    def _read_heredocs(self) -> None:
        """The bodies of the here-documents opened on the line just ended, in order."""
        pending, self.heredocs = self.heredocs, []
        text = self.text
        for delimiter, quoted, strip_tabs, owner in pending:
            lines: list[str] = []
            while True:
                if self.i >= len(text):
                    self.complete = False  # bash reads to the end and warns: not a command to wave through
                    break
                end = text.find("\n", self.i)
                line = text[self.i:] if end < 0 else text[self.i:end]
                self.i = len(text) if end < 0 else end + 1
                compared = line.lstrip("\t") if strip_tabs else line
                if compared == delimiter:
                    break
                lines.append(compared)
            body = "\n".join(lines)
            owner.heredocs.append(body)
            self.tokens.append(body + "\n" + delimiter)
            if not quoted:
                inner = _substitutions_in(body, quoted_context=True)
                if inner is not None:
                    self.substitution = True
                    self.nested += inner


def _ansi_escape(text: str, j: int, value: _Word) -> int:
    """One escape of a ``$'...'`` string, ``text[j]`` being the character after the backslash."""
    char = text[j]
    if char in _ANSI_C:
        value.append(_ANSI_C[char])
        return j + 1
    for prefix, digits, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if char == prefix:
            found = re.match(r"[0-9a-fA-F]{1,%d}" % digits, text[j + 1:])
            if found:
                value.append(chr(min(int(found.group(), base), 0x10FFFF)))
                return j + 1 + found.end()
    octal = re.match(r"[0-7]{1,3}", text[j:])
    if octal:
        value.append(chr(int(octal.group(), 8) & 0xFF))
        return j + octal.end()
    if char == "c" and j + 1 < len(text):
        value.append(chr(ord(text[j + 1]) & 0x1F))
        return j + 2
    value.append("\\" + char)
    return j + 1


def _matching(text: str, open_at: int, opening: str, closing: str) -> int:
    """The index of the bracket closing the one at ``open_at`` (quotes and escapes skipped), or -1."""
    depth, j = 0, open_at
    while j < len(text):
        char = text[j]
        if char == "\\":
            j += 2
            continue
        if char == "'":
            close = text.find("'", j + 1)
            if close < 0:
                return -1
            j = close + 1
            continue
        if char == '"':
            j += 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            continue
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _substitutions_in(text: str, quoted_context: bool = False) -> list[str] | None:
    """The bodies of ``$(...)`` and backticks in ``text`` (as in a double-quoted string or an
    unquoted here-document), or None when there are none."""
    found: list[str] = []
    j = 0
    while j < len(text):
        char = text[j]
        if char == "\\":
            j += 2
            continue
        if char == "'" and not quoted_context:
            close = text.find("'", j + 1)
            j = len(text) if close < 0 else close + 1
            continue
        if char == "$" and text.startswith("(", j + 1):
            close = _matching(text, j + 1, "(", ")")
            close = len(text) if close < 0 else close
            found.append(text[j + 2:close])
            j = close + 1
            continue
        if char == "`":
            close = text.find("`", j + 1)
            close = len(text) if close < 0 else close
            found.append(text[j + 1:close])
            j = close + 1
            continue
        j += 1
    return found or None


def argv_command_line(argv: list[str]) -> str:
    """The command line an argv list runs: a shell wrapper's script as it is (``["bash", "-lc", "npm
    test"]`` runs ``npm test``), any other argv quoted into one line (the shell tools run it so)."""
    import shlex

    if len(argv) == 3 and os.path.basename(argv[0]) in ("bash", "sh", "zsh") and argv[1] in ("-c", "-lc"):
        return argv[2]
    return shlex.join(argv)


def program(word: str) -> str:
    """A command word's program name: its base name (``/usr/bin/rm`` is ``rm``)."""
    return os.path.basename(word) or word


def denial_views(parsed: ParsedCommand, depth: int = 0) -> list[list[str]]:
    """Every list of word keys a deny or ask rule is compared with (see the module docstring)."""
    views: list[list[str]] = []
    for command in parsed.commands:
        start = 0
        while start < len(command.words) and is_assignment(command.words[start]):
            start += 1
        if start == len(command.words):
            continue
        offsets = [start]
        if program(command.words[start]) in WRAPPERS:  # which later word is the wrapped program is not known
            offsets += range(start + 1, len(command.words))
        for offset in offsets:
            views.append(command.keys[offset:])
            if depth < _MAX_DEPTH:
                for script in _scripts_run_by(command.words[offset:], command):
                    views += denial_views(parse_command(script), depth + 1)
    if depth < _MAX_DEPTH:
        for body in parsed.nested:
            views += denial_views(parse_command(body), depth + 1)
    return views


def _scripts_run_by(words: list[str], command: SimpleCommand) -> list[str]:
    """The command text a shell (``-c SCRIPT``, a here-document) or ``eval`` is told to run."""
    name = program(words[0])
    if name == "eval":
        return [" ".join(words[1:])]
    if name not in SHELLS:
        return []
    scripts = list(command.heredocs)
    for k, word in enumerate(words[1:-1], start=1):
        if word.startswith("-") and not word.startswith("--") and "c" in word:
            scripts.append(words[k + 1])
            break
    return scripts


def scripts_of(parsed: ParsedCommand, depth: int = 0) -> list[str]:
    """The normalised text of the command and of every command nested in it (exact deny rules)."""
    found = [parsed.normalised]
    if depth >= _MAX_DEPTH:
        return found
    for body in parsed.nested:
        found += scripts_of(parse_command(body), depth + 1)
    for command in parsed.commands:
        if command.words:
            for script in _scripts_run_by(command.words, command):
                found += scripts_of(parse_command(script), depth + 1)
    return found


__all__ = ["ParsedCommand", "SimpleCommand", "EXPANDS", "parse_command", "argv_command_line", "denial_views",
           "scripts_of", "program", "is_assignment", "WRAPPERS", "SHELLS"]
