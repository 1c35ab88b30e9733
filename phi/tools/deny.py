"""The shell tools' deny list (SPEC §9.3 "bash deny patterns"): rules over parsed command words.

A command is split the way a shell would split it (:mod:`shlex`, quotes removed) into simple
commands at ``;``, ``&&``, ``||``, ``|``, ``&``, newlines, parentheses and backticks; the strings
inside ``$(...)``, backticks, ``bash -c``/``sh -c``/``su -c`` and ``eval`` are checked the same way,
and here-document bodies are skipped. In each simple command, leading ``NAME=value`` assignments,
shell keywords (``if``, ``do``, ``{``, ``!``, ...) and wrappers (``sudo``, ``env``, ``nohup``,
``nice``, ``timeout``, ``xargs``, ``exec``, ``command``, ...) with their options are skipped; what
remains is the program (compared by base name, case-insensitively), its flags and its arguments.

A rule is written like a command: ``rm -r -f /``. It matches a simple command when the program
matches the rule's first word (a glob: ``mkfs*``), every flag of the rule is present (``-rf``,
``-r -f``, ``-fr``, ``--recursive --force`` and, for ``rm``, ``-R`` are all the same flags), and
every other word of the rule matches (as a glob; ``[*]`` for a literal star) some argument.
Arguments are normalised first: ``"/"``, ``//`` and ``/.`` are ``/``; ``$HOME``, ``${HOME}`` and
``~/`` are ``~``. A rule starting with ``>`` matches a redirection target (``> /dev/sd*``); a
rule starting with ``re:`` is a regular expression searched in the command with all whitespace
removed (used for fork bombs).

This is a guardrail against accidents, not a sandbox. It does not see through variables
(``$CMD``), ``find -exec``, scripts, aliases, other interpreters (``python -c``) or anything built
at run time; a determined caller gets past it. Run untrusted agents in a container instead.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
from dataclasses import dataclass
from typing import Sequence

__all__ = ["DEFAULT_DENY_PATTERNS", "find_denied", "simple_commands"]

#: The default rules (documented in docs/tools.md).
DEFAULT_DENY_PATTERNS: tuple[str, ...] = (
    "rm -r /", "rm -r /[*]", "rm -r ~", "rm -r ~/[*]", "rm --no-preserve-root",
    "mkfs*", "wipefs", "dd of=/dev/sd*", "dd of=/dev/hd*", "dd of=/dev/nvme*", "dd of=/dev/disk*",
    "dd of=/dev/mmcblk*", "> /dev/sd*", "> /dev/hd*", "> /dev/nvme*", "> /dev/disk*", "> /dev/mmcblk*",
    r"re:(?P<f>[\w:.]+)\(\)\{(?P=f)\|(?P=f)&\};(?P=f)",
    "chmod -R 777 /", "chmod -R 000 /", "chown -R * /",
    "shutdown", "reboot", "poweroff", "halt", "init 0", "init 6", "telinit 0", "telinit 6",
    "systemctl poweroff", "systemctl reboot", "systemctl halt", "kill -9 -1", "kill -KILL -1", "killall5",
    "git push -f", "git push --force-with-lease", "git push +*",
)

_PUNCTUATION = "();<>|&`\n"
_MAX_DEPTH = 4
_KEYWORDS = frozenset({"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "coproc"})
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "fish", "su"})
#: wrapper -> its options that take a value, and how many positional words precede the command
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0), "env": (frozenset({"-u", "-C", "-S"}), 0),
    "nice": (frozenset({"-n"}), 0), "ionice": (frozenset({"-c", "-n", "-p"}), 0), "nohup": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0), "exec": (frozenset({"-a"}), 0), "command": (frozenset(), 0),
    "builtin": (frozenset(), 0), "setsid": (frozenset(), 0), "watch": (frozenset({"-n", "-d"}), 0),
    "xargs": (frozenset({"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1), "chroot": (frozenset(), 1),
    "time": (frozenset({"-f", "-o"}), 0),
}
#: per program: whole-token aliases, then per-letter aliases, so equivalent spellings compare equal
_FLAG_ALIASES: dict[str, dict[str, str]] = {
    "rm": {"--recursive": "-r", "--force": "-f", "R": "r"},
    "chmod": {"--recursive": "-R"}, "chown": {"--recursive": "-R"}, "chgrp": {"--recursive": "-R"},
    "git": {"--force": "-f"}, "kill": {"-SIGKILL": "-KILL"},
}
_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*(['\"]?)([^\s'\"<>;|&()]+)\1")


@dataclass(frozen=True)
class SimpleCommand:
    program: str
    flags: frozenset[str]
    args: tuple[str, ...]
    redirects: tuple[str, ...]


def _normalise_arg(arg: str) -> str:
    arg = re.sub(r"^(\$HOME|\$\{HOME\})(?=/|$)", "~", arg)
    if arg.startswith(("/", "~")):
        arg = re.sub(r"/+", "/", arg)
        arg = re.sub(r"(?<=.)/\.?$", "", re.sub(r"/\.(?=/)", "", arg)) or "/"
        if arg.startswith("/"):
            arg = os.path.normpath(arg)
    return arg


def _flags(program: str, words: Sequence[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    aliases = _FLAG_ALIASES.get(program, {})
    flags: set[str] = set()
    args: list[str] = []
    options_done = False
    for word in words:
        if options_done or not word.startswith("-") or word == "-":
            args.append(_normalise_arg(word))
        elif word == "--":
            options_done = True
        else:
            word = aliases.get(word.split("=", 1)[0], word.split("=", 1)[0])
            if word.startswith("--") or program == "kill":
                flags.add(word)
            else:
                flags.update("-" + aliases.get(letter, letter) for letter in word[1:])
    return frozenset(flags), tuple(args)


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop assignments, keywords and wrappers (with their options) in front of the program."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in _KEYWORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
            i += 1
            continue
        wrapper = _WRAPPERS.get(os.path.basename(word))
        if wrapper is None or (word == "command" and words[i + 1:i + 2] in (["-v"], ["-V"])):
            break  # "command -v NAME" only looks NAME up
        takes_value, positional = wrapper
        i += 1
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            i += 2 if words[i] in takes_value else 1
        while i < len(words) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[i]):
            i += 1  # env NAME=value
        i += positional
    return words[i:]


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # a quoted '#' looks the same after lexing; reading too much is the safe side
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: bash would not run it either; still look at the words
        return command.replace("\n", " ; ").split()


def _without_heredocs(command: str) -> str:
    out: list[str] = []
    delimiter: str | None = None
    for line in command.split("\n"):
        if delimiter is not None:
            if line.strip("\t") == delimiter:
                delimiter = None
            continue
        out.append(line)
        found = _HEREDOC.search(line)
        delimiter = found.group(2) if found else None
    return "\n".join(out)


def _nested(word: str) -> list[str]:
    """Command strings inside ``$(...)`` and backticks within one word."""
    found = re.findall(r"`([^`]*)`", word)
    start = word.find("$(")
    while start >= 0:
        depth, i = 0, start + 1
        while i < len(word):
            depth += {"(": 1, ")": -1}.get(word[i], 0)
            if depth == 0:
                break
            i += 1
        found.append(word[start + 2:i])
        start = word.find("$(", i)
    return found


def simple_commands(command: str, depth: int = 0) -> list[SimpleCommand]:
    """Every simple command in ``command``, nested ones included (see the module docstring)."""
    segments: list[list[str]] = [[]]
    redirects: list[list[str]] = [[]]
    tokens = _tokens(_without_heredocs(command))
    nested: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token and all(c in _PUNCTUATION for c in token):
            if any(c in "();`\n" for c in token) or not any(c in "<>" for c in token):
                segments.append([])
                redirects.append([])
            elif i + 1 < len(tokens):
                redirects[-1].append(_normalise_arg(tokens[i + 1]))
                i += 1
        else:
            segments[-1].append(token)
            if "$(" in token or "`" in token:
                nested += _nested(token)
        i += 1
    out: list[SimpleCommand] = []
    for words, targets in zip(segments, redirects):
        words = _strip_prefixes(words)
        if targets and not words:
            out.append(SimpleCommand("", frozenset(), (), tuple(targets)))
        if not words:
            continue
        program = os.path.basename(words[0]).lower()
        flags, args = _flags(program, words[1:])
        out.append(SimpleCommand(program, flags, args, tuple(targets)))
        if program in _SHELLS and any(f.startswith("-") and "c" in f and not f.startswith("--") for f in flags):
            nested += args[:1]
        elif program == "eval":
            nested.append(" ".join(args))
    if depth < _MAX_DEPTH:
        for inner in nested:
            out += simple_commands(inner, depth + 1)
    return out


@dataclass(frozen=True)
class _Rule:
    text: str
    program: str | None = None
    flags: frozenset[str] = frozenset()
    args: tuple[str, ...] = ()
    redirect: str | None = None
    regex: "re.Pattern[str] | None" = None

    def matches(self, commands: Sequence[SimpleCommand], squeezed: str) -> bool:
        if self.regex is not None:
            return self.regex.search(squeezed) is not None
        if self.redirect is not None:
            return any(fnmatch.fnmatchcase(t, self.redirect) for c in commands for t in c.redirects)
        return any(self._matches(c) for c in commands)

    def _matches(self, command: SimpleCommand) -> bool:
        return (self.program is not None and fnmatch.fnmatchcase(command.program, self.program)
                and self.flags <= command.flags
                and all(any(fnmatch.fnmatchcase(a, p) for a in command.args) for p in self.args))


@functools.lru_cache(maxsize=64)
def _compile(patterns: tuple[str, ...]) -> tuple[_Rule, ...]:
    rules = []
    for text in patterns:
        stripped = text.strip()
        if stripped.startswith("re:"):
            rules.append(_Rule(text, regex=re.compile(stripped[3:])))
        elif stripped.startswith(">"):
            rules.append(_Rule(text, redirect=_normalise_arg(stripped.lstrip(">").strip())))
        elif stripped:
            words = shlex.split(stripped)
            program = os.path.basename(words[0]).lower()
            flags, args = _flags(program, words[1:])
            rules.append(_Rule(text, program, flags, args))
    return tuple(rules)


def find_denied(command: str, patterns: Sequence[str]) -> str | None:
    """The first rule of ``patterns`` that ``command`` matches, or None."""
    rules = _compile(tuple(patterns))
    commands = simple_commands(command)
    squeezed = re.sub(r"\s+", "", command)
    for rule in rules:
        if rule.matches(commands, squeezed):
            return rule.text
    return None
