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

Beyond the words as written, the parser follows what it can see without running anything:

* ``NAME=value`` (and ``export NAME=value``) earlier in the line, and ``$NAME``/``${NAME}`` later;
* ``$(echo WORDS)``/``$(printf WORDS)`` and their backtick forms, replaced by their words; a program
  it still cannot name (``$CMD``, ``$(...)``) matches any rule by its flags and arguments alone
  (``$(which rm) -rf /`` is refused; ``$EDITOR notes.txt`` is not);
* ``cd DIR`` earlier in the line: relative arguments later are taken from there (``cd / && rm -rf *``);
* ``find``: its starting points are its arguments, its actions (``-delete``) its flags, and the
  commands of ``-exec``/``-execdir``/``-ok`` are checked with ``{}`` replaced by each starting point;
* pipes: ``echo WORDS | xargs CMD`` is checked as ``CMD WORDS``; ``echo TEXT | sh`` (also through
  ``base64 -d``) checks TEXT as a command line;
* ``python -c``, ``perl -e``, ``ruby -e``, ``node -e`` and the like: every string literal in the code
  is checked as a command line (``os.system("rm -rf /")``), and a rule finds ``rmtree("/")``.

Rule arguments are globs in which ``*`` does not cross a ``/`` when the rule's word has one:
``rm -r /*`` is any top-level directory (and ``/`` itself), never ``/tmp/build``.

This is a guardrail against accidents, not a sandbox. It does not see scripts, aliases, functions,
values read at run time (``$(cat cmd.txt)``, ``read``), or code an interpreter builds; a determined
caller gets past it. Run untrusted agents in a container instead.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import functools
import os
import re
import shlex
from dataclasses import dataclass
from typing import Sequence

__all__ = ["DEFAULT_DENY_PATTERNS", "find_denied", "simple_commands"]

#: The default rules (documented in docs/tools.md).
_DISKS = ("sd", "hd", "vd", "xvd", "nvme", "disk", "mmcblk", "md", "dm-", "mapper/")

DEFAULT_DENY_PATTERNS: tuple[str, ...] = (
    "rm -r /", "rm -r /*", "rm -r ~", "rm -r ~/[*]", "rm --no-preserve-root",
    "find /* -delete", "find ~ -delete", "find ~/[*] -delete",
    "mkfs*", "mke2fs", "wipefs", "blkdiscard", "sgdisk -Z", "sgdisk --zap-all", "mkswap /dev/*",
    "shred /dev/*", "parted /dev/* mklabel", "parted /dev/* rm",
    *(f"dd of=/dev/{disk}*" for disk in _DISKS), *(f"> /dev/{disk}*" for disk in _DISKS),
    "> /dev/mem", "> /dev/kmem", "> /dev/port", "tee /dev/sd*", "tee /dev/nvme*",
    "> /etc/passwd", "> /etc/shadow", "> /etc/sudoers", "> /etc/group", "mv * /dev/null",
    r"re:(?P<f>[\w:.]+)\(\)\{(?P=f)\|(?P=f)&\};(?P=f)",
    r"re:rmtree\(r?(\"|')(/|~|/\*|~/)(\"|')|rmtree\(os\.path\.expanduser\(.~.\)|rmtree\(Path\.home\(\)\)",
    "chmod -R * /*", "chown -R * /*", "chgrp -R * /*",
    "shutdown", "reboot", "poweroff", "halt", "init 0", "init 6", "telinit 0", "telinit 6",
    "systemctl poweroff", "systemctl reboot", "systemctl halt", "systemctl kexec",
    "kill -- -1", "kill -- 1", "killall5", "crontab -r",
    "git push -f", "git push --force-with-lease", "git push +*", "git push --mirror", "git push --delete",
    "git push -d", "git push :*",
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
    "time": (frozenset({"-f", "-o"}), 0), "pkexec": (frozenset({"--user"}), 0), "busybox": (frozenset(), 0),
    "unbuffer": (frozenset(), 0), "flock": (frozenset({"-w", "-E"}), 1), "runuser": (frozenset({"-u", "-g"}), 0),
}
#: programs whose options are whole words (``-delete``), never groups of letters
_WHOLE_FLAGS = frozenset({"find"})
#: programs whose relative path arguments are resolved against a ``cd`` seen earlier in the line
_PATH_PROGRAMS = frozenset({"rm", "find", "chmod", "chown", "chgrp", "shred", "mv"})
#: interpreters whose inline code (``-c``, ``-e``) is searched for command lines in string literals
_INTERPRETERS = frozenset({"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "deno", "bun"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_STRING_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|`([^`]*)`")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
#: the program of a simple command that is computed at run time (``$CMD``, ``$(...)``)
UNKNOWN = "?"
_PLACEHOLDER = "__phi_substitution__"
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
    if program == "kill":
        return _kill_flags(words)
    for word in words:
        if options_done or not word.startswith("-") or word == "-":
            args.append(_normalise_arg(word))
        elif word == "--":
            options_done = True
        else:
            word = aliases.get(word.split("=", 1)[0], word.split("=", 1)[0])
            if word.startswith("--") or program in _WHOLE_FLAGS:
                flags.add(word)
            else:
                flags.update("-" + aliases.get(letter, letter) for letter in word[1:])
    return frozenset(flags), tuple(args)


def _kill_flags(words: Sequence[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """kill: the first option is the signal (``-9``, ``-KILL``, ``-s KILL``); every word after it is
    a pid or job, ``-1`` included."""
    aliases = _FLAG_ALIASES["kill"]
    flags: set[str] = set()
    args: list[str] = []
    i = 0
    if i < len(words) and words[i] in ("-s", "-n") and i + 1 < len(words):
        flags.add("-" + words[i + 1].upper().removeprefix("SIG"))
        i += 2
    elif i < len(words) and words[i].startswith("-") and words[i] != "--" and len(words) > 1:
        flags.add(aliases.get(words[i], words[i]))
        i += 1
    elif len(words) == 1 and words[0].startswith("-") and words[0] != "--":
        return frozenset({words[0]}), ()  # "kill -1": a signal without a pid
    args = [w for w in words[i:] if w != "--"]
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


def _static_output(inner: str) -> str | None:
    """What ``$(inner)`` prints when it is a plain ``echo``/``printf`` of words, else None."""
    try:
        words = shlex.split(inner)
    except ValueError:
        return None
    if not words or os.path.basename(words[0]) not in ("echo", "printf"):
        return None
    if any(c in inner for c in "$`;|&<>"):
        return None
    return " ".join(w for w in words[1:] if w not in ("-n", "-e", "-E"))


def _substitutions(command: str) -> tuple[str, list[str]]:
    """``command`` with each ``$(...)``/backtick substitution replaced — by the words it prints when
    that is static (``$(echo rm)``), else by a placeholder — and the substituted command lines."""
    out: list[str] = []
    inners: list[str] = []
    i, quote = 0, ""
    while i < len(command):
        ch = command[i]
        if quote != "'" and (command.startswith("$(", i) or ch == "`"):
            end = _closing(command, i)
            inner = command[i + 2:end] if ch == "$" else command[i + 1:end]
            inners.append(inner)
            value = _static_output(inner)
            out.append(value if value is not None else _PLACEHOLDER)
            i = end + 1
            continue
        if ch in "'\"" and quote in ("", ch):
            quote = "" if quote else ch
        elif ch == "\\" and quote != "'":
            out.append(command[i:i + 2])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out), inners


def _closing(command: str, start: int) -> int:
    """Index of the character closing the substitution that starts at ``start`` (or the end)."""
    if command[start] == "`":
        end = command.find("`", start + 1)
        return end if end >= 0 else len(command)
    depth, i = 0, start + 1
    while i < len(command):
        depth += {"(": 1, ")": -1}.get(command[i], 0)
        if depth == 0:
            return i
        i += 1
    return len(command)


@dataclass
class _Line:
    """What one command line has shown so far: its variables, its ``cd``, the static text piped on."""

    variables: dict[str, str]
    cwd: str | None = None
    piped: str | None = None  # the text the previous command of a pipeline prints, when static

    def expand(self, word: str) -> str:
        return _VARIABLE.sub(lambda m: self.variables.get(m.group(1) or m.group(2), m.group(0)), word)

    def assign(self, words: Sequence[str]) -> bool:
        """Record ``NAME=value`` / ``export NAME=value`` words; whether the command was only that."""
        body = words[1:] if words[:1] in (["export"], ["declare"], ["local"], ["readonly"]) else words
        if not body or not all(_ASSIGNMENT.fullmatch(w) for w in body):
            return False
        for word in body:
            name, value = word.split("=", 1)
            self.variables[name] = value
        return True


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def _split(tokens: list[str]) -> list[tuple[list[str], list[str], str]]:
    """Simple commands as (words, redirection targets, the separator before them)."""
    segments: list[tuple[list[str], list[str], str]] = [([], [], "")]
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token and all(c in _PUNCTUATION for c in token):
            if any(c in "();`\n" for c in token) or not any(c in "<>" for c in token):
                segments.append(([], [], token))
            elif i + 1 < len(tokens):
                segments[-1][1].append(_normalise_arg(tokens[i + 1]))
                i += 1
        else:
            segments[-1][0].append(token)
        i += 1
    return segments


def simple_commands(command: str, depth: int = 0) -> list[SimpleCommand]:
    """Every simple command in ``command``, nested ones included (see the module docstring)."""
    rewritten, nested = _substitutions(_without_heredocs(command))
    line = _Line({})
    out: list[SimpleCommand] = []
    for raw_words, targets, separator in _split(_tokens(rewritten)):
        piped = line.piped if separator == "|" else None
        line.piped = None
        words = [line.expand(w) for w in raw_words]
        if line.assign(words):
            continue
        via_xargs = any(os.path.basename(w) == "xargs" for w in words[:3])
        words = _strip_prefixes(words)
        if targets and not words:
            out.append(SimpleCommand("", frozenset(), (), tuple(targets)))
        if not words:
            continue
        found, inner = _command(words, targets, line, piped, via_xargs)
        out += found
        nested += inner
    if depth < _MAX_DEPTH:
        for text in nested:
            out += simple_commands(text, depth + 1)
    return out


def _command(words: list[str], targets: list[str], line: _Line, piped: str | None,
             via_xargs: bool) -> tuple[list[SimpleCommand], list[str]]:
    """One simple command (and what it reveals about the line), plus the command lines nested in it."""
    first = words[0]
    unknown = first.startswith("$") or _PLACEHOLDER in first
    program = UNKNOWN if unknown else os.path.basename(first).lower()
    if via_xargs and piped:
        words = words + piped.split()
    if program == "cd":
        line.cwd = _normalise_arg(words[1] if len(words) > 1 else "~") if not words[1:2] or \
            words[1].startswith(("/", "~")) else (_normalise_arg(f"{line.cwd}/{words[1]}") if line.cwd else None)
        return [], []
    rest = words[1:]
    if line.cwd and program in _PATH_PROGRAMS:
        rest = [w if w.startswith(("/", "~", "-", "$")) else _normalise_arg(f"{line.cwd}/{w}") for w in rest]
    nested: list[str] = []
    if program == "find":
        flags, args, nested = _find(rest)
    else:
        flags, args = _flags(program, rest)
    found = [SimpleCommand(program, flags, args, tuple(targets))]
    line.piped = _prints(program, flags, args, piped)
    shell_code = any(f.startswith("-") and "c" in f and not f.startswith("--") for f in flags)
    if program in _SHELLS and shell_code:
        nested += args[:1]
    elif program in _SHELLS and piped:
        nested.append(piped)  # echo '...' | sh
    elif program == "eval":
        nested.append(" ".join(rest))
    elif program.rstrip("0123456789.") in _INTERPRETERS and args:
        nested += [a or b or c for a, b, c in _STRING_LITERAL.findall(" ".join(args))]
    return found, nested


def _prints(program: str, flags: frozenset[str], args: tuple[str, ...], piped: str | None) -> str | None:
    """What a command prints, when the parser can tell: echo/printf, cat or base64 -d of piped text."""
    if program in ("echo", "printf"):
        return " ".join(args)
    if program == "cat" and not args:
        return piped
    if program == "base64" and piped is not None and ("-d" in flags or "--decode" in flags):
        try:
            return base64.b64decode(piped.strip(), validate=False).decode("utf-8", errors="replace")
        except (ValueError, binascii.Error):
            return None
    return None


def _find(words: Sequence[str]) -> tuple[frozenset[str], tuple[str, ...], list[str]]:
    """find's starting points (its arguments), its tests and actions (flags, whole words), and the
    commands of its -exec actions with ``{}`` replaced by each starting point."""
    starts: list[str] = []
    i = 0
    while i < len(words) and not words[i].startswith(("-", "!")):
        starts.append(_normalise_arg(words[i]))
        i += 1
    starts = starts or ["."]
    flags = {w for w in words[i:] if w.startswith("-")}
    nested: list[str] = []
    for j, word in enumerate(words):
        if word in _FIND_EXEC:
            action = list(words[j + 1:])
            action = action[:action.index("+")] if "+" in action else action
            nested += [shlex.join([start if w == "{}" else w for w in action]) for start in starts]
    return frozenset(flags), tuple(starts), nested


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
            return any(_glob(t, self.redirect) for c in commands for t in c.redirects)
        return any(self._matches(c) for c in commands)

    def _matches(self, command: SimpleCommand) -> bool:
        if self.program is None:
            return False
        if command.program == UNKNOWN:  # a program computed at run time: judged by its flags and arguments
            if not (self.flags or self.args):
                return False
        elif not fnmatch.fnmatchcase(command.program, self.program):
            return False
        return self.flags <= command.flags and all(any(_glob(a, p) for a in command.args) for p in self.args)


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A rule word as a regular expression: ``*`` and ``?`` stay within one path component when the
    word names a path (has a ``/``), ``[...]`` as in fnmatch."""
    if "/" not in pattern:
        return re.compile(fnmatch.translate(pattern))
    pieces: list[str] = []
    for piece in re.split(r"(\[[^\]]*\]|\*|\?)", pattern):
        if piece == "*":
            pieces.append("[^/]*")
        elif piece == "?":
            pieces.append("[^/]")
        elif piece.startswith("[") and piece.endswith("]") and len(piece) > 2:
            pieces.append("[" + piece[1:-1].replace("!", "^", 1) + "]" if piece[1] == "!" else piece)
        else:
            pieces.append(re.escape(piece))
    return re.compile("".join(pieces) + r"\Z")


def _glob(text: str, pattern: str) -> bool:
    return _glob_regex(pattern).match(text) is not None


@functools.lru_cache(maxsize=64)
def _compile(patterns: tuple[str, ...]) -> tuple[_Rule, ...]:
    rules: list[_Rule] = []
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
