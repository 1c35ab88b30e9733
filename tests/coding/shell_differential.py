"""The permission rules' command reader against bash (issue 34 item 4): random lines, run by bash with
stub programs that record their argv. Used by tests/coding/test_permissions.py (a slice) and
scripts/fuzz/shell_words_differential.py (full size).

The property: for a line :func:`phi.coding.shell_words.parse_command` calls plain — no substitution,
no file written, read to the end: what a prefix rule may allow — every command bash runs is one
the parser listed, behind reserved words or ``NAME=value`` at most (which no prefix rule names).
Otherwise a prefix rule could allow a command it never saw. Expansions other than ``${HOME}`` are
not generated: the parser keeps them as written, bash expands them (``HOME`` is set to its own name,
so ``${HOME}`` expands to what the parser kept).
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from phi.coding.shell_words import is_assignment

STUBS = ("npm", "git", "curl", "rm", "ls", "cat")
PIECES = ["npm", "test", "git", "status", "curl", "rm", "ls", "cat", "-x", ";", "&&", "||", "|", "&", "\n", "(", ")",
          "'a;b'", '"c|d"', "\\;", "\\\n", "#", "x#y", ">", "/dev/null", "2>&1", "$'e\\'f;g'", '"\\""', "'", '"',
          "{", "}", "!", "then", "<", "<<<", "w", "${HOME}", "\\'", "\t", "a=b", "--", "*", ";;", "|&", "\\",
          '"$"', "<<EOF", "EOF", "<<'EOF'", "<<-EOF", "\tEOF", "$'\\x3b'", '\\"', "&>", ">&2", "1>&2", "if", "fi",
          "do", "done", "while", "case", "esac", "in", "x)", "for", "function", "f()", "=", "a=(", "[[", "]]", "\r"]
OPERATORS = [";", "&&", "||", "|", "&", "\n", "|&", " ; ", "\\\n", " #c\n"]
WORDS = ["-x", "'a;b'", '"c|d"', "\\;", "x#y", "$'e\\'f;g'", '"\\""', "${HOME}", "--", "*", '"$"', "$'\\x3b'",
         "2>&1", ">/dev/null", "<<<w", "'&&'", '"a\\\nb"', "a\\ b", "'#'", "\\#"]
RESERVED = {"!", "{", "}", "then", "do", "done", "else", "elif", "if", "fi", "while", "until", "time", "case", "esac",
            "for", "in", "function", "select", "[[", "]]", "coproc"}


def random_line(generator: random.Random) -> str:
    """Half the time stub commands joined by operators with some noise, else pieces at random."""
    if generator.random() < 0.5:
        parts: list[str] = []
        for index in range(generator.randint(1, 4)):
            if index:
                parts.append(generator.choice(OPERATORS))
            if generator.random() < 0.15:
                parts.append(generator.choice(["!", "{", "a=b", "(", "then", "if"]))
            parts.append(generator.choice(STUBS))
            parts += [generator.choice(WORDS) for _ in range(generator.randint(0, 3))]
            if generator.random() < 0.1:
                parts.append(generator.choice(PIECES))
        return " ".join(parts)
    separator = generator.choice([" ", " ", ""])
    return separator.join(generator.choice(PIECES) for _ in range(generator.randint(1, 10)))


def seen_by_parser(ran: list[str], parsed: list[str]) -> bool:
    """Whether a command bash ran is the parsed one, maybe behind reserved words or assignments
    (``! rm x``, ``{ rm x``, ``A=1 rm x``)."""
    return any(parsed[k:] == ran and all(word in RESERVED or is_assignment(word) for word in parsed[:k])
               for k in range(len(parsed)))


class Bash:
    """bash with :data:`STUBS` as its only programs, in an empty directory under ``work``."""

    def __init__(self, bash: str, work: Path) -> None:
        self.bash, self.stubs, self.empty, self.logs = bash, work / "bin", work / "empty", work / "logs"
        self.stubs.mkdir()
        self.empty.mkdir()  # where `*` matches nothing and stays a `*`
        self.count = 0
        for name in STUBS:
            stub = self.stubs / name
            # a file per run: piped and background commands run at the same time
            stub.write_text(f'#!{bash}\nprintf "%s\\0" {name} "$@" > "$LOG/$$.$RANDOM"\n')
            stub.chmod(0o755)

    def run(self, line: str) -> list[list[str]]:
        """The argv of every stub the line ran (a background one may not have written yet: not listed)."""
        self.count += 1
        log = self.logs / str(self.count)  # a directory per line: a late background stub writes to its own
        log.mkdir(parents=True)
        subprocess.run([self.bash, "--norc", "--noprofile", "-c", line], cwd=self.empty, capture_output=True,
                       timeout=10, env={"PATH": str(self.stubs), "LOG": str(log), "HOME": "${HOME}"})
        return [run.split("\0")[:-1] for run in (path.read_bytes().decode() for path in log.iterdir()) if run]
