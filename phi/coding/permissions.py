"""Permission rules: allow, ask or deny tool calls by tool and argument pattern (SPEC §14 CODE-8;
issue 34 item 4).

A rule is an effect and a tool, with an optional pattern, written ``TOOL`` or ``TOOL "PATTERN"``
(``TOOL(PATTERN)`` is the same rule, handier inside JSON):

* ``read_file`` — every call of the tool. The tool may be a glob: ``github__*``.
* For a call with a ``command`` argument (``shell``; phi-core's ``bash``) the pattern is a command.
  ``npm test *`` is a prefix: those words, then any arguments or none (``npm test``, ``npm test
  --watch``; not ``npm testing``). ``git status`` is that command exactly. Anything else — several
  commands, a redirection — is that command line exactly. Spacing does not matter; quoting is read
  as bash reads it. An argv list is read as the line it runs (``["bash", "-lc", "npm test"]`` is
  ``npm test``).
* For any other call the pattern is a path glob over the paths the call names (``file_path``,
  ``path``, ``dir_path``, a list of ``paths``, every file of an ``apply_patch``; ``grep``, ``glob``
  and ``list_dir`` without a path name the working directory). ``*`` and ``?`` stay within one
  path segment, ``**`` crosses directories (``src/**`` is ``src`` and everything under it), a
  relative glob is rooted at the workspace (``.env`` is the workspace's own, ``**/.env`` any), ``~``
  is the home directory. Paths are made absolute and normalised before matching (``src/../.env``
  is ``.env``) and, when a symlink is on the way, compared resolved as well.

Precedence (:meth:`PermissionRules.evaluate`): a matching **deny** rule wins, then **ask**, then
**allow**, wherever each rule comes from; when none matches, the approval mode decides. Deny and
ask rules match when any part matches: any simple command of the line, also inside ``$(...)``,
``sh -c``, ``eval`` and behind wrappers such as ``sudo`` or ``timeout`` (:mod:`phi.coding.shell_words`),
or any path of the call. Allow rules must cover the whole call: every simple command of the line
(each by some allow rule), every path. A prefix rule never allows a line holding a command or
process substitution, a redirection writing a file, or text bash could not finish reading — such a
line is allowed only by a rule naming it exactly. Deny rules are a guardrail over what the command
says, not a sandbox.

Rules come from settings files (:mod:`phi.coding.permission_settings`: the project's
``.phi/settings.json`` and the user's ``$PHI_HOME/settings.json``), from code, and from "always"
answers. Which paths a call names and how globs match them: :mod:`phi.coding.path_globs`; how a
command line is read: :mod:`phi.coding.shell_words`.

:class:`PermissionPolicy` applies rules in front of another policy, for ``SessionConfig.approval``;
:func:`suggest_rule` is the rule an "always" answer adds.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from ..errors import ConfigError
from ..json_values import is_array
from ..log import get_logger
from .approval import ApprovalAnswer, ApprovalDecision, ApprovalPolicy, ApprovalRequest
from .path_globs import call_paths, glob_matches, path_forms
from .shell_words import (
    WRAPPERS,
    ParsedCommand,
    argv_command_line,
    denial_views,
    is_assignment,
    parse_command,
    program,
    scripts_of,
)

log = get_logger(__name__)

#: the effects, strongest first: a deny rule beats an ask rule beats an allow rule
EFFECTS = ("deny", "ask", "allow")
#: tools whose patterns are commands when a rule is written (calls are told apart by their arguments)
COMMAND_TOOLS = frozenset({"shell", "bash"})
#: programs that run code or have subcommands: "always" trusts them with a plain subcommand word
#: (``npm test *``, ``python manage.py *``) or as the exact command, never as ``npm *``
NEEDS_SUBCOMMAND = frozenset({
    "python", "python3", "python2", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua",
    "java", "Rscript", "osascript", "git", "npm", "npx", "pnpm", "yarn", "pip", "pip3", "uv", "poetry", "cargo",
    "go", "make", "docker", "podman", "kubectl", "gh", "brew", "apt", "apt-get", "dnf", "yum", "systemctl",
})
#: programs "always" trusts only as the exact command: a prefix would trust any command (a shell, a
#: wrapper) or any target (deleting, overwriting, changing owners and modes, signals)
EXACT_ONLY = WRAPPERS | frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "rm", "rmdir", "dd", "shred", "truncate", "unlink",
    "mkfs", "chmod", "chown", "chgrp", "mv", "cp", "ln", "install", "rsync", "kill", "pkill", "killall", "curl",
    "wget", "scp", "sftp", "crontab", "tee", "sed", "awk", "perl", "source", ".",
    # builtins and programs whose options evaluate code or run commands (test -v 'a[$(cmd)]',
    # printf -v, tar --checkpoint-action=exec=, zip -TT, vim -c '!cmd', ssh host cmd)
    "test", "[", "[[", "printf", "read", "let", "declare", "typeset", "local", "export", "readonly", "mapfile",
    "readarray", "unset", "trap", "alias", "tar", "zip", "unzip", "vim", "vi", "nvim", "view", "ex", "emacs",
    "nano", "less", "more", "man", "ssh", "nc", "ncat", "socat", "screen", "tmux", "watch", "gawk", "mawk",
    "nawk", "busybox", "ash", "mksh", "yash", "posh", "git-shell", "expect", "script", "gdb", "strace",
    "make", "gmake", "cmake", "ninja", "npx", "bunx", "pnpx",
})
#: subcommands "always" may turn into a prefix rule for these programs; any other is trusted only as
#: the exact command (``git fetch --upload-pack=CMD``, ``git rebase --exec``, ``npm exec -c``,
#: ``git log --output=FILE`` run or write whatever their options say)
PREFIX_SUBCOMMANDS = {
    "git": frozenset({"status", "branch", "blame", "shortlog", "describe", "rev-parse", "ls-files", "whatchanged"}),
    "npm": frozenset({"test", "run", "start", "ls", "outdated", "view", "ci", "install"}),
    "pnpm": frozenset({"test", "run", "start", "ls", "outdated", "install"}),
    "yarn": frozenset({"test", "run", "start", "list", "outdated", "install"}),
    "cargo": frozenset({"build", "test", "check", "clippy", "fmt", "doc", "tree"}),
    "go": frozenset({"build", "test", "vet", "fmt", "list", "mod"}),
}
#: versioned interpreters (python3.11, ruby3.2, node18): code runners like those of NEEDS_SUBCOMMAND
_VERSIONED_RUNNER = re.compile(r"(?:python|pypy|ruby|perl|node|php|lua|pip)[0-9][0-9.]*")
#: tool names of other agents' rules (Claude Code's) and phi's tool for each
_OTHER_AGENTS_NAMES = {"Bash": "shell", "Read": "read_file", "Write": "write_file", "Edit": "edit_file",
                       "MultiEdit": "edit_file", "Glob": "glob", "Grep": "grep", "LS": "list_dir",
                       "WebFetch": "(none)", "WebSearch": "(none)", "NotebookEdit": "(none)"}
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.:*-]+")
_PLAIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+@=-]*")


class PermissionRuleError(ConfigError):
    """A permission rule, or a settings file holding rules, that phi cannot read. ``path`` is the
    file (None for a rule given in code) and ``entry`` where in it (``permissions.deny[2]``)."""

    def __init__(self, message: str, path: str | None = None, entry: str | None = None) -> None:
        where = ": ".join(part for part in (path, entry) if part)
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.entry = entry


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class PermissionRule:
    """``effect`` (``allow`` | ``ask`` | ``deny``) for calls of ``tool`` whose arguments match
    ``pattern`` (None: every call); ``source`` says where the rule comes from (``session``,
    ``project file PATH``, ...). A pattern phi cannot read raises :class:`PermissionRuleError`."""

    effect: str
    tool: str
    pattern: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.effect not in EFFECTS:
            raise PermissionRuleError(f"the effect must be one of allow, ask, deny, not {self.effect!r}")
        if not _TOOL_NAME.fullmatch(self.tool):
            raise PermissionRuleError(f"{self.tool!r} is not a tool name (letters, digits, _ . : - and * only)")
        if self.pattern is not None:
            if not self.pattern.strip():
                raise PermissionRuleError(f"the pattern of {self.tool} is empty; for every call write the tool "
                                          "alone")
            if "\0" in self.pattern:
                raise PermissionRuleError("a pattern cannot hold a NUL character")
            if self.tool in COMMAND_TOOLS:
                command_pattern(self.pattern)  # raises for a command pattern phi cannot read

    @classmethod
    def parse(cls, effect: str, text: str, source: str = "") -> PermissionRule:
        """The rule ``text`` says (``shell "npm test *"``, ``shell(npm test *)``, ``read_file``)."""
        tool, pattern = parse_rule_text(text)
        return cls(effect, tool, pattern, source)

    @property
    def text(self) -> str:
        """The rule as written: ``shell "npm test *"``."""
        if self.pattern is None:
            return self.tool
        quoted = self.pattern.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'{self.tool} "{quoted}"'

    def __str__(self) -> str:
        return f"{self.effect}: {self.text}"

    def covers_tool(self, name: str) -> bool:
        """Whether the rule is about tool ``name`` (its tool, or a glob such as ``github__*``, names it)."""
        return self.tool == name or ("*" in self.tool and re.fullmatch(
            ".*".join(re.escape(part) for part in self.tool.split("*")), name) is not None)


def parse_rule_text(text: str) -> tuple[str, str | None]:
    """``(tool, pattern)`` of a rule's text; :class:`PermissionRuleError` saying what is wrong."""
    stripped = text.strip()
    tool = re.match(r"[^\s(\"]*", stripped)
    name = tool.group() if tool else ""
    rest = stripped[len(name):].strip()
    if not name:
        raise PermissionRuleError(f"{text!r} does not start with a tool name (e.g. shell \"npm test *\")")
    if name in _OTHER_AGENTS_NAMES:  # a rule copied from another agent's settings would match nothing
        raise PermissionRuleError(f"{text!r}: phi has no tool {name!r}; phi's is {_OTHER_AGENTS_NAMES[name]!r}")
    if not rest:
        return name, None
    if rest.startswith("("):
        if not rest.endswith(")"):
            raise PermissionRuleError(f"{text!r}: the pattern's closing ) is missing")
        return name, rest[1:-1]
    if not rest.startswith('"'):
        raise PermissionRuleError(f"{text!r}: the pattern must be in double quotes (shell \"npm test *\") "
                                  "or parentheses (shell(npm test *))")
    pattern: list[str] = []
    j = 1
    while j < len(rest):
        char = rest[j]
        if char == "\\" and j + 1 < len(rest):
            pattern.append({"n": "\n", "t": "\t"}.get(rest[j + 1], rest[j + 1]))
            j += 2
            continue
        if char == '"':
            if rest[j + 1:].strip():
                raise PermissionRuleError(f"{text!r}: text after the pattern's closing quote")
            return name, "".join(pattern)
        pattern.append(char)
        j += 1
    raise PermissionRuleError(f"{text!r}: the pattern's closing quote is missing")


@dataclass(frozen=True)
class CommandPattern:
    """A command pattern read: ``prefix`` (words, then anything), ``words`` (exactly these words) or
    ``exact`` (exactly this command line, compared by :attr:`normalised`). ``words`` are keys
    (:data:`~phi.coding.shell_words.EXPANDS`): a quoted ``'*'`` is not an unquoted ``*``."""

    kind: str
    words: tuple[str, ...]
    normalised: str


@functools.lru_cache(maxsize=512)
def command_pattern(pattern: str) -> CommandPattern:
    """``pattern`` read as a command pattern (see the module docstring)."""
    parsed = parse_command(pattern)
    if not parsed.complete:
        raise PermissionRuleError(f"{pattern!r} is not a whole command (an open quote or bracket?)")
    single = len(parsed.commands) == 1 and parsed.plain and len(parsed.tokens) == len(parsed.commands[0].words)
    words = tuple(parsed.commands[0].keys) if parsed.commands else ()
    stars = [k for k, token in enumerate(parsed.tokens) if token == "*"]
    if stars and stars != [len(parsed.tokens) - 1]:
        raise PermissionRuleError(f"{pattern!r}: * stands for the remaining arguments and must come last "
                                  "(npm test *)")
    if stars:
        if not single:
            raise PermissionRuleError(f"{pattern!r}: a pattern ending in * must be one command without "
                                      "redirections or substitutions (npm test *)")
        if len(words) < 2:
            raise PermissionRuleError(f"{pattern!r}: name the command before the * (for every command write "
                                      "the tool alone)")
        return CommandPattern("prefix", words[:-1], parse_command(" ".join(parsed.tokens[:-1])).normalised)
    if not parsed.tokens:
        raise PermissionRuleError(f"{pattern!r} holds no command")
    return CommandPattern("words" if single else "exact", words if single else (), parsed.normalised)


def _same_words(words: Sequence[str], pattern: CommandPattern, by_name: bool) -> bool:
    """Whether ``words`` are matched by a prefix or words pattern. ``by_name``: the program is
    compared by its base name (deny and ask: ``/bin/rm`` is ``rm``; allow: as written)."""
    wanted = pattern.words
    if len(words) < len(wanted) or (pattern.kind == "words" and len(words) != len(wanted)):
        return False
    first = program(words[0]) if by_name and "/" not in wanted[0] else words[0]
    return first == wanted[0] and tuple(words[1:len(wanted)]) == wanted[1:]


# --------------------------------------------------------------------------- what a call touches


def command_line(request: ApprovalRequest) -> str | None:
    """The command line a call runs (an argv list read as the shell tools run it), else None."""
    command = request.arguments.get("command")
    if isinstance(command, str):
        return command
    if is_array(command):
        return argv_command_line([str(part) for part in command])
    return None



# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Verdict:
    """What the rules say about a call: ``effect`` (``deny`` | ``ask`` | ``allow``, None: no rule
    decides) and the deciding ``rule`` (for an allow covered by several, the first of them)."""

    effect: str | None = None
    rule: PermissionRule | None = None


class _Call:
    """A call as the rules see it: its command line read, or its paths; computed once."""

    def __init__(self, request: ApprovalRequest, root: str) -> None:
        self.base = request.working_dir or root
        line = command_line(request)
        self.parsed: ParsedCommand | None = parse_command(line) if line is not None else None
        self.paths = call_paths(request) if line is None else None

    @functools.cached_property
    def views(self) -> list[list[str]]:
        return denial_views(self.parsed) if self.parsed is not None else []

    @functools.cached_property
    def scripts(self) -> list[str]:
        return scripts_of(self.parsed) if self.parsed is not None else []

    @functools.cached_property
    def forms(self) -> list[list[str]]:
        """What the path rules match, per path (globs expanded once, not once per rule)."""
        if not self.paths:
            return []
        return [path_forms(path, self.base) for path in _with_expansions(self.paths.paths, self.base)]

    def path_forms(self) -> list[list[str]]:
        return self.forms


#: at most this many files a glob in a path argument (``read_many_files``) is expanded to for the rules
_MAX_EXPANDED = 10_000


def _with_expansions(paths: Sequence[str], base: str) -> list[str]:
    """``paths`` and, for one holding glob characters (a tool may expand it, e.g. ``read_many_files``
    with ``.e[n]v``), the files it names now: a deny rule for ``.env`` must see them."""
    import glob as globbing

    found = list(paths)
    for path in paths:
        if any(char in path for char in "*?["):
            pattern = path if os.path.isabs(path) else os.path.join(base, path)
            for count, match in enumerate(globbing.iglob(os.path.expanduser(pattern), recursive=True)):
                if count >= _MAX_EXPANDED:
                    break
                found.append(match)
    return found


def _compiled(rule: PermissionRule) -> CommandPattern | None:
    try:
        return command_pattern(rule.pattern or "")
    except PermissionRuleError as error:  # a path-like pattern on a tool that was given a command
        log.debug("rule %s is not a command pattern: %s", rule, error)
        return None


def _restricts(rule: PermissionRule, call: _Call, root: str) -> bool:
    """A deny or ask rule: whether any part of the call matches it."""
    if rule.pattern is None:
        return True
    if call.parsed is not None:
        pattern = _compiled(rule)
        if pattern is None:
            return False
        if pattern.kind == "exact":
            return pattern.normalised in call.scripts
        return any(_same_words(view, pattern, by_name=True) for view in call.views)
    if call.paths is None:
        return False
    return any(glob_matches(rule.pattern, root, forms) for forms in call.path_forms())


def _allowing(rules: Sequence[PermissionRule], call: _Call, root: str) -> PermissionRule | None:
    """The allow rules together: the first of them when they cover every part of the call, else None."""
    whole = next((rule for rule in rules if rule.pattern is None), None)
    if whole is not None or not rules:
        return whole
    parsed = call.parsed
    if parsed is not None:
        patterns = [(rule, pattern) for rule in rules if (pattern := _compiled(rule)) is not None]
        exact = next((rule for rule, pattern in patterns
                      if pattern.kind != "prefix" and pattern.normalised == parsed.normalised), None)
        if exact is not None or not parsed.plain or not parsed.commands:
            return exact
        first: PermissionRule | None = None
        for command in parsed.commands:
            if any("$(" in word or "`" in word for word in command.words):
                return None  # text that is code once a builtin re-reads it (test -v 'a[$(cmd)]'): asked
            rule = next((rule for rule, pattern in patterns if pattern.kind != "exact"
                         and command.keys and _same_words(command.keys, pattern, by_name=False)), None)
            if rule is None:
                return None
            first = first or rule
        return first
    if call.paths is None or not call.paths.whole:
        return None
    first = None
    for forms in call.path_forms():
        for form in forms:
            rule = next((rule for rule in rules if glob_matches(rule.pattern or "", root, [form])), None)
            if rule is None:
                return None
            first = first or rule
    return first


class PermissionRules:
    """An ordered, changeable list of rules and the workspace their relative globs are rooted at
    (default: the current directory). :meth:`evaluate` applies the precedence of the module docstring."""

    def __init__(self, rules: Iterable[PermissionRule] = (), root: str | os.PathLike[str] | None = None) -> None:
        self.rules: list[PermissionRule] = list(rules)
        self.root: str = os.path.abspath(str(root) if root is not None else os.getcwd())

    def __iter__(self) -> Iterator[PermissionRule]:
        return iter(list(self.rules))

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"PermissionRules({[str(rule) for rule in self.rules]!r}, root={self.root!r})"

    def add(self, rule: PermissionRule) -> bool:
        """Add ``rule`` unless the same rule (effect, tool, pattern) is there; whether it was added."""
        if any((r.effect, r.tool, r.pattern) == (rule.effect, rule.tool, rule.pattern) for r in self.rules):
            return False
        self.rules.append(rule)
        return True

    def evaluate(self, request: ApprovalRequest) -> Verdict:
        """Deny beats ask beats allow (see the module docstring); an empty :class:`Verdict` when no rule decides."""
        rules = [rule for rule in list(self.rules) if rule.covers_tool(request.tool_name)]
        if not rules:
            return Verdict()
        call = _Call(request, self.root)
        for effect in ("deny", "ask"):
            rule = next((r for r in rules if r.effect == effect and _restricts(r, call, self.root)), None)
            if rule is not None:
                return Verdict(effect, rule)
        allowing = _allowing([r for r in rules if r.effect == "allow"], call, self.root)
        return Verdict("allow", allowing) if allowing is not None else Verdict()


def denial_reason(rule: PermissionRule) -> str:
    """What a call denied by ``rule`` tells the model."""
    source = f" ({rule.source})" if rule.source else ""
    return f"the permission rule {rule}{source} forbids it"


class PermissionPolicy:
    """An approval policy (``SessionConfig.approval``) applying ``rules`` first: a deny rule refuses
    the call (saying which rule), an allow rule lets it run, an ask rule asks ``ask(request)`` —
    refused when there is no ``ask`` — and a call no rule decides goes to ``fallback`` (for example
    :class:`~phi.coding.approval.SmartApproval`). A list of rules is rooted at the current directory.

    ::

        rules = load_permission_rules(".")
        config = SessionConfig(approval=PermissionPolicy(rules, SmartApproval(ask), ask))
    """

    def __init__(self, rules: PermissionRules | Iterable[PermissionRule], fallback: ApprovalPolicy,
                 ask: ApprovalPolicy | None = None) -> None:
        self.rules = rules if isinstance(rules, PermissionRules) else PermissionRules(rules)
        self.fallback = fallback
        self.ask = ask

    def __repr__(self) -> str:
        return f"PermissionPolicy({self.rules!r}, fallback={self.fallback!r}, ask={self.ask!r})"

    def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        verdict = self.rules.evaluate(request)
        if verdict.effect == "deny" and verdict.rule is not None:
            return ApprovalDecision(False, denial_reason(verdict.rule))
        if verdict.effect == "allow":
            return True
        if verdict.effect == "ask":
            if self.ask is None:
                return ApprovalDecision(False, f"the permission rule {verdict.rule} asks first, and nobody can "
                                               "be asked")
            return self.ask(request)
        return self.fallback(request)


# --------------------------------------------------------------------------- "always"


def suggest_rule(request: ApprovalRequest, source: str = "session") -> PermissionRule | None:
    """The allow rule an "always" answer to ``request`` adds. A command: its program and a following
    plain subcommand word, then any arguments (``npm test`` → ``npm test *``, ``git status --short``
    → ``git status *``, ``ls -la`` → ``ls *``); the exact command for a line of several commands, a
    substitution or a redirection writing a file, a leading ``NAME=value``, a program that runs
    other commands or deletes or overwrites (``bash``, ``sudo``, ``rm``, ``mv``, ...: :data:`EXACT_ONLY`),
    and for a program of :data:`NEEDS_SUBCOMMAND` without a plain subcommand word; None when no
    pattern names that exact command (a bare ``*`` word, as in ``rm -rf *``, would read as "any
    arguments"; an unclosed quote): "always" then allows that call only. Any other call: its tool."""
    line = command_line(request)
    if line is None:
        return PermissionRule("allow", request.tool_name, None, source)
    parsed = parse_command(line)
    exact = _exact_rule(request.tool_name, parsed, source)
    if not parsed.plain or len(parsed.commands) != 1 or len(parsed.tokens) != len(parsed.commands[0].words):
        return exact
    command = parsed.commands[0]
    words, keys = command.words, command.keys
    name = program(words[0]) if words else ""
    if not words or is_assignment(words[0]) or name in EXACT_ONLY or keys[0] != words[0]:
        return exact
    if name in PREFIX_SUBCOMMANDS and (len(words) < 2 or words[1] not in PREFIX_SUBCOMMANDS[name]):
        return exact
    if len(words) >= 2 and keys[1] == words[1] and _PLAIN_WORD.fullmatch(words[1]):
        prefix = words[:2]
    elif name in NEEDS_SUBCOMMAND or _VERSIONED_RUNNER.fullmatch(name):
        return exact
    else:
        prefix = words[:1]
    return PermissionRule("allow", request.tool_name, " ".join(shlex.quote(word) for word in prefix) + " *", source)


def _exact_rule(tool: str, parsed: ParsedCommand, source: str) -> PermissionRule | None:
    """The rule naming exactly this command line, if a pattern can (see :func:`suggest_rule`)."""
    try:
        pattern = command_pattern(parsed.normalised)
    except PermissionRuleError:
        return None
    if pattern.kind == "prefix" or pattern.normalised != parsed.normalised:
        return None
    return PermissionRule("allow", tool, parsed.normalised, source)


__all__ = ["PermissionRule", "PermissionRules", "PermissionPolicy", "PermissionRuleError", "Verdict",
           "CommandPattern", "EFFECTS", "COMMAND_TOOLS", "EXACT_ONLY", "NEEDS_SUBCOMMAND", "command_line",
           "command_pattern", "parse_rule_text", "suggest_rule", "denial_reason"]
